/* tests/compute/cuda/test_cuda_module.c — every program that may load the CUDA backend's
 * module (pipebench-cuda.so, harness/compute/registry.c) loads it: the module calls back
 * into the program (pb_backend_alloc, pb_err_set, ...), so a program that does not
 * export those symbols (meson's export_dynamic) refuses `--backend cuda` with "could not
 * be loaded" even on a GPU. Each program is asked for the cuda backend: where there is no
 * sign of a GPU the answer must be the probe's "no NVIDIA GPU", which comes only after
 * the module loaded; on a GPU, pipebench trains a tiny run and test_backend_ops checks
 * gemm. bench_cuda_direct (a benchmark on a GPU) is asked only where there is none. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/support/gpu_sign.h"

/* Runs cmd with stdout and stderr together into out; returns the exit status. */
static int run(const char *cmd, char *out, size_t cap)
{
    char full[4200];
    snprintf(full, sizeof full, "( %s ) 2>&1", cmd);
    FILE *f = popen(full, "r");
    ck_assert(f != NULL);
    size_t n = 0, r;
    while (n < cap - 1 && (r = fread(out + n, 1, cap - 1 - n, f)) > 0)
        n += r;
    out[n] = 0;
    char sink[4096];
    while (fread(sink, 1, sizeof sink, f) > 0)
        ;
    int st = pclose(f);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static const struct program {
    const char *env;    /* the variable meson sets to the program's path */
    const char *args;   /* what asks it for the cuda backend */
    bool gpu_too;       /* asked on a GPU as well */
} programs[] = {
    {"PB_PIPEBENCH", "run --model mlp --backend cuda --epochs 1 --limit-train 64 "
                     "--limit-val 64 --db runs.db", true},
    {"PB_TEST_BACKEND_OPS", "--backend cuda --op gemm", true},
    {"PB_BENCH_CUDA_DIRECT", "", false},
};

START_TEST(test_module_loads)
{
    const struct program *p = &programs[_i];
    const char *bin = getenv(p->env);
    ck_assert_msg(bin != NULL, "%s is not set (run through meson test)", p->env);
    bool gpu = pb_test_gpu_sign();
    if (gpu && !p->gpu_too)
        return;
    char dir[] = "/tmp/pb-cuda-module-XXXXXX", cmd[4096], out[1 << 14];
    ck_assert(mkdtemp(dir) != NULL);
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' %s", dir, bin, p->args);
    int rc = run(cmd, out, sizeof out);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert(system(cmd) == 0);
    ck_assert_msg(!strstr(out, "could not be loaded"), "%s cannot load the CUDA module:\n%s",
                  bin, out);
    if (gpu)
        ck_assert_msg(rc == 0, "%s %s failed on a GPU (exit %d):\n%s", bin, p->args, rc, out);
    else
        ck_assert_msg(strstr(out, "no NVIDIA GPU") != NULL, "%s without a GPU did not say so "
                      "after loading the module (exit %d):\n%s", bin, rc, out);
}
END_TEST

Suite *pb_test_suite(void)
{
    Suite *s = suite_create("cuda_module");
    TCase *tc = tcase_create("module");
    tcase_set_timeout(tc, 300);
    tcase_add_loop_test(tc, test_module_loads, 0, (int)(sizeof programs / sizeof programs[0]));
    suite_add_tcase(s, tc);
    return s;
}
