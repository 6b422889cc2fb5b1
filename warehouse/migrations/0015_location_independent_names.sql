-- Location-independent names (issue 14). Rows no longer say where the project or its blobs sit: a blob is
-- referenced as blob:<sha256> (relative to the blob store, resources/blob_store.py), and a local file by its path
-- relative to the warehouse's root, the config file's folder (warehouse/ids.py, file_name).
--
-- 1. Blob URIs become references here, in SQL: a file:// URI of a local store (<root>/ab/cd/<sha256>) or an
--    s3:// URI (<prefix>/ab/<sha256>) says its sha256 at its end. Only values of exactly that shape change.
--
-- 2. Paths cannot be renamed here. Their new names are relative to the config's folder, which is not in the
--    warehouse (a run knows it), and the ids derived from them (record ids, pool item ids, the ids of rejected
--    records) are hashes of canonical JSON that only the code deriving them reproduces. So this migration lists
--    each scope that holds rows in location_rekey, and the first run of the scope's reading asset re-keys it in
--    one transaction of its own activity (warehouse/rekey.py: each new id is checked to be what the old fields
--    derive, then every occurrence is rewritten in every table); until then a scope's rows keep their old names
--    and ids, which its readers still resolve (an absolute name is opened as it is).

CREATE MACRO aesforge_blob_ref(uri) AS
    CASE WHEN regexp_matches(uri, '^file://.*/[0-9a-f]{2}/[0-9a-f]{2}/[0-9a-f]{64}$')
           OR regexp_matches(uri, '^s3://.*/[0-9a-f]{2}/[0-9a-f]{64}$')
         THEN 'blob:' || right(uri, 64) ELSE uri END;

UPDATE file_blob SET blob_uri = aesforge_blob_ref(blob_uri);
UPDATE image SET normalized_uri = aesforge_blob_ref(normalized_uri);
UPDATE design_render SET png_uri = aesforge_blob_ref(png_uri);
UPDATE design_review_item SET image = aesforge_blob_ref(image);
UPDATE counterfactual_edit SET output_uri = aesforge_blob_ref(output_uri);
UPDATE poem_illustration SET image_uri = aesforge_blob_ref(image_uri);
UPDATE context_case_image SET image_uri = aesforge_blob_ref(image_uri);
UPDATE context_contact_sheet SET uri = aesforge_blob_ref(uri);
-- A generated illustration's pool record has its blob URI as its locator, and its record id derives from it: the
-- image pool's re-key (scope image_pool, listed below) renames both together.

DROP MACRO aesforge_blob_ref;

CREATE TABLE location_rekey (
    scope        VARCHAR PRIMARY KEY,  -- image_pool | poetry | context_canvas | designs
    activity_id  VARCHAR,              -- the activity that re-keyed the scope; NULL while it is pending
    renamed      BIGINT,               -- stored values it rewrote
    done_at      TIMESTAMPTZ
);

INSERT INTO location_rekey (scope) SELECT 'image_pool' WHERE EXISTS (SELECT 1 FROM source_record);
INSERT INTO location_rekey (scope) SELECT 'poetry' WHERE EXISTS (SELECT 1 FROM poem_source_read);
INSERT INTO location_rekey (scope) SELECT 'context_canvas' WHERE EXISTS (SELECT 1 FROM context_case_read);
INSERT INTO location_rekey (scope) SELECT 'designs' WHERE EXISTS (SELECT 1 FROM design_source_read);
