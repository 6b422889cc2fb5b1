"""Benchmark / train split by base design, and the three question formats per labelled (design, indicator).

Pure logic: assets/designs/logic/splits.py (the deal) and assets/designs/logic/question_formats.py. Every variant of a
base design lands on its base's side, so no base design is in both the benchmark and the training set.
"""

import json
from collections.abc import Iterator

import pandas as pd
from dagster import AssetExecutionContext, MaterializeResult, asset

from assets.designs.ingest import design_records
from assets.designs.review import design_labels
from assets.designs.settings import DesignSettings
from assets.designs.store import drop_questions_without_label, drop_splits_of_other_seeds, replace_questions, write_splits
from assets.core.item_loop import Done, Item, Kept, Rejected, run_items
from assets.designs.logic.indicators import indicator
from assets.designs.logic.design_model import Design
from assets.designs.logic.question_formats import QuestionInputError, build_questions, question_input_from_design
from assets.designs.logic.splits import deal_source_splits, deal_splits, source_split_of
from assets.core.materialization import writes
from assets.core.step import recorded_step
from resources.warehouse import WarehouseResource
from warehouse.db import registered
from warehouse.ids import digest_of
from warehouse.lineage import ActivityLog

QUESTION_STAGE = "design_question"
SPLIT_STAGE = "design_split"
BEYOND_BENCHMARK_SIZE = "beyond_benchmark_size"


@asset(
    metadata=writes("design_split"),
    code_version="2",
    deps=[design_records],
    description="Every base design in the benchmark or the training set; its perturbed variants follow it. Crello's own"
    " split where the source names it (test designs to the benchmark, up to benchmark_designs, seeded; train and"
    " validation to training), else seeded by base design (benchmark_fraction, at least one and never all).",
)
def design_splits(context: AssetExecutionContext, warehouse: WarehouseResource, designs: DesignSettings) -> MaterializeResult:
    wh = warehouse.get_warehouse()
    params = {"seed": designs.split_seed, "benchmark_fraction": designs.benchmark_fraction,
              "source_splits": designs.source_splits, "benchmark_designs": designs.benchmark_designs}
    with recorded_step(context, wh, params) as step:
        with step.batch() as log:
            drop_splits_of_other_seeds(log.con, designs.split_seed)
            dealt = dict(log.con.execute("SELECT base_design_id, split FROM design_split").fetchall())
            located = log.con.execute(
                "SELECT d.design_id, min(r.locator) FROM design d LEFT JOIN design_source_read r USING (design_id)"
                " WHERE NOT d.is_perturbed GROUP BY d.design_id ORDER BY d.design_id").fetchall()
            crello = ({design_id: split for design_id, locator in located if (split := source_split_of(locator or ""))}
                      if designs.source_splits == "honour" else {})
            new = [design_id for design_id, _ in located if design_id not in dealt]
            sides = deal_splits({b: side for b, side in dealt.items() if b not in crello}, [b for b in new if b not in crello],
                                designs.split_seed, designs.benchmark_fraction)
            sides.update(deal_source_splits({b: side for b, side in dealt.items() if b in crello},
                                            {b: crello[b] for b in new if b in crello}, designs.split_seed,
                                            designs.benchmark_designs))
            rows = [{"base_design_id": b, "split": side, "seed": designs.split_seed, "activity_id": log.activity_id}
                    for b, side in sides.items() if side is not None]
            write_splits(log.con, rows)
            log.used(new, "base_design")
            beyond = [(b, BEYOND_BENCHMARK_SIZE, f"base design {b}: a Crello test design past the benchmark's"
                       f" {designs.benchmark_designs} designs") for b, side in sides.items() if side is None]
            log.rejected(SPLIT_STAGE, beyond)
        for row in rows:
            step.counts[f"{row['split']}{':crello' if row['base_design_id'] in crello else ''}"] += 1
        step.counts[BEYOND_BENCHMARK_SIZE] += len(beyond)
    return step.result()


@asset(
    metadata=writes("design_question"),
    code_version="1",
    deps=[design_labels, design_splits],
    description="Aesthetic judgment (yes/no), region selection (four choices, None among them) and precise"
    " localisation (a box or None) for every labelled perturbed design and indicator, with seeded choice order.",
)
def design_questions(context: AssetExecutionContext, warehouse: WarehouseResource, designs: DesignSettings) -> MaterializeResult:
    wh = warehouse.get_warehouse()
    params = {"seed": designs.question_seed, "box_units": designs.box_units}
    settings_key = digest_of(params)
    with recorded_step(context, wh, {**params, "settings_key": settings_key}) as step:
        with step.batch() as log:
            step.counts["dropped_unlabelled"] += drop_questions_without_label(log.con)
        # Labels whose questions are missing or out of date (label, split or settings changed).
        select = (
            "SELECT l.design_id || '|' || l.indicator, l.design_id, l.indicator, l.flawed, l.source, l.answer_element_id,"
            " d.record, d.base_design_id, s.split"
            " FROM design_label l JOIN design d USING (design_id) JOIN design_split s ON s.base_design_id = d.base_design_id"
            " WHERE NOT EXISTS (SELECT 1 FROM design_question q WHERE q.design_id = l.design_id AND q.indicator = l.indicator"
            " AND q.judged_flawed = l.flawed AND q.split = s.split AND q.label_source = l.source AND q.settings_key = ?)"
        )
        def pending() -> Iterator[Item]:
            for page in wh.pages(select, [settings_key], key="(l.design_id || '|' || l.indicator)", block=designs.batch_size * 4):
                keys = pd.DataFrame({"design_id": [p[1] for p in page]})
                with step.batch() as log, registered(log.con, "_page", keys):
                    perturbed: dict[str, list[str]] = {}
                    for design_id, element_id in log.con.execute(
                            "SELECT design_id, element_id FROM design_perturbation_op WHERE design_id IN (SELECT design_id FROM _page)"
                            " ORDER BY design_id, op_index").fetchall():
                        perturbed.setdefault(design_id, []).append(element_id)
                for row in page:
                    payload = (*row[1:], perturbed.get(row[1], []))
                    yield Item(row[0], row[0], digest_of([str(v) for v in payload] + [settings_key]), payload)

        def ask(item: Item) -> Kept | Rejected:
            """The three question formats of one labelled (design, indicator)."""
            design_id, name, flawed, source, answer_element, record, base_id, split, perturbed = item.payload
            design = Design.from_dict(json.loads(record))
            try:
                question_input = question_input_from_design(design, name, indicator(name).definition, perturbed, flawed,
                                                            answer_element)
            except QuestionInputError as exc:
                return Rejected(exc.reason_code, str(exc))
            made, skips = build_questions(question_input, designs.question_seed, designs.box_units)
            rows = []
            for q in made:
                data = q.to_dict()
                rows.append({"question_id": q.question_id, "design_id": design_id, "base_design_id": base_id,
                             "indicator": name, "format": q.format, "split": split, "prompt": q.prompt,
                             "choices": json.dumps(data["choices"]), "answer": json.dumps(data["answer"]),
                             "answer_index": q.answer_index, "judged_flawed": flawed, "label_source": source,
                             "canvas_width": design.canvas_width, "canvas_height": design.canvas_height,
                             "settings_key": settings_key})
            return Kept((rows, [(s.reason_code, f"{s.format}: {s.detail}") for s in skips]), count="labels_asked")

        def write(log: ActivityLog, done: list[Done]) -> None:
            rows = [row for d in done if d.kept for row in d.outcome.value[0]]
            replace_questions(log.con, [(d.item.payload[0], d.item.payload[1]) for d in done],
                              [{**r, "activity_id": log.activity_id} for r in rows])
            log.used({d.item.payload[0] for d in done}, "design")
            skipped = [(d.item.key, code, detail) for d in done if d.kept for code, detail in d.outcome.value[1]]
            log.rejected(QUESTION_STAGE, skipped)
            for row in rows:
                step.counts[f"{row['split']}:{row['format']}"] += 1
            step.counts["skipped"] += len(skipped)

        run_items(step, QUESTION_STAGE, pending(), ask, write, batch_size=designs.batch_size * 4)
    return step.result()
