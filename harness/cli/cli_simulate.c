/* harness/cli/cli_simulate.c — `pipebench simulate`: a schedule's epoch on D virtual
 * devices (harness/sim/sim.h) with op costs given, read from a file or taken from a
 * recorded run (whose simulated throughput results/results_sim.h defines); prints
 * makespan, throughput, per-device bubble and what each device holds, and with --record
 * stores the simulation as a run (executor 'sim') so trace and plot read it. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/base/args.h"
#include "harness/cli/cli.h"
#include "harness/sim/sim_cost_file.h"
#include "harness/sim/sim_periodic.h"
#include "results/results_sim.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: pipebench simulate --schedule S --stages D [--length N] [--microbatches M]\n"
            "                          [--chunks v] [--variant V] [--optimizer O]\n"
            "                          [--microbatch-size b]\n"
            "                          (--cost F,B,U[,SEND[,I,W]] | --op-costs FILE |\n"
            "                           --run RUN [--op-costs FILE] [--db FILE])\n"
            "                          [--record [--db FILE]]\n\n"
            "Runs the schedule's programs on D virtual devices, one per stage: each op takes\n"
            "its stage's cost, messages travel through the executors' FIFO channels\n"
            "(capacity D) and arrive SEND seconds after they are sent (from a run: the\n"
            "receiving stage's copy time per message). A pipe of more than %lld ops is\n"
            "simulated op by op at a shorter N' and its verified steady state extrapolated\n"
            "to N (it says so); --record needs every op, so at most %lld. With chunks\n"
            "(--chunks v, or a schedule that fixes them) the p = D / v devices run their\n"
            "programs, an op at its stage's cost, and the table has one row per device.\n\n"
            "  --cost F,B,U[,SEND[,I,W]]  seconds of one forward, backward and update on\n"
            "                       every stage, of a message's transfer (default 0), and\n"
            "                       of the split backward's I and W (default 0)\n"
            "  --op-costs FILE      per stage and op, seconds from a CSV file: a header line\n"
            "                       stage,op,seconds, then rows such as 0,F,0.002 (op: F, B,\n"
            "                       U, I, W or recv; every op a stage's program runs needs its\n"
            "                       row, recv defaults to 0; '#' starts a comment); with --run,\n"
            "                       the run's pipe simulated with the file's costs\n"
            "  --run RUN            per stage, the median F, B, U, I and W times of the run's\n"
            "                       events\n"
            "                       (its traced epochs) and its copy time per message; the\n"
            "                       pipe defaults to the run's, D must be the run's; then\n"
            "                       also each stage's peak bytes of parameters, weight\n"
            "                       copies and activations, from the run's sizes\n"
            "  --microbatch-size b  samples per micro-batch for samples/s (default: the run's, or 1)\n"
            "  --record             store the simulation in --db as a run with executor 'sim'\n"
            "                       (one epoch, every op an event): trace and plot timeline read it\n"
            "  --db FILE            results database (default %s)\n"
            "  the pipe options are those of `pipebench program --help`\n",
            PB_SIM_FULL_OPS, PB_MAX_PROGRAM_OPS, PB_RESULTS_DEFAULT_DB);
}

struct sim_args {
    const char *sched, *optimizer, *db, *cost, *run, *op_costs;
    struct pb_pipe pipe;
    bool have_stages, have_length, have_m, record;
    bool file_contended;  /* --op-costs FILE marks its costs measured on shared cores */
    int microbatch_size;
    const struct pb_sim_cost *costs;  /* [D] what was simulated */
};

/* simulate's options, for getopt_long and for pb_cli_once's abbreviations */
static const struct option simulate_options[] = {
    {"schedule", required_argument, NULL, 's'},
    {"stages", required_argument, NULL, 'd'},
    {"length", required_argument, NULL, 'n'},
    {"microbatches", required_argument, NULL, 'm'},
    {"variant", required_argument, NULL, 'v'},
    {"chunks", required_argument, NULL, 'C'},
    {"optimizer", required_argument, NULL, 'o'},
    {"microbatch-size", required_argument, NULL, 'b'},
    {"cost", required_argument, NULL, 'c'},
    {"run", required_argument, NULL, 'r'},
    {"op-costs", required_argument, NULL, 'O'},
    {"db", required_argument, NULL, 'D'},
    {"record", no_argument, NULL, 'R'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static int parse(int argc, char **argv, struct sim_args *a, struct pb_err *e)
{
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", simulate_options, NULL)) != -1) {
        int rc = 0;
        switch (c) {
        case 's': a->sched = optarg; break;
        case 'd': rc = pb_arg_int("--stages", optarg, &a->pipe.stages, e); a->have_stages = true; break;
        case 'n': rc = pb_arg_int("--length", optarg, &a->pipe.length, e); a->have_length = true; break;
        case 'm': rc = pb_arg_int("--microbatches", optarg, &a->pipe.microbatches, e); a->have_m = true; break;
        case 'v': a->pipe.variant = optarg; break;
        case 'C':
            rc = pb_arg_int("--chunks", optarg, &a->pipe.chunks, e);
            if (!rc && a->pipe.chunks < 1)
                rc = pb_err_set(e, "simulate: --chunks must be at least 1 (got %d): the model "
                                "chunks each device holds", a->pipe.chunks);
            break;
        case 'o': a->optimizer = optarg; break;
        case 'b': rc = pb_arg_int("--microbatch-size", optarg, &a->microbatch_size, e); break;
        case 'c': a->cost = optarg; break;
        case 'r': a->run = optarg; break;
        case 'O': a->op_costs = optarg; break;
        case 'D': a->db = optarg; break;
        case 'R': a->record = true; break;
        case 'h': usage(stdout); return 1;
        default:
            return pb_err_set(e, "simulate: unknown option or missing value '%s' (see "
                              "pipebench simulate --help)", argv[optind - 1]);
        }
        if (rc)
            return -1;
    }
    if (optind < argc)
        return pb_err_set(e, "simulate: unexpected argument '%s' (see pipebench simulate "
                          "--help)", argv[optind]);
    if (!a->cost == !(a->run || a->op_costs) || (a->cost && a->op_costs))
        return pb_err_set(e, "simulate: give the op costs one way: --cost F,B,U[,SEND[,I,W]], "
                          "a file with --op-costs FILE, or a recorded run with --run RUN "
                          "(with --op-costs FILE as well: the run's pipe, the file's costs)");
    if (a->microbatch_size < 0)
        return pb_err_set(e, "simulate: --microbatch-size must be positive (got %d)",
                          a->microbatch_size);
    if (a->have_stages && a->pipe.stages == 0)   /* given, so not "required" */
        return pb_err_set(e, "simulate: --stages must be between 1 and %d (got 0)",
                          PB_MAX_STAGES);
    return 0;
}

/* The costs of every stage from --cost. */
static int costs_given(const char *spec, int D, struct pb_sim_cost *costs, struct pb_err *e)
{
    float v[6] = {0};
    int n = 1;
    for (const char *p = spec; *p; p++)
        n += *p == ',';
    int rc = n == 3 || n == 4 || n == 6 ? pb_arg_floats("--cost", spec, v, n, e) : -1;
    if (rc == PB_ARG_RANGE)   /* well formed, too large: say so */
        return pb_err_prefix(e, "simulate: ");
    if (rc)
        return pb_err_set(e, "simulate: --cost wants F,B,U, F,B,U,SEND or F,B,U,SEND,I,W in "
                          "seconds (I and W: the split backward's passes), e.g. --cost 1,2,0.1 "
                          "(got '%s')", spec);
    for (int k = 0; k < D; k++)
        costs[k] = (struct pb_sim_cost){v[0], v[1], v[2], v[3], v[4], v[5]};
    return 0;
}

/* The pipe and costs of a recorded run; options given on the command line win. */
static int costs_from_run(struct sim_args *a, struct pb_run_costs *rc, struct pb_sim_cost **costs,
                          struct pb_err *e)
{
    char *end;
    long long id = strtoll(a->run, &end, 10);
    if (*end || id <= 0)
        return pb_err_set(e, "simulate: --run wants a run id (a positive integer; `pipebench "
                          "runs` lists them), got '%s'", a->run);
    struct pb_results *db;
    if (pb_results_open_existing(&db, a->db, e))
        return -1;
    int r = pb_results_run_costs(db, id, rc, e);
    pb_results_close(db);
    if (r)
        return -1;
    if (!a->sched)
        a->sched = rc->schedule;
    if (!a->pipe.variant && rc->variant[0])
        a->pipe.variant = rc->variant;
    if (!a->optimizer)
        a->optimizer = rc->optimizer;
    if (!a->have_stages)
        a->pipe.stages = rc->stages;
    if (!a->have_length)
        a->pipe.length = rc->length;
    if (!a->have_m) {
        a->pipe.microbatches = rc->microbatches;
        a->have_m = true;
    }
    if (!a->microbatch_size)
        a->microbatch_size = rc->microbatch_size;
    if (a->pipe.stages != rc->stages)
        return pb_err_set(e, "simulate: run %lld has %d stages, so its costs fit --stages %d "
                          "only (got %d)", id, rc->stages, rc->stages, a->pipe.stages);
    if (a->op_costs)   /* the run's pipe, the file's costs */
        return 0;
    *costs = pb_xcalloc((size_t)rc->stages, sizeof **costs);
    return pb_run_sim_costs(rc, id, *costs, e) ? pb_err_prefix(e, "simulate: ") : 0;
}

/* The op kinds each stage's program of the simulated pipe runs, into kinds[stages] (a bit
 * per kind; taken from the programs of a pipe of at most D·M micro-batches where the
 * pipe is too long to build whole: the kinds do not change with N). */
static int pipe_kinds(const struct sim_args *a, const struct pb_schedule *sch, unsigned *kinds,
                      struct pb_err *e)
{
    struct pb_pipe p = a->pipe;
    if ((long long)p.stages * p.length > PB_MAX_PROGRAM_OPS / 3)
        p.length = p.stages * p.microbatches;
    struct pb_program *progs = pb_xcalloc((size_t)p.stages, sizeof *progs);
    int rc = pb_programs_build(sch, &p, progs, e);
    for (int k = 0; k < p.stages && !rc; k++)
        kinds[k] = pb_program_kinds(&progs[k]);
    pb_programs_finish(progs, p.stages);
    free(progs);
    return rc;
}

/* The costs of --op-costs FILE for the op kinds each stage's program runs (kinds). */
static int costs_from_file(struct sim_args *a, const unsigned *kinds, struct pb_sim_cost *costs,
                           struct pb_err *e)
{
    return pb_sim_cost_file_read(a->op_costs, a->pipe.stages, kinds, costs, &a->file_contended,
                                 e)
               ? pb_err_prefix(e, "simulate: ")
               : 0;
}

/* With --run and its costs: every op kind the simulated schedule runs must be among the
 * run's events (a run of the fused backward has no I and W to simulate a split one
 * with, and the reverse). */
static int run_has_kinds(const struct sim_args *a, const unsigned *kinds,
                         const struct pb_run_costs *rc, struct pb_err *e)
{
    int status = 0;
    for (int k = 0; k < a->pipe.stages && !status; k++)
        for (int kind = 0; kind < PB_OP_NKINDS && !status; kind++)
            if ((kinds[k] >> kind & 1) && isnan(rc->op_s[PB_OP_NKINDS * k + kind]))
                status = pb_err_set(e, "simulate: %s runs %c on stage %d, and run %s (%s) "
                                    "recorded no %c events there; give --op-costs FILE "
                                    "(`pipebench partition --op-costs-out FILE` measures F, B, "
                                    "U, I and W alone) or --cost", a->sched,
                                    pb_op_letter(kind), k, a->run, rc->schedule,
                                    pb_op_letter(kind));
    return status;
}

/* With chunks: one row per device, its stages (pb_pipe_stage_of) and what it did. */
static void print_devices(const struct pb_pipe *p, const struct pb_sim_result *r)
{
    printf("device  stages          busy (s)    bubble  acts held  stashed\n");
    for (int d = 0; d < pb_pipe_devices(p); d++) {
        char st[64] = "";
        for (int c = 0; c < pb_pipe_chunks(p); c++) {
            size_t n = strlen(st);
            snprintf(st + n, sizeof st - n, "%s%d", c ? "," : "", pb_pipe_stage_of(p, d, c));
        }
        printf("%-7d %-15s %-11.4g %5.1f%%  %-10d %d\n", d, st, r->busy_s[d],
               100 * r->bubble[d], r->acts_peak[d], r->stash_peak[d]);
    }
    printf("(acts held: most chunk activations a device keeps between F and B, or W; "
           "stashed: most weight copies kept for later ops)\n");
}

static void print_result(const struct sim_args *a, const struct pb_sim_cost *costs,
                         const struct pb_sim_result *r, bool contended)
{
    const struct pb_pipe *p = &a->pipe;
    int b = a->microbatch_size ? a->microbatch_size : 1;
    printf("simulated %s%s%s, D = %d, %d micro-batches", a->sched, p->variant ? "/" : "",
           p->variant ? p->variant : "", p->stages, p->length);
    printf(", M = %d", p->microbatches);
    printf(" (costs: %s%s)\n", a->op_costs ? "from " : a->run ? "the run's medians" : "as given",
           a->op_costs ? a->op_costs : "");
    if (contended && a->op_costs)
        printf("\xe2\x80\xa0 %s says its op times were measured while the stages shared "
               "cores: not each stage's alone\n", a->op_costs);
    else if (contended)
        printf("\xe2\x80\xa0 run %s's op times were measured while its stages shared cores "
               "(more stage threads than cores, or a load above them): not each stage's "
               "alone\n", a->run);
    printf("makespan %.6g s; throughput %.6g micro-batches/s = %.6g samples/s (b = %d); "
           "%ld ops\n", r->makespan_s, p->length / r->makespan_s,
           pb_sim_samples_per_s(p->length, b, r->makespan_s), b, r->ops);
    double idle = 0;
    int np = pb_pipe_devices(p);
    for (int d = 0; d < np; d++)
        idle += r->bubble[d];
    printf("bubble %.6g%% (the devices' mean idle time over the makespan)\n", 100 * idle / np);
    if (r->extrapolated)
        printf("extrapolated: simulated op by op from N' = %d micro-batches, then %lld "
               "periods of %d micro-batch%s, verified period T = %.9g s (design §6.6)\n",
               r->from_length, (long long)(p->length - r->from_length) / r->period_mbs,
               r->period_mbs, r->period_mbs == 1 ? "" : "es", r->period_s);
    if (pb_pipe_chunks(p) > 1) {
        print_devices(p, r);
        return;
    }
    bool split = false;  /* the split backward's costs given: their columns too */
    for (int k = 0; k < p->stages; k++)
        split |= costs[k].i > 0 || costs[k].w > 0;
    printf("stage   F (s)       B (s)       U (s)       %srecv (s)    busy (s)    bubble  "
           "acts held  stashed\n", split ? "I (s)       W (s)       " : "");
    for (int k = 0; k < p->stages; k++) {
        printf("%-7d %-11.4g %-11.4g %-11.4g ", k, costs[k].f, costs[k].b, costs[k].u);
        if (split)
            printf("%-11.4g %-11.4g ", costs[k].i, costs[k].w);
        printf("%-11.4g %-11.4g %5.1f%%  %-10d %d\n", costs[k].recv, r->busy_s[k],
               100 * r->bubble[k], r->acts_peak[k], r->stash_peak[k]);
    }
    printf("(acts held: most micro-batches a device keeps between F and B, or W; stashed: "
           "most weight copies kept for later ops: stashes for their B, vertical sync's "
           "versions)\n");
}

/* With --run: peak bytes per stage by kind, from the run's sizes: its parameters, and its
 * activations per micro-batch (its peak over the micro-batches its own schedule held). */
static int print_memory(const struct sim_args *a, const unsigned *kinds,
                        const struct pb_run_costs *rc, const struct pb_sim_result *r,
                        struct pb_err *e)
{
    bool split = false;   /* the simulated schedule splits the backward */
    for (int k = 0; k < a->pipe.stages; k++)
        split |= kinds[k] >> PB_OP_I & 1;
    const struct pb_schedule *own;
    struct pb_pipe p = {.stages = rc->stages, .length = rc->length,
                        .microbatches = rc->microbatches, .variant = rc->variant[0] ? rc->variant
                                                                                    : NULL};
    if (pb_cli_pipe("simulate", rc->schedule, rc->optimizer, true, &p, &own, e))
        return -1;
    struct pb_program *progs = pb_xcalloc((size_t)p.stages, sizeof *progs);
    int status = pb_programs_build(own, &p, progs, e);
    if (!status) {
        printf("peak memory per stage, bytes (from run %s's sizes: parameters, and activations "
               "per micro-batch = its peak / the micro-batches %s held):\n", a->run,
               rc->schedule);
        if (split)
            printf("(a micro-batch between its I and W counts whole, though I frees all but "
                   "what W reads: the acts column is an upper bound)\n");
        printf("stage   params        wcopies       acts\n");
        for (int k = 0; k < a->pipe.stages; k++) {
            int held = pb_sim_acts_peak(&progs[k]);
            int64_t per_mb = held ? rc->acts_bytes[k] / held : 0;
            printf("%-7d %-13lld %-13lld %lld\n", k, (long long)rc->params_bytes[k],
                   (long long)r->wcopies_peak[k] * rc->params_bytes[k],
                   (long long)r->acts_peak[k] * per_mb);
        }
    }
    pb_programs_finish(progs, p.stages);
    free(progs);
    return status;
}

/* --record: the simulation as a finished run of one epoch, every op an event, into db
 * (opened before the simulation, so a database that cannot take it fails first). */
static int record(const struct sim_args *a, const struct pb_sim_result *r,
                  struct pb_results *db, int64_t *id, struct pb_err *e)
{
    const struct pb_pipe *p = &a->pipe;
    int b = a->microbatch_size ? a->microbatch_size : 1;
    char config[512];
    snprintf(config, sizeof config, "{\"simulated\": true, \"costs\": \"%s\", "
             "\"length\": %d, \"microbatch_size\": %d}",
             a->op_costs ? "file" : a->run ? "run" : a->cost, p->length, b);
    if (a->run)
        snprintf(config + strlen(config) - 1, sizeof config - strlen(config) + 1,
                 ", \"from_run\": %s}", a->run);
    struct pb_run_info info = {.config_json = config, .schedule = a->sched,
                               .variant = p->variant, .optimizer = a->optimizer,
                               .executor = "sim", .stages = p->stages, .microbatch_size = b,
                               .microbatches = p->microbatches, .epochs = 1, .lr = NAN};
    struct pb_stage_record *st = pb_xcalloc((size_t)p->stages, sizeof *st);
    for (int k = 0; k < p->stages; k++) {
        st[k] = (struct pb_stage_record){.busy_s = r->busy_s[k],
                                         .wait_s = r->makespan_s - r->busy_s[k],
                                         .bubble_frac = r->bubble[k], .versions_kept = -1,
                                         .f_mean = NAN, .f_max = NAN, .b_mean = NAN,
                                         .b_max = NAN, .sim_bubble = r->bubble[k],
                                         .op_s = {a->costs[k].f, a->costs[k].b, a->costs[k].u,
                                                  a->costs[k].i, a->costs[k].w}};
        for (int m = 0; m < PB_MEM_NKINDS; m++)
            st[k].mem_peak[m] = -1;
    }
    double thr = pb_sim_samples_per_s(p->length, b, r->makespan_s);
    struct pb_epoch_record ep = {.epoch = 0, .train_loss = NAN, .val_loss = NAN, .val_acc = NAN,
                                 .samples = (int64_t)p->length * b, .wall_s = r->makespan_s,
                                 .throughput = thr, .lr = NAN,
                                 .nstages = p->stages, .stages = st, .ops = r->ops,
                                 .nevents = (int)r->ops, .events = r->events,
                                 .sim_wall_s = r->makespan_s,
                                 .sim_throughput = thr};
    int rc = -1;
    *id = pb_results_run_begin(db, &info, e);
    if (*id > 0 && !pb_results_run_started(db, *id, e) && !pb_results_epoch(db, *id, &ep, e) &&
        !pb_results_run_end(db, *id, PB_RUN_DONE, NULL, e))
        rc = 0;
    else if (*id > 0)
        pb_results_run_end(db, *id, PB_RUN_FAILED, e->msg, e);
    free(st);
    return rc;
}

int pb_cmd_simulate(int argc, char **argv)
{
    struct sim_args a = {.optimizer = NULL, .db = PB_RESULTS_DEFAULT_DB,
                         .pipe = {.length = 8}};
    struct pb_err e;
    if (pb_cli_once("simulate", argc, argv, simulate_options, NULL))
        return PB_EXIT_USAGE;
    int rc = parse(argc, argv, &a, &e);
    if (rc)
        return rc > 0 ? PB_EXIT_OK : pb_cli_fail(e.msg);
    struct pb_run_costs rcosts = {0};
    struct pb_sim_cost *costs = NULL;
    unsigned *kinds = NULL;
    struct pb_sim_result res = {0};
    const struct pb_schedule *sch;
    struct pb_results *db = NULL;
    int status = PB_EXIT_USAGE;
    if (a.run && costs_from_run(&a, &rcosts, &costs, &e))
        goto out;
    if (!a.optimizer)
        a.optimizer = "sgdm";
    if (pb_cli_pipe("simulate", a.sched, a.optimizer, a.have_m, &a.pipe, &sch, &e))
        goto out;
    /* the op kinds of the simulated programs, which the costs of a run or a file must have */
    if (a.run || a.op_costs) {
        kinds = pb_xcalloc((size_t)a.pipe.stages, sizeof *kinds);
        if (pipe_kinds(&a, sch, kinds, &e)) {
            pb_err_prefix(&e, "simulate: ");
            goto out;
        }
    }
    if (costs && run_has_kinds(&a, kinds, &rcosts, &e))
        goto out;
    if (!costs) {
        costs = pb_xcalloc((size_t)a.pipe.stages, sizeof *costs);
        if (a.op_costs ? costs_from_file(&a, kinds, costs, &e)
                       : costs_given(a.cost, a.pipe.stages, costs, &e))
            goto out;
    }
    if (a.record && pb_pipe_chunks(&a.pipe) > 1) {
        pb_err_set(&e, "simulate: --record keeps one record per stage, and a simulation with "
                       "%d chunks per device measures devices; leave --record out",
                   pb_pipe_chunks(&a.pipe));
        goto out;
    }
    if (a.record && pb_results_check_writable(a.db, &e))   /* before simulating */
        goto out;
    if (pb_simulate_pipe(sch, &a.pipe, NULL, costs, a.pipe.stages, a.record, &res, &e))
        goto out;
    if (a.record && pb_results_open(&db, a.db, &e))
        goto out;
    print_result(&a, costs, &res,
                 a.op_costs ? a.file_contended : a.run && rcosts.contended);
    if (a.run && print_memory(&a, kinds, &rcosts, &res, &e))
        goto out;
    a.costs = costs;
    if (a.record) {
        int64_t id;
        if (record(&a, &res, db, &id, &e)) {
            status = PB_EXIT_RUN;
            goto out;
        }
        printf("recorded as run %lld in %s (pipebench trace %lld --out t.json; pipebench plot "
               "timeline --run %lld)\n", (long long)id, a.db, (long long)id, (long long)id);
    }
    status = PB_EXIT_OK;
out:
    if (status != PB_EXIT_OK)
        fprintf(stderr, "pipebench: %s\n", e.msg);
    free(costs);
    free(kinds);
    pb_results_close(db);
    pb_sim_result_finish(&res);
    pb_run_costs_finish(&rcosts);
    return status;
}
