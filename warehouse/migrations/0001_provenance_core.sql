-- W3C PROV in tables: entities, activities, agents and the edges between them.
-- Every other table in the warehouse hangs off these ids.

CREATE TABLE agent (
    agent_id   VARCHAR PRIMARY KEY,  -- 'software:aesforge@0.1.0', later 'model:<provider>/<name>@<version>', 'person:<pseudonym>'
    kind       VARCHAR NOT NULL,     -- software | model | person
    name       VARCHAR NOT NULL,
    version    VARCHAR,
    attributes JSON
);

CREATE TABLE activity (
    activity_id   VARCHAR PRIMARY KEY,  -- sha256 of (asset_key, partition_key, run_id): a step retried inside one run is one activity
    asset_key     VARCHAR NOT NULL,
    partition_key VARCHAR,
    run_id        VARCHAR NOT NULL,
    code_version  VARCHAR NOT NULL,
    parameters    JSON NOT NULL,
    started_at    TIMESTAMPTZ NOT NULL,
    ended_at      TIMESTAMPTZ,
    status        VARCHAR NOT NULL,     -- running | success | failed
    summary       JSON                  -- per-step counts and notes (e.g. why the CLIP pass did not run)
);

CREATE TABLE entity (
    entity_id      VARCHAR PRIMARY KEY, -- '<kind>:<sha256 of content or of defining inputs>'
    kind           VARCHAR NOT NULL,
    content_sha256 VARCHAR,
    attributes     JSON,
    recorded_at    TIMESTAMPTZ NOT NULL
);

CREATE TABLE used (
    activity_id VARCHAR NOT NULL,
    entity_id   VARCHAR NOT NULL,
    role        VARCHAR NOT NULL,
    PRIMARY KEY (activity_id, entity_id, role)
);

CREATE TABLE was_generated_by (
    entity_id    VARCHAR PRIMARY KEY,   -- an entity is generated once; a re-run that finds it already there adds nothing
    activity_id  VARCHAR NOT NULL,
    generated_at TIMESTAMPTZ NOT NULL
);

CREATE TABLE was_derived_from (
    entity_id        VARCHAR NOT NULL,
    source_entity_id VARCHAR NOT NULL,
    relation         VARCHAR NOT NULL,  -- fetched_from | decoded_from | normalized_from | ...
    activity_id      VARCHAR NOT NULL,
    PRIMARY KEY (entity_id, source_entity_id, relation)
);

CREATE TABLE was_associated_with (
    activity_id VARCHAR NOT NULL,
    agent_id    VARCHAR NOT NULL,
    role        VARCHAR NOT NULL,
    PRIMARY KEY (activity_id, agent_id, role)
);

-- Exclusions: every input a step turns away keeps a row with a reason code.
-- One row per (entity, stage) holding the current decision; the activity says which run decided it.
CREATE TABLE rejection (
    entity_id   VARCHAR NOT NULL,
    stage       VARCHAR NOT NULL,
    reason_code VARCHAR NOT NULL,
    detail      VARCHAR,
    retryable   BOOLEAN NOT NULL,   -- a transient failure (timeout, 5xx) is tried again by the next run
    activity_id VARCHAR NOT NULL,
    recorded_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (entity_id, stage)
);

-- Results of the Great Expectations suites run as Dagster asset checks.
CREATE TABLE check_result (
    check_name   VARCHAR NOT NULL,
    asset_key    VARCHAR NOT NULL,
    run_id       VARCHAR NOT NULL,
    passed       BOOLEAN NOT NULL,
    severity     VARCHAR NOT NULL,
    details      JSON,
    evaluated_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (check_name, asset_key, run_id)
);

-- Bookkeeping every pipeline shares. These tables were first created by 0002 (the first two) and 0003 (the
-- last two); every warehouse that has those applied has them already, and migrations are tracked by version,
-- so moving them here changes only what a new warehouse runs first. 0007 adds export_file.dataset.

-- Content-hash bookkeeping for inputs on disk (manifests, folder files), so an unchanged input
-- is neither re-read nor re-hashed on the next run.
CREATE TABLE input_file_state (
    path      VARCHAR PRIMARY KEY,
    n_bytes   BIGINT NOT NULL,
    mtime_ns  BIGINT NOT NULL,
    sha256    VARCHAR NOT NULL,
    seen_at   TIMESTAMPTZ NOT NULL
);

-- Digest of the inputs a whole-table step last decided from; equal inputs mean nothing to redo.
CREATE TABLE step_input_state (
    asset_key    VARCHAR PRIMARY KEY,
    input_digest VARCHAR NOT NULL,
    activity_id  VARCHAR NOT NULL
);

-- Fingerprints of settings that must not change silently between runs (e.g. the username salt:
-- a keyed hash of a fixed label, from which the salt cannot be recovered).
CREATE TABLE settings_fingerprint (
    name        VARCHAR PRIMARY KEY,
    fingerprint VARCHAR NOT NULL,
    recorded_at TIMESTAMPTZ NOT NULL
);

-- Files written by export assets, as entities with their content hash.
CREATE TABLE export_file (
    path        VARCHAR PRIMARY KEY,
    entity_id   VARCHAR NOT NULL,
    format      VARCHAR NOT NULL,
    n_rows      BIGINT NOT NULL,
    sha256      VARCHAR NOT NULL,
    activity_id VARCHAR NOT NULL
);
