-- results/views.sql — reporting views over results/schema.sql (semantics §6 metrics), embedded
-- in the library and created as TEMP views on each reporting connection (plots/report_db.c),
-- so every database of the schema works unchanged. Accuracies are fractions; bytes are bytes.
-- These views are the one definition of throughput, bubble fraction, staleness, maximum
-- accuracy and time to a target: compare, report, plot and the benchmarks read them.

-- One row per run: how the paper-style tables group it. The column label of a schedule
-- with a variant is 'schedule (variant)'. shared_timing: its measured throughput and
-- bubble are not those of a pipeline with one device per stage (the seq executor runs
-- the stages in turn; or the stages' threads outnumbered the cores). Simulations
-- (`pipebench simulate --record`, executor 'sim') are not runs of a configuration.
-- config_id is the configuration's identity: every recorded option that can change its
-- numbers except the seed (seeds are what a cell averages) and the schedule and variant
-- (a table's columns), so a cell never mixes configurations; how a run was timed
-- (executor, threads, the stages' devices) and where its files are (data folder,
-- checkpoints, traces) are not part of it. The partition is its cut (the stages' block bounds, whichever method chose
-- them: a measured --partition time may choose another cut on another run); runs
-- recorded before the cut was (schema version 3) keep the method's name instead. With
-- --batch the configuration holds the batch, not the micro-batch size (which follows
-- from it and the schedule), so the schedules of one batch share a row. A translation
-- model's BLEU scoring (runs.bleu_scoring: detok-raw, the paper's way, or bpe-merged) is
-- part of it, so a cell never averages BLEU scored two ways.
-- samples_per_update and updates_per_epoch: the equal footing of semantics §1.5.
-- experiment: the --experiment it was recorded under, NULL for none. repeat: which of the
-- --repeat N trainings of its configuration and seed it is (0 to N - 1); seed_key its
-- seed as recorded in its configuration (the seed column where none is).
-- Only the runs a report selects (pb_report_select: report_selection when
-- report_selecting holds a row) are here.
CREATE TEMP TABLE IF NOT EXISTS report_selection (run_id INTEGER PRIMARY KEY);
CREATE TEMP TABLE IF NOT EXISTS report_selecting (on_ INTEGER);
CREATE TEMP VIEW IF NOT EXISTS run_config AS
SELECT id AS run_id, status, created, optimizer, model, dataset, stages, seed, schedule,
       nullif(variant, '') AS variant,
       schedule || coalesce(' (' || nullif(variant, '') || ')', '') AS column_label,
       repeat, coalesce(CASE WHEN json_valid(config) THEN json_extract(config, '$.seed') END,
                        seed) AS seed_key,
       executor, (executor = 'seq' OR coalesce(oversubscribed, 0) = 1) AS shared_timing,
       samples_per_update, updates_per_epoch, partition_cut,
       json_patch(
           CASE WHEN NOT json_valid(config) THEN NULL
                WHEN partition_cut IS NULL THEN json_remove(config, '$.schedule', '$.variant',
                    '$.seed', '$.executor', '$.threads', '$.data_dir', '$.init', '$.save',
                    '$.trace_epochs', '$.trace_mb_lo', '$.trace_mb_hi', '$.experiment',
                    '$.checkpoint_every', '$.devices')
                ELSE json_set(json_remove(config, '$.schedule', '$.variant', '$.seed',
                    '$.executor', '$.threads', '$.data_dir', '$.init', '$.save', '$.trace_epochs',
                    '$.trace_mb_lo', '$.trace_mb_hi', '$.experiment', '$.checkpoint_every',
                    '$.devices', '$.partition'), '$.cut', partition_cut) END,
           CASE WHEN bleu_scoring IS NULL THEN '{}'
                ELSE json_object('bleu_scoring', bleu_scoring) END)
           AS config_id,
       CASE WHEN json_valid(config) THEN json_extract(config, '$.experiment') END AS experiment
FROM runs
WHERE executor IS NOT 'sim'
  AND (NOT EXISTS (SELECT 1 FROM report_selecting)
       OR id IN (SELECT run_id FROM report_selection));

-- Maximum (best) and final validation accuracy, the maximum validation BLEU (NULL but for
-- translation models), epochs recorded and their training seconds.
CREATE TEMP VIEW IF NOT EXISTS run_accuracy AS
SELECT e.run_id, max(e.val_acc) AS best_acc, max(e.val_bleu) AS best_bleu,
       (SELECT x.val_acc FROM epochs x WHERE x.run_id = e.run_id
        ORDER BY x.epoch DESC LIMIT 1) AS final_acc,
       count(*) AS epochs_done, sum(e.wall_s) AS wall_s
FROM epochs e GROUP BY e.run_id;

-- Each epoch with its throughput (semantics §6.4: training samples / the epoch's wall seconds,
-- which time the training ops only, not validation), its losses and the training seconds
-- elapsed at its end.
CREATE TEMP VIEW IF NOT EXISTS epoch_progress AS
SELECT run_id, epoch, val_acc, val_loss, train_loss, samples, wall_s,
       1.0 * samples / nullif(wall_s, 0) AS throughput,
       sum(wall_s) OVER (PARTITION BY run_id ORDER BY epoch
                         ROWS UNBOUNDED PRECEDING) AS elapsed_s
FROM epochs;

-- The target validation accuracy (a fraction) of run_target: at most one row, set by
-- pb_report_set_target (plots/report_db.h); empty means no target.
CREATE TEMP TABLE IF NOT EXISTS report_target (target_acc REAL NOT NULL);

-- Epochs and seconds to the target: the first epoch whose validation accuracy reaches it
-- (val_acc >= target), counted from 1, and the training seconds elapsed at that epoch's
-- end. Runs that never reach it have no row.
CREATE TEMP VIEW IF NOT EXISTS run_target AS
SELECT run_id, target_acc, epoch + 1 AS epochs_to_target, elapsed_s AS seconds_to_target
FROM (SELECT p.run_id, t.target_acc, p.epoch, p.elapsed_s,
             row_number() OVER (PARTITION BY p.run_id, t.target_acc ORDER BY p.epoch) AS k
      FROM epoch_progress p JOIN report_target t ON p.val_acc >= t.target_acc)
WHERE k = 1;

-- The epochs a run's timings are taken from (semantics §6.4): all but its first when it
-- has more than one. The first epoch is the warm-up: it pays once for oneDNN's kernel
-- generation, the first touch of every buffer and cold caches. (Every epoch fills and
-- drains the pipeline: that is the schedule's own cost and stays in.)
CREATE TEMP VIEW IF NOT EXISTS steady_epochs AS
SELECT e.* FROM epochs e
WHERE e.epoch > (SELECT CASE WHEN count(*) > 1 THEN min(x.epoch) ELSE -1 END
                 FROM epochs x WHERE x.run_id = e.run_id);

-- A run's throughput: the median over its steady epochs of their throughputs, with
-- their range (throughput_lo, throughput_hi) as its spread, the number of epochs it is
-- taken over and whether that includes the warm-up (a run of one epoch).
-- (A run's simulated throughput and bubble are not views: results/results_sim.h defines
-- them, and a reporting connection reads them as pb_sim_throughput(run_id) and
-- pb_sim_bubble(run_id).)
CREATE TEMP VIEW IF NOT EXISTS run_throughput AS
WITH t AS (
    SELECT run_id, 1.0 * samples / wall_s AS thr,
           row_number() OVER (PARTITION BY run_id ORDER BY 1.0 * samples / wall_s) AS k,
           count(*) OVER (PARTITION BY run_id) AS n
    FROM steady_epochs WHERE samples IS NOT NULL AND wall_s > 0)
SELECT run_id,
       avg(CASE WHEN k IN ((n + 1) / 2, (n + 2) / 2) THEN thr END) AS throughput,
       min(thr) AS throughput_lo, max(thr) AS throughput_hi, max(n) AS throughput_epochs,
       (SELECT count(*) FROM epochs x WHERE x.run_id = t.run_id) = 1 AS warmup_included
FROM t GROUP BY run_id;

-- Per epoch and stage (device): its times in seconds. Its makespan is the epoch's wall
-- time and bubble_frac its idle time / makespan, as recorded (harness/driver/run_epoch.c
-- writes 1 - busy_s / wall_s), so idle_s = bubble_frac * makespan_s.
CREATE TEMP VIEW IF NOT EXISTS stage_epoch_time AS
SELECT s.run_id, s.epoch, s.stage, s.busy_s, s.wait_s, s.comm_s, e.wall_s AS makespan_s,
       s.bubble_frac * e.wall_s AS idle_s, s.bubble_frac
FROM stage_stats s JOIN epochs e USING (run_id, epoch);

-- Per run and stage: the bubble fraction of the device over the run's steady epochs,
-- its idle seconds over its makespan summed over them (so each epoch weighs by its time).
CREATE TEMP VIEW IF NOT EXISTS stage_bubble AS
SELECT t.run_id, t.stage, sum(t.busy_s) AS busy_s, sum(t.idle_s) AS idle_s,
       sum(t.makespan_s) AS makespan_s,
       sum(t.idle_s) / nullif(sum(t.makespan_s), 0) AS bubble_frac
FROM stage_epoch_time t JOIN steady_epochs USING (run_id, epoch)
WHERE t.idle_s IS NOT NULL GROUP BY t.run_id, t.stage;

-- Per run: the mean bubble fraction of its devices (every device has the same makespan,
-- so this is all idle seconds over D times the makespan) and the worst device's.
CREATE TEMP VIEW IF NOT EXISTS run_bubble AS
SELECT run_id, avg(bubble_frac) AS bubble_frac, max(bubble_frac) AS bubble_frac_max
FROM stage_bubble GROUP BY run_id;

-- Repeats (--repeat N; semantics §6.4): the finished runs (done or diverged) of one
-- configuration (config_id), schedule column and seed are one training done again, to
-- time it again (training is deterministic: their losses are equal). A table counts
-- each such seed group once, by its first run seed_run (lowest repeat, then id); repeats:
-- the group's runs. A run without a valid configuration is a group of its own.
CREATE TEMP VIEW IF NOT EXISTS seed_runs AS
SELECT run_id, status, repeat,
       first_value(run_id) OVER w AS seed_run,
       count(*) OVER w AS repeats
FROM run_config WHERE status IN ('done', 'diverged')
WINDOW w AS (PARTITION BY coalesce(config_id, run_id), column_label, seed_key
             ORDER BY repeat, run_id ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING);

-- Per seed group: the median over its done runs of each run's throughput (run_throughput)
-- and of its bubble fraction (run_bubble), with their ranges over the runs (_lo, _hi) and
-- the number of runs they are taken over (_repeats): with one run, its own values.
CREATE TEMP VIEW IF NOT EXISTS seed_timing AS
WITH t AS (
    SELECT g.seed_run, t.throughput AS v,
           row_number() OVER (PARTITION BY g.seed_run ORDER BY t.throughput) AS k,
           count(*) OVER (PARTITION BY g.seed_run) AS n
    FROM seed_runs g JOIN run_throughput t USING (run_id)
    WHERE g.status = 'done' AND t.throughput IS NOT NULL),
b AS (
    SELECT g.seed_run, b.bubble_frac AS v,
           row_number() OVER (PARTITION BY g.seed_run ORDER BY b.bubble_frac) AS k,
           count(*) OVER (PARTITION BY g.seed_run) AS n
    FROM seed_runs g JOIN run_bubble b USING (run_id)
    WHERE g.status = 'done' AND b.bubble_frac IS NOT NULL),
tm AS (SELECT seed_run, avg(CASE WHEN k IN ((n + 1) / 2, (n + 2) / 2) THEN v END) AS med,
              min(v) AS lo, max(v) AS hi, max(n) AS n FROM t GROUP BY seed_run),
bm AS (SELECT seed_run, avg(CASE WHEN k IN ((n + 1) / 2, (n + 2) / 2) THEN v END) AS med,
              min(v) AS lo, max(v) AS hi, max(n) AS n FROM b GROUP BY seed_run)
SELECT g.seed_run, g.repeats,
       tm.med AS throughput, tm.lo AS throughput_lo, tm.hi AS throughput_hi,
       tm.n AS throughput_repeats,
       bm.med AS bubble_frac, bm.lo AS bubble_lo, bm.hi AS bubble_hi, bm.n AS bubble_repeats
FROM (SELECT DISTINCT seed_run, repeats FROM seed_runs) g
LEFT JOIN tm USING (seed_run) LEFT JOIN bm USING (seed_run);

-- Per run and stage: the peak bytes of each kind over the epochs, and their sum.
CREATE TEMP VIEW IF NOT EXISTS stage_memory AS
SELECT run_id, stage, params, grads, optstate, wcopies, acts, comm, scratch, bnstats, host,
       params + grads + optstate + wcopies + acts + comm + scratch + bnstats + host AS total
FROM (SELECT run_id, stage, max(mem_params) AS params, max(mem_grads) AS grads,
             max(mem_optstate) AS optstate, max(mem_wcopies) AS wcopies,
             max(mem_acts) AS acts, max(mem_comm) AS comm, max(mem_scratch) AS scratch,
             max(mem_bnstats) AS bnstats, max(mem_host) AS host
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
       max(bnstats) AS bnstats_max, sum(bnstats) AS bnstats_sum,
       max(host) AS host_max, sum(host) AS host_sum,
       max(total) AS total_max, sum(total) AS total_sum
FROM stage_memory GROUP BY run_id;

-- Staleness (semantics §6.2): an op's version lag is the weight version the synchronous run would
-- use minus the one it used. Per run and stage, over the epochs: the mean and max lag of
-- forwards and of backwards (the mean of the epochs' means: every epoch runs the same
-- program, so the same number of ops), and the prediction error (mean weighted by the
-- predictions of each epoch).
CREATE TEMP VIEW IF NOT EXISTS stage_staleness AS
SELECT run_id, stage, avg(f_mean) AS f_mean, max(f_max) AS f_max,
       avg(b_mean) AS b_mean, max(b_max) AS b_max,
       sum(pred_err_mean * pred_count)
           / nullif(sum(CASE WHEN pred_err_mean IS NOT NULL THEN pred_count END), 0)
           AS pred_err_mean,
       max(pred_err_max) AS pred_err_max, sum(pred_count) AS pred_count
FROM staleness GROUP BY run_id, stage;

-- The same per run, over stages and epochs (every stage runs an F and a B per micro-batch,
-- so the mean over the rows is the mean over all ops).
CREATE TEMP VIEW IF NOT EXISTS run_staleness AS
SELECT run_id, avg(f_mean) AS f_mean, max(f_max) AS f_max,
       avg(b_mean) AS b_mean, max(b_max) AS b_max,
       sum(pred_err_mean * pred_count)
           / nullif(sum(CASE WHEN pred_err_mean IS NOT NULL THEN pred_count END), 0)
           AS pred_err_mean,
       max(pred_err_max) AS pred_err_max, sum(pred_count) AS pred_count
FROM staleness GROUP BY run_id;

-- Everything above, one row per run (NULL where a run recorded nothing of a kind; the
-- target columns are NULL when no target is set or the run did not reach it).
CREATE TEMP VIEW IF NOT EXISTS run_summary AS
SELECT c.*, a.best_acc, a.best_bleu, a.final_acc, a.epochs_done, a.wall_s, t.throughput,
       t.throughput_lo, t.throughput_hi, t.throughput_epochs, t.warmup_included,
       g.epochs_to_target, g.seconds_to_target,
       b.bubble_frac, b.bubble_frac_max, m.params_sum, m.grads_sum, m.optstate_sum,
       m.wcopies_sum, m.acts_sum, m.comm_sum, m.scratch_sum, m.bnstats_sum, m.host_sum,
       m.total_sum,
       m.total_max,
       s.f_mean, s.f_max, s.b_mean, s.b_max, s.pred_err_mean, s.pred_err_max, s.pred_count
FROM run_config c
LEFT JOIN run_accuracy a USING (run_id)
LEFT JOIN run_throughput t USING (run_id)
LEFT JOIN run_target g USING (run_id)
LEFT JOIN run_bubble b USING (run_id)
LEFT JOIN run_memory m USING (run_id)
LEFT JOIN run_staleness s USING (run_id);
