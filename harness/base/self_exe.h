/* harness/base/self_exe.h — the running program's own path, and whether it is a program of
 * this build's tree (meson's build root) rather than an installed or moved copy: where
 * pipebench finds its data folders and its CUDA module, and what mpirun and Slurm scripts
 * start again. */
#ifndef PB_SELF_EXE_H
#define PB_SELF_EXE_H

#include <stdbool.h>
#include <stddef.h>

/* The running program's path into buf (/proc/self/exe); false, buf untouched, when it
 * cannot be read or does not fit. */
bool pb_self_exe(char *buf, size_t cap);
/* Whether path lies under this build's root folder. */
bool pb_in_build_tree(const char *path);

#endif
