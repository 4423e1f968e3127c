/* tests/test_golden.c — checkpoints of tiny runs, byte for byte: a refactoring of the
 * core must leave every saved weight bit unchanged. For each configuration the test
 * trains lenet (conv, BN, dropout, max-pool) on the synthetic data and compares the
 * FNV-1a hash of the saved safetensors file with the one recorded when the table was
 * written. The bits depend on the kernels oneDNN picks for the CPU, so a machine whose
 * oneDNN ISA differs from the recorded one skips (the hashes say nothing there). */
#include <check.h>
#include <inttypes.h>
#include <oneapi/dnnl/dnnl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/cli_util.h"

/* The ISA the hashes below were recorded with (oneDNN's dnnl_get_effective_cpu_isa). */
#define GOLDEN_ISA dnnl_cpu_isa_avx512_core_amx

struct golden {
    const char *flags;
    uint64_t fnv1a;
};

static const struct golden goldens[] = {
    {"--schedule pipedream --optimizer adam", 0xafd368643d657f10ull},
    {"--schedule pipeoptim --optimizer sgdm", 0x162bbbbdca2827ebull},
    {"--schedule pipeoptim --variant code --optimizer sgdm --weight-decay 1e-3", 0x6823afa3ecbc9d35ull},
    {"--schedule spectrain --optimizer sgdm", 0x4d88602be6855f48ull},
    {"--schedule xpipe --optimizer adam --microbatches 2", 0x81f397f11c29061aull},
    {"--schedule pipedream-2bw --optimizer adamw", 0x27db7b894b6f063cull},
    {"--schedule gpipe --optimizer sgd --weight-decay 1e-3", 0x374ccb27267e72dfull},
};

static uint64_t fnv1a_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "no checkpoint at %s", path);
    uint64_t h = 14695981039346656037ull;
    int c;
    while ((c = fgetc(f)) != EOF)
        h = (h ^ (uint64_t)(unsigned char)c) * 1099511628211ull;
    fclose(f);
    return h;
}

START_TEST(test_golden_checkpoint)
{
    const struct golden *g = &goldens[_i];
    if (dnnl_get_effective_cpu_isa() != GOLDEN_ISA) {
        printf("skipped: the hashes were recorded with oneDNN ISA %d, this CPU runs %d\n",
               (int)GOLDEN_ISA, (int)dnnl_get_effective_cpu_isa());
        return;
    }
    char dir[64], out[8192];
    cli_scratch(dir, sizeof dir, "golden");
    int rc = cli_run(dir, out, sizeof out,
                     "run --quiet --model lenet --dataset synthetic --stages 4 "
                     "--microbatch-size 8 --limit-train 256 --limit-val 64 --epochs 2 "
                     "--threads 1 --db g.db --save g.safetensors %s", g->flags);
    ck_assert_msg(rc == 0, "%s: exit %d: %s", g->flags, rc, out);
    char path[128];
    snprintf(path, sizeof path, "%s/g.safetensors", dir);
    uint64_t h = fnv1a_file(path);
    ck_assert_msg(h == g->fnv1a, "%s: checkpoint hash 0x%016" PRIx64 ", recorded 0x%016" PRIx64,
                  g->flags, h, g->fnv1a);
    cli_cleanup(dir);
}
END_TEST

Suite *pb_test_suite(void)
{
    Suite *s = suite_create("golden");
    TCase *tc = tcase_create("checkpoints");
    tcase_set_timeout(tc, 600);
    tcase_add_loop_test(tc, test_golden_checkpoint, 0, (int)(sizeof goldens / sizeof *goldens));
    suite_add_tcase(s, tc);
    return s;
}
