/* harness/driver/placement.c — --devices parsed and spread over the stages
 * (placement.h). */
#include "harness/driver/placement.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HOWTO "give comma-separated device indices counting from 0, at most one per stage " \
              "(--devices 0 puts every stage on device 0)"

int pb_placement_parse(const char *text, int stages, int *dev, struct pb_err *e)
{
    const char *s = text ? text : "0";
    PB_CHECK(stages >= 1);
    int *list = pb_xcalloc((size_t)stages, sizeof *list), k = 0, rc = 0;
    for (const char *p = s; !rc; p++) {
        size_t n = strcspn(p, ",:");
        char *end;
        long v = n ? strtol(p, &end, 10) : 0;
        if (n == 0)
            rc = pb_err_set(e, "--devices %s: an empty entry; " HOWTO, s);
        else if (end != p + n || (*p != '-' && (*p < '0' || *p > '9')))
            rc = pb_err_set(e, "--devices %s: '%.*s' is not a device index; " HOWTO, s, (int)n,
                            p);
        else if (v < 0)
            rc = pb_err_set(e, "--devices %s: device %ld is negative; " HOWTO, s, v);
        else if (v > PB_PLACEMENT_MAX_DEVICE)
            rc = pb_err_set(e, "--devices %s: device %ld is beyond the largest index taken, "
                            "%d; " HOWTO, s, v, PB_PLACEMENT_MAX_DEVICE);
        else if (k == stages)
            rc = pb_err_set(e, "--devices %s: more devices than stages (--stages %d); give "
                            "at most %d, consecutive stages then share a device", s, stages,
                            stages);
        else
            list[k++] = (int)v;
        p += n;
        if (!*p)
            break;
    }
    for (int i = 0; !rc && i < stages; i++)
        dev[i] = list[(long)i * k / stages];
    free(list);
    return rc;
}

char *pb_placement_text(const int *dev, int stages)
{
    size_t cap = (size_t)stages * 6 + 1, len = 0;
    char *s = pb_xmalloc(cap);
    s[0] = 0;
    for (int i = 0; i < stages; i++)
        len += (size_t)snprintf(s + len, cap - len, "%s%d", i ? "," : "", dev[i]);
    return s;
}
