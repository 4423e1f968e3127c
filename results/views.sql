-- results/views.sql — reporting views over results/schema.sql (SPEC §6 metrics), embedded
-- in the library and created as TEMP views on each reporting connection (plots/report_db.c),
-- so every database of the schema works unchanged. Accuracies are fractions; bytes are bytes.

-- One row per run: how the paper-style tables group it. The column label of a schedule
-- with a variant is 'schedule (variant)'.
CREATE TEMP VIEW IF NOT EXISTS run_config AS
SELECT id AS run_id, status, created, optimizer, model, dataset, stages, seed, schedule,
       nullif(variant, '') AS variant,
       schedule || coalesce(' (' || nullif(variant, '') || ')', '') AS column_label
FROM runs;

-- Best and final validation accuracy, epochs recorded and their training seconds.
CREATE TEMP VIEW IF NOT EXISTS run_accuracy AS
SELECT e.run_id, max(e.val_acc) AS best_acc,
       (SELECT x.val_acc FROM epochs x WHERE x.run_id = e.run_id
        ORDER BY x.epoch DESC LIMIT 1) AS final_acc,
       count(*) AS epochs_done, sum(e.wall_s) AS wall_s
FROM epochs e GROUP BY e.run_id;

-- Each epoch with the training seconds elapsed at its end: the epochs and seconds to a
-- target accuracy are the first row with val_acc >= target (a query, as the target varies):
--   SELECT run_id, min(epoch) + 1, min(elapsed_s) FROM epoch_progress
--   WHERE val_acc >= ?1 GROUP BY run_id
CREATE TEMP VIEW IF NOT EXISTS epoch_progress AS
SELECT run_id, epoch, val_acc, wall_s,
       sum(wall_s) OVER (PARTITION BY run_id ORDER BY epoch
                         ROWS UNBOUNDED PRECEDING) AS elapsed_s
FROM epochs;

-- Mean training throughput over the epochs (samples/s).
CREATE TEMP VIEW IF NOT EXISTS run_throughput AS
SELECT run_id, avg(throughput) AS throughput, sum(samples) AS samples
FROM epochs GROUP BY run_id;

-- Mean bubble fraction (idle / makespan) over stages and epochs, and the worst stage's.
CREATE TEMP VIEW IF NOT EXISTS run_bubble AS
SELECT run_id, avg(bubble_frac) AS bubble_frac, max(bubble_frac) AS bubble_frac_max
FROM stage_stats GROUP BY run_id;

-- Per run and stage: the peak bytes of each kind over the epochs, and their sum.
CREATE TEMP VIEW IF NOT EXISTS stage_memory AS
SELECT run_id, stage, params, grads, optstate, wcopies, acts, comm, scratch,
       params + grads + optstate + wcopies + acts + comm + scratch AS total
FROM (SELECT run_id, stage, max(mem_params) AS params, max(mem_grads) AS grads,
             max(mem_optstate) AS optstate, max(mem_wcopies) AS wcopies,
             max(mem_acts) AS acts, max(mem_comm) AS comm, max(mem_scratch) AS scratch
      FROM stage_stats GROUP BY run_id, stage);

-- Per run: peak bytes by kind, the largest stage's (_max) and summed over stages (_sum).
CREATE TEMP VIEW IF NOT EXISTS run_memory AS
SELECT run_id,
       max(params) AS params_max, sum(params) AS params_sum,
       max(grads) AS grads_max, sum(grads) AS grads_sum,
       max(optstate) AS optstate_max, sum(optstate) AS optstate_sum,
       max(wcopies) AS wcopies_max, sum(wcopies) AS wcopies_sum,
       max(acts) AS acts_max, sum(acts) AS acts_sum,
       max(comm) AS comm_max, sum(comm) AS comm_sum,
       max(scratch) AS scratch_max, sum(scratch) AS scratch_sum,
       max(total) AS total_max, sum(total) AS total_sum
FROM stage_memory GROUP BY run_id;

-- Per run and stage, over the epochs: mean and max version lag of forwards and backwards
-- against the synchronous run, and the prediction error (mean weighted by predictions).
CREATE TEMP VIEW IF NOT EXISTS stage_staleness AS
SELECT run_id, stage, avg(f_mean) AS f_mean, max(f_max) AS f_max,
       avg(b_mean) AS b_mean, max(b_max) AS b_max,
       sum(pred_err_mean * pred_count)
           / nullif(sum(CASE WHEN pred_err_mean IS NOT NULL THEN pred_count END), 0)
           AS pred_err_mean,
       max(pred_err_max) AS pred_err_max, sum(pred_count) AS pred_count
FROM staleness GROUP BY run_id, stage;

-- The same per run, over stages and epochs.
CREATE TEMP VIEW IF NOT EXISTS run_staleness AS
SELECT run_id, avg(f_mean) AS f_mean, max(f_max) AS f_max,
       avg(b_mean) AS b_mean, max(b_max) AS b_max,
       sum(pred_err_mean * pred_count)
           / nullif(sum(CASE WHEN pred_err_mean IS NOT NULL THEN pred_count END), 0)
           AS pred_err_mean,
       max(pred_err_max) AS pred_err_max, sum(pred_count) AS pred_count
FROM staleness GROUP BY run_id;

-- Everything above, one row per run (NULL where a run recorded nothing of a kind).
CREATE TEMP VIEW IF NOT EXISTS run_summary AS
SELECT c.*, a.best_acc, a.final_acc, a.epochs_done, a.wall_s, t.throughput,
       b.bubble_frac, m.params_sum, m.grads_sum, m.optstate_sum, m.wcopies_sum, m.acts_sum,
       m.comm_sum, m.scratch_sum, m.total_sum, m.total_max,
       s.f_mean, s.f_max, s.b_mean, s.b_max, s.pred_err_mean, s.pred_err_max, s.pred_count
FROM run_config c
LEFT JOIN run_accuracy a USING (run_id)
LEFT JOIN run_throughput t USING (run_id)
LEFT JOIN run_bubble b USING (run_id)
LEFT JOIN run_memory m USING (run_id)
LEFT JOIN run_staleness s USING (run_id);
