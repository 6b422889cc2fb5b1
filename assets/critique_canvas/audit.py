"""The human audit of CritiqueCanvas pairs: a frozen sample per round, reviewer sheets in, figures out.

Pure logic (sampling, sheet parsing, verdicts, figures) lives in assets/critique_canvas/logic/audit_sample.py. A round's
sample is drawn once and frozen, so sheets in reviewers' hands stay valid while the pipeline keeps
running; a new round name draws a new sample.
"""

import json
import re
from pathlib import Path

from dagster import AssetExecutionContext, Failure, MaterializeResult, MetadataValue, asset

from assets.critique_canvas.critique_pairs import critique_pairs
from assets.critique_canvas.settings import CritiqueAuditSettings, CritiqueSettings
from assets.core.exports import ExportFile, export_names, write_file
from assets.critique_canvas.logic.audit_sample import (
    ACCEPTANCE_RULES,
    ALL_SCOPE,
    AuditCandidate,
    AuditFigures,
    Review,
    SheetError,
    audit_figures,
    draw_sample,
    pair_outcomes,
    parse_review_sheet,
)
from assets.critique_canvas.store import (
    record_audit_sheet,
    replace_audit_results,
    set_round_sheet,
    write_audit_round,
    write_audit_sample,
)
from assets.core.logic.sheets import read_sheet_file
from assets.core.returned_sheets import ingest_sheets
from assets.core.materialization import writes
from assets.core.step import Step, recorded_step
from resources.warehouse import WarehouseResource
from warehouse.ids import digest_of, entity_id
from warehouse.lineage import ActivityLog, Entity, utcnow

AUDIT_STAGE = "critique_audit"
_ROUND_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")

# The blank sheet: what a reviewer reads (image: the kept record's original file, instruction, response) and the columns
# they fill in.
_SHEET_QUERY = """
SELECT s.audit_round, s.pair_id, s.domain, local_path(b.blob_uri) AS image,
       p.question AS instruction, p.answer AS response,
       '' AS reviewer, '' AS decision, '' AS blocking_issues, '' AS non_blocking_issues, '' AS comment
FROM critique_audit_sample s
JOIN critique_pair p USING (pair_id)
JOIN pool_member m ON m.pool_item_id = p.pool_item_id AND m.is_representative
JOIN record_file f ON f.record_id = m.record_id
JOIN file_blob b ON b.sha256 = f.file_sha256
WHERE s.audit_round = '{audit_round}'
ORDER BY s.position
"""


def _checked(audit: CritiqueAuditSettings) -> None:
    if not _ROUND_NAME.match(audit.round):
        raise Failure(description=f"critique.audit.round {audit.round!r}: use letters, digits, '.', '_' or '-' (it names files)")
    if audit.acceptance_rule not in ACCEPTANCE_RULES:
        raise Failure(description=f"critique.audit.acceptance_rule {audit.acceptance_rule!r}: one of {', '.join(ACCEPTANCE_RULES)}")


def sheet_path(audit: CritiqueAuditSettings) -> Path:
    return Path(audit.sheet_dir) / f"critique_audit_round-{audit.round}.csv"


@asset(
    metadata=writes("critique_audit_round"),
    code_version="1",
    deps=[critique_pairs],
    description="Draws the audit round's domain-stratified, seeded sample of verifier-accepted pairs (once; the sample"
    " is then frozen) and writes the blank review sheet.",
)
def critique_audit_sample(context: AssetExecutionContext, warehouse: WarehouseResource, critique: CritiqueSettings) -> MaterializeResult:
    audit = critique.audit
    _checked(audit)
    wh = warehouse.get_warehouse()
    target = sheet_path(audit)
    params = {"round": audit.round, "size": audit.size, "seed": audit.seed, "allocation": audit.allocation}
    with recorded_step(context, wh, params) as step:
        with step.batch() as log:
            drawn = log.con.execute(
                "SELECT sample_size, seed, allocation, n_sampled FROM critique_audit_round WHERE audit_round = ?", [audit.round]
            ).fetchone()
        if drawn:
            _keep_frozen(step, audit, drawn, target)
            return step.result()
        with step.batch() as log:
            candidates = [
                AuditCandidate(*row)
                for row in log.con.execute(
                    "SELECT p.pair_id, p.group_id, p.domain FROM critique_pair p JOIN critique_group g USING (group_id)"
                    " WHERE p.accepted AND g.status = 'complete' ORDER BY p.pair_id"
                ).fetchall()
            ]
        try:
            sample = draw_sample(candidates, audit.size, audit.seed, audit.allocation)
        except ValueError as exc:
            raise Failure(description=f"critique.audit: {exc}") from exc
        # Sheet rows in seeded order, not by domain, so a reviewer who stops half-way has seen every domain.
        sample.sort(key=lambda c: digest_of([audit.seed, "sheet", c.pair_id]))
        if not sample:
            step.notes["not_drawn"] = "no verifier-accepted pairs yet; the round is drawn once there are some"
            return step.result()
        with step.batch() as log:
            write_audit_sample(
                log.con,
                [{"audit_round": audit.round, "pair_id": c.pair_id, "domain": c.domain, "position": n} for n, c in enumerate(sample)],
            )
            log.used((c.pair_id for c in sample), "audited_pair")
            sheet_entity, _ = _write_sheet(step, log, audit, target, [c.pair_id for c in sample])
            write_audit_round(
                log.con,
                {"audit_round": audit.round, "sample_size": audit.size, "seed": audit.seed, "allocation": audit.allocation,
                 "n_candidates": len(candidates), "n_sampled": len(sample), "sheet_path": step.name_of(target),
                 "sheet_entity_id": sheet_entity, "activity_id": log.activity_id, "drawn_at": utcnow()},
            )
        for c in sample:
            step.counts[f"sampled:{c.domain}"] += 1
        step.counts["candidates"] = len(candidates)
        step.files["sheet"] = target
    return step.result()


def _write_sheet(step: Step, log, audit: CritiqueAuditSettings, target: Path, pair_ids: list[str]) -> tuple[str, int]:
    query = _SHEET_QUERY.format(audit_round=audit.round)  # the round name is checked against _ROUND_NAME
    return write_file(step, log, "critique_audit", ExportFile(target, query, "csv"), pair_ids, "samples")


def _keep_frozen(step: Step, audit: CritiqueAuditSettings, drawn: tuple, target: Path) -> None:
    """A drawn round keeps its sample; only a lost blank sheet is written again."""
    size, seed, allocation, n_sampled = drawn
    if (size, seed, allocation) != (audit.size, audit.seed, audit.allocation):
        raise Failure(
            description=f"audit round {audit.round!r} was drawn with size={size}, seed={seed}, allocation={allocation}; its"
            " sample is frozen so the sheets reviewers hold stay valid. To draw another sample, set critique.audit.round"
            " to a new name."
        )
    step.notes["frozen"] = f"round {audit.round!r} already drawn ({n_sampled} pairs)"
    if target.is_file():
        with step.batch() as log:
            export_names(step, log, [target])  # its rows (the round's too) by name, where they held its absolute path
    else:
        with step.batch() as log:
            pair_ids = [r[0] for r in log.con.execute(
                "SELECT pair_id FROM critique_audit_sample WHERE audit_round = ? ORDER BY position", [audit.round]).fetchall()]
            sheet_entity, _ = _write_sheet(step, log, audit, target, pair_ids)
            set_round_sheet(log.con, audit.round, step.name_of(target), sheet_entity)
        step.files["sheet_rewritten"] = target


@asset(
    metadata=writes("critique_audit_figure", "critique_audit_decision", "critique_audit_review", "critique_audit_sheet"),
    code_version="1",
    deps=[critique_audit_sample],
    description="Reads the filled review sheets, keeps every review with its sheet row, and reports acceptance, the"
    " share of pairs no reviewer flagged as blocking, and per-domain figures. A malformed sheet fails the run naming"
    " its rows, after the good sheets are stored.",
)
def critique_audit_report(context: AssetExecutionContext, warehouse: WarehouseResource, critique: CritiqueSettings) -> MaterializeResult:
    audit = critique.audit
    _checked(audit)
    wh = warehouse.get_warehouse()
    returned = Path(audit.returned_dir)
    params = {"returned_dir": wh.name_of(returned), "acceptance_rule": audit.acceptance_rule, "min_reviewers": audit.min_reviewers}
    with recorded_step(context, wh, params) as step:
        problems = _ingest_sheets(step, returned)
        figures = _report(step, audit)
        for f in figures:
            if f.scope == ALL_SCOPE:
                step.notes[f"round {f.audit_round}"] = {
                    "decided": f"{f.n_decided}/{f.n_sampled}", "acceptance_rate": f.acceptance_rate,
                    "no_blocking_rate": f.no_blocking_rate, "reviewers": f.n_reviewers,
                }
        if problems:
            raise Failure(
                description="malformed review sheet(s); the other sheets were stored. Fix the rows named and run again:\n"
                + "\n".join(problems),
                metadata={"sheets": MetadataValue.json(problems)},
            )
    return step.result()


def _ingest_sheets(step: Step, returned: Path) -> list[str]:
    """Store each new or changed sheet whole, or record why not; returns the problems of every bad sheet present.

    One item per sheet file, one at a time (a batch of one), so that a later sheet is checked against the
    reviews of the earlier ones (a reviewer reviews a pair once, in one sheet)."""
    with step.batch() as log:
        sampled: dict[str, set[str]] = {}
        for audit_round, pair_id in log.con.execute("SELECT audit_round, pair_id FROM critique_audit_sample").fetchall():
            sampled.setdefault(audit_round, set()).add(pair_id)
        known = {path: (sha, status, detail) for path, sha, status, detail in
                 log.con.execute("SELECT path, sha256, status, detail FROM critique_audit_sheet").fetchall()}
        # by sheet name, also where a warehouse written before names were used holds an absolute path (renamed by
        # ingest_sheets only after this is read)
        owners = {(r, p, who): step.name_of(step.warehouse.path_of(path)) for r, p, who, path in
                  log.con.execute("SELECT audit_round, pair_id, reviewer, sheet_path FROM critique_audit_review").fetchall()}

    def read(path: Path) -> tuple[list[Review], int]:
        name = step.name_of(path)
        reviews, blank = _read_sheet(path, name, sampled, owners)
        for key in [k for k, owner in owners.items() if owner == name]:
            del owners[key]
        owners.update({(r.audit_round, r.pair_id, r.reviewer): name for r in reviews})
        return reviews, blank

    def record(log: ActivityLog, name: str, sha: str, reviews: list[Review], blank: int, error: SheetError | None) -> None:
        _record_sheet(step, log, name, sha, reviews, blank, error)

    return ingest_sheets(step, AUDIT_STAGE, "audit_sheet", returned, known, read, record, "sheets_ingested", role="review_sheet")


def _read_sheet(path: Path, name: str, sampled: dict[str, set[str]],
                owners: dict[tuple[str, str, str], str]) -> tuple[list[Review], int]:
    """The sheet's reviews; one of a pair its reviewer reviewed in another sheet (``owners``: by sheet name) is a
    clash that rejects the sheet."""
    reviews, blank = read_sheet_file(path, lambda stream, name: parse_review_sheet(stream, name, sampled), SheetError)
    clashes = [
        (r.row, f"reviewer {r.reviewer!r} already reviewed pair {r.pair_id} in sheet {Path(owner).name}")
        for r in reviews
        if (owner := owners.get((r.audit_round, r.pair_id, r.reviewer))) not in (None, name)
    ]
    if clashes:
        raise SheetError(path.name, clashes)
    return reviews, blank


def _record_sheet(step: Step, log: ActivityLog, name: str, sha: str, reviews: list[Review], blank: int,
                  error: SheetError | None) -> None:
    """The sheet's reviews (replacing those of its earlier content) and its status; ``ingest_sheets`` records the
    sheet entity and the loop its rejection row."""
    sheet_entity = entity_id("audit_sheet", sha)
    record_audit_sheet(
        log.con,
        name,
        [{"audit_round": r.audit_round, "pair_id": r.pair_id, "reviewer": r.reviewer, "accept": r.accept,
          "blocking_issues": json.dumps(list(r.blocking_issues)), "non_blocking_issues": json.dumps(list(r.non_blocking_issues)),
          "comment": r.comment or None, "sheet_path": name, "sheet_sha256": sha, "sheet_row": r.row,
          "activity_id": log.activity_id} for r in reviews],
        {"path": name, "sha256": sha, "entity_id": sheet_entity, "status": "rejected" if error else "ingested",
         "reason_code": error.reason_code if error else None, "detail": str(error) if error else None,
         "n_reviews": len(reviews), "n_blank": blank, "activity_id": log.activity_id, "read_at": utcnow()},
    )
    step.counts["reviews_ingested"] += len(reviews)


def _report(step: Step, audit: CritiqueAuditSettings) -> list[AuditFigures]:
    """Recompute every round's verdicts and figures from all stored reviews (a sample is small by design)."""
    with step.batch() as log:
        sample = log.con.execute("SELECT audit_round, pair_id, domain FROM critique_audit_sample ORDER BY audit_round, position").fetchall()
        reviews = [
            Review(r, p, who, accept, tuple(json.loads(b)), tuple(json.loads(nb)), comment or "", row)
            for r, p, who, accept, b, nb, comment, row in log.con.execute(
                "SELECT audit_round, pair_id, reviewer, accept, blocking_issues, non_blocking_issues, comment, sheet_row"
                " FROM critique_audit_review ORDER BY audit_round, pair_id, reviewer"
            ).fetchall()
        ]
        sheets = [row[0] for row in log.con.execute(
            "SELECT entity_id FROM critique_audit_sheet WHERE status = 'ingested' ORDER BY path").fetchall()]
        round_sheets = [row[0] for row in log.con.execute("SELECT sheet_entity_id FROM critique_audit_round").fetchall()]
    outcomes = pair_outcomes(sample, reviews, audit.acceptance_rule, audit.min_reviewers)
    figures = audit_figures(outcomes, reviews)
    report_rows = [
        {"audit_round": f.audit_round, "scope": f.scope, "acceptance_rule": audit.acceptance_rule, "min_reviewers": audit.min_reviewers,
         "n_sampled": f.n_sampled, "n_decided": f.n_decided, "n_reviews": f.n_reviews, "n_reviewers": f.n_reviewers,
         "n_accepted": f.n_accepted, "n_no_blocking": f.n_no_blocking, "acceptance_rate": f.acceptance_rate,
         "no_blocking_rate": f.no_blocking_rate, "non_blocking_rate": f.non_blocking_rate, "pairwise_agreement": f.pairwise_agreement}
        for f in figures
    ]
    report_entity = entity_id("critique_audit_report", digest_of([report_rows, [o.__dict__ for o in outcomes]]))
    with step.batch() as log:
        log.entities([Entity(report_entity, "critique_audit_report", attributes={"rounds": sorted({f.audit_round for f in figures})})])
        log.generated([report_entity])
        log.derived([*((report_entity, s, "reviewed_in") for s in sheets), *((report_entity, s, "audits") for s in round_sheets)])
        replace_audit_results(
            log.con,
            [{"audit_round": o.audit_round, "pair_id": o.pair_id, "domain": o.domain, "n_reviews": o.n_reviews,
              "n_accept": o.n_accept, "n_blocking_flags": o.n_blocking_flags, "accepted": o.accepted,
              "acceptance_rule": audit.acceptance_rule, "activity_id": log.activity_id} for o in outcomes],
            [{**row, "report_entity_id": report_entity, "activity_id": log.activity_id} for row in report_rows],
        )
        rejected = {o.pair_id: o for o in outcomes if o.accepted is False}
        log.rejected(AUDIT_STAGE, (
            (pair_id, "audit_rejected", f"{o.n_blocking_flags} of {o.n_reviews} reviewer(s) flagged a blocking issue"
             f" (round {o.audit_round}, {audit.acceptance_rule} rule)")
            for pair_id, o in rejected.items()
        ))
        log.unrejected(AUDIT_STAGE, (o.pair_id for o in outcomes if o.pair_id not in rejected))
    step.counts["pairs_decided"] = sum(o.accepted is not None for o in outcomes)
    step.counts["pairs_audit_rejected"] = len(rejected)
    step.notes["report_entity_id"] = report_entity
    return figures
