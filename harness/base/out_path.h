/* harness/base/out_path.h — an output path the user names, checked before any work: not
 * the results database, not a folder, device, FIFO or socket, in a writable folder; and
 * the guard every atomic rename passes, which replaces only a regular file. */
#ifndef PB_OUT_PATH_H
#define PB_OUT_PATH_H

#include "harness/base/err.h"

/* Whether `flag`'s file `path` can be written by a rename beside it: -1 with a message
 * naming the cause and what to do. db (may be NULL): the results database, which the
 * output must not be (same file, by inode). */
int pb_out_path_check(const char *flag, const char *path, const char *db, struct pb_err *e);

/* Whether a rename may put a file at path: absent or a regular file (never over a folder,
 * a device or a FIFO); -1 with a message. */
int pb_out_path_replaceable(const char *path, struct pb_err *e);

#endif
