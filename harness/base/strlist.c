/* harness/base/strlist.c — comma-separated lists of values (strlist.h): split at commas,
 * trimmed of blanks, checked for empty and repeated items. */
#include "harness/base/strlist.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

int pb_strlist_add(struct pb_strlist *l, const char *s, const char *what, struct pb_err *e)
{
    const char *p = s;
    for (;;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        while (len && isspace((unsigned char)*p)) {
            p++;
            len--;
        }
        while (len && isspace((unsigned char)p[len - 1]))
            len--;
        if (!len)
            return pb_err_set(e, "%s: empty value in '%s'; separate values with single commas",
                              what, s);
        for (int i = 0; i < l->n; i++)
            if (strlen(l->items[i]) == len && !strncmp(l->items[i], p, len))
                return pb_err_set(e, "%s: '%s' is listed twice", what, l->items[i]);
        char **grown = realloc(l->items, (size_t)(l->n + 1) * sizeof *grown);
        PB_CHECK(grown != NULL);
        l->items = grown;
        l->items[l->n] = pb_xmalloc(len + 1);
        memcpy(l->items[l->n], p, len);
        l->items[l->n++][len] = 0;
        if (!end)
            return 0;
        p = end + 1;
    }
}

void pb_strlist_finish(struct pb_strlist *l)
{
    for (int i = 0; i < l->n; i++)
        free(l->items[i]);
    free(l->items);
    l->items = NULL;
    l->n = 0;
}
