# common.gp — shared setup loaded by every plots/*.gp: the TSV reader (tab separated, columns
# by name from the header), the device/commit label, the lines to draw as arrays L (names) and
# S (linetypes, in the colours of plots/palette.tsv) with `longest` (the longest name's
# length), and `render`, which draws the figure's `body` once per output format.
# Variables from scripts/figures.sh: datafile, outbase, label, formats (default "png pdf"),
# lines (the names of the lines to draw, as gnuplot words) with their colours, points and
# dashes, and per figure width/height in pixels (the PDF is drawn at 150 px per inch).
set datafile separator tab
set datafile columnheaders
set encoding utf8
set grid
set key noenhanced
# the lines' styles: scripts/figures.sh looks each series up in plots/palette.tsv
# (scripts/figures-style.awk) and passes `colours`, `points`, `dashes` (a gnuplot dt each),
# `widths` and `titles` (the key's name of each: T[i], default the name), one word per name of
# `lines`; line i is drawn in linetype S[i] = 200 + i
if (!exists("lines")) lines = ""
if (!exists("colours")) colours = ""
if (!exists("points")) points = ""
if (!exists("dashes")) dashes = ""
if (!exists("widths")) widths = ""
if (!exists("titles")) titles = ""
nlines = words(lines)
array L[nlines > 0 ? nlines : 1]
array T[nlines > 0 ? nlines : 1]
array S[nlines > 0 ? nlines : 1]
longest = 0
do for [i = 1:nlines] {
    L[i] = word(lines, i); S[i] = 200 + i; T[i] = words(titles) >= i ? word(titles, i) : L[i]
    eval sprintf("set linetype %d lc rgb '%s' lw %s pt %s ps 0.9 dt %s", S[i], \
                 words(colours) >= i ? word(colours, i) : "#777777", words(widths) >= i ? word(widths, i) : "1.5", \
                 words(points) >= i ? word(points, i) : "7", words(dashes) >= i ? word(dashes, i) : "1")
    longest = strlen(T[i]) > longest ? strlen(T[i]) : longest
}
# the width of an average character of the PNG font in pixels (Helvetica 11 at 96 dpi: 7.6
# measured on a legend line; the PDF's 7 pt at 150 px per inch is the same size)
char_px = 8.0
# cells whose timer stopped at its cap before the spread settled (column noisy; figures.sh
# counts them): ringed in grey in every time figure, with a key entry of their own
if (!exists("noisy_cells")) noisy_cells = 0
is_noisy(dummy) = noisy_cells > 0 && column("noisy") == 1
noisy_style = 'with points pt 6 ps 2.2 lc rgb "#999999"'
noisy_title = sprintf("noisy (capped timer): %d cells", noisy_cells)
if (!exists("width")) width = 1100
if (!exists("height")) height = 600
# the title of a figure: what it shows, then the device and commit label
if (!exists("label")) label = ""
headline(what) = what."\n".label
if (!exists("formats") || formats eq "") formats = "png pdf"
term_png = 'set terminal pngcairo size width,height font "Helvetica,11" noenhanced'
term_pdf = 'set terminal pdfcairo size (width/150.0)*1in,(height/150.0)*1in font "Helvetica,7" \
            pointscale 0.5 noenhanced'
term_svg = 'set terminal svg size width,height font "Helvetica,11" noenhanced'
render = 'do for [fmt in formats] { eval value("term_".fmt); set output outbase.".".fmt; eval body }; \
          unset output'
