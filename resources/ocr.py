"""Offline OCR: which characters a machine can read in an image (the text-integrity pass of issue 6).

Why OCR at all: the poem benchmark flags an illustration for fake or garbled characters only when they are
machine-recognisable, so the flag is reproducible; and leaked poem text is found by reading the image, not by
trusting the survey's yes/no vote. ``assets/poetry/logic/text_labels.py`` turns the lines read here into a label.

The engine is RapidOCR 3.10 on onnxruntime, whose wheel carries its three ONNX models (PP-OCRv6 small detector
and recogniser, the mobile direction classifier). Three rules keep it offline and reproducible:

- every model is passed to RapidOCR by file path, so its "model missing, fetch it" branch is never reached; the
  recogniser's character table must be stored inside its ONNX file (checked before loading, since RapidOCR
  otherwise fetches a table over the network); images are handed over decoded (a str could be taken for a URL);
- nothing is written anywhere (HOME need not be writable); the models are only read;
- the provenance of every result names the engine, its version and each model file with a digest of its bytes.

RapidOCR logs every call at INFO, and "no text found" (the normal answer for a painting) as a WARNING; its own
logger is set to WARNING and those "result is empty" records are filtered out. The root logger is left alone.

Scale: the engine is built once per process (per model folder and thread count) and reused; decoding downscales
huge images to ``max_side`` before OCR (JPEG draft mode makes that cheap), and boxes are mapped back to the
original pixels.
"""

from __future__ import annotations

import hashlib
import io
import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any, ClassVar, Optional, Protocol, runtime_checkable

from dagster import ConfigurableResource
from pydantic import Field

ENGINE_NAME = "rapidocr"
DET_MODEL = "PP-OCRv6_det_small.onnx"
CLS_MODEL = "ch_ppocr_mobile_v2.0_cls_mobile.onnx"
REC_MODEL = "PP-OCRv6_rec_small.onnx"
MODEL_FILES = (DET_MODEL, CLS_MODEL, REC_MODEL)
LOGGER_NAME = "RapidOCR"

Point = tuple[float, float]
Box = tuple[Point, Point, Point, Point]  # corners in original-image pixels, clockwise from top-left


class OcrError(RuntimeError):
    """OCR could not run on an image or could not start; ``reason_code`` says which."""

    def __init__(self, reason_code: str, message: str) -> None:
        self.reason_code = reason_code
        super().__init__(message)


UNDECODABLE = "undecodable_image"      # the bytes are not an image Pillow can read
UNAVAILABLE = "ocr_unavailable"        # rapidocr/onnxruntime missing, or a model file missing or unusable
FAILED = "ocr_failed"                  # the engine raised while reading a decodable image


@dataclass(frozen=True)
class OcrLine:
    """One run of text the engine read: its text, its confidence in [0, 1] and where it is."""

    text: str
    score: float
    box: Box


@dataclass(frozen=True)
class OcrResult:
    """What was read in one image (lines at or above ``min_score``) and what read it."""

    lines: tuple[OcrLine, ...]
    engine: str
    engine_version: str
    model_ids: tuple[str, ...]           # "<file>@sha256:<16 hex>" per model
    min_score: float = 0.0
    dropped: int = 0                     # lines read but below min_score
    image_size: tuple[int, int] = (0, 0)  # (width, height) of the image as given
    scale: float = 1.0                   # factor the image was shrunk by before OCR (1: not shrunk)

    @property
    def text(self) -> str:
        """The lines in reading order, joined by newlines."""
        return "\n".join(line.text for line in self.lines)

    def provenance(self) -> dict[str, Any]:
        """JSON-able description of the reader and its settings, for the warehouse row."""
        return {
            "engine": self.engine,
            "engine_version": self.engine_version,
            "model_ids": list(self.model_ids),
            "min_score": self.min_score,
            "scale": self.scale,
        }


@runtime_checkable
class OcrEngine(Protocol):
    """Anything that reads the text in an encoded image; ``name`` identifies the engine kind (e.g. "rapidocr")."""

    name: str

    def read(self, image: bytes) -> OcrResult: ...


def bundled_model_dir() -> Path:
    """The folder of ONNX models shipped inside the rapidocr wheel (no network, no cache folder)."""
    try:
        import rapidocr
    except ImportError as exc:
        raise OcrError(UNAVAILABLE, "rapidocr is not installed (pip install rapidocr==3.10.0 onnxruntime)") from exc
    return Path(rapidocr.__file__).resolve().parent / "models"


def onnx_metadata_keys(data: bytes) -> set[str]:
    """The ``metadata_props`` keys of an ONNX model, read from its protobuf wire format without loading it.

    Why: RapidOCR downloads a character table when the recogniser lacks one; reading the keys first turns that
    download into a clear error. Only the top level of ModelProto is walked (field 14 is metadata_props).
    """
    keys: set[str] = set()
    pos, end = 0, len(data)

    def varint(at: int) -> tuple[int, int]:
        value = shift = 0
        while True:
            if at >= end:
                raise ValueError("truncated varint")
            byte = data[at]
            value |= (byte & 0x7F) << shift
            at += 1
            if byte < 0x80:
                return value, at
            shift += 7

    while pos < end:
        tag, pos = varint(pos)
        field, wire = tag >> 3, tag & 7
        if wire == 0:
            _, pos = varint(pos)
        elif wire == 1:
            pos += 8
        elif wire == 5:
            pos += 4
        elif wire == 2:
            length, pos = varint(pos)
            if field == 14:  # StringStringEntryProto: key = 1, value = 2, both strings
                inner, stop = pos, pos + length
                while inner < stop:
                    inner_tag, inner = varint(inner)
                    if inner_tag & 7 != 2:
                        raise ValueError("unexpected wire type in a metadata entry")
                    inner_len, inner = varint(inner)
                    if inner_tag >> 3 == 1:
                        keys.add(data[inner : inner + inner_len].decode("utf-8", "replace"))
                    inner += inner_len
            pos += length
        else:
            raise ValueError(f"unsupported wire type {wire}")
        if pos > end:
            raise ValueError("truncated field")
    return keys


class _QuietEmptyResults(logging.Filter):
    """Drops RapidOCR's "The text ... result is empty" warnings: no text is the usual answer for a painting."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return not (message.startswith("The text ") and message.endswith("result is empty"))


def quiet_rapidocr_logger() -> None:
    """WARNING level and the empty-result filter on RapidOCR's own logger (idempotent; root logging untouched)."""
    logger = logging.getLogger(LOGGER_NAME)
    logger.setLevel(logging.WARNING)
    if not any(isinstance(f, _QuietEmptyResults) for f in logger.filters):
        logger.addFilter(_QuietEmptyResults())


class _RapidBackend:
    """One loaded RapidOCR and the provenance of its models; calls are serialised (see ``read``)."""

    def __init__(self, model_dir: Path, threads: int | None) -> None:
        paths = {name: model_dir / name for name in MODEL_FILES}
        missing = [str(path) for path in paths.values() if not path.is_file()]
        if missing:
            raise OcrError(UNAVAILABLE, f"OCR model file(s) missing: {', '.join(missing)}")
        ids = []
        for name, path in paths.items():
            data = path.read_bytes()
            ids.append(f"{name}@sha256:{hashlib.sha256(data).hexdigest()[:16]}")
            if name == REC_MODEL:
                try:
                    has_table = "character" in onnx_metadata_keys(data)
                except ValueError as exc:
                    raise OcrError(UNAVAILABLE, f"{path} is not a readable ONNX model: {exc}") from exc
                if not has_table:
                    raise OcrError(
                        UNAVAILABLE,
                        f"{path} carries no character table; RapidOCR would download one, so it is refused",
                    )
        self.model_ids = tuple(ids)
        try:
            import onnxruntime
            from rapidocr import RapidOCR
        except ImportError as exc:
            raise OcrError(UNAVAILABLE, f"OCR engine cannot be imported: {exc}") from exc
        self.version = f"{metadata.version('rapidocr')}+onnxruntime-{onnxruntime.__version__}"
        params: dict[str, Any] = {
            "Global.log_level": "warning",  # RapidOCR resets its logger to this level on construction
            "Global.text_score": 0.0,       # keep every line; OcrEngine applies min_score and counts the drops
            "Global.model_root_dir": str(model_dir),
            "Det.model_path": str(paths[DET_MODEL]),
            "Cls.model_path": str(paths[CLS_MODEL]),
            "Rec.model_path": str(paths[REC_MODEL]),
        }
        if threads is not None:
            params["EngineConfig.onnxruntime.intra_op_num_threads"] = int(threads)
        quiet_rapidocr_logger()
        try:
            self.engine = RapidOCR(params=params)
        except Exception as exc:  # noqa: BLE001 - any start-up failure is "unavailable", with its cause
            raise OcrError(UNAVAILABLE, f"RapidOCR failed to start: {type(exc).__name__}: {exc}") from exc
        quiet_rapidocr_logger()
        self._lock = threading.Lock()

    def read(self, image: Any) -> tuple[list[str], list[float], list[Any]]:
        """(texts, scores, boxes) for a decoded PIL image.

        Serialised: onnxruntime already spreads one image over the cores, and RapidOCR keeps per-call settings on
        the instance, so concurrent calls would gain little and risk sharing state.
        """
        with self._lock:
            output = self.engine(image)
        texts = list(getattr(output, "txts", None) or ())
        scores = [float(s) for s in (getattr(output, "scores", None) or ())]
        boxes = getattr(output, "boxes", None)
        boxes = [] if boxes is None else list(boxes)
        if not (len(texts) == len(scores) == len(boxes)):
            raise OcrError(FAILED, f"engine returned {len(texts)} texts, {len(scores)} scores, {len(boxes)} boxes")
        return texts, scores, boxes


_BACKENDS: dict[tuple[str, int | None], _RapidBackend] = {}
_BACKENDS_LOCK = threading.Lock()


def _backend(model_dir: str | None, threads: int | None) -> _RapidBackend:
    """The process's RapidOCR for this model folder and thread count, built on first use (thread-safe)."""
    folder = Path(model_dir).expanduser().resolve() if model_dir else bundled_model_dir()
    key = (str(folder), threads)
    with _BACKENDS_LOCK:
        backend = _BACKENDS.get(key)
        if backend is None:
            backend = _BACKENDS[key] = _RapidBackend(folder, threads)
        return backend


def decode_for_ocr(image: bytes, max_side: int) -> tuple[Any, tuple[int, int], float]:
    """(PIL image ready for OCR, original (width, height), shrink factor): EXIF-upright, RGB/L, longest side
    at most ``max_side``. Raises ``OcrError(undecodable_image)``."""
    from PIL import Image, ImageOps, UnidentifiedImageError

    try:
        picture = Image.open(io.BytesIO(image))
        width, height = picture.size
        if picture.getexif().get(0x0112, 1) in (5, 6, 7, 8):  # EXIF orientations that turn the image a quarter
            width, height = height, width
        if picture.format == "JPEG" and max(width, height) > max_side:
            picture.draft("RGB", (max_side, max_side))  # decode at 1/2, 1/4 or 1/8 scale: fast on huge JPEGs
        picture = ImageOps.exif_transpose(picture)
        picture.load()
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError, Image.DecompressionBombError) as exc:
        raise OcrError(UNDECODABLE, f"not a readable image ({len(image)} bytes): {exc}") from exc
    if picture.mode not in ("RGB", "L", "RGBA", "LA"):
        picture = picture.convert("RGBA" if "transparency" in picture.info or picture.mode == "P" else "RGB")
    if max(picture.size) > max_side:
        shrink = max_side / max(picture.size)
        size = (max(1, round(picture.width * shrink)), max(1, round(picture.height * shrink)))
        picture = picture.resize(size, Image.Resampling.LANCZOS)
    scale = max(picture.size) / max(width, height)  # boxes are divided by it to land on the original pixels
    return picture, (width, height), scale


def _box(points: Sequence[Sequence[float]], scale: float) -> Box:
    corners = [(round(float(x) / scale, 1), round(float(y) / scale, 1)) for x, y in list(points)[:4]]
    if len(corners) != 4:
        raise OcrError(FAILED, f"engine returned a box with {len(corners)} corners")
    return (corners[0], corners[1], corners[2], corners[3])


class RapidOcrEngine:
    """``OcrEngine`` on RapidOCR with the bundled (or given) models; the model loads on the first ``read``."""

    name: ClassVar[str] = ENGINE_NAME

    def __init__(
        self, *, min_score: float = 0.5, max_side: int = 1600, model_dir: str | None = None, threads: int | None = None
    ) -> None:
        if not 0.0 <= min_score <= 1.0:
            raise ValueError(f"min_score must be in [0, 1], got {min_score}")
        if max_side < 32:
            raise ValueError(f"max_side must be at least 32 pixels, got {max_side}")
        if threads is not None and threads < 1:
            raise ValueError(f"threads must be at least 1, got {threads}")
        self.min_score = float(min_score)
        self.max_side = int(max_side)
        self.model_dir = model_dir
        self.threads = threads

    def __repr__(self) -> str:
        return f"RapidOcrEngine(min_score={self.min_score}, max_side={self.max_side}, model_dir={self.model_dir!r})"

    def _loaded(self) -> _RapidBackend:
        return _backend(self.model_dir, self.threads)

    @property
    def engine_version(self) -> str:
        return self._loaded().version

    @property
    def model_ids(self) -> tuple[str, ...]:
        return self._loaded().model_ids

    def read(self, image: bytes) -> OcrResult:
        """The lines read in ``image`` (encoded bytes) at or above ``min_score``, in the engine's reading order."""
        backend = self._loaded()
        picture, size, scale = decode_for_ocr(image, self.max_side)
        try:
            texts, scores, boxes = backend.read(picture)
        except OcrError:
            raise
        except Exception as exc:  # noqa: BLE001 - report the engine's failure with the image's reason code
            raise OcrError(FAILED, f"OCR failed on a {size[0]}x{size[1]} image: {type(exc).__name__}: {exc}") from exc
        lines = tuple(
            OcrLine(str(text), round(score, 5), _box(box, scale))
            for text, score, box in zip(texts, scores, boxes)
            if score >= self.min_score and str(text).strip()
        )
        return OcrResult(
            lines=lines,
            engine=self.name,
            engine_version=backend.version,
            model_ids=backend.model_ids,
            min_score=self.min_score,
            dropped=len(texts) - len(lines),
            image_size=size,
            scale=round(scale, 6),
        )


class OcrResource(ConfigurableResource):
    """Which offline OCR reads images for the text-integrity label, and how strictly."""

    min_score: float = Field(default=0.5, description="Lines the engine reads with lower confidence are dropped.")
    max_side: int = Field(default=1600, description="Images whose longest side is larger are shrunk to it first.")
    model_dir: Optional[str] = Field(
        default=None,
        description=f"Folder holding {', '.join(MODEL_FILES)}; unset means the models bundled in the rapidocr wheel.",
    )
    threads: Optional[int] = Field(default=None, description="onnxruntime threads per image; unset means all cores.")

    def engine(self) -> OcrEngine:
        """The configured engine; its model is loaded once per process and shared by every engine using it."""
        return RapidOcrEngine(
            min_score=self.min_score, max_side=self.max_side, model_dir=self.model_dir, threads=self.threads
        )
