"""Reading a model's answer to a closed question (ContextCanvas's Yes/No and lettered options, AesEval's choices):
which option it names, or why none could be read.

Why a parser of its own: models answer in every form, a JSON object as asked, a bare letter, "Answer: (B)", a
sentence with the option inside, or the option's text. The benchmarks count an answer that names no option, or
names two, as wrong and list it; the parser says which it was (``unparsed`` or ``ambiguous``) so the list can say
why. Resolution order, first hit wins: the JSON ``answer`` field; an explicit marker ("answer: X", "final answer is
X"); the whole answer being one option (id or text); exactly one option id standing alone as a word; exactly one
option's text inside the answer.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

UNPARSED = "unparsed"
AMBIGUOUS = "ambiguous"
_MARKER = re.compile(r"(?:final\s+answer|answer|choice|verdict)\s*(?:is|:|=|-)?\s*[\(\[\"'*]*([A-Za-z0-9][\w-]*)", re.I)
_CODE_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$", re.I)


@dataclass(frozen=True)
class ChoiceAnswer:
    option: str | None        # the option id the answer names; None when none could be read
    problem: str | None       # unparsed | ambiguous, when option is None
    detail: str               # where the option was found, or what was wrong


def _norm(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", text.casefold()).split())


def parse_choice(answer: str, options: Mapping[str, str]) -> ChoiceAnswer:
    """The option of ``options`` (id → its text, e.g. {"A": "Yes", "B": "No"} or {"yes": "Yes", "no": "No"}) that
    ``answer`` names."""
    ids = {option_id.casefold(): option_id for option_id in options}
    texts = {_norm(text): option_id for option_id, text in options.items() if _norm(text)}
    text = _CODE_FENCE.sub("", answer.strip())
    if not text:
        return ChoiceAnswer(None, UNPARSED, "the answer is empty")
    field = _json_answer(text)
    if field is not None:
        found = _whole(field, ids, texts)
        return found if found.option else ChoiceAnswer(None, UNPARSED, f"the JSON answer {field[:40]!r} names no option")
    for match in _MARKER.finditer(text):
        option = ids.get(match.group(1).casefold()) or texts.get(_norm(match.group(1)))
        if option is not None:
            return ChoiceAnswer(option, None, f"marked: {match.group(0)[:40]!r}")
    whole = _whole(text, ids, texts)
    if whole.option is not None:
        return whole
    words = set(re.findall(r"[\w-]+", text))
    named = sorted({ids[w.casefold()] for w in words if w.casefold() in ids and (len(w) > 1 or w.isupper())})
    if len(named) == 1:
        return ChoiceAnswer(named[0], None, f"the only option id in the answer: {named[0]}")
    if len(named) > 1:
        return ChoiceAnswer(None, AMBIGUOUS, f"the answer names {', '.join(named)}")
    inside = sorted({option for norm, option in texts.items() if re.search(rf"\b{re.escape(norm)}\b", _norm(text))})
    if len(inside) == 1:
        return ChoiceAnswer(inside[0], None, f"the only option text in the answer: {options[inside[0]][:40]!r}")
    if len(inside) > 1:
        return ChoiceAnswer(None, AMBIGUOUS, f"the answer contains the texts of {', '.join(inside)}")
    return ChoiceAnswer(None, UNPARSED, f"no option named in {text[:60]!r}")


def _json_answer(text: str) -> str | None:
    try:
        obj = json.loads(text)
    except ValueError:
        return None
    if isinstance(obj, dict):
        value = obj.get("answer", obj.get("choice"))
        return value if isinstance(value, str) else None
    return None


def _whole(text: str, ids: Mapping[str, str], texts: Mapping[str, str]) -> ChoiceAnswer:
    bare = text.strip().strip("()[]{}.\"'* ").casefold()
    if bare in ids:
        return ChoiceAnswer(ids[bare], None, "the answer is the option id")
    if _norm(text) in texts:
        return ChoiceAnswer(texts[_norm(text)], None, "the answer is the option text")
    return ChoiceAnswer(None, UNPARSED, "not an option as a whole")


@dataclass(frozen=True)
class ClassReport:
    """Scores of answers against gold labels; unreadable answers count as wrong and as no class."""

    n: int
    accuracy: float
    macro_f1: float
    per_class_f1: dict[str, float]
    predicted_share: dict[str, float]   # per class, the share of answers naming it (ContextCanvas: the Yes rate)
    unreadable: int


def classification_report(gold: Sequence[str], predicted: Sequence[str | None], classes: Sequence[str]) -> ClassReport:
    """Accuracy, macro-F1 over ``classes`` (a class never in gold nor predicted is left out of the mean) and each
    class's F1, and how often each class was answered."""
    if len(gold) != len(predicted):
        raise ValueError(f"{len(gold)} gold labels but {len(predicted)} answers")
    if not gold:
        raise ValueError("no answers to score")
    per_class: dict[str, float] = {}
    for label in classes:
        tp = sum(g == label and p == label for g, p in zip(gold, predicted))
        fp = sum(g != label and p == label for g, p in zip(gold, predicted))
        fn = sum(g == label and p != label for g, p in zip(gold, predicted))
        if tp + fp + fn:
            per_class[label] = 2 * tp / (2 * tp + fp + fn)
    n = len(gold)
    return ClassReport(
        n=n, accuracy=sum(g == p for g, p in zip(gold, predicted)) / n,
        macro_f1=sum(per_class.values()) / len(per_class) if per_class else 0.0, per_class_f1=per_class,
        predicted_share={label: sum(p == label for p in predicted) / n for label in classes},
        unreadable=sum(p is None for p in predicted))
