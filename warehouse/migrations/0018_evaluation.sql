-- Evaluation (assets/evaluation): model predictions on a benchmark release, their scores per item and metric, and
-- the leaderboard and paired comparisons computed from them. Every prediction is an entity derived from its
-- benchmark item (and, when a model made it here, from its model call); a run is named by what it evaluates, so
-- the same release, model configuration, condition, decoding and seed are the same run, resumed.

CREATE TABLE evaluation_run (
    run_key          VARCHAR PRIMARY KEY,  -- evaluation_run:<digest of benchmark, release digest, source, model, condition, decoding, seed>
    benchmark        VARCHAR NOT NULL,     -- photocritique | critique_canvas | ...
    release_digest   VARCHAR NOT NULL,     -- digest of the release's data files (assets/evaluation/logic/benchmark_items.py)
    release_version  VARCHAR NOT NULL,
    source           VARCHAR NOT NULL,     -- model (asked here) | predictions_file (imported)
    model            VARCHAR NOT NULL,     -- provider/model, or the model a predictions file names
    condition        VARCHAR NOT NULL,     -- the prompt condition (photocritique: capped_plain, ...)
    decoding         JSON NOT NULL,        -- temperature, top_p, max_output_tokens, samples per item
    seed             INTEGER NOT NULL,
    predictions_file VARCHAR,              -- the imported file's name (relative to the project), its sha256 below
    predictions_sha256 VARCHAR,
    activity_id      VARCHAR NOT NULL      -- the activity that last wrote the run
);

CREATE TABLE evaluation_prediction (
    run_key       VARCHAR NOT NULL,
    item_id       VARCHAR NOT NULL,        -- the benchmark item (release row id)
    sample        INTEGER NOT NULL,        -- the answer's index for the item (photocritique: three per post)
    entity_id     VARCHAR NOT NULL,        -- evaluation_prediction:<digest of run, item, sample, prediction>
    prediction    VARCHAR NOT NULL,
    prompt_sha256 VARCHAR,                 -- of the rendered prompt as sent
    template      VARCHAR,                 -- template id@version (asked here)
    call_id       VARCHAR,                 -- the model call that answered (asked here)
    n_words       INTEGER NOT NULL,
    activity_id   VARCHAR NOT NULL,
    PRIMARY KEY (run_key, item_id, sample)
);

CREATE TABLE evaluation_metric (
    run_key     VARCHAR NOT NULL,
    metric      VARCHAR NOT NULL,          -- rouge_l | bleu | meteor | sbert | bertscore | bleurt | clip_score | ...
    status      VARCHAR NOT NULL,          -- ran | unavailable
    reason      VARCHAR,                   -- why it did not run (no weights at ..., set ...)
    version     VARCHAR,                   -- library and scoring version
    parameters  JSON,
    activity_id VARCHAR NOT NULL,
    PRIMARY KEY (run_key, metric)
);

CREATE TABLE evaluation_score (
    run_key     VARCHAR NOT NULL,
    item_id     VARCHAR NOT NULL,
    metric      VARCHAR NOT NULL,
    value       DOUBLE,                    -- null: the item could not be scored by the metric (the run's metric row says why)
    activity_id VARCHAR NOT NULL,
    PRIMARY KEY (run_key, item_id, metric)
);

CREATE TABLE evaluation_summary (
    run_key     VARCHAR NOT NULL,
    metric      VARCHAR NOT NULL,
    mean        DOUBLE,
    ci_low      DOUBLE,                    -- bootstrap 95 % interval of the mean over items
    ci_high     DOUBLE,
    n_items     INTEGER NOT NULL,
    resamples   INTEGER NOT NULL,
    seed        INTEGER NOT NULL,
    activity_id VARCHAR NOT NULL,
    PRIMARY KEY (run_key, metric)
);

CREATE TABLE evaluation_comparison (
    run_a       VARCHAR NOT NULL,
    run_b       VARCHAR NOT NULL,
    metric      VARCHAR NOT NULL,
    n_items     INTEGER NOT NULL,          -- items both runs scored
    mean_diff   DOUBLE,                    -- mean of a - b over those items
    ci_low      DOUBLE,                    -- paired bootstrap 95 % interval
    ci_high     DOUBLE,
    mcnemar_b   INTEGER,                   -- binary metrics only: items only a got right / only b
    mcnemar_c   INTEGER,
    mcnemar_p   DOUBLE,                    -- exact two-sided
    activity_id VARCHAR NOT NULL,
    PRIMARY KEY (run_a, run_b, metric)
);
