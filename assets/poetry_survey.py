"""The two-phase survey (TangPoetryBench section 3, appendix D): phase-1 items with similarity-chosen distractors,
the item sheet handed to the survey platform, and the platform's export read back with quality control.

Pure logic: assets/lib/poem_distractors.py (distractors, option order) and assets/lib/poem_survey.py (parsing,
quality control). A malformed survey row never costs the good rows: they are stored, the bad row (a line that is
not UTF-8 is ``bad_encoding``) keeps its reason in ``poem_survey_bad_row`` and ``rejection``, and the step's
metadata and a warning name every bad row so it gets fixed. Each export is one item of the item loop: an
unexpected error reading one is its ``internal_error`` and the other exports are still read.
"""

import json
from pathlib import Path

from dagster import AssetExecutionContext, Failure, MaterializeResult, asset

from assets.exports import ExportFile, write_file
from assets.item_loop import Done, Item, Kept, Outcome, run_items
from assets.lib.poem_distractors import DISTRACTOR_METHOD, distractors, phase1_options
from assets.lib.poem_survey import QcParams, SurveyError, parse_survey, quality_control
from assets.lib.sheets import read_sheet_file
from assets.lib.textfiles import BAD_ENCODING
from assets.poetry_corpus import load_poems
from assets.poetry_illustrations import poem_illustrations
from assets.poetry_settings import PoetrySettings
from assets.step import Step, recorded_step
from resources.warehouse import WarehouseResource
from warehouse.db import insert_rows
from warehouse.ids import digest_of, entity_id, sha256_file, sha256_hex
from warehouse.lineage import Entity

SURVEY_STAGE = "poem_survey"
SURVEY_FILE_STAGE = "poem_survey_file"  # the item loop's stage: one item per export, kept apart from the row rejections
LETTERS = "ABCD"


@asset(
    group_name="poetry_benchmark",
    code_version="1",
    deps=[poem_illustrations],
    description="Phase-1 recognizability items: for each illustration the true poem and three distractors chosen by"
    " textual similarity, in seeded order; and the survey item sheet (item, image, options A-D) for the platform.",
)
def recognizability_items(context: AssetExecutionContext, warehouse: WarehouseResource, poetry: PoetrySettings) -> MaterializeResult:
    wh = warehouse.get_warehouse()
    with recorded_step(context, wh, {"seed": poetry.seed, "method": DISTRACTOR_METHOD, "survey_dir": poetry.survey_dir}) as step:
        with step.batch() as log:
            poems = load_poems(log.con)
            items = log.con.execute("SELECT item_id, poem_id, entity_id FROM poem_illustration ORDER BY item_id").fetchall()
            known = {r[0]: r[1] for r in log.con.execute("SELECT item_id, seed FROM poem_phase1_item").fetchall()}
            last = step.last_inputs(log.con)
        inputs = digest_of([sorted((p.poem_id, p.content_sha256) for p in poems.values()), items, poetry.seed, DISTRACTOR_METHOD])
        if last == inputs and set(known) == {i[0] for i in items}:
            step.notes["unchanged"] = "same poems, illustrations and seed as last time"
            return MaterializeResult(metadata=step.summary())
        if not items:
            step.notes["skipped"] = "no illustrations yet"
            return MaterializeResult(metadata=step.summary())
        try:
            chosen = distractors(list(poems.values()), k=3)
        except ValueError as exc:
            raise Failure(description=f"recognizability items: {exc}") from exc
        rows = []
        for item_id, poem_id, _ in items:
            picks = chosen[poem_id]
            options = phase1_options(item_id, poem_id, [d.poem_id for d in picks], poetry.seed)
            rows.append({"item_id": item_id, "poem_id": poem_id, "options": list(options.options),
                         "correct_letter": options.correct_letter, "similarities": [d.similarity for d in picks],
                         "distractors": [d.poem_id for d in picks], "seed": poetry.seed, "method": DISTRACTOR_METHOD})
        sheet = ExportFile(Path(poetry.survey_dir) / "survey_items.csv", _ITEM_SHEET_QUERY, "csv")
        with step.batch() as log:
            log.con.execute("DELETE FROM poem_phase1_item")
            insert_rows(log.con, "poem_phase1_item", [{**r, "activity_id": log.activity_id} for r in rows])
            log.used((i[2] for i in items), "illustration")
            write_file(log, "poetry_survey_items", sheet, [i[2] for i in items], "lists")
            step.remember_inputs(log, inputs)
        step.counts["items"] = len(rows)
        step.notes["item_sheet"] = str(sheet.path)
    return MaterializeResult(metadata=step.summary())


# What the survey platform needs per item: the image (and its sha256, to pass through into the export so a response
# to an image that is later regenerated is recognised as stale), and phase 1's four poems in order (never the answer).
_ITEM_SHEET_QUERY = (
    "SELECT q.item_id, local_path(i.image_uri) AS image, i.image_sha256, "
    + ", ".join(f"q.options[{n + 1}] AS option_{letter}, (SELECT title || ' — ' || author FROM poem WHERE poem_id ="
                f" q.options[{n + 1}]) AS option_{letter}_title" for n, letter in enumerate(LETTERS))
    + " FROM poem_phase1_item q JOIN poem_illustration i USING (item_id) ORDER BY q.item_id"
)


@asset(
    group_name="poetry_benchmark",
    code_version="1",
    deps=[recognizability_items],
    description="Survey exports (phase 1 + the ten rubric dimensions per annotator and image) read back; quality"
    " control excludes responses and annotators with a recorded reason; malformed rows are kept with theirs.",
)
def poem_survey_responses(context: AssetExecutionContext, warehouse: WarehouseResource, poetry: PoetrySettings) -> MaterializeResult:
    wh = warehouse.get_warehouse()
    qc = QcParams(**poetry.qc.model_dump())
    qc_json = json.dumps(poetry.qc.model_dump(), sort_keys=True)
    with recorded_step(context, wh, {"surveys": poetry.surveys, "qc": poetry.qc.model_dump()}) as step:
        files = []
        for path in map(Path, poetry.surveys):
            if not path.is_file():
                raise Failure(description=f"survey export not found: {path}")
            files.append((path, sha256_file(path)))
        with step.batch() as log:
            answer_key = dict(log.con.execute("SELECT item_id, correct_letter FROM poem_phase1_item").fetchall())
            shown = log.con.execute("SELECT item_id, entity_id, image_sha256 FROM poem_illustration").fetchall()
            last = step.last_inputs(log.con)
        illustrations = {item: entity for item, entity, _ in shown}
        current_images = {item: sha for item, _, sha in shown}
        inputs = digest_of([[(str(p), s) for p, s in files], sorted(answer_key.items()), sorted(current_images.items()), qc_json])
        if last == inputs:
            step.notes["unchanged"] = "same survey files, items and quality-control settings as last time"
            _note_bad_rows(step, wh)
            return MaterializeResult(metadata=step.summary())
        responses, bad = [], []

        def read(item: Item[Path]) -> Outcome:
            """One export: its good rows and every bad one; a line that is not UTF-8 is that row's bad_encoding."""
            lines: list[tuple[int, str, str]] = []
            try:
                parsed = read_sheet_file(item.payload, lambda stream, name: parse_survey(stream, name, answer_key), SurveyError,
                                         bad_line=lambda row, detail: lines.append((row, BAD_ENCODING, detail)))
            except SurveyError as exc:  # a missing column or a file that is not CSV: no row can be read, one problem says so
                unreadable = f" ({len(lines)} line(s) are not UTF-8 either)" if lines else ""
                return Kept(([], [(row or 1, exc.reason_code, detail + unreadable) for row, detail in exc.problems]),
                            count="files_read")
            return Kept((parsed.responses, sorted([*parsed.problems, *lines], key=lambda p: p[0])), count="files_read")

        def collect(log, done: list[Done[Path]]) -> None:
            """Outcomes are kept in memory: quality control needs every response before anything is stored."""
            for d in done:
                good, problems = d.outcome.value
                responses.extend((str(d.item.payload), d.item.digest, r) for r in good)
                bad.extend((str(d.item.payload), d.item.digest, row, code, detail) for row, code, detail in problems)

        run_items(step, SURVEY_FILE_STAGE, (Item(entity_id("survey_export", sha), str(path), sha, path) for path, sha in files),
                  read, collect)
        # A row may have several problems, some of one kind (two bad letters): every one is kept, joined per row.
        by_reason: dict[tuple[str, str, int, str], list[str]] = {}
        for p, sha, row, code, detail in bad:
            by_reason.setdefault((p, sha, row, code), []).append(detail)
        by_row: dict[tuple[str, str, int], list[tuple[str, str]]] = {}
        for p, sha, row, code, detail in bad:
            by_row.setdefault((p, sha, row), []).append((code, detail))
        result = quality_control([r for _, _, r in responses], qc, current_images)
        kept = {r.response_id for r in result.kept}
        with step.batch() as log:
            for table in ("poem_survey_response", "poem_survey_bad_row", "poem_survey_exclusion", "poem_survey_file"):
                log.con.execute(f"DELETE FROM {table}")
            log.con.execute("DELETE FROM rejection WHERE stage = ?", [SURVEY_STAGE])
            file_entities = {p: entity_id("survey_export", s) for p, s in {(p, s) for p, s, *_ in [*responses, *bad]}}
            log.entities(Entity(e, "survey_export", e.split(":", 1)[1], {"path": p}) for p, e in file_entities.items())
            log.used(file_entities.values(), "survey_export")
            rows = []
            for path, _, r in responses:
                rows.append({"response_id": r.response_id, "survey_file": path, "row_number": r.row, "annotator_id": r.annotator_id,
                             "annotator_group": r.annotator_group, "item_id": r.item_id, "phase1_choice": r.phase1_choice,
                             "phase1_correct": r.phase1_correct, "answers": json.dumps(r.answers, sort_keys=True),
                             "seconds": r.seconds, "image_sha256": r.image_sha256, "kept": r.response_id in kept,
                             "activity_id": log.activity_id})
            insert_rows(log.con, "poem_survey_response", rows)
            log.entities(Entity(r["response_id"], "survey_response", attributes={"annotator": r["annotator_id"], "item_id": r["item_id"]})
                         for r in rows)
            log.generated(r["response_id"] for r in rows)
            log.derived((r["response_id"], file_entities[r["survey_file"]], "read_from") for r in rows)
            # A response that names the image it rated is tied to that image (an older one when the item was regenerated).
            log.derived((r["response_id"], entity_id("illustration", r["image_sha256"]) if r["image_sha256"]
                         else illustrations[r["item_id"]], "rates") for r in rows)
            insert_rows(log.con, "poem_survey_exclusion", [
                {"level": e.level, "subject": e.subject, "reason_code": e.reason_code, "detail": e.detail, "qc_params": qc_json,
                 "activity_id": log.activity_id} for e in result.exclusions])
            log.rejected(SURVEY_STAGE, [(e.subject, e.reason_code, e.detail) for e in result.exclusions if e.level == "response"])
            insert_rows(log.con, "poem_survey_bad_row", [
                {"survey_file": p, "row_number": row, "reason_code": code, "detail": "; ".join(details),
                 "activity_id": log.activity_id} for (p, _, row, code), details in by_reason.items()])
            bad_ids = {key: entity_id("survey_row", sha256_hex(f"{key[1]}#{key[2]}".encode())) for key in by_row}
            log.entities(Entity(e, "survey_row", attributes={"file": p, "row": row}) for (p, _, row), e in bad_ids.items())
            log.rejected(SURVEY_STAGE, [(bad_ids[key], found[0][0], f"{Path(key[0]).name} row {key[2]}: "
                                         + "; ".join(f"{detail} [{code}]" for code, detail in found))
                                        for key, found in by_row.items()])
            counts = {}
            for p, s, *_ in responses:
                counts[(p, s)] = counts.get((p, s), 0) + 1
            insert_rows(log.con, "poem_survey_file", [
                {"path": str(p), "sha256": s, "n_rows": counts.get((str(p), s), 0),
                 "n_bad_rows": sum(1 for key in by_row if key[0] == str(p)), "activity_id": log.activity_id} for p, s in files])
            step.remember_inputs(log, inputs)
        step.counts.update({"responses": len(responses), "kept": len(kept), "bad_rows": len(by_row)})
        for e in result.exclusions:
            step.counts[f"excluded_{e.level}:{e.reason_code}"] += 1
        _note_bad_rows(step, wh)
    return MaterializeResult(metadata=step.summary())


def _note_bad_rows(step: Step, wh) -> None:
    """Name every malformed survey row in the step's metadata and a warning (each keeps its own rejection row):
    a bad row is that row's outcome, the other rows still count, and the note stays until the file is fixed."""
    bad = wh.query("SELECT survey_file, row_number, reason_code, detail FROM poem_survey_bad_row"
                   " ORDER BY survey_file, row_number, reason_code")
    if bad.empty:
        return
    n_rows = len(bad[["survey_file", "row_number"]].drop_duplicates())
    shown = "; ".join(f"{Path(f).name} row {row}: {detail} ({code})" for f, row, code, detail in bad.head(20).itertuples(index=False))
    more = f" (and {len(bad) - 20} more problems)" if len(bad) > 20 else ""
    step.notes["malformed_rows"] = f"survey export has {n_rows} malformed row(s); the other rows are stored: {shown}{more}"
    step.log.warning(step.notes["malformed_rows"])
