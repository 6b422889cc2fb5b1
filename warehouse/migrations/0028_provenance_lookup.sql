-- `aesforge provenance` walks the lineage by key (warehouse/provenance_walk.py): per depth, the derivations of the
-- entities found so far, then their generation and use edges. DuckDB answers `WHERE col IN (...)` from a
-- single-column index, never from the prefix of a compound primary key, so each key the walk looks up by gets one.
-- (was_generated_by.entity_id, entity, activity and source_record are looked up by their own single-column keys.)
CREATE INDEX was_derived_from_entity ON was_derived_from (entity_id);
CREATE INDEX used_entity ON used (entity_id);
CREATE INDEX was_associated_with_activity ON was_associated_with (activity_id);
