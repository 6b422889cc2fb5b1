"""Whether each perturbed design really shows a flaw, per indicator: human votes where people gave them
(majority, documented tie rule), the offline heuristic judge where they did not.

Pure logic: assets/lib/design_review.py (sheets, votes, majority, agreement), assets/lib/design_judge.py
(measurements), assets/lib/design_indicators.py (which indicators an operation may affect).
"""

import csv
import io
import json
from collections import defaultdict
from pathlib import Path

import pandas as pd
from dagster import AssetExecutionContext, Failure, MaterializeResult, MetadataValue, asset
from PIL import Image

from assets.design_rendering import design_renders
from assets.design_settings import DesignSettings
from assets.exports import Contents, ExportFile, publish
from assets.lib.design_indicators import indicator, indicators_affected
from assets.lib.design_judge import JudgeThresholds, judge_design
from assets.lib.design_model import Design
from assets.lib.design_review import (
    ReviewItem,
    ReviewSheetError,
    Vote,
    indicator_agreement,
    majority_labels,
    parse_review_votes,
    review_item,
)
from assets.returned_sheets import sheets_to_read
from assets.step import Step, recorded_step
from resources.blob_store import BlobStore, BlobStoreResource
from resources.warehouse import WarehouseResource
from warehouse.db import insert_rows, registered
from warehouse.ids import entity_id
from warehouse.lineage import Entity

REVIEW_STAGE = "design_review"

_SHEET_QUERY = """
SELECT '{review_round}' AS review_round, i.item_id, i.design_id, local_path(i.image) AS image, i.indicator, i.definition,
       '' AS annotator, '' AS vote, '' AS comment
FROM design_review_item i ORDER BY i.item_id
"""


def answer_elements(ops: list[tuple[str, str, str]]) -> dict[str, str]:
    """{indicator: element id} for one perturbed design's logged (element_id, element_type, op), in log order:
    the indicator's question points at the first changed element whose operation may affect it."""
    chosen: dict[str, str] = {}
    for element_id, element_type, op in ops:
        for name in indicators_affected([{"op": op, "element_type": element_type}]):
            chosen.setdefault(name, element_id)
    return chosen


@asset(
    group_name="design_aesthetics",
    code_version="1",
    deps=[design_renders],
    description="One review item per perturbed design and indicator its operations may affect, and the blank"
    " review sheet (render path and the indicator's definition per row) for annotators.",
)
def design_review_sheet(context: AssetExecutionContext, warehouse: WarehouseResource, designs: DesignSettings) -> MaterializeResult:
    wh = warehouse.get_warehouse()
    review = designs.review
    with recorded_step(context, wh, {"round": review.round, "sheet_dir": review.sheet_dir}) as step:
        select = ("SELECT d.design_id, r.png_uri FROM design d JOIN design_render r USING (design_id) WHERE d.is_perturbed"
                  " AND NOT EXISTS (SELECT 1 FROM design_review_item i WHERE i.design_id = d.design_id)")
        for page in wh.pages(select, [], key="d.design_id", block=designs.batch_size * 8):
            frame = {"design_id": [row[0] for row in page]}
            with step.batch() as log, registered(log.con, "_page", pd.DataFrame(frame)):
                ops = log.con.execute(
                    "SELECT design_id, element_id, element_type, op FROM design_perturbation_op"
                    " WHERE design_id IN (SELECT design_id FROM _page) ORDER BY design_id, op_index").fetchall()
            by_design: dict[str, list] = defaultdict(list)
            for design_id, *op in ops:
                by_design[design_id].append(tuple(op))
            items = [
                review_item(design_id, uri, name, indicator(name).definition)
                for design_id, uri in page for name in answer_elements(by_design[design_id])
            ]
            with step.batch() as log:
                insert_rows(log.con, "design_review_item", [{**i.__dict__, "activity_id": log.activity_id} for i in items])
            step.counts["items_added"] += len(items)
        target = Path(review.sheet_dir) / f"design_review_round-{review.round}.csv"
        sheet = ExportFile(target, _SHEET_QUERY.format(review_round=review.round.replace("'", "''")), "csv")
        publish(step, "design_review", [sheet], Contents("SELECT DISTINCT design_id FROM design_review_item ORDER BY 1",
                                                         role="design", relation="asks_about"))
    return MaterializeResult(metadata=step.summary())


@asset(
    group_name="design_aesthetics",
    code_version="1",
    deps=[design_review_sheet],
    description="Per review item, flawed or not: the annotators' majority where votes resolve it, else the offline"
    " heuristic judge from measurements of the render; agreement per indicator. A malformed sheet fails the run"
    " naming its rows, after the good sheets are stored.",
)
def design_labels(
    context: AssetExecutionContext, warehouse: WarehouseResource, blob_store: BlobStoreResource, designs: DesignSettings
) -> MaterializeResult:
    wh = warehouse.get_warehouse()
    store = blob_store.get_store()
    review = designs.review
    thresholds = JudgeThresholds()
    params = {"tie_breaker": review.tie_breaker, "min_votes": review.min_votes, "judge": thresholds.digest()}
    with recorded_step(context, wh, params) as step:
        problems = _ingest_votes(step, Path(review.returned_dir))
        with step.batch() as log:
            votes = _votes(log.con)
            agreement = indicator_agreement(votes)
            log.con.execute("DELETE FROM design_review_agreement")
            insert_rows(log.con, "design_review_agreement", [
                {"indicator": a.indicator, "n_items": a.n_items, "n_pairs": a.n_pairs,
                 "mean_pairwise_agreement": a.mean_pairwise_agreement, "fleiss_kappa": a.fleiss_kappa,
                 "activity_id": log.activity_id} for a in agreement])
        human = majority_labels(votes, review.tie_breaker, review.min_votes)
        vote_counts = {item: label.n_votes for item, label in human.items()}
        _label_items(step, store, human, vote_counts, thresholds, designs.batch_size)
        if problems:
            raise Failure(description="malformed review sheet(s); the other sheets were stored. Fix the rows named and run"
                          " again:\n" + "\n".join(problems), metadata={"sheets": MetadataValue.json(problems)})
    return MaterializeResult(metadata=step.summary())


def _votes(con) -> list[Vote]:
    return [Vote(*row) for row in con.execute(
        "SELECT v.review_round, v.item_id, i.design_id, i.indicator, v.annotator, v.flawed, coalesce(v.comment, ''),"
        " v.sheet_path, v.sheet_row FROM design_review_vote v JOIN design_review_item i USING (item_id)"
        " ORDER BY v.item_id, v.annotator").fetchall()]


def _ingest_votes(step: Step, returned: Path) -> list[str]:
    with step.batch() as log:
        known_items = {
            item_id: ReviewItem(item_id, design_id, image, name, definition)
            for item_id, design_id, image, name, definition in log.con.execute(
                "SELECT item_id, design_id, image, indicator, definition FROM design_review_item").fetchall()
        }
        known = {path: (sha, status, detail) for path, sha, status, detail in
                 log.con.execute("SELECT path, sha256, status, detail FROM design_review_sheet").fetchall()}
    to_read, problems = sheets_to_read(returned, known)
    for path, sha in to_read:
        error, votes, blank = None, [], 0
        try:
            with path.open(encoding="utf-8-sig", newline="") as stream:
                votes, blank = parse_review_votes(stream, path.name, known_items)
        except ReviewSheetError as exc:
            error = exc
        except (UnicodeDecodeError, csv.Error) as exc:
            error = ReviewSheetError(path.name, [(None, f"not a UTF-8 CSV file: {exc}")])
        sheet_entity = entity_id("review_sheet", sha)
        with step.batch() as log:
            log.entities([Entity(sheet_entity, "review_sheet", sha, {"path": str(path)})])
            log.used([sheet_entity], "review_sheet")
            log.con.execute("DELETE FROM design_review_vote WHERE sheet_path = ?", [str(path)])
            insert_rows(log.con, "design_review_vote", [
                {"item_id": v.item_id, "annotator": v.annotator, "review_round": v.review_round, "flawed": v.flawed,
                 "comment": v.comment or None, "sheet_path": str(path), "sheet_row": v.row, "activity_id": log.activity_id}
                for v in votes], conflict="replace")
            insert_rows(log.con, "design_review_sheet", [
                {"path": str(path), "sha256": sha, "entity_id": sheet_entity, "status": "rejected" if error else "ingested",
                 "reason_code": error.reason_code if error else None, "detail": str(error) if error else None,
                 "n_votes": len(votes), "n_blank": blank, "activity_id": log.activity_id}], conflict="replace")
            if error:
                log.rejected(REVIEW_STAGE, [(sheet_entity, error.reason_code, str(error))])
        if error:
            problems.append(str(error))
        step.counts["sheets_rejected" if error else "sheets_ingested"] += 1
        step.counts["votes_ingested"] += len(votes)
    return problems


def _label_items(step: Step, store: BlobStore, human: dict, vote_counts: dict[str, int], thresholds: JudgeThresholds,
                 batch_size: int) -> None:
    """(Re)label the items whose label is missing or whose vote count changed; renders are judged once per design."""
    wh = step.warehouse
    select = ("SELECT d.design_id, d.record, r.png_sha256 FROM design d JOIN design_render r USING (design_id)"
              " WHERE d.design_id IN (SELECT design_id FROM design_review_item)")
    for page in wh.pages(select, [], key="d.design_id", block=batch_size):
        with step.batch() as log, registered(log.con, "_page", pd.DataFrame({"design_id": [p[0] for p in page]})):
            items = log.con.execute(
                "SELECT i.item_id, i.design_id, i.indicator, l.n_votes FROM design_review_item i"
                " LEFT JOIN design_label l ON l.design_id = i.design_id AND l.indicator = i.indicator"
                " WHERE i.design_id IN (SELECT design_id FROM _page)").fetchall()
            ops = log.con.execute(
                "SELECT design_id, element_id, element_type, op FROM design_perturbation_op"
                " WHERE design_id IN (SELECT design_id FROM _page) ORDER BY design_id, op_index").fetchall()
        stale = [i for i in items if i[3] is None or i[3] != vote_counts.get(i[0], 0)]
        if not stale:
            continue
        by_design: dict[str, list] = defaultdict(list)
        for design_id, *op in ops:
            by_design[design_id].append(tuple(op))
        pages = {design_id: (record, sha) for design_id, record, sha in page}
        rows = []
        for design_id in sorted({i[1] for i in stale}):
            record, sha = pages[design_id]
            wanted = [i for i in stale if i[1] == design_id]
            answers = answer_elements(by_design[design_id])
            unresolved = [i for i in wanted if human.get(i[0]) is None or human[i[0]].flawed is None]
            judged = {}
            if unresolved:
                design = Design.from_dict(json.loads(record))
                render = Image.open(io.BytesIO(store.get_bytes(sha))).convert("RGB")
                judged = {j.indicator: j for j in judge_design(design, render, [i[2] for i in unresolved], thresholds=thresholds)}
            for item_id, _, name, _ in wanted:
                label = human.get(item_id)
                if label is not None and label.flawed is not None:
                    flawed, source, rule, evidence = label.flawed, "human", label.rule, {"n_flawed": label.n_flawed}
                else:
                    j = judged[name]
                    flawed, source, rule, evidence = j.flawed, "heuristic", f"judge {thresholds.digest()[:12]}", j.evidence
                rows.append({"design_id": design_id, "indicator": name, "flawed": flawed, "source": source, "rule": rule,
                             "n_votes": vote_counts.get(item_id, 0), "answer_element_id": answers[name],
                             "evidence": json.dumps(evidence, sort_keys=True, default=str)})
                step.counts[f"{source}:{'flawed' if flawed else 'good'}"] += 1
        with step.batch() as log:
            log.used({r["design_id"] for r in rows}, "design")
            insert_rows(log.con, "design_label", [{**r, "activity_id": log.activity_id} for r in rows], conflict="replace")
