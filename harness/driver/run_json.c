/* harness/driver/run_json.c — a run's recorded configuration (pb_run_cfg_json) read back
 * into a struct pb_run_cfg, through the run flags, so `pipebench resume` continues a run
 * with exactly the options it was started with. */
#include <cjson/cJSON.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/driver/run_flags.h"

struct pb_run_json {
    cJSON *root;
    char **strings;   /* values made from numbers, lists and switches */
    int n, cap;
};

static const char *keep(struct pb_run_json *j, const char *s)
{
    if (j->n == j->cap) {
        j->cap = j->cap ? 2 * j->cap : 32;
        j->strings = realloc(j->strings, (size_t)j->cap * sizeof *j->strings);
        PB_CHECK(j->strings != NULL);
    }
    return j->strings[j->n++] = pb_xstrdup(s);
}

/* Keys of the JSON that are no run flag, or that a resume must not take again. */
static bool skipped(const char *key)
{
    static const char *const skip[] = {"beta1", "beta2", "trace_mb_lo", "trace_mb_hi", "init",
                                       NULL};
    for (int i = 0; skip[i]; i++)
        if (!strcmp(key, skip[i]))
            return true;
    return false;
}

static double number(const cJSON *root, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
    return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

/* The number at key (0 when absent) as an int in [0, INT_MAX]; -1 with a message for
 * another number (converting it would be undefined). */
static int count(const cJSON *root, const char *key, int *out, struct pb_err *e)
{
    double x = number(root, key);
    if (!(x >= 0 && x <= INT_MAX) || x != floor(x))
        return pb_err_set(e, "the run's recorded configuration: %s is %g, not a whole number "
                             "between 0 and %d", key, x, INT_MAX);
    *out = (int)x;
    return 0;
}

int pb_run_cfg_from_json(const char *json, struct pb_run_cfg *c, struct pb_run_json **out,
                         struct pb_err *e)
{
    struct pb_run_json *j = pb_xcalloc(1, sizeof *j);
    *out = j;
    j->root = json ? cJSON_Parse(json) : NULL;
    if (!cJSON_IsObject(j->root))
        return pb_err_set(e, "the run's recorded configuration is not a JSON object");
    struct pb_run_flags f = {{0}};
    char buf[512];
    for (const cJSON *it = j->root->child; it; it = it->next) {
        if (skipped(it->string))
            continue;
        char flag[64];
        snprintf(flag, sizeof flag, "%s", it->string);
        for (char *p = flag; *p; p++)
            *p = *p == '_' ? '-' : *p;
        bool sw;
        if (!pb_run_flag_known(flag, &sw))
            return pb_err_set(e, "the run's configuration has '%s', which this pipebench "
                              "does not know; resume it with the pipebench that started it",
                              it->string);
        const char *v = NULL;
        if (cJSON_IsString(it)) {
            if (!*it->valuestring)
                continue;   /* "" = not given */
            v = it->valuestring;
        } else if (cJSON_IsBool(it)) {
            v = cJSON_IsTrue(it) ? "on" : "off";
        } else if (cJSON_IsNumber(it)) {
            if (!strcmp(it->string, "microbatches") && it->valuedouble == 0)
                continue;   /* 0 = not given: D */
            snprintf(buf, sizeof buf, "%.15g", it->valuedouble);
            v = keep(j, buf);
        } else if (cJSON_IsArray(it)) {
            size_t len = 0;
            buf[0] = 0;
            for (const cJSON *x = it->child; x && len < sizeof buf; x = x->next) {
                if (!cJSON_IsNumber(x))
                    return pb_err_set(e, "the run's recorded configuration: %s holds something "
                                         "else than numbers", it->string);
                len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%.15g",
                                        len ? "," : "", x->valuedouble);
            }
            if (len >= sizeof buf)
                return pb_err_set(e, "the run's recorded configuration: %s is a list longer "
                                     "than pipebench records", it->string);
            if (!len)
                continue;
            v = keep(j, buf);
        } else {
            return pb_err_set(e, "the run's recorded configuration: %s is null or an object, "
                                 "which pipebench never records", it->string);
        }
        if (v && pb_run_flags_set(&f, flag, v, e))
            return pb_err_prefix(e, "the run's recorded configuration: ");
    }
    snprintf(buf, sizeof buf, "%.15g,%.15g", number(j->root, "beta1"), number(j->root, "beta2"));
    if (cJSON_GetObjectItemCaseSensitive(j->root, "beta1") &&
        pb_run_flags_set(&f, "betas", keep(j, buf), e))
        return -1;
    int hi = 0, lo = 0;
    if (count(j->root, "trace_mb_hi", &hi, e) || count(j->root, "trace_mb_lo", &lo, e))
        return -1;
    if (hi > 0) {
        snprintf(buf, sizeof buf, "%d:%d", lo, hi);
        if (pb_run_flags_set(&f, "trace-window", keep(j, buf), e))
            return -1;
    }
    return pb_run_flags_apply(&f, c, e) ? pb_err_prefix(e, "the run's recorded configuration: ")
                                        : 0;
}

void pb_run_json_finish(struct pb_run_json *j)
{
    if (!j)
        return;
    cJSON_Delete(j->root);
    for (int i = 0; i < j->n; i++)
        free(j->strings[i]);
    free(j->strings);
    free(j);
}
