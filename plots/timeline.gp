# plots/timeline.gp — the timeline figure: a Gantt chart of one run's ops per device over
# one epoch, as in the papers' pipeline diagrams: F, B and U boxes in their colours, idle
# time white, micro-batch numbers in the boxes wide enough for them.
# Data (plots/plot_run.c): block 0 an op per line (device, start ms, end ms, kind 0 F /
# 1 B / 2 U, micro-batch), block 1 the device labels. Variables: datafile, outfile, fmt,
# plottitle, ndevices, showlabels.
if (!exists("ndevices")) ndevices = 4
if (!exists("showlabels")) showlabels = 0
width = 1400
height = 200 + 70 * ndevices
load ARG0[1:strstrt(ARG0, 'timeline.gp') - 1].'style.gp'

set key noautotitle
stats datafile index 0 using 3 nooutput
set title plottitle
set xlabel 'time since the epoch began (ms)'
set ylabel 'device'
set yrange [ndevices - 0.5:-0.5]
set ytics scale 0
set grid noytics xtics
set bmargin 6
set key at screen 0.5, 0.02 center bottom horizontal
set style fill solid 1.0
box(k) = (column(4) == k) ? (column(2) + column(3)) / 2 : NaN
half = 0.36
# number a box only when it is wide enough for its label (STATS_max: the last end)
wide(x) = showlabels && x > STATS_max / 80
plot datafile index 1 using (NaN):1:ytic(2) notitle, \
     datafile index 0 using (box(0)):1:(($3 - $2) / 2):(half) with boxxyerror \
         lc rgb '#4E79A7' fs solid 1.0 border rgb '#2A4A6E' title 'F (forward)', \
     datafile index 0 using (box(1)):1:(($3 - $2) / 2):(half) with boxxyerror \
         lc rgb '#F28E2B' fs solid 1.0 border rgb '#A85A10' title 'B (backward)', \
     datafile index 0 using (box(2)):1:(($3 - $2) / 2):(half) with boxxyerror \
         lc rgb '#59A14F' fs solid 1.0 border rgb '#2F6128' title 'U (update)', \
     NaN with boxes lc rgb '#303030' fs empty border rgb '#303030' title 'idle', \
     datafile index 0 using (($2 + $3) / 2):1:(wide($3 - $2) && $5 >= 0 ? sprintf('%d', $5) : '') \
         with labels font ',9' tc rgb 'white' notitle
