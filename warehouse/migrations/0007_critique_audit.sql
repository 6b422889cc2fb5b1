-- CritiqueCanvas human audit: per round, a frozen domain-stratified sample of accepted pairs, the
-- reviewer sheets read back, every review with the sheet row it came from, and the figures.

CREATE TABLE critique_audit_round (
    audit_round     VARCHAR PRIMARY KEY,
    sample_size     INTEGER NOT NULL,       -- as configured; n_sampled is what the pairs allowed
    seed            INTEGER NOT NULL,
    allocation      VARCHAR NOT NULL,       -- proportional | equal (across domains)
    n_candidates    BIGINT NOT NULL,        -- accepted pairs the sample was drawn from
    n_sampled       INTEGER NOT NULL,
    sheet_path      VARCHAR NOT NULL,       -- the blank review sheet handed to reviewers
    sheet_entity_id VARCHAR NOT NULL,
    activity_id     VARCHAR NOT NULL,
    drawn_at        TIMESTAMPTZ NOT NULL
);

CREATE TABLE critique_audit_sample (
    audit_round VARCHAR NOT NULL,
    pair_id     VARCHAR NOT NULL,
    domain      VARCHAR NOT NULL,
    position    INTEGER NOT NULL,           -- row order in the sheet
    PRIMARY KEY (audit_round, pair_id)
);

-- Every returned sheet file seen, as read: ingested, or rejected with the rows at fault.
CREATE TABLE critique_audit_sheet (
    path        VARCHAR PRIMARY KEY,
    sha256      VARCHAR NOT NULL,
    entity_id   VARCHAR NOT NULL,
    status      VARCHAR NOT NULL,           -- ingested | rejected
    reason_code VARCHAR,
    detail      VARCHAR,
    n_reviews   INTEGER NOT NULL,
    n_blank     INTEGER NOT NULL,           -- rows not reviewed yet
    activity_id VARCHAR NOT NULL,
    read_at     TIMESTAMPTZ NOT NULL
);

CREATE TABLE critique_audit_review (
    audit_round         VARCHAR NOT NULL,
    pair_id             VARCHAR NOT NULL,
    reviewer            VARCHAR NOT NULL,
    accept              BOOLEAN NOT NULL,
    blocking_issues     JSON NOT NULL,
    non_blocking_issues JSON NOT NULL,
    comment             VARCHAR,
    sheet_path          VARCHAR NOT NULL,
    sheet_sha256        VARCHAR NOT NULL,
    sheet_row           INTEGER NOT NULL,   -- as a spreadsheet numbers it (header = 1)
    activity_id         VARCHAR NOT NULL,
    PRIMARY KEY (audit_round, pair_id, reviewer)
);

-- Per sampled pair: the reviewers' verdict under the configured rule (NULL: too few reviews yet).
CREATE TABLE critique_audit_decision (
    audit_round      VARCHAR NOT NULL,
    pair_id          VARCHAR NOT NULL,
    domain           VARCHAR NOT NULL,
    n_reviews        INTEGER NOT NULL,
    n_accept         INTEGER NOT NULL,
    n_blocking_flags INTEGER NOT NULL,
    accepted         BOOLEAN,
    acceptance_rule  VARCHAR NOT NULL,
    activity_id      VARCHAR NOT NULL,
    PRIMARY KEY (audit_round, pair_id)
);

-- Per round and scope ('all' or a domain); rates are over decided pairs, NULL when none is decided.
CREATE TABLE critique_audit_figure (
    audit_round        VARCHAR NOT NULL,
    scope              VARCHAR NOT NULL,
    acceptance_rule    VARCHAR NOT NULL,
    min_reviewers      INTEGER NOT NULL,
    n_sampled          INTEGER NOT NULL,
    n_decided          INTEGER NOT NULL,
    n_reviews          INTEGER NOT NULL,
    n_reviewers        INTEGER NOT NULL,
    n_accepted         INTEGER NOT NULL,
    n_no_blocking      INTEGER NOT NULL,
    acceptance_rate    DOUBLE,
    no_blocking_rate   DOUBLE,             -- no reviewer flagged a blocking issue (the paper's "raw agreement")
    non_blocking_rate  DOUBLE,
    pairwise_agreement DOUBLE,             -- same decision, over reviewer pairs on pairs reviewed twice or more
    report_entity_id   VARCHAR NOT NULL,
    activity_id        VARCHAR NOT NULL,
    PRIMARY KEY (audit_round, scope)
);

-- Which dataset an exported file belongs to (photocritique, critique_canvas, critique_audit).
ALTER TABLE export_file ADD COLUMN dataset VARCHAR;
