/* harness/driver/run_resume.c — a run's resume state (run_resume.h, semantics §1.10):
 * at an epoch boundary everything the next epochs depend on is the stages' weights and
 * BatchNorm statistics, their optimizers' state and step counts, and the updates each
 * worker has applied; the data order, augmentation, dropout and learning rate are pure
 * functions of (seed, epoch). That state goes into one safetensors file beside the
 * database, written atomically, and comes back into a resumed run's stages; a run
 * without one is trained again from its first epoch. The file carries the checksum of
 * its data (safetensors.h) and what it belongs to: the run id and a hash of the run's
 * configuration, so a damaged state, or another database's run of the same id, is
 * refused with what to do. Under MPI each rank sends its stage's state to rank 0, which
 * writes the one file (stage_states.h), the same file a run in one process writes; on a
 * resume rank 0 reads and checks it and each rank takes its stage's part from rank 0. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/base/atomic_file.h"
#include "harness/driver/run_resume.h"
#include "harness/driver/run_json.h"
#include "harness/driver/stage_states.h"
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

/* The hash of the plan's configuration with another executor in it: that of the run had
 * it named `executor`. */
static unsigned long long config_hash_under(const struct pb_plan *p, const char *executor)
{
    char *json = pb_plan_cfg_json(p);
    cJSON *o = cJSON_Parse(json);
    free(json);
    PB_CHECK(o && cJSON_ReplaceItemInObjectCaseSensitive(o, "executor",
                                                          cJSON_CreateString(executor)));
    json = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    unsigned long long h = pb_fnv1a(PB_FNV_OFFSET, json, strlen(json));
    free(json);
    return h;
}

void pb_run_state_path(const char *db, int64_t run_id, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s.run%lld.state", db, (long long)run_id);
}

/* "a,b,c" of the stages' counts v[d]. */
static void join_counts(const long *v, int d, char *buf, size_t cap)
{
    size_t len = 0;
    buf[0] = 0;
    for (int k = 0; k < d && len < cap; k++)
        len += (size_t)snprintf(buf + len, cap - len, "%s%ld", k ? "," : "", v[k]);
}

/* The writer's file of the gathered states. */
static int write_state(const struct pb_plan *p, const struct pb_stage_states *ss, int64_t run_id,
                       int epochs_done, struct pb_err *e)
{
    const struct pb_run_cfg *c = p->cfg;
    int d = c->stages;
    char path[4096], updates[8192], steps[8192], meta[20000], hash[32];
    pb_run_state_path(c->db, run_id, path, sizeof path);
    join_counts(ss->updates, d, updates, sizeof updates);
    join_counts(ss->steps, d, steps, sizeof steps);
    snprintf(hash, sizeof hash, "%016llx", config_hash(p, false));
    snprintf(meta, sizeof meta, "{\"pipebench_state\":\"1\",\"run_id\":\"%lld\",\"model\":\"%s\","
             "\"stages\":\"%d\",\"epochs_done\":\"%d\",\"updates\":\"%s\",\"steps\":\"%s\","
             "\"config\":\"%s\",\"executor\":\"%s\"}",
             (long long)run_id, c->model, d, epochs_done, updates, steps, hash, c->executor);
    if (pb_checkpoint_save_state_host(ss->lay, ss->h, d, path, meta, e))
        return pb_err_prefix(e, "writing the resume state of run %lld: ", (long long)run_id);
    return 0;
}

int pb_run_save_state(const struct pb_plan *p, struct pb_local_stages *ls, int64_t run_id,
                      int epochs_done, struct pb_err *e)
{
    struct pb_stage_states ss;
    pb_stage_states_gather(&ss, ls, p);
    int rc = pb_plan_writer(p) ? write_state(p, &ss, run_id, epochs_done, e) : 0;
    pb_stage_states_free(&ss);
    return pb_plan_collective(p, rc, e);
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

/* The writer's read of the state at path into ss (shaped): its tensors, then its
 * metadata checked to be this run's (*epochs_done, the counts). */
static int read_state(const struct pb_plan *p, struct pb_stage_states *ss, const char *path,
                      int *epochs_done, struct pb_err *e)
{
    const struct pb_run_cfg *c = p->cfg;
    int d = c->stages;
    char *meta_text = NULL;
    if (pb_checkpoint_load_state_host(ss->lay, ss->h, d, path, &meta_text, e)) {
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
    const cJSON *ex = cJSON_GetObjectItemCaseSensitive(meta, "executor");
    char *end = NULL;
    unsigned long long hash = cJSON_IsString(cfg) ? strtoull(cfg->valuestring, &end, 16) : 0;
    *epochs_done = cJSON_IsString(done) ? atoi(done->valuestring) : -1;
    /* a state written before the hash was kept has none and is taken on its run id; one
     * written before results schema 9 hashes the configuration with its seed a string */
    bool other = cfg && (!end || *end || (hash != config_hash(p, false) &&
                                          hash != config_hash(p, true)));
    int rc = 0;
    if (!cJSON_IsString(id) || atoll(id->valuestring) != c->resume_run || *epochs_done < 1 ||
        *epochs_done >= c->epochs || read_counts(meta, "updates", d, ss->updates) ||
        read_counts(meta, "steps", d, ss->steps))
        rc = pb_err_set(e, "%s is not run %lld's resume state of %d stages (its metadata "
                        "does not match); start the run again with pipebench run", path,
                        (long long)c->resume_run, d);
    else if (other && cJSON_IsString(ex) && hash == config_hash_under(p, ex->valuestring))
        /* the same file under every executor, but tied to its run's configuration, which
         * names the executor (semantics §1.10) */
        rc = pb_err_set(e, "%s was written under --executor %s, but run %lld now names "
                           "--executor %s: a resume state continues only under the executor "
                           "that wrote it; delete it to train the run again from its first "
                           "epoch (pipebench resume %lld), or start over with pipebench run",
                        path, ex->valuestring, (long long)c->resume_run, c->executor,
                        (long long)c->resume_run);
    else if (other)
        rc = pb_err_set(e, "%s belongs to another configuration than run %lld's (another "
                           "database's run of that id?); delete it to train the run again from "
                           "its first epoch (pipebench resume %lld), or start over with "
                           "pipebench run", path, (long long)c->resume_run,
                        (long long)c->resume_run);
    cJSON_Delete(meta);
    return rc;
}

int pb_run_load_state(const struct pb_plan *p, struct pb_local_stages *ls, int *start_epoch,
                      struct pb_err *e)
{
    const struct pb_run_cfg *c = p->cfg;
    char path[4096];
    pb_run_state_path(c->db, c->resume_run, path, sizeof path);
    int have = 1;
    *start_epoch = 0;
    if (pb_plan_writer(p)) {
        pb_afile_remove_stale(path);   /* what a process killed while it wrote it left */
        have = !(access(path, F_OK) && errno == ENOENT);
    }
    pb_dist_bcast(p->dist, &have, sizeof have, 0);
    if (!have) {
        /* stopped before its first resume state (killed in its first epoch, or between
         * recording an epoch and writing the state, or run with --checkpoint-every 0):
         * the run is trained again from its first epoch, which is the same run */
        if (!c->quiet && pb_plan_writer(p))
            fprintf(stderr, "pipebench: run %lld has no resume state (%s): training it again "
                    "from its first epoch\n", (long long)c->resume_run, path);
        return 0;
    }
    struct pb_stage_states ss;
    pb_stage_states_shape(&ss, ls, p);
    int epochs_done = 0;
    int rc = pb_plan_writer(p) ? read_state(p, &ss, path, &epochs_done, e) : 0;
    rc = pb_plan_collective(p, rc, e);   /* the ranks take nothing from a state refused */
    if (!rc) {
        pb_stage_states_scatter(&ss, ls, p);
        pb_dist_bcast(p->dist, &epochs_done, sizeof epochs_done, 0);
        *start_epoch = epochs_done;
    }
    pb_stage_states_free(&ss);
    return rc;
}
