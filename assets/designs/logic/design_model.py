"""The canonical graphic-design record every design stage shares (AesEval, seed paper 003).

Crello ships two encodings (v4: coordinates normalised to [0, 1], angles in radians, lower-case element
types; v5: pixel coordinates, degrees, class-label types). Ingestion turns both into this one form, so the
renderer, the perturbations and the question builders never see the difference:

- coordinates and sizes are canvas pixels, the origin top-left;
- ``angle`` is degrees, clockwise, about the element's centre;
- ``font_size`` and ``letter_spacing`` are canvas pixels; ``line_height`` is a multiple of the font size;
- ``bold`` / ``italic`` are the text's style as a whole (Crello v5 stores them per character; ingestion
  takes the majority), passed to the font resolver as style words next to ``font``;
- elements are in paint order: the first is the bottom layer;
- ``layer`` is a reference to the element's pre-rendered layer image (RGBA) that a loader resolves: a path,
  or ``blob:<sha256>`` once the layer is in the blob store;
- ``effects`` are pixel operations applied to the layer when rendering (``("blur", radius_px)``,
  ``("downsample", factor)``), so every perturbation stays a change to the record, not to pixels.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import Any

ELEMENT_TYPES = ("background", "image", "svg", "mask", "text")
TEXT_ALIGNS = ("left", "center", "right", "justify")
EFFECTS = ("blur", "downsample")
SOURCE_FORMATS = ("crello-v4", "crello-v5")

_LATE_FLAGS = ("bold", "italic")  # written by to_dict only when true (see Element.to_dict)

Box = tuple[float, float, float, float]  # left, top, width, height (canvas pixels)
RGB = tuple[int, int, int]


@dataclass(frozen=True)
class Element:
    element_id: str
    type: str
    left: float
    top: float
    width: float
    height: float
    angle: float = 0.0
    opacity: float = 1.0
    color: RGB | None = None
    text: str | None = None
    font: str | None = None
    font_size: float | None = None
    text_align: str = "left"
    line_height: float = 1.0
    letter_spacing: float = 0.0
    capitalize: bool = False
    bold: bool = False
    italic: bool = False
    layer: str | None = None
    effects: tuple[tuple[str, float], ...] = ()

    @property
    def box(self) -> Box:
        return (self.left, self.top, self.width, self.height)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON values. ``bold`` / ``italic`` appear only when true: they were added later, and leaving
        the defaults out keeps the canonical JSON (hence the content hash) of every plain design unchanged."""
        data = asdict(self)
        data["color"] = list(self.color) if self.color is not None else None
        data["effects"] = [list(e) for e in self.effects]
        for flag in _LATE_FLAGS:
            if not data[flag]:
                del data[flag]
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Element:
        values = dict(data)
        values["color"] = tuple(values["color"]) if values.get("color") is not None else None
        values["effects"] = tuple((str(name), float(amount)) for name, amount in values.get("effects") or ())
        for flag in _LATE_FLAGS:
            values[flag] = values.get(flag, False)
            if not isinstance(values[flag], bool):
                raise ValueError(f"element {values.get('element_id')!r}: {flag} must be true or false, not {values[flag]!r}")
        return cls(**values)


@dataclass(frozen=True)
class Design:
    design_id: str
    canvas_width: int
    canvas_height: int
    elements: tuple[Element, ...]
    source_format: str = "crello-v5"
    preview: str | None = None          # the dataset's own render of the design, when it ships one
    attributes: Mapping[str, Any] = field(default_factory=dict)  # group, format, category, title, …

    def with_element(self, index: int, **changes: Any) -> Design:
        """This design with element ``index`` changed; everything else is the same objects."""
        elements = list(self.elements)
        elements[index] = replace(elements[index], **changes)
        return replace(self, elements=tuple(elements))

    def to_dict(self) -> dict[str, Any]:
        return {
            "design_id": self.design_id,
            "canvas_width": self.canvas_width,
            "canvas_height": self.canvas_height,
            "elements": [e.to_dict() for e in self.elements],
            "source_format": self.source_format,
            "preview": self.preview,
            "attributes": dict(self.attributes),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Design:
        return cls(
            design_id=data["design_id"],
            canvas_width=int(data["canvas_width"]),
            canvas_height=int(data["canvas_height"]),
            elements=tuple(Element.from_dict(e) for e in data["elements"]),
            source_format=data.get("source_format", "crello-v5"),
            preview=data.get("preview"),
            attributes=dict(data.get("attributes") or {}),
        )

    def to_json(self) -> str:
        """Canonical JSON: the same design always gives the same bytes (its content hash is its id)."""
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
