/* plots/stats.c — confidence intervals and Welch's t-test (stats.h) on GSL's Student t. */
#include "plots/stats.h"

#include <gsl/gsl_cdf.h>
#include <math.h>

double pb_stats_ci_half(double sd, int n, double level)
{
    if (n < 2)
        return NAN;
    return gsl_cdf_tdist_Pinv(0.5 + level / 2, n - 1) * sd / sqrt(n);
}

double pb_stats_welch_p(double m1, double sd1, int n1, double m2, double sd2, int n2)
{
    if (n1 < 2 || n2 < 2)
        return NAN;
    double v1 = sd1 * sd1 / n1, v2 = sd2 * sd2 / n2, se2 = v1 + v2;
    if (se2 == 0)
        return m1 == m2 ? 1.0 : 0.0;
    double t = fabs(m1 - m2) / sqrt(se2);
    double df = se2 * se2 / (v1 * v1 / (n1 - 1) + v2 * v2 / (n2 - 1));
    return 2 * gsl_cdf_tdist_Q(t, df);
}
