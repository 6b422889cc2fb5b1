-- Model calls are looked up by cache key for every request (the cache, the claim, the next call's id): an index
-- makes that a point look-up instead of a scan of the whole call log.
CREATE INDEX model_call_cache_key ON model_call (cache_key);
