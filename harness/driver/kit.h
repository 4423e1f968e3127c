/* harness/driver/kit.h — an experiment kit (experiments/KIT/, docs/reproducing.md): the
 * published table it reproduces (table.csv: a row per published row, the paper's number
 * per schedule, "–" where none was published) and, per row and scale, a sweep file
 * (cpu/ROW.ini, paper/ROW.ini) that varies the schedule and the seed only. */
#ifndef PB_KIT_H
#define PB_KIT_H

#include "harness/base/err.h"
#include "plots/kit_table.h"

/* Most rows a kit's table may have. */
#define PB_KIT_MAX_ROWS 64

struct pb_kit_row {
    char id[64];          /* its sweep files' name: cpu/ID.ini, paper/ID.ini */
    char label[64], optimizer[32], metric[32], note[64];
    double paper[PB_KIT_NCOLS];   /* per pb_kit_columns; NAN: not published */
};

struct pb_kit {
    char dir[4096];
    struct pb_kit_row rows[PB_KIT_MAX_ROWS];
    int n;
};

/* The scales a kit runs at: "cpu" (small presets on the stand-ins) and "paper". */
extern const char *const pb_kit_scales[2];

/* Reads dir/table.csv: '#' lines are comments; a header line "row,workload,optimizer,
 * metric,note," then the six schedules of pb_kit_columns; each row a number or "–" per
 * schedule. Every problem is reported with its line. */
int pb_kit_load(struct pb_kit *k, const char *dir, struct pb_err *e);

/* The row named id, or NULL. */
const struct pb_kit_row *pb_kit_row(const struct pb_kit *k, const char *id);

/* The sweep file of a row at a scale: dir/scale/id.ini. */
int pb_kit_row_file(const struct pb_kit *k, const struct pb_kit_row *r, const char *scale,
                    char *out, size_t cap, struct pb_err *e);

#endif
