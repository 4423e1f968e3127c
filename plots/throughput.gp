# plots/throughput.gp — the throughput figure (semantics §6.4, §6.5): training samples per second
# (left) and the mean bubble fraction of the devices (right) per schedule, a bar per D.
# Data (plots/plot_data.c): block 0 throughput, block 1 bubble %, a row per schedule and
# a column per D. Variables: datafile, outfile, fmt, plottitle, ncols (the D values),
# nrows (the schedules), hasbubble.
width = 1400
height = 560
load ARG0[1:strstrt(ARG0, 'throughput.gp') - 1].'style.gp'
if (!exists("ncols")) ncols = 1
if (!exists("hasbubble")) hasbubble = 1
if (!exists("nrows")) nrows = 6

set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border rgb '#404040'
set boxwidth 0.9
set xtics rotate by -30 left
set yrange [0:*]
set xrange [-0.6:nrows - 0.4]
set key top right
array dc[6] = ['#4E79A7', '#F28E2B', '#59A14F', '#B07AA1', '#76B7B2', '#E15759']
dcolor(i) = dc[(i - 2) % 6 + 1]
set multiplot layout 1, 2 title plottitle font ',13'
set ylabel 'throughput (samples/s)'
set xlabel 'schedule'
plot for [i = 2:ncols + 1] datafile index 0 using i:xtic(1) lc rgb dcolor(i) \
     title columnheader(i)
set ylabel 'bubble: idle / makespan (%), mean over devices'
if (hasbubble) {
    set yrange [0:100]
    plot for [i = 2:ncols + 1] datafile index 1 using i:xtic(1) lc rgb dcolor(i) \
         title columnheader(i)
} else {
    unset xtics
    unset ytics
    set label 1 'no bubble fractions recorded' at graph 0.5, 0.5 center
    plot [0:1] [0:1] NaN notitle
}
unset multiplot
