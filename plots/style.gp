# plots/style.gp — what every figure script shares: the terminal for fmt (png: pngcairo,
# svg, pdf: pdfcairo) at width x height pixels, the output file and a plain, light style.
# Data files start with a header line naming the columns, except where a script says.
# Loaded by the figure scripts after they set width and height; `pipebench plot` passes
# datafile, outfile and fmt (png when absent).
if (!exists("fmt")) fmt = 'png'
if (!exists("plottitle")) plottitle = ''
if (fmt eq 'svg') {
    set terminal svg size width, height dynamic font 'Sans,12' background rgb 'white'
} else {
    if (fmt eq 'pdf') {
        set terminal pdfcairo size (width / 100.0), (height / 100.0) font 'Sans,8'
    } else {
        set terminal pngcairo size width, height font 'Sans,11' background rgb 'white'
    }
}
set output outfile
set termoption noenhanced
set datafile missing '?'
set border 3 lw 1 lc rgb '#404040'
set tics nomirror out scale 0.6
set grid ytics lw 1 lc rgb '#e0e0e0'
# data files open with a header line (a block's first line with gnuplot's index blocks)
set key autotitle columnhead box lc rgb '#c0c0c0' opaque
# Series styles, from the one table plots/plot_style.c (a word per series in each list):
# color(i), pt(i) and dt dtn(i) give series i's colour, marker and dash; kcolor(k) the
# colour of op kind or memory kind k.
if (!exists("nseries")) nseries = 0
if (!exists("colors")) colors = ''
if (!exists("points")) points = ''
if (!exists("dashes")) dashes = ''
if (!exists("kindcolors")) kindcolors = ''
color(i) = (words(colors) >= i) ? word(colors, i) : '#777777'
pt(i) = (words(points) >= i) ? int(word(points, i)) : 1
dtn(i) = 100 + i
kcolor(k) = (words(kindcolors) >= k) ? word(kindcolors, k) : '#777777'
do for [i = 1:words(dashes)] {
    if (word(dashes, i) eq 'solid') {
        eval sprintf('set dashtype %d solid', 100 + i)
    } else {
        eval sprintf('set dashtype %d (%s)', 100 + i, word(dashes, i))
    }
}
