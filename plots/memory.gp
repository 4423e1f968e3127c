# plots/memory.gp — the memory figure (semantics §6.7, design §2.8): per stage a group of bars,
# one per schedule (named under it), each stacked by kind (params, grads, optimizer state,
# weight copies, activations, comm buffers, scratch, BN statistics, host), with its total
# above it when the bars leave room.
# Data (plots/plot_memory.c): block 0 a bar per line (x, stage, schedule, its label, MiB
# per kind, runs), block 1 the stages' labels at their groups' centres. Variables:
# datafile, outfile, fmt, plottitle, kindcolors, nkinds, nbars, nstages, showtotals.
if (!exists("nbars")) nbars = 1
if (!exists("nstages")) nstages = 1
if (!exists("nkinds")) nkinds = 9
if (!exists("showtotals")) showtotals = 1
width = 1400
height = 760
dir = ARG0[1:strstrt(ARG0, 'memory.gp') - 1]
load dir.'style.gp'

set title plottitle font ',13'
set ylabel 'peak memory (MiB)'
set xrange [-0.7:nstages * (nbars + 1) - 1.3]
set yrange [0:*]
set offsets 0, 0, graph 0.1, 0
set xtics rotate by -40 left scale 0 font ',10'
set x2tics scale 0 font ',12'
set link x2
set border 3
set grid noxtics ytics
set key outside right top vertical noautotitle
set style fill solid 1.0 border rgb '#404040'
set bmargin 9
top(k) = sum [c = 5:(4 + k)] column(c)
plot datafile index 1 using 1:(NaN):x2tic(2) axes x2y1 notitle, \
     datafile index 0 using 1:(NaN):xtic(4) notitle, \
     for [k = nkinds:1:-1] datafile index 0 using 1:((top(k) + top(k - 1)) / 2):(0.42):((top(k) - top(k - 1)) / 2) \
         with boxxyerror lc rgb kcolor(k) title columnheader(4 + k), \
     datafile index 0 using 1:(top(nkinds)):(showtotals ? sprintf('%.2f', top(nkinds)) : '') \
         with labels offset 0, 0.7 font ',9' notitle
