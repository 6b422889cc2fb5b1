-- Counterfactual edits of ContextCanvas case images, and edits supplied as files (made by hand, or by a model run
-- outside aesforge): which case image an edit changes, so its pair can be released with the case, and which file
-- a supplied edit was read from (named relative to the warehouse's root). NULL for edits of pool items and for
-- edits made by a configured model.
ALTER TABLE counterfactual_edit ADD COLUMN case_id VARCHAR;           -- the authors' case id (context_case.case_id)
ALTER TABLE counterfactual_edit ADD COLUMN image_position INTEGER;    -- which of the case's images (0-based)
ALTER TABLE counterfactual_edit ADD COLUMN supplied_file VARCHAR;     -- provider 'supplied': the file's name
