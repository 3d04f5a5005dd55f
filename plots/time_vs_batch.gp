# time_vs_batch.gp — median time (with the interquartile range) against batch size, one line
# per algorithm/mode/vocabulary series. Reads the TSV of scripts/figures.sh by column name.
# Variables: datafile, outbase, label, series (space-separated series names).
set datafile separator tab
set datafile columnheaders
set logscale xy
set xlabel "batch size (rows)"
set ylabel "median time per call (us)"
set key outside right top noenhanced
set grid
set title label noenhanced font ",10"
set style data yerrorlines

body = 'plot for [s in series] datafile using "batch":(strcol("series") eq s ? column("median_us") : NaN):"q1_us":"q3_us" title s'

set terminal pngcairo size 1100,600 font "Helvetica,11"
set output outbase.".png"
eval body
set terminal pdfcairo size 8in,4.4in font "Helvetica,9"
set output outbase.".pdf"
eval body
