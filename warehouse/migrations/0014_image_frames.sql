-- Multi-frame files (animated GIF/WebP/PNG, multipage TIFF, MPO): how many frames the file holds and which
-- one was decoded into the image (the first). NULL for files that gave no image and for decodes made before.
ALTER TABLE file_decode ADD COLUMN frame_count INTEGER;
ALTER TABLE file_decode ADD COLUMN frame_used INTEGER;
