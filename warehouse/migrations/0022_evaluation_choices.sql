-- Evaluation of the closed-answer benchmarks (assets/evaluation: ContextCanvas, its counterfactual pairs, AesEval, the
-- poem benchmark's judges): how each answer was read, the significance tests between runs, and the grounding audit
-- of correct ContextCanvas answers (EGA and the Unsupported rate), read back from returned sheets.

-- Every answer of a closed-answer run as the scorer read it: the option (or box) it names, or why none could be read
-- (unreadable answers count as wrong and are listed in the report from here).
CREATE TABLE evaluation_answer (
    run_key     VARCHAR NOT NULL,
    item_id     VARCHAR NOT NULL,
    sample      INTEGER NOT NULL,          -- counterfactual pairs: 0 the original, 1 the edit
    answer      VARCHAR,                   -- the option id, 'None', or a box as [l, t, r, b] in canvas pixels; null: unreadable
    gold        VARCHAR,
    correct     BOOLEAN,                   -- null where the format scores overlap (a localisation box: see evaluation_score iou)
    problem     VARCHAR,                   -- unparsed | ambiguous | invalid_box | missing (no answer stored)
    detail      VARCHAR,
    activity_id VARCHAR NOT NULL,
    PRIMARY KEY (run_key, item_id, sample)
);

-- Significance between two runs per metric: McNemar's exact test (binary metrics) with the Bonferroni-adjusted p
-- over every pair of the benchmark's runs compared on that metric, and the paired t-test (continuous metrics).
ALTER TABLE evaluation_comparison ADD COLUMN mcnemar_p_adjusted DOUBLE;
ALTER TABLE evaluation_comparison ADD COLUMN t_statistic DOUBLE;
ALTER TABLE evaluation_comparison ADD COLUMN t_p DOUBLE;

-- The grounding audit (AesCanvas S2.3.3): each correct answer with its stated reason put on a blank sheet, and the
-- raters' verdicts read back: does the reason name the decisive visible cue (grounded), and link it correctly to the
-- stated use (context_link)? Raters are stored only as keyed hashes.
CREATE TABLE evaluation_grounding_row (
    row_id      VARCHAR PRIMARY KEY,       -- ega-<digest of run, item, sample, answer text>
    benchmark   VARCHAR NOT NULL,
    run_key     VARCHAR NOT NULL,
    item_id     VARCHAR NOT NULL,
    sample      INTEGER NOT NULL,
    prediction_id VARCHAR NOT NULL,
    sheet       VARCHAR NOT NULL,          -- the blank sheet that first listed the row (relative to the project)
    activity_id VARCHAR NOT NULL
);

CREATE TABLE evaluation_grounding_rating (
    row_id       VARCHAR NOT NULL,         -- evaluation_grounding_row.row_id
    rater        VARCHAR NOT NULL,         -- keyed hash of the rater's name
    grounded     BOOLEAN NOT NULL,
    context_link BOOLEAN NOT NULL,
    sheet        VARCHAR NOT NULL,         -- the returned sheet it was read from, and its line
    line         INTEGER NOT NULL,
    entity_id    VARCHAR NOT NULL,
    activity_id  VARCHAR NOT NULL,
    PRIMARY KEY (row_id, rater)
);
