import io
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from assets.context_canvas.logic.contact_sheet import band_height, contact_sheet, default_labels, label_font, label_font_size


def _png(size, colour, mode="RGB"):
    buffer = io.BytesIO()
    Image.new(mode, size, colour).save(buffer, format="PNG")
    return buffer.getvalue()


RED = _png((100, 50), (255, 0, 0))    # 2:1 -> 240 px wide at height 120
BLUE = _png((60, 60), (0, 0, 255))    # 1:1 -> 120 px wide at height 120


def _open(data):
    with Image.open(io.BytesIO(data)) as image:
        assert image.format == "PNG"
        return np.asarray(image.convert("RGB"))


def test_layout_widths_band_and_gap():
    assert label_font_size(120) == 12 and band_height(120) == 22  # max(12, 7.2) px font, 1.8 x for the band
    pixels = _open(contact_sheet([RED, BLUE], ["Image 1", "Image 2"], height=120, gap=16))
    assert pixels.shape == (22 + 120, 240 + 16 + 120, 3)
    images = pixels[22:]
    assert (images[:, :240] == [255, 0, 0]).all()          # image 1 fills its columns
    assert (images[:, 240:256] == 255).all()               # the gap is white
    assert (images[:, 256:] == [0, 0, 255]).all()          # image 2 after the gap
    band = pixels[:22]
    assert (band[:, :240] < 128).any() and (band[:, 256:] < 128).any()  # each label leaves ink above its image
    assert (band[:, 240:256] == 255).all()                 # no label ink over the gap


def test_default_labels_and_deterministic_bytes():
    assert default_labels(3) == ["Image 1", "Image 2", "Image 3"]
    first = contact_sheet([RED, BLUE], height=64, gap=8)
    assert first == contact_sheet([RED, BLUE], None, height=64, gap=8)
    assert first == contact_sheet([RED, BLUE], default_labels(2), height=64, gap=8)
    assert first != contact_sheet([RED, BLUE], ["Image 2", "Image 1"], height=64, gap=8)


def test_long_label_is_cut_to_its_image():
    pixels = _open(contact_sheet([BLUE, BLUE], ["A very long label that cannot fit", "B"], height=60, gap=20))
    band = band_height(60)
    assert pixels.shape[1] == 60 + 20 + 60
    assert (pixels[:band, 60:80] == 255).all()  # the long label stops at its own image's edge
    assert (pixels[:band, :60] < 128).any()


def test_transparency_on_white_and_exif_rotation():
    clear = _png((10, 10), (0, 0, 0, 0), mode="RGBA")
    pixels = _open(contact_sheet([clear], ["x"], height=20, gap=0))
    assert (pixels[band_height(20):] == 255).all()
    stored = Image.new("RGB", (60, 30), (0, 128, 0))
    exif = Image.Exif()
    exif[0x0112] = 6  # viewers rotate it upright: 30 x 60
    buffer = io.BytesIO()
    stored.save(buffer, format="JPEG", exif=exif)
    pixels = _open(contact_sheet([buffer.getvalue()], ["x"], height=120, gap=0))
    assert pixels.shape[1] == 60  # upright 30 x 60 scaled to height 120


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="at least one image"):
        contact_sheet([], [])
    with pytest.raises(ValueError, match="2 image\\(s\\) but 1 label"):
        contact_sheet([RED, BLUE], ["only one"])
    with pytest.raises(ValueError, match="image 2 does not decode"):
        contact_sheet([RED, b"not an image"])
    with pytest.raises(ValueError, match="height must be >= 1"):
        contact_sheet([RED], height=0)


def test_label_font_is_dejavu_when_installed():
    if not Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf").is_file():
        pytest.skip("DejaVu Sans is not installed here")
    assert label_font(20).getname() == ("DejaVu Sans", "Book")
