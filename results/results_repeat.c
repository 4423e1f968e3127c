/* results/results_repeat.c — whether a repeat (run --repeat N) trained exactly what the
 * first finished training of its configuration and seed trained (results.h): training
 * is deterministic, so every epoch's losses and accuracy must be equal, bit for bit. */
#include <sqlite3.h>

#include "results/results.h"

/* The reference of run ?1: another run done with the same configuration but the thread
 * count (which no configuration holds), the same threads per stage (a kernel's bits
 * depend on them) and the same revision of the code: of the lowest repeat, the latest
 * (the one compare and sweep count as that repeat, harness/driver/finished.c). */
static const char reference_sql[] =
    "SELECT x.id, x.repeat FROM runs x JOIN runs m ON m.id = ?1 "
    "WHERE x.id <> m.id AND x.status = 'done' AND json_valid(x.config) AND json_valid(m.config) "
    "AND json_remove(x.config, '$.threads') = json_remove(m.config, '$.threads') "
    "AND x.threads_per_stage IS m.threads_per_stage AND x.git_revision IS m.git_revision "
    "ORDER BY x.repeat, x.id DESC LIMIT 1";

/* The first epoch (0-based) of run ?1 whose training loss, validation loss or accuracy is
 * not the very number of run ?2's epoch, or one run has and the other has not. */
static const char differ_sql[] =
    "SELECT a.epoch FROM epochs a LEFT JOIN epochs b ON b.run_id = ?2 AND b.epoch = a.epoch "
    "WHERE a.run_id = ?1 AND (b.epoch IS NULL OR a.train_loss IS NOT b.train_loss "
    "OR a.val_loss IS NOT b.val_loss OR a.val_acc IS NOT b.val_acc) "
    "UNION ALL SELECT b.epoch FROM epochs b LEFT JOIN epochs a ON a.run_id = ?1 "
    "AND a.epoch = b.epoch WHERE b.run_id = ?2 AND a.epoch IS NULL ORDER BY 1 LIMIT 1";

int pb_results_repeat_check(struct pb_results *r, int64_t run_id, struct pb_repeat_check *out,
                            struct pb_err *e)
{
    sqlite3 *db = pb_results_sqlite(r);
    sqlite3_stmt *s = NULL;
    *out = (struct pb_repeat_check){.epoch = -1};
    if (sqlite3_prepare_v2(db, reference_sql, -1, &s, NULL) != SQLITE_OK)
        goto fail;
    sqlite3_bind_int64(s, 1, run_id);
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) {
        out->ref_id = sqlite3_column_int64(s, 0);
        out->ref_repeat = sqlite3_column_int(s, 1);
    }
    sqlite3_finalize(s);
    s = NULL;
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        goto fail;
    if (!out->ref_id)
        return 0;
    if (sqlite3_prepare_v2(db, differ_sql, -1, &s, NULL) != SQLITE_OK)
        goto fail;
    sqlite3_bind_int64(s, 1, run_id);
    sqlite3_bind_int64(s, 2, out->ref_id);
    rc = sqlite3_step(s);
    if (rc == SQLITE_ROW)
        out->epoch = sqlite3_column_int(s, 0);
    sqlite3_finalize(s);
    if (rc == SQLITE_ROW || rc == SQLITE_DONE)
        return 0;
    s = NULL;
fail:
    sqlite3_finalize(s);
    return pb_err_set(e, "results database %s: comparing run %lld with its first repeat: %s",
                      pb_results_path(r), (long long)run_id, sqlite3_errmsg(db));
}
