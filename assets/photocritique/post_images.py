"""Post images into the shared pool: resolve each candidate post's image links and hand them to the pool.

The pool then fetches, filters and de-duplicates them like any other source, so a Reddit photo
carries the same provenance (fetch attempts, hashes, duplicate evidence) as every pool image,
plus the post it illustrates. An image found in a local folder (``local_images``, a ``url_rewrite`` mirror
folder) is named relative to the warehouse's root, like every local file the pool records.
"""

import json
from dataclasses import dataclass

from dagster import AssetExecutionContext, MaterializeResult, asset

from assets.image_pool.store import REKEY_SCOPE, SourceRow, location_renames, write_source_records
from assets.core.item_loop import Done, Item, Kept, run_items
from assets.photocritique.logic.image_links import locate, resolve_images
from assets.photocritique.logic.reddit_records import Post
from assets.photocritique.logic.selection_rules import IMAGE_NOT_LOCAL
from assets.photocritique.reddit_ingest import reddit_posts
from assets.photocritique.store import replace_post_images
from assets.photocritique.settings import PhotocritiqueSettings, named_locator
from assets.core.materialization import writes
from assets.core.step import recorded_step
from resources.warehouse import WarehouseResource
from warehouse.db import Warehouse
from warehouse.ids import canonical_json, digest_of, entity_id
from warehouse.lineage import ActivityLog

IMAGE_RELATION = "image_of_post"
IMAGE_STAGE = "reddit_post_images"


def candidate_entity(post_id: str) -> str:
    """The entity of a candidate post id, whatever copy of the post is current (its decisions and faults)."""
    return entity_id("reddit_candidate", digest_of(["reddit", post_id]))


def image_source_row(post: Post, url: str, method: str, position: int, locator: str, settings: PhotocritiqueSettings) -> SourceRow:
    """The pool record for one image candidate: the post is its provenance (permalink, pseudonymous creator)."""
    return SourceRow(
        source_type="reddit",
        source_name=f"reddit r/{post.subreddit}",
        locator=locator,
        title=post.title[:500] or post.post_id,
        creator=f"reddit user {post.author_hash}" if post.author_hash else "unknown",
        provider="Reddit",
        source_url=post.permalink,
        license=settings.image_license,
        redistribution=settings.image_redistribution,
        domain="photography",
        extra={"post_id": post.post_id, "position": position, "method": method, "image_url": url},
    )


@asset(
    metadata=writes("reddit_post_image", "reddit_image_resolution"),
    code_version="1",
    deps=[reddit_posts],
    description="Each candidate post's image candidates (direct, gallery order, imgur, crosspost parent, preview"
    " fallback) handed to the shared pool as source records; posts without a usable link keep the reason.",
)
def reddit_post_images(
    context: AssetExecutionContext, warehouse: WarehouseResource, photocritique: PhotocritiqueSettings
) -> MaterializeResult:
    wh = warehouse.get_warehouse()
    local = photocritique.local_images
    params = {
        "gallery_items": photocritique.gallery_items,
        "local_images": {**local.model_dump(), "path": wh.name_of(local.path)} if local else None,
        "url_rewrite": photocritique.named_url_rewrite(wh.name_of),
        "image_license": photocritique.image_license,
        "image_redistribution": photocritique.image_redistribution,
    }
    rule_digest = digest_of(params)
    with recorded_step(context, wh, params) as step:
        step.rekey(REKEY_SCOPE, location_renames)  # the pool's rows of before migration 0015, before any is added
        pages = wh.pages(
            "SELECT p.post_id, p.entity_id, p.record FROM reddit_post p JOIN reddit_candidate c USING (post_id)"
            " LEFT JOIN reddit_image_resolution r USING (post_id)"
            " WHERE (r.post_id IS NULL OR r.post_entity_id <> p.entity_id OR r.rule_digest <> ?)",
            [rule_digest],
            key="p.post_id",
            block=photocritique.batch_size,
        )
        posts = (Item(candidate_entity(post_id), post_id, digest_of([post_entity, rule_digest]), (post_entity, record))
                 for page in pages for post_id, post_entity, record in page)
        run_items(step, IMAGE_STAGE, posts, lambda item: resolve_post(item, photocritique, rule_digest, wh), _write_images,
                  batch_size=photocritique.batch_size)
        candidates = wh.scalar("SELECT count(*) FROM reddit_post_image WHERE activity_id = ?", [step.activity_id])
        if candidates:
            step.counts["image_candidates"] += candidates
    return step.result()


@dataclass(frozen=True)
class _Resolved:
    resolution: dict
    images: list[dict]
    rows: list[SourceRow]


def resolve_post(item: Item, settings: PhotocritiqueSettings, rule_digest: str, wh: Warehouse) -> Kept:
    """One post's image candidates as pool records, or why it has none (a decision of the next stage, so kept
    here with its problem); local files are named by ``wh``. A candidate that only the network could supply is
    left out while ``local_images`` is authoritative (``fallback_to_network`` off); none left is ``image_not_local``."""
    post_entity, record = item.payload
    post = Post.from_row(json.loads(record))
    local = settings.local_images
    resolution = resolve_images(post, settings.gallery_items)
    rows, images, not_local = [], [], []
    for candidate in resolution.candidates:
        found = locate(candidate.url, post.post_id, candidate.position, local.path if local else None,
                       local.pattern if local else "{post_id}*", settings.url_rewrite,
                       network=local is None or local.fallback_to_network)
        if found is None:
            not_local.append((candidate.url, IMAGE_NOT_LOCAL))
            continue
        locator = named_locator(wh.name_of, found)
        row = image_source_row(post, candidate.url, candidate.method, candidate.position, locator, settings)
        rows.append(row)
        images.append({"post_id": post.post_id, "position": candidate.position, "url": candidate.url,
                       "method": candidate.method, "media_id": candidate.media_id, "width": candidate.width,
                       "height": candidate.height, "locator": locator, "record_id": row.record_id})
    problem = resolution.problem
    if problem is None and not rows and local is not None:
        problem = (IMAGE_NOT_LOCAL, f"no file matching {local.pattern!r} in {wh.name_of(local.path)} (and no url_rewrite"
                   " folder holds it); photocritique.local_images.fallback_to_network is off, so nothing was downloaded")
    skipped = [*resolution.skipped, *not_local]
    summary = {
        "post_id": post.post_id,
        "post_entity_id": post_entity,
        "n_candidates": len(rows),
        "problem_code": problem[0] if problem else None,
        "detail": problem[1] if problem else None,
        "skipped": canonical_json([list(s) for s in skipped]) if skipped else None,
        "rule_digest": rule_digest,
    }
    count = "posts_with_images" if rows else f"posts_without_image:{problem[0] if problem else '?'}"
    return Kept(_Resolved(summary, images, rows), count=count)


def _write_images(log: ActivityLog, done: list[Done]) -> None:
    resolved = [(d.item.payload[0], d.outcome.value) for d in done]
    log.used((entity for entity, _ in resolved), "post")
    for post_entity, r in resolved:
        if r.rows:
            write_source_records(log, r.rows, post_entity, relation=IMAGE_RELATION)
    replace_post_images(
        log.con,
        [r.resolution["post_id"] for _, r in resolved],
        [{**i, "activity_id": log.activity_id} for _, r in resolved for i in r.images],
        [{**r.resolution, "activity_id": log.activity_id} for _, r in resolved],
    )
