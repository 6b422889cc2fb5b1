"""Post images into the shared pool: resolve each candidate post's image links and hand them to the pool.

The pool then fetches, filters and de-duplicates them like any other source, so a Reddit photo
carries the same provenance (fetch attempts, hashes, duplicate evidence) as every pool image,
plus the post it illustrates.
"""

import json

import pandas as pd
from dagster import AssetExecutionContext, MaterializeResult, asset

from assets.collection import write_source_records
from assets.lib.reddit_images import locate, resolve_images
from assets.lib.reddit_records import Post
from assets.lib.sources import SourceRow
from assets.reddit_ingest import reddit_posts
from assets.reddit_settings import PhotocritiqueSettings
from assets.step import recorded_step
from resources.warehouse import WarehouseResource
from warehouse.db import insert_rows, registered
from warehouse.ids import canonical_json, digest_of

IMAGE_RELATION = "image_of_post"


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
    group_name="photocritique",
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
        "local_images": local.model_dump() if local else None,
        "url_rewrite": photocritique.url_rewrite,
        "image_license": photocritique.image_license,
        "image_redistribution": photocritique.image_redistribution,
    }
    rule_digest = digest_of(params)
    with recorded_step(context, wh, params) as step:
        pages = wh.pages(
            "SELECT p.post_id, p.entity_id, p.record FROM reddit_post p JOIN reddit_candidate c USING (post_id)"
            " LEFT JOIN reddit_image_resolution r USING (post_id)"
            " WHERE (r.post_id IS NULL OR r.post_entity_id <> p.entity_id OR r.rule_digest <> ?)",
            [rule_digest],
            key="p.post_id",
            block=photocritique.batch_size,
        )
        for page in pages:
            resolutions, images, records = [], [], []
            for post_id, post_entity, record in page:
                post = Post.from_row(json.loads(record))
                resolution = resolve_images(post, photocritique.gallery_items)
                rows = []
                for candidate in resolution.candidates:
                    locator = locate(
                        candidate.url,
                        post_id,
                        candidate.position,
                        local.path if local else None,
                        local.pattern if local else "{post_id}*",
                        photocritique.url_rewrite,
                    )
                    row = image_source_row(post, candidate.url, candidate.method, candidate.position, locator, photocritique)
                    rows.append(row)
                    images.append(
                        {
                            "post_id": post_id,
                            "position": candidate.position,
                            "url": candidate.url,
                            "method": candidate.method,
                            "media_id": candidate.media_id,
                            "width": candidate.width,
                            "height": candidate.height,
                            "locator": locator,
                            "record_id": row.record_id,
                        }
                    )
                records.append((post_entity, rows))
                problem = resolution.problem
                resolutions.append(
                    {
                        "post_id": post_id,
                        "post_entity_id": post_entity,
                        "n_candidates": len(rows),
                        "problem_code": problem[0] if problem else None,
                        "detail": problem[1] if problem else None,
                        "skipped": canonical_json([list(s) for s in resolution.skipped]) if resolution.skipped else None,
                        "rule_digest": rule_digest,
                    }
                )
                step.counts["posts_with_images" if rows else f"posts_without_image:{problem[0] if problem else '?'}"] += 1
            ids = pd.DataFrame({"post_id": [r["post_id"] for r in resolutions]})
            with step.batch() as log, registered(log.con, "_posts", ids):
                log.used((entity for entity, _ in records), "post")
                for post_entity, rows in records:
                    if rows:
                        write_source_records(log, rows, post_entity, relation=IMAGE_RELATION)
                log.con.execute("DELETE FROM reddit_post_image WHERE post_id IN (SELECT post_id FROM _posts)")
                insert_rows(log.con, "reddit_post_image", [{**i, "activity_id": log.activity_id} for i in images])
                insert_rows(
                    log.con, "reddit_image_resolution", [{**r, "activity_id": log.activity_id} for r in resolutions], conflict="replace"
                )
            step.counts["image_candidates"] += len(images)
    return MaterializeResult(metadata=step.summary())
