/* harness/driver/run_resume.c — a run's resume state (run_resume.h, semantics §1.10):
 * at an epoch boundary everything the next epochs depend on is the stages' weights and
 * BatchNorm statistics, their optimizers' state and step counts, and the updates each
 * worker has applied; the data order, augmentation, dropout and learning rate are pure
 * functions of (seed, epoch). That state goes into one safetensors file beside the
 * database, written atomically, and comes back into a resumed run's stages; a run
 * without one is trained again from its first epoch. The file carries the checksum of
 * its data (safetensors.h) and what it belongs to: the run id and a hash of the run's
 * configuration, so a damaged state, or another database's run of the same id, is
 * refused with what to do. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/base/atomic_file.h"
#include "harness/driver/run_resume.h"
#include "harness/driver/run_json.h"
#include "harness/store/checkpoint.h"
#include "workloads/datasets/image_cache.h"

/* The hash of the plan's configuration, as the run records it (v8: as a run recorded it
 * before results schema 9, its seed a string). */
static unsigned long long config_hash(const struct pb_plan *p, bool v8)
{
    char *json = v8 ? pb_plan_cfg_json_v8(p) : pb_plan_cfg_json(p);
    unsigned long long h = pb_fnv1a(PB_FNV_OFFSET, json, strlen(json));
    free(json);
    return h;
}

void pb_run_state_path(const char *db, int64_t run_id, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s.run%lld.state", db, (long long)run_id);
}

/* "a,b,c" of the local workers' updates (u) or optimizer steps (t). */
static void join_counts(const struct pb_local_stages *ls, int d, bool steps, char *buf,
                        size_t cap)
{
    size_t len = 0;
    buf[0] = 0;
    for (int k = 0; k < d && len < cap; k++) {
        long v = steps ? ls->workers[k].optim.t : ls->workers[k].u;
        len += (size_t)snprintf(buf + len, cap - len, "%s%ld", k ? "," : "", v);
    }
}

int pb_run_save_state(const struct pb_plan *p, struct pb_local_stages *ls, int64_t run_id,
                      int epochs_done, struct pb_err *e)
{
    const struct pb_run_cfg *c = p->cfg;
    PB_CHECK(!p->dist);
    int d = c->stages;
    char path[4096], updates[8192], steps[8192], meta[20000], hash[32];
    pb_run_state_path(c->db, run_id, path, sizeof path);
    join_counts(ls, d, false, updates, sizeof updates);
    join_counts(ls, d, true, steps, sizeof steps);
    snprintf(hash, sizeof hash, "%016llx", config_hash(p, false));
    snprintf(meta, sizeof meta, "{\"pipebench_state\":\"1\",\"run_id\":\"%lld\",\"model\":\"%s\","
             "\"stages\":\"%d\",\"epochs_done\":\"%d\",\"updates\":\"%s\",\"steps\":\"%s\","
             "\"config\":\"%s\"}",
             (long long)run_id, c->model, d, epochs_done, updates, steps, hash);
    struct pb_optim **optims = pb_xcalloc((size_t)d, sizeof *optims);
    for (int k = 0; k < d; k++)
        optims[k] = &ls->workers[k].optim;
    int rc = pb_checkpoint_save_state(ls->stages, optims, d, path, meta, e);
    free(optims);
    return rc ? pb_err_prefix(e, "writing the resume state of run %lld: ", (long long)run_id)
              : 0;
}

/* The comma-separated counts of key, one per stage, into v[d]. */
static int read_counts(const cJSON *meta, const char *key, int d, long *v)
{
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(meta, key);
    const char *p = cJSON_IsString(s) ? s->valuestring : NULL;
    for (int k = 0; p && k < d; k++) {
        char *end;
        v[k] = strtol(p, &end, 10);
        if (end == p || v[k] < 0 || (*end != (k + 1 < d ? ',' : '\0')))
            return -1;
        p = end + (k + 1 < d);
    }
    return p ? 0 : -1;
}

int pb_run_load_state(const struct pb_plan *p, struct pb_local_stages *ls, int *start_epoch,
                      struct pb_err *e)
{
    const struct pb_run_cfg *c = p->cfg;
    int d = c->stages;
    char path[4096];
    pb_run_state_path(c->db, c->resume_run, path, sizeof path);
    pb_afile_remove_stale(path);   /* what a process killed while it wrote it left */
    if (access(path, F_OK) && errno == ENOENT) {
        /* stopped before its first resume state (killed in its first epoch, or between
         * recording an epoch and writing the state, or run with --checkpoint-every 0):
         * the run is trained again from its first epoch, which is the same run */
        if (!c->quiet)
            fprintf(stderr, "pipebench: run %lld has no resume state (%s): training it again "
                    "from its first epoch\n", (long long)c->resume_run, path);
        *start_epoch = 0;
        return 0;
    }
    struct pb_optim **optims = pb_xcalloc((size_t)d, sizeof *optims);
    for (int k = 0; k < d; k++)
        optims[k] = &ls->workers[k].optim;
    char *meta_text = NULL;
    int rc = pb_checkpoint_load_state(ls->stages, optims, d, path, &meta_text, e);
    free(optims);
    if (rc) {
        char why[sizeof e->msg];
        snprintf(why, sizeof why, "%s", e->msg);
        return pb_err_set(e, "run %lld's resume state: %s; delete %s to train the run again "
                             "from its first epoch (pipebench resume %lld), or start over with "
                             "pipebench run", (long long)c->resume_run, why, path,
                          (long long)c->resume_run);
    }
    cJSON *meta = meta_text ? cJSON_Parse(meta_text) : NULL;
    free(meta_text);
    const cJSON *done = cJSON_GetObjectItemCaseSensitive(meta, "epochs_done");
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(meta, "run_id");
    const cJSON *cfg = cJSON_GetObjectItemCaseSensitive(meta, "config");
    char *end = NULL;
    unsigned long long hash = cJSON_IsString(cfg) ? strtoull(cfg->valuestring, &end, 16) : 0;
    long *u = pb_xcalloc((size_t)d, sizeof *u), *t = pb_xcalloc((size_t)d, sizeof *t);
    int epochs_done = cJSON_IsString(done) ? atoi(done->valuestring) : -1;
    if (!cJSON_IsString(id) || atoll(id->valuestring) != c->resume_run || epochs_done < 1 ||
        epochs_done >= c->epochs || read_counts(meta, "updates", d, u) ||
        read_counts(meta, "steps", d, t))
        rc = pb_err_set(e, "%s is not run %lld's resume state of %d stages (its metadata "
                        "does not match); start the run again with pipebench run", path,
                        (long long)c->resume_run, d);
    /* a state written before the hash was kept has none and is taken on its run id; one
     * written before results schema 9 hashes the configuration with its seed a string */
    else if (cfg && (!end || *end || (hash != config_hash(p, false) &&
                                      hash != config_hash(p, true))))
        rc = pb_err_set(e, "%s belongs to another configuration than run %lld's (another "
                           "database's run of that id?); delete it to train the run again from "
                           "its first epoch (pipebench resume %lld), or start over with "
                           "pipebench run", path, (long long)c->resume_run,
                        (long long)c->resume_run);
    for (int k = 0; !rc && k < d; k++) {
        ls->workers[k].u = u[k];
        pb_optim_set_steps(&ls->workers[k].optim, t[k]);
    }
    if (!rc)
        *start_epoch = epochs_done;
    free(u);
    free(t);
    cJSON_Delete(meta);
    return rc;
}
