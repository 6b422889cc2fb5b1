-- provenance(item): where did this item come from?
-- One row per step on the way to `item` (an entity id such as 'pool_item:…' or 'image:…'):
-- every ancestor entity (walking was_derived_from back to the source records), the activity that
-- generated it or used it (asset, Dagster run, code version, parameters), the agents of that
-- activity (aesforge's version; model calls appear as model agents), and, on source-record rows,
-- the source URL, license, creator, title and provider.
--   SELECT * FROM provenance('pool_item:…') ORDER BY depth DESC, started_at;
CREATE OR REPLACE MACRO provenance(item) AS TABLE
WITH RECURSIVE chain(entity_id, depth, relation) AS (
    SELECT item, 0, CAST(NULL AS VARCHAR)
    UNION
    SELECT d.source_entity_id, c.depth + 1, d.relation
    FROM chain c JOIN was_derived_from d ON d.entity_id = c.entity_id
    WHERE c.depth < 32
),
ancestors AS (  -- each ancestor once, at its shortest distance from the item
    SELECT entity_id, min(depth) AS depth, arg_min(relation, depth) AS relation FROM chain GROUP BY entity_id
),
steps AS (
    SELECT c.depth, c.entity_id, c.relation,
           CASE WHEN g.activity_id IS NULL THEN 'external input' ELSE 'generated' END AS link, g.activity_id
    FROM ancestors c LEFT JOIN was_generated_by g ON g.entity_id = c.entity_id
    UNION ALL
    SELECT c.depth, c.entity_id, c.relation, 'used as ' || u.role AS link, u.activity_id
    FROM ancestors c JOIN used u ON u.entity_id = c.entity_id
)
SELECT
    s.depth,
    s.entity_id,
    e.kind AS entity_kind,
    s.relation AS derived_as,
    s.link,
    a.asset_key,
    a.run_id,
    a.code_version,
    a.parameters,
    a.status,
    a.started_at,
    (SELECT list(w.agent_id ORDER BY w.agent_id) FROM was_associated_with w WHERE w.activity_id = s.activity_id) AS agents,
    r.source_url,
    r.license,
    r.creator,
    r.title,
    r.provider,
    r.redistribution,
    r.locator
FROM steps s
JOIN entity e ON e.entity_id = s.entity_id
LEFT JOIN activity a ON a.activity_id = s.activity_id
LEFT JOIN source_record r ON r.record_id = s.entity_id;
