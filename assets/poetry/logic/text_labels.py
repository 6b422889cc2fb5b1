"""The text-integrity label of a poem illustration: OCR finding, reviewers' adjudication, final label.

Why a rule and a sheet instead of the survey vote: text integrity is close to objective, so each image gets one
label, not a mean of opinions (TangPoetryBench, appendix E). An image has a text issue when it shows the poem's
own words (a line, the title or the author) or shows characters that do not belong there. To keep the second
case reproducible, characters count only when a machine can read them, so the OCR lines of
``resources/ocr.py`` are the evidence here; this module itself never imports an OCR engine.

``classify`` turns the OCR lines of one image into a ``TextFinding``:

- ``leaked_poem_text``: the recognised text and one of the poem's strings (title, author, text, translation)
  share two consecutive CJK characters, or two consecutive Latin words (case-folded), or the recognised text
  contains a one-word title or author whole. The OCR lines are read as one stream in the engine's reading
  order, because the engine often returns each Latin word as its own line; runs never cross punctuation.
- ``recognisable_characters``: no leakage, but the OCR read at least ``min_chars`` letters (CJK characters
  included; digits and punctuation are not letters) in all lines together.
- ``none``: neither.

``label`` is 1.0 without an issue and 0.0 with one, the rubric's binary text-integrity score.

Known false positive: artists' seals. A painting in a classical style often carries a red seal whose characters
OCR sometimes reads; the paper does not count seals, but a seal cannot be told from stray text by reading
alone. Such images come out as ``recognisable_characters`` and are cleared by a reviewer on the adjudication
sheet, whose verdict overrides OCR (``final_label``).

The adjudication sheet is a CSV filled by reviewers (``parse_adjudications``): ``item_id``, ``text_issue``
(yes/no), ``issue`` (optional: leaked_poem_text, fake_characters, none), ``reviewer``, ``note``. It is read whole
or not at all (``assets.core.logic.sheets``). Several reviewers of one item vote: the majority decides; a tie leaves
the OCR label in place and says so.
"""

from __future__ import annotations

import unicodedata
from collections import Counter
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from assets.core.logic import sheets
ISSUES = ("none", "leaked_poem_text", "recognisable_characters")
SHEET_ISSUES = ("leaked_poem_text", "fake_characters", "none")
UNSPECIFIED = "unspecified"  # a reviewer said "yes" without naming the kind of issue
SOURCES = ("ocr", "adjudicated")
YES = frozenset({"yes", "y"})
NO = frozenset({"no", "n"})
MAX_SHOWN_TEXT = 200  # characters of recognised text quoted in a detail line


@dataclass(frozen=True)
class TextFinding:
    """What OCR says about one image: ``label`` 1.0 (no issue) / 0.0 (issue), the kind of issue, why."""

    label: float
    issue: str             # one of ISSUES
    detail: str            # a readable reason: what was read, what matched
    recognised: str        # the text that counted, lines joined by newlines ("" when nothing was read)
    matched: tuple[str, ...] = ()  # the shared runs/word pairs behind a leak, sorted


@dataclass(frozen=True)
class Adjudication:
    """One reviewer's verdict on one item, from a row of the adjudication sheet."""

    row: int
    item_id: str
    text_issue: bool
    issue: str             # leaked_poem_text | fake_characters | unspecified (yes) ; none (no)
    reviewer: str
    note: str = ""


@dataclass(frozen=True)
class FinalTextLabel:
    """The label stored for an image, with where it came from (``ocr`` or ``adjudicated``)."""

    label: float
    issue: str
    source: str
    detail: str


class TextAdjudicationSheetError(sheets.SheetError):
    """An adjudication sheet that cannot be read; every offending row is named."""

    reason_code = "malformed_text_adjudication_sheet"
    prefix = "text adjudication sheet"


# --- classify ---------------------------------------------------------------------------------------------


def _is_cjk(char: str) -> bool:
    """Han ideographs (all planes), kana and Hangul: scripts written without spaces between words."""
    code = ord(char)
    return (
        0x3400 <= code <= 0x9FFF
        or 0xF900 <= code <= 0xFAFF
        or 0x20000 <= code <= 0x3FFFF
        or 0x3040 <= code <= 0x30FF
        or 0xAC00 <= code <= 0xD7AF
        or 0x1100 <= code <= 0x11FF
    )


def _is_letter(char: str) -> bool:
    return unicodedata.category(char).startswith("L")


def _tokens(text: str) -> list[list[tuple[str, str]]]:
    """NFKC-normalised, case-folded ``text`` as segments of (kind, token): each CJK character is a "cjk" token,
    each run of other letters and digits a "word" token. Punctuation and symbols end a segment; whitespace only
    separates words."""
    segments: list[list[tuple[str, str]]] = [[]]
    word = ""
    for char in unicodedata.normalize("NFKC", text).casefold():
        if _is_cjk(char):
            if word:
                segments[-1].append(("word", word))
                word = ""
            segments[-1].append(("cjk", char))
        elif char.isalnum():
            word += char
        else:
            if word:
                segments[-1].append(("word", word))
                word = ""
            if not char.isspace() and unicodedata.category(char)[0] in "PS":
                segments.append([])
    if word:
        segments[-1].append(("word", word))
    return [segment for segment in segments if segment]


def _pairs(segments: Iterable[list[tuple[str, str]]]) -> dict[tuple[str, str], str]:
    """Adjacent same-kind token pairs -> their kind ("cjk": a run of two characters; "word": a word bigram)."""
    pairs: dict[tuple[str, str], str] = {}
    for segment in segments:
        for (kind_a, a), (kind_b, b) in zip(segment, segment[1:]):
            if kind_a == kind_b:
                pairs[(a, b)] = kind_a
    return pairs


def _text_and_score(line: Any) -> tuple[str, float]:
    """An OCR line as (text, score): an object with ``text``/``score`` attributes, or a (text, score) pair."""
    if hasattr(line, "text"):
        return str(line.text), float(getattr(line, "score", 1.0))
    text, score = line[0], line[1]
    return str(text), float(score)


def _shown(pair: tuple[str, str], kind: str) -> str:
    return "".join(pair) if kind == "cjk" else " ".join(pair)


def classify(
    lines: Sequence[Any], poem_texts: Sequence[str], min_chars: int = 2, *, min_score: float = 0.0
) -> TextFinding:
    """The OCR finding for one image, from its OCR lines (reading order) and its poem's strings.

    ``poem_texts``: the poem's title, author, text and translation (empty strings are ignored).
    ``min_chars``: letters needed, outside any leak, to flag recognisable characters. ``min_score``: lines the
    OCR read with lower confidence are ignored (the OCR resource normally drops them already).
    """
    if min_chars < 1:
        raise ValueError(f"min_chars must be at least 1, got {min_chars}")
    kept = [text.strip() for text, score in map(_text_and_score, lines) if score >= min_score and text.strip()]
    recognised = "\n".join(kept)
    if not kept:
        return TextFinding(1.0, "none", "OCR read no text", "")

    # The OCR lines as one stream: words split into separate lines still form bigrams across the line break.
    read_segments = _tokens(" ".join(kept))
    read_pairs = _pairs(read_segments)

    poem_pairs: dict[tuple[str, str], str] = {}
    whole_words: set[str] = set()
    for text in poem_texts:
        if not text or not text.strip():
            continue
        segments = _tokens(text)
        poem_pairs.update(_pairs(segments))
        flat = [token for segment in segments for token in segment]
        if len(flat) == 1 and flat[0][0] == "word" and sum(map(_is_letter, flat[0][1])) >= 2:
            whole_words.add(flat[0][1])  # a one-word title or author (CJK names are covered by the pairs)

    leaked_pairs = sorted(set(read_pairs) & set(poem_pairs))
    read_words = {token for segment in read_segments for kind, token in segment if kind == "word"}
    leaked_words = sorted(whole_words & read_words)
    matched = tuple(sorted({_shown(pair, read_pairs[pair]) for pair in leaked_pairs} | set(leaked_words)))

    quoted = recognised.replace("\n", " | ")
    quoted = quoted if len(quoted) <= MAX_SHOWN_TEXT else quoted[: MAX_SHOWN_TEXT - 1] + "…"
    if matched:
        shown = ", ".join(repr(m) for m in matched[:10]) + (f" (+{len(matched) - 10} more)" if len(matched) > 10 else "")
        detail = f"OCR read {quoted!r} in {len(kept)} line(s); shares {shown} with the poem"
        return TextFinding(0.0, "leaked_poem_text", detail, recognised, matched)

    letters = sum(_is_letter(char) for char in recognised)
    if letters >= min_chars:
        detail = f"OCR read {letters} letter(s) unrelated to the poem in {len(kept)} line(s): {quoted!r}"
        return TextFinding(0.0, "recognisable_characters", detail, recognised)
    detail = f"OCR read {quoted!r} ({letters} letter(s), fewer than {min_chars}): not counted"
    return TextFinding(1.0, "none", detail, recognised)


# --- adjudication sheet ------------------------------------------------------------------------------------

REQUIRED_COLUMNS = ("item_id", "text_issue", "reviewer")


def parse_adjudications(
    stream: TextIO, sheet: str, known_items: Collection[str] | None = None
) -> list[Adjudication]:
    """Every verdict on the sheet, in row order; raises ``TextAdjudicationSheetError`` naming every bad row.

    Checked per row: item id present (and among ``known_items`` when given), ``text_issue`` yes or no,
    ``issue`` one of leaked_poem_text / fake_characters / none and consistent with ``text_issue``, reviewer
    present, and no second row for the same item and reviewer (reviewer names compared case-insensitively).
    """
    reader = sheets.SheetReader(
        stream, sheet, REQUIRED_COLUMNS, TextAdjudicationSheetError,
        needs="a text adjudication sheet", trailing_empty_cells_ok=True,
    )
    known = None if known_items is None else set(known_items)
    verdicts: list[Adjudication] = []
    for row, cells in reader:
        problems: list[str] = []
        item_id, reviewer = cells["item_id"], cells["reviewer"]
        answer, issue = cells["text_issue"].lower(), cells.get("issue", "").lower()
        if not item_id:
            problems.append("item_id is empty")
        elif known is not None and item_id not in known:
            problems.append(f"unknown item {item_id!r}")
        if not reviewer:
            problems.append("reviewer is empty")
        if answer not in YES | NO:
            problems.append(f"text_issue {cells['text_issue']!r} is not yes or no")
        if issue and issue not in SHEET_ISSUES:
            problems.append(f"issue {cells['issue']!r} is not one of {', '.join(SHEET_ISSUES)} (or empty)")
        elif answer in YES and issue == "none":
            problems.append("text_issue is yes but issue is none")
        elif answer in NO and issue not in ("", "none"):
            problems.append(f"text_issue is no but issue is {issue}")
        if item_id and reviewer:
            earlier = reader.earlier_row((item_id, reviewer.casefold()), row)
            if earlier is not None:
                problems.append(f"{reviewer!r} already judged {item_id!r} on row {earlier}")
        if problems:
            for text in problems:
                reader.problem(row, text)
            continue
        flagged = answer in YES
        kind = (issue or UNSPECIFIED) if flagged else "none"
        verdicts.append(Adjudication(row, item_id, flagged, kind, reviewer, cells.get("note", "")))
    reader.finish()
    return verdicts


# --- final label ---------------------------------------------------------------------------------------------

_ISSUE_PREFERENCE = {"leaked_poem_text": 0, "fake_characters": 1, UNSPECIFIED: 2}


def final_label(finding: TextFinding | None, adjudications: Sequence[Adjudication]) -> FinalTextLabel | None:
    """The stored label of one item: reviewers' majority when there is one, else the OCR finding.

    - no verdicts: the OCR finding (source ``ocr``), or None without one;
    - a majority: its answer (source ``adjudicated``); for "yes", the issue most of the yes-voters named
      (a tie there goes to leaked_poem_text, then fake_characters, then unspecified);
    - a tie: the OCR finding, its detail saying the reviewers were split; None when there is no OCR finding
      either (the item stays undecided until another reviewer breaks the tie).
    """
    items = {a.item_id for a in adjudications}
    if len(items) > 1:
        raise ValueError(f"final_label takes the verdicts of one item, got {len(items)}: {', '.join(sorted(items))}")
    if not adjudications:
        if finding is None:
            return None
        return FinalTextLabel(finding.label, finding.issue, "ocr", finding.detail)

    yes = [a for a in adjudications if a.text_issue]
    no = [a for a in adjudications if not a.text_issue]
    votes = ", ".join(f"{a.reviewer}: {'yes' if a.text_issue else 'no'}" for a in adjudications)
    if len(yes) == len(no):
        if finding is None:
            return None
        detail = f"reviewers split {len(yes)}-{len(no)} ({votes}); OCR label kept: {finding.detail}"
        return FinalTextLabel(finding.label, finding.issue, "ocr", detail)

    ocr_note = "no OCR finding" if finding is None else f"OCR said {finding.issue}"
    if len(yes) > len(no):
        counts = Counter(a.issue for a in yes)
        issue = min(counts, key=lambda kind: (-counts[kind], _ISSUE_PREFERENCE[kind]))
        detail = f"{len(yes)} of {len(adjudications)} reviewer(s) found a text issue ({votes}); {ocr_note}"
        return FinalTextLabel(0.0, issue, "adjudicated", detail)
    detail = f"{len(no)} of {len(adjudications)} reviewer(s) found no text issue ({votes}); {ocr_note}"
    return FinalTextLabel(1.0, "none", "adjudicated", detail)
