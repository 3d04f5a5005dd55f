# common.gp — shared setup loaded by every plots/*.gp: the TSV reader (tab separated, columns
# by name from the header), the device/commit label, a colour per algorithm that is the same in
# every figure of a results file, and `render`, which draws the figure's `body` twice: PNG and PDF.
# Variables from scripts/figures.sh: datafile, outbase, label, algos (space-separated, in
# registry order), and per figure width/height in pixels (the PDF is drawn at 150 px per inch).
set datafile separator tab
set datafile columnheaders
set encoding utf8
set grid
set key noenhanced
# eight distinct colours (Okabe-Ito, then grey) and point types, by algorithm index
palette = "#000000 #0072B2 #D55E00 #009E73 #CC79A7 #E69F00 #56B4E9 #888888"
do for [i = 1:8] { set linetype i lc rgb word(palette, i) lw 1.5 pt i ps 0.9 }
if (!exists("width")) width = 1100
if (!exists("height")) height = 600
# lc of algorithm a: its position in `algos` (1-based), so colours agree across figures.
algo_index(a) = words((" ".algos." ")[1:strstrt(" ".algos." ", " ".a." ")]) + 1
# the title of a figure: what it shows, then the device and commit label
headline(what) = what."\n".label
render = 'set terminal pngcairo size width,height font "Helvetica,11" noenhanced; \
          set output outbase.".png"; eval body; \
          set terminal pdfcairo size (width/150.0)*1in,(height/150.0)*1in font "Helvetica,7" noenhanced; \
          set output outbase.".pdf"; eval body; unset output'
