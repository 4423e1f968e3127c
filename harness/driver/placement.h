/* harness/driver/placement.h — --devices: which device each stage runs on. A list of k
 * device indices (0-based) for D stages, k <= D, places consecutive stages in k
 * contiguous groups, stage i on LIST[i·k/D]: k = D gives stage i LIST[i], k = 1 puts
 * every stage on that device. The configuration records the placement as one entry per
 * stage ("0" with 2 stages is "0,0"), so two lists that place alike are one
 * configuration. */
#ifndef PB_PLACEMENT_H
#define PB_PLACEMENT_H

#include "harness/base/err.h"

/* Largest device index taken. */
#define PB_PLACEMENT_MAX_DEVICE 1023

/* Each stage's device dev[stages] from text (NULL: "0"); entries are separated by
 * commas (or colons, as a sweep file's [grid] writes them). Errors, with what to do: an
 * entry that is empty or not a number, a negative or too large index, more entries than
 * stages. */
int pb_placement_parse(const char *text, int stages, int *dev, struct pb_err *e);

/* The placement as recorded: "0,0,1,1", one entry per stage; free() it. */
char *pb_placement_text(const int *dev, int stages);

#endif
