/* tests/base/test_interrupt.c — the run's signal routing (interrupt.h): after
 * pb_interrupt_route the caller and the threads it starts block SIGINT, SIGTERM, SIGHUP
 * and SIGUSR2 (mpirun's forwarded stop request), and the catcher counts the signals sent
 * to the process; a storm of signals
 * during oneDNN's JIT GEMM (whose rsp points into the heap, oneDNN issue #4845: a signal
 * frame pushed there corrupted the heap of an MPI rank given SIGTERM) leaves every
 * product bit-identical and the heap whole. */
#include <check.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <oneapi/dnnl/dnnl.h>

#include "harness/base/interrupt.h"

static const int handled[] = {SIGINT, SIGTERM, SIGHUP, SIGUSR2};

static void assert_blocked_here(void)
{
    sigset_t cur;
    pthread_sigmask(SIG_BLOCK, NULL, &cur);
    for (int i = 0; i < 4; i++)
        ck_assert_msg(sigismember(&cur, handled[i]), "signal %d open", handled[i]);
}

static void *check_thread(void *arg)
{
    (void)arg;
    assert_blocked_here();
    return NULL;
}

static void wait_count(int n)
{
    for (int i = 0; i < 2000 && pb_interrupt_count() < n; i++)
        usleep(1000);
    ck_assert_int_eq(pb_interrupt_count(), n);
}

START_TEST(routed_to_the_catcher)
{
    sigset_t before, after;
    pthread_sigmask(SIG_BLOCK, NULL, &before);
    ck_assert(!sigismember(&before, SIGTERM));
    pb_interrupt_route();
    pb_interrupt_install(NULL);
    assert_blocked_here();
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, check_thread, NULL), 0);
    pthread_join(t, NULL);
    kill(getpid(), SIGTERM);
    wait_count(1);
    ck_assert(pb_interrupted() && !pb_interrupted_now());
    kill(getpid(), SIGINT);
    wait_count(2);
    ck_assert(pb_interrupted_now());
    kill(getpid(), SIGUSR2);   /* counted as the others, never the default action's end */
    wait_count(3);
    pb_interrupt_restore();
    pb_interrupt_unroute();
    pthread_sigmask(SIG_BLOCK, NULL, &after);
    ck_assert(!sigismember(&after, SIGTERM) && !sigismember(&after, SIGINT) &&
              !sigismember(&after, SIGUSR2));
}
END_TEST

/* A signal raised on the routing thread waits there (the thread blocks it); the restore
 * counts it, where the default action, once restored and unblocked, would end the
 * process (as a storm's last SIGHUP, not yet taken by the catcher, ended the next test
 * under ASan). */
START_TEST(pending_at_restore_is_counted)
{
    signal(SIGHUP, SIG_DFL);
    pb_interrupt_route();
    pb_interrupt_install(NULL);
    raise(SIGHUP);
    ck_assert_int_eq(pb_interrupt_count(), 0);
    pb_interrupt_restore();
    ck_assert_int_eq(pb_interrupt_count(), 1);
    pb_interrupt_unroute();
    sigset_t pending;
    sigpending(&pending);
    ck_assert(!sigismember(&pending, SIGHUP));
}
END_TEST

static volatile int storming;

static void *storm(void *arg)
{
    (void)arg;
    struct timespec ts = {0, 20000};
    while (storming) {
        kill(getpid(), SIGHUP);
        nanosleep(&ts, NULL);
    }
    return NULL;
}

/* 32 × 784 = (32 × 256)(256 × 784), the mlp's first layer's input gradient: the product
 * whose free() aborted ("free(): invalid pointer") within 5000 calls under a 20 µs
 * signal timer before the routing. */
START_TEST(gemm_under_a_signal_storm)
{
    enum { M = 32, N = 784, K = 256, CALLS = 4000 };
    float *a = malloc(sizeof(float) * M * K), *b = malloc(sizeof(float) * K * N);
    float *c = malloc(sizeof(float) * M * N), *ref = malloc(sizeof(float) * M * N);
    for (int i = 0; i < M * K; i++)
        a[i] = (float)((unsigned)i * 7919u % 13u) - 6.0f;
    for (int i = 0; i < K * N; i++)
        b[i] = (float)((unsigned)i * 104729u % 11u) - 5.0f;
    /* the storm's SIGHUP caught whatever started the test: nohup leaves it ignored, and
       pb_interrupt_install keeps an ignored signal ignored (a nohup'd run ignores hangups) */
    signal(SIGHUP, SIG_DFL);
    pb_interrupt_route();   /* before the first product starts the OpenMP team */
    pb_interrupt_install(NULL);
    ck_assert_int_eq(dnnl_sgemm('N', 'N', M, N, K, 1.0f, a, K, b, N, 0.0f, ref, N), dnnl_success);
    storming = 1;
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, storm, NULL), 0);
    int differ = 0;
    for (int r = 0; r < CALLS; r++) {
        dnnl_sgemm('N', 'N', M, N, K, 1.0f, a, K, b, N, 0.0f, c, N);
        differ += memcmp(c, ref, sizeof(float) * M * N) != 0;
    }
    storming = 0;
    pthread_join(t, NULL);
    ck_assert_int_eq(differ, 0);
    ck_assert_int_gt(pb_interrupt_count(), 100);
    pb_interrupt_restore();
    pb_interrupt_unroute();
    free(a);
    free(b);
    free(c);
    free(ref);
}
END_TEST

Suite *pb_test_suite(void)
{
    Suite *s = suite_create("interrupt");
    TCase *tc = tcase_create("interrupt");
    tcase_add_test(tc, routed_to_the_catcher);
    tcase_add_test(tc, pending_at_restore_is_counted);
    tcase_add_test(tc, gemm_under_a_signal_storm);
    suite_add_tcase(s, tc);
    return s;
}
