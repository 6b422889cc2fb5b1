-- Evaluation judges (assets/evaluation/judging.py): a model judge's verdicts on a run's predictions (photocritique:
-- pairwise preference against the top-ranked human critique, asked in both orders, and 1-5 substantive
-- similarity; CritiqueCanvas: 1-5 critique quality per criterion), and the human similarity study (the pairs put
-- on the blank sheet, the ratings read back from the returned sheets). Every judgement is an entity derived from
-- the prediction it judged, its benchmark item and its model call(s); raters are stored only as keyed hashes.

CREATE TABLE evaluation_judgement (
    run_key     VARCHAR NOT NULL,          -- the run whose prediction was judged (evaluation_run)
    item_id     VARCHAR NOT NULL,          -- the benchmark item (release row id)
    sample      INTEGER NOT NULL,          -- the prediction's sample index for the item
    metric      VARCHAR NOT NULL,          -- judge_preference | judge_similarity | judge_quality | judge_<criterion>
    judge       VARCHAR NOT NULL,          -- provider/model that judged
    position    VARCHAR NOT NULL,          -- model_first (model critique shown as A) | reference_first | both (the two orders combined) | alone (one critique shown)
    template    VARCHAR NOT NULL,          -- the judge prompt's template id@version
    outcome     VARCHAR,                   -- preference: model | reference | tie (both: also inconsistent | unparsed); null for ratings
    value       DOUBLE,                    -- model preferred 1, tie 0.5, reference 0; or the 1-5 rating; null when excluded
    reason      VARCHAR,                   -- why value is null: the answer's problem code, or inconsistent (the preference followed the position)
    detail      VARCHAR,                   -- where the value came from in the answer, or what was wrong with it
    rationale   VARCHAR,                   -- the judge's stated reason, when its answer gave one
    call_id     VARCHAR,                   -- the model call whose answer this row reads (null for the combined row)
    entity_id   VARCHAR NOT NULL,          -- evaluation_judgement:<digest>; the rows of one judgement share it
    activity_id VARCHAR NOT NULL,
    PRIMARY KEY (run_key, item_id, sample, metric, judge, position)
);

CREATE TABLE evaluation_similarity_pair (
    row_id        VARCHAR PRIMARY KEY,     -- the sheet's row id: sim-<digest of run, item, sample, prediction, reference>
    benchmark     VARCHAR NOT NULL,
    run_key       VARCHAR NOT NULL,        -- the model critique's run, item and sample (evaluation_prediction)
    item_id       VARCHAR NOT NULL,
    sample        INTEGER NOT NULL,
    prediction_id VARCHAR NOT NULL,        -- the model critique's entity
    reference_rank INTEGER NOT NULL,       -- which human critique it is paired with (1: the top-ranked)
    model_shown_as VARCHAR NOT NULL,       -- A | B: the model critique's column on the sheet (the raters are not told)
    sheet         VARCHAR NOT NULL,        -- the blank sheet's name (relative to the project) that first listed the pair
    activity_id   VARCHAR NOT NULL
);

CREATE TABLE evaluation_similarity_rating (
    row_id      VARCHAR NOT NULL,          -- evaluation_similarity_pair.row_id
    rater       VARCHAR NOT NULL,          -- rater-<keyed hash of the name on the sheet>; the name is never stored
    benchmark   VARCHAR NOT NULL,
    rating      INTEGER NOT NULL,          -- 1-5 substantive similarity
    sheet       VARCHAR NOT NULL,          -- the returned sheet's name (relative to the project)
    line        INTEGER NOT NULL,          -- the row's line in that sheet
    entity_id   VARCHAR NOT NULL,          -- similarity_rating:<digest of row, rater, rating>
    activity_id VARCHAR NOT NULL,
    PRIMARY KEY (row_id, rater)
);
