/* harness/compute/cpu/cpu_backend.h — the CPU backend as the registry
 * (harness/compute/registry.c) and the tests create it: its constructor, and the library
 * it computes with. */
#ifndef PB_CPU_BACKEND_H
#define PB_CPU_BACKEND_H

#include <stddef.h>

#include "harness/base/err.h"
#include "harness/compute/backend.h"

/* The CPU backend with nthreads threads (0 = all cores). */
struct pb_backend *pb_backend_cpu_create(int nthreads, struct pb_err *e);
/* "oneDNN 2.6.3 <hash>": the library the CPU backend computes with. */
void pb_backend_cpu_libraries(char *buf, size_t cap);

#endif
