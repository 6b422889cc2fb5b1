"""Reading the photocritique judges' answers: a pairwise usefulness verdict (A, B or tie) and a 1–5 substantive
similarity rating, from whatever shape a model gave them in.

The judge templates ask for one JSON object, but judges wrap it in fences, answer with a bare letter or bury the
answer in a sentence. So the JSON object is tried first (found by the shared ``extract_json_object``), then the
whole answer as a bare value, then explicit phrasings in prose ("Verdict: B", "Critique A is more useful",
"Rating: 4", "2/5"). Prose letters must be capitals, so the article "a" is never read as a verdict. Every
statement found must agree: two different answers in one text are ``ambiguous``, not a guess. A failure gives
``value`` None and a stable ``problem`` code.

A pair is judged twice with the critiques' order swapped; ``combine_swapped`` turns the two verdicts into one
outcome in the first order's labels, and a preference that flips with the order is ``inconsistent``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from assets.core.logic.json_answers import SchemaError, extract_json_object

A, B, TIE = "A", "B", "tie"
INCONSISTENT = "inconsistent"  # the preference followed the position, not the critique
UNPARSED = "unparsed"          # at least one of the two answers could not be read
OUTCOMES = (A, B, TIE, INCONSISTENT, UNPARSED)

SIMILARITY_SCALE = (1, 5)

# Problem codes.
EMPTY_ANSWER = "empty_answer"
NO_ANSWER_FOUND = "no_answer_found"
AMBIGUOUS = "ambiguous"
INVALID_VALUE = "invalid_value"
OUT_OF_RANGE = "out_of_range"

PREFERENCE_KEYS = ("winner", "preference", "preferred", "more_useful", "choice", "verdict", "answer")
SIMILARITY_KEYS = ("similarity", "rating", "score", "answer")


@dataclass(frozen=True)
class JudgeAnswer:
    value: str | int | None  # "A" | "B" | "tie" for a preference, 1..5 for a similarity; None when unreadable
    problem: str | None      # a problem code when value is None
    detail: str = ""         # where the value came from, or what was wrong
    rationale: str | None = None  # the judge's stated reason, when its JSON gave one


# --- preference -----------------------------------------------------------------------------------------------

_TIE_WORDS = re.compile(r"(?:tie|tied|draw|equal|equally(?: useful)?|neither|both|same|no preference)", re.IGNORECASE)
_BARE_LETTER = re.compile(r"(?:critique|option|response)?\s*\(?([ab])\)?", re.IGNORECASE)
_LABEL = r"(?:final answer|answer|verdict|winner|choice|preference|more useful(?: critique)?|better critique)"
_PROSE_PREFERENCE = (
    re.compile(rf"\b(?i:{_LABEL})[\"']?\s*(?i:is)?\s*[:=\-]?\s*[*_\"'(\[]*\s*(?i:critique\s+)?(?-i:([AB]))\b"),
    re.compile(r"(?i:critique|option|response)\s+(?-i:([AB]))\s+(?i:is|was)\s+"
               r"(?i:(?:clearly|slightly|much|far|the)\s+)*"
               r"(?i:more useful|better|stronger|more helpful|preferable|preferred|the winner)"),
    re.compile(r"(?i:i\s+(?:would\s+)?prefer|i\s+choose|i\s+pick)\s+(?i:critique\s+)?(?-i:([AB]))\b"),
)
_PROSE_TIE = re.compile(r"\b(?:it'?s a tie|(?:verdict|answer|winner)\s*[:=]\s*[*_\"']*\s*tie|(?:both|the two) "
                        r"(?:critiques )?are (?:about |roughly )?equally (?:useful|helpful|good))\b", re.IGNORECASE)
_DECORATION = " \t\r\n*_`\"'.!:"


def _preference_value(raw: Any) -> str | None:
    if not isinstance(raw, str):
        return None
    text = raw.strip(_DECORATION)
    letter = _BARE_LETTER.fullmatch(text)
    if letter:
        return letter.group(1).upper()
    return TIE if _TIE_WORDS.fullmatch(text) else None


def _agreeing(found: list[Any], what: str) -> JudgeAnswer:
    distinct = sorted(set(found), key=str)
    if not distinct:
        return JudgeAnswer(None, NO_ANSWER_FOUND, f"no {what} found in the answer")
    if len(distinct) > 1:
        return JudgeAnswer(None, AMBIGUOUS, f"the answer states different {what}s: {', '.join(map(str, distinct))}")
    return JudgeAnswer(distinct[0], None, f"{what} stated in prose")


def _from_json(answer: str, keys: tuple[str, ...]) -> tuple[dict[str, Any] | None, str | None]:
    """The answer's JSON object and the first expected key it has, or (None, None) when there is no usable object."""
    try:
        obj = extract_json_object(answer)
    except SchemaError:
        return None, None
    lowered = {str(k).casefold(): k for k in obj}
    key = next((lowered[k] for k in keys if k in lowered), None)
    return obj, key


def _rationale(obj: dict[str, Any]) -> str | None:
    reason = next((obj[k] for k in ("reason", "rationale", "explanation", "justification") if k in obj), None)
    return reason if isinstance(reason, str) else None


def parse_preference(answer: str) -> JudgeAnswer:
    """Which critique the judge found more useful: "A", "B" or "tie"."""
    if not answer or not answer.strip():
        return JudgeAnswer(None, EMPTY_ANSWER, "the judge returned no text")
    obj, key = _from_json(answer, PREFERENCE_KEYS)
    if obj is not None and key is not None:
        value = _preference_value(obj[key])
        if value is None:
            return JudgeAnswer(None, INVALID_VALUE, f"JSON {key!r} is {obj[key]!r}, not A, B or tie", _rationale(obj))
        return JudgeAnswer(value, None, f"JSON key {key!r}", _rationale(obj))
    bare = _preference_value(answer)
    if bare is not None:
        return JudgeAnswer(bare, None, "bare answer")
    found = [m.group(1) for pattern in _PROSE_PREFERENCE for m in pattern.finditer(answer)]
    found += [TIE for _ in _PROSE_TIE.finditer(answer)]
    return _agreeing(found, "verdict")


def combine_swapped(original: str | None, swapped: str | None) -> str:
    """One outcome for a pair judged in both orders, in the original order's labels.

    ``swapped`` is the verdict given when the critiques were shown the other way round, in that run's own labels
    (its "A" is the original B). Agreement gives that verdict; a preference that follows the position is
    ``inconsistent``; a preference in one order and a tie in the other is a tie (a preference only one order
    shows is not one we count); an unreadable answer gives ``unparsed``.
    """
    for verdict in (original, swapped):
        if verdict is not None and verdict not in (A, B, TIE):
            raise ValueError(f"a verdict is A, B, tie or None, not {verdict!r}")
    if original is None or swapped is None:
        return UNPARSED
    unswapped = {A: B, B: A, TIE: TIE}[swapped]
    if original == unswapped:
        return original
    if TIE in (original, unswapped):
        return TIE
    return INCONSISTENT


# --- similarity -----------------------------------------------------------------------------------------------

_BARE_NUMBER = re.compile(r"(\d+(?:\.\d+)?)(?:\s*(?:/|out of)\s*5)?")
_PROSE_RATING = (
    re.compile(r"\b(?:final answer|answer|rating|score|similarity(?: rating| score)?)[\"']?"
               r"(?:\s*\(\s*1\s*[-–]\s*5\s*\))?\s*(?:is|of)?\s*[:=\-]?\s*"
               r"[*_\"'(\[]*\s*(\d+(?:\.\d+)?)(?!\s*[-–]\s*\d)\b", re.IGNORECASE),
    re.compile(r"\b(\d+(?:\.\d+)?)\s*(?:/|out of)\s*5\b", re.IGNORECASE),
    re.compile(r"\b(?:i\s+(?:would\s+)?(?:rate|score|give)(?:\s+(?:this|it|the pair|them))?(?:\s+(?:a|an))?)\s+"
               r"[*_\"']*(\d+(?:\.\d+)?)\b", re.IGNORECASE),
)


def _rating_value(raw: Any) -> tuple[int | None, str | None, str]:
    if isinstance(raw, bool):
        return None, INVALID_VALUE, f"{raw!r} is not a rating"
    if isinstance(raw, str):
        match = _BARE_NUMBER.fullmatch(raw.strip(_DECORATION))
        if not match:
            return None, INVALID_VALUE, f"{raw!r} is not a number"
        raw = float(match.group(1))
    if not isinstance(raw, (int, float)) or raw != int(raw):
        return None, INVALID_VALUE, f"{raw!r} is not a whole number"
    low, high = SIMILARITY_SCALE
    if not low <= int(raw) <= high:
        return None, OUT_OF_RANGE, f"{int(raw)} lies outside {low}..{high}"
    return int(raw), None, ""


def parse_similarity(answer: str) -> JudgeAnswer:
    """The judge's 1–5 substantive-similarity rating."""
    if not answer or not answer.strip():
        return JudgeAnswer(None, EMPTY_ANSWER, "the judge returned no text")
    obj, key = _from_json(answer, SIMILARITY_KEYS)
    if obj is not None and key is not None:
        value, problem, detail = _rating_value(obj[key])
        return JudgeAnswer(value, problem, detail or f"JSON key {key!r}", _rationale(obj))
    if _BARE_NUMBER.fullmatch(answer.strip(_DECORATION)):
        value, problem, detail = _rating_value(answer)
        return JudgeAnswer(value, problem, detail or "bare answer")
    found = [m.group(1) for pattern in _PROSE_RATING for m in pattern.finditer(answer)]
    checked = [_rating_value(raw) for raw in found]
    readable = [value for value, _, _ in checked if value is not None]
    if not readable and checked:
        _, problem, detail = checked[0]
        return JudgeAnswer(None, problem, detail)
    return _agreeing(readable, "rating")
