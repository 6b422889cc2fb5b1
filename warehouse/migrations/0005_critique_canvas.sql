-- CritiqueCanvas: per pool image, a plan (planner), a six-pair critique dialogue (annotator) and a
-- verdict on each pair (verifier). One group per (pool item, chain configuration).

CREATE TABLE critique_group (
    group_id        VARCHAR PRIMARY KEY,   -- conversation group: digest of pool item, chain config and dialogue
    pool_item_id    VARCHAR NOT NULL,
    image_id        VARCHAR NOT NULL,
    domain          VARCHAR NOT NULL,
    chain_digest    VARCHAR NOT NULL,      -- providers, models, parameters and template versions of the three roles
    status          VARCHAR NOT NULL,      -- complete | rejected | failed
    reason_code     VARCHAR,               -- why not complete (a schema reason, a transport status)
    detail          VARCHAR,
    plan            JSON,                  -- [{dimension, reason}, ...]
    planner_calls   JSON,                  -- model_call ids (first answer, repair)
    annotator_calls JSON,
    verifier_calls  JSON,
    n_accepted      INTEGER,
    activity_id     VARCHAR NOT NULL,
    decided_at      TIMESTAMPTZ NOT NULL
);

-- Which (pool item, chain configuration) has been attempted, and with what result; a failed
-- transport attempt stays retryable, a rejected answer does not.
CREATE TABLE critique_attempt (
    pool_item_id VARCHAR NOT NULL,
    chain_digest VARCHAR NOT NULL,
    group_id     VARCHAR,                  -- set when a dialogue was produced
    status       VARCHAR NOT NULL,         -- complete | rejected | failed
    retryable    BOOLEAN NOT NULL,
    activity_id  VARCHAR NOT NULL,
    PRIMARY KEY (pool_item_id, chain_digest)
);

CREATE TABLE critique_pair (
    pair_id                 VARCHAR PRIMARY KEY,
    group_id                VARCHAR NOT NULL,
    pool_item_id            VARCHAR NOT NULL,
    domain                  VARCHAR NOT NULL,
    pair_index              INTEGER NOT NULL,  -- 1..6 in dialogue order
    dimension               VARCHAR,
    improvement             BOOLEAN NOT NULL,
    question                VARCHAR NOT NULL,
    answer                  VARCHAR NOT NULL,
    instruction_consistency BOOLEAN NOT NULL,
    visual_grounding        BOOLEAN NOT NULL,
    response_quality        BOOLEAN NOT NULL,
    blocking_issues         JSON NOT NULL,
    non_blocking_issues     JSON NOT NULL,
    accepted                BOOLEAN NOT NULL,
    activity_id             VARCHAR NOT NULL
);
