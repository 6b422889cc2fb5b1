"""Ingestion of Crello-format design records into the canonical ``Design`` (assets/designs/logic/design_model.py).

Why: AesEval (seed paper 003, section 3.2) perturbs professional Crello designs at the JSON level and
re-renders them from their layers. Crello ships in two encodings and as JSON-plus-layers or Parquet; every
later stage should see one form only, and a bad record should be rejected with a reason instead of
crashing a stream of 10^6 designs.

What the dataset documents (looked up before coding)
----------------------------------------------------
Sources: the Hugging Face card of ``cyberagent/crello`` (Data Fields tables, dataset_info features, release
notes), CanvasVAE's ``docs/crello-dataset.md`` (v1/v2), and CyberAgent's own renderers
(``CyberAgentAILab/cr-renderer``: ``CrelloV5Renderer`` and ``CrelloV4Renderer.convert_to_v5``; OpenCOLE's
``layoutlib/hfds/crello.py``). Facts used here:

- A record is one design: canvas attributes (``id``, ``canvas_width``, ``canvas_height``, ``length``,
  ``group``, ``format``, ``category``, ``title``, ``keywords``, ``industries``, ``suitability``, and in v5 a
  ``preview`` image) plus per-element attributes stored as parallel sequences of equal length: ``type``,
  ``left``, ``top``, ``width``, ``height``, ``angle``, ``opacity``, ``color``, ``text``, ``font``,
  ``font_size``, ``text_align``, ``line_height``, ``letter_spacing``, ``capitalize``, ``image``. Sequence
  order is paint order (the renderers draw element 0 first).
- v1-v4: left/width are normalised to [0, 1] by canvas_width, top/height by canvas_height; ``angle`` is
  radians about the element's centre. Categorical fields (type, font, text_align, capitalize, and in v3/v4
  even canvas_width / canvas_height) are Hugging Face ``ClassLabel`` s: stored as integers, decoded to
  strings with the label table (``capitalize`` has labels ``'false'`` / ``'true'``). ``color`` is an RGB
  triple (int64 in v1-v3, float32 in v4) on the 0-255 scale ("extracted main RGB color").
- v5 (5.0.0, Sep 2024): "element positions and sizes are not normalized by canvas size" (pixels) and
  ``angle`` is degrees (the v4-to-v5 converter applies ``180 * x / pi``; the renderer passes it to a
  clockwise canvas rotation about the box centre). ``color`` became a list of CSS strings such as
  ``"rgba(52, 103, 151, 1)"`` (empty for photos and for text), text colour moved to the per-character
  ``text_color`` list, and ``text_line`` / ``font_bold`` / ``font_italic`` are per character too (v1-v4
  have no bold / italic fields at all: the style can only sit in the font name there).
  5.1.0 only resized the layer images (longer side 1024 px).
- ``font_size`` is "font size (height) in pixels" in every release; the v4-to-v5 converter copies
  ``font_size`` and ``letter_spacing`` unchanged, and OpenCOLE divides font_size by canvas_height and
  letter_spacing by canvas_width to normalise them, so both are canvas pixels in v4 and v5 alike.
  ``line_height`` is a multiple of the font size (the renderer advances ``line * font_size *
  line_height``). ``opacity`` is in [0, 1]. Text is stored HTML-escaped (the renderer unescapes it).
- ``image`` holds the pre-rendered layer of each element (an ``Image`` feature; in Parquet a struct with
  ``bytes`` and/or ``path``).
- Element type names: the v1-v4 spec and OpenCOLE use camelCase labels (``coloredBackground``,
  ``imageElement``, ``maskElement``, ``svgElement``, ``textElement``); the v5 renderer compares decoded
  labels with ``"TextElement"`` and its v4 converter capitalises the first letter, i.e. v5 uses
  ``ColoredBackground`` ... ``TextElement``. Other tools lower-case them. Because the casing differs
  between releases and tools, type names are matched case-insensitively and are NOT used to tell v4
  from v5.

Assumptions where the sources are silent (documented, not guessed per record)
-----------------------------------------------------------------------------
- Colour triples (v1-v4) are 0-255 even when stored as floats ([1, 1, 1] is near-black, not white);
  values are rounded to ints and clamped. Alpha in ``rgba()`` strings is ignored (``opacity`` is separate).
- A v5 text element takes the most frequent per-character ``text_color`` (first seen wins a tie), else
  its ``color``. A text element with no colour at all keeps ``color=None`` (the renderer's default).
- ``Element.bold`` / ``italic`` hold one style per element, so a v5 text element is bold (italic) when
  MORE than half of its per-character ``font_bold`` (``font_italic``) flags are true; a tie, an empty list
  or an absent field is False (the regular face is the default, and a half-bold text is not "bold"). A
  plain boolean per element is read as is: real v4 records have no such field (so v4 text is never bold),
  but ``design_to_record`` writes one into v4 records of designs that use bold or italic, as a documented
  extension, so the v4 and v5 encodings of such a design still ingest to the same ``Design``.
- Pixel values are rounded to 1e-4 px and angles to 1e-4 degree and normalised to (-180, 180], so the
  same design in v4 and v5 gives (nearly) the same canonical JSON.
- Text attributes (font, size, alignment, spacing, capitalisation, text) are kept for text elements only;
  other elements carry dataset filler there (font label 0, size 0) and get the model defaults.
- Integer categorical values need their label table (``class_labels``); a Parquet export written by
  Hugging Face ``datasets`` carries it in the ``huggingface`` key-value metadata, which
  ``assets.designs.parquet_source.read_design_parquet`` reads itself. Integer canvas sizes are pixels unless a label table for
  ``canvas_width`` / ``canvas_height`` is given. A text element's pre-rendered layer is dropped unless
  ``keep_text_layers`` (renderers re-typeset text from its attributes, and perturbed text would no
  longer match it).

Format detection (``fmt="auto"``): a record is v4 when every left, top, width and height lies within
[-4, 4], i.e. within four canvas sizes in normalised units; read as v5 pixels that would be a design whose
every element is under 4 px from the origin and under 4 px wide, which no real template is. Anything
else is v5. Pass ``fmt="crello-v4"`` or ``"crello-v5"`` to skip detection.

Folder layout read by ``read_design_folder``: one ``<id>.json`` per design, holding the dataset's field
names with decoded (string) labels and the parallel lists; ``image`` entries (and ``preview``) are paths
relative to the JSON file (e.g. ``../layers/<id>/<n>.png``) or ``{"path": ...}``; they must resolve inside
``layer_root`` (default: the folder's parent).
"""

from __future__ import annotations

import html
import io
import json
import math
import os
import re
import struct
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PIL import Image, UnidentifiedImageError

from assets.designs.logic.design_model import RGB, TEXT_ALIGNS, Design, Element
from warehouse.ids import sha256_hex

FORMATS = ("auto", "crello-v4", "crello-v5")
V4, V5 = "crello-v4", "crello-v5"
LAYER_REFS = ("blob", "path")

ELEMENT_FIELDS = (
    "type", "left", "top", "width", "height", "angle", "opacity", "color", "text", "font", "font_size",
    "text_align", "line_height", "letter_spacing", "capitalize", "image",
)
REQUIRED_ELEMENT_FIELDS = ("type", "left", "top", "width", "height")
V5_TEXT_FIELDS = ("text_color", "text_line", "font_bold", "font_italic")  # per-character lists in v5
ATTRIBUTE_FIELDS = ("group", "format", "category", "title", "keywords", "industries", "suitability")

# Canonical type for each dataset type name, matched after lower-casing (see the module docstring).
TYPE_NAMES = {
    "coloredbackground": "background",
    "imageelement": "image",
    "svgelement": "svg",
    "maskelement": "mask",
    "textelement": "text",
    **{name: name for name in ("background", "image", "svg", "mask", "text")},
}
# How ``design_to_record`` spells types in each encoding.
V4_TYPE_LABELS = {"background": "coloredBackground", "image": "imageElement", "svg": "svgElement",
                  "mask": "maskElement", "text": "textElement"}
V5_TYPE_LABELS = {"background": "ColoredBackground", "image": "ImageElement", "svg": "SvgElement",
                  "mask": "MaskElement", "text": "TextElement"}

V4_MAX_ABS = 4.0  # detection bound, in canvas sizes
MAX_CANVAS_SIDE = 20_000  # px; Crello canvases are a few thousand at most, so a larger one is a broken record
MAX_BOX_CANVASES = 64  # an element box wider (higher) than this many canvas widths (heights) is a broken record
PX_DIGITS = 4
DEG_DIGITS = 4
OPACITY_SLACK = 1e-3  # float32 noise tolerated around [0, 1]
COLOR_SLACK = 0.5

REASON_CODES = {
    "unreadable_record": "the file is not a regular file, not JSON, or not a JSON object",
    "bad_encoding": "the file is not UTF-8 text",
    "unreadable_file": "the Parquet file could not be opened or scanned",
    "missing_field": "a required canvas or element field is absent",
    "not_a_list": "a per-element field is not a list",
    "length_mismatch": "per-element lists (or `length`) disagree in length",
    "no_elements": "the design has no elements",
    "bad_canvas": "canvas width or height is missing, not a number, or not positive",
    "unknown_type": "an element type that is not one of Crello's five",
    "unknown_label": "an integer categorical value without a label table, or outside it",
    "bad_number": "a value that should be a finite number is not",
    "bad_value": "a value of the wrong kind (e.g. capitalize that is not a boolean)",
    "bad_size": "an element width or height that is not a positive finite number",
    "box_outside_canvas": "an element box (rotation included) that lies entirely outside the canvas",
    "bad_opacity": "opacity outside [0, 1]",
    "bad_color": "a colour that cannot be read",
    "text_missing": "a text element without text",
    "bad_font_size": "a text element whose font size is not a positive number",
    "bad_text_align": "a text alignment other than left, center, right or justify",
    "bad_line_height": "a text element whose line height is not a positive number",
    "layer_missing": "an image, svg, mask or background element (or the preview) without its layer image",
    "layer_undecodable": "a layer image that Pillow cannot decode",
    "layer_outside_root": "a layer path that leaves the allowed layer folder",
}


class DesignRecordError(ValueError):
    """A record that cannot become a ``Design``; names the field and element index where it can."""

    def __init__(self, reason_code: str, detail: str, *, field: str | None = None, element: int | None = None) -> None:
        self.reason_code = reason_code
        self.field = field
        self.element = element
        where = []
        if element is not None:
            where.append(f"element {element}")
        if field is not None:
            where.append(f"field {field!r}")
        self.detail = f"{', '.join(where)}: {detail}" if where else detail
        super().__init__(f"{reason_code}: {self.detail}")


@dataclass(frozen=True)
class LayerPayload:
    """Bytes of one layer (or of the preview) that the caller stores under ``ref``."""

    ref: str                    # what Element.layer / Design.preview hold: "blob:<sha256>" or a path
    data: bytes
    element_index: int | None   # None for the preview
    width: int
    height: int


@dataclass(frozen=True)
class DesignRead:
    """One item of a design stream: a design with its layers, or a rejection with its reason."""

    source: str                 # "file.json" or "file.parquet#row=12"
    design: Design | None = None
    layers: tuple[LayerPayload, ...] = ()
    reason_code: str | None = None
    detail: str | None = None

    @property
    def ok(self) -> bool:
        return self.design is not None


# --- values ---------------------------------------------------------------------------------------------


def _number(value: Any, field: str, element: int | None, code: str = "bad_number") -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise DesignRecordError(code, f"{value!r} is not a number", field=field, element=element)
    number = float(value)
    if not math.isfinite(number):
        raise DesignRecordError(code, f"{value!r} is not finite", field=field, element=element)
    return number


_CSS_COLOR = re.compile(r"^\s*rgba?\(\s*([^,()]+),\s*([^,()]+),\s*([^,()]+)(?:,\s*([^,()]+))?\s*\)\s*$", re.IGNORECASE)
_HEX_COLOR = re.compile(r"^\s*#([0-9a-fA-F]{3}|[0-9a-fA-F]{6})\s*$")


def _channel(value: Any) -> int:
    number = float(value)
    if not math.isfinite(number) or number < -COLOR_SLACK or number > 255 + COLOR_SLACK:
        raise ValueError(f"channel {value!r} outside 0-255")
    return min(255, max(0, int(math.floor(number + 0.5))))


def parse_color(value: Any) -> RGB | None:
    """RGB ints from any colour form Crello uses: a 0-255 triple (v1-v4), ``"rgba(r, g, b, a)"`` /
    ``"rgb(...)"`` strings or a list of them (v5; the first counts), or ``#rrggbb``. None or [] gives None.

    Raises ValueError when the value is none of these.
    """
    if value is None:
        return None
    if isinstance(value, str):
        if match := _CSS_COLOR.match(value):
            return (_channel(match[1]), _channel(match[2]), _channel(match[3]))
        if match := _HEX_COLOR.match(value):
            digits = match[1] if len(match[1]) == 6 else "".join(c * 2 for c in match[1])
            return (int(digits[0:2], 16), int(digits[2:4], 16), int(digits[4:6], 16))
        raise ValueError(f"{value!r} is not an rgb()/rgba()/#hex colour")
    if isinstance(value, (list, tuple)):
        if not value:
            return None
        if all(isinstance(v, str) for v in value):
            return parse_color(value[0])
        if len(value) in (3, 4) and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
            return (_channel(value[0]), _channel(value[1]), _channel(value[2]))
    raise ValueError(f"{value!r} is not a colour")


def _color(value: Any, element: int, field: str = "color") -> RGB | None:
    try:
        return parse_color(value)
    except (ValueError, TypeError) as exc:
        raise DesignRecordError("bad_color", str(exc), field=field, element=element) from None


def _text_color(chars: Any, element: int) -> RGB | None:
    """The most frequent per-character colour of a v5 text element (first seen wins a tie)."""
    if not isinstance(chars, (list, tuple)) or not chars:
        return None
    counts = Counter(str(c) for c in chars)
    first_seen = {c: i for i, c in reversed(list(enumerate(str(c) for c in chars)))}
    best = min(counts, key=lambda c: (-counts[c], first_seen[c]))
    return _color(best, element, "text_color")


def _flag(value: Any, field: str, element: int) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise DesignRecordError("bad_value", f"{value!r} is not a boolean", field=field, element=element)


def style_flag(value: Any, field: str = "font_bold", element: int = 0) -> bool:
    """One element's ``font_bold`` / ``font_italic`` as a single flag: a per-character list (v5) is true when
    more than half of its characters are (a tie or an empty list is False); a plain boolean (the v4
    extension of ``design_to_record``) is itself; None is False. Anything else is ``bad_value``."""
    if value is None:
        return False
    if isinstance(value, (list, tuple)):
        true = sum(_flag(v, field, element) for v in value if v is not None)
        return 2 * true > len(value)
    return _flag(value, field, element)


def class_labels_from_hf_metadata(metadata: str | bytes | Mapping[str, Any]) -> dict[str, tuple[str, ...]]:
    """Label tables of every ClassLabel field (also inside sequences) from the ``huggingface`` key-value
    metadata that ``datasets`` writes into its Parquet files."""
    data = json.loads(metadata) if isinstance(metadata, (str, bytes)) else metadata
    features = (data.get("info") or {}).get("features") or data.get("features") or {}

    def find(node: Any) -> tuple[str, ...] | None:
        if isinstance(node, Mapping):
            if node.get("_type") == "ClassLabel" and isinstance(node.get("names"), list):
                return tuple(str(n) for n in node["names"])
            for key in ("feature", "features"):
                if key in node:
                    return find(node[key])
        if isinstance(node, list) and len(node) == 1:
            return find(node[0])
        return None

    return {name: labels for name, node in features.items() if (labels := find(node)) is not None}


def _label(value: Any, field: str, labels: Mapping[str, Sequence[str]], element: int | None) -> Any:
    """Decode an integer ClassLabel; strings and everything else pass through unchanged."""
    if isinstance(value, bool) or not isinstance(value, int):
        return value
    table = labels.get(field)
    if table is None:
        raise DesignRecordError("unknown_label", f"integer label {value} but no label table for {field!r}",
                                field=field, element=element)
    if not 0 <= value < len(table):
        raise DesignRecordError("unknown_label", f"label {value} outside the {len(table)} labels of {field!r}",
                                field=field, element=element)
    return table[value]


def _canvas_size(record: Mapping[str, Any], field: str, labels: Mapping[str, Sequence[str]]) -> int:
    if record.get(field) is None:
        raise DesignRecordError("missing_field", "canvas size is required", field=field)
    value = record[field]
    if isinstance(value, int) and not isinstance(value, bool) and field in labels:
        value = _label(value, field, labels, None)
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            raise DesignRecordError("bad_canvas", f"{record[field]!r} is not a number", field=field) from None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise DesignRecordError("bad_canvas", f"{record[field]!r} is not a finite number", field=field)
    size = int(round(value))
    if size <= 0:
        raise DesignRecordError("bad_canvas", f"{record[field]!r} is not positive", field=field)
    if size > MAX_CANVAS_SIDE:
        raise DesignRecordError("bad_canvas", f"{record[field]!r} px is over {MAX_CANVAS_SIDE} px", field=field)
    return size


def _capitalize(value: Any, labels: Mapping[str, Sequence[str]], element: int) -> bool:
    if value is None:
        return False
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        value = _label(value, "capitalize", labels, element) if "capitalize" in labels else value
        if isinstance(value, int):
            if value in (0, 1):
                return bool(value)
            raise DesignRecordError("bad_value", f"{value!r} is not 0 or 1", field="capitalize", element=element)
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise DesignRecordError("bad_value", f"{value!r} is not a boolean", field="capitalize", element=element)


def _text_align(value: Any, labels: Mapping[str, Sequence[str]], element: int) -> str:
    value = _label(value, "text_align", labels, element)
    if value is None or (isinstance(value, str) and not value.strip()):
        return "left"
    if isinstance(value, str) and value.strip().lower() in TEXT_ALIGNS:
        return value.strip().lower()
    raise DesignRecordError("bad_text_align", f"{value!r} is not one of {TEXT_ALIGNS}", field="text_align", element=element)


def _canonical_type(value: Any, labels: Mapping[str, Sequence[str]], element: int) -> str:
    value = _label(value, "type", labels, element)
    name = TYPE_NAMES.get(value.strip().lower()) if isinstance(value, str) else None
    if name is None:
        raise DesignRecordError("unknown_type", f"{value!r} is not a Crello element type", field="type", element=element)
    return name


def _round(value: float, digits: int) -> float:
    rounded = round(value, digits)
    return 0.0 if rounded == 0 else rounded  # no "-0.0" in canonical JSON


def _degrees(angle: float) -> float:
    wrapped = math.fmod(angle + 180.0, 360.0)
    wrapped = wrapped + 360.0 if wrapped <= 0 else wrapped
    return _round(wrapped - 180.0, DEG_DIGITS)


def _outside(box: tuple[float, float, float, float], angle_deg: float, width: int, height: int) -> str | None:
    """"left" or "top" when the rotated box misses the canvas across or down (touching an edge is a miss)."""
    left, top, w, h = box
    theta = math.radians(angle_deg)
    half_w = (abs(w * math.cos(theta)) + abs(h * math.sin(theta))) / 2
    half_h = (abs(w * math.sin(theta)) + abs(h * math.cos(theta))) / 2
    cx, cy = left + w / 2, top + h / 2
    if cx + half_w <= 0 or cx - half_w >= width:
        return "left"
    if cy + half_h <= 0 or cy - half_h >= height:
        return "top"
    return None


def _json_value(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return [_json_value(v) for v in value]
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    return str(value)


# --- layers ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _LayerSource:
    """Where layer images come from: inline bytes, or paths relative to ``base_dir`` inside ``root``."""

    base_dir: Path | None
    root: Path | None
    refs: str = "blob"
    verify: bool = True

    def load(self, value: Any, field: str, element: int | None) -> LayerPayload:
        data: bytes | None = None
        path_text: str | None = None
        if isinstance(value, (bytes, bytearray, memoryview)):
            data = bytes(value)
        elif isinstance(value, Mapping):
            if value.get("bytes") is not None:
                data = bytes(value["bytes"])
            elif isinstance(value.get("path"), str) and value["path"]:
                path_text = value["path"]
        elif isinstance(value, str) and value:
            path_text = value
        path: Path | None = None
        if data is None:
            if path_text is None:
                raise DesignRecordError("layer_missing", "no layer image", field=field, element=element)
            path = self._resolve(path_text, field, element)
            try:
                data = path.read_bytes()
            except OSError:
                raise DesignRecordError("layer_missing", f"{path_text!r} cannot be read", field=field, element=element) from None
        try:
            with Image.open(io.BytesIO(data)) as image:
                if self.verify:
                    image.load()
                size = image.size
        except UnidentifiedImageError:  # its message names the in-memory buffer's address, different on every run
            raise DesignRecordError("layer_undecodable", "UnidentifiedImageError: not an image format Pillow reads",
                                    field=field, element=element) from None
        except (OSError, ValueError, SyntaxError, Image.DecompressionBombError) as exc:
            raise DesignRecordError("layer_undecodable", f"{type(exc).__name__}: {exc}"[:200], field=field, element=element) from None
        ref = path.as_posix() if self.refs == "path" and path is not None else f"blob:{sha256_hex(data)}"
        return LayerPayload(ref=ref, data=data, element_index=element, width=size[0], height=size[1])

    def _resolve(self, text: str, field: str, element: int | None) -> Path:
        if self.base_dir is None:
            raise DesignRecordError("layer_missing", f"path {text!r} but no folder to resolve it in", field=field, element=element)
        relative = Path(text)
        if relative.is_absolute():
            raise DesignRecordError("layer_outside_root", f"absolute path {text!r}", field=field, element=element)
        path = Path(os.path.normpath(self.base_dir / relative))
        root = Path(os.path.normpath(self.root if self.root is not None else self.base_dir))
        if path != root and root not in path.parents:
            raise DesignRecordError("layer_outside_root", f"{text!r} leaves {root.as_posix()}", field=field, element=element)
        if not path.is_file():
            raise DesignRecordError("layer_missing", f"{text!r} does not exist", field=field, element=element)
        return path


# --- one record -----------------------------------------------------------------------------------------


def _element_lists(record: Mapping[str, Any]) -> tuple[int, dict[str, list[Any]]]:
    for name in REQUIRED_ELEMENT_FIELDS:
        if record.get(name) is None:
            raise DesignRecordError("missing_field", "per-element list is required", field=name)
    lists: dict[str, list[Any]] = {}
    for name in ELEMENT_FIELDS + V5_TEXT_FIELDS:
        if record.get(name) is None:
            continue
        value = record[name]
        if isinstance(value, tuple):
            value = list(value)
        if not isinstance(value, list):
            raise DesignRecordError("not_a_list", f"expected one value per element, got {type(value).__name__}", field=name)
        lists[name] = value
    count = len(lists["type"])
    for name, values in lists.items():
        if len(values) != count:
            raise DesignRecordError("length_mismatch", f"{len(values)} values but {count} element types", field=name)
    if record.get("length") is not None:
        length = record["length"]
        if isinstance(length, bool) or not isinstance(length, int) or length != count:
            raise DesignRecordError("length_mismatch", f"length {length!r} but {count} elements", field="length")
    if count == 0:
        raise DesignRecordError("no_elements", "the design has no elements", field="type")
    return count, lists


def _geometry(lists: Mapping[str, list[Any]], count: int) -> list[tuple[float, float, float, float]]:
    boxes = []
    for i in range(count):
        left = _number(lists["left"][i], "left", i)
        top = _number(lists["top"][i], "top", i)
        width = _number(lists["width"][i], "width", i, code="bad_size")
        height = _number(lists["height"][i], "height", i, code="bad_size")
        for name, size in (("width", width), ("height", height)):
            if size <= 0:
                raise DesignRecordError("bad_size", f"{size!r} is not a positive size", field=name, element=i)
        boxes.append((left, top, width, height))
    return boxes


def _detect(boxes: Sequence[tuple[float, float, float, float]]) -> str:
    return V4 if all(abs(v) <= V4_MAX_ABS for box in boxes for v in box) else V5


def detect_format(record: Mapping[str, Any]) -> str:
    """``"crello-v4"`` or ``"crello-v5"`` by the geometry rule of the module docstring."""
    count, lists = _element_lists(record)
    return _detect(_geometry(lists, count))


def design_from_record(
    record: Mapping[str, Any],
    *,
    fmt: str = "auto",
    class_labels: Mapping[str, Sequence[str]] | None = None,
    design_id: str | None = None,
    base_dir: Path | None = None,
    layer_root: Path | None = None,
    layer_refs: str = "blob",
    keep_text_layers: bool = False,
    verify_layers: bool = True,
) -> tuple[Design, tuple[LayerPayload, ...]]:
    """One Crello record (v4 or v5, decoded or integer labels) as a canonical ``Design`` plus the layer
    bytes its refs point at (deduplicated; paths resolve against ``base_dir`` inside ``layer_root``).

    Raises ``DesignRecordError`` naming the field and element of the first problem.
    """
    if fmt not in FORMATS:
        raise ValueError(f"design format must be one of {FORMATS}, not {fmt!r}")
    if layer_refs not in LAYER_REFS:
        raise ValueError(f"layer_refs must be one of {LAYER_REFS}, not {layer_refs!r}")
    labels: Mapping[str, Sequence[str]] = class_labels or {}
    if not isinstance(record, Mapping):
        raise DesignRecordError("unreadable_record", f"a design record is a JSON object, not {type(record).__name__}")
    ident = record.get("id") if design_id is None else design_id
    if not isinstance(ident, str) or not ident.strip():
        raise DesignRecordError("missing_field", "a design id (string) is required", field="id")
    canvas_w = _canvas_size(record, "canvas_width", labels)
    canvas_h = _canvas_size(record, "canvas_height", labels)
    count, lists = _element_lists(record)
    boxes = _geometry(lists, count)
    source_format = _detect(boxes) if fmt == "auto" else fmt
    source = _LayerSource(base_dir, layer_root, layer_refs, verify_layers)

    def value(name: str, i: int, default: Any = None) -> Any:
        values = lists.get(name)
        return default if values is None or values[i] is None else values[i]

    elements: list[Element] = []
    payloads: dict[str, LayerPayload] = {}
    for i, (left, top, width, height) in enumerate(boxes):
        kind = _canonical_type(lists["type"][i], labels, i)
        angle = _number(value("angle", i, 0.0), "angle", i)
        if source_format == V4:
            left, width = left * canvas_w, width * canvas_w
            top, height = top * canvas_h, height * canvas_h
            angle = math.degrees(angle)
        box = (_round(left, PX_DIGITS), _round(top, PX_DIGITS), _round(width, PX_DIGITS), _round(height, PX_DIGITS))
        if box[2] <= 0 or box[3] <= 0:
            raise DesignRecordError("bad_size", f"{width!r} x {height!r} px rounds to nothing", field="width", element=i)
        for name, size, side in (("width", box[2], canvas_w), ("height", box[3], canvas_h)):
            if not size <= MAX_BOX_CANVASES * side:  # also catches a v4 value that overflowed to infinity
                raise DesignRecordError("bad_size", f"{size!r} px is over {MAX_BOX_CANVASES} canvas sizes", field=name, element=i)
        if not math.isfinite(angle):  # radians so large their degrees overflow
            raise DesignRecordError("bad_number", f"{angle!r} degrees is not finite", field="angle", element=i)
        angle = _degrees(angle)
        if (axis := _outside(box, angle, canvas_w, canvas_h)) is not None:
            raise DesignRecordError("box_outside_canvas", f"box {box} at {angle} deg misses the {canvas_w}x{canvas_h} canvas",
                                    field=axis, element=i)
        opacity = _number(value("opacity", i, 1.0), "opacity", i, code="bad_opacity")
        if not -OPACITY_SLACK <= opacity <= 1 + OPACITY_SLACK:
            raise DesignRecordError("bad_opacity", f"{opacity!r} is outside [0, 1]", field="opacity", element=i)
        opacity = min(1.0, max(0.0, opacity))
        attrs: dict[str, Any] = {}
        if kind == "text":
            text = value("text", i)
            if not isinstance(text, str) or not text.strip():
                raise DesignRecordError("text_missing", f"text element with text {text!r}", field="text", element=i)
            font = _label(value("font", i), "font", labels, i)
            if font is not None and not isinstance(font, str):
                raise DesignRecordError("bad_value", f"{font!r} is not a font name", field="font", element=i)
            if value("font_size", i) is None:
                raise DesignRecordError("bad_font_size", "text element without a font size", field="font_size", element=i)
            font_size = _number(value("font_size", i), "font_size", i, code="bad_font_size")
            if font_size <= 0:
                raise DesignRecordError("bad_font_size", f"{font_size!r} is not a positive size", field="font_size", element=i)
            line_height = _number(value("line_height", i, 1.0), "line_height", i, code="bad_line_height")
            if line_height <= 0:
                raise DesignRecordError("bad_line_height", f"{line_height!r} is not positive", field="line_height", element=i)
            color = _text_color(value("text_color", i), i)
            attrs = dict(
                text=html.unescape(text),
                font=(font.strip() or None) if font is not None else None,
                font_size=_round(font_size, PX_DIGITS),
                text_align=_text_align(value("text_align", i), labels, i),
                line_height=_round(line_height, PX_DIGITS),
                letter_spacing=_round(_number(value("letter_spacing", i, 0.0), "letter_spacing", i), PX_DIGITS),
                capitalize=_capitalize(value("capitalize", i), labels, i),
                bold=style_flag(value("font_bold", i), "font_bold", i),
                italic=style_flag(value("font_italic", i), "font_italic", i),
                color=color if color is not None else _color(value("color", i), i),
            )
        else:
            attrs = dict(color=_color(value("color", i), i))
        layer = None
        if kind != "text" or (keep_text_layers and value("image", i) is not None):
            payload = source.load(value("image", i), "image", i)
            if payload.ref.startswith("blob:"):  # a path ref needs no storing
                payloads.setdefault(payload.ref, payload)
            layer = payload.ref
        elements.append(Element(element_id=f"e{i}", type=kind, left=box[0], top=box[1], width=box[2], height=box[3],
                                angle=angle, opacity=opacity, layer=layer, **attrs))
    preview = None
    if record.get("preview") is not None:
        payload = source.load(record["preview"], "preview", None)
        if payload.ref.startswith("blob:"):
            payloads.setdefault(payload.ref, payload)
        preview = payload.ref
    attributes = {name: _json_value(_decode_attribute(record[name], name, labels))
                  for name in ATTRIBUTE_FIELDS if record.get(name) is not None}
    design = Design(design_id=ident.strip(), canvas_width=canvas_w, canvas_height=canvas_h, elements=tuple(elements),
                    source_format=source_format, preview=preview, attributes=attributes)
    return design, tuple(payloads.values())


def _decode_attribute(value: Any, name: str, labels: Mapping[str, Sequence[str]]) -> Any:
    table = labels.get(name)
    if table is None:
        return value
    if isinstance(value, list):
        return [table[v] if isinstance(v, int) and not isinstance(v, bool) and 0 <= v < len(table) else v for v in value]
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < len(table):
        return table[value]
    return value


# --- streams --------------------------------------------------------------------------------------------


def read_design_record(source: str, record: Any, on_layer: Callable[[LayerPayload], None] | None = None,
                       **options: Any) -> DesignRead:
    """One record (any value at all) as a design or a rejection; never raises for what the record holds."""
    try:
        design, payloads = design_from_record(record, **options)
    except DesignRecordError as exc:
        return DesignRead(source=source, reason_code=exc.reason_code, detail=exc.detail)
    if on_layer is not None:
        for payload in payloads:  # only once the whole record is valid: a rejected design leaves no blobs
            on_layer(payload)
        payloads = ()
    return DesignRead(source=source, design=design, layers=payloads)


def design_json_names(path: Path) -> list[str]:
    """Names of the ``*.json`` entries directly in ``path``, in name order (a folder so named included: it
    is rejected as a record, not skipped unseen)."""
    with os.scandir(path) as entries:
        return sorted(entry.name for entry in entries if entry.name.endswith(".json"))


def read_design_file(
    file: Path,
    *,
    layer_root: Path | None = None,
    on_layer: Callable[[LayerPayload], None] | None = None,
    **options: Any,
) -> DesignRead:
    """One per-design JSON file as a design or a rejection (``bad_encoding``: not UTF-8; ``unreadable_record``:
    not a file, not JSON, or not an object). The id is the record's ``id``, else the file name without
    ``.json``; layer paths resolve next to the file inside ``layer_root`` (default: the folder's parent)."""
    file = Path(file)
    name = file.name
    root = Path(layer_root) if layer_root is not None else file.parent.resolve().parent
    if not file.is_file():
        return DesignRead(source=name, reason_code="unreadable_record", detail="not a regular file")
    data = file.read_bytes()
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        return DesignRead(source=name, reason_code="bad_encoding",
                          detail=f"byte {data[exc.start:exc.start + 1].hex()} at offset {exc.start} is not UTF-8; save the file as UTF-8")
    try:
        record = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        return DesignRead(source=name, reason_code="unreadable_record", detail=f"{type(exc).__name__}: {exc}"[:200])
    design_id = None
    if isinstance(record, Mapping) and not (isinstance(record.get("id"), str) and record["id"].strip()):
        design_id = name[: -len(".json")]
    return read_design_record(name, record, on_layer, design_id=design_id, base_dir=file.resolve().parent,
                              layer_root=root, **options)


def read_design_folder(
    path: Path,
    *,
    fmt: str = "auto",
    class_labels: Mapping[str, Sequence[str]] | None = None,
    layer_root: Path | None = None,
    layer_refs: str = "blob",
    on_layer: Callable[[LayerPayload], None] | None = None,
    keep_text_layers: bool = False,
    verify_layers: bool = True,
) -> Iterator[DesignRead]:
    """Every ``*.json`` directly in ``path`` (name order) as a design or a rejection (``read_design_file``);
    one bad file never stops the stream. With ``on_layer`` each accepted design's layers go to the callback
    instead of staying in the item. ``layer_refs="path"`` keeps absolute file paths as refs and returns no
    payloads (local use only; blob refs are location-independent, so they keep a design's canonical JSON
    stable)."""
    path = Path(path)
    root = Path(layer_root) if layer_root is not None else path.resolve().parent
    for name in design_json_names(path):
        yield read_design_file(path / name, layer_root=root, on_layer=on_layer, fmt=fmt, class_labels=class_labels,
                               layer_refs=layer_refs, keep_text_layers=keep_text_layers, verify_layers=verify_layers)


# --- back to Crello form ---------------------------------------------------------------------------------


def _float32(value: float) -> float:
    return struct.unpack("<f", struct.pack("<f", value))[0]


def _css(color: RGB) -> str:
    return f"rgba({color[0]}, {color[1]}, {color[2]}, 1)"


def design_to_record(
    design: Design,
    fmt: str = V5,
    *,
    image_of: Callable[[int, Element], Any] | None = None,
    preview: Any = None,
) -> dict[str, Any]:
    """A ``Design`` as a Crello record with decoded (string) labels: v5 in pixels and degrees with
    ``rgba()`` colour lists and per-character text lists, or v4 normalised (float32 values), in radians,
    with 0-255 colour triples and string canvas labels (plus per-element ``font_bold`` / ``font_italic``
    booleans when some text is bold or italic: an extension, see the module docstring).
    ``image_of(index, element)`` gives each ``image`` entry (default: the element's layer ref; text elements get None)."""
    if fmt not in (V4, V5):
        raise ValueError(f"record format must be {V4!r} or {V5!r}, not {fmt!r}")
    images = image_of or (lambda i, e: e.layer)
    w, h = design.canvas_width, design.canvas_height
    els = design.elements
    record: dict[str, Any] = {"id": design.design_id, "length": len(els)}
    record.update({k: v for k, v in design.attributes.items() if k in ATTRIBUTE_FIELDS})
    if fmt == V5:
        record.update(canvas_width=w, canvas_height=h)
    else:
        record.update(canvas_width=str(w), canvas_height=str(h))
    if preview is not None:
        record["preview"] = preview
    labels = V5_TYPE_LABELS if fmt == V5 else V4_TYPE_LABELS
    record["type"] = [labels[e.type] for e in els]
    if fmt == V5:
        record.update(left=[e.left for e in els], top=[e.top for e in els], width=[e.width for e in els],
                      height=[e.height for e in els], angle=[e.angle for e in els])
        record["color"] = [[] if e.type == "text" or e.color is None else [_css(e.color)] for e in els]
        record["text_color"] = [[_css(e.color)] * len(e.text or "") if e.type == "text" and e.color else [] for e in els]
        record["text_line"] = [_text_lines(e.text) if e.type == "text" else [] for e in els]
        record["font_bold"] = [[e.bold] * len(e.text or "") if e.type == "text" else [] for e in els]
        record["font_italic"] = [[e.italic] * len(e.text or "") if e.type == "text" else [] for e in els]
    else:
        record.update(left=[_float32(e.left / w) for e in els], top=[_float32(e.top / h) for e in els],
                      width=[_float32(e.width / w) for e in els], height=[_float32(e.height / h) for e in els],
                      angle=[_float32(math.radians(e.angle)) for e in els])
        record["color"] = [[float(c) for c in e.color] if e.color is not None else None for e in els]
        if any(e.type == "text" and (e.bold or e.italic) for e in els):  # the v4 extension (module docstring)
            record["font_bold"] = [e.type == "text" and e.bold for e in els]
            record["font_italic"] = [e.type == "text" and e.italic for e in els]
    record["opacity"] = [e.opacity for e in els]
    record["text"] = [html.escape(e.text, quote=False) if e.type == "text" and e.text else "" for e in els]
    record["font"] = [e.font or "" if e.type == "text" else "" for e in els]
    record["font_size"] = [float(e.font_size or 0.0) if e.type == "text" else 0.0 for e in els]
    record["text_align"] = [e.text_align if e.type == "text" else "" for e in els]
    record["line_height"] = [e.line_height for e in els]
    record["letter_spacing"] = [e.letter_spacing for e in els]
    record["capitalize"] = [e.capitalize if fmt == V5 else ("true" if e.capitalize else "false") for e in els]
    record["image"] = [images(i, e) if e.type != "text" else None for i, e in enumerate(els)]
    return record


def _text_lines(text: str | None) -> list[int]:
    line, out = 0, []
    for char in text or "":
        if char == "\n":
            line += 1
        out.append(line)
    return out
