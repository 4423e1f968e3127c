/* plots/stats.h — the statistics behind a report's cells (semantics §6.1): the confidence
 * interval of a mean over seeds and Welch's t-test between two cells, from each cell's
 * mean, sample standard deviation and count; Student's t distribution from GSL. */
#ifndef PB_STATS_H
#define PB_STATS_H

/* The fewest seeds a cell needs to be ranked (marked best, or beaten): below it a
 * standard deviation says too little. */
#define PB_STATS_MIN_N 3

/* The level of the tests and intervals when the user names none. */
#define PB_STATS_LEVEL 0.95

/* Half the width of the level (in (0, 1)) confidence interval of the mean of n values
 * with sample standard deviation sd: t_{(1 + level)/2, n − 1} · sd / √n; NaN when n < 2. */
double pb_stats_ci_half(double sd, int n, double level);

/* Welch's two-sided t-test that two means are equal, from each sample's mean, sample
 * standard deviation and count (Welch–Satterthwaite degrees of freedom): the p-value;
 * NaN when either n < 2. Two samples without spread: 1 when the means are equal, else 0. */
double pb_stats_welch_p(double m1, double sd1, int n1, double m2, double sd2, int n2);

#endif
