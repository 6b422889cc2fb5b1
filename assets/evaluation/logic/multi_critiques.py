"""Splitting a multi-pass answer (three critiques written in one reply) into its critiques.

The multi-pass templates ask for one JSON object, ``{"critiques": ["...", "...", "..."]}``. Models also answer
with the object fenced or after a sentence (the shared ``extract_json_object`` finds it), with objects instead of
strings in the list (``{"critique": "..."}`` or ``{"text": "..."}``, kept for their text), or with no JSON at all
but numbered sections ("Critique 1:", "**2.**", "3)"), which are split as a fallback. Anything else, or a count
other than the one asked, is a problem with a stable code; the critiques that were found are still returned so a
report can show what came back.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from assets.core.logic.json_answers import SchemaError, extract_json_object

CRITIQUES_KEY = "critiques"
_TEXT_KEYS = ("critique", "text", "comment", "content")

# Problem codes.
EMPTY_ANSWER = "empty_answer"
NO_CRITIQUES = "no_critiques_found"
NOT_A_LIST = "critiques_not_a_list"
NOT_TEXT = "critique_not_text"
EMPTY_CRITIQUE = "empty_critique"
WRONG_COUNT = "wrong_critique_count"

# A line that opens a numbered section: an optional heading mark or emphasis, then "Critique 2" (or "Comment 2")
# or a bare number closed by ".", ")" or ":" ("2.", "2)"), not the start of a decimal ("1.5 stops").
_SECTION = re.compile(r"^[ \t]*(?:#{1,6}[ \t]*)?[*_]*[ \t]*"
                      r"(?:(?:critique|comment)[ \t]*#?[ \t]*([1-9])|([1-9])[.):](?!\d))"
                      r"[ \t]*[.):\-]?[ \t]*[*_]*[ \t]*[.):\-]?[ \t]*", re.IGNORECASE | re.MULTILINE)


@dataclass(frozen=True)
class MultiCritiques:
    critiques: tuple[str, ...]  # in the answer's order, stripped; possibly fewer or more than expected
    problem: str | None         # None when exactly the expected number of non-empty critiques came back
    detail: str = ""

    @property
    def ok(self) -> bool:
        return self.problem is None


def _text_of(item: Any) -> str | None:
    if isinstance(item, str):
        return item
    if isinstance(item, dict):
        text = next((item[k] for k in _TEXT_KEYS if k in item), None)
        return text if isinstance(text, str) else None
    return None


def _numbered_sections(answer: str) -> list[str]:
    """Sections opened by the numbers 1, 2, 3, ... in order at line starts; other numbered lines stay inside."""
    starts: list[re.Match[str]] = []
    for match in _SECTION.finditer(answer):
        if int(match.group(1) or match.group(2)) == len(starts) + 1:
            starts.append(match)
    ends = [m.start() for m in starts[1:]] + [len(answer)]
    return [answer[m.end():end].strip() for m, end in zip(starts, ends)]


def _checked(critiques: list[str], expected: int, source: str) -> MultiCritiques:
    found = tuple(c.strip() for c in critiques)
    empty = [i + 1 for i, c in enumerate(found) if not c]
    if empty:
        return MultiCritiques(found, EMPTY_CRITIQUE, f"{source}: critique {empty[0]} is empty")
    if len(found) != expected:
        return MultiCritiques(found, WRONG_COUNT, f"{source}: {len(found)} critiques, {expected} asked")
    return MultiCritiques(found, None, source)


def parse_multi_critiques(answer: str, expected: int = 3) -> MultiCritiques:
    """The critiques of a multi-pass answer, JSON first, numbered sections as the fallback."""
    if not answer or not answer.strip():
        return MultiCritiques((), EMPTY_ANSWER, "the model returned no text")
    try:
        obj = extract_json_object(answer)
    except SchemaError:
        obj = None
    if obj is not None and CRITIQUES_KEY in obj:
        items = obj[CRITIQUES_KEY]
        if not isinstance(items, list):
            return MultiCritiques((), NOT_A_LIST, f"{CRITIQUES_KEY!r} holds {type(items).__name__}, not a list")
        texts = [_text_of(item) for item in items]
        if None in texts:
            return MultiCritiques((), NOT_TEXT,
                                  f"critique {texts.index(None) + 1} is neither text nor an object with text")
        return _checked(texts, expected, "JSON")
    sections = _numbered_sections(answer)
    if sections:
        return _checked(sections, expected, "numbered sections")
    return MultiCritiques((), NO_CRITIQUES, f"no {CRITIQUES_KEY!r} object and no numbered critiques in the answer")
