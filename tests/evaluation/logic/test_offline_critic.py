"""The offline critic's critiques follow from the pixels: different images get different remarks, the same image
the same ones, and each sample of an item leads with another aspect."""

import io

from PIL import Image, ImageDraw

from assets.evaluation.logic.offline_critic import critique_of_image


def _png(image: Image.Image) -> bytes:
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def test_a_dark_flat_image_and_a_bright_tilted_one_get_the_remarks_their_pixels_call_for():
    dark = _png(Image.new("RGB", (200, 150), (20, 20, 24)))
    bright = Image.new("RGB", (300, 200), (235, 230, 220))
    ImageDraw.Draw(bright).line([(0, 120), (300, 80)], fill=(10, 10, 10), width=3)
    bright_png = _png(bright)
    exposure_of_dark = critique_of_image(dark, sample=1)
    assert "dark" in exposure_of_dark or "crushed" in exposure_of_dark
    assert "flat" in exposure_of_dark
    assert "tilts" in critique_of_image(bright_png, sample=0)
    assert critique_of_image(dark, 1) == critique_of_image(dark, 1)


def test_the_three_samples_of_an_item_differ_and_none_repeats_a_sentence():
    image = _png(Image.new("RGB", (120, 90), (200, 40, 40)))
    samples = [critique_of_image(image, k) for k in range(3)]
    assert len(set(samples)) == 3
    for text in samples:
        sentences = [s for s in text.split(". ") if s]
        assert len(sentences) == len(set(sentences))
