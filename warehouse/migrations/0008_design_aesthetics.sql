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
    element_type  VARCHAR NOT NULL,
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
    png_uri          VARCHAR NOT NULL,
    render_id        VARCHAR NOT NULL,     -- entity
    width            INTEGER NOT NULL,
    height           INTEGER NOT NULL,
    fonts            JSON NOT NULL,        -- per text element: font file and which mapping rule chose it
    warnings         JSON NOT NULL,
    preview_mean_abs_diff DOUBLE,          -- against the dataset's own preview, when it ships one
    activity_id      VARCHAR NOT NULL,
    PRIMARY KEY (design_id, renderer_version)
);

-- Human review: the items (a perturbed design's render × an indicator its operations may affect), every
-- returned sheet (ingested, or rejected with the rows at fault) and every vote with its sheet row.
CREATE TABLE design_review_item (
    item_id       VARCHAR PRIMARY KEY,
    design_id     VARCHAR NOT NULL,
    indicator     VARCHAR NOT NULL,
    definition    VARCHAR NOT NULL,
    image         VARCHAR NOT NULL,        -- local path (or URI) of the render reviewers look at
    activity_id   VARCHAR NOT NULL
);

CREATE TABLE design_review_sheet (
    path        VARCHAR PRIMARY KEY,
    sha256      VARCHAR NOT NULL,
    entity_id   VARCHAR NOT NULL,
    status      VARCHAR NOT NULL,           -- ingested | rejected
    reason_code VARCHAR,
    detail      VARCHAR,
    n_votes     INTEGER NOT NULL,
    n_blank     INTEGER NOT NULL,
    activity_id VARCHAR NOT NULL
);

CREATE TABLE design_review_vote (
    item_id      VARCHAR NOT NULL,
    annotator    VARCHAR NOT NULL,
    review_round VARCHAR NOT NULL,
    flawed       BOOLEAN NOT NULL,
    comment      VARCHAR,
    sheet_path   VARCHAR NOT NULL,
    sheet_row    INTEGER NOT NULL,
    activity_id  VARCHAR NOT NULL,
    PRIMARY KEY (item_id, annotator)
);

-- Per indicator: agreement between annotators on items with two or more votes.
CREATE TABLE design_review_agreement (
    indicator               VARCHAR PRIMARY KEY,
    n_items                 INTEGER NOT NULL,
    n_pairs                 INTEGER NOT NULL,
    mean_pairwise_agreement DOUBLE,
    fleiss_kappa            DOUBLE,
    activity_id             VARCHAR NOT NULL
);

-- The label of every review item: the human majority when resolved, else the offline heuristic judge.
CREATE TABLE design_label (
    design_id         VARCHAR NOT NULL,
    indicator         VARCHAR NOT NULL,
    flawed            BOOLEAN NOT NULL,
    source            VARCHAR NOT NULL,     -- human | heuristic
    rule              VARCHAR NOT NULL,     -- majority / tie_breaker_… / heuristic thresholds digest
    n_votes           INTEGER NOT NULL,
    answer_element_id VARCHAR NOT NULL,     -- the perturbed element the indicator's question points at
    evidence          JSON,
    activity_id       VARCHAR NOT NULL,
    PRIMARY KEY (design_id, indicator)
);

-- Benchmark / train by base design: every variant of a base design goes where its base goes.
CREATE TABLE design_split (
    base_design_id VARCHAR PRIMARY KEY,
    split          VARCHAR NOT NULL,        -- benchmark | train
    seed           BIGINT NOT NULL,
    activity_id    VARCHAR NOT NULL
);

CREATE TABLE design_question (
    question_id    VARCHAR PRIMARY KEY,
    design_id      VARCHAR NOT NULL,
    base_design_id VARCHAR NOT NULL,
    indicator      VARCHAR NOT NULL,
    format         VARCHAR NOT NULL,        -- aesthetic_judgment | region_selection | precise_localisation
    split          VARCHAR NOT NULL,
    prompt         VARCHAR NOT NULL,
    choices        JSON NOT NULL,
    answer         JSON,                    -- "yes"/"no", a box [x1, y1, x2, y2], or null (None)
    answer_index   INTEGER,
    judged_flawed  BOOLEAN NOT NULL,
    label_source   VARCHAR NOT NULL,
    canvas_width   INTEGER NOT NULL,
    canvas_height  INTEGER NOT NULL,
    settings_key   VARCHAR NOT NULL,        -- digest of the question seed and box units
    activity_id    VARCHAR NOT NULL
);

-- Counterfactual edits (AesCanvas): a source pool image with one decisive cue changed by an image-edit
-- model. Always synthetic diagnostics, never pool members, so no natural-image export can hold one.
CREATE TABLE counterfactual_edit (
    record_id       VARCHAR PRIMARY KEY,     -- counterfactual_edit:<digest of source, spec, model, output>
    spec_key        VARCHAR NOT NULL,        -- source + cue + instruction + labels + model: done once per key
    source_id       VARCHAR NOT NULL,        -- the pool item edited
    source_sha256   VARCHAR NOT NULL,
    decisive_cue    VARCHAR NOT NULL,
    instruction     VARCHAR NOT NULL,
    original_label  VARCHAR NOT NULL,
    intended_label  VARCHAR NOT NULL,
    prompt          VARCHAR NOT NULL,
    prompt_version  VARCHAR NOT NULL,
    provider        VARCHAR NOT NULL,
    model           VARCHAR NOT NULL,
    provider_model  VARCHAR,
    seed            BIGINT,
    output_sha256   VARCHAR NOT NULL,
    output_mime     VARCHAR NOT NULL,
    output_uri      VARCHAR NOT NULL,
    synthetic       BOOLEAN NOT NULL,        -- always TRUE
    kind            VARCHAR NOT NULL,        -- counterfactual_edit
    manual_check    VARCHAR NOT NULL,        -- pending | approved | rejected
    checked_by      VARCHAR,
    check_note      VARCHAR,
    history         JSON NOT NULL,
    attempts        INTEGER NOT NULL,
    latency_ms      DOUBLE NOT NULL,
    activity_id     VARCHAR NOT NULL
);

-- Indicator-grounded reasoning paths for the training set: steps that cite element boxes, each cited box
-- validated against the design (a path citing a box that is not an element is rejected, with its reason).
CREATE TABLE design_reasoning (
    design_id    VARCHAR NOT NULL,
    indicator    VARCHAR NOT NULL,
    task         VARCHAR NOT NULL,          -- judgment
    verdict      VARCHAR NOT NULL,          -- flawed | good (the label the path explains)
    steps        JSON NOT NULL,             -- [{claim, element_box, element_id}]
    cited        VARCHAR[] NOT NULL,        -- element ids the steps cite
    model        VARCHAR NOT NULL,          -- provider/model that wrote it
    calls        JSON NOT NULL,             -- model_call ids
    activity_id  VARCHAR NOT NULL,
    PRIMARY KEY (design_id, indicator, task, verdict)
);
