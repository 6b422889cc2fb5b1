-- AesEval-style graphic designs: ingested Crello records, seeded JSON-level perturbations with a full
-- operation log, renders, labels (human majority, model or heuristic), splits by base design and the
-- three question formats.

-- Every Crello record read, kept or rejected (the locator says file and row).
CREATE TABLE design_source_read (
    locator      VARCHAR PRIMARY KEY,     -- path, or path#row=N for Parquet
    file_sha256  VARCHAR NOT NULL,
    design_id    VARCHAR,                 -- the design entity when accepted
    reason_code  VARCHAR,                 -- why not, when rejected
    detail       VARCHAR,
    activity_id  VARCHAR NOT NULL
);

-- A design record in canonical form (assets/lib/design_model.py), original or perturbed.
CREATE TABLE design (
    design_id        VARCHAR PRIMARY KEY,  -- design:<sha256 of the canonical JSON>
    source_design_id VARCHAR NOT NULL,     -- the dataset's id (perturbed: the base's id plus a suffix)
    base_design_id   VARCHAR NOT NULL,     -- itself for an original; the original for a perturbed one
    is_perturbed     BOOLEAN NOT NULL,
    source_format    VARCHAR NOT NULL,
    canvas_width     INTEGER NOT NULL,
    canvas_height    INTEGER NOT NULL,
    n_elements       INTEGER NOT NULL,
    record           JSON NOT NULL,
    activity_id      VARCHAR NOT NULL
);

-- Which perturbed variant was made from which base with which seed and settings (resume key).
CREATE TABLE design_variant (
    base_design_id    VARCHAR NOT NULL,
    variant           INTEGER NOT NULL,
    settings_digest   VARCHAR NOT NULL,
    seed              BIGINT NOT NULL,
    design_id         VARCHAR,             -- NULL when no operation applied (reason in detail)
    detail            VARCHAR,
    activity_id       VARCHAR NOT NULL,
    PRIMARY KEY (base_design_id, variant, settings_digest)
);

-- The perturbation log: one row per operation on a perturbed design.
CREATE TABLE design_perturbation_op (
    design_id     VARCHAR NOT NULL,
    op_index      INTEGER NOT NULL,
    element_index INTEGER NOT NULL,
    element_id    VARCHAR NOT NULL,
    op            VARCHAR NOT NULL,
    params        JSON NOT NULL,
    box_before    DOUBLE[] NOT NULL,       -- left, top, width, height
    box_after     DOUBLE[] NOT NULL,
    before_values JSON NOT NULL,
    after_values  JSON NOT NULL,
    PRIMARY KEY (design_id, op_index)
);

CREATE TABLE design_render (
    design_id        VARCHAR NOT NULL,
    renderer_version VARCHAR NOT NULL,
    png_sha256       VARCHAR NOT NULL,
    render_id        VARCHAR NOT NULL,     -- entity
    width            INTEGER NOT NULL,
    height           INTEGER NOT NULL,
    fonts            JSON NOT NULL,        -- per text element: font file and which mapping rule chose it
    warnings         JSON NOT NULL,
    preview_mean_abs_diff DOUBLE,          -- against the dataset's own preview, when it ships one
    activity_id      VARCHAR NOT NULL,
    PRIMARY KEY (design_id, renderer_version)
);
