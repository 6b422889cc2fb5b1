import io
import logging
import socket
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFont

from resources.ocr import (
    CLS_MODEL,
    DET_MODEL,
    REC_MODEL,
    UNAVAILABLE,
    UNDECODABLE,
    OcrEngine,
    OcrError,
    OcrResource,
    OcrResult,
    RapidOcrEngine,
    onnx_metadata_keys,
)

FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"


def _png(picture: Image.Image) -> bytes:
    buffer = io.BytesIO()
    picture.save(buffer, "PNG")
    return buffer.getvalue()


def _text_image(size=(900, 200), at=(30, 60), font_size=64) -> bytes:
    picture = Image.new("RGB", size, "white")
    ImageDraw.Draw(picture).text(at, "Moonlight before my bed", font=ImageFont.truetype(FONT, font_size), fill="black")
    return _png(picture)


def _painting() -> bytes:
    """A smooth colour gradient with noise: texture but no strokes that look like letters."""
    rng = np.random.default_rng(0)
    ramp = np.linspace(0, 255, 640)[None, :, None] * np.ones((480, 1, 3)) * np.array([0.9, 0.7, 0.5])
    pixels = np.clip(ramp + rng.normal(0, 20, ramp.shape), 0, 255).astype(np.uint8)
    return _png(Image.fromarray(pixels))


@pytest.fixture(scope="module")
def offline(tmp_path_factory):
    """No network and an unusable HOME while the engine loads and reads: the bundled models must suffice."""

    def refuse(*args, **kwargs):
        raise AssertionError("OCR tried to open a network connection")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(socket.socket, "connect", refuse)
        patch.setattr(socket, "create_connection", refuse)
        patch.setenv("HOME", str(tmp_path_factory.mktemp("home") / "missing"))
        yield


@pytest.fixture(scope="module")
def engine(offline) -> OcrEngine:
    # max_side 900 (default 1600) so the one text image below is also shrunk: one OCR call checks both.
    built = OcrResource(max_side=900, threads=2).engine()
    assert isinstance(built, OcrEngine) and built.name == "rapidocr"
    return built


@pytest.fixture(scope="module")
def text_result(engine) -> OcrResult:
    # 1800x800, shrunk to 900x400 for OCR; the text spans about x = 60..1720, y = 330..480 in these pixels.
    return engine.read(_text_image(size=(1800, 800), at=(60, 330), font_size=128))


def test_reads_rendered_text(text_result):
    assert " ".join(line.text for line in text_result.lines).lower() == "moonlight before my bed"
    assert all(line.score >= 0.5 for line in text_result.lines)


def test_large_image_is_shrunk_and_boxes_map_back(text_result):
    assert text_result.scale == 0.5 and text_result.image_size == (1800, 800)
    assert all(len(line.box) == 4 for line in text_result.lines)
    xs = [x for line in text_result.lines for x, _ in line.box]
    ys = [y for line in text_result.lines for _, y in line.box]
    assert min(xs) < 120 and max(xs) > 1500  # original pixels, not the 900-wide copy OCR saw
    assert 250 < min(ys) and max(ys) < 560


def test_result_names_engine_and_models(text_result):
    assert text_result.engine == "rapidocr"
    assert text_result.engine_version.startswith("3.10.0+onnxruntime-")
    assert [model_id.split("@")[0] for model_id in text_result.model_ids] == [DET_MODEL, CLS_MODEL, REC_MODEL]
    assert all(len(model_id.split("@sha256:")[1]) == 16 for model_id in text_result.model_ids)
    assert text_result.provenance()["min_score"] == 0.5


def test_painting_without_text_gives_no_lines(engine, capfd):
    result = engine.read(_painting())
    assert result.lines == () and result.text == "" and result.scale == 1.0
    assert "result is empty" not in capfd.readouterr().err  # RapidOCR's no-text warning is filtered
    assert logging.getLogger("RapidOCR").level == logging.WARNING


class _StubBackend:
    """Stands in for the loaded model: fixed lines, so filtering and box mapping are checked by hand."""

    version = "stub"
    model_ids = ("stub.onnx@sha256:0000000000000000",)

    def read(self, picture):
        assert picture.size == (100, 50)  # 200x100 shrunk to max_side 100
        box = [[10, 5], [30, 5], [30, 15], [10, 15]]
        return ["keep", "low", " ", "edge"], [0.9, 0.49, 0.99, 0.5], [box, box, box, box]


def test_min_score_drops_and_counts_lines_and_scales_boxes(monkeypatch):
    engine = RapidOcrEngine(min_score=0.5, max_side=100)
    monkeypatch.setattr(engine, "_loaded", lambda: _StubBackend())
    result = engine.read(_png(Image.new("RGB", (200, 100), "white")))
    assert [(line.text, line.score) for line in result.lines] == [("keep", 0.9), ("edge", 0.5)]
    assert result.dropped == 2  # "low" under 0.5, and the blank line
    assert result.lines[0].box == ((20.0, 10.0), (60.0, 10.0), (60.0, 30.0), (20.0, 30.0))
    assert result.scale == 0.5 and result.engine_version == "stub"


def test_undecodable_bytes(engine):
    with pytest.raises(OcrError) as caught:
        engine.read(b"not an image")
    assert caught.value.reason_code == UNDECODABLE


def test_missing_model_folder_is_unavailable(tmp_path):
    with pytest.raises(OcrError) as caught:
        RapidOcrEngine(model_dir=str(tmp_path)).read(_text_image())
    assert caught.value.reason_code == UNAVAILABLE and DET_MODEL in str(caught.value)


def _entry(key: bytes, value: bytes) -> bytes:
    body = b"\x0a" + bytes([len(key)]) + key + b"\x12" + bytes([len(value)]) + value
    return b"\x72" + bytes([len(body)]) + body  # field 14 (metadata_props), length-delimited


def test_onnx_metadata_keys_reads_top_level_entries():
    model = b"\x08\x07" + b"\x12\x03abc" + _entry(b"character", b"xy") + _entry(b"shape", b"1")
    assert onnx_metadata_keys(model) == {"character", "shape"}
    assert onnx_metadata_keys(b"\x08\x07") == set()
    with pytest.raises(ValueError):
        onnx_metadata_keys(b"\x12\x09ab")  # a field longer than the file


def test_recogniser_without_character_table_is_refused(tmp_path: Path):
    for name in (DET_MODEL, CLS_MODEL):
        (tmp_path / name).write_bytes(b"\x08\x07")
    (tmp_path / REC_MODEL).write_bytes(b"\x08\x07" + _entry(b"shape", b"1"))
    with pytest.raises(OcrError, match="character table") as caught:
        RapidOcrEngine(model_dir=str(tmp_path)).read(_text_image())
    assert caught.value.reason_code == UNAVAILABLE


def test_bad_settings_are_refused():
    with pytest.raises(ValueError, match="min_score"):
        RapidOcrEngine(min_score=1.5)
    with pytest.raises(ValueError, match="max_side"):
        RapidOcrEngine(max_side=10)
