-- Every request sent to a model provider (OpenAI, Gemini, an OpenAI-compatible server, or the offline
-- heuristic), successful or not. A call with the same cache_key (provider, model, parameters, prompt,
-- image) that succeeded before is answered from here without a request. API keys are never stored.
CREATE TABLE model_call (
    call_id          VARCHAR PRIMARY KEY,
    cache_key        VARCHAR NOT NULL,
    provider         VARCHAR NOT NULL,     -- openai | gemini | heuristic
    model            VARCHAR NOT NULL,     -- as configured
    provider_model   VARCHAR,              -- as the server reported it
    role             VARCHAR NOT NULL,     -- planner | annotator | verifier | repair
    template_id      VARCHAR NOT NULL,
    template_version VARCHAR NOT NULL,
    prompt_sha256    VARCHAR NOT NULL,     -- of the rendered system and user text
    image_sha256     VARCHAR,              -- of the bytes sent
    params           JSON NOT NULL,        -- temperature, max_output_tokens, schema name
    status           VARCHAR NOT NULL,     -- ok | http_error | timeout | connection_error | invalid_response
    error            VARCHAR,
    response_text    VARCHAR,
    input_tokens     BIGINT,
    output_tokens    BIGINT,
    latency_ms       DOUBLE NOT NULL,
    attempts         INTEGER NOT NULL,     -- transport attempts, retries included
    repair_of        VARCHAR,              -- the call whose invalid answer this one repairs
    item_id          VARCHAR,              -- the entity the call was about (e.g. a pool item)
    activity_id      VARCHAR NOT NULL,
    called_at        TIMESTAMPTZ NOT NULL
);
