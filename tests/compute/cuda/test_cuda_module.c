/* tests/compute/cuda/test_cuda_module.c — every program that may load the CUDA backend's
 * module (pipebench-cuda.so, harness/compute/registry.c) loads it: the module calls back
 * into the program (pb_backend_alloc, pb_err_set, ...), so a program that does not
 * export those symbols (meson's export_dynamic) refuses `--backend cuda` with "could not
 * be loaded" even on a GPU. Each program is asked for the cuda backend: where there is no
 * sign of a GPU the answer must be the probe's "no NVIDIA GPU", which comes only after
 * the module loaded; on a GPU, pipebench trains a tiny run and test_backend_ops checks
 * gemm. bench_cuda_direct (a benchmark on a GPU) is asked only where there is none.
 * A pipebench copied out of the build tree into an install tree (as scripts/gpu-bundle
 * lays one out) loads the module of that tree, found from its own folder, and never the
 * build folder's. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pb_config.h"
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

/* what pipebench in dir/bin says to --backend cuda; its exit status */
static int ask_relocated(const char *dir, char *out, size_t cap)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "cd '%s' && bin/pipebench %s", dir, programs[0].args);
    return run(cmd, out, cap);
}

START_TEST(test_relocated_install)
{
    const char *bin = getenv("PB_PIPEBENCH");
    ck_assert_msg(bin != NULL, "PB_PIPEBENCH is not set (run through meson test)");
    ck_assert_msg(PB_CUDA_MODULE_FROM_BIN[0], "this build's bindir or libdir is not relative");
    char dir[] = "/tmp/pb-cuda-install-XXXXXX", cmd[8192], out[1 << 14];
    ck_assert(mkdtemp(dir) != NULL);
    snprintf(cmd, sizeof cmd, "mkdir -p '%s/bin' && cp '%s' '%s/bin/' && mkdir -p \"$(dirname "
             "'%s/bin/%s')\" && cp '%s' '%s/bin/%s'", dir, bin, dir, dir,
             PB_CUDA_MODULE_FROM_BIN, PB_CUDA_MODULE_BUILD, dir, PB_CUDA_MODULE_FROM_BIN);
    ck_assert_msg(system(cmd) == 0, "%s failed", cmd);
    bool gpu = pb_test_gpu_sign();
    int rc = ask_relocated(dir, out, sizeof out);
    ck_assert_msg(!strstr(out, "could not be loaded"), "a relocated pipebench did not find "
                  "its module at bin/%s:\n%s", PB_CUDA_MODULE_FROM_BIN, out);
    if (gpu)
        ck_assert_msg(rc == 0, "a relocated pipebench failed on a GPU (exit %d):\n%s", rc, out);
    else
        ck_assert_msg(strstr(out, "no NVIDIA GPU") != NULL, "%s", out);
    /* without its tree's module it must not fall back on the build folder's */
    snprintf(cmd, sizeof cmd, "rm '%s/bin/%s'", dir, PB_CUDA_MODULE_FROM_BIN);
    ck_assert(system(cmd) == 0);
    rc = ask_relocated(dir, out, sizeof out);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert(system(cmd) == 0);
    ck_assert_msg(rc == 2 && strstr(out, "could not be loaded"), "a relocated pipebench "
                  "without its module (exit %d):\n%s", rc, out);
}
END_TEST

Suite *pb_test_suite(void)
{
    Suite *s = suite_create("cuda_module");
    TCase *tc = tcase_create("module");
    tcase_set_timeout(tc, 300);
    tcase_add_loop_test(tc, test_module_loads, 0, (int)(sizeof programs / sizeof programs[0]));
    tcase_add_test(tc, test_relocated_install);
    suite_add_tcase(s, tc);
    return s;
}
