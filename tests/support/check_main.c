/* tests/support/check_main.c — the runner shared by every Check suite: each test file
 * defines pb_test_suite(); failures are printed with Check's own summary line.
 * --include-tags=T or --exclude-tags=T runs only the cases tagged (or not tagged) T:
 * tests/meson.build runs a suite's 'fast' cases and its other cases as two tests. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

Suite *pb_test_suite(void);

int main(int argc, char **argv)
{
    static const char inc[] = "--include-tags=", exc[] = "--exclude-tags=";
    const char *include = NULL, *exclude = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strncmp(argv[i], inc, sizeof inc - 1)) {
            include = argv[i] + sizeof inc - 1;
        } else if (!strncmp(argv[i], exc, sizeof exc - 1)) {
            exclude = argv[i] + sizeof exc - 1;
        } else {
            fprintf(stderr, "usage: %s [--include-tags=TAGS] [--exclude-tags=TAGS]\n", argv[0]);
            return 2;
        }
    }
    SRunner *sr = srunner_create(pb_test_suite());
    /* NULL selections fall back to Check's CK_RUN_SUITE, CK_RUN_CASE and CK_*_TAGS */
    srunner_run_tagged(sr, NULL, NULL, include, exclude, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
