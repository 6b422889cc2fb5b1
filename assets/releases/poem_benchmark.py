"""The poem-illustration benchmark release (TangPoetryBench-style): classical Chinese poems, one illustration per
poem and generator, and the two-phase survey that rated them. One split, test.

Three configs:

- ``images`` (the default): one row per illustration (view ``poem_image_records``): the poem, who made the image (a
  text-to-image model with its prompt template, or a stand-in painting, labelled ``stand_in``), the per-dimension
  means of the kept ratings, quality, recognizability with the phase-1 choices, and the text-integrity label.
- ``poems``: the poem texts and translations, joined to images on ``poem_id`` (distractor poems included: the
  phase-1 choices name them).
- ``annotations``: one row per pseudonymous rater, illustration and survey item, with its quality-control outcome
  (view ``poem_rater_annotations``); raters are keyed hashes, never names.

An illustration is the file the survey showed, as stored in the blob store, not the pool's normalized copy: a
stand-in painting is not itself a pool item. Its rights are those of the source record whose file has the same
bytes (a generated image's own pool record, or the pool record a stand-in was taken from); where several records
hold the bytes the most restrictive wins, and bytes no record holds are redistribution ``unknown``.
"""

from assets.releases.logic.croissant import ResponsibleAI
from assets.releases.public_fields import public_url
from assets.releases.release_asset import release_asset
from assets.releases.writer import ReleaseSpec, ReleaseTable

SPLIT = "test"

IMAGE_ROWS = """
SELECT r.id, r.image_sha256 AS image, r.image_sha256, r.poem_id, r.title, r.author, r.generator, r.kind, r.provider,
       r.model, r.provider_model, r.prompt_template, r.dimensions, r.n_ratings, r.quality, r.recognizability,
       p.options AS recognizability_choices, p.correct_letter AS recognizability_answer, r.n_raters,
       r.text_integrity_label, r.text_issue, r.text_label_source, r.text_integrity_survey
FROM poem_image_records r LEFT JOIN poem_phase1_item p ON p.item_id = r.id
"""

POEM_ROWS = """
SELECT poem_id, title, author, text, translation, themes, form, source, content_sha256 FROM poem
"""

ANNOTATION_ROWS = """
SELECT rater_id || '|' || item_id || '|' || item AS id, rater_id, rater_group, item_id, image_sha256, poem_id,
       generator, phase, item, answer, correct, passed_qc, qc_reason, rater_passed_qc
FROM poem_rater_annotations
"""

IMAGES = f"""
WITH shown AS (SELECT DISTINCT image_sha256 FROM poem_illustration),
holders AS (
    SELECT image_sha256, pool_record_id AS record_id FROM poem_illustration WHERE pool_record_id IS NOT NULL
    UNION
    SELECT s.image_sha256, f.record_id FROM shown s JOIN record_file f ON f.file_sha256 = s.image_sha256
)
SELECT s.image_sha256, {public_url('r.source_url')} AS source_url, r.creator, r.license, r.provider,
       coalesce(r.redistribution, 'unknown') AS redistribution
FROM shown s LEFT JOIN holders h USING (image_sha256) LEFT JOIN source_record r USING (record_id)
QUALIFY row_number() OVER (PARTITION BY s.image_sha256 ORDER BY
    CASE coalesce(r.redistribution, 'unknown') WHEN 'restricted' THEN 0 WHEN 'unknown' THEN 1 ELSE 2 END,
    r.record_id) = 1
"""
"""One row per illustration image with the rights of the record that holds its bytes (most restrictive first)."""

ROWS = f"""
SELECT 'images' AS config, '{SPLIT}' AS split, r.id AS row_id, r.provenance.illustration AS entity_id
FROM poem_image_records r
UNION ALL
SELECT 'poems', '{SPLIT}', poem_id, entity_id FROM poem
UNION ALL
SELECT 'annotations', '{SPLIT}', a.id, s.response_id
FROM ({ANNOTATION_ROWS}) a JOIN poem_survey_response s ON s.annotator_id = a.rater_id AND s.item_id = a.item_id
"""
"""Lineage roots: an image row starts at its illustration (poem, generator or stand-in file, pool record), a poem at
its corpus record, an annotation at the survey response it is part of (the export file and row)."""

COMPOSITION = "SELECT 'test', generator || ' (' || kind || ')', count(*) FROM poem_illustration GROUP BY ALL"

CITATION = """@misc{hu2026tangpoetrybench,
  title = {TangPoetryBench: A Multi-Dimensional Benchmark and Rubric-Conditioned Evaluator for Poetry-to-Image Generation},
  author = {Hu, Haoqi and Luo, Tongji and Zhang, Li and Zhou, Boning},
  year = {2026},
  note = {Method followed by this release: poem illustrations per generator, a two-phase survey (recognizability,
          then a ten-dimension rubric) with quality control, per-image means and a text-integrity label}
}"""

SCORES = """Phase 1 (recognizability) shows a rater the image and four poems (`recognizability_choices`, poem ids for
letters A-D; `recognizability_answer` is the true poem's letter); `recognizability` is the share of kept raters
who picked it. Phase 2 rates ten rubric dimensions; each option letter maps to a score in [0, 1] (best 1), and
answers meaning "does not apply" are left out of that dimension's mean (`n_ratings` counts the applicable
ones). `quality` is the mean over the dimensions that apply. `text_integrity_label` is 1 when the image has no text
issue and 0 when it leaks the poem's text or shows recognisable, unrelated characters (`text_label_source`: OCR,
or a person's adjudication); `text_integrity_survey` is the raters' own answer. In `annotations`, `passed_qc` says
whether the response counts in the scores and `qc_reason` why not; `rater_passed_qc` whether the rater as a whole
was kept."""

SPEC = ReleaseSpec(
    dataset="poem_benchmark",
    pretty_name="Poem illustration benchmark (TangPoetryBench method)",
    summary="Classical Chinese poems illustrated by text-to-image generators (or, where none is configured, stand-in "
    "paintings labelled as such), rated by people in a two-phase survey: first which of four poems the image "
    "shows, then ten rubric dimensions (safety, technical quality, AI plausibility, text integrity, scene, "
    "culture, style, core imagery, emotion, overall impression). Per-image means of the ratings that passed "
    "quality control, the raw pseudonymous annotations and the poems. One split: test.",
    tables=(
        ReleaseTable(
            config="images", key="id", default=True,
            description="one illustration of one poem by one generator, with its human scores",
            splits={SPLIT: IMAGE_ROWS},
            images=("image",),
            columns={
                "id": "the illustration's item id, <poem_id>@<generator>",
                "image": "the illustration as the survey showed it (null when its rights withhold the bytes)",
                "image_sha256": "sha256 of the illustration file",
                "poem_id": "the poem (see the poems config)", "title": "the poem's title", "author": "its author",
                "generator": "the generator's name in this build",
                "kind": "generated (by a text-to-image model) or stand_in (a painting standing in; not model output)",
                "provider": "the image model's provider (generated only)",
                "model": "the configured image model (generated only)",
                "provider_model": "the model version the provider reported, when it reported one",
                "prompt_template": "the prompt template id@version the image was generated with (generated only)",
                "dimensions": "mean score per rubric dimension over kept ratings (null: no rater found it applicable)",
                "n_ratings": "applicable kept ratings per dimension",
                "quality": "mean over the applicable dimensions",
                "recognizability": "share of kept raters who picked the true poem in phase 1",
                "recognizability_choices": "the phase-1 choices: poem ids for letters A-D",
                "recognizability_answer": "the letter of the true poem",
                "n_raters": "kept raters of the image",
                "text_integrity_label": "1: no text issue; 0: the image leaks the poem's text or shows unrelated characters",
                "text_issue": "none, leaked_poem_text or recognisable_characters",
                "text_label_source": "ocr or adjudicated",
                "text_integrity_survey": "the raters' mean text-integrity answer",
            },
        ),
        ReleaseTable(
            config="poems", key="poem_id",
            description="one poem of the corpus: text, translation, form and themes",
            splits={SPLIT: POEM_ROWS},
            columns={
                "poem_id": "the corpus's id of the poem", "text": "the poem in Chinese, one line per verse line",
                "translation": "an English translation", "themes": "the corpus's theme tags",
                "form": "the verse form", "source": "where the corpus took the text from",
                "content_sha256": "sha256 of title, author, text and translation",
            },
        ),
        ReleaseTable(
            config="annotations", key="id",
            description="one pseudonymous rater's answer to one survey item about one illustration",
            splits={SPLIT: ANNOTATION_ROWS},
            columns={
                "id": "<rater_id>|<item_id>|<item>",
                "rater_id": "a keyed hash of the survey's rater id (the key is not released)",
                "rater_group": "the rater's group as the survey export gives it (e.g. expert, crowd)",
                "item_id": "the illustration (see the images config)",
                "image_sha256": "the image the rater saw",
                "phase": "recognizability (phase 1) or rubric (phase 2)",
                "item": "poem_choice for phase 1; the rubric dimension for phase 2",
                "answer": "the option letter the rater chose",
                "correct": "phase 1: whether the letter is the true poem's (null for rubric items)",
                "passed_qc": "whether the response counts in the image's scores",
                "qc_reason": "why it does not (null when it passed)",
                "rater_passed_qc": "whether the rater as a whole passed quality control",
            },
        ),
    ),
    images_query=IMAGES,
    rows_query=ROWS,
    composition_query=COMPOSITION,
    assets=("poem_corpus", "poem_illustrations", "recognizability_items", "poem_survey_responses",
            "poem_text_integrity", "poem_scores", "poem_benchmark_statistics"),
    stages=("poem_corpus", "poem_illustration", "poem_survey", "poem_survey_file", "poem_survey_row",
            "poem_text_integrity"),
    task_categories=("text-to-image", "image-classification"),
    citations=(CITATION,),
    limitations=(
        "Stand-in paintings (kind stand_in) are not model output: they exist so the pipeline can run without an "
        "image model, and say nothing about any generator.",
        "Per-image means over few raters are noisy; n_raters and n_ratings say how many ratings stand behind each.",
        "The rubric's emotional and holistic dimensions are the most subjective; raters agree least on them.",
    ),
    rai=ResponsibleAI(
        data_collection="Poems read from a corpus file; one illustration per poem and generator made by a "
        "text-to-image model from a fixed prompt template (or taken from a stand-in folder); a survey platform's "
        "export of people's ratings in two phases.",
        data_collection_type=("Survey", "Machine-generated", "Secondary Data Analysis"),
        preprocessing="Malformed poem records and survey rows are rejected with their reason; phase-1 distractors "
        "are the three most similar poems; quality control drops responses that are too fast or inconsistent and "
        "raters with constant answers or low phase-1 accuracy; per-image means skip not-applicable answers; OCR, "
        "then a person where needed, decides the text-integrity label. provenance.parquet lists every step per row.",
        annotation="Raters answer phase 1 (which poem) and then the ten-dimension rubric per image; every answer "
        "is released with its quality-control outcome.",
        personal_information="Raters appear only as keyed hashes of their survey ids and their group; no names, "
        "contacts or free-text comments are released.",
        limitations="Few raters per image; the poems are a small canon of classical Chinese verse; stand-in "
        "paintings are placeholders, not generator output.",
        biases="Raters' familiarity with the canon shapes recognizability; the rubric encodes one view of what a "
        "faithful illustration is.",
        use_cases="Evaluating poetry-to-image generators and automatic evaluators against human ratings. Not for "
        "training generators on the rated images.",
        sources="The poem corpus (public-domain classical texts), the configured image generators or stand-in "
        "folder, and the survey exports; each image's rights are in ATTRIBUTION.csv.",
    ),
    extra_sections=(("Scores", SCORES),),
)

poem_benchmark_release = release_asset(SPEC, deps=["poem_scores", "poem_text_integrity", "recognizability_items"])
