# plots/convergence.gp — the convergence figure (semantics §6.6): per schedule the mean over
# its runs (seeds) with its confidence interval as a band, of the validation accuracy
# against the epoch and the training seconds elapsed (top), and of the validation and
# training loss against the epoch (bottom); with a target, its line, a marker where every
# seed of a schedule reached it and "k/n" where only k of its n seeds did.
# Data (plots/plot_convergence.c): a block per schedule, its header naming it with its n,
# columns epoch, accuracy %, its interval's half-width, seconds, validation loss, its
# half-width, training loss, its half-width, runs; with a target a last block, a row per
# schedule: epochs and seconds to it where all seeds reached it, the same where some did,
# reached, runs. Variables: datafile, outfile, fmt, plottitle, nseries, colors, points,
# dashes, target (%; 0: none), hasloss, ncells.
# With ncells > 1 (a database of several configurations): a facet per configuration of
# the accuracy per epoch, titled celltitle1 ..., each with its own key (its n); the data
# holds each cell's nseries blocks in turn and the target rows likewise.
# With nfacets > 1 (six or more schedules in a configuration, plots/plot_facets.h): the
# schedules split into panels, series facetfirst<k> .. facetlast<k> titled
# facettitle<k>, each with its own key: of one configuration a row per panel, accuracy
# per epoch and per training second; of several a row per configuration, a column per
# panel, accuracy per epoch (panelruns<c>_<k>: cell c's runs in panel k; 0: marked
# empty).
if (!exists("nfacets")) nfacets = 1
if (!exists("ncells")) ncells = 1
width = nfacets > 1 && ncells > 1 ? 100 + 500 * nfacets : 1400
height = nfacets > 1 ? 200 + 380 * (ncells > 1 ? ncells : nfacets) : 1000
dir = ARG0[1:strstrt(ARG0, 'convergence.gp') - 1]
load dir.'style.gp'
if (!exists("target")) target = 0
if (!exists("hasloss")) hasloss = 1
bo = 0                  # the drawn cell's first block, and its first target row
tb = ncells * nseries   # the target block
gs = 1                  # the drawn panel's first and last series
ge = nseries

band(i) = sprintf('fs transparent solid 0.18 noborder lc rgb "%s"', color(i))
set xtics nomirror
left = 0.07
mid = 0.53
set style line 99 lw 1.5 dt (6, 4) lc rgb '#000000'
# one panel: x column xc, mean column yc, std column sc of every block
panel(xc, yc, sc) = sprintf('plot for [i = gs:ge] datafile index (bo + i - 1) using %d:($%d - $%d):($%d + $%d) with filledcurves fc rgb color(i) fs transparent solid 0.18 noborder notitle, for [i = gs:ge] datafile index (bo + i - 1) using %d:%d with linespoints lw 2 pt pt(i) ps 1.1 lc rgb color(i) dt dtn(i)', xc, yc, sc, yc, sc, xc, yc)
# target markers: column xc (epochs or seconds where all seeds reached it), xc + 2 (where some did)
marks(xc) = sprintf(', for [i = gs:ge] datafile index tb every ::(bo + i - 1)::(bo + i - 1) using %d:(target) with points pt pt(i) ps 2.6 lw 2 lc rgb color(i) notitle', xc) . \
            sprintf(', for [i = gs:ge] datafile index tb every ::(bo + i - 1)::(bo + i - 1) using %d:(target):(sprintf("%%d/%%d", $6, $7)) with labels offset 0, -1.2 tc rgb color(i) font ",10" notitle', xc + 2)
targetline = 'set arrow 1 from graph 0, first target to graph 1, first target nohead ls 99 front; set label 1 sprintf("target %g%%", target) at graph 0.01, first target offset 0, 0.7 front'

if (ncells > 1) {
    cols = nfacets > 1 ? nfacets : (ncells <= 2 ? ncells : (ncells <= 4 ? 2 : 3))
    rows = nfacets > 1 ? ncells : int((ncells + cols - 1) / cols)
    set multiplot layout rows, cols title plottitle font (nfacets > 1 ? ',11' : ',13')
    set key top left opaque font ',9' samplen 2.5
    set ylabel 'validation accuracy (%)'
    set xlabel 'epoch'
    set xtics 1
    set autoscale xfix
    set offsets 0.25, 0.25, 0, 0
    do for [c = 1:ncells] {
        bo = (c - 1) * nseries
        do for [k = 1:nfacets] {
            if (nfacets > 1) {
                gs = value(sprintf('facetfirst%d', k))
                ge = value(sprintf('facetlast%d', k))
                set title value(sprintf('celltitle%d', c)).': '.value(sprintf('facettitle%d', k)) font ',10'
            } else {
                set title value(sprintf('celltitle%d', c))
            }
            if (nfacets > 1 && value(sprintf('panelruns%d_%d', c, k)) == 0) {
                set label 2 'no run of these schedules' at graph 0.5, 0.5 center
                unset key
                plot [0:1] [0:1] NaN notitle
                set key
                unset label 2
            } else {
                if (target > 0) { eval targetline; eval panel(1, 2, 3).marks(2) } else { eval panel(1, 2, 3) }
            }
        }
    }
    unset multiplot
    exit
}

if (nfacets > 1) {
    set multiplot layout nfacets, 2 title plottitle font ',11'
    set key top left opaque font ',9' samplen 2.5
    set ylabel 'validation accuracy (%)'
    do for [k = 1:nfacets] {
        gs = value(sprintf('facetfirst%d', k))
        ge = value(sprintf('facetlast%d', k))
        set xlabel 'epoch'
        set xtics 1
        set autoscale xfix
        set offsets 0.25, 0.25, 0, 0
        set title value(sprintf('facettitle%d', k)).': accuracy per epoch'
        if (target > 0) { eval targetline; eval panel(1, 2, 3).marks(2) } else { eval panel(1, 2, 3) }
        set xlabel 'training time (s, the warm-up epoch included)'
        set xtics autofreq
        set autoscale x
        set offsets 0, 0, 0, 0
        set title value(sprintf('facettitle%d', k)).': accuracy per training second'
        if (target > 0) { eval panel(4, 2, 3).marks(3) } else { eval panel(4, 2, 3) }
    }
    unset multiplot
    exit
}

set multiplot title plottitle font ',13'
unset key
set tmargin at screen 0.90
set bmargin at screen 0.60
set lmargin at screen left
set rmargin at screen left + 0.40
set ylabel 'validation accuracy (%)'
set xlabel 'epoch'
set xtics 1
set autoscale xfix
set offsets 0.25, 0.25, 0, 0
set title 'accuracy per epoch'
if (target > 0) { eval targetline; eval panel(1, 2, 3).marks(2) } else { eval panel(1, 2, 3) }
set lmargin at screen mid
set rmargin at screen mid + 0.42
set xlabel 'training time (s, the warm-up epoch included)'
set xtics autofreq
set autoscale x
set offsets 0, 0, 0, 0
set title 'accuracy per training second'
if (target > 0) { eval panel(4, 2, 3).marks(3) } else { eval panel(4, 2, 3) }
unset arrow 1
unset label 1

set tmargin at screen 0.50
set bmargin at screen 0.20
set lmargin at screen left
set rmargin at screen left + 0.40
set xlabel 'epoch'
set xtics 1
set autoscale xfix
set offsets 0.25, 0.25, 0, 0
set ylabel 'loss'
set title 'validation loss per epoch'
if (hasloss) {
    eval panel(1, 5, 6)
    set lmargin at screen mid
    set rmargin at screen mid + 0.42
    set title 'training loss per epoch (mean over the epoch''s micro-batches)'
    eval panel(1, 7, 8)
} else {
    set label 2 'no loss recorded' at graph 0.5, 0.5 center
    plot [0:1] [0:1] NaN
    unset label 2
}

legendtop = 0.10
legendrows = nseries > 5 ? 2 : 1
legendplot = "plot for [i = 1:nseries] datafile index (i - 1) using (NaN):(NaN) " . \
             "with linespoints lw 2 pt pt(i) ps 1.1 lc rgb color(i) dt dtn(i) title columnheader(2)" . \
             (target > 0 ? ", NaN ls 99 title 'target'" : "")
load dir.'legend.gp'
unset multiplot
