/* tests/project/test_symbols.c — the naming convention of design §1 and §8: every external
 * symbol the library defines starts with pb_ (or PB_), so the harness can be linked
 * into other programs; lists the defined globals of $PB_LIBRARY with `nm`. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

START_TEST(test_external_symbols_are_prefixed)
{
    const char *lib = getenv("PB_LIBRARY");
    ck_assert_msg(lib != NULL, "PB_LIBRARY is not set (tests/meson.build sets it)");
    char cmd[4096];
    /* -A: each line starts with "archive:member:", the object that defines the symbol */
    snprintf(cmd, sizeof cmd, "nm -A -g --defined-only '%s' 2>&1", lib);
    FILE *f = popen(cmd, "r");
    ck_assert(f != NULL);
    char line[1024], bad[1 << 14] = "";
    int nbad = 0, nsyms = 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        /* "ARCHIVE:MEMBER:VALUE TYPE NAME", read from the right (paths may hold spaces) */
        char *name = strrchr(line, ' ');
        if (!name)
            continue;
        *name++ = 0;
        char *type = strrchr(line, ' ');
        if (!type)
            continue;
        *type = 0;
        char *value = strrchr(line, ':');
        if (!value)
            continue;
        *value = 0;
        char *member = strrchr(line, ':');
        member = member ? member + 1 : line;
        if (strrchr(member, '/'))
            member = strrchr(member, '/') + 1;
        nsyms++;
        if (!strncmp(name, "pb_", 3) || !strncmp(name, "PB_", 3))
            continue;
        /* the C++ personality routine's weak reference that g++ emits in every .cu object
         * (nvcc's host code); -fno-exceptions would drop it but breaks CUB's host calls */
        if (!strcmp(name, "DW.ref.__gxx_personality_v0"))
            continue;
        nbad++;
        size_t n = strlen(bad);
        snprintf(bad + n, sizeof bad - n, "\n  %s (%s)", name, member);
    }
    int st = pclose(f);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "`%s` failed (status %d)", cmd, st);
    ck_assert_msg(nsyms > 0, "nm listed no symbols in %s", lib);
    ck_assert_msg(nbad == 0, "%d external symbols of %s lack the pb_ prefix:%s", nbad, lib, bad);
}
END_TEST

Suite *pb_test_suite(void)
{
    Suite *s = suite_create("symbols");
    TCase *tc = tcase_create("nm");
    tcase_add_test(tc, test_external_symbols_are_prefixed);
    suite_add_tcase(s, tc);
    return s;
}
