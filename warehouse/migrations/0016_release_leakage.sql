-- The cross-benchmark leakage guard (assets/releases/leakage.py): training images of one dataset that are, or
-- duplicate, an image another dataset holds out for testing or evaluation. The release writers drop every training
-- row whose image is listed here (assets/releases/store.py::excluded_images); the guard replaces the whole table on
-- each decision, and its blocking check no_benchmark_leakage fails while an overlap is not listed.
CREATE TABLE release_exclusion (
    dataset           VARCHAR NOT NULL,   -- the training side: critique_canvas | aeseval
    split             VARCHAR NOT NULL,   -- train
    image_sha256      VARCHAR NOT NULL,   -- as the split's rows carry it: CritiqueCanvas the kept pool image's
                                          -- normalized PNG (critique_canvas_records.image_sha256), AesEval the render
                                          -- PNG (design_render.png_sha256)
    held_dataset      VARCHAR NOT NULL,   -- photocritique | context_canvas | poem_benchmark | aeseval | critique_canvas
    held_split        VARCHAR NOT NULL,   -- test | eval | benchmark
    held_item_id      VARCHAR NOT NULL,   -- the post, case image, illustration, design or pool item held out
    held_image_sha256 VARCHAR NOT NULL,   -- the held-out image as its dataset carries it (view release_split_images)
    reason            VARCHAR NOT NULL,   -- same_image | exact_duplicate | perceptual_duplicate | clip_duplicate
    detail            VARCHAR NOT NULL,   -- both images and the evidence linking them
    n_held_out        INTEGER NOT NULL,   -- held-out images it collides with (the strongest collision is named)
    entity_id         VARCHAR NOT NULL,   -- release_exclusion:<digest of dataset, split, image_sha256>
    activity_id       VARCHAR NOT NULL,
    PRIMARY KEY (dataset, split, image_sha256)
);
