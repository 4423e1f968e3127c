/* tests/bench/test_bench_peers.c — the PyTorch peers of the benchmarks (bench/bench_peers.h,
 * bench/bench_torch.h) with stand-in interpreters (shell scripts that answer as the bench/
 * scripts do, so no Python is needed): each peer is started with its own interpreter and
 * LD_LIBRARY_PATH, labelled by its version's MAJOR.MINOR, and a missing or silent second peer
 * is left out with a line that says how to get it; the sides' order rotates so that every side
 * goes first once in nsides rounds. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench/bench_peers.h"

static char dir[64];

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/pb_test_bench_peers_XXXXXX");
    ck_assert(mkdtemp(dir) != NULL);
}

static void teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}

/* An executable stand-in for a python at dir/name: its first line `first`, then for each
 * request "SECONDS SCRIPT LD_LIBRARY_PATH REQUEST" (SCRIPT: its argument; "-": no
 * LD_LIBRARY_PATH). Returns its path (static storage, one per name slot). */
static const char *fake_python(const char *name, const char *first, const char *seconds)
{
    static char paths[4][160];
    static int k;
    k = (k + 1) % 4;
    snprintf(paths[k], sizeof paths[k], "%s/%s", dir, name);
    FILE *f = fopen(paths[k], "w");
    ck_assert(f != NULL);
    fprintf(f, "#!/bin/sh\necho '%s'\nwhile read -r line; do echo \"%s $1 "
               "${LD_LIBRARY_PATH:--} $line\"; done\n", first, seconds);
    ck_assert_int_eq(fclose(f), 0);
    ck_assert_int_eq(chmod(paths[k], 0755), 0);
    return paths[k];
}

static const char v113[] = "torch 1.13.0a0 blas generic /usr/lib/libblas.so.3 onednn 2.6.3 cpu "
                           "AVX2 threads 1";
static const char v215[] = "torch 2.15.0+cu132 blas mkl mkl 2024.2 onednn 3.13.3 cpu AVX2 "
                           "threads 2";

/* The answer of peer t to one request. */
static const char *ask(struct bench_torch *t, const char *req)
{
    static char line[512];
    fprintf(t->req, "%s\n", req);
    fflush(t->req);
    bench_torch_answer(t, line, sizeof line);
    return line;
}

START_TEST(both_peers_answer_each_with_its_interpreter)
{
    const char *python[2] = {fake_python("py113", v113, "0.5"),
                             fake_python("py215", v215, "0.25")};
    struct bench_peers ps;
    ck_assert(bench_peers_start_with(&ps, python, "torch_step.py", "/opt/openblas", "test"));
    ck_assert_int_eq(ps.n, 2);
    ck_assert_str_eq(ps.p[0].label, "pt1.13");
    ck_assert_str_eq(ps.p[1].label, "pt2.15");
    ck_assert_str_eq(ps.p[0].version, v113);
    ck_assert_str_eq(ps.p[1].version, v215);
    ck_assert_str_eq(ps.python[1], python[1]);
    ck_assert_str_eq(ps.missing[0], "");
    ck_assert_str_eq(ps.missing[1], "");
    /* Debian's with the OpenBLAS folder; PyPI's with the environment as it is */
    ck_assert_str_eq(ask(&ps.p[0], "step k 1 2 3"), "0.5 torch_step.py /opt/openblas step k 1 2 3");
    char want[512];
    const char *ld = getenv("LD_LIBRARY_PATH");
    snprintf(want, sizeof want, "0.25 torch_step.py %s step k 2 1 1", ld && *ld ? ld : "-");
    ck_assert_str_eq(ask(&ps.p[1], "step k 2 1 1"), want);
    ck_assert(bench_torch_time(&ps.p[0], "k", 1, 2, 3) == 0.5);
    ck_assert(bench_torch_time(&ps.p[1], "k", 1, 2, 3) == 0.25);
    bench_peers_stop(&ps);
    ck_assert(ps.p[0].req == NULL && ps.p[1].req == NULL);
}
END_TEST

START_TEST(no_second_interpreter_says_how_to_get_one)
{
    const char *python[2] = {fake_python("py113", v113, "0.5"), NULL};
    struct bench_peers ps;
    ck_assert(bench_peers_start_with(&ps, python, "s.py", NULL, "test"));
    ck_assert_int_eq(ps.n, 1);
    ck_assert_str_eq(ps.p[0].label, "pt1.13");
    ck_assert_ptr_null(ps.libdir[0]);
    ck_assert_msg(strstr(ps.missing[1], "PB_TORCH2_PYTHON unset") &&
                  strstr(ps.missing[1], "scripts/bench --torch2"), "%s", ps.missing[1]);
    bench_peers_stop(&ps);
}
END_TEST

START_TEST(a_silent_or_absent_interpreter_is_left_out)
{
    char absent[160];
    snprintf(absent, sizeof absent, "%s/no-such-python", dir);
    const char *python[2] = {fake_python("notorch", "Traceback: no module named torch", "0"),
                             absent};
    struct bench_peers ps;
    ck_assert(!bench_peers_start_with(&ps, python, "s.py", NULL, "test"));
    ck_assert_int_eq(ps.n, 0);
    ck_assert_msg(strstr(ps.missing[0], "no PyTorch answered from") &&
                  strstr(ps.missing[0], "apt-get install python3-torch"), "%s", ps.missing[0]);
    ck_assert_msg(strstr(ps.missing[1], absent), "%s", ps.missing[1]);
    /* the second alone answers: it is the only peer */
    python[1] = fake_python("py215", v215, "0.25");
    ck_assert(bench_peers_start_with(&ps, python, "s.py", NULL, "test"));
    ck_assert_int_eq(ps.n, 1);
    ck_assert_str_eq(ps.p[0].label, "pt2.15");
    bench_peers_stop(&ps);
}
END_TEST

START_TEST(the_second_interpreter_comes_from_the_environment)
{
    const char *py2 = fake_python("py2", "torch 2.3.1 blas mkl", "1");
    ck_assert_int_eq(setenv(BENCH_PEERS_TORCH2_ENV, py2, 1), 0);
    struct bench_peers ps;
    ck_assert(bench_peers_start(&ps, "/nonexistent/script.py", NULL, "test"));
    ck_assert_int_ge(ps.n, 1);
    ck_assert_str_eq(ps.p[ps.n - 1].label, "pt2.3");
    ck_assert_str_eq(ps.python[ps.n - 1], py2);
    bench_peers_stop(&ps);
    ck_assert_int_eq(setenv(BENCH_PEERS_TORCH2_ENV, "", 1), 0);
    bench_peers_start(&ps, "/nonexistent/script.py", NULL, "test");
    ck_assert_msg(strstr(ps.missing[1], "PB_TORCH2_PYTHON unset"), "%s", ps.missing[1]);
    bench_peers_stop(&ps);
}
END_TEST

START_TEST(labels_are_major_and_minor)
{
    static const char *const cases[][2] = {
        {"torch 1.13.0a0 blas generic", "pt1.13"}, {"torch 2.15.0+cu132 blas mkl", "pt2.15"},
        {"torch 10.2 blas x", "pt10.2"},           {"torch 3 blas x", "pt3"},
        {"torch 2.1", "pt2.1"},
    };
    bool all = true;
    char bad[256] = "";
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct bench_torch t = {0};
        snprintf(t.version, sizeof t.version, "%s", cases[i][0]);
        bench_torch_label(&t);
        if (strcmp(t.label, cases[i][1])) {
            all = false;
            snprintf(bad, sizeof bad, "'%s' gave %s, not %s", cases[i][0], t.label, cases[i][1]);
        }
    }
    ck_assert_msg(all, "%s", bad);
}
END_TEST

START_TEST(every_side_goes_first_once_in_nsides_rounds)
{
    bool all = true;
    for (int nsides = 1; nsides <= 1 + BENCH_PEERS_MAX; nsides++) {
        int firsts[1 + BENCH_PEERS_MAX] = {0};
        for (int r = 0; r < nsides; r++) {
            int seen[1 + BENCH_PEERS_MAX] = {0};
            for (int i = 0; i < nsides; i++)
                seen[bench_side_order(r, i, nsides)]++;
            for (int s = 0; s < nsides; s++)
                all &= seen[s] == 1;  /* a round runs every side once */
            firsts[bench_side_order(r, 0, nsides)]++;
        }
        for (int s = 0; s < nsides; s++)
            all &= firsts[s] == 1;
    }
    /* two sides alternate, pipebench first in even rounds (the benchmarks' order before peers) */
    for (int r = 0; r < 6; r++)
        all &= bench_side_order(r, 0, 2) == r % 2;
    ck_assert(all);
}
END_TEST

Suite *pb_test_suite(void)
{
    Suite *s = suite_create("bench_peers");
    TCase *tc = tcase_create("peers");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, both_peers_answer_each_with_its_interpreter);
    tcase_add_test(tc, no_second_interpreter_says_how_to_get_one);
    tcase_add_test(tc, a_silent_or_absent_interpreter_is_left_out);
    tcase_add_test(tc, the_second_interpreter_comes_from_the_environment);
    tcase_add_test(tc, labels_are_major_and_minor);
    tcase_add_test(tc, every_side_goes_first_once_in_nsides_rounds);
    suite_add_tcase(s, tc);
    return s;
}
