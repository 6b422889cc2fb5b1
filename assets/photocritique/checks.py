"""The photocritique reference set's contract, as a Great Expectations suite run by a blocking asset check.

Each kept post must carry exactly three references ranked 1..3, none by the submitter, each long
enough, from a post long enough, illustrated by an image that is in the pool.
"""

from collections.abc import Iterator

from dagster import AssetCheckExecutionContext, AssetCheckResult, AssetCheckSeverity, multi_asset_check

from assets.photocritique.references import photocritique_references
from assets.photocritique.settings import PhotocritiqueSettings
from quality.gx_suite import Expectation, validate
from quality.results import CONFIGURED, check_specs, store_and_report
from resources.warehouse import WarehouseResource

# One row per kept post, with the facts every expectation needs.
KEPT_POST_FACTS = """
SELECT d.post_id,
       count(r.rank) AS n_references,
       coalesce(string_agg(r.rank::VARCHAR, ',' ORDER BY r.rank), '') AS ranks,
       count(*) FILTER (WHERE r.author_hash IS NOT NULL AND r.author_hash = p.author_hash) AS n_by_submitter,
       coalesce(min(r.n_words), 0) AS min_reference_words,
       d.n_words,
       bool_or(m.pool_item_id IS NOT NULL) AS in_pool
FROM photocritique_post_decision d
JOIN reddit_post p USING (post_id)
LEFT JOIN photocritique_reference r USING (post_id)
LEFT JOIN pool_member m ON m.pool_item_id = d.pool_item_id AND m.is_representative
WHERE d.status = 'kept'
GROUP BY d.post_id, d.n_words
"""


def reference_set_expectations(references: int, min_comment_words: int, min_post_words: int) -> list[Expectation]:
    ranks = ",".join(str(r) for r in range(1, references + 1))
    between, in_set = "ExpectColumnValuesToBeBetween", "ExpectColumnValuesToBeInSet"
    return [
        Expectation("references_per_kept_post", f"exactly {references} references per kept post", between,
                    {"column": "n_references", "min_value": references, "max_value": references}),
        Expectation("reference_ranks_without_gaps", f"ranks are exactly {ranks}", in_set, {"column": "ranks", "value_set": [ranks]}),
        Expectation("no_reference_by_submitter", "no reference was written by the post's author", between,
                    {"column": "n_by_submitter", "min_value": 0, "max_value": 0}),
        Expectation("references_long_enough", f"every reference has at least {min_comment_words} words", between,
                    {"column": "min_reference_words", "min_value": min_comment_words}),
        Expectation("posts_long_enough", f"title plus body hold at least {min_post_words} words", between,
                    {"column": "n_words", "min_value": min_post_words}),
        Expectation("post_image_in_pool", "every kept post is linked to a kept pool image", in_set,
                    {"column": "in_pool", "value_set": [True]}),
    ]




_DEFAULTS = PhotocritiqueSettings.model_fields


@multi_asset_check(
    specs=check_specs(reference_set_expectations(*(_DEFAULTS[f].default for f in ("references_per_post",
                                                                                  "min_comment_words", "min_post_words"))),
                      photocritique_references, note=CONFIGURED),
    description="Great Expectations suite on the kept posts: three gap-free ranked references, none by the submitter,"
    " word minimums, and a pool image for every post.",
)
def photocritique_references_contract(
    context: AssetCheckExecutionContext, warehouse: WarehouseResource, photocritique: PhotocritiqueSettings
) -> Iterator[AssetCheckResult]:
    wh = warehouse.get_warehouse()
    frame = wh.query(KEPT_POST_FACTS)
    expectations = reference_set_expectations(
        photocritique.references_per_post, photocritique.min_comment_words, photocritique.min_post_words
    )
    outcomes = validate(frame, "photocritique_references", expectations)
    yield from store_and_report(wh, context.run.run_id, "photocritique_references", outcomes, AssetCheckSeverity.ERROR)
