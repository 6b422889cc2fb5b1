-- r/photocritique reference set: Reddit posts and comments from dumps, the archive API or PRAW,
-- their images in the shared pool, the benchmark's filters, and the ranked references.
--
-- Usernames never enter these tables: authors are stored as salted HMAC hashes (author_hash),
-- and the salt lives only in the configuration or the environment.
-- Scores are snapshots: an archive records a post's score when it scanned it (usually hours to
-- days after posting), so score_observed_at says when each score was true.

-- Submission ids the user asked for (from an RPCD-style id list), or that a subreddit/date window found.
CREATE TABLE reddit_candidate (
    post_id     VARCHAR PRIMARY KEY,
    list_file   VARCHAR,            -- NULL when found through a subreddit/date window
    line_no     INTEGER,
    activity_id VARCHAR NOT NULL,
    recorded_at TIMESTAMPTZ NOT NULL
);

-- How far each dump file has been scanned for a given target set, so a crash resumes mid-file
-- and a finished file is not read again for the same targets.
CREATE TABLE reddit_dump_scan (
    scan_key      VARCHAR PRIMARY KEY,  -- digest of (file fingerprint, scope, target digest)
    locator       VARCHAR NOT NULL,
    scope         VARCHAR NOT NULL,     -- submissions | comments
    target_digest VARCHAR NOT NULL,
    status        VARCHAR NOT NULL,     -- running | complete
    resume_offset BIGINT NOT NULL,      -- uncompressed offset of the last committed line; a resumed scan starts there and skips it
    lines_matched BIGINT NOT NULL,
    problems      BIGINT NOT NULL,
    activity_id   VARCHAR NOT NULL,
    updated_at    TIMESTAMPTZ NOT NULL
);

-- Per-post bookkeeping for the HTTP sources: which posts (or whose comment trees) a source has
-- already answered, so a re-run asks again only for what failed.
CREATE TABLE reddit_fetch_done (
    source_kind VARCHAR NOT NULL,      -- archive_api | reddit_api
    scope       VARCHAR NOT NULL,      -- submissions | comments
    post_id     VARCHAR NOT NULL,
    activity_id VARCHAR NOT NULL,
    PRIMARY KEY (source_kind, scope, post_id)
);

-- Everything a source could not deliver: malformed or truncated dump lines, missing fields,
-- HTTP failures, ids never found. The run goes on; these rows explain what is missing.
CREATE TABLE reddit_source_problem (
    problem_id  VARCHAR PRIMARY KEY,
    source_kind VARCHAR NOT NULL,
    locator     VARCHAR NOT NULL,
    line_no     BIGINT,
    byte_offset BIGINT,
    scope       VARCHAR NOT NULL,      -- candidates | submissions | comments
    reason_code VARCHAR NOT NULL,
    detail      VARCHAR,
    item_id     VARCHAR,
    activity_id VARCHAR NOT NULL,
    recorded_at TIMESTAMPTZ NOT NULL
);

-- Every copy of a post any source returned, normalized, with where it was read.
CREATE TABLE reddit_post_observation (
    observation_id VARCHAR PRIMARY KEY,
    post_id        VARCHAR NOT NULL,
    entity_id      VARCHAR NOT NULL,   -- reddit_post:<digest of the normalized content>
    source_kind    VARCHAR NOT NULL,   -- dump | archive_api | reddit_api
    source_locator VARCHAR NOT NULL,   -- dump file, or the API endpoint requested
    line_no        BIGINT,
    byte_offset    BIGINT,
    retrieved_at   DOUBLE,             -- epoch seconds; NULL when the source does not say
    record         JSON NOT NULL,      -- the normalized post (no usernames)
    activity_id    VARCHAR NOT NULL
);

CREATE TABLE reddit_comment_observation (
    observation_id VARCHAR PRIMARY KEY,
    comment_id     VARCHAR NOT NULL,
    post_id        VARCHAR NOT NULL,
    entity_id      VARCHAR NOT NULL,
    source_kind    VARCHAR NOT NULL,
    source_locator VARCHAR NOT NULL,
    line_no        BIGINT,
    byte_offset    BIGINT,
    retrieved_at   DOUBLE,
    record         JSON NOT NULL,
    activity_id    VARCHAR NOT NULL
);

-- Posts and comments whose observations changed since their last merge (see assets/reddit_ingest.py).
CREATE TABLE reddit_merge_queue (
    scope   VARCHAR NOT NULL,            -- submissions | comments
    item_id VARCHAR NOT NULL,
    PRIMARY KEY (scope, item_id)
);

-- The merged post: of all observations, the latest retrieval (ties: source kind, locator, offset).
CREATE TABLE reddit_post (
    post_id           VARCHAR PRIMARY KEY,
    entity_id         VARCHAR NOT NULL,
    observation_id    VARCHAR NOT NULL,
    subreddit         VARCHAR,
    author_hash       VARCHAR,
    title             VARCHAR NOT NULL,
    body              VARCHAR NOT NULL,
    created_utc       BIGINT NOT NULL,
    score             INTEGER,
    score_observed_at DOUBLE,
    num_comments      INTEGER,
    permalink         VARCHAR NOT NULL,
    url               VARCHAR,
    removed_state     VARCHAR,            -- deleted | removed | NULL
    crosspost_parent  VARCHAR,
    source_kind       VARCHAR NOT NULL,   -- where the winning copy was read: dump | archive_api | reddit_api
    source_locator    VARCHAR NOT NULL,   -- the dump file, or the API endpoint
    source_line_no    BIGINT,             -- line and uncompressed byte offset in the dump (NULL for APIs)
    source_byte_offset BIGINT,
    n_observations    INTEGER NOT NULL,
    record            JSON NOT NULL,
    activity_id       VARCHAR NOT NULL
);

CREATE TABLE reddit_comment (
    comment_id        VARCHAR PRIMARY KEY,
    post_id           VARCHAR NOT NULL,
    entity_id         VARCHAR NOT NULL,
    observation_id    VARCHAR NOT NULL,
    parent_id         VARCHAR NOT NULL,
    author_hash       VARCHAR,
    author_is_bot     BOOLEAN NOT NULL,
    body              VARCHAR NOT NULL,
    score             INTEGER,
    score_observed_at DOUBLE,
    created_utc       BIGINT NOT NULL,
    distinguished     VARCHAR,
    stickied          BOOLEAN NOT NULL,
    removed_state     VARCHAR,
    source_kind       VARCHAR NOT NULL,   -- where the winning copy was read: dump | archive_api | reddit_api
    source_locator    VARCHAR NOT NULL,   -- the dump file, or the API endpoint
    source_line_no    BIGINT,             -- line and uncompressed byte offset in the dump (NULL for APIs)
    source_byte_offset BIGINT,
    n_observations    INTEGER NOT NULL,
    record            JSON NOT NULL,
    activity_id       VARCHAR NOT NULL
);

-- Image resolution per post: the ordered candidates (primary first, then fallbacks) and the
-- pool source record each became; or why the post has none.
CREATE TABLE reddit_post_image (
    post_id     VARCHAR NOT NULL,
    position    INTEGER NOT NULL,
    url         VARCHAR NOT NULL,
    method      VARCHAR NOT NULL,         -- direct | gallery | imgur_page | preview | crosspost:<method>
    media_id    VARCHAR,
    width       INTEGER,
    height      INTEGER,
    locator     VARCHAR NOT NULL,         -- what the pool fetches: the URL, a rewritten mirror URL or a local file
    record_id   VARCHAR NOT NULL,         -- the source_record this candidate became
    activity_id VARCHAR NOT NULL,
    PRIMARY KEY (post_id, position)
);

CREATE TABLE reddit_image_resolution (
    post_id        VARCHAR PRIMARY KEY,
    post_entity_id VARCHAR NOT NULL,
    n_candidates  INTEGER NOT NULL,
    problem_code  VARCHAR,                -- no_image | image_unsupported
    detail        VARCHAR,
    skipped       JSON,                   -- [[what, reason], ...] e.g. failed gallery items
    rule_digest   VARCHAR NOT NULL,       -- digest of the resolution settings; a change re-resolves
    activity_id   VARCHAR NOT NULL
);

-- The benchmark's decision for every candidate post and every comment of those posts.
CREATE TABLE photocritique_post_decision (
    post_id          VARCHAR PRIMARY KEY,
    status           VARCHAR NOT NULL,    -- kept | excluded
    reason_code      VARCHAR,             -- NULL when kept
    detail           VARCHAR,
    n_words          INTEGER,
    n_comments       INTEGER NOT NULL,
    n_qualifying     INTEGER NOT NULL,
    post_entity_id   VARCHAR,
    image_record_id  VARCHAR,             -- the post's image candidate that reached the pool
    pool_item_id     VARCHAR,             -- the kept pool item representing it (after de-duplication)
    decision_entity_id VARCHAR NOT NULL,
    activity_id      VARCHAR NOT NULL
);

CREATE TABLE photocritique_comment_decision (
    comment_id  VARCHAR PRIMARY KEY,
    post_id     VARCHAR NOT NULL,
    status      VARCHAR NOT NULL,         -- reference | excluded
    reason_code VARCHAR,
    detail      VARCHAR,
    rank        INTEGER,
    n_words     INTEGER NOT NULL,
    activity_id VARCHAR NOT NULL
);

CREATE TABLE photocritique_reference (
    post_id             VARCHAR NOT NULL,
    rank                INTEGER NOT NULL,
    comment_id          VARCHAR NOT NULL,
    reference_entity_id VARCHAR NOT NULL,
    body                VARCHAR NOT NULL,
    n_words             INTEGER NOT NULL,
    score               INTEGER,
    score_observed_at   DOUBLE,
    author_hash         VARCHAR,
    activity_id         VARCHAR NOT NULL,
    PRIMARY KEY (post_id, rank)
);
