"""The two-phase survey (TangPoetryBench section 3, appendix D): phase-1 items with similarity-chosen distractors,
the item sheet handed to the survey platform, and the platform's export read back with quality control.

Pure logic: assets/poetry/logic/distractors.py (distractors, option order), assets/poetry/logic/phase1_items.py (option
sets supplied by the user) and assets/poetry/logic/survey_rows.py (parsing, quality control). A malformed survey row
never costs the good rows: they are stored, the bad row (a line that is not UTF-8 is ``bad_encoding``) keeps its
reason in ``poem_survey_bad_row`` and ``rejection``, and the step's metadata and a warning name every bad row so it
gets fixed. Each export is read as one item of the item loop,
then each of its rows is one item: an unexpected error reading an export, or checking one row, is that export's or
that row's ``internal_error`` and the others still count. Annotator ids are replaced by their pseudonyms (a keyed
hash, assets/poetry/logic/raters.py) as each row is checked, before anything is stored or quality-controlled.
"""

import json
from collections import defaultdict
from collections.abc import Collection
from dataclasses import dataclass, replace
from pathlib import Path

import pandas as pd

from dagster import AssetExecutionContext, Failure, MaterializeResult, asset

from assets.core.exports import ExportFile, write_file
from assets.core.item_loop import Done, Item, Kept, Outcome, Rejected, release_quarantine, run_items
from assets.poetry.logic.distractors import DISTRACTOR_METHOD, Phase1Options, distractors, phase1_options
from assets.poetry.logic.phase1_items import SUPPLIED_METHOD, Phase1ItemsError, parse_phase1_items
from assets.poetry.logic.survey_rows import (
    QcParams,
    RowProblem,
    SurveyError,
    SurveyResponse,
    SurveyRow,
    SurveySheet,
    quality_control,
    read_survey_rows,
    survey_row,
)
from assets.core.logic.sheets import SheetError, read_sheet_file
from assets.core.logic.textfiles import BAD_ENCODING
from assets.poetry.illustrations import poem_illustrations
from assets.poetry.logic.raters import RaterPseudonyms
from assets.poetry.settings import PoetrySettings
from assets.poetry.store import (
    clear_survey,
    load_poems,
    replace_phase1_items,
    write_survey_bad_rows,
    write_survey_exclusions,
    write_survey_files,
    write_survey_responses,
)
from assets.core.materialization import writes
from assets.core.step import Step, recorded_step
from resources.warehouse import WarehouseResource
from warehouse.db import registered
from warehouse.ids import digest_of, entity_id, sha256_file, sha256_hex
from warehouse.lineage import Entity

SURVEY_STAGE = "poem_survey"
PHASE1_STAGE = "recognizability_items"
PHASE1_FILE = "phase1_items_file"
# The item loop's stages (one item per export read, one per row checked), kept apart from SURVEY_STAGE, whose
# rejections are rewritten from every run's rows and quality control.
SURVEY_FILE_STAGE = "poem_survey_file"
SURVEY_ROW_STAGE = "poem_survey_row"
LETTERS = "ABCD"


@asset(
    metadata=writes("poem_phase1_item"),
    code_version="1",
    deps=[poem_illustrations],
    description="Phase-1 recognizability items: for each illustration the true poem and three distractors chosen by"
    " textual similarity, in seeded order, or the options a phase1_items file supplies; and the survey item sheet"
    " (item, image, options A-D) for the platform.",
)
def recognizability_items(context: AssetExecutionContext, warehouse: WarehouseResource, poetry: PoetrySettings) -> MaterializeResult:
    wh = warehouse.get_warehouse()
    supplied_file = Path(poetry.phase1_items) if poetry.phase1_items else None
    params = {"seed": poetry.seed, "method": DISTRACTOR_METHOD, "survey_dir": poetry.survey_dir,
              "phase1_items": wh.name_of(supplied_file) if supplied_file else None}
    with recorded_step(context, wh, params) as step:
        if supplied_file is not None and not supplied_file.is_file():
            raise Failure(description=f"poetry.phase1_items not found: {supplied_file}")
        supplied_sha = sha256_file(supplied_file) if supplied_file else None
        with step.batch() as log:
            poems = load_poems(log.con)
            items = log.con.execute("SELECT item_id, poem_id, entity_id FROM poem_illustration ORDER BY item_id").fetchall()
            known = {r[0]: r[1] for r in log.con.execute("SELECT item_id, seed FROM poem_phase1_item").fetchall()}
            last = step.last_inputs(log.con)
        inputs = digest_of([sorted((p.poem_id, p.content_sha256) for p in poems.values()), items, poetry.seed, DISTRACTOR_METHOD,
                            supplied_sha])
        if last == inputs and set(known) == {i[0] for i in items}:
            step.notes["unchanged"] = "same poems, illustrations, seed and phase-1 items file as last time"
            return step.result()
        if not items:
            step.notes["skipped"] = "no illustrations yet"
            return step.result()
        supplied = _supplied_options(step, supplied_file, supplied_sha, {i[0]: i[1] for i in items}, poems)
        rows = [_supplied_row(item_id, poem_id, supplied[item_id], supplied_file.name, poetry.seed)
                for item_id, poem_id, _ in items if supplied_file is not None and item_id in supplied]
        generated = [(item_id, poem_id) for item_id, poem_id, _ in items if item_id not in supplied]
        if generated:
            try:
                chosen = distractors(list(poems.values()), k=3)
            except ValueError as exc:
                raise Failure(description=f"recognizability items: {exc}") from exc
            for item_id, poem_id in generated:
                picks = chosen[poem_id]
                options = phase1_options(item_id, poem_id, [d.poem_id for d in picks], poetry.seed)
                rows.append({"item_id": item_id, "poem_id": poem_id, "options": list(options.options),
                             "correct_letter": options.correct_letter, "similarities": [d.similarity for d in picks],
                             "distractors": [d.poem_id for d in picks], "seed": poetry.seed, "method": DISTRACTOR_METHOD})
        sheet = ExportFile(Path(poetry.survey_dir) / "survey_items.csv", _ITEM_SHEET_QUERY, "csv")
        with step.batch() as log:
            replace_phase1_items(log.con, [{**r, "activity_id": log.activity_id} for r in rows])
            log.used((i[2] for i in items), "illustration")
            if supplied_file is not None and supplied_sha is not None:
                file_entity = entity_id(PHASE1_FILE, supplied_sha)
                log.entities([Entity(file_entity, PHASE1_FILE, supplied_sha, {"path": step.name_of(supplied_file)})])
                log.used([file_entity], PHASE1_FILE)
            write_file(step, log, "poetry_survey_items", sheet, [i[2] for i in items], "lists")
            step.remember_inputs(log, inputs)
        step.counts.update({"items": len(rows), "items:supplied": len(rows) - len(generated), "items:generated": len(generated)})
        step.files["item_sheet"] = sheet.path
    return step.result()


def _supplied_options(step: Step, path: Path | None, sha: str | None, illustrated: dict[str, str],
                      poems: Collection[str]) -> dict[str, Phase1Options]:
    """The user's phase-1 option sets by item id (none without ``poetry.phase1_items``). A file with a bad row is
    rejected whole, its rows named in the rejection and the failure (the study's options for that item are unknown)."""
    if path is None or sha is None:
        return {}
    try:
        return read_sheet_file(path, lambda stream, name: parse_phase1_items(stream, name, illustrated, poems),
                               Phase1ItemsError)
    except SheetError as exc:
        step.reject_input(PHASE1_STAGE, PHASE1_FILE, path, sha, exc.reason_code, str(exc))
        raise Failure(description=str(exc)) from exc


def _supplied_row(item_id: str, poem_id: str, options: Phase1Options, file_name: str, seed: int) -> dict:
    """A stored phase-1 item from the user's file: the options in the order the study showed them (no similarity
    was computed for its distractors)."""
    return {"item_id": item_id, "poem_id": poem_id, "options": list(options.options), "correct_letter": options.correct_letter,
            "similarities": [], "distractors": [p for p in options.options if p != poem_id], "seed": seed,
            "method": f"{SUPPLIED_METHOD}:{file_name}"}


# What the survey platform needs per item: the image (and its sha256, to pass through into the export so a response
# to an image that is later regenerated is recognised as stale), and phase 1's four poems in order (never the answer).
_ITEM_SHEET_QUERY = (
    "SELECT q.item_id, local_path(i.image_uri) AS image, i.image_sha256, "
    + ", ".join(f"q.options[{n + 1}] AS option_{letter}, (SELECT title || ' — ' || author FROM poem WHERE poem_id ="
                f" q.options[{n + 1}]) AS option_{letter}_title" for n, letter in enumerate(LETTERS))
    + " FROM poem_phase1_item q JOIN poem_illustration i USING (item_id) ORDER BY q.item_id"
)


@asset(
    metadata=writes("poem_survey_response", "poem_survey_exclusion", "poem_survey_file", "poem_survey_bad_row"),
    code_version="2",
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
        raters = _rater_pseudonyms(step, poetry) if files else None
        with step.batch() as log:
            answer_key = dict(log.con.execute("SELECT item_id, correct_letter FROM poem_phase1_item").fetchall())
            shown = log.con.execute("SELECT item_id, entity_id, image_sha256 FROM poem_illustration").fetchall()
            last = step.last_inputs(log.con)
        illustrations = {item: entity for item, entity, _ in shown}
        current_images = {item: sha for item, _, sha in shown}
        # the pseudonyms' key fingerprint: a warehouse whose responses were stored under other names reads them again
        inputs = digest_of([[(str(p), s) for p, s in files], sorted(answer_key.items()), sorted(current_images.items()), qc_json,
                            raters.salt_fingerprint() if raters else None])
        if last == inputs:
            step.notes["unchanged"] = "same survey files, items and quality-control settings as last time"
            _note_bad_rows(step, wh)
            return step.result()
        pending: list[Item[_Row]] = []
        responses: list[tuple[str, str, SurveyResponse]] = []
        bad: list[tuple[Item[_Row], Rejected]] = []

        def read(item: Item[Path]) -> Outcome:
            """One export's rows as items; a line that is not UTF-8 is that row's bad_encoding."""
            lines: list[RowProblem] = []
            try:
                sheet = read_sheet_file(item.payload, read_survey_rows, SurveyError,
                                        bad_line=lambda row, detail: lines.append((row, BAD_ENCODING, detail)))
            except SurveyError as exc:  # a missing column or a file that is not CSV: no row can be read, one problem says so
                unreadable = f" ({len(lines)} line(s) are not UTF-8 either)" if lines else ""
                return Kept(_row_items(item, None, [(row or 1, exc.reason_code, detail + unreadable) for row, detail in exc.problems]),
                            count="files_read")
            return Kept(_row_items(item, sheet, [*sheet.problems, *lines]), count="files_read")

        def check(item: Item[_Row]) -> Outcome:
            """One row: its response, or every problem it has (a row may have several, some of one kind)."""
            r = item.payload
            found = list(r.found)
            if r.line is not None:
                checked = survey_row(r.line.row, r.line.cells, answer_key, r.has_group, r.has_image, r.line.earlier_row)
                if isinstance(checked, SurveyResponse) and not found:
                    assert raters is not None  # rows come from files, and files need the pseudonyms
                    return Kept(replace(checked, annotator_id=raters.of(checked.annotator_id)), count="responses")
                found = [*([] if isinstance(checked, SurveyResponse) else checked), *found]
            return Rejected(found[0][0], f"{Path(r.path).name} row {r.number}: "
                            + "; ".join(f"{detail} [{code}]" for code, detail in found), value=found)

        def list_rows(log, done: list[Done[Path]]) -> None:
            """The exports read become the row loop's items (every export is read before any row is checked)."""
            for d in done:
                pending.extend(d.outcome.value)

        def collect(log, done: list[Done[_Row]]) -> None:
            """Outcomes are kept in memory: quality control needs every response before anything is stored."""
            for d in done:
                if d.kept:
                    responses.append((d.item.payload.path, d.item.payload.sha, d.outcome.value))
                else:
                    bad.append((d.item, d.outcome))

        run_items(step, SURVEY_FILE_STAGE, (Item(entity_id("survey_export", sha), str(path), sha, path) for path, sha in files),
                  read, list_rows)
        run_items(step, SURVEY_ROW_STAGE, pending, check, collect, batch_size=poetry.batch_size, record_rejections=False)
        # A row may have several problems, some of one kind (two bad letters): every one is kept, joined per reason.
        by_reason: dict[tuple[str, int, str], list[str]] = {}
        for item, rejected in bad:
            for code, detail in rejected.value:
                by_reason.setdefault((item.payload.path, item.payload.number, code), []).append(detail)
        result = quality_control([r for _, _, r in responses], qc, current_images)
        kept = {r.response_id for r in result.kept}
        with step.batch() as log:
            clear_survey(log.con)
            log.unrejected_all(SURVEY_STAGE)
            read_files = {(p, s) for p, s, _ in responses} | {(i.payload.path, i.payload.sha) for i, _ in bad}
            file_entities = {p: entity_id("survey_export", s) for p, s in read_files}
            log.entities(Entity(e, "survey_export", e.split(":", 1)[1], {"path": p}) for p, e in file_entities.items())
            log.used(file_entities.values(), "survey_export")
            rows = []
            for path, _, r in responses:
                rows.append({"response_id": r.response_id, "survey_file": path, "row_number": r.row, "annotator_id": r.annotator_id,
                             "annotator_group": r.annotator_group, "item_id": r.item_id, "phase1_choice": r.phase1_choice,
                             "phase1_correct": r.phase1_correct, "answers": json.dumps(r.answers, sort_keys=True),
                             "seconds": r.seconds, "image_sha256": r.image_sha256, "kept": r.response_id in kept,
                             "activity_id": log.activity_id})
            write_survey_responses(log.con, rows)
            log.entities(Entity(r["response_id"], "survey_response", attributes={"annotator": r["annotator_id"], "item_id": r["item_id"]})
                         for r in rows)
            log.generated(r["response_id"] for r in rows)
            log.derived((r["response_id"], file_entities[r["survey_file"]], "read_from") for r in rows)
            # A response that names the image it rated is tied to that image (an older one when the item was regenerated).
            log.derived((r["response_id"], entity_id("illustration", r["image_sha256"]) if r["image_sha256"]
                         else illustrations[r["item_id"]], "rates") for r in rows)
            write_survey_exclusions(log.con, [
                {"level": e.level, "subject": e.subject, "reason_code": e.reason_code, "detail": e.detail, "qc_params": qc_json,
                 "activity_id": log.activity_id} for e in result.exclusions])
            log.rejected(SURVEY_STAGE, [(e.subject, e.reason_code, e.detail) for e in result.exclusions if e.level == "response"])
            write_survey_bad_rows(log.con, [
                {"survey_file": p, "row_number": row, "reason_code": code, "detail": "; ".join(details),
                 "activity_id": log.activity_id} for (p, row, code), details in by_reason.items()])
            log.entities(Entity(i.key, "survey_row", attributes={"file": i.payload.path, "row": i.payload.number}) for i, _ in bad)
            log.rejected(SURVEY_STAGE, [(i.key, rejected.reason_code, rejected.detail) for i, rejected in bad])
            n_rows, n_bad = defaultdict(int), defaultdict(int)
            for path, _, _ in responses:
                n_rows[path] += 1
            for i, _ in bad:
                n_bad[i.payload.path] += 1
            write_survey_files(log.con, [
                {"path": str(p), "sha256": s, "n_rows": n_rows[str(p)], "n_bad_rows": n_bad[str(p)],
                 "activity_id": log.activity_id} for p, s in files])
            _forget_gone_rows(log, [i.key for i in pending])
            step.remember_inputs(log, inputs)
        step.counts.update({"kept": len(kept), "bad_rows": len(bad)})
        for e in result.exclusions:
            step.counts[f"excluded_{e.level}:{e.reason_code}"] += 1
        _note_bad_rows(step, wh)
    return step.result()


def _rater_pseudonyms(step: Step, poetry: PoetrySettings) -> RaterPseudonyms:
    """The configured pseudonyms; a key other than the one this warehouse's raters were named with stops the run
    (every published rater would get a new name, and a rater's old and new rows would no longer meet)."""
    raters = poetry.rater_pseudonyms()
    fingerprint = raters.salt_fingerprint()
    if step.settings_fingerprint("survey_rater_salt", fingerprint) != fingerprint:
        raise Failure(description="the survey rater salt differs from the one this warehouse was built with; rater"
                      " pseudonyms would change. Restore the salt or use a new warehouse.")
    return raters


@dataclass(frozen=True)
class _Row:
    """One row of an export as an item: where it is, what was read (None when the export has no readable row) and
    the problems found while reading it (``(reason, message)``)."""

    path: str
    sha: str
    number: int
    line: SurveyRow | None
    has_group: bool
    has_image: bool
    found: tuple[tuple[str, str], ...] = ()


def _row_items(export: Item[Path], sheet: SurveySheet | None, problems: list[RowProblem]) -> list[Item[_Row]]:
    """One item per spreadsheet row that was read or has a problem, in row order; a row's key is tied to the
    export's content, its digest to what the row check reads."""
    found: dict[int, list[tuple[str, str]]] = defaultdict(list)
    for row, code, detail in problems:
        found[row].append((code, detail))
    lines = {line.row: line for line in sheet.rows} if sheet else {}
    items = []
    for number in sorted({*lines, *found}):
        line = lines.get(number)
        row = _Row(export.locator, export.digest, number, line, bool(sheet and sheet.has_group), bool(sheet and sheet.has_image),
                   tuple(found.get(number, ())))
        items.append(Item(entity_id("survey_row", sha256_hex(f"{export.digest}#{number}".encode())), f"{export.locator}#row={number}",
                          digest_of([line.cells if line else None, line.earlier_row if line else None, row.found]), row))
    return items


def _forget_gone_rows(log, keys: list[str]) -> None:
    """A row quarantined in an export version that is no longer read has no input any more: its quarantine and
    internal_error go (a changed export's rows are new items, tried afresh)."""
    with registered(log.con, "_aesforge_survey_rows", pd.DataFrame({"item_key": keys}, dtype=str)):
        still = "SELECT item_key FROM _aesforge_survey_rows"
        release_quarantine(log, SURVEY_ROW_STAGE, except_in=still)
        log.unrejected_all(SURVEY_ROW_STAGE, except_in=still)


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
