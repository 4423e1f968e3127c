# plots/throughput.gp — the throughput figure (semantics §6.4, §6.5): training samples per second
# (left) and the bubble, the devices' mean idle time over the makespan in % (right), a
# group of bars per D with a bar per schedule, mean ± std (error bar) over its runs; where
# the stages shared cores (†), each measured bar has beside it, hatched, the simulated one
# (the run's op costs replayed on one device per stage).
# Data (plots/plot_data.c): block 0 throughput, block 1 bubble %, († runs) block 2 the
# simulated throughput; a row per D, for each schedule a mean and a std column. Variables:
# datafile, outfile, fmt, plottitle, ngroups (the D values), nseries, colors, points,
# dashes, hasbubble, hassim.
width = 1400
height = 620
dir = ARG0[1:strstrt(ARG0, 'throughput.gp') - 1]
load dir.'style.gp'
if (!exists("ngroups")) ngroups = 1
if (!exists("hasbubble")) hasbubble = 1
if (!exists("hassim")) hassim = 0

set style data histograms
set style histogram errorbars gap 2 lw 1.2
set style fill solid 0.9 border rgb '#404040'
set boxwidth 0.9
set yrange [0:*]
set xrange [-0.5:ngroups - 0.5]
set xlabel 'pipeline stages'
set multiplot title plottitle font ',13'
unset key
set bmargin at screen 0.24
set tmargin at screen 0.84
set lmargin at screen 0.07
set rmargin at screen 0.48
set ylabel 'throughput (samples/s, median of the steady epochs)'
if (hassim) {
    # bar b: schedule (b + 1) / 2, measured (odd b, block 0) or simulated (even b, block 2)
    s(b) = int((b + 1) / 2)
    plot for [b = 1:2 * nseries] datafile index (b % 2 ? 0 : 2) \
         using (column(2 * s(b))):(column(2 * s(b) + 1)):xtic(1) \
         fs pattern (b % 2 ? 3 : 4) border rgb '#404040' lc rgb color(s(b))
} else {
    plot for [i = 1:nseries] datafile index 0 using (column(2 * i)):(column(2 * i + 1)):xtic(1) \
         lc rgb color(i)
}
set lmargin at screen 0.57
set rmargin at screen 0.98
set ylabel 'bubble (%): idle / makespan, mean over devices'
if (hasbubble) {
    set yrange [0:100]
    plot for [i = 1:nseries] datafile index 1 using (column(2 * i)):(column(2 * i + 1)):xtic(1) \
         lc rgb color(i)
} else {
    unset xtics
    unset ytics
    set label 1 'no bubble fractions recorded' at graph 0.5, 0.5 center
    plot [0:1] [0:1] NaN
    unset label 1
}
legendtop = 0.12
legendplot = "plot for [i = 1:nseries] datafile index 0 using (NaN):(NaN) " . \
             "with boxes fs solid 0.9 border rgb '#404040' lc rgb color(i) title columnheader(2 * i)" . \
             (hassim ? ", NaN with boxes fs solid 0.9 border rgb '#404040' lc rgb '#909090' title 'measured'" . \
                       ", NaN with boxes fs pattern 4 border rgb '#404040' lc rgb '#909090' title 'simulated, one device per stage'" : "")
load dir.'legend.gp'
unset multiplot
