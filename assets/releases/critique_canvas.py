"""The CritiqueCanvas release: planner -> annotator -> verifier critiques of pool images, one instruction-response
pair per row, in two configs over the same rows.

``records`` (the default) is the full pair with its image and a provenance summary (source and rights, the three
roles' models, template versions and model-call ids, the verifier's verdicts, the human audit); ``conversations``
is the compact LLaVA form trainers read ({id, image, conversations: [{from, value}]}). Both read the documented view
``critique_canvas_records`` (verifier-accepted pairs of complete, split groups the audit did not reject), split as
the groups are (train, eval), and share their ids. Run and activity ids stay out of the rows (provenance.parquet
carries the lineage), and a source URL that only names a local file is left empty.
"""

from assets.releases.logic.croissant import ResponsibleAI
from assets.releases.public_fields import public_url
from assets.releases.release_asset import release_asset
from assets.releases.writer import ReleaseSpec, ReleaseTable

SPLITS = ("train", "eval")


def records_query(split: str) -> str:
    """One split of the records config: the view's row, its provenance without activity and run ids."""
    return f"""
SELECT id, image_sha256 AS image, image_sha256, domain, dimension, selected_dimensions, improvement, instruction,
       response, conversation_group, turn,
       {{'pool_item_id': provenance.pool_item_id, 'image_id': provenance.image_id,
        'duplicate_cluster': provenance.duplicate_cluster, 'source_url': {public_url('provenance.source_url')},
        'title': provenance.title, 'creator': provenance.creator, 'provider': provenance.provider,
        'license': provenance.license, 'redistribution': provenance.redistribution,
        'chain_digest': provenance.chain_digest, 'planner': provenance.planner, 'annotator': provenance.annotator,
        'verifier': provenance.verifier,
        'audit': {{'rounds': provenance.audit.rounds, 'n_reviews': CAST(provenance.audit.n_reviews AS BIGINT),
                  'accepted': provenance.audit.accepted}},
        'split_seed': provenance.split_seed}} AS provenance
FROM critique_canvas_records WHERE split = '{split}'
"""


def conversations_query(split: str) -> str:
    """One split of the conversations config: the instruction as the human turn after the image, the response as
    the assistant's."""
    return f"""
SELECT id, image_sha256 AS image, image_sha256, llava_conversation(instruction, response) AS conversations
FROM critique_canvas_records WHERE split = '{split}'
"""


IMAGES = f"""
SELECT DISTINCT image_sha256, {public_url('provenance.source_url')} AS source_url, provenance.creator,
       provenance.license, provenance.provider, provenance.redistribution
FROM critique_canvas_records
"""

ROWS = """
SELECT c.config, r.split, r.id AS row_id, r.id AS entity_id
FROM critique_canvas_records r CROSS JOIN (VALUES ('records'), ('conversations')) AS c(config)
"""

AESCANVAS_CITATION = """@misc{hu2026aescanvas,
  title = {AesCanvas: A Large-Scale Dataset and Benchmark for Aesthetic Critique and Contextual Suitability},
  author = {Hu, Xuanwei and Dong, Haoyu and Wu, Kejun and Liu, Tianyi and Gao, Jianjun},
  year = {2026},
  eprint = {2608.26713},
  archivePrefix = {arXiv}
}"""
"""The paper whose method CritiqueCanvas and ContextCanvas follow (seed paper 000)."""

SPEC = ReleaseSpec(
    dataset="critique_canvas",
    pretty_name="CritiqueCanvas aesthetic critiques",
    summary="Long-form aesthetic critiques of photographs, paintings and virtual images as instruction-response "
    "pairs: a planner model picks the aesthetic dimensions worth discussing, an annotator model writes six "
    "question-answer pairs per image, a verifier model keeps the grounded ones, and a human audit removes the pairs "
    "its reviewers reject. Splits: train and eval, by duplicate cluster (no near-copy on both sides).",
    tables=(
        ReleaseTable(
            config="records", key="id", default=True,
            description="one verifier-accepted critique pair with its image and provenance summary",
            splits={split: records_query(split) for split in SPLITS},
            images=("image",),
            columns={
                "id": "the pair's id (critique_pair:<digest>), shared with the conversations config",
                "image": "the normalized pool image (null when its licence withholds the bytes)",
                "image_sha256": "sha256 of the normalized image",
                "domain": "photography, painting or virtual",
                "dimension": "the aesthetic dimension the pair mainly deals with (null: several)",
                "selected_dimensions": "the dimensions the planner chose for the image",
                "improvement": "whether the pair asks how the image could be improved (one pair per image)",
                "instruction": "the question", "response": "the critic's answer",
                "conversation_group": "the image's dialogue: every pair of one image shares it",
                "turn": "the pair's place in the dialogue (1-6)",
                "provenance": "source and rights, the three roles' models, template versions and model calls, the "
                "verifier's verdicts and the human audit; never model input",
            },
        ),
        ReleaseTable(
            config="conversations", key="id",
            description="the same pair in the LLaVA conversation form",
            splits={split: conversations_query(split) for split in SPLITS},
            images=("image",),
            columns={
                "id": "the pair's id, as in the records config",
                "image": "the normalized pool image (null when its licence withholds the bytes)",
                "image_sha256": "sha256 of the normalized image",
                "conversations": "the human turn ('<image>' and the instruction), then the gpt turn (the response)",
            },
        ),
    ),
    images_query=IMAGES,
    rows_query=ROWS,
    composition_query="SELECT split, domain, count(*) FROM critique_canvas_records GROUP BY ALL",
    assets=("critique_pairs", "critique_splits", "critique_audit_sample", "critique_audit_report"),
    stages=("critique_admission", "critique", "critique_verifier", "critique_audit"),
    task_categories=("image-to-text", "visual-question-answering"),
    citations=(AESCANVAS_CITATION,),
    limitations=(
        "The critiques are model-written; the verifier and a sampled human audit filter them, but unaudited pairs "
        "can still hold mistaken or generic statements.",
        "Pairs of one image share its split and its conversation group; train on groups, not single pairs, to "
        "keep an image's dialogue together.",
        "An image whose licence does not allow redistribution ships without bytes: fetch it from its source URL "
        "(ATTRIBUTION.csv) and check the sha256.",
    ),
    extra_sections=(("Using the configs", "`records` and `conversations` hold the same pairs under the same "
                     "`id`: train from `conversations` (LLaVA-style trainers read it as it is) and look a pair's "
                     "dimension, domain and provenance up in `records`. The pairs of one image (up to six) share "
                     "`conversation_group` and its split; `turn` orders them."),),
    rai=ResponsibleAI(
        data_collection="Images from the shared multi-domain pool (manifests and folders with recorded licences; "
        "benchmark images such as r/photocritique photos are not admitted by default), critiqued by a planner, "
        "annotator and verifier model through the project's model-call layer.",
        data_collection_type=("Secondary Data Analysis", "Machine-generated"),
        preprocessing="Pool images are normalized, filtered and de-duplicated (exact, perceptual and CLIP); each "
        "kept image gets a dimension plan, six question-answer pairs and a verdict per pair; pairs failing the "
        "verifier or rejected by the human audit are dropped; groups are split by duplicate cluster, balanced by "
        "domain. provenance.parquet lists every step per pair.",
        annotation="Model-written (planner, annotator, verifier prompts are versioned in the project); a seeded, "
        "domain-stratified sample is reviewed by people who accept or reject each pair; their verdicts are "
        "aggregated per pair (audit) and people are never named in the release.",
        personal_information="No personal data is collected on purpose; images may show people as their sources "
        "do, and reviewers appear in no column.",
        limitations="The critiques reflect the models' aesthetic vocabulary and can be generic or wrong where the "
        "verifier missed it; the audit covers a sample, not every pair.",
        biases="The pool's sources decide which subjects, styles and cultures appear; the models' training shapes "
        "what they find beautiful.",
        use_cases="Instruction-tuning and evaluating models that write aesthetic critiques; the eval split for "
        "reference-based scoring.",
        sources="The image pool's source records (see ATTRIBUTION.csv for each image's URL, creator and licence).",
    ),
)

critique_canvas_release = release_asset(SPEC, deps=["critique_splits", "critique_audit_report", "release_leakage_guard"])
