# plots/convergence.gp — the convergence figure (semantics §6.6): validation accuracy per schedule
# against the epoch (left) and the training seconds elapsed (right), a curve per schedule.
# Data (plots/plot_data.c): a block per schedule, columns epoch, accuracy %, seconds, runs.
# Variables: datafile, outfile, fmt, plottitle, nseries, colors.
width = 1400
height = 620
dir = ARG0[1:strstrt(ARG0, 'convergence.gp') - 1]
load dir.'style.gp'
if (!exists("nseries")) nseries = 1
if (!exists("colors")) colors = ''
color(i) = (words(colors) >= i) ? word(colors, i) : '#404040'

set multiplot title plottitle font ',13'
unset key
set bmargin at screen 0.24
set tmargin at screen 0.9
set ylabel 'validation accuracy (%)'
set lmargin at screen 0.06
set rmargin at screen 0.48
set xlabel 'epoch'
set xtics 1
set autoscale xfix
set offsets 0.25, 0.25, 0, 0
plot for [i = 1:nseries] datafile index (i - 1) using 1:2 with linespoints lw 2 pt 7 ps 0.8 \
     lc rgb color(i)
set lmargin at screen 0.56
set rmargin at screen 0.98
set xlabel 'training time (s)'
set xtics autofreq
set autoscale x
set offsets 0, 0, 0, 0
plot for [i = 1:nseries] datafile index (i - 1) using 3:2 with linespoints lw 2 pt 7 ps 0.8 \
     lc rgb color(i)
legendtop = 0.12
legendplot = "plot for [i = 1:nseries] datafile index (i - 1) using (NaN):(NaN) " . \
             "with linespoints lw 2 pt 7 lc rgb color(i) title columnheader(2)"
load dir.'legend.gp'
unset multiplot
