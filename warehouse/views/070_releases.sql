-- The leakage guard's view of every dataset split (assets/releases/leakage.py): which images each training split
-- uses, which images the benchmarks hold out, and which of them the pool cannot tell apart.

-- release_split_images: one row per image of a split, role 'training' or 'held_out'; key (role, dataset, split,
-- item_id, image_sha256). image_sha256 is the image as the split's rows carry it: for CritiqueCanvas the kept pool
-- image's pixel digest (image.pixel_sha256), for AesEval the render PNG, for photocritique the post photo's pixel
-- digest, for ContextCanvas the case image (a PNG of a pool item's normalised pixels, or the case file's own bytes),
-- for the poem benchmark the illustration's stored bytes. record_id is the pool record it is (when it is one); file_sha256, image_id and
-- cluster_id are what the pool knows of it (NULL when the pool never saw these bytes).
-- Held out is everything a benchmark stores as a test or eval item, whatever its current filter or review
-- decision (those change while the image does not): every photocritique post's image candidates, every
-- ContextCanvas case image, every poem illustration, AesEval's benchmark designs and CritiqueCanvas's eval groups.
CREATE OR REPLACE VIEW release_split_images AS
WITH critique_images AS (
    SELECT DISTINCT s.split, g.pool_item_id, i.pixel_sha256, m.record_id
    FROM critique_split s
    JOIN critique_group g USING (group_id)
    JOIN pool_member m ON m.pool_item_id = g.pool_item_id AND m.is_representative
    JOIN image i ON i.image_id = m.image_id
), design_images AS (
    SELECT DISTINCT s.split, r.design_id, r.render_id, r.png_sha256
    FROM design_split s
    JOIN design d ON d.base_design_id = s.base_design_id
    JOIN design_render r ON r.design_id = d.design_id
), split_images AS (
    SELECT 'training' AS role, 'critique_canvas' AS dataset, split, pool_item_id AS item_id, pool_item_id AS entity_id,
           pixel_sha256 AS image_sha256, record_id
    FROM critique_images WHERE split = 'train'
    UNION ALL
    SELECT 'training', 'aeseval', split, design_id, render_id, png_sha256, NULL FROM design_images WHERE split = 'train'
    UNION ALL
    SELECT 'held_out', 'critique_canvas', split, pool_item_id, pool_item_id, pixel_sha256, record_id
    FROM critique_images WHERE split = 'eval'
    UNION ALL
    SELECT 'held_out', 'aeseval', split, design_id, render_id, png_sha256, NULL FROM design_images WHERE split = 'benchmark'
    UNION ALL
    SELECT DISTINCT 'held_out', 'photocritique', 'test', c.post_id, p.entity_id, i.pixel_sha256, c.record_id
    FROM reddit_post_image c
    JOIN reddit_post p USING (post_id)
    JOIN record_file f ON f.record_id = c.record_id
    JOIN file_decode d ON d.file_sha256 = f.file_sha256
    JOIN image i ON i.image_id = d.image_id
    UNION ALL
    SELECT 'held_out', 'context_canvas', 'eval', ci.case_id || '#image=' || (ci.position + 1), c.entity_id, ci.image_sha256,
           m.record_id
    FROM context_case_image ci
    JOIN context_case c USING (case_id)
    LEFT JOIN pool_member m ON m.pool_item_id = ci.pool_item_id AND m.is_representative
    UNION ALL
    SELECT 'held_out', 'poem_benchmark', 'test', item_id, entity_id, image_sha256, pool_record_id FROM poem_illustration
), sha_image AS (   -- every sha256 the pool knows: a decoded file's, or an image's pixel digest
    SELECT sha256, min(image_id) AS image_id FROM (
        SELECT file_sha256 AS sha256, image_id FROM file_decode WHERE image_id IS NOT NULL
        UNION ALL
        SELECT pixel_sha256, image_id FROM image
    ) GROUP BY sha256
), image_cluster AS (
    SELECT image_id, min(cluster_id) AS cluster_id FROM pool_member GROUP BY image_id
), resolved AS (
    SELECT s.*, f.file_sha256 AS record_file_sha256, coalesce(d.image_id, k.image_id) AS pool_image_id
    FROM split_images s
    LEFT JOIN record_file f ON f.record_id = s.record_id
    LEFT JOIN file_decode d ON d.file_sha256 = f.file_sha256
    LEFT JOIN sha_image k ON k.sha256 = s.image_sha256
)
SELECT r.role, r.dataset, r.split, r.item_id, r.entity_id, r.image_sha256, r.record_id,
       coalesce(r.record_file_sha256, r.image_sha256) AS file_sha256, r.pool_image_id AS image_id, c.cluster_id
FROM resolved r
LEFT JOIN image_cluster c ON c.image_id = r.pool_image_id;

-- release_overlap: every (training image, held-out image of ANOTHER dataset) pair the pool cannot tell apart: the
-- same duplicate cluster (same record, same bytes, same pixels, or linked by perceptual / CLIP evidence), or, for
-- images the pool never saw, the same bytes. Joined on cluster ids and sha256 only (hash joins, no pairwise
-- comparison). direct_methods lists the duplicate_match evidence between the two images when there is any; the
-- guard names the rest from the pool's recorded paths (assets/releases/logic/leakage.py).
CREATE OR REPLACE VIEW release_overlap AS
WITH training AS (
    SELECT * FROM release_split_images WHERE role = 'training'
), held_out AS (
    SELECT * FROM release_split_images WHERE role = 'held_out'
), pairs AS (
    SELECT t.dataset, t.split, t.item_id, t.entity_id, t.image_sha256, t.record_id, t.file_sha256, t.image_id,
           h.dataset AS held_dataset, h.split AS held_split, h.item_id AS held_item_id, h.entity_id AS held_entity_id,
           h.image_sha256 AS held_image_sha256, h.record_id AS held_record_id, h.file_sha256 AS held_file_sha256,
           h.image_id AS held_image_id, t.cluster_id
    FROM training t JOIN held_out h ON h.cluster_id = t.cluster_id AND h.dataset <> t.dataset
    UNION ALL
    SELECT t.dataset, t.split, t.item_id, t.entity_id, t.image_sha256, t.record_id, t.file_sha256, t.image_id,
           h.dataset, h.split, h.item_id, h.entity_id, h.image_sha256, h.record_id, h.file_sha256, h.image_id, NULL
    FROM (SELECT * FROM training WHERE cluster_id IS NULL) t
    JOIN (SELECT * FROM held_out WHERE cluster_id IS NULL) h ON h.file_sha256 = t.file_sha256 AND h.dataset <> t.dataset
), direct AS (
    SELECT image_a, image_b, list(DISTINCT method ORDER BY method) AS methods FROM duplicate_match GROUP BY ALL
)
SELECT p.*, p.file_sha256 = p.held_file_sha256 AS same_file, coalesce(e.methods, []) AS direct_methods
FROM pairs p
LEFT JOIN direct e ON e.image_a = least(p.image_id, p.held_image_id) AND e.image_b = greatest(p.image_id, p.held_image_id);
