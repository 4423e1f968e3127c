/* harness/base/data_dir.h — where pipebench's data files live (the gnuplot scripts of
 * plots/, the experiment kits of experiments/): an environment variable, else the source
 * tree for a binary of its build tree, else the installed copy beside the binary. */
#ifndef PB_DATA_DIR_H
#define PB_DATA_DIR_H

#include <stddef.h>

/* The folder `sub` ("plots", "experiments") into out: $env when set and not empty; the
 * source tree's sub for a binary in its build tree; else <datadir>/pipebench/sub where
 * `meson install` puts it, found from the binary's own folder. */
void pb_data_dir(const char *sub, const char *env, char *out, size_t cap);

#endif
