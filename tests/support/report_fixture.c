/* tests/support/report_fixture.c — the made-up results database of report_fixture.h. Accuracies
 * per epoch, throughputs, memory (MiB multiples) and staleness are set per run so each
 * table cell has a value checkable by hand; wall_s is 10 s per epoch. */
#include "tests/support/report_fixture.h"

#include <stdbool.h>
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "results/results.h"

#define MIB (1024 * 1024)

struct fx_run {
    const char *optimizer, *schedule, *variant;
    int stages;
    uint64_t seed;
    enum pb_run_status status;
    double acc[2], thr[2];   /* per epoch */
};

static const struct fx_run runs[FX_NRUNS] = {
    {"sgdm", "gpipe", NULL, 4, 1, PB_RUN_DONE, {0.50, 0.60}, {1000, 1200}},
    {"sgdm", "gpipe", "", 4, 2, PB_RUN_DONE, {0.55, 0.64}, {900, 1100}},
    {"sgdm", "pipedream", NULL, 4, 1, PB_RUN_DONE, {0.59, 0.66}, {1500, 1500}},
    {"sgdm", "pipeoptim", "code", 4, 1, PB_RUN_DONE, {0.61, 0.65}, {1300, 1300}},
    {"sgdm", "pipeoptim", NULL, 4, 1, PB_RUN_FAILED, {0.90, 0.90}, {9000, 9000}},
    {"adam", "gpipe", NULL, 2, 1, PB_RUN_DONE, {0.70, 0.70}, {800, 800}},
    {"adam", "pipeoptim", NULL, 2, 1, PB_RUN_DONE, {0.65, 0.70}, {700, 900}},
};

/* Stage k's record: 1 MiB params and grads, 2 MiB optimizer state, 1 MiB weight copies
 * for pipedream, activations 0.5 MiB in epoch 0 and 1 MiB in epoch 1, 0.25 MiB comm and
 * scratch; lag D−1−k for pipedream; pipeoptim (code) predicts on all but the last stage
 * with error 1e-3 (max 2e-3) over 10 predictions. */
static struct pb_stage_record stage_record(const struct fx_run *r, int k, int epoch)
{
    bool pd = !strcmp(r->schedule, "pipedream");
    bool po = !strcmp(r->schedule, "pipeoptim");
    struct pb_stage_record g = {
        .busy_s = 5, .wait_s = 5, .comm_s = 0, .bubble_frac = 0.25 * (k + 1) / r->stages,
        .mem_peak = {MIB, MIB, 2 * MIB, pd ? MIB : 0, epoch ? MIB : MIB / 2, MIB / 4, MIB / 4},
        .versions_kept = pd ? r->stages - k : 1,
        .f_mean = pd ? r->stages - 1 - k : 0, .f_max = pd ? r->stages - 1 - k : 0,
        .b_mean = pd ? r->stages - 1 - k : 0, .b_max = pd ? r->stages - 1 - k : 0,
    };
    if (po && k < r->stages - 1) {
        g.pred_err_mean = 1e-3;
        g.pred_err_max = 2e-3;
        g.pred_count = 10;
    }
    return g;
}

/* Fill-and-drain events on every device k: F(j) at 10j + 2k ms (1 ms long), then B(j)
 * at 50 + 10j − 2k ms (2 ms), each followed by a U (0.5 ms). */
static int events(int nstages, struct pb_event_record *ev)
{
    int n = 0;
    for (int k = 0; k < nstages; k++) {
        int seq = 0;
        for (int j = 0; j < FX_MICROBATCHES; j++) {
            double f = 0.010 * j + 0.002 * k;
            ev[n++] = (struct pb_event_record){k, seq++, 'F', j, 0, 1, f, f + 0.001, j, 0};
        }
        for (int j = 0; j < FX_MICROBATCHES; j++) {
            double b = 0.050 + 0.010 * j - 0.002 * k;
            ev[n++] = (struct pb_event_record){k, seq++, 'B', j, j, 0, b, b + 0.002, j, 0};
            ev[n++] = (struct pb_event_record){k, seq++, 'U', -1, j + 1, 0, b + 0.002,
                                               b + 0.0025, j + 1, 0};
        }
    }
    return n;
}

const char *fx_build_db(const char *dir)
{
    static char path[512];
    snprintf(path, sizeof path, "%s/results.db", dir);
    struct pb_results *db;
    struct pb_err e;
    ck_assert_msg(pb_results_open(&db, path, &e) == 0, "%s", e.msg);
    for (int i = 0; i < FX_NRUNS; i++) {
        const struct fx_run *r = &runs[i];
        struct pb_run_info info = {
            .model = "mlp", .dataset = "fashion-mnist", .schedule = r->schedule,
            .variant = r->variant, .optimizer = r->optimizer, .executor = "seq",
            .stages = r->stages, .microbatch_size = 64, .microbatches = r->stages,
            .epochs = 2, .seed = r->seed, .lr = 0.01,
        };
        int64_t id = pb_results_run_begin(db, &info, &e);
        ck_assert_msg(id == i + 1, "run %d: %s", i + 1, id < 0 ? e.msg : "unexpected id");
        for (int ep = 0; ep < 2; ep++) {
            struct pb_stage_record st[FX_STAGES];
            struct pb_event_record ev[FX_STAGES * FX_NEVENTS];
            for (int k = 0; k < r->stages; k++)
                st[k] = stage_record(r, k, ep);
            bool with_events = id == FX_PIPEDREAM;
            struct pb_epoch_record rec = {
                .epoch = ep, .train_loss = 1.0 - 0.1 * ep, .val_loss = 1.0 - 0.1 * ep,
                .val_acc = r->acc[ep], .samples = 10 * (int64_t)r->thr[ep], .wall_s = 10,
                .throughput = r->thr[ep], .lr = 0.01, .nstages = r->stages, .stages = st,
                .nevents = with_events ? events(r->stages, ev) : 0,
                .events = with_events ? ev : NULL,
            };
            ck_assert_msg(pb_results_epoch(db, id, &rec, &e) == 0, "%s", e.msg);
        }
        ck_assert_msg(pb_results_run_end(db, id, r->status, NULL, &e) == 0, "%s", e.msg);
    }
    pb_results_close(db);
    return path;
}

const char *fx_build_empty_db(const char *dir)
{
    static char path[512];
    snprintf(path, sizeof path, "%s/empty.db", dir);
    struct pb_results *db;
    struct pb_err e;
    ck_assert_msg(pb_results_open(&db, path, &e) == 0, "%s", e.msg);
    pb_results_close(db);
    return path;
}

const char *fx_mkdtemp(const char *tag)
{
    static char dir[256];
    snprintf(dir, sizeof dir, "/tmp/pb_test_%s_XXXXXX", tag);
    ck_assert(mkdtemp(dir) != NULL);
    return dir;
}

void fx_rmdir(const char *dir)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert(system(cmd) == 0);
}

char *fx_read(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 4096, n = 0, got;
    char *buf = malloc(cap);
    while ((got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
        n += got;
        if (n + 1 == cap)
            buf = realloc(buf, cap *= 2);
    }
    fclose(f);
    buf[n] = '\0';
    if (len)
        *len = n;
    return buf;
}

int fx_cli(const char *env, const char *args, char *out, size_t out_cap, char *err,
           size_t err_cap)
{
    const char *bin = getenv("PB_PIPEBENCH");
    ck_assert_msg(bin != NULL, "PB_PIPEBENCH is not set (tests/meson.build sets it)");
    char errfile[] = "/tmp/pb_test_cli_err_XXXXXX";
    int fd = mkstemp(errfile);
    ck_assert(fd >= 0);
    close(fd);
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s '%s' %s 2>'%s'", env ? env : "", bin, args, errfile);
    FILE *f = popen(cmd, "r");
    ck_assert_ptr_nonnull(f);
    char sink[4096];
    size_t n = 0, got;
    char *dst = out ? out : sink;
    size_t cap = out ? out_cap : sizeof sink;
    while ((got = fread(dst + n, 1, cap - 1 - n, f)) > 0)
        n = out ? n + got : 0;
    dst[n] = '\0';
    int st = pclose(f);
    char *e = fx_read(errfile, NULL);
    if (err)
        snprintf(err, err_cap, "%s", e ? e : "");
    free(e);
    unlink(errfile);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}
