-- Shared image pool: collection -> normalization -> filtering -> de-duplication.

-- One row per provenance record (manifest row or folder file); record_id is content-derived.
CREATE TABLE source_record (
    record_id      VARCHAR PRIMARY KEY,
    source_type    VARCHAR NOT NULL,   -- manifest | folder
    source_name    VARCHAR NOT NULL,   -- the manifest file or folder it came from
    locator        VARCHAR NOT NULL,   -- URL or absolute path of the bytes
    title          VARCHAR,
    creator        VARCHAR,            -- 'unknown' when the source does not say; never inferred
    provider       VARCHAR,
    source_url     VARCHAR,
    license        VARCHAR,
    redistribution VARCHAR,
    domain         VARCHAR,
    extra          JSON,
    activity_id    VARCHAR NOT NULL,
    recorded_at    TIMESTAMPTZ NOT NULL
);

-- Every fetch attempt, successful or not (URL, status, bytes, sha256, duration).
CREATE TABLE fetch_attempt (
    record_id   VARCHAR NOT NULL,
    activity_id VARCHAR NOT NULL,
    attempt     INTEGER NOT NULL,
    url         VARCHAR NOT NULL,
    status_code INTEGER,
    n_bytes     BIGINT NOT NULL,
    sha256      VARCHAR,
    duration_ms DOUBLE NOT NULL,
    error       VARCHAR,
    started_at  TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (record_id, activity_id, attempt)
);

-- Original bytes, content-addressed in the blob store.
CREATE TABLE file_blob (
    sha256     VARCHAR PRIMARY KEY,
    n_bytes    BIGINT NOT NULL,
    media_type VARCHAR,               -- sniffed from magic bytes
    blob_uri   VARCHAR NOT NULL
);

CREATE TABLE record_file (
    record_id   VARCHAR PRIMARY KEY,
    file_sha256 VARCHAR NOT NULL,
    activity_id VARCHAR NOT NULL
);

-- Decoded, EXIF-oriented RGB images; image_id is derived from the decoded pixels, so two files
-- with identical pixels (e.g. PNG and BMP of one picture) are one image.
CREATE TABLE image (
    image_id          VARCHAR PRIMARY KEY,
    pixel_sha256      VARCHAR NOT NULL,
    width             INTEGER NOT NULL,
    height            INTEGER NOT NULL,
    normalized_sha256 VARCHAR NOT NULL,
    normalized_uri    VARCHAR NOT NULL,
    pixel_std         DOUBLE NOT NULL,   -- largest per-channel standard deviation, for the blank / near-uniform filter
    activity_id       VARCHAR NOT NULL
);

CREATE TABLE file_decode (
    file_sha256      VARCHAR PRIMARY KEY,
    image_id         VARCHAR,            -- NULL when the file could not be decoded (see rejection)
    source_format    VARCHAR,
    source_mode      VARCHAR,
    exif_orientation INTEGER,
    activity_id      VARCHAR NOT NULL
);

-- Outcome of the filters for each record that reached an image.
CREATE TABLE pool_candidate (
    record_id   VARCHAR PRIMARY KEY,
    image_id    VARCHAR NOT NULL,
    eligible    BOOLEAN NOT NULL,
    reason_code VARCHAR,                 -- NULL when eligible
    rule_digest VARCHAR NOT NULL,        -- digest of the filter settings that decided it; a settings change re-decides
    activity_id VARCHAR NOT NULL
);

-- Which images each matching pass has already compared against the pool, so a re-run only
-- compares what is new.
CREATE TABLE match_scan (
    image_id    VARCHAR NOT NULL,
    method      VARCHAR NOT NULL,        -- perceptual | clip:<model_key>
    activity_id VARCHAR NOT NULL,
    PRIMARY KEY (image_id, method)
);

-- Perceptual signature per image: hashes as signed 64-bit integers (the crop-window, rotation and
-- de-rotated hashes packed big-endian in view_hashes), and the small verification thumbnails.
-- Layout: assets/lib/perceptual.py (PerceptualSignature.to_record).
CREATE TABLE image_signature (
    image_id          VARCHAR PRIMARY KEY,
    signature_version INTEGER NOT NULL,
    phash             BIGINT NOT NULL,
    dhash             BIGINT NOT NULL,
    phash_mirror      BIGINT NOT NULL,
    view_hashes       BLOB NOT NULL,
    aspect_milli      INTEGER NOT NULL,
    thumb_luma        BLOB NOT NULL,
    thumb_chroma      BLOB NOT NULL,
    activity_id       VARCHAR NOT NULL
);

CREATE TABLE clip_embedding (
    image_id    VARCHAR NOT NULL,
    model_key   VARCHAR NOT NULL,
    embedding   FLOAT[] NOT NULL,        -- L2-normalised
    activity_id VARCHAR NOT NULL,
    PRIMARY KEY (image_id, model_key)
);

-- Pairwise near-duplicate evidence between two distinct images (image_a < image_b).
CREATE TABLE duplicate_match (
    image_a     VARCHAR NOT NULL,
    image_b     VARCHAR NOT NULL,
    method      VARCHAR NOT NULL,        -- perceptual:<how> | clip:<model_key>
    distance    DOUBLE NOT NULL,         -- Hamming bits for perceptual, 1 - cosine similarity for clip
    score       DOUBLE,
    model_key   VARCHAR,
    activity_id VARCHAR NOT NULL,
    PRIMARY KEY (image_a, image_b, method)
);

-- The current pool: every eligible record, its duplicate cluster and whether it is the one kept.
CREATE TABLE pool_member (
    record_id                VARCHAR PRIMARY KEY,
    pool_item_id             VARCHAR,            -- kept records only: the pool item entity, for provenance()
    image_id                 VARCHAR NOT NULL,
    cluster_id               VARCHAR NOT NULL,
    cluster_size             INTEGER NOT NULL,
    is_representative        BOOLEAN NOT NULL,
    representative_record_id VARCHAR NOT NULL,
    matched_image_id         VARCHAR,    -- the neighbour through which a dropped record joined its cluster
    match_method             VARCHAR,    -- exact_bytes | exact_pixels | perceptual:<how> | clip:<model_key>
    match_distance           DOUBLE,
    domain                   VARCHAR NOT NULL,
    activity_id              VARCHAR NOT NULL
);
