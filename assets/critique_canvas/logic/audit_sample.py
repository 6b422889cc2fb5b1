"""The CritiqueCanvas human audit: a domain-stratified sample of accepted pairs, reviewer sheets, and figures.

After AesCanvas S2.3.1: several reviewers independently read each sampled pair and list blocking issues
(instruction–image mismatch, task not done, material hallucination, generic or incomplete answer, a safety,
rights or compliance failure) and non-blocking ones (minor imprecision, awkward wording, some repetition, a
missed secondary point). A blocking issue means reject; non-blocking issues alone do not. Two figures come
out: the acceptance rate and the share of pairs that no reviewer flagged as blocking (the paper's "raw
agreement"), overall and per domain.

Sheets are CSV because reviewers work in spreadsheets; rows are numbered as a spreadsheet shows them (the
header is row 1), so an error can point at the cell to fix.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import TextIO

from assets.core.logic import sheets
from warehouse.ids import digest_of

ALLOCATIONS = ("proportional", "equal")
ACCEPTANCE_RULES = ("majority", "unanimous")
ACCEPT, REJECT = "accept", "reject"
ALL_SCOPE = "all"

# Columns of the blank sheet; a returned sheet needs at least REVIEW_COLUMNS (others are for reading).
SHEET_COLUMNS = (
    "audit_round", "pair_id", "domain", "image", "instruction", "response",
    "reviewer", "decision", "blocking_issues", "non_blocking_issues", "comment",
)
REVIEW_COLUMNS = ("audit_round", "pair_id", "reviewer", "decision", "blocking_issues", "non_blocking_issues")
ISSUE_SEPARATOR = ";"


@dataclass(frozen=True)
class AuditCandidate:
    pair_id: str
    group_id: str
    domain: str


def allocate(available: Mapping[str, int], size: int, allocation: str) -> dict[str, int]:
    """How many pairs each domain contributes to a sample of ``size``.

    ``proportional`` follows each domain's share of the accepted pairs, ``equal`` gives every domain the
    same number; both round by largest remainder (ties to the domain name) and hand what a small domain
    cannot fill to the others, so the sample reaches ``min(size, total)`` whenever it can.
    """
    if allocation not in ALLOCATIONS:
        raise ValueError(f"audit allocation must be one of {ALLOCATIONS}, not {allocation!r}")
    quota = {domain: 0 for domain in available}
    remaining = min(size, sum(available.values()))
    while remaining > 0:
        open_domains = sorted(d for d in available if quota[d] < available[d])
        weights = {d: (available[d] if allocation == "proportional" else 1) for d in open_domains}
        total = sum(weights.values())
        exact = {d: remaining * w / total for d, w in weights.items()}
        share = {d: int(exact[d]) for d in open_domains}
        leftover = remaining - sum(share.values())
        for d in sorted(open_domains, key=lambda d: (-(exact[d] - share[d]), d))[:leftover]:
            share[d] += 1
        for d in open_domains:
            take = min(share[d], available[d] - quota[d])
            quota[d] += take
            remaining -= take
    return quota


def draw_sample(candidates: Iterable[AuditCandidate], size: int, seed: int, allocation: str) -> list[AuditCandidate]:
    """A reproducible stratified sample: per domain, pairs in seeded order, one pair per critique group
    before any group gives a second, so the audit covers as many images as its size allows."""
    by_domain: dict[str, list[AuditCandidate]] = defaultdict(list)
    for candidate in candidates:
        by_domain[candidate.domain].append(candidate)
    quota = allocate({d: len(c) for d, c in by_domain.items()}, size, allocation)
    sample: list[AuditCandidate] = []
    for domain in sorted(by_domain):
        ordered = sorted(by_domain[domain], key=lambda c: digest_of([seed, c.group_id, c.pair_id]))
        depth: dict[str, int] = defaultdict(int)
        ranked = []
        for c in ordered:
            ranked.append((depth[c.group_id], digest_of([seed, c.group_id]), c))
            depth[c.group_id] += 1
        ranked.sort(key=lambda r: (r[0], r[1]))
        sample.extend(c for _, _, c in ranked[: quota[domain]])
    return sample


@dataclass(frozen=True)
class Review:
    audit_round: str
    pair_id: str
    reviewer: str
    accept: bool
    blocking_issues: tuple[str, ...]
    non_blocking_issues: tuple[str, ...]
    comment: str
    row: int


class SheetError(sheets.SheetError):
    """A returned audit sheet that cannot be read; names the sheet and every offending row."""

    reason_code = "malformed_audit_sheet"
    prefix = "audit sheet"


def _issues(cell: str | None) -> tuple[str, ...]:
    return tuple(part.strip() for part in (cell or "").replace("\n", ISSUE_SEPARATOR).split(ISSUE_SEPARATOR) if part.strip())


def parse_review_sheet(stream: TextIO, sheet: str, sampled: Mapping[str, set[str]]) -> tuple[list[Review], int]:
    """The reviews in a returned sheet, and how many rows were left blank (not reviewed yet).

    ``sampled`` maps each drawn audit round to its pair ids. The sheet is read whole or not at all: any
    bad row raises SheetError listing every problem, so a half-read sheet never skews the figures.
    """
    reader = sheets.SheetReader(stream, sheet, REVIEW_COLUMNS, SheetError, is_blank=_undecided)
    reviews: list[Review] = []
    for row_number, cells in reader:
        decision = cells["decision"].lower()
        blocking, non_blocking = _issues(cells["blocking_issues"]), _issues(cells["non_blocking_issues"])
        problem = _row_problem(cells, decision, blocking, sampled)
        if problem:
            reader.problem(row_number, problem)
            continue
        key = (cells["audit_round"], cells["pair_id"], cells["reviewer"])
        earlier = reader.earlier_row(key, row_number)
        if earlier is not None:
            reader.problem(row_number, f"reviewer {key[2]!r} already reviewed pair {key[1]} on row {earlier}")
            continue
        reviews.append(
            Review(key[0], key[1], key[2], decision == ACCEPT, blocking, non_blocking, cells.get("comment", ""), row_number)
        )
    reader.finish()
    return reviews, reader.blank


def _undecided(cells: Mapping[str, str]) -> bool:
    """Not reviewed yet: no decision and no issue (a prefilled reviewer or pair alone is not a review)."""
    return not cells["decision"] and not _issues(cells["blocking_issues"]) and not _issues(cells["non_blocking_issues"])


def _row_problem(cells: Mapping[str, str], decision: str, blocking: tuple[str, ...], sampled: Mapping[str, set[str]]) -> str | None:
    audit_round, pair_id = cells["audit_round"], cells["pair_id"]
    if audit_round not in sampled:
        return f"audit_round {audit_round!r} has not been drawn (drawn: {', '.join(sorted(sampled)) or 'none'})"
    if pair_id not in sampled[audit_round]:
        return f"pair_id {pair_id!r} is not in the sample of audit round {audit_round!r}"
    if not cells["reviewer"]:
        return "reviewer is empty"
    if decision not in (ACCEPT, REJECT):
        return f"decision {cells['decision']!r} is not {ACCEPT} or {REJECT}"
    if decision == REJECT and not blocking:
        return "decision is reject but no blocking issue is given (a rejection needs its blocking issue)"
    if decision == ACCEPT and blocking:
        return "decision is accept but a blocking issue is given (a blocking issue requires reject)"
    return None


@dataclass(frozen=True)
class PairOutcome:
    audit_round: str
    pair_id: str
    domain: str
    n_reviews: int
    n_accept: int
    n_blocking_flags: int
    accepted: bool | None  # None: fewer reviews than the minimum, not decided yet


def pair_outcomes(sample: Iterable[tuple[str, str, str]], reviews: Iterable[Review], rule: str, min_reviewers: int) -> list[PairOutcome]:
    """Per sampled (round, pair, domain): the reviewers' verdict under the acceptance rule.

    ``majority`` accepts when more than half of the reviewers accept (a tie rejects: a pair that half the
    reviewers found a blocking problem in is not one to vouch for); ``unanimous`` accepts only when none
    flagged a blocking issue.
    """
    if rule not in ACCEPTANCE_RULES:
        raise ValueError(f"audit acceptance rule must be one of {ACCEPTANCE_RULES}, not {rule!r}")
    by_pair: dict[tuple[str, str], list[Review]] = defaultdict(list)
    for review in reviews:
        by_pair[(review.audit_round, review.pair_id)].append(review)
    outcomes = []
    for audit_round, pair_id, domain in sample:
        got = by_pair.get((audit_round, pair_id), [])
        n_accept = sum(r.accept for r in got)
        if len(got) < max(min_reviewers, 1):
            accepted = None
        elif rule == "majority":
            accepted = 2 * n_accept > len(got)
        else:
            accepted = n_accept == len(got)
        outcomes.append(
            PairOutcome(audit_round, pair_id, domain, len(got), n_accept, sum(1 for r in got if r.blocking_issues), accepted)
        )
    return outcomes


@dataclass(frozen=True)
class AuditFigures:
    audit_round: str
    scope: str               # "all" or a domain
    n_sampled: int
    n_decided: int           # pairs with at least the minimum number of reviews
    n_reviews: int
    n_reviewers: int
    n_accepted: int
    n_no_blocking: int       # decided pairs that no reviewer flagged as blocking
    n_with_non_blocking: int
    n_agreeing_reviewer_pairs: int
    n_reviewer_pairs: int

    @property
    def acceptance_rate(self) -> float | None:
        return self.n_accepted / self.n_decided if self.n_decided else None

    @property
    def no_blocking_rate(self) -> float | None:
        return self.n_no_blocking / self.n_decided if self.n_decided else None

    @property
    def non_blocking_rate(self) -> float | None:
        return self.n_with_non_blocking / self.n_decided if self.n_decided else None

    @property
    def pairwise_agreement(self) -> float | None:
        """Share of reviewer pairs, over pairs reviewed at least twice, giving the same decision."""
        return self.n_agreeing_reviewer_pairs / self.n_reviewer_pairs if self.n_reviewer_pairs else None


def audit_figures(outcomes: Sequence[PairOutcome], reviews: Sequence[Review]) -> list[AuditFigures]:
    """Figures per round, overall and per domain, counted over decided pairs only."""
    by_pair: dict[tuple[str, str], list[Review]] = defaultdict(list)
    for review in reviews:
        by_pair[(review.audit_round, review.pair_id)].append(review)
    scopes: dict[tuple[str, str], list[PairOutcome]] = defaultdict(list)
    for outcome in outcomes:
        scopes[(outcome.audit_round, ALL_SCOPE)].append(outcome)
        scopes[(outcome.audit_round, outcome.domain)].append(outcome)
    figures = []
    for (audit_round, scope), members in sorted(scopes.items()):
        decided = [o for o in members if o.accepted is not None]
        decided_reviews = [r for o in decided for r in by_pair[(o.audit_round, o.pair_id)]]
        reviewer_pairs = [
            (a.accept == b.accept) for o in decided for a, b in combinations(by_pair[(o.audit_round, o.pair_id)], 2)
        ]
        figures.append(
            AuditFigures(
                audit_round=audit_round,
                scope=scope,
                n_sampled=len(members),
                n_decided=len(decided),
                n_reviews=len(decided_reviews),
                n_reviewers=len({r.reviewer for r in decided_reviews}),
                n_accepted=sum(bool(o.accepted) for o in decided),
                n_no_blocking=sum(o.n_blocking_flags == 0 for o in decided),
                n_with_non_blocking=sum(
                    any(r.non_blocking_issues for r in by_pair[(o.audit_round, o.pair_id)]) for o in decided
                ),
                n_agreeing_reviewer_pairs=sum(reviewer_pairs),
                n_reviewer_pairs=len(reviewer_pairs),
            )
        )
    return figures
