/* harness/base/strlist.h — comma-separated lists of values (compare's --schedules and
 * --optimizers, a sweep file's [grid] keys): split, trimmed, no empty item and no
 * item listed twice. */
#ifndef PB_STRLIST_H
#define PB_STRLIST_H

#include "harness/base/err.h"

struct pb_strlist {
    char **items;
    int n;
};

/* Appends the items of s to l (what names the list in messages). Returns 0, or -1 with
 * a message: an empty item, or an item already in l. */
int pb_strlist_add(struct pb_strlist *l, const char *s, const char *what, struct pb_err *e);
void pb_strlist_finish(struct pb_strlist *l);

#endif
