/* harness/base/atomic_file.h — files written whole or not at all: output goes to a temporary
 * file beside the target, renamed over it on commit, so a reader never sees a half-written
 * figure, data file or trace. */
#ifndef PB_ATOMIC_FILE_H
#define PB_ATOMIC_FILE_H

#include <stdio.h>

#include "harness/base/err.h"

struct pb_afile {
    FILE *f;          /* write here */
    char *path, *tmp;
};

/* Opens a temporary file next to path. */
int pb_afile_open(struct pb_afile *a, const char *path, struct pb_err *e);
/* Flushes, closes and renames the temporary file to path; on failure removes it. */
int pb_afile_commit(struct pb_afile *a, struct pb_err *e);
/* Closes and removes the temporary file; safe after a commit or a failed open. */
void pb_afile_abort(struct pb_afile *a);

/* A fresh temporary path beside path (its folder, a hidden name with the pid), to
 * hand to a program that writes the file itself; free() it. Removes first the stale
 * temporaries of path (pb_afile_remove_stale). */
char *pb_afile_tmp_name(const char *path);
/* Removes the temporaries ".NAME.tmp-PID-N" beside path whose writing process is gone
 * (killed while it wrote path); those of live processes stay. */
void pb_afile_remove_stale(const char *path);

#endif
