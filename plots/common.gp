# common.gp — shared setup loaded by every plots/*.gp: the TSV reader (tab separated, columns
# by name from the header), the device/commit label, the line styles (modules: solid lines,
# filled markers; peers: dashed lines, open markers, a palette of their own), the lines to draw
# as arrays L (names) and S (linetypes) with `longest` (the longest name's length), and
# `render`, which draws the figure's `body` once per output format.
# Variables from scripts/figures.sh: datafile, outbase, label, formats (default "png pdf"),
# lines (the names of the lines to draw, as gnuplot words) and styles (a style number per line:
# modules 1, 2, ..., peers -1, -2, ..., the same in every figure of a results file), and per
# figure width/height in pixels (the PDF is drawn at 150 px per inch).
set datafile separator tab
set datafile columnheaders
set encoding utf8
set grid
set key noenhanced
# modules: Okabe-Ito, then grey, filled markers; peers: Paul Tol's muted scheme and two more,
# open markers (triangles last: small open triangles look filled)
mpalette = "#000000 #0072B2 #D55E00 #009E73 #CC79A7 #E69F00 #56B4E9 #888888"
mpoints = "7 5 9 11 13 15 7 5"
ppalette = "#882255 #44AA99 #332288 #999933 #CC6677 #AA4499 #DDCC77 #88CCEE #117733 #661100"
ppoints = "6 4 12 14 8 10 6 4 12 14"
nm = words(mpalette)
np = words(ppalette)
do for [i = 1:nm] { set linetype i lc rgb word(mpalette, i) lw 1.5 dt solid \
                        pt int(word(mpoints, i)) ps 0.9 }
do for [i = 1:np] { set linetype 100 + i lc rgb word(ppalette, i) lw 1.5 dt 2 \
                        pt int(word(ppoints, i)) ps 0.9 }
# the linetype of style number s: modules cycle through 1..nm, peers through 101..100+np
lt_of(s) = s > 0 ? 1 + int(s - 1) % nm : 101 + int(-s - 1) % np
if (!exists("lines")) lines = ""
if (!exists("styles")) styles = ""
nlines = words(lines)
array L[nlines > 0 ? nlines : 1]
array S[nlines > 0 ? nlines : 1]
longest = 0
do for [i = 1:nlines] { L[i] = word(lines, i); S[i] = lt_of(word(styles, i) + 0)
                        longest = strlen(L[i]) > longest ? strlen(L[i]) : longest }
# cells whose timer stopped at its cap before the spread settled (column noisy; figures.sh
# counts them): ringed in grey in every time figure, with a key entry of their own
if (!exists("noisy_cells")) noisy_cells = 0
is_noisy(dummy) = noisy_cells > 0 && column("noisy") == 1
noisy_style = 'with points pt 6 ps 2.2 lc rgb "#999999"'
noisy_title = sprintf("noisy (timer capped before the spread settled): %d cells", noisy_cells)
if (!exists("width")) width = 1100
if (!exists("height")) height = 600
# the title of a figure: what it shows, then the device and commit label
headline(what) = what."\n".label
if (!exists("formats") || formats eq "") formats = "png pdf"
term_png = 'set terminal pngcairo size width,height font "Helvetica,11" noenhanced'
term_pdf = 'set terminal pdfcairo size (width/150.0)*1in,(height/150.0)*1in font "Helvetica,7" \
            pointscale 0.5 noenhanced'
term_svg = 'set terminal svg size width,height font "Helvetica,11" noenhanced'
render = 'do for [fmt in formats] { eval value("term_".fmt); set output outbase.".".fmt; eval body }; \
          unset output'
