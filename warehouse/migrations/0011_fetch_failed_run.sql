-- One row per run in which fetching a locator failed transiently (timeout, connection error, 429/5xx, short
-- body), so a locator is not retried on every run for ever: once it has fetch.max_attempt_runs uncleared rows
-- here, fetched_files records its records as rejected 'gave_up' (the detail lists these runs). A later decided
-- outcome (fetched, or a permanent rejection) or `aesforge retry --reason gave_up` clears the rows (kept as
-- history), and the count starts again.
CREATE TABLE fetch_failed_run (
    locator      VARCHAR NOT NULL,
    activity_id  VARCHAR NOT NULL,     -- the fetched_files run that tried it
    reason_code  VARCHAR NOT NULL,     -- its last attempt's reason in that run
    detail       VARCHAR,
    n_attempts   INTEGER NOT NULL,     -- requests sent in that run
    duration_ms  DOUBLE NOT NULL,      -- time spent waiting on the server in that run, all attempts together
    started_at   TIMESTAMPTZ NOT NULL,
    cleared_at   TIMESTAMPTZ,          -- NULL while the row counts towards giving up
    cleared_by   VARCHAR,              -- 'fetched', 'rejected' (a later run decided it) or 'retry' (aesforge retry)
    PRIMARY KEY (locator, activity_id)
);
