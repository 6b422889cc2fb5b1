"""The r/photocritique benchmark release: each kept post with its image and its three ranked human critiques.

Reddit images are ``restricted`` by default, so the release carries their ids, source URLs and sha256s, not their
bytes (the way RPCD ships Reddit ids); the card counts them. Comment authors never appear (the warehouse keeps
only keyed hashes of them, and the release leaves even those out).
"""

from assets.releases.logic.croissant import ResponsibleAI
from assets.releases.release_asset import release_asset
from assets.releases.writer import ReleaseSpec, ReleaseTable

POSTS = """
SELECT r.post_id AS id, r.permalink, r.title, r.body, r.n_words, p.pixel_sha256 AS image,
       p.pixel_sha256 AS image_sha256, p.source_url, p.redistribution, r.pool_item_id,
       [struct_pack(rank := c.rank, comment_id := c.comment_id, score := c.score, n_words := c.n_words, body := c.body)
        FOR c IN r.critiques] AS critiques
FROM photocritique_reference_set r
LEFT JOIN pool_images p USING (pool_item_id)
"""

IMAGES = """
SELECT DISTINCT p.pixel_sha256 AS image_sha256, p.source_url, p.creator, p.license, p.provider, p.redistribution
FROM photocritique_reference_set r JOIN pool_images p USING (pool_item_id)
"""

ROWS = """
SELECT 'posts' AS config, 'test' AS split, d.post_id AS row_id, d.decision_entity_id AS entity_id
FROM photocritique_post_decision d WHERE d.status = 'kept'
"""

CITATION = """@misc{photocritique_benchmark,
  title = {Can MLLMs Critique Like Humans? Evaluating Open-Ended Aesthetic Reasoning in Multimodal Large Language Models},
  author = {Ghiasvand, Sajjad and Amirizaniani, Maryam and others},
  note = {Method followed by this release: posts rebuilt from Reddit archives with three ranked human critiques}
}"""

SPEC = ReleaseSpec(
    dataset="photocritique",
    pretty_name="r/photocritique critique benchmark",
    summary="Posts from r/photocritique rebuilt from Reddit archives: the photo, the poster's text and the three "
    "highest-ranked qualifying human critiques, as references for scoring model critiques. One split: test.",
    tables=(ReleaseTable(
        config="posts", key="id", default=True,
        description="one r/photocritique post with its photo and three ranked critiques",
        splits={"test": POSTS},
        images=("image",),
        columns={"id": "Reddit submission id (base36)", "image": "the post's photo (null when withheld by licence)",
                 "image_sha256": "sha256 of the photo's normalised pixels", "critiques": "the three ranked reference critiques",
                 "source_url": "where the photo was published", "pool_item_id": "the image's id in the shared pool"},
    ),),
    images_query=IMAGES,
    rows_query=ROWS,
    composition_query="SELECT 'test', 'photography', count(*) FROM photocritique_reference_set",
    assets=("reddit_posts", "reddit_comments", "reddit_post_images", "photocritique_references"),
    stages=("reddit_candidates", "reddit_post_images", "photocritique_post", "photocritique_comment"),
    task_categories=("image-to-text",),
    citations=(CITATION,),
    limitations=(
        "Reddit photos are user content: the release carries their ids, URLs and sha256s, not their bytes; a user "
        "fetches them from the source and checks the sha256.",
        "Critique ranking follows Reddit scores at archive time, which favour early comments.",
    ),
    rai=ResponsibleAI(
        data_collection="Submissions and comments of r/photocritique read from Reddit archive dumps (and optionally "
        "the archive API or the live API), filtered to posts with enough qualifying critiques.",
        data_collection_type=("Web Scraping", "Secondary Data Analysis"),
        preprocessing="Posts and comments are merged across sources, filtered by length, deletion and moderation "
        "rules, and the top three critiques by score are kept; the post's photo is fetched, normalized and "
        "de-duplicated in the shared image pool. provenance.parquet lists every step per post.",
        annotation="The critiques are the community's own comments; no new annotation was made.",
        personal_information="Usernames are never released; the warehouse keeps only keyed hashes of them. Comment "
        "bodies are public Reddit text and may mention people.",
        limitations="English-language community; photography only; critique quality varies with the commenter.",
        biases="The community's taste and Reddit's voting dynamics shape which critiques rank highest.",
        use_cases="Evaluating model-written photo critiques against ranked human references. Not for training.",
        sources="Reddit (r/photocritique) archive dumps; images redistributable only where their licence allows.",
    ),
)

photocritique_release = release_asset(SPEC, deps=["photocritique_references", "reddit_post_images"])
