/* tests/driver/test_golden.c — checkpoints of tiny runs, byte for byte: a refactoring of the
 * core must leave every saved weight bit unchanged. For each configuration the test
 * trains lenet (conv, BN, dropout, max-pool) on the synthetic data and compares the
 * FNV-1a hash of the saved safetensors file, and of the epochs' training loss,
 * validation loss and accuracy as the database holds them (to 9 digits), with the ones
 * recorded when the table was written. The bits depend on the kernels oneDNN picks for the CPU, so a machine whose
 * oneDNN ISA differs from the recorded one skips (the hashes say nothing there). */
#include <check.h>
#include <inttypes.h>
#include <oneapi/dnnl/dnnl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/cli_util.h"

/* The ISA the hashes below were recorded with (oneDNN's dnnl_get_effective_cpu_isa). */
#define GOLDEN_ISA dnnl_cpu_isa_avx512_core_amx

struct golden {
    const char *flags;
    uint64_t fnv1a;      /* of the checkpoint */
    uint64_t metrics;    /* of the epochs' losses and accuracy */
};

static const struct golden goldens[] = {
    {"--schedule pipedream --optimizer adam",
     0xafd368643d657f10ull, 0xeeb714cc6b1d9a68ull},
    {"--schedule pipeoptim --optimizer sgdm",
     0x162bbbbdca2827ebull, 0x6c670faab024a8aeull},
    {"--schedule pipeoptim --variant code --optimizer sgdm --weight-decay 1e-3",
     0x6823afa3ecbc9d35ull, 0x983ac1721527aaa4ull},
    {"--schedule spectrain --optimizer sgdm",
     0x4d88602be6855f48ull, 0x834cc3b6c035be2aull},
    {"--schedule xpipe --optimizer adam --microbatches 2",
     0x81f397f11c29061aull, 0xc960a2c2a2f61d78ull},
    {"--schedule pipedream-2bw --optimizer adamw",
     0x27db7b894b6f063cull, 0xd5a49317cec16b69ull},
    {"--schedule gpipe --optimizer sgd --weight-decay 1e-3",
     0x374ccb27267e72dfull, 0x6040493593b6c62dull},
};

static uint64_t fnv1a(uint64_t h, const char *s)
{
    for (; *s; s++)
        h = (h ^ (uint64_t)(unsigned char)*s) * 1099511628211ull;
    return h;
}

/* The epochs' "train_loss val_loss val_acc" lines of the database's only run, hashed. */
static uint64_t fnv1a_metrics(const char *dir)
{
    char path[128];
    snprintf(path, sizeof path, "%s/g.db", dir);
    sqlite3 *db;
    sqlite3_stmt *st;
    ck_assert(sqlite3_open(path, &db) == SQLITE_OK);
    ck_assert(sqlite3_prepare_v2(db, "SELECT printf('%.9g %.9g %.9g', train_loss, val_loss, "
                                     "val_acc) FROM epochs ORDER BY epoch", -1, &st, NULL) ==
              SQLITE_OK);
    uint64_t h = 14695981039346656037ull;
    int rows = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        h = fnv1a(h, (const char *)sqlite3_column_text(st, 0));
        h = fnv1a(h, "\n");
        rows++;
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    ck_assert_int_eq(rows, 2);
    return h;
}

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
    uint64_t m = fnv1a_metrics(dir);
    ck_assert_msg(m == g->metrics, "%s: metrics hash 0x%016" PRIx64 ", recorded 0x%016" PRIx64,
                  g->flags, m, g->metrics);
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
