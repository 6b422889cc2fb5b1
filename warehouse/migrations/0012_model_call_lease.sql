-- A model call is claimed before it is sent: while a row here names a cache key, any other process (a second
-- `aesforge run`, another Dagster step process) that needs the same answer waits for it instead of paying for
-- it again. The row goes when the call is logged in model_call (same transaction) or given up. A lease past
-- expires_at, or one whose process is gone from this host, is taken over by the next claimant.
CREATE TABLE model_call_lease (
    cache_key     VARCHAR PRIMARY KEY,
    owner         VARCHAR NOT NULL,      -- this claim: host:pid:token
    activity_id   VARCHAR NOT NULL,      -- the step that claimed it (and so its run)
    hostname      VARCHAR NOT NULL,
    pid           INTEGER NOT NULL,
    process_start VARCHAR,               -- the process's start time (Linux /proc), so a reused pid is not taken for it
    acquired_at   TIMESTAMPTZ NOT NULL,
    expires_at    TIMESTAMPTZ NOT NULL   -- acquired_at + the longest the request may take (timeout x attempts + backoff) + margin
);
