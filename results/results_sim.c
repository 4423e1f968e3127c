/* results/results_sim.c — a recorded run's simulated throughput and bubble
 * (results_sim.h): its own pipe simulated with the medians of its op events
 * (results_costs.c), and the SQL functions through which the reports read those same
 * numbers. */
#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "harness/optim/optim.h"
#include "harness/sim/sim_periodic.h"
#include "results/results_sim.h"
#include "schedules/registry.h"

double pb_sim_samples_per_s(int length, int microbatch_size, double makespan_s)
{
    return (double)length * microbatch_size / makespan_s;
}

int pb_run_sim_costs(const struct pb_run_costs *rc, int64_t id, struct pb_sim_cost *costs,
                     struct pb_err *e)
{
    if (rc->chunks > 1)
        return pb_err_set(e, "run %lld runs %d model chunks per device; the simulator runs "
                          "one (give --cost, or simulate a run without --chunks)", (long long)id,
                          rc->chunks);
    for (int k = 0; k < rc->stages; k++) {
        double m[PB_OP_NKINDS];
        memcpy(m, &rc->op_s[PB_OP_NKINDS * k], sizeof m);
        /* F and U always; B, or I and W, by the run's schedule (the others cost 0) */
        bool split = isnan(m[PB_OP_B]);
        int need[] = {PB_OP_F, PB_OP_U, split ? PB_OP_I : PB_OP_B, split ? PB_OP_W : PB_OP_B};
        for (int i = 0; i < 4; i++)
            if (isnan(m[need[i]]))
                return pb_err_set(e, "run %lld kept no %c events of stage %d; rerun it with "
                                  "--trace-epochs all (or give --cost or --op-costs)",
                                  (long long)id, pb_op_letter(need[i]), k);
        for (int kind = 0; kind < PB_OP_NKINDS; kind++)
            m[kind] = isnan(m[kind]) ? 0.0 : m[kind];
        costs[k] = (struct pb_sim_cost){m[PB_OP_F], m[PB_OP_B], m[PB_OP_U], rc->recv_s[k],
                                        m[PB_OP_I], m[PB_OP_W]};
    }
    return 0;
}

int pb_results_run_sim(struct pb_results *db, int64_t id, struct pb_run_sim *out,
                       struct pb_err *e)
{
    struct pb_run_costs rc;
    *out = (struct pb_run_sim){NAN, NAN, false};
    if (pb_results_run_costs(db, id, &rc, e))
        return -1;
    out->contended = rc.contended;
    struct pb_sim_cost *costs = pb_xcalloc((size_t)rc.stages, sizeof *costs);
    struct pb_pipe p = {.stages = rc.stages, .length = rc.length,
                        .microbatches = rc.microbatches,
                        .variant = rc.variant[0] ? rc.variant : NULL};
    struct pb_optim_cfg oc;
    const struct pb_schedule *sch = NULL;
    struct pb_sim_result res = {0};
    int status = -1;
    if (!pb_run_sim_costs(&rc, id, costs, e) && !pb_optim_cfg_from_name(&oc, rc.optimizer, e) &&
        (sch = pb_schedule_find(rc.schedule, e)) != NULL) {
        p.optimizer = oc.kind;
        if (!pb_simulate_pipe(sch, &p, NULL, costs, p.stages, false, &res, e)) {
            out->samples_per_s = pb_sim_samples_per_s(p.length, rc.microbatch_size,
                                                       res.makespan_s);
            double idle = 0;
            for (int k = 0; k < p.stages; k++)
                idle += res.bubble[k];
            out->bubble = idle / p.stages;
            status = 0;
        }
    }
    pb_sim_result_finish(&res);
    free(costs);
    pb_run_costs_finish(&rc);
    return status;
}

/* The last run the SQL functions simulated: a report asks for its throughput and its
 * contention in one row. */
struct sim_cache {
    struct pb_results *db;
    int64_t id;
    bool ok;
    struct pb_run_sim sim;
};

static const struct sim_cache *simulated(sqlite3_context *ctx, sqlite3_value *run_id)
{
    struct sim_cache *c = sqlite3_user_data(ctx);
    if (sqlite3_value_type(run_id) != SQLITE_INTEGER)
        return NULL;
    int64_t id = sqlite3_value_int64(run_id);
    if (c->id != id) {
        struct pb_err e;
        c->id = id;
        c->ok = !pb_results_run_sim(c->db, id, &c->sim, &e);
    }
    return c;
}

static void sql_throughput(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc;
    const struct sim_cache *c = simulated(ctx, argv[0]);
    if (c && c->ok)
        sqlite3_result_double(ctx, c->sim.samples_per_s);
    else
        sqlite3_result_null(ctx);
}

static void sql_bubble(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc;
    const struct sim_cache *c = simulated(ctx, argv[0]);
    if (c && c->ok)
        sqlite3_result_double(ctx, c->sim.bubble);
    else
        sqlite3_result_null(ctx);
}

/* Whether the run's op times were measured on shared cores: known once its costs were
 * read, even where it cannot be simulated as a whole (its epochs' own simulations). */
static void sql_contended(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc;
    const struct sim_cache *c = simulated(ctx, argv[0]);
    if (c)
        sqlite3_result_int(ctx, c->sim.contended);
    else
        sqlite3_result_null(ctx);
}

int pb_results_sim_functions(struct pb_results *db, struct pb_err *e)
{
    sqlite3 *h = pb_results_sqlite(db);
    struct sim_cache *c = pb_xcalloc(1, sizeof *c);
    *c = (struct sim_cache){.db = db, .id = -1};
    /* the connection frees the cache with the first function; the others only read it */
    int flags = SQLITE_UTF8 | SQLITE_DIRECTONLY;
    if (sqlite3_create_function_v2(h, "pb_sim_throughput", 1, flags, c, sql_throughput, NULL,
                                   NULL, free) != SQLITE_OK ||
        sqlite3_create_function_v2(h, "pb_sim_bubble", 1, flags, c, sql_bubble, NULL, NULL,
                                   NULL) != SQLITE_OK ||
        sqlite3_create_function_v2(h, "pb_sim_contended", 1, flags, c, sql_contended, NULL,
                                   NULL, NULL) != SQLITE_OK)
        return pb_err_set(e, "results database %s: registering the simulation functions: %s",
                          pb_results_path(db), sqlite3_errmsg(h));
    return 0;
}
