-- The committer's ledger (warehouse/shard_commit.py): one row per result shard ingested, written in the same
-- transaction as the shard's rows, so a shard is in the warehouse whole or not at all, and only once.
CREATE TABLE committed_shard (
    shard_id        VARCHAR PRIMARY KEY,  -- 'shard-<sha256 of asset, version and the sorted input keys>'
    asset_key       VARCHAR NOT NULL,
    activity_id     VARCHAR,              -- the activity whose rows the shard holds
    manifest_sha256 VARCHAR NOT NULL,
    n_rows          BIGINT NOT NULL,      -- rows offered, all tables together
    n_inserted      BIGINT NOT NULL,      -- rows that were new (or replaced an older decision)
    tables          JSON NOT NULL,        -- table -> rows offered
    committed_at    TIMESTAMPTZ NOT NULL
);
