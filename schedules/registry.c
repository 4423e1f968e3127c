/* schedules/registry.c — the table of schedules (design §2.1; docs/extending.md
 * walks through adding one) and lookup by name (semantics §4). */
#include <string.h>

#include "schedules/common.h"
#include "schedules/registry.h"

const struct pb_schedule *const pb_schedules[] = {
    &pb_schedule_gpipe,
    &pb_schedule_1f1b,
    &pb_schedule_zb_h1,
    &pb_schedule_zb_h2,
    &pb_schedule_interleaved,
    &pb_schedule_looped_bfs,
    &pb_schedule_zb_v,
    &pb_schedule_dualpipe_v,
    &pb_schedule_pipedream,
    &pb_schedule_pipedream_2bw,
    &pb_schedule_spectrain,
    &pb_schedule_xpipe,
    &pb_schedule_pipeoptim,
    &pb_schedule_pipemare,
    NULL,
};

const struct pb_schedule *pb_schedule_find(const char *name, struct pb_err *e)
{
    for (int i = 0; pb_schedules[i]; i++)
        if (name && !strcmp(pb_schedules[i]->name, name))
            return pb_schedules[i];
    char list[512] = "";
    for (int i = 0; pb_schedules[i]; i++) {
        size_t n = strlen(list);
        snprintf(list + n, sizeof list - n, "%s%s", i ? ", " : "", pb_schedules[i]->name);
    }
    pb_err_set(e, "unknown schedule '%s'; valid schedules: %s", name ? name : "(none)", list);
    return NULL;
}
