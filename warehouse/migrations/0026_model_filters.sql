-- The pool's model-based filters (issue 20): a score head over each image's CLIP embedding (an aesthetic predictor,
-- a content-safety classifier) and the verdict on every eligible record it judged.
CREATE TABLE model_filter_verdict (
    record_id    VARCHAR NOT NULL,
    filter_name  VARCHAR NOT NULL,        -- the configured filter's name (pool.model_filters[].name)
    image_id     VARCHAR NOT NULL,
    score        DOUBLE,                  -- the head's output; NULL when the image has no embedding to score
    passed       BOOLEAN NOT NULL,
    rule_digest  VARCHAR NOT NULL,        -- digest of the filter's settings, its weights and the CLIP model
    activity_id  VARCHAR NOT NULL,
    PRIMARY KEY (record_id, filter_name)
);
