"""ContextCanvas's grounding audit (``000_*`` S2.3.3, eq. S20-S21, Table S8): a correct label may still rest on the
wrong evidence, so people check the reason each correct answer gives. Every correct answer of a model or file run
goes on a blank sheet with the case and the gold rationale (the run is not named: raters judge the reason, not the
model); raters mark ``grounded`` (the reason names the decisive visible cue, or a warranted equivalent) and
``context_link`` (it links that cue correctly to the stated use). The returned sheets are read row by row like every
sheet (a bad row is rejected with its reason and line, the rest are read), raters kept only as keyed hashes.

Per run: evidence-grounded accuracy EGA = grounded-and-linked correct answers / audited cases, where an audited case
is one the run answered wrongly (no rating needed) or answered correctly with at least one rating; a correct answer
counts as grounded when most of its raters say both yes (a tie is not). Unsupported = 100 × correct but not grounded
/ correct, over the rated correct answers. Correct answers still waiting for a rating are counted and named.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from assets.core.item_loop import Item, Kept, Outcome, Rejected, run_items
from assets.core.logic.keyed_hash import KeyedHash
from assets.core.step import Step
from assets.evaluation.judging import _SheetRow, checked_hasher, sheet_rater, sheet_rows, write_ratings, write_sheet
from assets.evaluation.logic.benchmark_items import BenchmarkItem, BenchmarkLayout
from assets.evaluation.logic.choice_requests import answer_reason
from assets.evaluation.settings import GroundingAudit
from assets.evaluation.store import clear_grounding_ratings, record_grounding_rows, write_grounding_ratings
from warehouse.db import Warehouse
from warehouse.ids import digest_of

SHEET_COLUMNS = ("row_id", "scenario", "question", "answer", "reason", "gold_rationale", "grounded", "context_link", "rater")
SALT_SETTING = "grounding_rater_salt"
YES = frozenset({"yes", "y", "1", "true"})
NO = frozenset({"no", "n", "0", "false"})
UNKNOWN_ROW, INVALID_VERDICT = "unknown_row", "invalid_verdict"  # and the shared rater codes (judging.sheet_rater)


def _sheet_path(audit: GroundingAudit, layout: BenchmarkLayout) -> Path:
    return Path(audit.sheet_dir) / f"{layout.name}_grounding_sheet.csv"


def write_grounding_sheet(step: Step, layout: BenchmarkLayout, items: Mapping[str, BenchmarkItem], run_keys: Sequence[str],
                          audit: GroundingAudit) -> Path | None:
    """The blank sheet: every correct answer of the model and file runs among ``run_keys``, in a seeded hash order
    (the same answers give the same bytes), each row recorded so a returned sheet is read against every row ever
    listed. None: no sheet_dir, or no correct answer to audit."""
    if audit.sheet_dir is None:
        return None
    target = _sheet_path(audit, layout)
    with step.batch() as log:
        correct = log.con.execute(
            "SELECT a.run_key, a.item_id, a.sample, p.entity_id, p.prediction, a.answer FROM evaluation_answer a"
            " JOIN evaluation_prediction p USING (run_key, item_id, sample) JOIN evaluation_run r USING (run_key)"
            " WHERE list_contains(?, a.run_key) AND a.correct AND r.source IN ('model', 'predictions_file')"
            " ORDER BY md5(concat_ws('|', a.run_key, a.item_id, a.sample)), p.entity_id", [list(run_keys)]).fetchall()
    if not correct:
        step.notes["grounding_sheet"] = "no correct model answer to audit: no sheet written"
        return None
    sheet, listed = [], []
    for order, (key, item_id, sample, prediction_id, text, answer) in enumerate(correct):
        item = items.get(item_id)
        if item is None:
            continue
        row_id = "ega-" + digest_of([key, item_id, sample, prediction_id])[:16]
        options = {o["id"]: o["text"] for o in item.fields["options"]}
        sheet.append({"row_id": row_id, "scenario": item.fields["scenario"], "question": item.fields["question"],
                      "answer": f"{answer}. {options.get(answer, '')}", "reason": answer_reason(text) or "(no reason given)",
                      "gold_rationale": item.fields.get("rationale") or "", "grounded": None, "context_link": None,
                      "rater": None, "ord": order})
        listed.append({"row_id": row_id, "benchmark": layout.name, "run_key": key, "item_id": item_id, "sample": sample,
                       "prediction_id": prediction_id, "sheet": step.name_of(target)})
    write_sheet(step, f"{layout.name}_grounding_sheet", target, SHEET_COLUMNS, sheet, listed, record_grounding_rows)
    step.notes["grounding_sheet"] = f"{step.name_of(target)} ({len(listed)} correct answers to audit)"
    return target


def _verdict(value: str) -> bool | None:
    folded = value.casefold()
    return True if folded in YES else False if folded in NO else None


def _check(item: Item[_SheetRow], known: Mapping[str, str], hasher: KeyedHash, seen: dict[tuple[str, str], str]) -> Outcome:
    """A rated row, kept; an unrated one (both verdicts empty), skipped; anything else rejected with its reason."""
    row = item.payload
    if row.problem:
        return Rejected(row.problem[0], f"{item.locator}: {row.problem[1]}")
    cells = row.cells
    if not cells["grounded"] and not cells["context_link"]:
        return Kept(None, count="grounding_rows_unrated")
    if cells["row_id"] not in known:
        return Rejected(UNKNOWN_ROW, f"{item.locator}: row_id {cells['row_id']!r} is on no grounding sheet written here")
    grounded, link = _verdict(cells["grounded"]), _verdict(cells["context_link"])
    if grounded is None or link is None:
        return Rejected(INVALID_VERDICT, f"{item.locator}: grounded {cells['grounded']!r} and context_link"
                        f" {cells['context_link']!r} must each be yes or no")
    rater = sheet_rater(item, hasher, seen)
    if isinstance(rater, Rejected):
        return rater
    return Kept((cells["row_id"], rater, grounded, link), count="grounding_ratings_read")


def read_grounding_sheets(step: Step, layout: BenchmarkLayout, audit: GroundingAudit) -> tuple[str, str]:
    """Read every returned sheet into ``evaluation_grounding_rating`` (replacing the last reading); returns the EGA
    section (title, Markdown) for the report."""
    stage = f"{layout.name}_grounding_ratings"
    with step.batch() as log:
        clear_grounding_ratings(log.con, layout.name)
        log.unrejected_all(stage)
        known = dict(log.con.execute("SELECT row_id, prediction_id FROM evaluation_grounding_row WHERE benchmark = ?",
                                     [layout.name]).fetchall())
    missing = [step.name_of(p) for p in audit.returned if not Path(p).is_file()]
    present = [Path(p) for p in audit.returned if Path(p).is_file()]
    if present:
        hasher = checked_hasher(step, audit, SALT_SETTING)
        seen: dict[tuple[str, str], str] = {}
        for path in present:
            run_items(step, stage, sheet_rows(step, stage, path, "grounding_sheet", ("row_id", "grounded", "context_link", "rater")),
                      lambda item: _check(item, known, hasher, seen),
                      lambda log, done: write_ratings(log, "grounding", known, done,
                                                      lambda grounded, link: {"grounded": grounded, "context_link": link},
                                                      write_grounding_ratings),
                      batch_size=500)
    if missing:
        step.notes["grounding_sheets_missing"] = missing
    return grounding_section(step.warehouse, layout.name, missing)


def grounding_section(wh: Warehouse, benchmark: str, missing: Sequence[str]) -> tuple[str, str]:
    """Per run, over the audited cases (those with at least one rated answer of any run): accuracy, EGA,
    Unsupported, and its correct answers there still awaiting a rating."""
    with wh.transaction() as con:
        rows = con.execute(
            "WITH verdicts AS (SELECT g.run_key, g.item_id, g.sample,"
            "   sum(CASE WHEN t.grounded AND t.context_link THEN 1 ELSE 0 END) AS yes, count(t.rater) AS raters"
            "   FROM evaluation_grounding_row g LEFT JOIN evaluation_grounding_rating t USING (row_id)"
            "   WHERE g.benchmark = ? GROUP BY ALL),"
            " audited AS (SELECT DISTINCT item_id FROM verdicts WHERE raters > 0)"
            " SELECT r.model || ' / ' || r.condition, count(*) AS cases, count(*) FILTER (WHERE a.correct) AS correct,"
            "  count(*) FILTER (WHERE a.correct AND v.raters > 0) AS rated,"
            "  count(*) FILTER (WHERE a.correct AND v.raters > 0 AND 2 * v.yes > v.raters) AS grounded"
            " FROM evaluation_answer a JOIN evaluation_run r USING (run_key) JOIN audited USING (item_id)"
            " LEFT JOIN verdicts v USING (run_key, item_id, sample)"
            " WHERE r.benchmark = ? AND r.source IN ('model', 'predictions_file') GROUP BY ALL ORDER BY 1",
            [benchmark, benchmark]).fetchall()
    lines = ["The audited cases are those with at least one rated answer; every model and file run is scored on them."
             " A correct answer is grounded when most of its raters found the decisive visible cue named and correctly"
             " linked to the use. EGA = grounded correct answers / audited cases; Unsupported = rated correct answers"
             " not grounded / rated correct answers.", ""]
    lines += ["| model / condition | audited cases | accuracy (%) | EGA (%) | Unsupported (%) | correct, awaiting a rating |",
              "|---|---|---|---|---|---|"]
    for label, cases, correct, rated, grounded in rows:
        unsupported = "–" if not rated else f"{100 * (rated - grounded) / rated:.1f}"
        lines.append(f"| {label} | {cases} | {100 * correct / cases:.1f} | {100 * grounded / cases:.1f} | {unsupported}"
                     f" | {correct - rated} |")
    if not rows:
        lines.append("| (no rated answers yet: fill in grounded, context_link and rater on the blank sheet and list the"
                     " copies in evaluation.grounding_audit.returned) | | | | | |")
    if missing:
        lines += ["", "Returned sheets not found: " + ", ".join(missing) + "."]
    return "Evidence-grounded accuracy (AesCanvas Table S8)", "\n".join(lines)
