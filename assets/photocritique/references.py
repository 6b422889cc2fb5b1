"""The photocritique reference set: the benchmark's filters per candidate post, three ranked references, export.

Every candidate post and every comment of it gets a decision with a reason, so the selection flow
can be printed from the warehouse (view ``photocritique_selection_flow``).
"""

import json
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
from dagster import AssetExecutionContext, AssetKey, MaterializeResult, asset

from assets.core.exports import Contents, ExportFile, publish
from assets.core.item_loop import Done, Item, Kept, run_items
from assets.photocritique.logic.selection_rules import CommentDecision, FilterParams, select_references
from assets.photocritique.logic.reddit_records import Comment, Post
from assets.photocritique.reddit_ingest import reddit_comments, reddit_posts
from assets.photocritique.post_images import candidate_entity, reddit_post_images
from assets.photocritique.settings import PhotocritiqueSettings
from assets.photocritique.store import clear_references, write_comment_decisions, write_post_decisions, write_references
from assets.core.materialization import writes
from assets.core.step import Step, recorded_step
from resources.warehouse import WarehouseResource
from warehouse.db import registered
from warehouse.ids import digest_of, entity_id
from warehouse.lineage import ActivityLog, Entity

POST_STAGE = "photocritique_post"
COMMENT_STAGE = "photocritique_comment"
NOT_FOUND = "not_found"
IMAGE_UNAVAILABLE = "image_unavailable"

# One fingerprint of everything the decisions read; equal fingerprints mean nothing to redo.
_INPUT_FINGERPRINT = """
SELECT
  (SELECT count(*) || ':' || coalesce(sum(hash(post_id)), 0) FROM reddit_candidate),
  (SELECT count(*) || ':' || coalesce(sum(hash(entity_id)), 0) FROM reddit_post),
  (SELECT count(*) || ':' || coalesce(sum(hash(entity_id)), 0) FROM reddit_comment),
  (SELECT count(*) || ':' || coalesce(sum(hash(record_id, position)), 0) FROM reddit_post_image),
  (SELECT count(*) || ':' || coalesce(sum(hash(post_id, problem_code)), 0) FROM reddit_image_resolution),
  (SELECT count(*) || ':' || coalesce(sum(hash(m.record_id, m.representative_record_id, m.pool_item_id)), 0)
     FROM pool_member m JOIN reddit_post_image i USING (record_id)),
  (SELECT count(*) || ':' || coalesce(sum(hash(j.entity_id, j.stage, j.reason_code)), 0)
     FROM rejection j WHERE j.stage NOT IN ('photocritique_post', 'photocritique_comment'))
"""


def _image_status(con, post_ids: pd.DataFrame) -> dict[str, tuple[tuple[str, str] | None, str | None, str | None]]:
    """Per post: (problem or None, image record id, pool item id), from the resolution and the pool's decisions."""
    with registered(con, "_posts", post_ids):
        resolution = {
            pid: (code, detail)
            for pid, code, detail in con.execute(
                "SELECT post_id, problem_code, detail FROM reddit_image_resolution WHERE post_id IN (SELECT post_id FROM _posts)"
            ).fetchall()
        }
        candidates = con.execute(
            "SELECT i.post_id, i.position, i.method, i.record_id, rep.pool_item_id,"
            "  (SELECT string_agg(x.stage || '/' || x.reason_code || coalesce(': ' || x.detail, ''), '; ')"
            "     FROM pool_exclusions x WHERE x.record_id = i.record_id) AS excluded"
            " FROM reddit_post_image i"
            " LEFT JOIN pool_member m ON m.record_id = i.record_id"
            " LEFT JOIN pool_member rep ON rep.record_id = m.representative_record_id"
            " WHERE i.post_id IN (SELECT post_id FROM _posts) ORDER BY i.post_id, i.position"
        ).fetchall()
    by_post: dict[str, list] = defaultdict(list)
    for row in candidates:
        by_post[row[0]].append(row[1:])
    status = {}
    for pid, (code, detail) in resolution.items():
        if code:
            status[pid] = ((code, detail or code), None, None)
            continue
        admitted = [(record_id, item) for _, _, record_id, item, _ in by_post[pid] if item is not None]
        if admitted:
            status[pid] = (None, *admitted[0])
            continue
        reasons = [
            f"#{position} {method}: {excluded or 'not decided by the image pool yet'}"
            for position, method, _, _, excluded in by_post[pid]
        ]
        status[pid] = ((IMAGE_UNAVAILABLE, "; ".join(reasons) or "no candidate"), None, None)
    return status


@dataclass(frozen=True)
class _Candidate:
    """What one post's decision reads: the post, its comments and its image status; ``missing`` instead when
    no source returned the post."""

    post_id: str
    post_entity: str | None = None
    post: str = ""  # the stored records, parsed by the item function
    comments: tuple[tuple[str, str], ...] = ()
    image: tuple[tuple[str, str] | None, str | None, str | None] = (("no_image", "image links not resolved yet"), None, None)
    missing: str | None = None


def _candidates(step: Step, post_ids: list[str]) -> list[Item[_Candidate]]:
    """One page of candidates with everything their decisions read, as items fingerprinted by it."""
    frame = pd.DataFrame({"post_id": post_ids})
    with step.batch() as log, registered(log.con, "_page", frame):
        posts = {
            pid: (entity, record)
            for pid, entity, record in log.con.execute(
                "SELECT post_id, entity_id, record FROM reddit_post WHERE post_id IN (SELECT post_id FROM _page)"
            ).fetchall()
        }
        comments: dict[str, list[tuple[str, str]]] = defaultdict(list)
        for pid, entity, record in log.con.execute(
            "SELECT post_id, entity_id, record FROM reddit_comment WHERE post_id IN (SELECT post_id FROM _page) ORDER BY comment_id"
        ).fetchall():
            comments[pid].append((entity, record))
        missing = dict(
            log.con.execute(
                "SELECT p.post_id, coalesce((SELECT string_agg(DISTINCT s.source_kind || '/' || s.reason_code, ', ')"
                "   FROM reddit_source_problem s WHERE s.item_id = p.post_id), 'no configured source returned it')"
                " FROM _page p WHERE p.post_id NOT IN (SELECT post_id FROM reddit_post)"
            ).fetchall()
        )
        images = _image_status(log.con, pd.DataFrame({"post_id": list(posts)}))
    items = []
    for pid in post_ids:
        if pid in missing:
            candidate = _Candidate(pid, missing=missing[pid])
            digest = digest_of(["missing", missing[pid]])
        else:
            entity, record = posts[pid]
            candidate = _Candidate(pid, entity, record, tuple(comments[pid]), images.get(pid, _Candidate.image))
            digest = digest_of([entity, [e for e, _ in comments[pid]], candidate.image])
        items.append(Item(candidate_entity(pid), pid, digest, candidate))
    return items


def _decide(item: Item[_Candidate], params: FilterParams) -> Kept:
    """The benchmark's rules for one post and its comments (pure); an exclusion is a decision row, written with
    its rejection rows by ``_write_decisions``."""
    c = item.payload
    if c.missing is not None:
        return Kept(c.missing, count="posts_not_found")
    post = Post.from_row(json.loads(c.post))
    comments = [(entity, Comment.from_row(json.loads(record))) for entity, record in c.comments]
    decision, comment_decisions = select_references(post, [comment for _, comment in comments], c.image[0], params)
    return Kept((decision, comment_decisions, post, comments), count=f"posts:{decision.reason_code or 'kept'}")


def _write_page(log: ActivityLog, done: list[Done[_Candidate]]) -> None:
    clear_references(log.con, [d.item.payload.post_id for d in done])
    _write_missing(log, {d.item.payload.post_id: d.outcome.value for d in done if d.item.payload.missing is not None})
    found = [d for d in done if d.item.payload.missing is None]
    _write_decisions(
        log,
        [(d.item.payload.post_id, *d.outcome.value[:2], *d.item.payload.image[1:]) for d in found],
        {d.item.payload.post_id: (d.item.payload.post_entity, d.outcome.value[2]) for d in found},
        {d.item.payload.post_id: d.outcome.value[3] for d in found},
    )


def _write_missing(log: ActivityLog, missing: dict[str, str]) -> None:
    if not missing:
        return
    log.entities(Entity(candidate_entity(pid), "reddit_candidate", attributes={"post_id": pid}) for pid in missing)
    write_post_decisions(
        log.con,
        [
            {
                "post_id": pid,
                "status": "excluded",
                "reason_code": NOT_FOUND,
                "detail": detail,
                "n_words": None,
                "n_comments": 0,
                "n_qualifying": 0,
                "post_entity_id": None,
                "image_record_id": None,
                "pool_item_id": None,
                "decision_entity_id": candidate_entity(pid),
                "activity_id": log.activity_id,
            }
            for pid, detail in missing.items()
        ],
    )
    log.rejected(POST_STAGE, ((candidate_entity(pid), NOT_FOUND, detail) for pid, detail in missing.items()))


def _write_decisions(log: ActivityLog, decisions, posts, comments) -> None:
    post_rows, comment_rows, reference_rows, entities, edges = [], [], [], [], []
    post_rejections, comment_rejections, accepted = [], [], []
    for pid, decision, comment_decisions, record_id, item in decisions:
        post_entity = posts[pid][0]
        comment_entities = {c.comment_id: e for e, c in comments[pid]}
        comment_by_id = {c.comment_id: c for _, c in comments[pid]}
        references = sorted((c for c in comment_decisions if c.rank is not None), key=lambda c: c.rank)
        decision_entity = entity_id(
            "photocritique_post",
            digest_of([post_entity, item, decision.status, decision.reason_code, [comment_entities[c.comment_id] for c in references]]),
        )
        entities.append(Entity(decision_entity, "photocritique_post", attributes={"post_id": pid, "status": decision.status}))
        edges.append((decision_entity, post_entity, "decided_from"))
        if item:
            edges.append((decision_entity, item, "image"))
        post_rows.append(
            {
                "post_id": pid,
                "status": decision.status,
                "reason_code": decision.reason_code,
                "detail": decision.detail,
                "n_words": decision.n_words,
                "n_comments": len(comment_decisions),
                "n_qualifying": decision.n_qualifying,
                "post_entity_id": post_entity,
                "image_record_id": record_id,
                "pool_item_id": item,
                "decision_entity_id": decision_entity,
                "activity_id": log.activity_id,
            }
        )
        if decision.reason_code:
            post_rejections.append((post_entity, decision.reason_code, decision.detail))
        else:
            accepted.append(post_entity)
        for c in comment_decisions:
            comment_rows.append({**_comment_row(c), "activity_id": log.activity_id})
            if c.reason_code:
                comment_rejections.append((comment_entities[c.comment_id], c.reason_code, c.detail))
            else:
                accepted.append(comment_entities[c.comment_id])
        if decision.status != "kept":
            continue
        for c in references:
            comment = comment_by_id[c.comment_id]
            reference_entity = entity_id("photocritique_reference", digest_of([pid, c.rank, comment_entities[c.comment_id]]))
            entities.append(Entity(reference_entity, "photocritique_reference", attributes={"post_id": pid, "rank": c.rank}))
            edges.append((reference_entity, comment_entities[c.comment_id], "quotes"))
            edges.append((reference_entity, decision_entity, "reference_of"))
            reference_rows.append(
                {
                    "post_id": pid,
                    "rank": c.rank,
                    "comment_id": c.comment_id,
                    "reference_entity_id": reference_entity,
                    "body": comment.body,
                    "n_words": c.n_words,
                    "score": comment.score,
                    "score_observed_at": comment.origin.retrieved_at,
                    "author_hash": comment.author_hash,
                    "activity_id": log.activity_id,
                }
            )
    log.used((posts[pid][0] for pid, *_ in decisions), "post")
    log.used((e for pid, *_ in decisions for e, _ in comments[pid]), "comment")
    log.used((item for *_, item in decisions if item), "pool_item")
    log.entities(entities)
    log.generated(e.entity_id for e in entities)
    log.derived(edges)
    write_post_decisions(log.con, post_rows)
    write_comment_decisions(log.con, comment_rows)
    write_references(log.con, reference_rows)
    log.rejected(POST_STAGE, post_rejections)
    log.rejected(COMMENT_STAGE, comment_rejections)
    log.unrejected(POST_STAGE, accepted)
    log.unrejected(COMMENT_STAGE, accepted)


def _comment_row(c: CommentDecision) -> dict:
    return {
        "comment_id": c.comment_id,
        "post_id": c.post_id,
        "status": c.status,
        "reason_code": c.reason_code,
        "detail": c.detail,
        "rank": c.rank,
        "n_words": c.n_words,
    }


@asset(
    metadata=writes("photocritique_reference", "photocritique_post_decision", "photocritique_comment_decision"),
    code_version="1",
    deps=[reddit_posts, reddit_comments, reddit_post_images, AssetKey("image_pool")],
    description="The benchmark's filters on every candidate post and comment; kept posts get three ranked"
    " references; every exclusion keeps its reason (view photocritique_selection_flow).",
)
def photocritique_references(
    context: AssetExecutionContext, warehouse: WarehouseResource, photocritique: PhotocritiqueSettings
) -> MaterializeResult:
    wh = warehouse.get_warehouse()
    params = {"filters": photocritique.filter_params().__dict__, "ranking": "score desc, then created_utc asc, then base36 id asc"}
    with recorded_step(context, wh, params) as step:
        with step.batch() as log:
            fingerprint = digest_of([list(log.con.execute(_INPUT_FINGERPRINT).fetchone()), params])
            last = step.last_inputs(log.con)
        if last == fingerprint:
            step.notes["unchanged"] = "same candidates, posts, comments, pool decisions and filters as the last decision"
            return step.result()
        pages = wh.pages("SELECT post_id FROM reddit_candidate WHERE TRUE", [], key="post_id", block=photocritique.batch_size)
        candidates = (item for page in pages for item in _candidates(step, [row[0] for row in page]))
        filters = photocritique.filter_params()
        run_items(step, POST_STAGE, candidates, lambda item: _decide(item, filters), _write_page,
                  batch_size=photocritique.batch_size, record_rejections=False)
        for reason, n in wh.query("SELECT coalesce(reason_code, 'reference') AS reason, count(*) AS n FROM"
                                  " photocritique_comment_decision WHERE activity_id = ? GROUP BY ALL",
                                  [step.activity_id]).itertuples(index=False):
            step.counts[f"comments:{reason}"] += n
        with step.batch() as log:
            step.remember_inputs(log, fingerprint)
    return step.result()


_EXPORT_QUERY = """
SELECT d.post_id, p.permalink, p.title, p.body, p.created_utc,
       b.blob_uri AS image_path, img.pixel_sha256 AS image_sha256, f.file_sha256 AS source_file_sha256,
       d.pool_item_id,
       list({'rank': r.rank, 'comment_id': r.comment_id, 'body': r.body, 'score': r.score,
             'score_observed_at': r.score_observed_at} ORDER BY r.rank) AS critiques
FROM photocritique_post_decision d
JOIN reddit_post p USING (post_id)
JOIN photocritique_reference r USING (post_id)
JOIN pool_member m ON m.pool_item_id = d.pool_item_id
JOIN image img ON img.image_id = m.image_id
JOIN record_file f ON f.record_id = m.record_id
JOIN file_blob b ON b.sha256 = f.file_sha256
WHERE d.status = 'kept'
GROUP BY ALL
ORDER BY d.post_id
"""


@asset(
    metadata=writes("export_file", where="dataset = 'photocritique'"),
    code_version="1",
    deps=[photocritique_references],
    description="One record per kept post (id, image path and hash, title, body, three ranked critiques with"
    " scores) as Parquet and JSONL, each file an entity derived from the posts it holds.",
)
def photocritique_export(
    context: AssetExecutionContext, warehouse: WarehouseResource, photocritique: PhotocritiqueSettings
) -> MaterializeResult:
    wh = warehouse.get_warehouse()
    out_dir = Path(photocritique.export_dir)
    files = [
        ExportFile(out_dir / "photocritique.parquet", _EXPORT_QUERY, "parquet"),
        ExportFile(out_dir / "photocritique.jsonl", _EXPORT_QUERY, "json"),
    ]
    kept = Contents(
        "SELECT decision_entity_id FROM photocritique_post_decision WHERE status = 'kept' ORDER BY post_id", role="post"
    )
    with recorded_step(context, wh, {"export_dir": str(out_dir)}) as step:
        publish(step, "photocritique", files, kept)
    return step.result()


