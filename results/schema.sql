-- results/schema.sql — the pipebench results database (SQLite), embedded in the library.
-- One row per run, per epoch, per (epoch, stage) and per op event; the metrics of semantics §6.
-- Bump schema_version (and PB_RESULTS_SCHEMA_VERSION in results/results.h) on any change.

CREATE TABLE schema_version (
    version INTEGER NOT NULL
);
INSERT INTO schema_version (version) VALUES (10);

-- Times are ISO-8601 UTC ('2025-01-31T12:00:00Z'); accuracies are fractions in [0, 1].
CREATE TABLE runs (
    id INTEGER PRIMARY KEY,
    created TEXT NOT NULL,           -- when the row was written
    started TEXT,                    -- when training began (after loading and building)
    ended TEXT,
    status TEXT NOT NULL DEFAULT 'running'
        CHECK (status IN ('running', 'done', 'failed', 'diverged', 'interrupted')),
    config TEXT CHECK (config IS NULL OR json_valid(config)),  -- every flag, as JSON (the
                                     -- seed an integer, a string above 2^53)
    model TEXT,
    dataset TEXT,                    -- its name; 'synthetic:cifar100' for the synthetic
                                     -- stand-in of a model's dataset
    schedule TEXT,
    variant TEXT,
    optimizer TEXT,
    stages INTEGER,                  -- D
    microbatch_size INTEGER,         -- b
    microbatches INTEGER,            -- M (per mini-batch)
    epochs INTEGER,                  -- planned
    seed INTEGER,
    executor TEXT,
    lr REAL,
    git_revision TEXT,
    cpu_model TEXT,
    library_versions TEXT,           -- 'oneDNN 3.x; SQLite 3.x; zlib 1.x; cJSON 1.x'
    host TEXT,
    pid INTEGER,                     -- of the process that writes the run
    message TEXT,                    -- why a run failed, diverged or was interrupted
    cores INTEGER,                   -- online cores of the machine (NULL: a simulation)
    threads_per_stage INTEGER,       -- cores each stage's kernels use
    load_avg REAL,                   -- 1-minute load average when the run began
    oversubscribed INTEGER,          -- 1: the stages' threads (threads executor, or mpi ranks
                                     -- on this host) outnumber the cores: throughput and
                                     -- bubble are not a one-device-per-stage pipeline's
    samples_per_update INTEGER,      -- samples each optimizer update sums: b × M where the
                                     -- schedule accumulates M micro-batches (gpipe,
                                     -- pipedream-2bw, xpipe), else b (semantics §1.5)
    updates_per_epoch INTEGER,       -- optimizer updates in an epoch (a stage's U ops)
    partition_cut TEXT,              -- the stages' block bounds, '0,3,5,9': stage k holds
                                     -- blocks [bounds[k], bounds[k+1]) (--partition)
    repeat INTEGER NOT NULL DEFAULT 0, -- which of --repeat N trainings of the same
                                     -- configuration and seed this is (0 to N - 1): part
                                     -- of neither the configuration nor the seed
    bleu_scoring TEXT
    -- bleu_scoring: how the validation BLEU of a translation model (epochs.val_bleu) is
    -- scored, detok-raw (detokenised against the raw newstest2014.de, as the MLPerf GNMT
    -- reference scores) or bpe-merged (BPE-merged ids on both sides); NULL for other
    -- models (semantics §6.9)
);

CREATE TABLE epochs (
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    epoch INTEGER NOT NULL,          -- 0-based
    train_loss REAL,                 -- mean over the epoch's micro-batches (NULL: NaN)
    val_loss REAL,
    val_acc REAL,
    samples INTEGER,                 -- training samples processed
    wall_s REAL,
    throughput REAL,                 -- samples / wall_s
    lr REAL,                         -- in force during the epoch
    ops INTEGER,                     -- F, B and U ops all devices ran
    events_kept INTEGER,             -- of them, rows in events (--trace-epochs, --trace-window)
    sim_wall_s REAL,                 -- the epoch simulated with its stages' median op costs,
    sim_throughput REAL,             -- one device per stage (design §6.6): makespan, samples/s
    val_bleu REAL,                   -- a translation model's validation BLEU, 0 to 100, scored
                                     -- as the run's runs.bleu_scoring says (--beam); NULL for
                                     -- other models
    PRIMARY KEY (run_id, epoch)
);

-- Peak bytes per memory kind, in enum pb_mem_kind order (harness/compute/memory.h).
CREATE TABLE stage_stats (
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    epoch INTEGER NOT NULL,
    stage INTEGER NOT NULL,
    busy_s REAL,
    wait_s REAL,                     -- idle: waiting for a neighbour (the bubble)
    comm_s REAL,
    bubble_frac REAL,                -- idle time / makespan
    mem_params INTEGER,
    mem_grads INTEGER,
    mem_optstate INTEGER,
    mem_wcopies INTEGER,
    mem_acts INTEGER,
    mem_comm INTEGER,
    mem_scratch INTEGER,
    mem_bnstats INTEGER,             -- BatchNorm running statistics
    mem_host INTEGER,                -- host memory: its share of the data, staging, probes
    versions_kept INTEGER,           -- most weight versions held at once
    f_s REAL,                        -- median seconds of the epoch's F, B and U on the stage
    b_s REAL,
    u_s REAL,
    sim_bubble REAL,                 -- its bubble in the simulated epoch (design §6.6)
    PRIMARY KEY (run_id, epoch, stage),
    FOREIGN KEY (run_id, epoch) REFERENCES epochs(run_id, epoch) ON DELETE CASCADE
);

-- Version difference of each op's weights versus the synchronous run (semantics §6.2);
-- prediction error ||W_hat - W_actual|| / ||W_actual||, NULL when nothing was predicted.
CREATE TABLE staleness (
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    epoch INTEGER NOT NULL,
    stage INTEGER NOT NULL,
    f_mean REAL,
    f_max REAL,
    b_mean REAL,
    b_max REAL,
    pred_err_mean REAL,
    pred_err_max REAL,
    pred_count INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (run_id, epoch, stage),
    FOREIGN KEY (run_id, epoch) REFERENCES epochs(run_id, epoch) ON DELETE CASCADE
);

-- Op timeline: one row per F, B, U, I or W a stage ran (in the traced epochs and window),
-- with the weight version it read and the one a synchronous run would read. device is the
-- stage: where a run held v > 1 model chunks per device, the trace and the timeline put
-- it on its device by the run's configuration (plots/run_devices.h).
CREATE TABLE events (
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    epoch INTEGER NOT NULL,
    device INTEGER NOT NULL,
    seq INTEGER NOT NULL,            -- position in the device's program
    kind TEXT NOT NULL CHECK (kind IN ('F', 'B', 'U', 'I', 'W')),  -- I, W: split backward
    mb INTEGER,                      -- micro-batch (NULL for U)
    version INTEGER,                 -- weight version read (F, B, I, W) or produced (U)
    ahead INTEGER,                   -- prediction look-ahead s (0: none)
    sync_version INTEGER,            -- the version a synchronous run reads here (semantics §6.1)
    start_s REAL,                    -- seconds since the epoch began
    end_s REAL,
    pair INTEGER,                    -- DualPipeV's overlapped pair (semantics §4.13), run as
                                     -- F then B: 1 on the F, 2 on its B, 0 for other ops;
                                     -- NULL in rows recorded before schema version 10
    PRIMARY KEY (run_id, epoch, device, seq),
    FOREIGN KEY (run_id, epoch) REFERENCES epochs(run_id, epoch) ON DELETE CASCADE
);

CREATE INDEX runs_by_status ON runs(status);
