# plots/legend.gp — the last panel of a multi-panel figure: one legend for all panels,
# in a strip along the bottom. The figure defines legendplot, the plot command that lists
# its series with invisible points (NaN), and legendtop, the strip's top (screen units);
# legendrows (default 1) spreads many series over more rows.
set lmargin at screen 0.02
set rmargin at screen 0.98
set bmargin at screen 0.01
set tmargin at screen legendtop
unset border
unset tics
unset xlabel
unset ylabel
unset title
unset grid
unset logscale
set xrange [0:1]
set yrange [0:1]
if (!exists("legendrows")) legendrows = 1
set key center center horizontal maxrows legendrows nobox Left reverse samplen 2.5 width 2
eval legendplot
