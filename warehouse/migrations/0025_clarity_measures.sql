-- The low-quality filter's measures (assets/image_pool/logic/clarity.py, issue 20); NULL for files decoded before.
ALTER TABLE file_decode ADD COLUMN sharpness DOUBLE; -- 90th percentile of block Laplacian RMS over the luminance spread
ALTER TABLE file_decode ADD COLUMN noise_sigma DOUBLE; -- luminance noise (0-255) in the flattest tenth of a central crop
ALTER TABLE file_decode ADD COLUMN shadows_crushed DOUBLE; -- share of the measuring copy's pixels at 5 or below
