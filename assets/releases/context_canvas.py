"""The ContextCanvas release: expert-reviewed use scenarios that ask whether an image is the right visual choice,
as an evaluation benchmark with the answer key apart from what a model sees.

Four configs over the retained cases, joined on ``id`` (the case's evaluation id), one split (eval; the cases
define no training split):

- ``cases`` (the default): what a model is given: the image(s), scenario, any proposed assessment, question,
  options, and the neutral and evidence descriptions that stand in for the image under the description conditions
  (null where a case has none). No gold, rationale, rights or probe output (views ``context_canvas_eval_records``
  and ``context_case_image``).
- ``gold``: the gold option and its text, the source-grounded rationale, the source basis and every image's
  rights (view ``context_canvas_gold_records``).
- ``annotations``: each reviewer's verdict on the seven retention criteria, reviewers as pseudonyms numbered in
  the order of their names (``reviewer_1``, ...), the panel's adjudication rows marked ``final``; notes stay out
  (free text that may name people).
- ``counterfactual_pairs``: each approved counterfactual edit of a retained case's image (AesCanvas S2.2.2): the
  case's scenario, question and options with the original and the edited image, the gold before (the case's) and
  after the edit (the option whose text is the spec's intended label). An approved edit is left out, and counted in
  the card's selection table, when no option has that text, when it is the case's gold already, or when the case's
  image is no longer the one edited. An edited image carries the rights of the image it edits, so it ships without
  bytes exactly where its original does. Absent from a release without approved edits.

A case image is the file the case names, as stored in the blob store (the bytes the reviewers judged), not the
pool's: a case image need not be in the pool. The old export folder loaded through
``datasets.load_dataset`` as one "test" split and lost the gold file; the configs keep both, split ``eval``.
"""

from assets.releases.critique_canvas import AESCANVAS_CITATION
from assets.releases.logic.croissant import ResponsibleAI
from assets.releases.public_fields import public_url
from assets.releases.release_asset import release_asset
from assets.releases.writer import ReleaseSpec, ReleaseTable

CASES = """
SELECT e.id, s.images, s.images AS image_sha256, e.scenario, e.proposed_assessment, e.question, e.options,
       e.neutral_description, e.evidence_description
FROM context_canvas_eval_records e
JOIN context_case c ON c.evaluation_id = e.id
JOIN (SELECT case_id, list(image_sha256 ORDER BY position) AS images FROM context_case_image GROUP BY case_id) s
    USING (case_id)
"""

GOLD = f"""
SELECT g.id, g.case_id, g.gold, g.gold_text, g.rationale, g.source_basis,
       (SELECT list({{'position': i.position, 'image_sha256': i.image_sha256, 'pool_item_id': i.pool_item_id,
                     'title': i.rights->>'title', 'creator': i.rights->>'creator', 'provider': i.rights->>'provider',
                     'url': {public_url("i.rights->>'url'")}, 'license_note': i.rights->>'license_note',
                     'redistribution': i.rights->>'redistribution'}} ORDER BY i.position)
        FROM context_case_image i WHERE i.case_id = g.case_id) AS image_rights
FROM context_canvas_gold_records g
"""

ANNOTATIONS = """
SELECT g.id || '/' || p.reviewer || CASE WHEN v.final THEN '/final' ELSE '' END AS annotation_id,
       g.id, p.reviewer, v.final,
       [{'criterion': k, 'passed': CAST(json_extract(v.criteria, '$.' || k) AS BOOLEAN)}
        FOR k IN list_sort(json_keys(v.criteria))] AS criteria
FROM context_review v
JOIN context_canvas_gold_records g USING (case_id)
JOIN (SELECT reviewer AS name, 'reviewer_' || dense_rank() OVER (ORDER BY reviewer) AS reviewer
      FROM (SELECT DISTINCT reviewer FROM context_review
            WHERE case_id IN (SELECT case_id FROM context_canvas_gold_records))) p ON p.name = v.reviewer
"""

# Approved edits of a retained case's image, with the option the spec's intended label names (NULL: none does) and
# whether the case still shows the edited image at that position (view context_case_images: the case as stored now).
PAIR_CANDIDATES = """
SELECT x.record_id AS id, v.id AS case_id, v.scenario, v.proposed_assessment, v.question, v.options,
       x.source_sha256, x.output_sha256, g.gold AS original_gold,
       [o.id FOR o IN v.options IF lower(regexp_replace(trim(o.text), '\\s+', ' ', 'g')) = lower(x.intended_label)][1]
           AS edited_gold,
       coalesce(i.image_sha256 = x.source_sha256, false) AS same_image,
       x.decisive_cue, x.instruction, x.provider, x.model, x.case_id AS author_case_id, x.image_position
FROM counterfactual_edit x
JOIN context_canvas_gold_records g ON g.case_id = x.case_id
JOIN context_canvas_eval_records v ON v.id = g.id
LEFT JOIN context_case_images i ON i.case_id = x.case_id AND i.position = x.image_position
WHERE x.manual_check = 'approved'
"""

RELEASED_PAIR = "edited_gold IS NOT NULL AND edited_gold <> original_gold AND same_image"

PAIRS = f"""
SELECT id, case_id, scenario, proposed_assessment, question, options,
       source_sha256 AS original_image, output_sha256 AS edited_image,
       source_sha256 AS original_image_sha256, output_sha256 AS edited_image_sha256,
       original_gold, edited_gold, decisive_cue, instruction, provider AS edit_provider, model AS edit_model
FROM ({PAIR_CANDIDATES}) WHERE {RELEASED_PAIR}
"""

LEFT_OUT = f"""
SELECT 'counterfactual_pairs',
       CASE WHEN NOT same_image THEN 'case_image_changed'
            WHEN edited_gold IS NULL THEN 'no_option_for_intended_label'
            ELSE 'intended_label_is_the_gold' END,
       count(*)
FROM ({PAIR_CANDIDATES}) WHERE NOT ({RELEASED_PAIR}) GROUP BY ALL
"""

IMAGES = f"""
SELECT DISTINCT i.image_sha256, {public_url("i.rights->>'url'")} AS source_url, i.rights->>'creator' AS creator,
       i.rights->>'license_note' AS license, i.rights->>'provider' AS provider,
       i.rights->>'redistribution' AS redistribution
FROM context_case_image i WHERE i.case_id IN (SELECT case_id FROM context_canvas_gold_records)
UNION
SELECT DISTINCT p.output_sha256, {public_url("i.rights->>'url'")}, i.rights->>'creator', i.rights->>'license_note',
       i.rights->>'provider', i.rights->>'redistribution'
FROM ({PAIR_CANDIDATES}) p JOIN context_case_image i ON i.case_id = p.author_case_id AND i.position = p.image_position
WHERE {RELEASED_PAIR}
"""

ROWS = f"""
SELECT c.config, 'eval' AS split, g.id AS row_id, k.entity_id
FROM context_canvas_gold_records g JOIN context_case k USING (case_id)
CROSS JOIN (VALUES ('cases'), ('gold')) AS c(config)
UNION ALL
SELECT 'annotations', 'eval', a.annotation_id, k.entity_id
FROM ({ANNOTATIONS}) a JOIN context_case k ON k.evaluation_id = a.id
UNION ALL
SELECT 'counterfactual_pairs', 'eval', p.id, p.id FROM ({PAIRS}) p
"""

COMPOSITION = f"""
SELECT 'eval', n_options || ' options, ' || n_images || CASE WHEN n_images = 1 THEN ' image' ELSE ' images' END,
       count(*)
FROM context_case_status WHERE status = 'retained' GROUP BY ALL
UNION ALL
SELECT 'eval', 'counterfactual pair, edit by ' || edit_provider || '/' || edit_model, count(*) FROM ({PAIRS}) GROUP BY ALL
"""

SPEC = ReleaseSpec(
    dataset="context_canvas",
    pretty_name="ContextCanvas contextual suitability benchmark",
    summary="Expert-written use scenarios (an exhibition, a poster, a brochure, ...) that ask whether an image is "
    "the right visual choice there, with two or three fixed options. A case is kept only when its reviewers find "
    "all seven retention criteria hold. Model input (cases) and answer key (gold) are separate configs joined on "
    "id; the reviewers' per-criterion verdicts are a third, and checked counterfactual pairs (the decisive cue of a "
    "case's image edited so the answer changes, the scenario kept) a fourth. One split: eval.",
    tables=(
        ReleaseTable(
            config="cases", key="id", default=True,
            description="one retained case as a model sees it: image(s), scenario, question, options",
            splits={"eval": CASES},
            images=("images",),
            columns={
                "id": "the case's evaluation id, shared with the gold and annotations configs",
                "images": "the case's images in order (Image 1, Image 2, ...; null where the licence withholds one)",
                "image_sha256": "sha256 of each image, in the same order",
                "scenario": "the use the image is meant for",
                "proposed_assessment": "a curator's or designer's claim the model must judge (null: none)",
                "question": "the question", "options": "the fixed options (id and text)",
                "neutral_description": "what the image shows, with no identity or verdict: stands in for the image "
                "in the neutral-description condition (null: none written)",
                "evidence_description": "the neutral description with the decisive visible cue made explicit: stands "
                "in for the image in the evidence condition (null: none written)",
            },
        ),
        ReleaseTable(
            config="gold", key="id",
            description="the answer key of one case: gold option, rationale, source basis, per-image rights",
            splits={"eval": GOLD},
            columns={
                "id": "the case's evaluation id", "case_id": "the authors' case id",
                "gold": "the gold option's id", "gold_text": "the gold option's text",
                "rationale": "why the gold option is right, grounded in what is visible and the stated context",
                "source_basis": "the sources the rationale rests on",
                "image_rights": "each image's position, sha256, pool item and rights (title, creator, provider, url, "
                "licence note, redistribution)",
            },
        ),
        ReleaseTable(
            config="annotations", key="annotation_id",
            description="one reviewer's verdict on the seven retention criteria for one case",
            splits={"eval": ANNOTATIONS},
            columns={
                "annotation_id": "<id>/<reviewer>, with /final on the panel's adjudication row",
                "id": "the case's evaluation id", "reviewer": "the reviewer's pseudonym",
                "final": "whether this is the panel's adjudication, which decides over the others",
                "criteria": "each criterion and whether the reviewer found it holds",
            },
        ),
        ReleaseTable(
            config="counterfactual_pairs", key="id",
            description="one checked counterfactual pair: a case with its original image and with the image whose "
            "decisive cue was edited so the answer changes, the scenario kept",
            splits={"eval": PAIRS},
            images=("original_image", "edited_image"),
            columns={
                "id": "the edit's record id",
                "case_id": "the case's evaluation id (the id of the cases and gold configs)",
                "scenario": "the case's scenario, the same for both images",
                "proposed_assessment": "the case's proposed assessment (null: none)",
                "question": "the case's question", "options": "the case's options (id and text)",
                "original_image": "the case image that was edited (null where the licence withholds it)",
                "edited_image": "the edited image (synthetic; null where the original's licence withholds it)",
                "original_image_sha256": "sha256 of the original image",
                "edited_image_sha256": "sha256 of the edited image",
                "original_gold": "the gold option's id with the original image (the case's gold)",
                "edited_gold": "the gold option's id with the edited image (the option whose text is the intended "
                "label)",
                "decisive_cue": "the visual cue the edit changes",
                "instruction": "what the cue was changed into",
                "edit_provider": "who made the edit: an image-edit provider, or supplied (made outside aesforge)",
                "edit_model": "the edit model (file: a supplied edit)",
            },
        ),
    ),
    images_query=IMAGES,
    rows_query=ROWS,
    composition_query=COMPOSITION,
    left_out_query=LEFT_OUT,
    assets=("context_cases", "context_case_review", "counterfactual_edits"),
    stages=("context_cases", "context_case_review", "counterfactual_edit", "counterfactual_check"),
    task_categories=("visual-question-answering", "multiple-choice"),
    citations=(AESCANVAS_CITATION,),
    limitations=(
        "A small expert-written set: scores on it have wide confidence intervals.",
        "The scenarios reflect their authors' cultural knowledge; a case's rationale and source basis say what its "
        "verdict rests on.",
        "Images whose licence does not allow redistribution ship without bytes: fetch them from the URL in the gold "
        "config's rights (or ATTRIBUTION.csv) and check the sha256.",
        "Counterfactual pairs are synthetic diagnostics, each checked by hand: they measure whether an answer follows "
        "the decisive cue, not accuracy on natural images, and there are few of them.",
    ),
    extra_sections=(("Scoring", "Give a model the `cases` row (its images in order as Image 1, Image 2, ...; "
                     "the scenario; the proposed assessment when there is one; the question; the options) and take "
                     "the option id it picks. Join `gold` on `id` and compare with `gold`; accuracy is over the eval "
                     "split. The gold config is the answer key: keep it out of the model's input."),
                    ("Counterfactual pairs", "Ask each `counterfactual_pairs` row twice, once with `original_image` and "
                     "once with `edited_image`, with the same scenario, question and options; `original_gold` and "
                     "`edited_gold` are the right answers. A pair is right when both answers are; the net correct "
                     "update is (pairs answered right on both sides minus pairs answered the reverse way) over all "
                     "pairs. Edited images are synthetic and never part of the accuracy over `cases`."),),
    rai=ResponsibleAI(
        data_collection="Cases written by domain experts over images with recorded sources and rights (pool images "
        "or files named by the case); each case file record is validated and rejected with a reason when malformed.",
        data_collection_type=("Manual Human Curation",),
        preprocessing="Each case is checked by at least two reviewers against seven criteria (aesthetic centrality, "
        "context dependence, visual necessity, decisive evidence, scenario naturalness, answerability, "
        "anti-shortcut validity) and retained only when all hold, or when the panel's adjudication says so. Probe "
        "model answers used while writing cases are never released.",
        annotation="The gold option, rationale and source basis are the case authors'; the per-criterion verdicts "
        "are the reviewers', released under pseudonyms.",
        personal_information="Reviewers appear only as pseudonyms; their free-text notes are not released. Images "
        "may show people as their sources do.",
        limitations="Few cases; cultural scope limited to what the authors know; binary questions dominate.",
        biases="The authors' and reviewers' cultural backgrounds shape which uses count as suitable.",
        use_cases="Evaluating whether models judge contextual aesthetic suitability from visual evidence. Not for "
        "training.",
        sources="The images' sources as each case records them (see the gold config and ATTRIBUTION.csv).",
    ),
)

context_canvas_release = release_asset(SPEC, deps=["context_case_review", "counterfactual_edits"])
