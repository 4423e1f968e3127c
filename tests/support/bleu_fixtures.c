/* tests/support/bleu_fixtures.c — reading the BLEU fixtures (bleu_fixtures.h). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/bleu_fixtures.h"

char *fixture_path(const char *name)
{
    static char buf[4][4096];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/bleu/%s",
             getenv("PB_FIXTURES") ? getenv("PB_FIXTURES") : "tests/fixtures", name);
    return buf[k];
}

char **read_lines(const char *name, int *n, char **text)
{
    FILE *f = fopen(fixture_path(name), "rb");
    ck_assert_msg(f != NULL, "fixture %s", name);
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    *text = malloc((size_t)len + 1);
    ck_assert(fread(*text, 1, (size_t)len, f) == (size_t)len);
    fclose(f);
    (*text)[len] = 0;
    char **lines = malloc(((size_t)len + 1) * sizeof *lines);
    *n = 0;
    for (char *p = *text; *p;) {
        char *q = strchr(p, '\n');
        ck_assert(q != NULL);
        *q = 0;
        lines[(*n)++] = p;
        p = q + 1;
    }
    return lines;
}
