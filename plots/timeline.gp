# plots/timeline.gp — the timeline figure: Gantt charts as in the papers' pipeline diagrams, a
# panel per run over a window of its epoch: F, B, U, I and W boxes in the op kinds' colours,
# idle time white, micro-batch numbers in the boxes wide enough for them (an op under a
# pixel is drawn a pixel wide); every panel on
# one time scale (ms since its window began), so a slower schedule's window is longer.
# Data (plots/plot_timeline.c): per panel two blocks, its ops (device, start ms, end ms,
# kind 0 F / 1 B / 2 U / 3 I / 4 W, micro-batch, clipped, local chunk or -1 where each
# stage is its own device, stage) and its devices' labels; with chunks an op's box reads
# mb@chunk (3@1). Variables:
# datafile, outfile, fmt, plottitle, npanels, paneldevices, paneltitleN, xmax,
# showlabels, labelchars (the longest row label, which sets the left margin), kindcolors,
# costunits (1: every panel simulates costs given to simulate
# --cost, its times in those cost units rather than ms).
if (!exists("npanels")) npanels = 1
if (!exists("paneldevices")) paneldevices = '4'
if (!exists("xmax")) xmax = 1
if (!exists("costunits")) costunits = 0
if (!exists("showlabels")) showlabels = 0
if (!exists("labelchars")) labelchars = 30
devs(p) = int(word(paneldevices, p))
rows = 0
do for [p = 1:npanels] { rows = rows + devs(p) }
head = 70
foot = 80
gap = 75
width = 1400
height = head + foot + npanels * gap + 52 * rows
dir = ARG0[1:strstrt(ARG0, 'timeline.gp') - 1]
load dir.'style.gp'

set multiplot title plottitle font ',13'
set key noautotitle
unset key
set xrange [0:xmax]
set ytics scale 0
set grid noytics xtics
set style fill solid 1.0
# the left margin holds the longest row label (a device's stages are longer than a stage)
lm = (labelchars * 7.5 + 20) / width
lm = lm < 0.17 ? 0.17 : (lm > 0.4 ? 0.4 : lm)
set lmargin at screen lm
set rmargin at screen 0.98
half = 0.36
box(k) = (column(4) == k) ? (column(2) + column(3)) / 2 : NaN
wide(x) = showlabels && x > xmax / 90
# an op's width in pixels; ops under a pixel wide are drawn a pixel wide (so none
# vanishes), and those over 4 pixels again with a white edge that parts neighbours
px(x) = x / xmax * width * (0.98 - lm)
halfw(x) = px(x) < 1.2 ? 0.6 * xmax / (width * (0.98 - lm)) : x / 2
border(k) = '#ffffff'
y = 1.0 - head / (height * 1.0)
do for [p = 1:npanels] {
    top = y - (gap - 20) / (height * 1.0)
    bottom = top - 52.0 * devs(p) / height
    set tmargin at screen top
    set bmargin at screen bottom
    set title value(sprintf('paneltitle%d', p)) font ',11'
    set yrange [devs(p) - 0.5:-0.5]
    if (p == npanels) {
        set xlabel (costunits ? 'time since the window began (cost units, as given to simulate --cost)' : 'time since the window began (ms)')
        set format x '%g'
    } else {
        unset xlabel
        set format x ''
    }
    plot datafile index (2 * p - 1) using (NaN):1:ytic(2), \
         for [k = 0:4] datafile index (2 * p - 2) using (box(k)):1:(halfw($3 - $2)):(half) \
             with boxxyerror lc rgb kcolor(k + 1) fs solid 1.0 noborder, \
         for [k = 0:4] datafile index (2 * p - 2) using (px($3 - $2) > 4 ? box(k) : NaN):1:(($3 - $2) / 2):(half) \
             with boxxyerror lc rgb kcolor(k + 1) fs solid 1.0 border rgb border(k + 1), \
         datafile index (2 * p - 2) using (($2 + $3) / 2):1:(wide($3 - $2) && $5 >= 0 ? \
             ($7 >= 0 ? sprintf('%d@%d', $5, $7) : sprintf('%d', $5)) : '') \
             with labels font ',9' tc rgb '#000000'
    y = bottom
}
set lmargin at screen 0.02
set rmargin at screen 0.98
set bmargin at screen 0.0
set tmargin at screen 35.0 / height
unset border
unset tics
unset xlabel
unset title
unset grid
set xrange [0:1]
set yrange [0:1]
set key center center horizontal maxrows 1 nobox Left reverse samplen 1.5 width 2
plot NaN with boxes lc rgb kcolor(1) fs solid 1.0 border rgb border(1) title 'F (forward)', \
     NaN with boxes lc rgb kcolor(2) fs solid 1.0 border rgb border(2) title 'B (backward)', \
     NaN with boxes lc rgb kcolor(3) fs solid 1.0 border rgb border(3) title 'U (update)', \
     NaN with boxes lc rgb kcolor(4) fs solid 1.0 border rgb border(4) title 'I (input gradient)', \
     NaN with boxes lc rgb kcolor(5) fs solid 1.0 border rgb border(5) title 'W (weight gradient)', \
     NaN with boxes lc rgb '#303030' fs empty border rgb '#303030' title 'idle', \
     NaN with boxes lc rgb '#ffffff' fs empty border rgb '#ffffff' title '(numbers: micro-batches, @ its chunk)'
unset multiplot
