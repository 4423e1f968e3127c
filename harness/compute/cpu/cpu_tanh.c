/* harness/compute/cpu/cpu_tanh.c — cpu_tanh.h's tanh over an array, vectorised: what the
 * tests hold against libm's tanhf. */
#include "harness/compute/cpu/cpu_tanh.h"

void pb_cpu_tanh_array(const float *x, float *y, size_t n)
{
#pragma omp simd
    for (size_t i = 0; i < n; i++)
        y[i] = pb_k_tanhf(x[i]);
}
