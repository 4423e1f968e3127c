/* harness/compute/cpu/cpu_tanh.h — pb_cpu_tanh_array (cpu_tanh.c): kernels/tanh.h's tanh
 * over an array, vectorised, which the tests hold against libm's tanhf and against the
 * scalar function's bits. */
#ifndef PB_CPU_TANH_H
#define PB_CPU_TANH_H

#include <stddef.h>

#include "harness/compute/kernels/tanh.h"

/* y[i] = pb_k_tanhf(x[i]) for i < n, vectorised; y may be x. */
void pb_cpu_tanh_array(const float *x, float *y, size_t n);

#endif
