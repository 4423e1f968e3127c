# plots/staleness.gp — the staleness figure (semantics §6.2, §6.3): per stage and schedule the mean
# version lag of forwards and of backwards behind the synchronous run, and the mean
# prediction error ||W_pred - W|| / ||W|| (log scale; absent where nothing was predicted).
# Data (plots/plot_data.c): blocks F lag, B lag, error, n/a (s = 0); a row per stage, a
# column per schedule. Variables: datafile, outfile, fmt, plottitle, nseries, colors, points,
# dashes, haspred, nstages, namarks (gnuplot commands that label "n/a (s = 0)" where a
# predicting schedule predicts nothing on a stage).
width = 1500
height = 620
dir = ARG0[1:strstrt(ARG0, 'staleness.gp') - 1]
load dir.'style.gp'
if (!exists("haspred")) haspred = 1
if (!exists("nstages")) nstages = 4

set style data histograms
set style histogram clustered gap 1
set style fill solid 0.9 border rgb '#404040'
set boxwidth 0.9
set xlabel 'pipeline stage'
set xrange [-0.6:nstages - 0.4]
set multiplot title plottitle font ',13'
unset key
set bmargin at screen 0.24
set tmargin at screen 0.86
set lmargin at screen 0.05
set rmargin at screen 0.32
set title 'forward (F) version lag'
set ylabel 'versions behind the synchronous run'
plot for [i = 2:nseries + 1] datafile index 0 using i:xtic(1) lc rgb color(i - 1)
set lmargin at screen 0.38
set rmargin at screen 0.65
set title 'backward (B) version lag'
plot for [i = 2:nseries + 1] datafile index 1 using i:xtic(1) lc rgb color(i - 1)
set lmargin at screen 0.72
set rmargin at screen 0.98
set title 'prediction error'
set ylabel '||W_pred - W|| / ||W||'
if (haspred) {
    set logscale y
    set format y '%.0e'
    if (exists("namarks")) { eval namarks }
    plot for [i = 2:nseries + 1] datafile index 2 using i:xtic(1) lc rgb color(i - 1)
    unset label
} else {
    unset xtics
    unset ytics
    set label 1 'no weights were predicted' at graph 0.5, 0.5 center
    plot [0:1] [0:1] NaN
    unset label 1
}
legendtop = 0.12
legendplot = "plot for [i = 2:nseries + 1] datafile index 0 using (NaN):(NaN) " . \
             "with boxes lc rgb color(i - 1) title columnheader(i)"
load dir.'legend.gp'
unset multiplot
