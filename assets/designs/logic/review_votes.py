"""Human review of perturbed designs, one indicator at a time: sheets out, votes in, majority labels, agreement.

After AesEval section 3.2 "Human-in-the-Loop Aesthetic Review" (seed paper 003): an annotator sees a rendered design
and the definition of one indicator and says whether the design has that flaw; several annotators per item, and the
final label is their majority. The label then decides the answers of the three question formats
(assets/designs/logic/question_formats.py).

Sheets are CSV because annotators work in spreadsheets; rows are numbered as a spreadsheet shows them (the header is
row 1) so an error points at the cell to fix. A sheet is read whole or not at all: one bad row rejects the sheet and
the error lists every bad row, so a half-read sheet never shifts a label.

Vote values (case-insensitive): ``flawed`` or ``good``; ``yes`` and ``no`` are also accepted because the annotators'
question is "does the design show this problem?" — ``yes`` means flawed, ``no`` means good.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TextIO

from assets.core.logic.sheets import SheetError, SheetReader
from warehouse.ids import digest_of

SHEET_COLUMNS = ("review_round", "item_id", "design_id", "image", "indicator", "definition", "annotator", "vote", "comment")
REQUIRED_COLUMNS = ("review_round", "item_id", "annotator", "vote")
FLAWED, GOOD = "flawed", "good"
VOTE_VALUES = {"flawed": True, "yes": True, "good": False, "no": False}
TIE_BREAKERS = (FLAWED, GOOD)

RULE_MAJORITY = "majority"
RULE_TIE_UNRESOLVED = "tie_unresolved"
RULE_TIE_BREAKER_FLAWED = "tie_breaker_flawed"
RULE_TIE_BREAKER_GOOD = "tie_breaker_good"
RULE_TOO_FEW_VOTES = "too_few_votes"


@dataclass(frozen=True)
class ReviewItem:
    """One thing to judge: a rendered design and one indicator."""

    item_id: str
    design_id: str
    image: str          # path (or blob reference) of the render the annotator looks at
    indicator: str
    definition: str


def review_item(design_id: str, image: str, indicator: str, definition: str) -> ReviewItem:
    """A ReviewItem whose id comes from (design, indicator): re-exporting the same pair gives the same id, so votes
    from earlier rounds still match. 20 hex digits (80 bits) keep the sheet readable with no realistic collision
    among the ~10^7 (design, indicator) pairs of a full run."""
    for name, value in (("design_id", design_id), ("image", image), ("indicator", indicator), ("definition", definition)):
        if not isinstance(value, str) or not value.strip():
            raise ValueError(f"review item for design {design_id!r}: {name} must be a non-empty string")
    item_id = "dr-" + digest_of(["design-review-item", design_id, indicator])[:20]
    return ReviewItem(item_id, design_id, image, indicator, definition.strip())


def review_sheet_rows(items: Iterable[ReviewItem], review_round: str, annotators: Sequence[str] = ()) -> Iterator[dict[str, str]]:
    """Rows of a blank review sheet, keyed by SHEET_COLUMNS, one per (render, indicator) in the order given.

    With ``annotators``, one row per item and annotator with the annotator filled in (for a shared sheet);
    otherwise the annotator cell is blank for whoever takes the sheet. A generator: a big export streams.
    """
    if not review_round.strip():
        raise ValueError("review_round must be non-empty")
    for item in items:
        for annotator in annotators or ("",):
            yield {
                "review_round": review_round,
                "item_id": item.item_id,
                "design_id": item.design_id,
                "image": item.image,
                "indicator": item.indicator,
                "definition": item.definition,
                "annotator": annotator,
                "vote": "",
                "comment": "",
            }


def next_round(review_round: str) -> str:
    """The round after ``review_round``, for the sheet of the items still waiting for a resolving vote: the next
    number for a numbered round, else the round's name with ``-next``."""
    return str(int(review_round) + 1) if review_round.strip().isdigit() else f"{review_round.strip()}-next"


@dataclass(frozen=True)
class Vote:
    review_round: str
    item_id: str
    design_id: str
    indicator: str
    annotator: str
    flawed: bool
    comment: str
    sheet: str
    row: int


class ReviewSheetError(SheetError):
    """A returned review sheet that cannot be read; names the sheet and every offending row."""

    reason_code = "malformed_review_sheet"
    prefix = "review sheet"


def parse_review_votes(stream: TextIO, sheet_name: str, known_items: Mapping[str, ReviewItem]) -> tuple[list[Vote], int]:
    """The votes in a returned sheet, and how many rows were left blank (no vote yet).

    A row is blank when its vote cell is empty (whatever else it holds: a prefilled annotator is not a vote).
    Every other row must name a known item, an annotator and a valid vote; the design_id and indicator cells, when
    filled, must match the item (a sheet re-sorted on one column only would otherwise attach votes to the wrong
    design). One annotator may vote once per item; annotator names compare case- and space-insensitively so
    "Ana" and "ana " are one person. Extra cells beyond the header are an error only when they hold text (an
    unquoted comma in a comment), since spreadsheets often write empty trailing cells.
    """
    reader = SheetReader(
        stream, sheet_name, REQUIRED_COLUMNS, ReviewSheetError, trailing_empty_cells_ok=True, is_blank=lambda cells: not cells["vote"]
    )
    votes: list[Vote] = []
    for row_number, cells in reader:
        item_id, annotator, raw_vote = cells["item_id"], cells["annotator"], cells["vote"]
        item = known_items.get(item_id)
        if item is None:
            reader.problem(row_number, f"item_id {item_id!r} is not an item of this review" if item_id else "item_id is empty")
            continue
        mismatch = [
            f"{name} {cells[name]!r} does not match item {item_id} ({expected!r})"
            for name, expected in (("design_id", item.design_id), ("indicator", item.indicator))
            if cells.get(name) and cells[name] != expected
        ]
        if mismatch:
            reader.problem(row_number, "; ".join(mismatch))
            continue
        if not annotator:
            reader.problem(row_number, "annotator is empty")
            continue
        flawed = VOTE_VALUES.get(raw_vote.lower())
        if flawed is None:
            reader.problem(row_number, f"vote {raw_vote!r} is not flawed or good (yes/no also accepted: yes = flawed)")
            continue
        earlier = reader.earlier_row((item_id, " ".join(annotator.split()).casefold()), row_number)
        if earlier is not None:
            reader.problem(row_number, f"annotator {annotator!r} already voted on item {item_id} on row {earlier}")
            continue
        votes.append(
            Vote(cells["review_round"], item_id, item.design_id, item.indicator, annotator, flawed,
                 cells.get("comment", ""), sheet_name, row_number)
        )
    reader.finish()
    return votes, reader.blank


@dataclass(frozen=True)
class Label:
    flawed: bool | None    # None: unresolved (a tie with no tie breaker, or fewer votes than required)
    n_votes: int
    n_flawed: int
    tie: bool
    rule: str              # which rule decided: majority, tie_unresolved, tie_breaker_flawed/good, too_few_votes


def majority_label(votes: Iterable[Vote], tie_breaker: str | None = None, min_votes: int = 1) -> Label:
    """The majority label of one item's votes.

    A tie leaves the item unresolved (``flawed=None``, rule ``tie_unresolved``): an even split is exactly the case
    the annotators could not settle, and deciding it either way by default would bias the benchmark — towards
    ``None`` answers if ties went to good, towards noisy positives if they went to flawed. The remedy is one more
    vote. Where no further annotator is available, ``tie_breaker="flawed"`` or ``"good"`` decides ties explicitly,
    and the rule records that it did. Fewer than ``min_votes`` votes leave the item unresolved too.
    """
    if tie_breaker is not None and tie_breaker not in TIE_BREAKERS:
        raise ValueError(f"tie_breaker must be one of {TIE_BREAKERS} or None, not {tie_breaker!r}")
    votes = list(votes)
    items = {v.item_id for v in votes}
    if len(items) > 1:
        raise ValueError(f"majority_label takes the votes of one item, got {len(items)} items")
    n_votes = len(votes)
    n_flawed = sum(v.flawed for v in votes)
    tie = n_votes > 0 and 2 * n_flawed == n_votes
    if n_votes < max(min_votes, 1):
        return Label(None, n_votes, n_flawed, tie, RULE_TOO_FEW_VOTES)
    if not tie:
        return Label(2 * n_flawed > n_votes, n_votes, n_flawed, False, RULE_MAJORITY)
    if tie_breaker is None:
        return Label(None, n_votes, n_flawed, True, RULE_TIE_UNRESOLVED)
    rule = RULE_TIE_BREAKER_FLAWED if tie_breaker == FLAWED else RULE_TIE_BREAKER_GOOD
    return Label(tie_breaker == FLAWED, n_votes, n_flawed, True, rule)


def _by_item(votes: Iterable[Vote]) -> dict[str, list[Vote]]:
    """Votes grouped by item, refusing one annotator voting twice on an item (possibly from two sheets)."""
    grouped: dict[str, list[Vote]] = defaultdict(list)
    seen: dict[tuple[str, str], Vote] = {}
    for vote in votes:
        key = (vote.item_id, " ".join(vote.annotator.split()).casefold())
        if key in seen:
            first = seen[key]
            raise ValueError(
                f"annotator {vote.annotator!r} voted twice on item {vote.item_id}: "
                f"{first.sheet} row {first.row} and {vote.sheet} row {vote.row}"
            )
        seen[key] = vote
        grouped[vote.item_id].append(vote)
    return grouped


def majority_labels(votes: Iterable[Vote], tie_breaker: str | None = None, min_votes: int = 1) -> dict[str, Label]:
    """{item_id: Label} over votes from any number of sheets; a repeated (item, annotator) raises ValueError."""
    return {item_id: majority_label(got, tie_breaker, min_votes) for item_id, got in sorted(_by_item(votes).items())}


@dataclass(frozen=True)
class IndicatorAgreement:
    indicator: str
    n_items: int                          # items with at least two votes (the only ones agreement can be measured on)
    n_pairs: int                          # annotator pairs over those items
    n_agreeing_pairs: int
    mean_pairwise_agreement: float | None  # mean over items of the share of that item's annotator pairs that agree
    fleiss_kappa: float | None            # None when the items' vote counts differ, or chance agreement is 1
    raters_per_item: int | None           # the common vote count when every item has the same, else None


def indicator_agreement(votes: Iterable[Vote]) -> list[IndicatorAgreement]:
    """Per indicator, how well annotators agree, over items with at least two votes.

    Mean pairwise agreement: for an item with n votes of which f say flawed, the share of its n(n-1)/2 annotator
    pairs that agree is (C(f,2) + C(n-f,2)) / C(n,2); the figure is the mean of that share over items (each item
    weighs the same however many votes it has). Fleiss' kappa, when all items have the same n:
    kappa = (P - Pe) / (1 - Pe), with P that mean and Pe = p_flawed^2 + p_good^2 from the pooled vote shares; it is
    None when Pe = 1 (every vote the same, so chance explains all agreement) or the vote counts differ.
    """
    per_indicator: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for item_votes in _by_item(votes).values():
        if len(item_votes) >= 2:
            per_indicator[item_votes[0].indicator].append((len(item_votes), sum(v.flawed for v in item_votes)))
    results = []
    for indicator, counts in sorted(per_indicator.items()):
        shares, n_pairs, n_agree = [], 0, 0
        for n, f in counts:
            pairs, agree = n * (n - 1) // 2, f * (f - 1) // 2 + (n - f) * (n - f - 1) // 2
            shares.append(agree / pairs)
            n_pairs += pairs
            n_agree += agree
        mean_agreement = sum(shares) / len(shares)
        sizes = {n for n, _ in counts}
        raters = next(iter(sizes)) if len(sizes) == 1 else None
        kappa = None
        if raters is not None:
            p_flawed = sum(f for _, f in counts) / (raters * len(counts))
            chance = p_flawed**2 + (1 - p_flawed) ** 2
            kappa = (mean_agreement - chance) / (1 - chance) if chance < 1 else None
        results.append(IndicatorAgreement(indicator, len(counts), n_pairs, n_agree, mean_agreement, kappa, raters))
    return results
