"""Offline critic: the planner's dimensions, the six-pair critique dialogue and the verifier's verdicts, all
computed from ``ImageMeasures``.

Why: the demo and the tests must run the whole CritiqueCanvas chain with no key and no network, and what they
produce must still be true of the image. Every sentence here is built from a measured number and states it, so
two different images get different statements, and the verifier checks a dialogue's claims against the same
numbers, which lets it reject a pair written for another image, a vague answer or an off-topic question.
Pure functions of (measures, domain, plan / dialogue): deterministic, no I/O.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from assets.critique_canvas.logic.answers import DIMENSION_IDS, DIMENSIONS, DOMAINS, MAX_DIMENSIONS, N_PAIRS
from assets.core.logic.image_measures import ImageMeasures

MEDIUM = {"photography": "photograph", "painting": "painting", "virtual": "illustration"}

# How much each domain cares about a dimension (the seed's domain-conditioned criteria): photography about
# exposure, focus and framing; painting about line, brushwork, style and feeling; virtual imagery about
# stylisation and immediate appeal.
_DOMAIN_WEIGHT: dict[str, dict[str, float]] = {
    "photography": {"lighting": 1.2, "technique": 1.2, "composition": 1.1, "lines_and_brushstrokes": 0.6, "style": 0.6},
    "painting": {"lines_and_brushstrokes": 1.5, "style": 1.1, "emotion": 1.2, "color": 1.1, "technique": 0.9},
    "virtual": {"style": 1.4, "visual_appeal": 1.3, "color": 1.1, "technique": 0.9},
}
_PLAN_THRESHOLD = 0.4
_MIN_WORDS = 12

# Thresholds the writer uses. The verifier's tolerances below are deliberately looser, so a statement is only
# rejected when the image clearly contradicts it.
_CLIP_NOTABLE = 0.005
_CENTRED = 0.08
_ON_THIRDS = 0.08
_COMPACT_SPREAD = 0.3
_CRISP = 0.55
_SOFT = 0.3


# --- descriptions shared by the planner and the writer ------------------------------------------------------

def pct(fraction: float) -> str:
    """A fraction as a percentage with the precision a reader needs: '0.4%', '12%'."""
    value = fraction * 100
    if value < 0.05:
        return "0%"
    if value < 1:
        return f"{value:.1f}%"
    return f"{value:.0f}%"


def _key(m: ImageMeasures) -> str:
    for limit, word in ((0.2, "very dark"), (0.35, "dark"), (0.45, "slightly dark"), (0.6, "balanced, mid-key"),
                        (0.72, "bright")):
        if m.mean_luminance < limit:
            return word
    return "very bright"


def _colour_band(colorfulness: float) -> str:
    """Hasler and Suesstrunk's perceptual bands, renamed so low bands do not sound colourful."""
    for limit, band in ((15, "practically colourless"), (33, "subdued"), (45, "moderately colourful"),
                        (59, "fairly colourful"), (82, "quite colourful"), (109, "highly colourful")):
        if colorfulness < limit:
            return band
    return "extremely colourful"


def _compact(m: ImageMeasures) -> bool:
    return m.salient_area > 0 and m.salient_spread <= _COMPACT_SPREAD


def _position(m: ImageMeasures) -> str:
    if m.center_distance <= _CENTRED:
        return "centre of the frame"
    x, y = m.salient_centroid
    vertical = "upper" if y < 0.45 else "lower" if y > 0.55 else "middle"
    horizontal = "left" if x < 0.45 else "right" if x > 0.55 else "centre"
    if vertical == "middle":
        return f"{horizontal} side of the frame"
    if horizontal == "centre":
        return f"{vertical} middle of the frame"
    return f"{vertical} {horizontal} of the frame"


def _across_down(m: ImageMeasures) -> str:
    x, y = m.salient_centroid
    return f"{x * 100:.0f}% across and {y * 100:.0f}% down"


def _tonal_span_ok(m: ImageMeasures) -> bool:
    return m.edge_crispness > 0


def _sharpness_class(m: ImageMeasures) -> str:
    if not _tonal_span_ok(m):
        return "flat"
    if m.edge_crispness >= _CRISP:
        return "crisp"
    if m.edge_crispness < _SOFT:
        return "soft"
    return "medium"


def _strong_contrast(m: ImageMeasures) -> bool:
    return m.rms_contrast >= 0.25 or m.contrast_range >= 0.7


def _weak_contrast(m: ImageMeasures) -> bool:
    return m.rms_contrast < 0.1 or m.contrast_range < 0.3


def _orientation(m: ImageMeasures) -> tuple[str, float]:
    return max((("horizontal", m.edge_horizontal), ("vertical", m.edge_vertical), ("diagonal", m.edge_diagonal)),
               key=lambda item: item[1])


def _colours(m: ImageMeasures, limit: int = 3) -> str:
    named = [f"{c.name} ({pct(c.share)})" for c in m.dominant_colors[:limit]]
    if len(named) == 1:
        return named[0]
    return ", ".join(named[:-1]) + " and " + named[-1]


_ASSOCIATIONS = {
    "red": "passion, danger and energy", "orange": "warmth and vitality", "brown": "earth, age and stability",
    "yellow": "light, optimism and caution", "green": "nature, growth and renewal", "cyan": "coolness, water and clarity",
    "blue": "calm, distance and melancholy", "purple": "mystery and dignity", "magenta": "exuberance and artifice",
    "pink": "tenderness and playfulness", "white": "purity, emptiness and light", "black": "gravity, mystery and mourning",
    "grey": "neutrality and restraint",
}


def _association(name: str) -> str:
    return _ASSOCIATIONS[name.split()[-1]]


# --- planner --------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Finding:
    """One measured fact that makes a dimension worth discussing; ``strength`` 0..1 before domain weighting."""

    dimension: str
    strength: float
    reason: str


def findings(m: ImageMeasures) -> list[Finding]:
    """Every dimension-relevant fact the measurements support, strongest evidence scoring highest."""
    out: list[Finding] = []
    add = out.append
    h, s = m.clipped_highlights, m.clipped_shadows
    if h >= _CLIP_NOTABLE:
        add(Finding("lighting", min(1.0, 0.45 + 4 * h) if h >= 0.02 else 0.4,
                    f"{pct(h)} of the pixels are blown-out highlights (luminance at or above 253/255)"))
    if s >= _CLIP_NOTABLE:
        add(Finding("lighting", min(1.0, 0.45 + 4 * s) if s >= 0.02 else 0.4,
                    f"{pct(s)} of the pixels are crushed to pure black (luminance at or below 2/255)"))
    if m.mean_luminance < 0.3 or m.mean_luminance > 0.7:
        add(Finding("lighting", min(1.0, 0.45 + 2 * abs(m.mean_luminance - 0.5) - 0.4),
                    f"the frame is {_key(m)} overall, with mean luminance {m.mean_luminance:.2f} on a 0-1 scale and "
                    f"a median tone of {m.luminance_p50:.2f}"))
    if m.rms_contrast >= 0.28:
        add(Finding("lighting", min(0.9, 0.4 + 2 * (m.rms_contrast - 0.28)),
                    f"light and shadow are strongly separated: RMS contrast is {m.rms_contrast:.2f} and the middle 90% "
                    f"of tones spans {m.contrast_range:.2f} of the scale"))
    elif m.contrast_range < 0.2 and m.mean_luminance > 0.05:
        add(Finding("lighting", 0.45, f"the tonal range is compressed: the middle 90% of tones spans only "
                                      f"{m.contrast_range:.2f} of the scale"))

    c, sat = m.colorfulness, m.mean_saturation
    lead = m.dominant_colors[0] if m.dominant_colors else None
    if c >= 59:
        add(Finding("color", min(1.0, 0.5 + (c - 59) / 150),
                    f"colourfulness is {c:.0f} on the Hasler-Suesstrunk scale ({_colour_band(c)})"
                    + (f", led by {lead.name} ({pct(lead.share)})" if lead else "")))
    elif c < 12 and sat < 0.1:
        add(Finding("color", 0.55, f"the palette is near-monochrome: colourfulness {c:.0f} and mean saturation {sat:.2f}"))
    chromatic = [d for d in m.dominant_colors if d.name.split()[-1] not in ("grey", "white", "black")]
    if chromatic and chromatic[0].share >= 0.4 and c < 59:
        add(Finding("color", 0.45, f"{chromatic[0].name} alone covers {pct(chromatic[0].share)} of the frame"))

    if _compact(m) and m.thirds_distance <= _ON_THIRDS:
        add(Finding("composition", min(1.0, 0.85 - 3 * m.thirds_distance),
                    f"the main mass sits {pct(m.thirds_distance)} of the frame from the {m.nearest_thirds_point} "
                    "thirds point"))
    elif _compact(m) and m.center_distance <= _CENTRED:
        if m.symmetry >= 0.7:
            add(Finding("composition", 0.7, f"the main mass is centred ({pct(m.center_distance)} of the frame from "
                                            f"the centre) and left-right symmetry is high ({m.symmetry:.2f} of 1)"))
        else:
            add(Finding("composition", 0.5, f"the main mass is centred, {pct(m.center_distance)} of the frame from the "
                                            "centre"))
    if m.tilt_degrees is not None and abs(m.tilt_degrees) >= 1:
        direction = "rising to the right" if m.tilt_degrees > 0 else "falling to the right"
        add(Finding("composition", min(1.0, 0.55 + abs(m.tilt_degrees) / 20),
                    f"the dominant near-horizontal line is tilted by {abs(m.tilt_degrees):.1f}°, {direction}"))
    if m.symmetry >= 0.85 and not (_compact(m) and m.center_distance <= _CENTRED):
        add(Finding("composition", 0.5, f"left-right symmetry is high ({m.symmetry:.2f} of 1)"))
    if m.aspect_ratio >= 2 or m.aspect_ratio <= 0.5:
        shape = "panoramic" if m.aspect_ratio >= 2 else "tall, narrow"
        add(Finding("composition", 0.45, f"the {m.width}×{m.height} frame is {shape} ({m.aspect_ratio:.2f}:1)"))

    sharpness = _sharpness_class(m)
    if sharpness == "crisp":
        add(Finding("technique", 0.25 + 0.25 * m.edge_crispness,  # crisp is expected; soft is the news
                    f"edges are crisp: the steepest ones make {pct(m.edge_crispness)} of their tonal step from "
                    f"one pixel to the next (Laplacian variance {m.sharpness_normalized:.0f})"))
    elif sharpness == "soft":
        add(Finding("technique", min(1.0, 0.6 + (_SOFT - m.edge_crispness)),
                    f"detail is soft: the steepest edges make only {pct(m.edge_crispness)} of their tonal step "
                    f"from one pixel to the next "
                    f"(Laplacian variance {m.sharpness_normalized:.0f})"))

    direction, share = _orientation(m)
    if m.edge_density >= 0.08:
        add(Finding("lines_and_brushstrokes", min(0.9, 0.3 + 1.5 * m.edge_density),
                    f"strong edges cover {pct(m.edge_density)} of the surface, mostly {direction} ({pct(share)})"))
    elif m.edge_density < 0.02 and m.flat_fraction >= 0.6:
        add(Finding("lines_and_brushstrokes", 0.4, f"the surface is smooth: strong edges cover only {pct(m.edge_density)} "
                                                   f"of it and {pct(m.flat_fraction)} is flat"))

    if m.flat_fraction >= 0.6 and sat >= 0.35:
        add(Finding("style", 0.5, f"{pct(m.flat_fraction)} of the pixels sit in flat, untextured areas at mean saturation "
                                  f"{sat:.2f}, a graphic, flat-colour treatment"))
    elif sat >= 0.5 or c >= 82:
        add(Finding("style", 0.45, f"a saturated palette sets the look (mean saturation {sat:.2f}, colourfulness {c:.0f})"))
    if m.edge_density >= 0.15:
        add(Finding("style", 0.4, f"dense texture: strong edges cover {pct(m.edge_density)} of the surface"))

    mood = _mood(m)
    extremity = abs(m.mean_luminance - 0.5) + max(0.0, sat - 0.4) + max(0.0, m.rms_contrast - 0.25)
    add(Finding("emotion", min(0.6, 0.3 + extremity),
                f"mean luminance {m.mean_luminance:.2f} with mean saturation {sat:.2f} sets {_a(mood)} mood"))

    if c >= 45 and m.rms_contrast >= 0.15:
        add(Finding("visual_appeal", min(0.8, 0.35 + (c - 45) / 200 + m.rms_contrast),
                    f"colourfulness {c:.0f} together with RMS contrast {m.rms_contrast:.2f} gives strong immediate impact"))
    add(Finding("visual_appeal", 0.25, f"the first impression rests on {_key(m)} tones (mean luminance "
                                       f"{m.mean_luminance:.2f}) and {_colour_band(c)} colour (colourfulness {c:.0f})"))

    if 0.005 <= m.salient_area <= 0.35 and m.salient_spread <= 0.2:
        add(Finding("content_and_narrative", 0.4,
                    f"one compact region covering {pct(m.salient_area)} of the frame stands apart from its surroundings "
                    "in colour and tone, which singles out a clear subject"))
    return out


def plan(measures: ImageMeasures, domain: str) -> dict[str, Any]:
    """The planner's answer: up to five dimensions whose measured evidence is strongest for this domain."""
    return _plan(measures, domain)


def _plan(measures: ImageMeasures, domain: str) -> dict[str, Any]:
    weights = _DOMAIN_WEIGHT[_check_domain(domain)]
    by_dimension: dict[str, list[Finding]] = {}
    for finding in findings(measures):
        by_dimension.setdefault(finding.dimension, []).append(finding)
    scored = []
    for dimension, found in by_dimension.items():
        found.sort(key=lambda f: -f.strength)
        score = found[0].strength * weights.get(dimension, 1.0)
        reasons = [found[0].reason] + [f.reason for f in found[1:2] if f.strength >= 0.4]
        scored.append((score, DIMENSION_IDS.index(dimension), dimension, _sentence("; ".join(reasons))))
    scored.sort(key=lambda item: (-item[0], item[1]))
    chosen = [item for item in scored if item[0] >= _PLAN_THRESHOLD][:MAX_DIMENSIONS] or scored[:1]
    return {"dimensions": [{"dimension": dimension, "reason": reason} for _, _, dimension, reason in chosen]}


# --- annotator ------------------------------------------------------------------------------------------------

Facet = Callable[[ImageMeasures, str], tuple[Sequence[str], str]]


def _mood(m: ImageMeasures) -> str:
    dark, bright = m.mean_luminance < 0.35, m.mean_luminance > 0.65
    saturated, muted = m.mean_saturation >= 0.3, m.mean_saturation < 0.2
    if dark:
        return "dramatic, intense" if saturated else "sombre, introspective"
    if bright:
        return "lively, upbeat" if saturated else "open, quiet" if muted else "light, easy"
    return "energetic, tense" if _strong_contrast(m) else "steady, even"


def _exposure(m: ImageMeasures, domain: str) -> tuple[Sequence[str], str]:
    w = MEDIUM[domain]
    h, s = m.clipped_highlights, m.clipped_shadows
    parts = [f"The {w} is {_key(m)} overall: mean luminance is {m.mean_luminance:.2f} on a 0-1 scale and the median "
             f"tone sits at {m.luminance_p50:.2f}."]
    if h >= _CLIP_NOTABLE:
        parts.append(f"{pct(h)} of the pixels are blown-out highlights, pure white with no recoverable detail.")
    else:
        parts.append("Fewer than 0.5% of the pixels reach pure white, so highlight detail survives.")
    if s >= _CLIP_NOTABLE:
        parts.append(f"{pct(s)} of the pixels are crushed to pure black, where shadow detail is lost.")
    else:
        parts.append("Fewer than 0.5% of the pixels sink to pure black, so the shadows keep their detail.")
    parts.append(f"The darkest 1% of tones lie at or below {m.luminance_p1:.2f} and the brightest 1% at or above "
                 f"{m.luminance_p99:.2f}.")
    questions = (f"How is the {w} exposed overall?",
                 f"What does the spread of light and shadow say about the exposure of this {w}?",
                 f"How well are the brightest and darkest areas of the {w} held?")
    return questions, " ".join(parts)


def _contrast(m: ImageMeasures, domain: str) -> tuple[Sequence[str], str]:
    w = MEDIUM[domain]
    answer = (f"RMS contrast is {m.rms_contrast:.2f} and the middle 90% of tones spans {m.contrast_range:.2f} of the "
              "full scale, ")
    if _strong_contrast(m):
        answer += "so light and shadow are strongly separated and the image reads as high-contrast."
    elif _weak_contrast(m):
        answer += "so the tones sit close together and the light looks flat, with little modelling of form."
    else:
        answer += "a moderate spread that separates the main areas of light without harsh jumps."
    questions = (f"How much tonal contrast does the light create in this {w}?",
                 f"Is the lighting of the {w} punchy or gentle?",
                 f"How wide a tonal range does the light in the {w} cover?")
    return questions, answer


def _palette(m: ImageMeasures, domain: str) -> tuple[Sequence[str], str]:
    w = MEDIUM[domain]
    if len(m.dominant_colors) == 1:
        parts = [f"The palette is almost entirely {_colours(m)}."]
    else:
        parts = [f"The palette is led by {_colours(m)}."]
    families = [(name, share) for name, share in m.hue_shares if share >= 0.01][:2]
    if families:
        listed = " and ".join(f"{name} ({pct(share)})" for name, share in families)
        parts.append(f"Among the pixels that carry a clear hue, the largest families are {listed}.")
    else:
        parts.append("No part of the frame carries a noticeable hue, so the colour is effectively greyscale.")
    parts.append(f"Mean saturation is {m.mean_saturation:.2f} on a 0-1 scale.")
    questions = (f"Which colours dominate the palette of this {w}?", f"What is the palette of the {w} built from?",
                 f"How is colour distributed across the {w}?")
    return questions, " ".join(parts)


def _colour_intensity(m: ImageMeasures, domain: str) -> tuple[Sequence[str], str]:
    w = MEDIUM[domain]
    c = m.colorfulness
    parts = [f"Colourfulness measures {c:.0f} on the Hasler-Suesstrunk scale, which puts the {w} in the "
             f"'{_colour_band(c)}' band, and mean saturation is {m.mean_saturation:.2f}."]
    if c >= 59:
        parts.append("The colour is vivid enough to carry the image on its own.")
    elif c < 15:
        parts.append("Colour plays almost no role; the image relies on tone alone.")
    else:
        parts.append("Colour supports the image without dominating it.")
    families = [name for name, share in m.hue_shares if share >= 0.05]
    if len(families) >= 2:
        parts.append(f"{len(families)} hue families each cover at least 5% of the frame, so the palette is varied.")
    elif families:
        parts.append(f"Only one hue family, {families[0]}, covers at least 5% of the frame, so the palette is narrow.")
    questions = (f"How vivid is the colour in this {w}?", f"How strong is the colour saturation across the {w}?",
                 f"Does colour carry much energy in this {w}?")
    return questions, " ".join(parts)


def _placement(m: ImageMeasures, domain: str) -> tuple[Sequence[str], str]:
    w = MEDIUM[domain]
    if _compact(m):
        parts = [f"The visually distinct mass covers {pct(m.salient_area)} of the frame and centres at {_across_down(m)}, "
                 f"in the {_position(m)}."]
        if m.thirds_distance <= _ON_THIRDS:
            parts.append(f"That is {pct(m.thirds_distance)} of the frame from the {m.nearest_thirds_point} thirds point, "
                         "a textbook rule-of-thirds placement that leaves the rest of the frame as breathing room.")
        elif m.center_distance <= _CENTRED:
            parts.append(f"It sits {pct(m.center_distance)} of the frame from the centre, a centred placement that reads "
                         "as stable and deliberate.")
        else:
            parts.append(f"It lies {pct(m.thirds_distance)} of the frame from the {m.nearest_thirds_point} thirds point "
                         f"and {pct(m.center_distance)} of the frame from the centre, so the placement is neither "
                         "centred nor settled on a thirds point.")
    else:
        parts = [f"No single mass dominates: the distinct areas are spread across the frame (spread "
                 f"{m.salient_spread:.2f}, where about 0.4 means evenly scattered), with their balance point at "
                 f"{_across_down(m)}."]
    questions = ("Where does the visual weight sit in the frame?", f"How is the main mass placed within the {w}?",
                 f"Does the placement of the main mass in the {w} follow the rule of thirds?")
    return questions, " ".join(parts)


def _balance(m: ImageMeasures, domain: str) -> tuple[Sequence[str], str]:
    w = MEDIUM[domain]
    parts = [f"Left-right symmetry scores {m.symmetry:.2f} on a 0-1 scale, "]
    if m.symmetry >= 0.8:
        parts[0] += "so the two halves nearly mirror each other: a symmetric, formal balance."
    elif m.symmetry >= 0.5:
        parts[0] += "a partial mirroring in which the halves share their broad layout but differ in detail."
    else:
        parts[0] += "so the halves differ clearly and the balance is asymmetric, carried by masses rather than mirroring."
    t = m.tilt_degrees
    if t is None:
        parts.append("No long straight near-horizontal line runs through the frame, so levelness is not at stake.")
    elif abs(t) < 0.5:
        parts.append(f"The dominant near-horizontal line runs level ({abs(t):.1f}°), which keeps the frame stable.")
    elif abs(t) < 1:
        parts.append(f"The dominant near-horizontal line sits {abs(t):.1f}° off level, a slight tilt few viewers "
                     "will notice.")
    else:
        direction = "rising to the right" if t > 0 else "falling to the right"
        parts.append(f"The dominant near-horizontal line is tilted by {abs(t):.1f}°, {direction}, which makes the "
                     "frame feel as if it were sliding.")
    questions = (f"How balanced is the {w} from left to right, and are its lines level?",
                 "Does the frame feel balanced and straight?", f"How stable is the geometry of the {w}'s frame?")
    return questions, " ".join(parts)


def _format(m: ImageMeasures, domain: str) -> tuple[Sequence[str], str]:
    w = MEDIUM[domain]
    if m.aspect_ratio > 1.05:
        shape, reading = "landscape", "its width favours a horizontal reading"
    elif m.aspect_ratio < 0.95:
        shape, reading = "portrait", "its height favours a vertical reading"
    else:
        shape, reading = "square", "a square gives neither direction priority"
    parts = [f"The frame is {m.width}×{m.height} pixels, a {shape} format at {m.aspect_ratio:.2f}:1, and {reading}."]
    if m.edge_density >= 0.001:
        direction, share = _orientation(m)
        agrees = (direction == "horizontal" and shape == "landscape") or (direction == "vertical" and shape == "portrait")
        parts.append(f"Strong edges run mostly {direction} ({pct(share)}), which "
                     f"{'reinforces' if agrees else 'plays against'} the format.")
    else:
        parts.append(f"Strong edges cover only {pct(m.edge_density)} of the frame, so the format alone sets the direction.")
    questions = ("How does the shape of the frame serve the composition?", f"What does the format of the {w} do for "
                 "its layout?")
    return questions, " ".join(parts)


_FOCUS_QUESTIONS = {
    "photography": "Is the photograph in focus, and how crisp is the detail?",
    "painting": "How precisely is detail rendered in the painting?",
    "virtual": "How clean and crisp is the rendering of detail in the illustration?",
}


def _focus(m: ImageMeasures, domain: str) -> tuple[Sequence[str], str]:
    w = MEDIUM[domain]
    klass = _sharpness_class(m)
    if klass == "flat":
        answer = (f"The {w} has too little tonal variation to judge focus: the middle 90% of tones spans "
                  f"{m.contrast_range:.2f} of the scale and the Laplacian variance is {m.sharpness_normalized:.0f}.")
        return (_FOCUS_QUESTIONS[domain], f"How sharp is the {w}?"), answer
    parts = [f"The Laplacian variance of the luminance is {m.sharpness_normalized:.0f}, and the steepest edges make "
             f"{pct(m.edge_crispness)} of their tonal step from one pixel to the next."]
    if klass == "crisp":
        tail = {"photography": "which points to accurate focus", "painting": "a sign of precise, controlled handling",
                "virtual": "a sign of clean rendering"}[domain]
        parts.append(f"The edges are crisp, so fine detail is held cleanly, {tail}.")
    elif klass == "soft":
        tail = {"photography": "which suggests missed focus, motion or heavy smoothing",
                "painting": "as if the forms were blended or scumbled into each other",
                "virtual": "as if the render were upscaled or smoothed"}[domain]
        parts.append(f"The edges are soft and the detail looks blurred, {tail}.")
    else:
        parts.append("Edges are reasonably defined, neither smeared nor especially hard, so detail reads clearly enough.")
    return (_FOCUS_QUESTIONS[domain], f"How sharp is the {w}?", f"How well is fine detail resolved in the {w}?"), \
        " ".join(parts)


def _craft(m: ImageMeasures, domain: str) -> tuple[Sequence[str], str]:
    w = MEDIUM[domain]
    h, s = m.clipped_highlights, m.clipped_shadows
    parts = [f"At {m.width}×{m.height} pixels ({m.megapixels:.1f} megapixels) the {w} gives "
             f"{'ample' if m.megapixels >= 2 else 'limited'} room for fine detail."]
    if h < _CLIP_NOTABLE and s < _CLIP_NOTABLE:
        parts.append("Technically the tonal extremes are under control: fewer than 0.5% of the pixels are pure white "
                     "or pure black.")
    else:
        parts.append(f"Technically the extremes cost detail: {pct(h)} of the pixels are blown-out highlights and "
                     f"{pct(s)} are crushed to pure black.")
    parts.append(f"Execution of edges is {_execution_word(m)} (the steepest edges make {pct(m.edge_crispness)} of "
                 "their tonal step from one pixel to the next).")
    questions = (f"How well is the {w} executed technically?",
                 f"What do the technical measurements say about the craft of this {w}?")
    return questions, " ".join(parts)


def _execution_word(m: ImageMeasures) -> str:
    return {"crisp": "precise", "soft": "loose", "medium": "competent", "flat": "hard to judge"}[_sharpness_class(m)]


def _line_work(m: ImageMeasures, domain: str) -> tuple[Sequence[str], str]:
    w = MEDIUM[domain]
    parts = [f"Strong edges cover {pct(m.edge_density)} of the surface and {pct(m.flat_fraction)} of it is flat, almost "
             "without tonal change."]
    if m.edge_density >= 0.001:
        direction, _ = _orientation(m)
        parts.append(f"Of the edge strength, {pct(m.edge_horizontal)} runs horizontally, {pct(m.edge_vertical)} "
                     f"vertically and {pct(m.edge_diagonal)} diagonally, so {direction} marks set the rhythm.")
    if m.edge_density >= 0.15:
        parts.append({"painting": "It is a busy, heavily worked surface where individual marks stay visible.",
                      "virtual": "The line work is dense and detailed.",
                      "photography": "The texture is dense and detailed."}[domain])
    elif m.edge_density < 0.03:
        parts.append("The handling is smooth and blended, with few visible marks.")
    questions = {"painting": "What do the brushstrokes and lines contribute to the painting?"}.get(
        domain, f"How do lines and edges structure the {w}?"), f"What is the character of the line work in this {w}?"
    return questions, " ".join(parts)


def _contours(m: ImageMeasures, domain: str) -> tuple[Sequence[str], str]:
    w = MEDIUM[domain]
    if not _tonal_span_ok(m):
        answer = (f"There are hardly any contours to judge: strong edges cover {pct(m.edge_density)} of the surface and "
                  "the tonal span is too narrow for a line to stand out.")
        return (f"How crisp are the contours in the {w}?",), answer
    answer = f"The steepest edges make {pct(m.edge_crispness)} of their tonal step from one pixel to the next, "
    if m.edge_crispness >= _CRISP:
        answer += "so contours are hard and clearly drawn"
    elif m.edge_crispness < _SOFT:
        answer += "so contours melt into their surroundings"
    else:
        answer += "so contours are defined without being hard"
    answer += f", with a Laplacian variance of {m.sharpness_normalized:.0f} across the surface."
    return (f"How crisp are the contours in the {w}?", f"Are the edges in this {w} hard or gentle?"), answer


def _rendering_style(m: ImageMeasures, domain: str) -> tuple[Sequence[str], str]:
    w = MEDIUM[domain]
    parts = [f"{pct(m.flat_fraction)} of the pixels sit in flat areas with almost no tonal change and strong edges cover "
             f"{pct(m.edge_density)} of the surface, while mean saturation is {m.mean_saturation:.2f}."]
    if m.flat_fraction >= 0.6 and m.mean_saturation >= 0.35:
        parts.append("That combination points to a graphic, flat-colour style, close to poster or cel-shaded rendering.")
    elif m.flat_fraction >= 0.6:
        parts.append("That combination points to a clean, minimal style built on large quiet areas.")
    elif m.edge_density >= 0.15:
        parts.append("That points to a densely textured, detail-rich style.")
    else:
        parts.append("That points to a tonal style built on gradual transitions rather than flat fields or dense texture.")
    questions = (f"How would you characterise the style of this {w}?", f"What visual language does the {w} use?",
                 f"What kind of rendering style does the {w} show?")
    return questions, " ".join(parts)


def _tonal_style(m: ImageMeasures, domain: str) -> tuple[Sequence[str], str]:
    w = MEDIUM[domain]
    key = "high-key" if m.mean_luminance > 0.7 else "low-key" if m.mean_luminance < 0.3 else "mid-key"
    contrast = ("strong contrast" if _strong_contrast(m) else "low contrast" if _weak_contrast(m)
                else "moderate contrast")
    answer = (f"The style rests on a {key} treatment (mean luminance {m.mean_luminance:.2f}) with {contrast} (RMS contrast "
              f"{m.rms_contrast:.2f}) and {_colour_band(m.colorfulness)} colour (colourfulness {m.colorfulness:.0f}), "
              f"which together set how the {w} reads from a distance.")
    questions = (f"How does the tonal treatment shape the style of the {w}?",
                 f"What stylistic role do tone and colour intensity play in the {w}?")
    return questions, answer


def _mood_facet(m: ImageMeasures, domain: str) -> tuple[Sequence[str], str]:
    w = MEDIUM[domain]
    parts = [f"With mean luminance {m.mean_luminance:.2f} and mean saturation {m.mean_saturation:.2f}, the {w} sets "
             f"{_a(_mood(m))} mood."]
    dark, bright = m.mean_luminance < 0.35, m.mean_luminance > 0.65
    if dark and m.mean_saturation >= 0.3:
        parts.append("Saturated colour glowing out of dark surroundings creates drama and tension.")
    elif dark:
        parts.append("The dark, desaturated tones hold energy back and invite a slow, reflective look.")
    elif bright and m.mean_saturation >= 0.3:
        parts.append("Bright, saturated colour gives an upbeat, energetic feel.")
    elif bright:
        parts.append("Light tones with little saturation give the atmosphere an open calm.")
    elif _strong_contrast(m):
        parts.append(f"Strongly separated light and shadow areas (RMS contrast {m.rms_contrast:.2f}) add tension.")
    else:
        parts.append(f"Even, moderate tones (RMS contrast {m.rms_contrast:.2f}) keep the atmosphere steady and calm.")
    questions = (f"What mood does the {w} convey?", "What emotional tone do the light and colour set?",
                 f"How does the {w} feel at first sight?")
    return questions, " ".join(parts)


def _energy(m: ImageMeasures, domain: str) -> tuple[Sequence[str], str]:
    w = MEDIUM[domain]
    energy = 2 * m.edge_density + m.rms_contrast
    answer = f"Strong edges cover {pct(m.edge_density)} of the surface and RMS contrast is {m.rms_contrast:.2f}, "
    if energy >= 0.45:
        answer += "so the eye keeps moving, which gives the feel of energy and restlessness."
    elif energy < 0.2:
        answer += "so there is little to agitate the eye and the feel is calm and settled."
    else:
        answer += "a middle ground that feels lively without becoming restless."
    return (f"Does the {w} feel calm or energetic?", f"How much tension does the {w} carry?"), answer


def _strengths(m: ImageMeasures) -> list[str]:
    found = []
    if m.clipped_highlights < _CLIP_NOTABLE and m.clipped_shadows < _CLIP_NOTABLE:
        found.append("tonal extremes that keep their detail (under 0.5% of the pixels are pure white or pure black)")
    if _sharpness_class(m) == "crisp":
        found.append(f"crisp edges (Laplacian variance {m.sharpness_normalized:.0f})")
    if m.colorfulness >= 45:
        found.append(f"rich colour (colourfulness {m.colorfulness:.0f})")
    if _compact(m) and m.thirds_distance <= _ON_THIRDS:
        found.append("a rule-of-thirds placement of the main mass")
    elif _compact(m) and m.center_distance <= _CENTRED and m.symmetry >= 0.8:
        found.append(f"a centred, symmetric layout (symmetry {m.symmetry:.2f})")
    if m.rms_contrast >= 0.2:
        found.append(f"clear tonal separation (RMS contrast {m.rms_contrast:.2f})")
    return found


def _join(items: Sequence[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _overall(m: ImageMeasures, domain: str) -> tuple[Sequence[str], str]:
    w = MEDIUM[domain]
    strengths = _strengths(m)
    flaws = [label for _, _, label, _ in _weaknesses(m, domain)][:2]
    if strengths:
        answer = f"The {w}'s appeal rests on {_join(strengths)}."
    else:
        answer = (f"The measurements show no standout asset: {_key(m)} tones (mean luminance {m.mean_luminance:.2f}) and "
                  f"{_colour_band(m.colorfulness)} colour (colourfulness {m.colorfulness:.0f}) make a modest first "
                  "impression.")
    answer += f" What holds it back is {_join(flaws)}." if flaws else " No measured flaw undercuts that impression."
    questions = (f"What is the overall visual appeal of the {w}?", f"What makes this {w} attractive, and what holds it "
                 "back?", f"How strong is the overall impression the {w} makes?")
    return questions, answer


def _impact(m: ImageMeasures, domain: str) -> tuple[Sequence[str], str]:
    w = MEDIUM[domain]
    contrast, colour = m.rms_contrast >= 0.2, m.colorfulness >= 45
    parts = [f"Impact comes mostly from contrast and colour: RMS contrast is {m.rms_contrast:.2f} and colourfulness "
             f"{m.colorfulness:.0f}."]
    if contrast and colour:
        parts.append("Both are high, so the image has strong immediate impact and should stand out even at small sizes.")
    elif contrast or colour:
        parts.append(f"Only the {'contrast' if contrast else 'colour'} is strong, which gives moderate impact.")
    else:
        parts.append("Both are modest, so the appeal depends on slower looking rather than instant impact.")
    if _compact(m):
        parts.append(f"The main mass at {_across_down(m)} gives the eye a clear landing point.")
    else:
        parts.append("With no single distinct mass, the eye has no obvious landing point.")
    return (f"How much immediate impact does the {w} have?", f"Would the {w} catch the eye among many others?"), \
        " ".join(parts)


def _subject(m: ImageMeasures, domain: str) -> tuple[Sequence[str], str]:
    w = MEDIUM[domain]
    lead = m.dominant_colors[0] if m.dominant_colors else None
    if _compact(m) and m.salient_area <= 0.5:
        answer = (f"The subject reads as one compact region covering {pct(m.salient_area)} of the frame, located at "
                  f"{_across_down(m)} in the {_position(m)}; it stands apart from the rest of the {w} through colour "
                  "and tone")
        answer += f", while the largest colour area is {lead.name} ({pct(lead.share)})." if lead else "."
    else:
        answer = (f"No single subject is singled out: the distinct areas spread over the frame (spread "
                  f"{m.salient_spread:.2f}, where about 0.4 means evenly scattered), so the content reads as an "
                  "overall field, pattern or scene rather than one figure.")
    questions = (f"What does the {w} present as its main subject?",
                 f"Where is the subject of the {w}, and how clearly does it stand out?",
                 f"What is the first thing a viewer notices in this {w}?")
    return questions, answer


def _setting(m: ImageMeasures, domain: str) -> tuple[Sequence[str], str]:
    w = MEDIUM[domain]
    setting = ("an open, daylit" if m.mean_luminance > 0.6 else "an enclosed, night-like" if m.mean_luminance < 0.3
               else "an evenly lit")
    answer = (f"The scene is set in {_key(m)} tones (mean luminance {m.mean_luminance:.2f}) with a palette of "
              f"{_colours(m, 2)}, which suggests {setting} setting for whatever story the {w} tells.")
    questions = (f"What kind of setting does the {w} suggest through its tones and colours?",
                 f"What story do the light and palette of the {w} begin to tell?")
    return questions, answer


def _symbol_focus(m: ImageMeasures, domain: str) -> tuple[Sequence[str], str]:
    w = MEDIUM[domain]
    lead = m.dominant_colors[0] if m.dominant_colors else None
    tail = (f", against a palette led by {lead.name} ({pct(lead.share)}), a colour often associated with "
            f"{_association(lead.name)}." if lead else ".")
    if _compact(m):
        answer = (f"The element with the most emphasis, and so the likeliest carrier of meaning, is the region covering "
                  f"{pct(m.salient_area)} of the frame at {_across_down(m)}, set apart from the rest in colour and tone"
                  + tail)
    else:
        answer = (f"No single element is emphasised (the distinct areas spread evenly, spread {m.salient_spread:.2f}), so "
                  "any symbolic meaning is carried by the palette as a whole" + tail)
    return (f"Which visual element carries the most symbolic weight in the {w}?",
            f"What could the most emphasised element of the {w} stand for?"), answer


def _colour_symbolism(m: ImageMeasures, domain: str) -> tuple[Sequence[str], str]:
    w = MEDIUM[domain]
    colours = m.dominant_colors[:2]
    if not colours:
        return (f"Is there a symbolic reading of the palette of the {w}?",), (
            f"The {w} has no colour area large enough to carry symbolic meaning on its own.")
    first = colours[0]
    answer = f"The largest colour areas are {_colours(m, 2)}. {first.name.capitalize()} is commonly associated with " \
             f"{_association(first.name)}"
    if len(colours) > 1 and _association(colours[1].name) != _association(first.name):
        answer += f", {colours[1].name} with {_association(colours[1].name)}"
    answer += f", so the palette lends the {w} a symbolic note of {_association(first.name).split(',')[0].split(' and ')[0]}."
    return (f"What might the dominant colours of the {w} signify?", f"Is there a symbolic reading of the palette of "
            f"the {w}?"), answer


_FACETS: dict[str, tuple[Facet, ...]] = {
    "content_and_narrative": (_subject, _setting),
    "composition": (_placement, _balance, _format),
    "color": (_palette, _colour_intensity),
    "lighting": (_exposure, _contrast),
    "lines_and_brushstrokes": (_line_work, _contours),
    "style": (_rendering_style, _tonal_style),
    "emotion": (_mood_facet, _energy),
    "technique": (_focus, _craft),
    "symbolism": (_symbol_focus, _colour_symbolism),
    "visual_appeal": (_overall, _impact),
}


def _weaknesses(m: ImageMeasures, domain: str) -> list[tuple[float, str, str, str]]:
    """(severity, dimension, short label, suggestion) for each measured weakness, most severe first."""
    w = MEDIUM[domain]
    out = []
    h, s = m.clipped_highlights, m.clipped_shadows
    if h >= 0.01:
        how = {"photography": "reduce exposure or pull the highlights down in editing",
               "painting": "lower the value of the brightest passages slightly",
               "virtual": "compress the highlights in the render or colour grade"}[domain]
        out.append((2 + 10 * h, "lighting", f"blown highlights ({pct(h)} of the pixels are blown-out highlights)",
                    f"Recover the highlights: {pct(h)} of the pixels are blown-out highlights, so {how} until those "
                    "areas hold detail again."))
    if s >= 0.02:
        out.append((1.8 + 10 * s, "lighting", f"crushed shadows ({pct(s)} of the pixels are crushed to pure black)",
                    f"Open up the shadows: {pct(s)} of the pixels are crushed to pure black, so lifting the lowest tones "
                    "a little would bring back detail there."))
    if m.mean_luminance < 0.25 and s < 0.02:
        out.append((1.5 + (0.25 - m.mean_luminance) * 4, "lighting", f"a median tone of only {m.luminance_p50:.2f}",
                    f"Brighten the midtones: the median tone is only {m.luminance_p50:.2f}, so raising the midtone "
                    "levels would open up the image without touching its brightest areas."))
    if m.mean_luminance > 0.8 and h < 0.01:
        out.append((1.2, "lighting", f"tones crowded toward white (mean luminance {m.mean_luminance:.2f})",
                    f"Bring the overall exposure down: mean luminance is {m.mean_luminance:.2f}, so the tones crowd "
                    "toward white; darkening the midtones would restore density."))
    if m.tilt_degrees is not None and abs(m.tilt_degrees) >= 0.5:
        t = abs(m.tilt_degrees)
        turn = "clockwise" if m.tilt_degrees > 0 else "counter-clockwise"
        target = "the horizon" if domain == "photography" else "the dominant line"
        out.append((1 + t / 3, "composition", f"a {t:.1f}° tilt of the dominant line",
                    f"Straighten {target}: the dominant near-horizontal line is tilted by {t:.1f}°, so rotate the "
                    f"{w} {t:.1f}° {turn} and trim the edges of the frame."))
    if _weak_contrast(m) and m.mean_luminance > 0.05:
        out.append((1.5 - m.contrast_range, "lighting",
                    f"a narrow tonal range (the middle 90% of tones spans only {m.contrast_range:.2f})",
                    f"Add contrast: the middle 90% of tones spans only {m.contrast_range:.2f} of the scale, so a steeper "
                    "tone curve would separate the main areas of light and shadow."))
    if _sharpness_class(m) == "soft":
        how = {"photography": "more careful focus, a faster shutter speed or moderate sharpening",
               "painting": "firmer definition of the key contours",
               "virtual": "a cleaner, higher-resolution render of the edges"}[domain]
        out.append((1.4, "technique", f"soft detail (the steepest edges make only {pct(m.edge_crispness)} of their "
                    "tonal step from one pixel to the next)",
                    f"Firm up the detail: the steepest edges make only {pct(m.edge_crispness)} of their tonal step "
                    f"from one pixel to the next, so {how} would help."))
    if _compact(m) and m.thirds_distance > 0.1 and m.center_distance > 0.1:
        out.append((1.0, "composition", f"an undecided placement of the main mass ({pct(m.thirds_distance)} of the frame "
                                        f"from the {m.nearest_thirds_point} thirds point)",
                    f"Commit the placement: the main mass sits {pct(m.thirds_distance)} of the frame from the "
                    f"{m.nearest_thirds_point} thirds point and {pct(m.center_distance)} of the frame from the centre, "
                    "so moving it onto that point, or fully into the centre, would make the layout look intentional."))
    elif _compact(m) and m.center_distance <= _CENTRED and m.symmetry < 0.5:
        out.append((0.8, "composition", f"a central placement without symmetric support (symmetry {m.symmetry:.2f})",
                    f"Move the main mass off the centre: it sits {pct(m.center_distance)} of the frame from the centre "
                    f"while symmetry is only {m.symmetry:.2f}, so shifting it toward the {m.nearest_thirds_point} thirds "
                    "point would give the frame more tension."))
    if m.colorfulness < 15 and m.mean_saturation < 0.1 and domain != "photography":
        out.append((0.6, "color", f"an almost colourless palette (colourfulness {m.colorfulness:.0f})",
                    f"Give the palette a focal accent: colourfulness is only {m.colorfulness:.0f}, so raising saturation "
                    "in one element near the main mass would guide the eye."))
    out.sort(key=lambda item: -item[0])
    return out


def _refinements(m: ImageMeasures) -> list[tuple[float, str, str, str]]:
    if _compact(m):
        return [(0.0, "composition", "", f"Reinforce the focal point: the main mass at {_across_down(m)} of the frame "
                                         "could be set off further with a touch more local contrast or light around it.")]
    return [(0.0, "composition", "", f"Give the eye a landing point: no single area of the frame dominates (spread "
                                     f"{m.salient_spread:.2f}), so strengthening one region with light or colour would "
                                     "organise the composition.")]


def _improvement(m: ImageMeasures, domain: str, variant: int) -> dict[str, Any]:
    w = MEDIUM[domain]
    suggestions = _weaknesses(m, domain)[:3]
    if len(suggestions) < 2:
        suggestions += _refinements(m)
    questions = (f"How could this {w} be improved?", f"What changes would make the {w} stronger?",
                 f"If the {w} were revised, what should change first?")
    ordinals = ("First", "Second", "Third")
    answer = " ".join(f"{ordinals[i]}, {text[0].lower()}{text[1:]}" for i, (_, _, _, text) in enumerate(suggestions))
    return {"question": questions[variant % len(questions)], "answer": answer, "dimension": suggestions[0][1],
            "improvement": True}


def dialogue(measures: ImageMeasures, domain: str, plan: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Six question-answer pairs guided by the plan's dimensions; the last one is the improvement pair.

    Dimensions are taken in plan order; when the plan has fewer than five, composition and visual appeal are added
    (and lighting and colour if that still leaves fewer than three), then the list is cycled, each repeat of a
    dimension using its next facet so no question is asked twice.
    """
    domain = _check_domain(domain)
    planned = _plan_dimensions(plan if plan is not None else _plan(measures, domain))
    for extra in ("composition", "visual_appeal"):
        if len(planned) < N_PAIRS - 1 and extra not in planned:
            planned.append(extra)
    for extra in ("lighting", "color"):  # with three or more dimensions no facet has to repeat
        if len(planned) < 3 and extra not in planned:
            planned.append(extra)
    sequence = [planned[i % len(planned)] for i in range(N_PAIRS - 1)]
    seed = int(hashlib.sha256(json.dumps([measures.to_dict(), domain], sort_keys=True).encode()).hexdigest()[:8], 16)
    pairs, used = [], {d: 0 for d in DIMENSION_IDS}
    for index, dimension in enumerate(sequence):
        facets = _FACETS[dimension]
        questions, answer = facets[used[dimension] % len(facets)](measures, domain)
        used[dimension] += 1
        pairs.append({"question": questions[(seed + index) % len(questions)], "answer": answer, "dimension": dimension,
                      "improvement": False})
    pairs.append(_improvement(measures, domain, seed))
    return {"pairs": pairs}


def _plan_dimensions(plan: Mapping[str, Any]) -> list[str]:
    """Known ids from a plan object (whoever wrote it), in order, once each."""
    ids: list[str] = []
    entries = plan.get("dimensions") if isinstance(plan, Mapping) else None
    for entry in entries if isinstance(entries, list) else []:
        raw = entry.get("dimension") if isinstance(entry, Mapping) else None
        dimension = re.sub(r"[\s\-]+", "_", raw.strip().lower()) if isinstance(raw, str) else ""
        if dimension in DIMENSION_IDS and dimension not in ids:
            ids.append(dimension)
    return ids[:MAX_DIMENSIONS]


_BROAD_INSTRUCTION = "Write a coherent paragraph that analyses and appreciates this {w} from the perspective of visual art."
_FOCUSED_INSTRUCTIONS = (
    "Write a coherent paragraph analysing the {name} of this {w}, staying with that aspect only.",
    "Compose a formal analytical paragraph that examines only the {name} of this {w} through its visible features.",
    "In one paragraph, discuss how the {name} of this {w} works, keeping strictly to that aspect.",
)


def paragraphs(measures: ImageMeasures, domain: str, plan: Mapping[str, Any] | None, count: int) -> dict[str, Any]:
    """Fig. S1's single-turn instructions with their paragraphs: first a broad appreciation (the first facet of
    up to three planned dimensions), then one paragraph per planned dimension in plan order, cycled, each the
    dimension's facets joined. Instructions rotate through fixed wordings so none repeats."""
    domain = _check_domain(domain)
    w = MEDIUM[domain]
    planned = _plan_dimensions(plan if plan is not None else _plan(measures, domain)) or ["composition", "visual_appeal"]
    broad = " ".join(_FACETS[d][0](measures, domain)[1] for d in planned[:3])
    items = [{"instruction": _BROAD_INSTRUCTION.format(w=w), "dimension": None, "response": broad}]
    for index in range(count - 1):
        dimension, round_ = planned[index % len(planned)], index // len(planned)
        wording = _FOCUSED_INSTRUCTIONS[round_ % len(_FOCUSED_INSTRUCTIONS)].format(name=_dimension_name(dimension), w=w)
        if round_ >= len(_FOCUSED_INSTRUCTIONS):
            wording += f" This is paragraph {round_ + 1} on it."
        response = " ".join(facet(measures, domain)[1] for facet in _FACETS[dimension])
        items.append({"instruction": wording, "dimension": dimension, "response": response})
    return {"paragraphs": items[:count]}


# --- verifier -------------------------------------------------------------------------------------------------

_KEYWORDS: dict[str, tuple[str, ...]] = {
    "content_and_narrative": ("subject", "content", "scene", "story", "narrative", "setting", "theme", "depicts",
                              "figure", "notices", "presents", "shows"),
    "composition": ("composition", "compose", "frame", "framing", "placement", "placed", "balance", "balanced", "thirds",
                    "centre", "center", "centred", "centered", "symmetry", "symmetric", "asymmetric", "layout",
                    "horizon", "position", "format", "mass", "weight", "geometry", "level", "arrangement"),
    "color": ("colour", "color", "colours", "colors", "palette", "hue", "hues", "saturation", "saturated", "colourful",
              "colorful", "colourfulness", "colorfulness", "vivid", "muted", "tint"),
    "lighting": ("light", "lighting", "lit", "exposure", "exposed", "highlights", "highlight", "shadows", "shadow",
                 "luminance", "brightness", "bright", "dark", "contrast", "tonal", "tones", "tone"),
    "lines_and_brushstrokes": ("line", "lines", "linework", "edge", "edges", "stroke", "strokes", "brushstroke",
                               "brushstrokes", "brushwork", "contour", "contours", "mark", "marks", "texture", "surface"),
    "style": ("style", "stylistic", "stylised", "stylized", "rendering", "graphic", "visual language", "genre",
              "treatment", "manner", "aesthetic"),
    "emotion": ("mood", "emotion", "emotional", "feel", "feeling", "feels", "atmosphere", "calm", "tension", "energetic",
                "serene", "drama", "dramatic", "sombre", "somber", "lively", "restless", "quiet"),
    "technique": ("technique", "technical", "technically", "craft", "execution", "executed", "sharp", "sharpness",
                  "crisp", "focus", "detail", "blur", "blurred", "laplacian", "resolution", "megapixels", "rendering",
                  "exposure", "clipping"),
    "symbolism": ("symbol", "symbolic", "symbolism", "meaning", "signify", "signifies", "stand for", "stands for",
                  "motif", "metaphor", "associated", "association", "iconography"),
    "visual_appeal": ("appeal", "appealing", "attractive", "impact", "impression", "eye-catching", "striking", "beauty",
                      "beautiful", "harmony", "catch the eye", "stand out", "overall"),
}
_IMAGE_WORDS = re.compile(r"\b(image|photo|photograph|picture|painting|illustration|artwork|frame|shot|scene|piece|"
                          r"render|canvas|composition|work)\b", re.I)
_IMPROVE_QUESTION = re.compile(r"\b(improve|improved|improvement|better|stronger|change|changes|fix|revise|revised|"
                               r"refine|enhance|strengthen|weakness|weaknesses|differently)\b", re.I)
_SUGGESTION = re.compile(r"\b(could|should|would|try|consider|recommend|suggest|reduce|increase|lower|raise|move|shift|"
                         r"rotate|straighten|crop|trim|add|boost|lift|recover|sharpen|brighten|darken|open up|firm up|"
                         r"commit|reinforce|give|bring)\b", re.I)
_NEGATION = frozenset({"no", "not", "without", "never", "nor", "neither", "hardly", "barely", "lacks", "lack",
                       "lacking", "avoid", "avoids", "than", "instead", "isn't", "aren't", "doesn't", "don't", "nothing"})
_COLOUR_PHRASE = re.compile(r"\b(?:dark|light|pale) (?:grey|gray|red|orange|yellow|green|cyan|blue|purple|magenta)\b",
                            re.I)
_HUE_WORDS: dict[str, tuple[str, ...]] = {
    "red": ("red",), "orange": ("orange",), "yellow": ("yellow",), "green": ("green",), "blue": ("blue",),
    "cyan": ("cyan",), "teal": ("cyan", "green", "blue"), "turquoise": ("cyan", "green", "blue"),
    "purple": ("purple",), "violet": ("purple",), "magenta": ("magenta",), "pink": ("red", "magenta"),
    "brown": ("orange", "red", "yellow"),
}
_COLOUR_NAME = r"(?:dark |pale |light )?(?:red|orange|yellow|green|cyan|blue|purple|magenta|pink|brown|grey|gray|white|black)"


@dataclass(frozen=True)
class _Claim:
    """A qualitative word that is only true of some images; ``holds`` says whether it is true of this one."""

    name: str
    pattern: re.Pattern[str]
    holds: Callable[[ImageMeasures], bool]
    fact: Callable[[ImageMeasures], str]
    describes_state: bool = True  # False: also legitimate as a suggestion, so not checked in improvement answers


def _light_fact(m: ImageMeasures) -> str:
    return (f"mean luminance is {m.mean_luminance:.2f}, with {pct(m.clipped_highlights)} of pixels blown and "
            f"{pct(m.clipped_shadows)} crushed")


_CLAIMS = (
    _Claim("bright", re.compile(r"\b(bright|high-key|over-?exposed|blown(?:-out)?|luminous|sunlit|glaring)\b", re.I),
           lambda m: m.mean_luminance >= 0.45 or m.luminance_p95 >= 0.8 or m.clipped_highlights >= 0.01, _light_fact),
    _Claim("dark", re.compile(r"\b(dark|low-key|under-?exposed|dim|murky|gloomy|crushed)\b", re.I),
           lambda m: m.mean_luminance <= 0.55 or m.luminance_p5 <= 0.2 or m.clipped_shadows >= 0.01, _light_fact),
    _Claim("high contrast", re.compile(r"\b(high-contrast|high contrast|punchy|contrasty|strong contrast|"
                                       r"strongly separated)\b", re.I),
           lambda m: m.rms_contrast >= 0.15 or m.contrast_range >= 0.45,
           lambda m: f"RMS contrast is {m.rms_contrast:.2f} and the middle 90% of tones spans {m.contrast_range:.2f}"),
    _Claim("low contrast", re.compile(r"\b(low-contrast|low contrast|flat light|looks flat|washed[- ]out|"
                                      r"tones sit close together)\b", re.I),
           lambda m: m.rms_contrast <= 0.2 or m.contrast_range <= 0.6,
           lambda m: f"RMS contrast is {m.rms_contrast:.2f} and the middle 90% of tones spans {m.contrast_range:.2f}"),
    _Claim("colourful", re.compile(r"\b(vivid|vibrant|saturated|colou?rful|rich colou?r|intense colou?r)\b", re.I),
           lambda m: m.colorfulness >= 25 or m.mean_saturation >= 0.3,
           lambda m: f"colourfulness is {m.colorfulness:.0f} and mean saturation {m.mean_saturation:.2f}"),
    _Claim("muted", re.compile(r"\b(muted|desaturated|monochrome|monochromatic|greyscale|grayscale|colou?rless|drab|"
                               r"subdued)\b", re.I),
           lambda m: m.colorfulness <= 45 or m.mean_saturation <= 0.25,
           lambda m: f"colourfulness is {m.colorfulness:.0f} and mean saturation {m.mean_saturation:.2f}"),
    _Claim("sharp", re.compile(r"\b(sharp|crisp|in focus|razor|well-focused|tack-sharp)\b", re.I),
           lambda m: m.edge_crispness >= 0.35 or m.sharpness_normalized >= 150,
           lambda m: f"the steepest edges make {pct(m.edge_crispness)} of their tonal step from one pixel to the next "
                     f"(Laplacian variance {m.sharpness_normalized:.0f})"),
    _Claim("soft", re.compile(r"\b(blurr?y|blurred|out of focus|unsharp|smeared)\b|"
                              r"\b(?:edges|detail|focus) (?:is|are|looks?|appears?) soft\b", re.I),
           lambda m: m.edge_crispness <= 0.5 or m.sharpness_normalized <= 100,
           lambda m: f"the steepest edges make {pct(m.edge_crispness)} of their tonal step from one pixel to the next "
                     f"(Laplacian variance {m.sharpness_normalized:.0f})"),
    _Claim("level", re.compile(r"\bruns level\b|\b(?:level|straight) horizon\b|\bhorizon is (?:level|straight)\b", re.I),
           lambda m: m.tilt_degrees is not None and abs(m.tilt_degrees) <= 1.5, lambda m: _tilt_fact(m)),
    _Claim("no line", re.compile(r"\bno (?:long )?straight (?:near-horizontal )?line\b", re.I),
           lambda m: m.tilt_degrees is None, lambda m: _tilt_fact(m)),
    _Claim("tilted", re.compile(r"\b(tilt|tilted|tilts|slanted|slanting|crooked|askew|straighten)\b", re.I),
           lambda m: m.tilt_degrees is not None and abs(m.tilt_degrees) >= 0.5, lambda m: _tilt_fact(m)),
    _Claim("centred", re.compile(r"\b(cent(?:red|ered)|in the (?:middle|cent(?:re|er)) of the frame)\b", re.I),
           lambda m: m.center_distance <= 0.15,
           lambda m: f"the salient mass lies {pct(m.center_distance)} of the frame from the centre", False),
    _Claim("thirds", re.compile(r"\brule[- ]of[- ]thirds placement\b|\b(?:on|at|near|follows?|following) (?:a |the )?"
                                r"(?:rule[- ]of[- ]thirds|(?:[a-z-]+ )?thirds (?:point|intersection|line))\b", re.I),
           lambda m: m.thirds_distance <= 0.12,
           lambda m: f"the salient mass lies {pct(m.thirds_distance)} of the frame from the nearest thirds point", False),
    _Claim("symmetric", re.compile(r"\b(symmetric|symmetrical|mirror each other)\b", re.I),
           lambda m: m.symmetry >= 0.5, lambda m: f"left-right symmetry is {m.symmetry:.2f}"),
    _Claim("asymmetric", re.compile(r"\b(asymmetric|asymmetrical|lopsided)\b", re.I),
           lambda m: m.symmetry <= 0.85, lambda m: f"left-right symmetry is {m.symmetry:.2f}"),
)


def _tilt_fact(m: ImageMeasures) -> str:
    if m.tilt_degrees is None:
        return "no dominant straight near-horizontal line was measured"
    return f"the dominant near-horizontal line is at {m.tilt_degrees:.1f}°"


@dataclass(frozen=True)
class _Number:
    """A stated number the verifier can recompute: ``check`` returns None when it agrees, else the measured fact."""

    pattern: re.Pattern[str]
    check: Callable[[re.Match[str], ImageMeasures], str | None]


def _close(stated: float, measured: float, absolute: float, relative: float = 0.0) -> bool:
    return abs(stated - measured) <= max(absolute, relative * abs(measured))


def _percent_check(get: Callable[[ImageMeasures], float], what: str, absolute: float, relative: float = 0.25):
    def check(match: re.Match[str], m: ImageMeasures) -> str | None:
        measured = get(m) * 100
        return None if _close(float(match.group(1)), measured, absolute, relative) else f"{what} is {measured:.1f}%"
    return check


def _value_check(get: Callable[[ImageMeasures], float], what: str, absolute: float, relative: float = 0.0):
    def check(match: re.Match[str], m: ImageMeasures) -> str | None:
        measured = get(m)
        return None if _close(float(match.group(1)), measured, absolute, relative) else f"{what} is {measured:g}"
    return check


def _angle_check(match: re.Match[str], m: ImageMeasures) -> str | None:
    if m.tilt_degrees is None:
        return _tilt_fact(m)
    return None if _close(float(match.group(1)), abs(m.tilt_degrees), 1.0, 0.2) else _tilt_fact(m)


def _thirds_check(match: re.Match[str], m: ImageMeasures) -> str | None:
    stated, point = float(match.group(1)), match.group(2).lower()
    if point == m.nearest_thirds_point and _close(stated, m.thirds_distance * 100, 2.0, 0.25):
        return None
    return f"the salient mass is {pct(m.thirds_distance)} of the frame from the {m.nearest_thirds_point} thirds point"


def _position_check(match: re.Match[str], m: ImageMeasures) -> str | None:
    x, y = float(match.group(1)), float(match.group(2))
    if _close(x, m.salient_centroid[0] * 100, 5.0) and _close(y, m.salient_centroid[1] * 100, 5.0):
        return None
    return f"the salient mass centres at {_across_down(m)}"


def _colour_share_check(match: re.Match[str], m: ImageMeasures) -> str | None:
    name, stated = match.group(1).lower().replace("gray", "grey"), float(match.group(2))
    shares = [c.share for c in m.dominant_colors if c.name == name] + [s for f, s in m.hue_shares if f == name]
    if any(_close(stated, share * 100, 5.0) for share in shares):
        return None
    measured = ", ".join(f"{c.name} {pct(c.share)}" for c in m.dominant_colors) or "none"
    return f"the measured main colours are {measured}"


def _size_check(match: re.Match[str], m: ImageMeasures) -> str | None:
    width, height = int(match.group(1)), int(match.group(2))
    return None if (width, height) == (m.width, m.height) else f"the image is {m.width}×{m.height}"


def _orientation_check(match: re.Match[str], m: ImageMeasures) -> str | None:
    if match.group("share1") is not None:
        stated, direction = float(match.group("share1")), match.group("dir1").lower()
    else:
        stated, direction = float(match.group("share2")), match.group("dir2").lower()
    measured = {"horizontal": m.edge_horizontal, "horizontally": m.edge_horizontal, "vertical": m.edge_vertical,
                "vertically": m.edge_vertical, "diagonal": m.edge_diagonal, "diagonally": m.edge_diagonal}[direction]
    return None if _close(stated, measured * 100, 5.0) else f"{direction} edges carry {pct(measured)} of the edge strength"


_N = r"(\d+(?:\.\d+)?)"
_NUMBERS = (
    _Number(re.compile(_N + r"\s*%(?: of the pixels)? (?:are|is|reach) (?:blown|pure white)", re.I),
            _percent_check(lambda m: m.clipped_highlights, "the blown-highlight share", 1.0)),
    _Number(re.compile(_N + r"\s*%(?: of the pixels)? (?:are|is|sink to) (?:crushed|pure black)", re.I),
            _percent_check(lambda m: m.clipped_shadows, "the crushed-shadow share", 1.0)),
    _Number(re.compile(r"mean luminance (?:is |of |at )?" + _N, re.I),
            _value_check(lambda m: m.mean_luminance, "mean luminance", 0.05)),
    _Number(re.compile(r"median tone (?:is |sits at |of )?(?:only )?" + _N, re.I),
            _value_check(lambda m: m.luminance_p50, "the median tone", 0.05)),
    _Number(re.compile(r"rms contrast (?:is |of )?" + _N, re.I),
            _value_check(lambda m: m.rms_contrast, "RMS contrast", 0.03)),
    _Number(re.compile(r"middle 90% of tones spans? (?:only )?" + _N, re.I),
            _value_check(lambda m: m.contrast_range, "the middle-90% tonal span", 0.05)),
    _Number(re.compile(r"mean saturation (?:is |of )?" + _N, re.I),
            _value_check(lambda m: m.mean_saturation, "mean saturation", 0.05)),
    _Number(re.compile(r"colou?rfulness (?:measures |is |of |scores )?(?:only )?" + _N, re.I),
            _value_check(lambda m: m.colorfulness, "colourfulness", 3.0, 0.1)),
    _Number(re.compile(r"laplacian variance (?:of the luminance )?(?:is |of )?(?:only )?" + _N, re.I),
            lambda match, m: None if any(_close(float(match.group(1)), v, 1.0, 0.1)
                                         for v in (m.sharpness, m.sharpness_normalized))
            else f"the Laplacian variance is {m.sharpness_normalized:.0f}"),
    _Number(re.compile(_N + r"% of their tonal step", re.I),
            _percent_check(lambda m: m.edge_crispness, "edge crispness", 5.0, 0.0)),
    _Number(re.compile(_N + r"\s*°"), _angle_check),
    _Number(re.compile(_N + r"% of the frame from the (upper-left|upper-right|lower-left|lower-right) thirds point", re.I),
            _thirds_check),
    _Number(re.compile(_N + r"%(?: of the frame)? from the (?:centre|center|middle)", re.I),
            _percent_check(lambda m: m.center_distance, "the salient mass's distance from the centre", 2.0)),
    _Number(re.compile(r"(\d+)% across and (\d+)% down", re.I), _position_check),
    _Number(re.compile(r"(?:mass|region) cover(?:s|ing) " + _N + r"% of the frame", re.I),
            _percent_check(lambda m: m.salient_area, "the salient area", 3.0, 0.3)),
    _Number(re.compile(r"spread " + _N, re.I), _value_check(lambda m: m.salient_spread, "the salient spread", 0.05)),
    _Number(re.compile(r"symmetry (?:scores |is |of )?" + _N, re.I),
            _value_check(lambda m: m.symmetry, "left-right symmetry", 0.05)),
    _Number(re.compile(r"\b(" + _COLOUR_NAME + r") \(" + _N + r"%\)", re.I), _colour_share_check),
    _Number(re.compile(r"\b(\d{2,5})\s*[×x]\s*(\d{2,5})\b"), _size_check),
    _Number(re.compile(r"edges (?:cover|on) (?:only )?" + _N + r"% of the (?:surface|pixels|frame)", re.I),
            _percent_check(lambda m: m.edge_density, "the strong-edge share", 2.0)),
    _Number(re.compile(_N + r"% of (?:it|the pixels) (?:is|are|sit in) flat", re.I),
            _percent_check(lambda m: m.flat_fraction, "the flat share", 3.0, 0.15)),
    _Number(re.compile(r"(?P<share1>\d+(?:\.\d+)?)% runs (?P<dir1>horizontally|vertically|diagonally)|"
                       r"mostly (?P<dir2>horizontal|vertical|diagonal) \((?P<share2>\d+(?:\.\d+)?)%\)", re.I),
            _orientation_check),
    _Number(re.compile(_N + r" megapixels", re.I), _value_check(lambda m: m.megapixels, "the size in megapixels", 0.1, 0.1)),
)


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z]+(?:['’-][a-z]+)*|\d+(?:\.\d+)?", text.lower())


def _negated(text: str, start: int) -> bool:
    before = _words(text[:start])[-4:]
    return any(word in _NEGATION or word.endswith("n't") for word in before)


def _mentions(text: str, phrase: str) -> bool:
    return re.search(r"\b" + re.escape(phrase) + r"\b", text, re.I) is not None


def _dimensions_in(text: str) -> dict[str, int]:
    hits = {d: sum(_mentions(text, k) for k in keywords) for d, keywords in _KEYWORDS.items()}
    return {d: n for d, n in hits.items() if n}


def _dimension_name(dimension: str) -> str:
    return next(d.name for d in DIMENSIONS if d.id == dimension).lower()


def _check_instruction(question: str, answer: str, declared: str | None, improvement: bool,
                       blocking: list[str], minor: list[str]) -> bool:
    if not question:
        blocking.append("instruction_consistency: the question is empty")
        return False
    in_question = _dimensions_in(question)
    if not (_IMAGE_WORDS.search(question) or in_question):
        blocking.append("instruction_consistency: the question is not about the image or any aesthetic dimension")
        return False
    ok = True
    if improvement:
        if not _IMPROVE_QUESTION.search(question):
            blocking.append("instruction_consistency: the improvement pair does not ask how the image could be improved")
            ok = False
        if not _SUGGESTION.search(answer):
            blocking.append("instruction_consistency: the improvement answer proposes no concrete change")
            ok = False
    elif _IMPROVE_QUESTION.search(question) and _SUGGESTION.search(answer):
        minor.append("the question asks for improvements but the pair is not flagged as the improvement pair")
    inferred = max(in_question, key=lambda d: (in_question[d], d == declared)) if in_question else None
    target = declared or inferred
    if target is None:
        return ok
    in_answer = _dimensions_in(answer)
    if target in in_answer:
        return ok
    if inferred and inferred != target and inferred in in_answer:
        minor.append(f"the pair is labelled {target} but the question and answer are about {inferred}")
        return ok
    blocking.append(f"instruction_consistency: the answer does not address the question's focus on "
                    f"{_dimension_name(target)}")
    return False


def _check_grounding(m: ImageMeasures, answer: str, improvement: bool, blocking: list[str], minor: list[str]) -> bool:
    evidence, ok = 0, True
    descriptive = _COLOUR_PHRASE.sub(" ", answer)  # "dark blue" names a colour, it does not call the image dark
    for claim in _CLAIMS:
        if improvement and not claim.describes_state:
            continue
        for match in claim.pattern.finditer(descriptive):
            if _negated(descriptive, match.start()):
                continue
            if claim.holds(m):
                evidence += 1
            else:
                blocking.append(f"visual_grounding: the answer calls the image {match.group(0).lower()!r}, but "
                                f"{claim.fact(m)}")
                ok = False
            break
    for number in _NUMBERS:
        for match in number.pattern.finditer(answer):
            problem = number.check(match, m)
            if problem is None:
                evidence += 1
            else:
                blocking.append(f"visual_grounding: the answer states {match.group(0)!r}, but {problem}")
                ok = False
    if not improvement:
        for word, families in _HUE_WORDS.items():
            for match in re.finditer(r"\b" + word + r"\b", answer, re.I):
                if _negated(answer, match.start()):
                    continue
                present = any(word in c.name for c in m.dominant_colors) or any(
                    share >= 0.01 for family, share in m.hue_shares if family in families)
                if present:
                    evidence += 1
                else:
                    blocking.append(f"visual_grounding: the answer mentions {word}, but no {word} area was measured")
                    ok = False
                break
    if evidence == 0 and ok:
        blocking.append("visual_grounding: the answer cites no visual evidence that can be checked against the image")
        ok = False
    elif evidence == 1 and ok:
        minor.append("the answer rests on a single piece of checkable evidence")
    return ok


def _check_quality(answer: str, earlier: Sequence[str], blocking: list[str], minor: list[str]) -> bool:
    words = _words(answer)
    if len(words) < _MIN_WORDS:
        blocking.append(f"response_quality: the answer has {len(words)} words, too short to be a critique")
        return False
    if len(words) >= 20 and len(set(words)) / len(words) < 0.35:
        blocking.append("response_quality: the answer repeats itself instead of analysing the image")
        return False
    sentences = {s.strip().lower() for s in re.split(r"(?<=[.!?])\s+", answer) if len(s.split()) >= 5}
    for index, other in enumerate(earlier, start=1):
        if sentences & {s.strip().lower() for s in re.split(r"(?<=[.!?])\s+", other)}:
            minor.append(f"repeats a sentence from pair {index}")
            break
    if len(words) > 220:
        minor.append(f"the answer is long ({len(words)} words)")
    return True


def verdicts(measures: ImageMeasures, domain: str, dialogue: Mapping[str, Any]) -> dict[str, Any]:
    """The verifier's answer: one verdict per pair, each check decided against the measurements."""
    _check_domain(domain)
    pairs = dialogue.get("pairs") if isinstance(dialogue, Mapping) else None
    if not isinstance(pairs, list):
        raise ValueError("the dialogue to verify has no 'pairs' list")
    results, answers = [], []
    for number, pair in enumerate(pairs, start=1):
        pair = pair if isinstance(pair, Mapping) else {}
        question = str(pair.get("question") or "").strip()
        answer = str(pair.get("answer") or "").strip()
        improvement = pair.get("improvement") is True
        raw = pair.get("dimension")
        declared = re.sub(r"[\s\-]+", "_", raw.strip().lower()) if isinstance(raw, str) else None
        blocking: list[str] = []
        minor: list[str] = []
        if declared is not None and declared not in DIMENSION_IDS:
            minor.append(f"unknown dimension label {raw!r}")
            declared = None
        consistent = _check_instruction(question, answer, declared, improvement, blocking, minor)
        grounded = _check_grounding(measures, answer, improvement, blocking, minor) if answer else False
        if not answer:
            blocking.append("visual_grounding: the answer is empty")
        quality = _check_quality(answer, answers, blocking, minor)
        answers.append(answer)
        results.append({"pair": number, "instruction_consistency": consistent, "visual_grounding": grounded,
                        "response_quality": quality, "blocking_issues": blocking, "non_blocking_issues": minor})
    return {"verdicts": results}


_PASSED = {
    "instruction_consistency": "The response addresses what the instruction asks about the image.",
    "visual_grounding": "Every checkable claim agrees with the measurements of the image.",
    "response_quality": "The response is specific to this image and long enough to be a critique.",
}


def pair_verdict(measures: ImageMeasures, domain: str, pair: Mapping[str, Any]) -> dict[str, Any]:
    """The per-pair verifier's answer: the same measured checks as ``verdicts``, on this pair alone (so nothing
    is compared with other pairs), with a reason per criterion, the issues by criterion and severity, and the
    decision the checks imply."""
    (verdict,) = verdicts(measures, domain, {"pairs": [pair]})["verdicts"]
    issues, reasons = [], {}
    for text in verdict["blocking_issues"]:
        criterion, _, description = text.partition(": ")
        issues.append({"criterion": criterion, "severity": "blocking", "description": _sentence(description)})
    for name in ("instruction_consistency", "visual_grounding", "response_quality"):
        failed = [i["description"] for i in issues if i["criterion"] == name]
        reasons[name] = {"pass": verdict[name], "reason": failed[0] if failed else _PASSED[name]}
    issues += [{"criterion": "response_quality", "severity": "non_blocking", "description": _sentence(text)}
               for text in verdict["non_blocking_issues"]]
    accepted = all(r["pass"] for r in reasons.values()) and not verdict["blocking_issues"]
    reason = ("All three criteria pass and nothing blocks." if accepted
              else f"Rejected: {issues[0]['description'][0].lower()}{issues[0]['description'][1:]}")
    return {**reasons, "issues": issues, "decision": "accept" if accepted else "reject", "reason": reason}


# --- shared -------------------------------------------------------------------------------------------------

def _check_domain(domain: str) -> str:
    if domain not in DOMAINS:
        raise ValueError(f"unknown domain {domain!r}; expected one of {', '.join(DOMAINS)}")
    return domain


def _a(phrase: str) -> str:
    return ("an " if phrase[:1].lower() in "aeiou" else "a ") + phrase


def _sentence(text: str) -> str:
    text = text.strip()
    return text[:1].upper() + text[1:] + ("" if text.endswith(".") else ".")
