-- No second, decoded copy of every image (issue 18): the pool keeps each file's original bytes (file_blob), the
-- normalisation parameters (file_decode) and small derived data (image_signature); a stage that needs pixels
-- decodes the original with assets/core/logic/normalized_pixels.py. An image is named by its pixel digest
-- (pixel_sha256), and its original is found through file_decode. The PNG copies older runs stored stay in the blob
-- store, unreferenced by the pool.
ALTER TABLE image DROP COLUMN normalized_uri;
ALTER TABLE image DROP COLUMN normalized_sha256;
UPDATE entity SET content_sha256 = (SELECT i.pixel_sha256 FROM image i WHERE i.image_id = entity.entity_id)
WHERE kind = 'image' AND entity_id IN (SELECT image_id FROM image);
