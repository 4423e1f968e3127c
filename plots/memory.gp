# plots/memory.gp — the memory figure (semantics §6.7, design §2.8): one run's peak memory
# per stage, stacked by kind (params, grads, optimizer state, weight copies, activations,
# comm buffers, scratch, BN statistics, host), with each stage's total above its bar.
# Data (plots/plot_run.c): a row per stage, a column per kind in MiB.
# Variables: datafile, outfile, fmt, plottitle.
width = 1000
height = 600
load ARG0[1:strstrt(ARG0, 'memory.gp') - 1].'style.gp'

set style data histograms
set style histogram rowstacked
set style fill solid 0.9 border rgb '#404040'
set boxwidth 0.6
set yrange [0:*]
set xrange [-0.6:*]
set offsets 0, 0, graph 0.08, 0
set key outside right top vertical
set title 'Peak memory per stage by kind' . "\n" . plottitle
set ylabel 'peak memory (MiB)'
set xlabel 'pipeline stage'
array kc[9] = ['#4E79A7', '#A0CBE8', '#F28E2B', '#E15759', '#59A14F', '#B07AA1', '#BAB0AC', \
               '#EDC948', '#FF9DA7']
total(x) = column(2) + column(3) + column(4) + column(5) + column(6) + column(7) + column(8) \
           + column(9) + column(10)
plot for [i = 2:10] datafile using i:xtic(1) lc rgb kc[i - 1], \
     datafile using 0:(total(0)):(sprintf('%.2f MiB', total(0))) with labels offset 0, 0.8 \
     notitle
