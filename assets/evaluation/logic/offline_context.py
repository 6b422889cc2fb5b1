"""The offline ContextCanvas judge: a suitability answer computed from what the request gives it, so the demo and the
tests evaluate a "model" whose answers follow from its input, with no key and no network. It is a baseline, not a
model of cultural or narrative meaning, and it says so in every reason.

What it does: the scenario's wording names visual qualities the use asks for or rules out (dark or bright, cool or
warm, muted or vivid, calm or dramatic, untouched or built-up). The visual's qualities come from the image's
measurements (``assets/core/logic/image_measures.py``) when an image is shown (built-up is not measured), from the
words of the description when a description stands in for it, and from nothing under text only. A Yes/No case is answered No when a quality the
scenario asks for is contradicted by the visual, Yes otherwise; a case with other options, or with nothing to look
at, gets the text-only shortcut guess (``context_canvas.logic.shortcuts.text_only_guess``: wording overlap).
"""

from __future__ import annotations

import io
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from PIL import Image

from assets.context_canvas.logic.case_records import CaseOption
from assets.context_canvas.logic.shortcuts import text_only_guess
from assets.core.logic.image_measures import ImageMeasures, measure

OFFLINE_CONTEXT_VERSION = "offline-context-judge-v2"


@dataclass(frozen=True)
class Quality:
    """One visual axis: the words that ask for (or describe) each pole."""

    name: str
    low: frozenset[str]
    high: frozenset[str]


QUALITIES = (
    Quality("brightness", frozenset({"dark", "night", "dim", "unlit", "shadowy", "moody"}),
            frozenset({"bright", "sunny", "light", "airy", "lit", "glowing", "luminous"})),
    Quality("warmth", frozenset({"cool", "cold", "blue", "icy", "teal"}),
            frozenset({"warm", "red", "orange", "golden", "fiery", "yellow"})),
    Quality("saturation", frozenset({"muted", "soft", "pale", "pastel", "subdued", "grey", "gray", "monochrome"}),
            frozenset({"vivid", "saturated", "colourful", "colorful", "bold", "loud", "neon"})),
    Quality("contrast", frozenset({"calm", "gentle", "low-contrast", "quiet", "restful", "serene"}),
            frozenset({"dramatic", "high-contrast", "striking", "harsh", "intense"})),
    Quality("development", frozenset({"unspoiled", "untouched", "wild", "wilderness", "natural"}),
            frozenset({"town", "towns", "city", "buildings", "houses", "towers", "roads", "streets"})),
)
_WORD = re.compile(r"[a-z]+(?:-[a-z]+)?")
_NEGATION = re.compile(r"\b(?:no|not|nothing|never|without|avoid|avoids|far\s+from)\b[^.;:]*$")
_WARM_HUES = frozenset({"red", "orange", "yellow", "brown", "pink", "magenta"})


def _poles(text: str) -> dict[str, str]:
    """Per quality, the pole the text names first, a negated word naming the other pole: a scenario's "nothing
    dramatic" asks for the calm pole, a description's "no houses or towers" shows the unbuilt one."""
    wanted: dict[str, str] = {}
    text = text.casefold()
    for match in _WORD.finditer(text):
        word, negated = match.group(0), bool(_NEGATION.search(text[max(0, match.start() - 40):match.start()]))
        for quality in QUALITIES:
            for pole, other, words in (("low", "high", quality.low), ("high", "low", quality.high)):
                if word in words:
                    wanted.setdefault(quality.name, other if negated else pole)
    return wanted


def _measured(m: ImageMeasures) -> dict[str, str]:
    """The qualities the pixels show clearly (a middling measure says nothing)."""
    found: dict[str, str] = {}
    if m.mean_luminance < 0.3 or m.mean_luminance > 0.65:
        found["brightness"] = "low" if m.mean_luminance < 0.3 else "high"
    if m.hue_shares:
        warm = sum(share for family, share in m.hue_shares if family in _WARM_HUES)
        cool = sum(share for family, share in m.hue_shares if family not in _WARM_HUES)
        if warm + cool > 0.2 and abs(warm - cool) > 0.2:
            found["warmth"] = "high" if warm > cool else "low"
    if m.mean_saturation < 0.2 or m.mean_saturation > 0.5:
        found["saturation"] = "low" if m.mean_saturation < 0.2 else "high"
    if m.rms_contrast < 0.12 or m.rms_contrast > 0.28:
        found["contrast"] = "low" if m.rms_contrast < 0.12 else "high"
    return found


def _yes_no(options: Sequence[CaseOption]) -> tuple[str, str] | None:
    texts = {o.text.strip().casefold(): o.option_id for o in options}
    if len(options) == 2 and {"yes", "no"} <= texts.keys():
        return texts["yes"], texts["no"]
    return None


def offline_context_answer(scenario: str, question: str, options: Sequence[CaseOption], image: bytes | None,
                           description: str | None) -> Mapping[str, str]:
    """The answer object ({answer, reason, confidence}) for one case under one condition."""
    yes_no = _yes_no(options)
    if image is not None:
        with Image.open(io.BytesIO(image)) as opened:
            opened.load()
            seen, source = _measured(measure(opened)), "the image's measurements"
    elif description:
        seen, source = _poles(description), "the description"
    else:
        seen, source = {}, "nothing visual"
    wanted = _poles(scenario)
    judged = sorted(name for name in wanted if name in seen)
    if yes_no is None or not judged:
        guess = text_only_guess(scenario, question, options)
        return {"answer": guess, "confidence": "low",
                "reason": f"Offline heuristic ({OFFLINE_CONTEXT_VERSION}): no visual quality the scenario names could be"
                          f" checked against {source}; the option echoing the scenario's wording was taken."}
    clashes = [name for name in judged if seen[name] != wanted[name]]
    answer = yes_no[1] if clashes else yes_no[0]
    checked = ", ".join(f"{name} ({'clashes' if name in clashes else 'fits'})" for name in judged)
    return {"answer": answer, "confidence": "medium" if len(judged) > 1 else "low",
            "reason": f"Offline heuristic ({OFFLINE_CONTEXT_VERSION}) from {source}: {checked}; cultural and narrative"
                      " meaning are not judged."}
