/* tests/check_main.c — the runner shared by every Check suite: each test file
 * defines pb_test_suite(); failures are printed with Check's own summary line. */
#include <check.h>
#include <stdlib.h>

Suite *pb_test_suite(void);

int main(void)
{
    SRunner *sr = srunner_create(pb_test_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
