/* plots/config_diff.c — the settings that tell configurations apart (config_diff.h). */
#include "plots/config_diff.h"

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/base/err.h"

/* A value as the table shows it: strings bare, the rest as JSON. */
static void value_text(const cJSON *v, char *buf, size_t cap)
{
    if (!v) {
        snprintf(buf, cap, "(absent)");
    } else if (cJSON_IsString(v)) {
        snprintf(buf, cap, "%s", v->valuestring);
    } else {
        char *t = cJSON_PrintUnformatted(v);
        snprintf(buf, cap, "%s", t ? t : "?");
        free(t);
    }
}

int pb_config_diff(const char *const *configs, int n, int which, char *out, size_t cap)
{
    PB_CHECK(which >= 0 && which < n && cap > 0);
    out[0] = 0;
    cJSON **obj = pb_xcalloc((size_t)n, sizeof *obj);
    bool ok = true;
    for (int i = 0; i < n && ok; i++) {
        obj[i] = configs[i] ? cJSON_Parse(configs[i]) : NULL;
        ok = cJSON_IsObject(obj[i]);
    }
    int count = 0;
    size_t len = 0;
    for (const cJSON *k = ok ? obj[which]->child : NULL; k; k = k->next) {
        bool differs = false;
        for (int i = 0; i < n && !differs; i++) {
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj[i], k->string);
            differs = !v || !cJSON_Compare(v, k, true);
        }
        if (!differs)
            continue;
        char val[128];
        value_text(k, val, sizeof val);
        int w = snprintf(out + len, cap - len, "%s%s=%s", count ? ", " : "", k->string, val);
        if (w < 0 || (size_t)w >= cap - len)
            break;
        len += (size_t)w;
        count++;
    }
    for (int i = 0; i < n; i++)
        cJSON_Delete(obj[i]);
    free(obj);
    return count;
}
