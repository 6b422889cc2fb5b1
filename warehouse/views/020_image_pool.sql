-- pool_images: the kept images, one row per duplicate cluster, with their provenance fields and
-- the run that decided the pool. pool_item_id feeds provenance(). pixel_sha256 names the image (its normalised
-- pixels); file_sha256 is the kept record's original file, the bytes its pixels are decoded from
-- (assets/core/logic/normalized_pixels.py).
CREATE OR REPLACE VIEW pool_images AS
SELECT
    m.pool_item_id,
    m.image_id,
    m.record_id,
    m.domain,
    m.cluster_id,
    m.cluster_size,
    i.width,
    i.height,
    i.pixel_sha256,
    f.file_sha256,
    r.title,
    r.creator,
    r.provider,
    r.source_url,
    r.license,
    r.redistribution,
    r.locator,
    a.run_id AS decided_in_run
FROM pool_member m
JOIN image i ON i.image_id = m.image_id
JOIN record_file f ON f.record_id = m.record_id
JOIN source_record r ON r.record_id = m.record_id
JOIN activity a ON a.activity_id = m.activity_id
WHERE m.is_representative;

-- image_file: each decoded image with its original file, the first file (by sha256) whose normalised pixels it is;
-- any other file decoded to it gives the same pixels.
CREATE OR REPLACE VIEW image_file AS
SELECT d.image_id, i.pixel_sha256, min(d.file_sha256) AS file_sha256
FROM file_decode d
JOIN image i ON i.image_id = d.image_id
GROUP BY ALL;

-- duplicate_drops: every record dropped as a duplicate, with its cluster, the kept record and why it was kept
-- (the representative rule's deciding criterion), the image it matched (its representative's), the method
-- (exact_bytes, exact_pixels, perceptual:<how>, clip) and distance, and what shows it is a copy, where known.
CREATE OR REPLACE VIEW duplicate_drops AS
SELECT
    m.record_id,
    r.locator,
    m.image_id,
    m.cluster_id,
    m.cluster_size,
    m.representative_record_id,
    k.locator AS representative_locator,
    kept.representative_reason AS kept_because,
    m.matched_image_id,
    m.match_method,
    m.match_distance,
    m.copy_evidence
FROM pool_member m
JOIN source_record r ON r.record_id = m.record_id
JOIN source_record k ON k.record_id = m.representative_record_id
JOIN pool_member kept ON kept.record_id = m.representative_record_id
WHERE NOT m.is_representative;

-- pool_exclusions: every input that did not make it into the pool and why, whatever the stage.
-- Rejections of file bytes (e.g. undecodable) are shown against every record that pointed at them.
CREATE OR REPLACE VIEW pool_exclusions AS
SELECT r.record_id, r.locator, r.source_name, j.stage, j.reason_code, j.detail, a.asset_key, a.run_id
FROM rejection j
JOIN source_record r ON r.record_id = j.entity_id
JOIN activity a ON a.activity_id = j.activity_id
UNION ALL
SELECT r.record_id, r.locator, r.source_name, j.stage, j.reason_code, j.detail, a.asset_key, a.run_id
FROM rejection j
JOIN record_file f ON 'file:' || f.file_sha256 = j.entity_id
JOIN source_record r ON r.record_id = f.record_id
JOIN activity a ON a.activity_id = j.activity_id
UNION ALL
-- Inputs rejected before any record existed: a whole manifest (empty, no usable header), or an item a pool stage
-- quarantined as internal_error; the locator comes from the entity's attributes.
SELECT NULL, coalesce(json_extract_string(e.attributes, '$.locator'), json_extract_string(e.attributes, '$.path')), NULL,
       j.stage, j.reason_code, j.detail, a.asset_key, a.run_id
FROM rejection j
JOIN entity e ON e.entity_id = j.entity_id
JOIN activity a ON a.activity_id = j.activity_id
WHERE a.asset_key IN ('source_records', 'fetched_files', 'normalized_images', 'pool_candidates', 'perceptual_duplicates',
                      'clip_duplicates', 'model_filter_verdicts', 'image_pool')
  AND NOT EXISTS (SELECT 1 FROM source_record r WHERE r.record_id = j.entity_id)
  AND NOT EXISTS (SELECT 1 FROM record_file f WHERE 'file:' || f.file_sha256 = j.entity_id);

-- pool_stage_counts: how many records entered and left each stage, for the selection flow.
CREATE OR REPLACE VIEW pool_stage_counts AS
SELECT 'records' AS stage, 1 AS step, count(*) AS n FROM source_record
UNION ALL SELECT 'fetched', 2, count(*) FROM record_file
UNION ALL SELECT 'decoded', 3, count(*) FROM record_file f JOIN file_decode d USING (file_sha256) WHERE d.image_id IS NOT NULL
UNION ALL SELECT 'eligible', 4, count(*) FROM pool_candidate WHERE eligible
UNION ALL SELECT 'rejected by a model filter', 5, count(DISTINCT v.record_id) FROM model_filter_verdict v
    JOIN pool_candidate c USING (record_id) WHERE c.eligible AND NOT v.passed
UNION ALL SELECT 'kept', 6, count(*) FROM pool_member WHERE is_representative
UNION ALL SELECT 'dropped as duplicate', 7, count(*) FROM pool_member WHERE NOT is_representative;
