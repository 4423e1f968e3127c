# plots/memory.gp — the memory figure (semantics §6.7, design §2.8): per stage a group of bars,
# one per schedule (named under it), each stacked by kind (params, grads, optimizer state,
# weight copies, activations, comm buffers, scratch, BN statistics, host), with its total
# above it (turned upright where the bars leave no room); below, the weights-only view:
# the same bars of params and weight copies alone, with their totals.
# Data (plots/plot_memory.c): block 0 a bar per line (x, stage, schedule, its label, MiB
# per kind, runs, total, weights-only total), block 1 the stages' labels at their groups'
# centres. Variables: datafile, outfile, fmt, plottitle, kindcolors, nkinds, nbars, nstages,
# showtotals (0: the totals upright).
if (!exists("nbars")) nbars = 1
if (!exists("nstages")) nstages = 1
if (!exists("nkinds")) nkinds = 9
if (!exists("showtotals")) showtotals = 1
width = 1400
height = 1100
dir = ARG0[1:strstrt(ARG0, 'memory.gp') - 1]
load dir.'style.gp'

set multiplot title plottitle font ',13'
set xrange [-0.7:nstages * (nbars + 1) - 1.3]
set yrange [0:*]
set offsets 0, 0, graph (showtotals ? 0.1 : 0.25), 0
set x2tics scale 0 font ',12'
set link x2
set border 3
set grid noxtics ytics
set key outside right top vertical noautotitle
set style fill solid 1.0 border rgb '#404040'
set lmargin at screen 0.07
set rmargin at screen 0.84
top(k) = sum [c = 5:(4 + k)] column(c)
totals(c) = sprintf('datafile index 0 using 1:%d:(sprintf("%%.2f", $%d)) with labels %s font ",9" notitle', c, c, showtotals ? 'offset 0, 0.7' : 'rotate by 90 left offset 0, 0.5')

set tmargin at screen 0.90
set bmargin at screen 0.52
set title 'all kinds'
set ylabel 'peak memory (MiB)'
set xtics format '' scale 0
eval 'plot datafile index 1 using 1:(NaN):x2tic(2) axes x2y1 notitle, ' . \
     'for [k = nkinds:1:-1] datafile index 0 using 1:((top(k) + top(k - 1)) / 2):(0.42):((top(k) - top(k - 1)) / 2) ' . \
     'with boxxyerror lc rgb kcolor(k) title columnheader(4 + k), ' . totals(15)

# the weights-only view: params (column 5) and weight copies (column 8) stacked
unset key
set tmargin at screen 0.44
set bmargin at screen 0.17
set title 'weights only: params + weight copies'
set ylabel 'peak weight memory (MiB)'
set xtics rotate by -40 left scale 0 font ',10' format '% h'
set x2tics format ''
eval 'plot datafile index 0 using 1:(NaN):xtic(4) notitle, ' . \
     'datafile index 0 using 1:($5 / 2):(0.42):($5 / 2) with boxxyerror lc rgb kcolor(1) notitle, ' . \
     'datafile index 0 using 1:($5 + $8 / 2):(0.42):($8 / 2) with boxxyerror lc rgb kcolor(4) notitle, ' . \
     totals(16)
unset multiplot
