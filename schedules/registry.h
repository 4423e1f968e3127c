/* schedules/registry.h — the table of schedules (schedules/registry.c; design §2.1,
 * docs/extending.md walks through adding one) and lookup by name (semantics §4). What a
 * schedule is, struct pb_schedule, is the IR's interface (harness/ir/program.h). */
#ifndef PB_SCHEDULES_REGISTRY_H
#define PB_SCHEDULES_REGISTRY_H

#include "harness/base/err.h"
#include "harness/ir/program.h"

/* Every schedule, in `pipebench list`'s order; NULL-terminated. */
extern const struct pb_schedule *const pb_schedules[];
/* The schedule called `name`; NULL with a message listing the valid names otherwise. */
const struct pb_schedule *pb_schedule_find(const char *name, struct pb_err *e);

#endif
