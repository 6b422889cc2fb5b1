"""The AesEval release: Crello-format designs perturbed at the JSON level, re-rendered, labelled per indicator and
asked about in the paper's three question formats (aesthetic judgment, region selection, precise localisation).

Two configs, joined on ``question_id``, split as the designs are (``benchmark`` and ``train``, by base design: every
variant of a base design is on its base's side):

- ``questions`` (the default): one row per question as a model is asked it and scored on it (view
  ``aeseval_question_rows``): the render, the prompt, the options and the expected answer, and the design's
  metadata as canonical JSON text (AesEval 3.1 and 5.1: canvas, and per element its type, box, colour and font),
  plus where the label came from and which perturbations made the design.
- ``reasoning``: the indicator-grounded reasoning path of each question that has one (training designs, all three formats):
  steps that cite element boxes, each step naming the element it cites.

The renders are the project's own PNGs of the perturbed designs (their png sha256 is the image's id). The warehouse
records no licence for Crello sources, so the renders' redistribution is ``unknown`` and, by default, their bytes
are withheld; an operator who has cleared the designs' terms sets ``releases.datasets.aeseval.withhold_images``.
"""

from assets.releases.logic.croissant import ResponsibleAI
from assets.releases.release_asset import release_asset
from assets.releases.writer import ReleaseSpec, ReleaseTable

SPLITS = ("benchmark", "train")
"""The splits of ``design_split`` (migration 0008)."""


def questions_query(split: str) -> str:
    """One split of the questions config: the view's row, less its split column (the shard says it), with the
    label's source and the design's perturbation log as operation names."""
    return f"""
SELECT q.question_id, q.design_id, q.base_design_id, q.image_sha256 AS image, q.image_sha256, q.indicator, q.format,
       q.question, q.options, q.option_boxes, q.answer, q.answer_index, q.answer_box, q.box_units, q.metadata,
       d.label_source,
       coalesce((SELECT list(o.op ORDER BY o.op_index) FROM design_perturbation_op o WHERE o.design_id = q.design_id),
                CAST([] AS VARCHAR[])) AS perturbations
FROM aeseval_question_rows q JOIN design_question d USING (question_id)
WHERE q.split = '{split}'
"""


def reasoning_query(split: str) -> str:
    """One split of the reasoning config: the questions of the split whose label has a reasoning path of their format
    (view ``design_question_records`` pairs each question with the path that explains its label)."""
    return f"""
SELECT question_id, design_id, indicator, image_sha256, answer, reasoning AS steps
FROM design_question_records
WHERE split = '{split}' AND reasoning IS NOT NULL
"""


QUESTIONS = {split: questions_query(split) for split in SPLITS}
REASONING = {split: reasoning_query(split) for split in SPLITS}


def with_split(queries: dict[str, str]) -> str:
    """Every split's rows in one query, each with its split."""
    return " UNION ALL ".join(f"SELECT '{split}' AS split, q.* FROM ({query}) AS q" for split, query in queries.items())


RELEASED = with_split(QUESTIONS)
"""Every released question with its split: the rows the images and the composition are counted from."""

IMAGES = f"""
SELECT DISTINCT image_sha256, CAST(NULL AS VARCHAR) AS source_url, CAST(NULL AS VARCHAR) AS creator,
       CAST(NULL AS VARCHAR) AS license, 'Crello-format design, perturbed and rendered by aesforge' AS provider,
       'unknown' AS redistribution
FROM ({RELEASED})
"""


def lineage_rows(config: str, released: str) -> str:
    """One row per released row of ``config``; its lineage starts at the render it shows (render -> perturbed
    design -> base design -> Crello record -> source)."""
    return f"""
SELECT DISTINCT '{config}' AS config, q.split, q.question_id AS row_id, r.render_id AS entity_id
FROM ({released}) q JOIN design_render r ON r.design_id = q.design_id AND r.png_sha256 = q.image_sha256
"""


ROWS = lineage_rows("questions", RELEASED) + " UNION ALL " + lineage_rows("reasoning", with_split(REASONING))

COMPOSITION = f"SELECT split, format, count(*) FROM ({RELEASED}) GROUP BY ALL"

CITATION = """@misc{aeseval_bench,
  title = {Can Vision-Language Models Assess Graphic Design Aesthetics? A Benchmark, Evaluation, and Dataset Perspective},
  howpublished = {arXiv:2603.01083},
  note = {Method followed by this release: Crello designs perturbed at the JSON level and re-rendered, labelled per
          indicator, asked about in three formats; a training set with indicator-grounded reasoning paths}
}"""

FORMATS = """Every (perturbed design, indicator) pair is asked three ways; `format` says which.

- `aesthetic_judgment`: does the design have a flaw of this indicator? `options` is `["yes", "no"]`, `answer` is
  `yes` (flawed) or `no`, `answer_index` its position.
- `region_selection`: which of four regions has the flaw? `options` are four boxes as the prompt writes them, or
  `None` (no flaw); `answer` is the letter A-D, `answer_index` its position, `answer_box` the box (null for None).
  A flawed design's options hold the perturbed element's box, two other elements' boxes and None; a good
  design's hold three element boxes and None.
- `precise_localisation`: the box of the flawed region, or `None`. `options` is empty; `answer` is the box text
  or `None`, `answer_box` the box. Score None answers by accuracy and boxes by IoU.

Boxes are `[x1, y1, x2, y2]` in `box_units` (pixels, or fractions of the canvas). `metadata` is the JSON the
paper gives every question beside the image (canvas size; per element in paint order: type, left, top, width,
height, angle, opacity, colour and, for text, the text and its font settings); it names nothing about the edit.
`label_source` says who labelled the design: `human` (majority of reviewers), `model` (a model labeller shown human
examples) or `heuristic` (the offline judge). `perturbations` lists the operations that made the design; it is
analysis metadata, not model input."""

SPEC = ReleaseSpec(
    dataset="aeseval",
    pretty_name="AesEval graphic-design aesthetics questions",
    summary="Graphic designs in the Crello format, perturbed at the JSON level (one to three operations: moved, "
    "resized, recoloured, re-fonted elements and more) and re-rendered, then labelled per aesthetic indicator and "
    "asked about in three formats: aesthetic judgment (yes/no), region selection (one of four boxes or None) and "
    "precise localisation (a box or None), each with the design's metadata as JSON. Splits: benchmark and train, "
    "by base design; training questions carry indicator-grounded reasoning paths.",
    tables=(
        ReleaseTable(
            config="questions", key="question_id", default=True,
            description="one question about one perturbed design and one indicator, in one of the three formats",
            splits=QUESTIONS,
            images=("image",),
            columns={
                "question_id": "the question's id (design-question:<digest>), shared with the reasoning config",
                "design_id": "the perturbed design (design:<sha256 of its canonical JSON>)",
                "base_design_id": "the original design it was made from; every variant of it is in the same split",
                "image": "the design's render (null when its rights withhold the bytes)",
                "image_sha256": "sha256 of the render PNG",
                "indicator": "the aesthetic indicator the question is about",
                "format": "aesthetic_judgment, region_selection or precise_localisation",
                "question": "the prompt: the indicator and its definition, the task and how to reply",
                "options": "the choices as the prompt writes them (empty for precise_localisation)",
                "option_boxes": "each option's box [x1, y1, x2, y2], null for an option that is not a box",
                "answer": "the expected reply: yes/no, a letter A-D, or a box / None",
                "answer_index": "the answer's position among the options (null for precise_localisation)",
                "answer_box": "the box the answer names (null when there is none)",
                "box_units": "pixels or normalised (null for aesthetic_judgment)",
                "metadata": "the design's layout, colour and font information as canonical JSON text",
                "label_source": "human, model or heuristic: who decided whether the design is flawed",
                "perturbations": "the operations applied to the base design, in order (analysis only)",
            },
        ),
        ReleaseTable(
            config="reasoning", key="question_id",
            description="the indicator-grounded reasoning path explaining one question's answer",
            splits=REASONING,
            columns={
                "question_id": "the question this path explains (see the questions config)",
                "design_id": "the perturbed design", "indicator": "the indicator reasoned about",
                "image_sha256": "sha256 of the render the question shows (the image is in the questions config)",
                "answer": "the answer the path leads to: yes (flawed) or no",
                "steps": "the path: each claim with the box and id of the element it cites",
            },
        ),
    ),
    images_query=IMAGES,
    rows_query=ROWS,
    composition_query=COMPOSITION,
    assets=("design_records", "perturbed_designs", "design_renders", "design_review_sheet", "design_labels",
            "design_splits", "design_questions", "design_reasoning_paths"),
    stages=("design_records", "design_perturbation", "design_render", "design_review", "design_label",
            "design_question", "design_reasoning"),
    task_categories=("visual-question-answering", "object-detection"),
    citations=(CITATION,),
    limitations=(
        "The warehouse records no licence for Crello sources: the renders are marked redistribution unknown and "
        "ship without bytes unless the operator has cleared the designs' terms (releases.datasets.aeseval).",
        "Labels whose label_source is heuristic or model are not human judgments; the paper's benchmark is "
        "human-reviewed, so prefer designs with human labels when reporting benchmark numbers.",
        "Which flaws exist is decided by the perturbation library: real-world design flaws outside it are absent.",
        "Renders are drawn by the project's renderer with the fonts it could find, so typography can differ from "
        "the original templates.",
    ),
    rai=ResponsibleAI(
        data_collection="Crello-format design records (per-design JSON with layer images, or Parquet exports of the "
        "Crello dataset) read and validated; each base design gets seeded variants with one to three JSON-level "
        "perturbations, rendered to PNG.",
        data_collection_type=("Secondary Data Analysis", "Machine-generated"),
        preprocessing="Malformed records are rejected with their reason; every perturbation is logged with the "
        "element's box and values before and after; designs are split into benchmark and train by base design with "
        "a seed; questions are generated per (design, indicator) in three formats from the label and the log. "
        "provenance.parquet lists each row's render, design and source record.",
        annotation="Reviewers see a render and an indicator's definition and vote flawed or good; the majority is "
        "the label. Items without a resolved human vote are labelled by a model shown human examples or by the "
        "offline heuristic judge (label_source says which). Reasoning paths are written by a model told the "
        "elements' boxes, and every cited box is checked against the design.",
        personal_information="Designs are commercial templates; their text is template copy. Reviewers and their "
        "votes are not released.",
        limitations="The flaws are synthetic and limited to the perturbation library; heuristic and model labels "
        "approximate human judgment; renders depend on the available fonts.",
        biases="Crello templates are mostly English marketing and social-media designs; the indicators and their "
        "thresholds encode one school of design practice.",
        use_cases="Evaluating vision-language models on design aesthetics (benchmark split); fine-tuning them "
        "(train split, with reasoning paths).",
        sources="Crello-format design records (the Crello dataset, templates from create.vista.com); no licence is "
        "recorded for them in this build.",
    ),
    extra_sections=(("Question formats", FORMATS),),
)

aeseval_release = release_asset(SPEC, deps=["design_questions", "design_reasoning_paths", "design_renders", "release_leakage_guard"])
