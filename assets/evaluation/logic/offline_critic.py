"""The offline critic: a critique computed from the image's measures (exposure, contrast, colour, sharpness, tilt,
placement), so the demo and the tests evaluate a "model" whose answers follow from its input, with no key and no
network. It is a baseline, not a model: it sees pixels, never the post's text.

A benchmark that asks several critiques per item gets different ones: sample ``k`` leads with the k-th aspect
group, as a person writing a second comment would pick another thing to talk about.
"""

from __future__ import annotations

import io
from collections.abc import Callable

from PIL import Image

from assets.core.logic.image_measures import ImageMeasures, measure

CRITIC_VERSION = "offline-critic-v1"


Rule = tuple[Callable[[ImageMeasures], bool], Callable[[ImageMeasures], str]]
"""When a remark applies, and its text; an aspect's rules are tried in order, its last one always applies."""

def _lead_colour(m: ImageMeasures) -> str:
    return m.dominant_colors[0].name if m.dominant_colors else "neutral"


def _tilted(m: ImageMeasures) -> bool:
    return m.tilt_degrees is not None and abs(m.tilt_degrees) > 1.0 and m.tilt_support > 0.3


EXPOSURE: tuple[Rule, ...] = (
    (lambda m: m.clipped_highlights > 0.05, lambda m: "The highlights are blown out in places; pulling exposure down or"
     " recovering highlights would keep that detail."),
    (lambda m: m.clipped_shadows > 0.10, lambda m: "A good part of the shadows is crushed to black; lifting them a little"
     " would show what is hiding there."),
    (lambda m: m.mean_luminance < 0.3, lambda m: "It reads dark and moody overall; make sure that is intended, since the"
     " subject could use a bit more light."),
    (lambda m: m.mean_luminance > 0.7, lambda m: "The exposure is bright and airy; a touch less would give the lighter"
     " tones more texture."),
    (lambda m: True, lambda m: "Exposure looks well judged, with tones spread sensibly between shadows and highlights."),
)
CONTRAST: tuple[Rule, ...] = (
    (lambda m: m.contrast_range < 0.3, lambda m: "Contrast is quite flat; a gentle curve would add depth and separation."),
    (lambda m: m.rms_contrast > 0.3, lambda m: "Contrast is strong and punchy, which suits a graphic look but can feel"
     " harsh on the midtones."),
    (lambda m: True, lambda m: "The contrast sits in a comfortable middle range."),
)
COLOUR: tuple[Rule, ...] = (
    (lambda m: m.mean_saturation < 0.12, lambda m: f"The palette is nearly monochrome around {_lead_colour(m)}; a black"
     " and white conversion might be worth trying."),
    (lambda m: m.colorfulness > 90, lambda m: f"Colours are very saturated, led by {_lead_colour(m)}; toning them down"
     " slightly would look more natural."),
    (lambda m: True, lambda m: f"The colour palette, led by {_lead_colour(m)}, is coherent and not overdone."),
)
SHARPNESS: tuple[Rule, ...] = (
    (lambda m: m.edge_crispness < 0.25 or m.sharpness_normalized < 20, lambda m: "Focus looks soft; check the focus"
     " point and shutter speed, or steady the camera."),
    (lambda m: True, lambda m: "Detail is crisp where it matters."),
)
COMPOSITION: tuple[Rule, ...] = (
    (_tilted, lambda m: f"The horizon tilts by about {abs(m.tilt_degrees or 0):.0f} degrees; straightening it would"
     " calm the frame."),
    (lambda m: m.center_distance < 0.08, lambda m: "The subject sits right in the centre; placing it nearer a thirds line"
     " could make the frame more dynamic."),
    (lambda m: m.thirds_distance < 0.1, lambda m: f"The main subject sits close to the {m.nearest_thirds_point} thirds"
     " point, which balances the frame nicely."),
    (lambda m: m.salient_spread > 0.35, lambda m: "There is no single clear subject; the eye wanders, so simplify the"
     " frame or crop tighter."),
    (lambda m: True, lambda m: "Placement of the subject works, though a slightly tighter crop could strengthen it."),
)


def _remark(rules: tuple[Rule, ...], m: ImageMeasures) -> str:
    return next(text(m) for applies, text in rules if applies(m))


_GROUPS = ((COMPOSITION, SHARPNESS), (EXPOSURE, CONTRAST), (COLOUR, SHARPNESS))


def critique_of_measures(m: ImageMeasures, sample: int = 0) -> str:
    """A short critique: sample ``k`` leads with aspect group ``k`` (mod the groups), then one remark of the next."""
    first, second = _GROUPS[sample % len(_GROUPS)], _GROUPS[(sample + 1) % len(_GROUPS)]
    return " ".join(_remark(rules, m) for rules in (first[0], first[1], second[0]))


def critique_of_image(image: bytes, sample: int = 0) -> str:
    """The critique of an encoded image (any format Pillow reads)."""
    with Image.open(io.BytesIO(image)) as opened:
        opened.load()
        return critique_of_measures(measure(opened), sample)
