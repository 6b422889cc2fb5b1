-- Items whose processing raised an unexpected exception (reason internal_error). The item loop skips an
-- item listed here while its input digest and the stage's code version are unchanged, so one bad item is
-- not retried (and does not fail) on every run; a changed input or new code tries it again.
CREATE TABLE item_quarantine (
    stage        VARCHAR NOT NULL,
    item_key     VARCHAR NOT NULL,      -- the entity the outcome concerns (also rejection.entity_id)
    asset_key    VARCHAR NOT NULL,
    locator      VARCHAR,               -- where the item came from: file#line, URL, id
    input_digest VARCHAR NOT NULL,
    code_version VARCHAR NOT NULL,
    error_type   VARCHAR NOT NULL,
    detail       VARCHAR NOT NULL,
    traceback    VARCHAR,               -- the frames (module:function:line), innermost last
    activity_id  VARCHAR NOT NULL,
    recorded_at  TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (stage, item_key)
);
