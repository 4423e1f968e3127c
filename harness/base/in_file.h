/* harness/base/in_file.h — an input file opened only when it is a regular file of at most a
 * stated size: a folder, device or FIFO is refused at once (never read without end, never
 * waited on for a writer), with a message naming what it is. */
#ifndef PB_IN_FILE_H
#define PB_IN_FILE_H

#include <stdio.h>

#include "harness/base/err.h"

/* The size limit of the text inputs (sweep files, BLEU files, vocabularies, corpora). */
#define PB_TEXT_MAX_BYTES (1LL << 31)

/* path opened for reading ("rb") when it is a regular file of at most max bytes (0: any
 * size); NULL with a message otherwise: errno is then the reason it could not be opened,
 * or 0 when it was refused for what it is (a folder, device, FIFO, or too large), so a
 * caller can keep its own message for a missing file. */
FILE *pb_in_file_open(const char *path, long long max, struct pb_err *e);

#endif
