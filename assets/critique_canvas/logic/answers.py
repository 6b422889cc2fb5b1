"""The CritiqueCanvas vocabulary and the structured answers of the chain: plan, dialogue, paragraphs and verdicts.

Providers are asked for these objects (natively through the JSON Schemas below where they support it), but an
answer is never trusted: every one goes through a validator here that either returns typed values or raises
``SchemaError`` with a stable reason code, so rejections can be counted and repaired by reason. Models often wrap
JSON in code fences or put a sentence before it; the validators look for the outermost object instead of failing.
Acceptance of a pair is computed from the verifier's checks, never read from the model; a per-pair verdict also
states a decision with its reason, and one that contradicts its own checks is invalid (S2.2.1: accept if and only
if all three criteria pass and no blocking issue is present).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from assets.core.logic.json_answers import INVALID_JSON, SchemaError, extract_json_object
from warehouse.ids import digest_of, entity_id

DOMAINS = ("photography", "painting", "virtual")
MAX_DIMENSIONS = 5
N_PAIRS = 6


@dataclass(frozen=True)
class Dimension:
    id: str
    name: str
    description: str


DIMENSIONS: tuple[Dimension, ...] = (
    Dimension("content_and_narrative", "Content and narrative",
              "What is shown, the story or theme it carries, and what the image is mainly about."),
    Dimension("composition", "Composition",
              "How elements are placed: focal point, balance, framing, perspective, hierarchy and lines that guide the eye."),
    Dimension("color", "Color",
              "The palette, its harmony and contrast, saturation and temperature, and what the colours do for mood or meaning."),
    Dimension("lighting", "Lighting",
              "Where light comes from and its quality, highlights and shadows, tonal range, and how light shapes form"
              " or mood."),
    Dimension("lines_and_brushstrokes", "Lines and brushstrokes",
              "Contours and line quality, direction and layering of marks, surface handling, and the texture or rhythm"
              " they make."),
    Dimension("style", "Style",
              "Medium and visual language, genre, historical or cultural references, and whether the style suits"
              " the image's aim."),
    Dimension("emotion", "Emotion",
              "Mood and atmosphere, and the kind and strength of feeling: tension, calm, intimacy, drama."),
    Dimension("technique", "Technique",
              "Quality of execution: rendering, focus and depth of field, exposure, texture and detail, and other craft"
              " choices."),
    Dimension("symbolism", "Symbolism",
              "Motifs, iconography, metaphors and culturally coded signs, and the ideas that visible elements stand for."),
    Dimension("visual_appeal", "Visual appeal",
              "First impression and overall attraction: impact, harmony, refinement, richness and how memorable it is."),
)
DIMENSION_IDS: tuple[str, ...] = tuple(d.id for d in DIMENSIONS)

# Reason codes, stable: they are stored with rejected items and counted in reports.
WRONG_SHAPE = "wrong_shape"
UNKNOWN_DIMENSION = "unknown_dimension"
TOO_MANY_DIMENSIONS = "too_many_dimensions"
DUPLICATE_DIMENSION = "duplicate_dimension"
WRONG_PAIR_COUNT = "wrong_pair_count"
EMPTY_TEXT = "empty_text"
IMPROVEMENT_COUNT = "improvement_count"
VERDICT_COUNT = "verdict_count"
VERDICT_PAIRS = "verdict_pairs"
WRONG_PARAGRAPH_COUNT = "wrong_paragraph_count"
REPEATED_INSTRUCTION = "repeated_instruction"
INCONSISTENT_DECISION = "inconsistent_decision"
UNEXPLAINED_FAILURE = "unexplained_failure"
REASON_CODES = (INVALID_JSON, WRONG_SHAPE, UNKNOWN_DIMENSION, TOO_MANY_DIMENSIONS, DUPLICATE_DIMENSION, WRONG_PAIR_COUNT,
                EMPTY_TEXT, IMPROVEMENT_COUNT, VERDICT_COUNT, VERDICT_PAIRS, WRONG_PARAGRAPH_COUNT, REPEATED_INSTRUCTION,
                INCONSISTENT_DECISION, UNEXPLAINED_FAILURE)
CRITERIA = ("instruction_consistency", "visual_grounding", "response_quality")
ISSUE_CRITERIA = (*CRITERIA, "compliance")
SEVERITIES = ("blocking", "non_blocking")
DECISIONS = ("accept", "reject")


# --- JSON Schemas (OpenAI json_schema strict mode and Gemini response_json_schema both accept these) -------------

def _object(properties: dict[str, Any], description: str) -> dict[str, Any]:
    # Strict mode wants every property required and no extras, on every nested object.
    return {"type": "object", "description": description, "properties": properties, "required": list(properties),
            "additionalProperties": False}


_DIMENSION_ID = {"type": "string", "enum": list(DIMENSION_IDS)}

PLAN_SCHEMA: dict[str, Any] = _object({
    "dimensions": {
        "type": "array", "minItems": 1, "maxItems": MAX_DIMENSIONS,
        "description": "The most relevant dimensions, most relevant first, each at most once.",
        "items": _object({
            "dimension": _DIMENSION_ID,
            "reason": {"type": "string", "description": "Visible evidence that makes this dimension worth discussing."},
        }, "One selected dimension."),
    },
}, "Dimensions selected for the critique of one image.")

DIALOGUE_SCHEMA: dict[str, Any] = _object({
    "pairs": {
        "type": "array", "minItems": N_PAIRS, "maxItems": N_PAIRS,
        "description": "Six different question-answer pairs; exactly one has improvement true.",
        "items": _object({
            "question": {"type": "string"},
            "answer": {"type": "string", "description": "Critique that cites concrete visual evidence."},
            "dimension": {"anyOf": [_DIMENSION_ID, {"type": "null"}],
                          "description": "The dimension the pair mainly addresses, or null when it spans several."},
            "improvement": {"type": "boolean", "description": "True only for the pair on how the image could be improved."},
        }, "One question and its answer."),
    },
}, "Critique dialogue about one image.")

PARAGRAPHS_SCHEMA: dict[str, Any] = _object({
    "paragraphs": {
        "type": "array", "minItems": 1,
        "description": "Single-turn paragraph instructions, each with its paragraph; as many as asked for.",
        "items": _object({
            "instruction": {"type": "string", "description": "A request for one coherent analytical paragraph."},
            "dimension": {"anyOf": [_DIMENSION_ID, {"type": "null"}],
                          "description": "The one dimension the paragraph must stay with, or null for a broad appreciation."},
            "response": {"type": "string", "description": "The paragraph, citing concrete visual evidence."},
        }, "One instruction and its paragraph."),
    },
}, "Dimension-focused paragraph instructions about one image.")

VERDICTS_SCHEMA: dict[str, Any] = _object({
    "verdicts": {
        "type": "array", "minItems": 1,
        "description": "Exactly one verdict for each numbered pair.",
        "items": _object({
            "pair": {"type": "integer", "minimum": 1},
            "instruction_consistency": {"type": "boolean"},
            "visual_grounding": {"type": "boolean"},
            "response_quality": {"type": "boolean"},
            "blocking_issues": {"type": "array", "items": {"type": "string"}},
            "non_blocking_issues": {"type": "array", "items": {"type": "string"}},
        }, "The verdict on one pair."),
    },
}, "Verifier verdicts on the numbered pairs of one image.")

_CRITERION = _object({"pass": {"type": "boolean"}, "reason": {"type": "string", "description": "The evidence, in one sentence."}},
                     "One criterion's result and why.")
PAIR_VERDICT_SCHEMA: dict[str, Any] = _object({
    **{name: _CRITERION for name in CRITERIA},
    "issues": {"type": "array", "items": _object({
        "criterion": {"type": "string", "enum": list(ISSUE_CRITERIA)},
        "severity": {"type": "string", "enum": list(SEVERITIES)},
        "description": {"type": "string"},
    }, "One problem found.")},
    "decision": {"type": "string", "enum": list(DECISIONS)},
    "reason": {"type": "string", "description": "The decision in one sentence."},
}, "The verifier's verdict on one instruction-response pair.")

SCHEMAS: dict[str, dict[str, Any]] = {"plan": PLAN_SCHEMA, "dialogue": DIALOGUE_SCHEMA, "paragraphs": PARAGRAPHS_SCHEMA,
                                      "verdicts": VERDICTS_SCHEMA, "pair_verdict": PAIR_VERDICT_SCHEMA}


# --- typed values -------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class PlanItem:
    dimension: str
    reason: str


@dataclass(frozen=True)
class Plan:
    items: tuple[PlanItem, ...]

    @property
    def dimension_ids(self) -> tuple[str, ...]:
        return tuple(item.dimension for item in self.items)

    def as_dict(self) -> dict[str, Any]:
        return {"dimensions": [{"dimension": i.dimension, "reason": i.reason} for i in self.items]}


@dataclass(frozen=True)
class QAPair:
    question: str
    answer: str
    dimension: str | None
    improvement: bool


@dataclass(frozen=True)
class Dialogue:
    pairs: tuple[QAPair, ...]

    def as_dict(self) -> dict[str, Any]:
        return {"pairs": [{"question": p.question, "answer": p.answer, "dimension": p.dimension,
                           "improvement": p.improvement} for p in self.pairs]}


@dataclass(frozen=True)
class Paragraph:
    instruction: str
    response: str
    dimension: str | None


@dataclass(frozen=True)
class Paragraphs:
    items: tuple[Paragraph, ...]

    def as_dict(self) -> dict[str, Any]:
        return {"paragraphs": [{"instruction": p.instruction, "dimension": p.dimension, "response": p.response}
                               for p in self.items]}


@dataclass(frozen=True)
class Verdict:
    pair: int
    instruction_consistency: bool
    visual_grounding: bool
    response_quality: bool
    blocking_issues: tuple[str, ...]
    non_blocking_issues: tuple[str, ...]
    reasons: tuple[tuple[str, str], ...] = ()  # per-pair verifier: (criterion, reason) for each criterion
    reason: str = ""                           # per-pair verifier: the decision's reason

    @property
    def accepted(self) -> bool:
        return (self.instruction_consistency and self.visual_grounding and self.response_quality
                and not self.blocking_issues)

    def as_dict(self) -> dict[str, Any]:
        return {"pair": self.pair, "instruction_consistency": self.instruction_consistency,
                "visual_grounding": self.visual_grounding, "response_quality": self.response_quality,
                "blocking_issues": list(self.blocking_issues), "non_blocking_issues": list(self.non_blocking_issues),
                "accepted": self.accepted, **({"reasons": dict(self.reasons), "reason": self.reason} if self.reason else {})}


# --- extraction and validation ------------------------------------------------------------------------------

def _field(obj: Mapping[str, Any], key: str, kinds: type | tuple[type, ...], where: str) -> Any:
    if key not in obj:
        raise SchemaError(WRONG_SHAPE, f"{where} has no {key!r}")
    value = obj[key]
    # bool is an int in Python; a JSON true is never a valid pair number and 1 is never a valid flag.
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in _as_tuple(kinds)):
        raise SchemaError(WRONG_SHAPE, f"{where}.{key} has type {type(value).__name__}")
    return value


def _as_tuple(kinds: type | tuple[type, ...]) -> tuple[type, ...]:
    return kinds if isinstance(kinds, tuple) else (kinds,)


def _entries(obj: Any, key: str) -> list[Mapping[str, Any]]:
    if not isinstance(obj, dict):
        raise SchemaError(WRONG_SHAPE, "the answer is not a JSON object")
    entries = _field(obj, key, list, "answer")
    for index, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise SchemaError(WRONG_SHAPE, f"{key}[{index}] is not an object")
    return entries


def _strings(values: Sequence[Any], where: str) -> tuple[str, ...]:
    if not all(isinstance(v, str) for v in values):
        raise SchemaError(WRONG_SHAPE, f"{where} holds a non-string")
    return tuple(v.strip() for v in values if v.strip())


def _dimension_id(value: str, where: str) -> str:
    # Models without native structured output sometimes write "Visual Appeal"; that is still the same id.
    normalized = re.sub(r"[\s\-]+", "_", value.strip().lower())
    if normalized in DIMENSION_IDS:
        return normalized
    raise SchemaError(UNKNOWN_DIMENSION, f"{where} is {value[:60]!r}, not one of {', '.join(DIMENSION_IDS)}")


def parse_plan(text: str) -> Plan:
    """Checks, in order: JSON, shape, 1..5 entries, known ids, no repeats, non-empty reasons."""
    entries = _entries(extract_json_object(text), "dimensions")
    raw = [(_field(e, "dimension", str, f"dimensions[{i}]"), _field(e, "reason", str, f"dimensions[{i}]"))
           for i, e in enumerate(entries)]
    if not raw:
        raise SchemaError(WRONG_SHAPE, "no dimensions selected")
    if len(raw) > MAX_DIMENSIONS:
        raise SchemaError(TOO_MANY_DIMENSIONS, f"{len(raw)} dimensions selected, at most {MAX_DIMENSIONS} allowed")
    ids = [_dimension_id(d, f"dimensions[{i}].dimension") for i, (d, _) in enumerate(raw)]
    repeated = sorted({d for d in ids if ids.count(d) > 1})
    if repeated:
        raise SchemaError(DUPLICATE_DIMENSION, f"selected more than once: {', '.join(repeated)}")
    for index, (_, reason) in enumerate(raw):
        if not reason.strip():
            raise SchemaError(EMPTY_TEXT, f"dimensions[{index}].reason is empty")
    return Plan(tuple(PlanItem(d, r.strip()) for d, (_, r) in zip(ids, raw)))


def parse_dialogue(text: str) -> Dialogue:
    """Checks, in order: JSON, shape, six pairs, non-empty texts, known ids, exactly one improvement pair."""
    entries = _entries(extract_json_object(text), "pairs")
    pairs = []
    for index, entry in enumerate(entries):
        where = f"pairs[{index}]"
        question = _field(entry, "question", str, where)
        answer = _field(entry, "answer", str, where)
        dimension = _field(entry, "dimension", (str, type(None)), where)
        improvement = _field(entry, "improvement", bool, where)
        pairs.append((question, answer, dimension, improvement))
    if len(pairs) != N_PAIRS:
        raise SchemaError(WRONG_PAIR_COUNT, f"expected exactly {N_PAIRS} question-answer pairs, got {len(pairs)}")
    for index, (question, answer, _, _) in enumerate(pairs):
        for key, value in (("question", question), ("answer", answer)):
            if not value.strip():
                raise SchemaError(EMPTY_TEXT, f"pairs[{index}].{key} is empty")
    dims = [None if d is None else _dimension_id(d, f"pairs[{i}].dimension") for i, (_, _, d, _) in enumerate(pairs)]
    improvements = sum(1 for p in pairs if p[3])
    if improvements != 1:
        raise SchemaError(IMPROVEMENT_COUNT, f"expected exactly one pair with improvement true, got {improvements}")
    return Dialogue(tuple(QAPair(q.strip(), a.strip(), d, imp) for (q, a, _, imp), d in zip(pairs, dims)))


def parse_verdicts(text: str, n_pairs: int = N_PAIRS) -> list[Verdict]:
    """Checks, in order: JSON, shape, one verdict per pair, pair numbers exactly 1..n_pairs. Sorted by pair."""
    entries = _entries(extract_json_object(text), "verdicts")
    verdicts = []
    for index, entry in enumerate(entries):
        where = f"verdicts[{index}]"
        verdicts.append(Verdict(
            pair=_field(entry, "pair", int, where),
            instruction_consistency=_field(entry, "instruction_consistency", bool, where),
            visual_grounding=_field(entry, "visual_grounding", bool, where),
            response_quality=_field(entry, "response_quality", bool, where),
            blocking_issues=_strings(_field(entry, "blocking_issues", list, where), f"{where}.blocking_issues"),
            non_blocking_issues=_strings(_field(entry, "non_blocking_issues", list, where), f"{where}.non_blocking_issues"),
        ))
    if len(verdicts) != n_pairs:
        raise SchemaError(VERDICT_COUNT, f"expected {n_pairs} verdicts, got {len(verdicts)}")
    numbers = sorted(v.pair for v in verdicts)
    if numbers != list(range(1, n_pairs + 1)):
        raise SchemaError(VERDICT_PAIRS, f"verdicts must cover pairs 1..{n_pairs} once each, got {numbers}")
    return sorted(verdicts, key=lambda v: v.pair)


def parse_paragraphs(text: str, count: int) -> Paragraphs:
    """Checks, in order: JSON, shape, exactly ``count`` entries, non-empty texts, known ids, no instruction twice."""
    entries = _entries(extract_json_object(text), "paragraphs")
    raw = [(_field(e, "instruction", str, f"paragraphs[{i}]"), _field(e, "response", str, f"paragraphs[{i}]"),
            _field(e, "dimension", (str, type(None)), f"paragraphs[{i}]")) for i, e in enumerate(entries)]
    if len(raw) != count:
        raise SchemaError(WRONG_PARAGRAPH_COUNT, f"expected exactly {count} paragraphs, got {len(raw)}")
    for index, (instruction, response, _) in enumerate(raw):
        for key, value in (("instruction", instruction), ("response", response)):
            if not value.strip():
                raise SchemaError(EMPTY_TEXT, f"paragraphs[{index}].{key} is empty")
    seen = [" ".join(i.lower().split()) for i, _, _ in raw]
    repeated = sorted({i for i in seen if seen.count(i) > 1})
    if repeated:
        raise SchemaError(REPEATED_INSTRUCTION, f"instruction given more than once: {repeated[0][:60]!r}")
    return Paragraphs(tuple(Paragraph(i.strip(), r.strip(), None if d is None else _dimension_id(d, f"paragraphs[{n}].dimension"))
                            for n, (i, r, d) in enumerate(raw)))


def parse_pair_verdict(text: str, pair: int) -> Verdict:
    """One pair's verdict (the per-pair verifier). Checks, in order: JSON, shape, a pass and a non-empty reason per
    criterion, known issue criteria and severities, a decision and its reason; then consistency: a failed
    criterion needs a blocking issue (``unexplained_failure``), and the decision must be accept exactly when every
    criterion passes and nothing blocks (``inconsistent_decision``)."""
    obj = extract_json_object(text)
    if not isinstance(obj, dict):
        raise SchemaError(WRONG_SHAPE, "the answer is not a JSON object")
    results = {}
    for name in CRITERIA:
        entry = _field(obj, name, dict, "answer")
        reason = _field(entry, "reason", str, f"answer.{name}").strip()
        if not reason:
            raise SchemaError(EMPTY_TEXT, f"answer.{name}.reason is empty")
        results[name] = (_field(entry, "pass", bool, f"answer.{name}"), reason)
    blocking, minor = [], []
    for index, issue in enumerate(_entries(obj, "issues")):
        where = f"issues[{index}]"
        criterion, severity = _field(issue, "criterion", str, where), _field(issue, "severity", str, where)
        description = _field(issue, "description", str, where).strip()
        if criterion not in ISSUE_CRITERIA or severity not in SEVERITIES or not description:
            raise SchemaError(WRONG_SHAPE, f"{where} needs a criterion of {', '.join(ISSUE_CRITERIA)}, a severity of"
                                           f" {', '.join(SEVERITIES)} and a description")
        (blocking if severity == "blocking" else minor).append(f"{criterion}: {description}")
    decision, reason = _field(obj, "decision", str, "answer"), _field(obj, "reason", str, "answer").strip()
    if decision not in DECISIONS or not reason:
        raise SchemaError(WRONG_SHAPE, f"answer.decision is {decision[:20]!r} (one of {', '.join(DECISIONS)}) with a reason")
    failed = [name for name, (passed, _) in results.items() if not passed]
    if failed and not blocking:
        raise SchemaError(UNEXPLAINED_FAILURE, f"{', '.join(failed)} failed but no blocking issue explains it")
    if (decision == "accept") != (not failed and not blocking):
        raise SchemaError(INCONSISTENT_DECISION, f"decision {decision!r} contradicts the checks: accept exactly when all"
                                                 " three criteria pass and no issue blocks")
    return Verdict(pair, *(results[name][0] for name in CRITERIA), tuple(blocking), tuple(minor),
                   tuple((name, results[name][1]) for name in CRITERIA), reason)


def parse_answer(schema_name: str, text: str) -> Plan | Dialogue | list[Verdict]:
    """One entry point for the call layer, which knows the expected object only by its schema name."""
    parsers = {"plan": parse_plan, "dialogue": parse_dialogue, "verdicts": parse_verdicts}
    if schema_name not in parsers:
        raise ValueError(f"unknown schema {schema_name!r}; expected one of {', '.join(parsers)}")
    return parsers[schema_name](text)


# --- pair-level records -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class PairRecord:
    pair_id: str
    group_id: str
    image_id: str
    index: int  # 1..6 the dialogue's pairs, then 7.. its single-turn paragraphs; the verifier's pair number
    question: str
    answer: str
    dimension: str | None
    improvement: bool


def conversation_group_id(image_id: str, dialogue: Dialogue, paragraphs: Paragraphs | None = None) -> str:
    """Content-derived, so re-running the same dialogue (and paragraphs) for the same image names the same group;
    a group without paragraphs keeps the id it had before they existed."""
    content = {"image_id": image_id, "dialogue": dialogue.as_dict(),
               **({"paragraphs": paragraphs.as_dict()} if paragraphs and paragraphs.items else {})}
    return entity_id("critique_group", digest_of(content))


def group_pairs(image_id: str, dialogue: Dialogue, paragraphs: Paragraphs | None = None) -> list[PairRecord]:
    """The dialogue, then the paragraphs, as pair-level records that share one conversation-group id (Fig. S1's
    single-turn instructions sit beside the six-turn dialogue, numbered after it)."""
    group_id = conversation_group_id(image_id, dialogue, paragraphs)
    turns = [(p.question, p.answer, p.dimension, p.improvement) for p in dialogue.pairs]
    turns += [(p.instruction, p.response, p.dimension, False) for p in (paragraphs.items if paragraphs else ())]
    return [PairRecord(pair_id=entity_id("critique_pair", digest_of([group_id, index])), group_id=group_id,
                       image_id=image_id, index=index, question=question, answer=answer, dimension=dimension,
                       improvement=improvement)
            for index, (question, answer, dimension, improvement) in enumerate(turns, start=1)]
