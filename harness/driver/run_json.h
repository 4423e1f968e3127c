/* harness/driver/run_json.h — a run's configuration as the JSON object the runs table
 * records (its identity, `pipebench show`), and that JSON read straight back into a
 * struct pb_run_cfg (`pipebench resume`). */
#ifndef PB_RUN_JSON_H
#define PB_RUN_JSON_H

#include "harness/driver/plan.h"

/* The configuration of plan p (chosen) as JSON, its names as p resolved them; free() it.
 * The seed is a JSON integer up to 2^53 (what a double holds exactly), a decimal string
 * above. */
char *pb_plan_cfg_json(const struct pb_plan *p);
/* The same as written before results schema 9, every seed a string: the resume states
 * written then carry the hash of this text. */
char *pb_plan_cfg_json_v8(const struct pb_plan *p);

/* A run's recorded configuration (pb_run_cfg_json) read into c (defaults first), key by
 * key into its fields; *keep owns the strings c then points to (pb_run_json_finish after
 * the last use of c, also on error). A key this pipebench does not record, or a value of
 * the wrong type or out of range, is refused with a message. A configuration recorded
 * before --devices existed places every stage on device 0. */
struct pb_run_json;
int pb_run_cfg_from_json(const char *json, struct pb_run_cfg *c, struct pb_run_json **keep,
                         struct pb_err *e);
void pb_run_json_finish(struct pb_run_json *keep);

/* The shortest decimal that reads back as f (what the user typed: 0.01, not
 * 0.00999999977648258). */
double pb_run_decimal(float f);

#endif
