"""Whether each perturbed design really shows a flaw, per indicator: human votes where people gave them
(majority, documented tie rule), the offline heuristic judge where they did not.

Pure logic: assets/designs/logic/review_votes.py (sheets, votes, majority, agreement), assets/designs/logic/judge.py
(measurements), assets/designs/logic/indicators.py (which indicators an operation may affect).
"""

import io
import json
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import pandas as pd
from dagster import AssetExecutionContext, Failure, MaterializeResult, MetadataValue, asset
from PIL import Image

from assets.designs.rendering import design_renders
from assets.designs.settings import DesignSettings
from assets.designs.store import drop_labels, record_review_sheet, replace_agreement, replace_review_items, write_labels
from assets.core.exports import Contents, ExportFile, publish
from assets.core.item_loop import Done, Item, Kept, run_items
from assets.designs.logic.indicators import answer_elements, indicator
from assets.designs.logic.judge import JudgeThresholds, judge_design
from assets.designs.logic.labelling import (
    CallSettings,
    LabelledExample,
    build_label_request,
    element_box,
    label_parser,
    repair_request,
)
from assets.designs.logic.design_model import Design
from assets.designs.logic.splits import BENCHMARK
from assets.designs.logic.offline_answers import design_offline_answers
from assets.designs.logic.review_votes import (
    ReviewItem,
    ReviewSheetError,
    Vote,
    indicator_agreement,
    majority_labels,
    next_round,
    parse_review_votes,
    review_item,
)
from assets.core.model_calls import ModelCaller
from assets.core.logic.sheets import SheetError, read_sheet_file
from assets.core.model_call_store import role_caller
from assets.core.returned_sheets import ingest_sheets
from assets.core.materialization import writes
from assets.core.step import Step, recorded_step
from resources.blob_store import BlobStore, BlobStoreResource
from resources.model_providers import ModelProvidersResource
from resources.warehouse import WarehouseResource
from warehouse.db import registered
from warehouse.ids import digest_of, entity_id
from warehouse.lineage import ActivityLog

REVIEW_STAGE = "design_review"
LABEL_STAGE = "design_label"
LABELLERS = ("heuristic", "model")
UNLABELLED = "unlabelled"
_UNLABELLED_FROM = (f"FROM design_review_item i JOIN rejection x ON x.entity_id = i.design_id || '|' || i.indicator"
                    f" AND x.stage = '{LABEL_STAGE}' AND x.reason_code = '{UNLABELLED}'")

_SHEET_QUERY = """
SELECT '{review_round}' AS review_round, i.item_id, i.design_id, local_path(i.image) AS image, i.indicator, i.definition,
       '' AS annotator, '' AS vote, '' AS comment
FROM design_review_item i ORDER BY i.item_id
"""


@asset(
    metadata=writes("design_review_item"),
    code_version="2",
    deps=[design_renders, "design_splits"],
    description="One review item per perturbed design whose base is on a side of the split and indicator (all twelve,"
    " or with indicators: affected only those its operations may touch), and the blank review sheet (render path and"
    " the indicator's definition per row) for annotators.",
)
def design_review_sheet(context: AssetExecutionContext, warehouse: WarehouseResource, designs: DesignSettings) -> MaterializeResult:
    wh = warehouse.get_warehouse()
    review = designs.review
    every = designs.indicators == "all"
    params = {"round": review.round, "sheet_dir": review.sheet_dir, "indicators": designs.indicators}
    with recorded_step(context, wh, params) as step:
        # A Crello test design past the benchmark's size is on neither side: nobody is asked about it.
        select = ("SELECT d.design_id, r.png_uri FROM design d JOIN design_render r USING (design_id)"
                  " JOIN design_split s ON s.base_design_id = d.base_design_id WHERE d.is_perturbed")
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
                for design_id, uri in page for name in answer_elements(by_design[design_id], every)
            ]
            with step.batch() as log:
                added, dropped = replace_review_items(log.con, list(frame["design_id"]),
                                                      [{**i.__dict__, "activity_id": log.activity_id} for i in items])
            step.counts["items_added"] += added
            step.counts["items_dropped"] += dropped
        target = Path(review.sheet_dir) / f"design_review_round-{review.round}.csv"
        sheet = ExportFile(target, _SHEET_QUERY.format(review_round=review.round.replace("'", "''")), "csv")
        publish(step, "design_review", [sheet], Contents("SELECT DISTINCT design_id FROM design_review_item ORDER BY 1",
                                                         role="design", relation="asks_about"))
    return step.result()


@asset(
    metadata=writes("design_label", "design_review_vote", "design_review_agreement"),
    code_version="2",
    deps=[design_review_sheet, "design_splits"],
    description="Per review item, flawed or not: the annotators' majority where votes resolve it; else, for a training"
    " item, the labeller (the offline heuristic judge, or the model), and a benchmark item is held out as unlabelled"
    " and listed in the next round's review sheet (benchmark_labels: labeller labels it too); agreement per"
    " indicator. A malformed sheet fails the run naming its rows, after the good sheets are stored.",
)
def design_labels(
    context: AssetExecutionContext,
    warehouse: WarehouseResource,
    blob_store: BlobStoreResource,
    model_providers: ModelProvidersResource,
    designs: DesignSettings,
) -> MaterializeResult:
    wh = warehouse.get_warehouse()
    store = blob_store.get_store()
    review = designs.review
    thresholds = JudgeThresholds()
    if designs.labeller not in LABELLERS:
        raise Failure(description=f"designs.labeller {designs.labeller!r}: one of {', '.join(LABELLERS)}")
    params = {"tie_breaker": review.tie_breaker, "min_votes": review.min_votes, "labeller": designs.labeller,
              "judge": thresholds.digest(), "few_shot": designs.few_shot, "benchmark_labels": designs.benchmark_labels,
              "indicators": designs.indicators}
    with recorded_step(context, wh, params) as step:
        problems = _ingest_votes(step, Path(review.returned_dir))
        with step.batch() as log:
            votes = _votes(log.con)
            agreement = indicator_agreement(votes)
            replace_agreement(log.con, [
                {"indicator": a.indicator, "n_items": a.n_items, "n_pairs": a.n_pairs,
                 "mean_pairwise_agreement": a.mean_pairwise_agreement, "fleiss_kappa": a.fleiss_kappa,
                 "activity_id": log.activity_id} for a in agreement])
        human = majority_labels(votes, review.tie_breaker, review.min_votes)
        vote_counts = {item: label.n_votes for item, label in human.items()}
        labeller = (_JudgeLabeller(store, thresholds) if designs.labeller == "heuristic"
                    else _ModelLabeller(step, store, model_providers, _examples(wh, human, designs)))
        _label_items(step, human, vote_counts, labeller, designs)
        publish(step, "design_review_next", [_next_round_sheet(review.sheet_dir, review.round)],
                Contents(f"SELECT DISTINCT i.design_id {_UNLABELLED_FROM} ORDER BY 1", role="design", relation="asks_about",
                         fingerprint_query=f"SELECT count(*), sum(hash(i.item_id)) {_UNLABELLED_FROM}"))
        if problems:
            raise Failure(description="malformed review sheet(s); the other sheets were stored. Fix the rows named and run"
                          " again:\n" + "\n".join(problems), metadata={"sheets": MetadataValue.json(problems)})
    return step.result()


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

    def read(path: Path) -> tuple[list[Vote], int]:
        """One sheet, whole or not at all."""
        return read_sheet_file(path, lambda stream, name: parse_review_votes(stream, name, known_items), ReviewSheetError)

    def record(log: ActivityLog, name: str, sha: str, votes: list[Vote], blank: int, error: SheetError | None) -> None:
        _record_sheet(log, name, sha, votes, blank, error)
        step.counts["votes_ingested"] += len(votes)

    return ingest_sheets(step, REVIEW_STAGE, "review_sheet", returned, known, read, record, "sheets_ingested")


def _record_sheet(log: ActivityLog, name: str, sha: str, votes: list[Vote], blank: int, error: SheetError | None) -> None:
    """The sheet's votes (replacing those of its earlier content) and its status; ``ingest_sheets`` records the
    sheet entity and the loop its rejection row."""
    sheet_entity = entity_id("review_sheet", sha)
    record_review_sheet(log.con, name, [
        {"item_id": v.item_id, "annotator": v.annotator, "review_round": v.review_round, "flawed": v.flawed,
         "comment": v.comment or None, "sheet_path": name, "sheet_row": v.row, "activity_id": log.activity_id}
        for v in votes],
        {"path": name, "sha256": sha, "entity_id": sheet_entity, "status": "rejected" if error else "ingested",
         "reason_code": error.reason_code if error else None, "detail": str(error) if error else None,
         "n_votes": len(votes), "n_blank": blank, "activity_id": log.activity_id})


def annotator_caller(step: Step, providers: ModelProvidersResource) -> tuple[ModelCaller, CallSettings, str]:
    """The provider layer's ``annotator`` role for design calls, with the design repair prompt; and the call
    settings and a name for provenance."""
    caller, role = role_caller(step.warehouse, step.activity_id, providers, "annotator", repair_request,
                               offline=design_offline_answers)
    return caller, CallSettings(role.model, role.temperature, role.max_output_tokens), f"model {role.provider}/{role.model}"


class MachineLabels(NamedTuple):
    """One design's labels from a labeller: {indicator: (flawed, rule, evidence)}, the indicators it could not
    label with (indicator, reason code, detail), and the model requests that took."""

    labels: dict[str, tuple]
    failures: tuple[tuple[str, str, str], ...] = ()
    requests_sent: int = 0


class _JudgeLabeller:
    """The offline path: the heuristic judge's verdict from measurements of the render."""

    source = "heuristic"
    calls = None  # no model calls to log

    def __init__(self, store: BlobStore, thresholds: JudgeThresholds) -> None:
        self.store, self.thresholds = store, thresholds

    def label(self, design: Design, png_sha: str, indicators: list[str], perturbed: list[str]) -> MachineLabels:
        render = Image.open(io.BytesIO(self.store.get_bytes(png_sha))).convert("RGB")
        return MachineLabels({j.indicator: (j.flawed, f"judge {self.thresholds.digest()[:12]}", j.evidence)
                              for j in judge_design(design, render, indicators, thresholds=self.thresholds)})


class _ModelLabeller:
    """Few-shot labelling through the provider layer's ``annotator`` role (AesEval's human-guided VLM labelling):
    people's labels of the same indicator as examples, the edited elements' boxes as a prior; each call cached
    and logged in ``model_call``; an answer that fails validation after one repair leaves the item unlabelled
    with its reason in ``rejection``."""

    source = "model"

    def __init__(self, step: Step, store: BlobStore, providers: ModelProvidersResource,
                 examples: dict[str, list[LabelledExample]]) -> None:
        self.store, self.examples = store, examples
        self.caller, self.settings, self.rule = annotator_caller(step, providers)
        self.calls = self.caller.store  # the write-behind call log: flushed before each batch commit, closed at the end

    def label(self, design: Design, png_sha: str, indicators: list[str], perturbed: list[str]) -> MachineLabels:
        image = self.store.get_bytes(png_sha)
        priors = [element_box(design, element_id) for element_id in dict.fromkeys(perturbed)]
        out, failures, sent = {}, [], 0
        for name in indicators:
            request = build_label_request(design, image, "image/png", name, indicator(name).definition,
                                          self.examples.get(name, []), priors, self.settings)
            outcome = self.caller.call(request, label_parser(design), item_id=design.design_id)
            if outcome.ok:
                label = outcome.value
                out[name] = (label.flawed, self.rule, {"reason": label.reason, "box": label.box, "element_id": label.element_id,
                                                       "calls": list(outcome.call_ids)})
            else:
                failures.append((name, outcome.reason_code or outcome.status, outcome.detail))
            sent += outcome.requests_sent
        return MachineLabels(out, tuple(failures), sent)


def _examples(wh, human: dict, designs: DesignSettings) -> dict[str, list[LabelledExample]]:
    """Per indicator, up to ``few_shot`` items people resolved (in item-id order), with their verdict, a reason
    built from their comments (or the vote count), and the box of the element the item is about."""
    few_shot = designs.few_shot
    resolved = sorted(item_id for item_id, label in human.items() if label.flawed is not None)
    if few_shot <= 0 or not resolved:
        return {}
    with wh.transaction() as con, registered(con, "_resolved", pd.DataFrame({"item_id": resolved})):
        rows = con.execute(
            "SELECT i.item_id, i.design_id, i.indicator, d.record,"
            " (SELECT string_agg(v.comment, '; ' ORDER BY v.annotator) FROM design_review_vote v"
            "   WHERE v.item_id = i.item_id AND v.comment <> '') AS notes,"
            " (SELECT list([o.element_id, o.element_type, o.op] ORDER BY o.op_index) FROM design_perturbation_op o"
            "   WHERE o.design_id = i.design_id) AS ops"
            " FROM design_review_item i JOIN design d USING (design_id) WHERE i.item_id IN (SELECT item_id FROM _resolved)"
            " ORDER BY i.item_id").fetchall()
    out: dict[str, list[LabelledExample]] = defaultdict(list)
    for item_id, design_id, name, record, notes, ops in rows:
        if len(out[name]) >= few_shot:
            continue
        label = human[item_id]
        reason = notes or f"{label.n_flawed} of {label.n_votes} annotators saw a {name.replace('_', ' ')} problem"
        box = None
        if label.flawed:
            element_id = answer_elements([tuple(op) for op in ops], designs.indicators == "all")[name]
            box = element_box(Design.from_dict(json.loads(record)), element_id)
        out[name].append(LabelledExample(label.flawed, reason, box, design_id=design_id))
    return dict(out)


def _label_items(step: Step, human: dict, vote_counts: dict[str, int], labeller, designs: DesignSettings) -> None:
    """(Re)label the items whose label is missing, whose vote count changed, or (benchmark_labels: human) whose
    benchmark label came from a machine: one item of the loop per design (one labeller call for its unresolved
    training indicators), up to ``max_concurrency`` designs at once (model calls spend their time waiting on the
    network). Only designs dealt to a side are labelled: a Crello test design past the benchmark's size is asked
    nothing (its base's outcome is in the split stage)."""
    wh = step.warehouse
    every = designs.indicators == "all"
    human_only = designs.benchmark_labels == "human"
    select = ("SELECT d.design_id, d.record, r.png_sha256, s.split FROM design d JOIN design_render r USING (design_id)"
              " JOIN design_split s ON s.base_design_id = d.base_design_id"
              " WHERE d.design_id IN (SELECT design_id FROM design_review_item)")

    def pending() -> Iterator[Item]:
        for page in wh.pages(select, [], key="d.design_id", block=designs.batch_size):
            with step.batch() as log, registered(log.con, "_page", pd.DataFrame({"design_id": [p[0] for p in page]})):
                items = log.con.execute(
                    "SELECT i.item_id, i.design_id, i.indicator, l.n_votes, l.source FROM design_review_item i"
                    " LEFT JOIN design_label l ON l.design_id = i.design_id AND l.indicator = i.indicator"
                    " WHERE i.design_id IN (SELECT design_id FROM _page)").fetchall()
                ops = log.con.execute(
                    "SELECT design_id, element_id, element_type, op FROM design_perturbation_op"
                    " WHERE design_id IN (SELECT design_id FROM _page) ORDER BY design_id, op_index").fetchall()
            splits = {row[0]: row[3] for row in page}
            stale = [i for i in items if i[3] is None or i[3] != vote_counts.get(i[0], 0)
                     or (human_only and splits[i[1]] == BENCHMARK and i[4] != "human")]
            by_design: dict[str, list] = defaultdict(list)
            for design_id, *op in ops:
                by_design[design_id].append(tuple(op))
            for design_id, record, sha, split in page:
                wanted = [(item_id, name) for item_id, d, name, *_ in stale if d == design_id]
                if wanted:
                    held_out = human_only and split == BENCHMARK
                    digest = digest_of([record, sha, held_out, [[item_id, vote_counts.get(item_id, 0)] for item_id, _ in wanted]])
                    yield Item(design_id, design_id, digest, (record, sha, wanted, by_design[design_id], held_out))

    def label(item: Item) -> Kept:
        """One design's label rows: people's majority where it resolves an item, else the labeller's verdict, or,
        for a benchmark item under benchmark_labels: human, no label (held out as unlabelled)."""
        record, sha, wanted, ops, held_out = item.payload
        unresolved = [name for item_id, name in wanted if human.get(item_id) is None or human[item_id].flawed is None]
        machine = (labeller.label(Design.from_dict(json.loads(record)), sha, unresolved, [op[0] for op in ops])
                   if unresolved and not held_out else MachineLabels({}))
        answers = answer_elements(ops, every)
        rows, unlabelled = [], []
        for item_id, name in wanted:
            got = human.get(item_id)
            if got is not None and got.flawed is not None:
                flawed, source, rule, evidence = got.flawed, "human", got.rule, {"n_flawed": got.n_flawed}
            elif held_out:
                rule = got.rule if got is not None else "no_votes"
                unlabelled.append((name, UNLABELLED, f"design {item.key}, indicator {name} (review item {item_id}): a"
                                   f" benchmark item with no resolving human vote ({rule}); asked again in the next"
                                   " round's review sheet"))
                continue
            elif name in machine.labels:
                source = labeller.source
                flawed, rule, evidence = machine.labels[name]
            else:
                continue  # the model gave no valid answer: unlabelled, its reason in rejection
            rows.append({"design_id": item.key, "indicator": name, "flawed": flawed, "source": source, "rule": rule,
                         "n_votes": vote_counts.get(item_id, 0), "answer_element_id": answers[name],
                         "evidence": json.dumps(evidence, sort_keys=True, default=str)})
        return Kept((rows, machine, unlabelled), count="designs_labelled")

    def write(log: ActivityLog, done: list[Done]) -> None:
        rows = [row for d in done for row in d.outcome.value[0]]
        held = [(f"{d.item.key}|{name}", code, detail) for d in done for name, code, detail in d.outcome.value[2]]
        log.used({r["design_id"] for r in rows}, "design")
        drop_labels(log.con, [key.split("|") for key, _, _ in held])
        write_labels(log.con, [{**r, "activity_id": log.activity_id} for r in rows])
        log.unrejected(LABEL_STAGE, [f"{r['design_id']}|{r['indicator']}" for r in rows])
        log.rejected(LABEL_STAGE, [(f"{d.item.key}|{name}", code, detail)
                                   for d in done for name, code, detail in d.outcome.value[1].failures] + held)
        for row in rows:
            step.counts[f"{row['source']}:{'flawed' if row['flawed'] else 'good'}"] += 1
        step.counts[UNLABELLED] += len(held)
        step.counts["label_requests_sent"] += sum(d.outcome.value[1].requests_sent for d in done)

    calls = labeller.calls
    try:
        run_items(step, LABEL_STAGE, pending(), label, write, batch_size=designs.batch_size,
                  workers=designs.max_concurrency, before_write=calls.flush if calls is not None else None)
    finally:
        if calls is not None:
            calls.close()


def _next_round_sheet(sheet_dir: str, review_round: str) -> ExportFile:
    """The blank sheet of the next round: every benchmark item held out as unlabelled, to be voted on again."""
    following = next_round(review_round)
    query = (f"SELECT '{following.replace(chr(39), chr(39) * 2)}' AS review_round, i.item_id, i.design_id,"
             " local_path(i.image) AS image, i.indicator, i.definition, '' AS annotator, '' AS vote, '' AS comment"
             f" {_UNLABELLED_FROM} ORDER BY i.item_id")
    return ExportFile(Path(sheet_dir) / f"design_review_round-{following}-unlabelled.csv", query, "csv")
