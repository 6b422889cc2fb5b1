-- What the pool needs to keep the best copy of each duplicate cluster and to refuse chained merges (issue 18).

-- How good a copy each decoded file is (assets/image_pool/logic/source_quality.py); NULL for files decoded before.
ALTER TABLE file_decode ADD COLUMN lossless BOOLEAN; -- the container keeps the pixels exactly (PNG, BMP, lossless WebP, ...)
ALTER TABLE file_decode ADD COLUMN jpeg_quality INTEGER; -- IJG quality 1-100 matching the luminance quantisation table; JPEG only
ALTER TABLE file_decode ADD COLUMN fine_detail DOUBLE; -- finest pyramid band over the next one at full resolution: low for upscales
ALTER TABLE file_decode ADD COLUMN luma_mean DOUBLE; -- mean luminance (0-255) of a small copy
ALTER TABLE file_decode ADD COLUMN luma_top DOUBLE; -- its 99.5th percentile
ALTER TABLE file_decode ADD COLUMN highlights_clipped DOUBLE; -- share of its pixels at 250 or above

-- What the perceptual verification saw of each pair's geometry and edits.
ALTER TABLE duplicate_match ADD COLUMN covered_a DOUBLE; -- share of image_a's frame that image_b shows (below 1: b is a crop of a)
ALTER TABLE duplicate_match ADD COLUMN covered_b DOUBLE; -- share of image_b's frame that image_a shows
ALTER TABLE duplicate_match ADD COLUMN edited VARCHAR; -- 'a' or 'b': the side showing a local overlay (logo, text) the other lacks

-- Why each kept record won its cluster.
ALTER TABLE pool_member ADD COLUMN representative_reason VARCHAR; -- the first criterion that set the representative above the next best
ALTER TABLE pool_member ADD COLUMN copy_evidence VARCHAR; -- what shows this image was made from another member (a crop, an upscale)

-- Every duplicate pair as the clustering used it: joined (the pair is a member and its representative) or refused.
CREATE TABLE duplicate_link (
    image_a     VARCHAR NOT NULL,
    image_b     VARCHAR NOT NULL,
    method      VARCHAR NOT NULL,
    decision    VARCHAR NOT NULL,        -- joined | confirmed | refused
    reason      VARCHAR,                 -- refused: not_close_to_representative | closer_to_other_representative
    detail      VARCHAR,
    cluster_id  VARCHAR,                 -- the cluster the link joined, or the one it would have joined
    activity_id VARCHAR NOT NULL,
    PRIMARY KEY (image_a, image_b, method)
);
