import io
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageDraw

from assets.designs.logic.design_model import Design, Element
from assets.designs.logic.render import RenderError, preview_difference, render_design, styled_font_name, to_png_bytes
from assets.designs.logic.fonts import (
    STANDARD_FONT_DIRS,
    FontError,
    FontResolver,
    category_of,
    compact_key,
    missing_glyphs,
    parse_request,
)


def _dejavu_dir() -> Path | None:
    for folder in STANDARD_FONT_DIRS:
        found = sorted(Path(folder).expanduser().rglob("DejaVuSans.ttf")) if Path(folder).expanduser().is_dir() else []
        if found:
            return found[0].parent
    return None


DEJAVU = _dejavu_dir()
pytestmark = pytest.mark.skipif(DEJAVU is None, reason="DejaVu fonts (fonts-dejavu-core) are not installed")
WHITE = (255, 255, 255)


def _fonts_dir(tmp_path: Path, files: dict[str, str]) -> Path:
    """A font folder of symlinks: link name → DejaVu file, so a test controls exactly what is 'installed'."""
    folder = tmp_path / "fonts"
    folder.mkdir(exist_ok=True)
    for link, target in files.items():
        (folder / link).symlink_to(DEJAVU / target)
    return folder


@pytest.fixture(scope="module")
def fonts() -> FontResolver:
    return FontResolver(font_dirs=[str(DEJAVU)])


def _solid(color, size=(10, 10)) -> Image.Image:
    return Image.new("RGBA", size, (*color, 255))


def _design(*elements: Element, width: int = 200, height: int = 150) -> Design:
    return Design("d1", width, height, tuple(elements))


def _render(design: Design, fonts: FontResolver, layers: dict | None = None, **kw):
    return render_design(design, (layers or {}).__getitem__, fonts=fonts, **kw)


def _pixels(image: Image.Image) -> np.ndarray:
    return np.asarray(image, dtype=np.int16)


def _ink(image: Image.Image) -> np.ndarray:
    """Boolean mask of pixels that are not the white page."""
    return (_pixels(image) != 255).any(axis=2)


def _text(element_id="t", **kw) -> Element:
    values = dict(left=20, top=20, width=160, height=60, color=(255, 0, 0), text="Hello", font="DejaVu Sans",
                  font_size=20)
    values.update(kw)
    return Element(element_id, "text", **values)


# --- rendering: layers ---------------------------------------------------------------------------------------


def test_render_is_deterministic_to_the_byte(fonts):
    checker = np.indices((16, 16)).sum(axis=0) % 2 * 255
    layer = Image.fromarray(np.dstack([checker, checker, 255 - checker, np.full_like(checker, 255)]).astype(np.uint8))
    design = _design(
        Element("bg", "background", 0, 0, 200, 150, color=(230, 220, 200)),
        Element("img", "image", 30, 20, 80, 60, angle=17.5, opacity=0.8, layer="L", effects=(("blur", 1.5),)),
        Element("img2", "image", 110, 70, 70, 50, layer="L", effects=(("downsample", 4.0),)),
        _text(text="Deterministic text, wrapped and justified", font="Playfair Display", text_align="justify",
              letter_spacing=1.0, line_height=1.3, angle=-5, font_size=14, top=80, width=120),
    )
    first = to_png_bytes(_render(design, fonts, {"L": layer}).image)
    second = to_png_bytes(render_design(design, {"L": layer.copy()}.__getitem__,
                                        fonts=FontResolver(font_dirs=[str(DEJAVU)])).image)
    assert first == second
    assert Image.open(io.BytesIO(first)).size == (200, 150)


def test_paint_order_first_is_bottom(fonts):
    layers = {"red": _solid((255, 0, 0)), "blue": _solid((0, 0, 255))}
    red_then_blue = _design(Element("a", "image", 50, 50, 40, 40, layer="red"),
                            Element("b", "image", 50, 50, 40, 40, layer="blue"))
    blue_then_red = _design(*reversed(red_then_blue.elements))
    assert _render(red_then_blue, fonts, layers).image.getpixel((70, 70)) == (0, 0, 255)
    assert _render(blue_then_red, fonts, layers).image.getpixel((70, 70)) == (255, 0, 0)


def test_layer_is_stretched_to_its_box(fonts):
    halves = np.zeros((10, 10, 4), np.uint8)
    halves[:, :5] = (255, 0, 0, 255)
    halves[:, 5:] = (0, 0, 255, 255)
    design = _design(Element("a", "image", 50, 30, 100, 40, layer="h"))
    image = _render(design, fonts, {"h": Image.fromarray(halves)}).image
    ink = _ink(image)
    ys, xs = np.nonzero(ink)
    assert (xs.min(), xs.max(), ys.min(), ys.max()) == (50, 149, 30, 69)  # exactly the 100 x 40 box
    assert image.getpixel((60, 50)) == (255, 0, 0) and image.getpixel((140, 50)) == (0, 0, 255)
    assert image.getpixel((49, 50)) == WHITE and image.getpixel((150, 50)) == WHITE


def test_rotation_is_clockwise_about_the_box_centre(fonts):
    # a 40 x 40 square at (100, 60): centre (120, 80). Rotated by 30 degrees its centroid stays put and its
    # extent grows to 40 * (cos 30 + sin 30) = 54.6 px.
    design = _design(Element("sq", "image", 100, 60, 40, 40, angle=30, layer="s"), width=240, height=160)
    image = _render(design, fonts, {"s": _solid((0, 0, 0))}).image
    darkness = 255 - _pixels(image)[:, :, 0]
    ys, xs = np.nonzero(darkness)
    weights = darkness[ys, xs]
    assert abs(np.average(xs, weights=weights) + 0.5 - 120) < 0.5
    assert abs(np.average(ys, weights=weights) + 0.5 - 80) < 0.5
    solid = darkness > 127
    assert abs((np.ptp(np.nonzero(solid.any(axis=0))[0]) + 1) - 54.6) <= 2

    # clockwise: the top-left half of a wide bar rotated 90 degrees clockwise ends up on the top.
    bar = np.zeros((10, 30, 4), np.uint8)
    bar[:, :15] = (255, 0, 0, 255)
    bar[:, 15:] = (0, 0, 255, 255)
    tall = _render(_design(Element("bar", "image", 70, 60, 60, 20, angle=90, layer="b")), fonts,
                   {"b": Image.fromarray(bar)}).image
    ys, xs = np.nonzero(_ink(tall))
    assert (xs.min(), xs.max(), ys.min(), ys.max()) == (90, 109, 40, 99)  # 20 wide, 60 tall, centre (100, 70)
    assert tall.getpixel((100, 50)) == (255, 0, 0) and tall.getpixel((100, 90)) == (0, 0, 255)


def test_opacity_half_blends_with_what_is_below(fonts):
    layers = {"red": _solid((255, 0, 0)), "blue": _solid((0, 0, 255))}
    on_white = _render(_design(Element("a", "image", 10, 10, 50, 50, opacity=0.5, layer="red")), fonts, layers).image
    # alpha 0.5 -> 128/255: R = 255; G = B = 255 * (1 - 128/255) = 127
    assert on_white.getpixel((30, 30)) == (255, 127, 127)
    on_blue = _render(_design(Element("b", "image", 0, 0, 100, 100, layer="blue"),
                              Element("a", "image", 10, 10, 50, 50, opacity=0.5, layer="red")), fonts, layers).image
    r, g, b = on_blue.getpixel((30, 30))
    assert abs(r - 128) <= 1 and g == 0 and abs(b - 127) <= 1
    assert on_blue.getpixel((80, 80)) == (0, 0, 255)
    hidden = _render(_design(Element("a", "image", 10, 10, 50, 50, opacity=0.0, layer="red")), fonts, layers).image
    assert not _ink(hidden).any()


@pytest.mark.parametrize("effect", [("blur", 2.0), ("downsample", 5.0)])
def test_effects_change_only_their_element(fonts, effect):
    checker = (np.indices((40, 40)).sum(axis=0) % 2 * 255).astype(np.uint8)
    layers = {"c": Image.fromarray(checker).convert("RGBA")}
    plain = _design(Element("bg", "background", 0, 0, 200, 150, color=(0, 128, 0)),
                    Element("a", "image", 20, 20, 40, 40, layer="c"),
                    Element("b", "image", 120, 60, 40, 40, layer="c"))
    touched = plain.with_element(1, effects=(effect,))
    diff = (_pixels(_render(plain, fonts, layers).image) != _pixels(_render(touched, fonts, layers).image)).any(axis=2)
    ys, xs = np.nonzero(diff)
    assert diff.sum() > 400  # a visible change to the 1,600-pixel box ...
    assert xs.min() >= 20 and xs.max() < 60 and ys.min() >= 20 and ys.max() < 60  # ... and only inside it


def test_downsample_makes_blocks_of_the_factor(fonts):
    noise = np.random.default_rng(7).integers(0, 256, (40, 40, 3), dtype=np.uint8)
    layers = {"n": Image.fromarray(noise)}
    image = _render(_design(Element("a", "image", 0, 0, 40, 40, layer="n", effects=(("downsample", 4.0),))),
                    fonts, layers).image
    pixels = _pixels(image)
    # 40 px / 4 = 10 x 10 source pixels, each the mean of a 4 x 4 patch and drawn back as a 4 x 4 block
    for top, left in [(0, 0), (4, 8), (36, 36)]:
        block = pixels[top:top + 4, left:left + 4]
        assert (block == block[0, 0]).all()
        assert np.abs(block[0, 0] - noise[top:top + 4, left:left + 4].reshape(-1, 3).mean(axis=0)).max() <= 1
    assert not (pixels[0:4, 0:8] == pixels[0, 0]).all()


def test_svg_takes_its_colour_and_keeps_its_shape(fonts):
    circle = Image.new("RGBA", (40, 40), (0, 0, 0, 0))
    ImageDraw.Draw(circle).ellipse((0, 0, 39, 39), fill=(255, 0, 0, 255))
    image = _render(_design(Element("s", "svg", 20, 20, 40, 40, layer="c", color=(0, 0, 255))), fonts,
                    {"c": circle}).image
    assert image.getpixel((40, 40)) == (0, 0, 255)  # the centre is recoloured
    assert image.getpixel((21, 21)) == WHITE  # the corner outside the circle stays transparent


def test_scale_multiplies_canvas_and_boxes(fonts):
    design = _design(Element("a", "image", 10, 10, 20, 20, layer="r"), width=50, height=40)
    image = _render(design, fonts, {"r": _solid((255, 0, 0))}, scale=2).image
    assert image.size == (100, 80)
    ys, xs = np.nonzero(_ink(image))
    assert (xs.min(), xs.max(), ys.min(), ys.max()) == (20, 59, 20, 59)


# --- rendering: text ----------------------------------------------------------------------------------------


def test_text_ink_is_its_colour_and_inside_its_box(fonts):
    result = _render(_design(_text(text="Hello world again and again", font_size=18)), fonts)
    pixels = _pixels(result.image)
    ink = _ink(result.image)
    ys, xs = np.nonzero(ink)
    assert ink.sum() > 200
    assert xs.min() >= 20 and xs.max() < 180 and ys.min() >= 20 and ys.max() < 80
    assert (pixels[ink][:, 0] == 255).all()  # red over white: only G and B fall with coverage
    assert (pixels[ink][:, 1] == pixels[ink][:, 2]).all()
    assert (pixels[ink][:, 1] == 0).sum() > 50  # solid glyph cores
    assert result.fonts_used["t"].family == "DejaVu Sans" and result.fonts_used["t"].how == "exact"
    assert result.warnings == []


def _ink_columns(result) -> tuple[int, int]:
    xs = np.nonzero(_ink(result.image).any(axis=0))[0]
    return int(xs.min()), int(xs.max())


def test_alignment_moves_ink_to_its_side(fonts):
    box = dict(left=20, top=20, width=160, height=40, text="Hi")
    left = _ink_columns(_render(_design(_text(text_align="left", **box)), fonts))
    right = _ink_columns(_render(_design(_text(text_align="right", **box)), fonts))
    centre = _ink_columns(_render(_design(_text(text_align="center", **box)), fonts))
    assert left[0] < 25 and left[1] < 60  # hugs the left edge (x = 20)
    assert right[1] > 175 and right[0] > 140  # hugs the right edge (x = 180)
    assert abs((centre[0] + centre[1]) / 2 - 100) <= 2  # centred on x = 100


def test_justify_fills_every_line_but_the_last(fonts):
    words = "aa bb cc dd ee ff gg hh ii jj kk ll"
    result = _render(_design(_text(text=words, text_align="justify", width=120, height=100, font_size=16,
                                   line_height=1.5)), fonts)
    ink = _ink(result.image)
    rows = np.nonzero(ink.any(axis=1))[0]
    lines = np.split(rows, np.nonzero(np.diff(rows) > 1)[0] + 1)
    assert len(lines) >= 2
    right_edges = [np.nonzero(ink[line].any(axis=0))[0].max() for line in lines]
    assert all(edge >= 136 for edge in right_edges[:-1])  # justified lines reach the right edge (x = 140)
    assert right_edges[-1] < 130  # the last line stays left-aligned


def test_capitalize_upper_cases(fonts):
    shouted = to_png_bytes(_render(_design(_text(text="abc xyz", capitalize=True)), fonts).image)
    upper = to_png_bytes(_render(_design(_text(text="ABC XYZ")), fonts).image)
    lower = to_png_bytes(_render(_design(_text(text="abc xyz")), fonts).image)
    assert shouted == upper and shouted != lower


def test_letter_spacing_and_line_height(fonts):
    plain = _ink_columns(_render(_design(_text(text="HHHH")), fonts))
    spaced = _ink_columns(_render(_design(_text(text="HHHH", letter_spacing=5)), fonts))
    assert (spaced[1] - spaced[0]) - (plain[1] - plain[0]) == 15  # 3 gaps of 5 px

    def line_tops(line_height):
        ink = _ink(_render(_design(_text(text="H\nH", line_height=line_height, height=100)), fonts).image)
        rows = np.nonzero(ink.any(axis=1))[0]
        return rows[np.nonzero(np.diff(rows) > 1)[0] + 1][0] - rows[0]

    assert line_tops(1.0) == 20 and line_tops(2.0) == 40  # baselines line_height x 20 px apart


def test_text_words_wrap_and_overflow_is_reported(fonts):
    wrapped = _render(_design(_text(text="one two three four five six", width=80, height=100)), fonts)
    rows = np.nonzero(_ink(wrapped.image).any(axis=1))[0]
    assert len(np.split(rows, np.nonzero(np.diff(rows) > 1)[0] + 1)) >= 3
    assert wrapped.warnings == []
    clipped = _render(_design(_text(text="one two three four five six", width=80, height=20)), fonts)
    assert any("overflows its box" in w and "element 0 (t)" in w for w in clipped.warnings)
    ys = np.nonzero(_ink(clipped.image).any(axis=1))[0]
    assert ys.max() < 40  # clipped at the box bottom (top 20 + height 20)


def test_styled_font_name_adds_only_missing_style_words():
    assert styled_font_name("Roboto") == "Roboto" and styled_font_name(None) is None  # no flags: unchanged
    assert styled_font_name("Roboto", bold=True) == "Roboto Bold"
    assert styled_font_name("Roboto", bold=True, italic=True) == "Roboto Bold Italic"
    assert styled_font_name("Roboto Black", bold=True) == "Roboto Black"  # already heavier than bold
    assert styled_font_name("Roboto Light", bold=True) == "Roboto Light Bold"  # the last weight word wins
    assert styled_font_name("Lato Italic", italic=True) == "Lato Italic"
    assert styled_font_name(None, bold=True) == styled_font_name("  ", bold=True) == "DejaVu Sans Bold"


def test_bold_and_italic_pick_the_family_faces(fonts):
    def face(**kw):
        result = _render(_design(_text(text="Bold move", **kw)), fonts)
        return result.fonts_used["t"], result

    regular, plain = face()
    bold, heavy = face(bold=True)
    italic, _ = face(italic=True)
    both, _ = face(bold=True, italic=True)
    assert (regular.path.endswith("DejaVuSans.ttf"), regular.how) == (True, "exact")
    assert bold.path.endswith("DejaVuSans-Bold.ttf") and "Bold" in bold.style and bold.how == "exact"
    assert italic.path.endswith("DejaVuSans-Oblique.ttf") and both.path.endswith("DejaVuSans-BoldOblique.ttf")
    # the bold face lays down more ink than the regular one (heavier strokes), and the pixels differ
    assert to_png_bytes(heavy.image) != to_png_bytes(plain.image)
    assert _ink(heavy.image).sum() > _ink(plain.image).sum() * 1.15
    # a family that is not installed keeps its style through the category rule: Playfair -> DejaVu Serif Bold
    serif, _ = face(font="Playfair Display", bold=True)
    assert serif.path.endswith("DejaVuSerif-Bold.ttf") and serif.how == "category"
    # no font name at all: the last-resort family, still bold
    nameless, _ = face(font=None, bold=True)
    assert nameless.path.endswith("DejaVuSans-Bold.ttf")
    # deterministic: a fresh resolver gives the same bytes
    again = render_design(_design(_text(text="Bold move", bold=True)), {}.__getitem__,
                          fonts=FontResolver(font_dirs=[str(DEJAVU)]))
    assert to_png_bytes(again.image) == to_png_bytes(heavy.image)


def test_cjk_text_without_a_cjk_font_is_reported(fonts):
    result = _render(_design(_text(text="你好 world", font="Noto Sans CJK")), fonts)
    choice = result.fonts_used["t"]
    assert (choice.family, choice.how, choice.category) == ("DejaVu Sans", "category", "cjk")
    assert any("no glyph for '你好'" in w for w in result.warnings)


@pytest.mark.skipif(FontResolver().cjk_choice(None) is None, reason="no CJK font installed")
def test_cjk_text_switches_to_an_installed_cjk_font():
    resolver = FontResolver()
    choice, missing = resolver.resolve_for_text("Montserrat", "你好")
    assert choice.how == "cjk" and missing == ""


# --- fonts ----------------------------------------------------------------------------------------------------


def test_parse_request_and_keys():
    assert compact_key("Open Sans") == compact_key("OpenSans") == compact_key("open-sans") == "opensans"
    assert parse_request("Roboto Bold") == parse_request("Roboto-Bold")
    request = parse_request("OpenSans-SemiBoldItalic")
    assert (request.family_key, request.weight, request.italic, request.width) == ("opensans", 600, True, "normal")
    assert parse_request("Playfair Display").family_key == "playfairdisplay"  # "Display" is not a style word
    assert parse_request("Times New Roman").family_key == "timesnewroman"
    assert parse_request("DejaVu Sans Condensed").width == "condensed"


def test_category_of_names():
    assert category_of("Playfair Display") == "serif"
    assert category_of("Montserrat") == "sans"
    assert category_of("Roboto Mono") == "mono"
    assert category_of("Some Slab Face") == "serif"
    assert category_of("Unknown Sans Serif") == "sans"
    assert category_of("Lobster") == "display" and category_of("Fancy Script") == "display"
    assert category_of("Noto Sans CJK") == "cjk" and category_of("WenQuanYi Micro Hei") == "cjk"
    assert category_of("Qwertyuiop") is None


def test_font_rules_exact_category_fallback(tmp_path):
    folder = _fonts_dir(tmp_path, {"DejaVuSans.ttf": "DejaVuSans.ttf", "DejaVuSans-Bold.ttf": "DejaVuSans-Bold.ttf",
                                   "DejaVuSans-Oblique.ttf": "DejaVuSans-Oblique.ttf", "DejaVuSerif.ttf": "DejaVuSerif.ttf",
                                   "DejaVuSansMono.ttf": "DejaVuSansMono.ttf"})
    resolver = FontResolver(font_dirs=[folder])

    def rule(name):
        choice = resolver.resolve(name)
        return choice.family, choice.style, choice.how

    assert rule("DejaVu Sans Bold") == ("DejaVu Sans", "Bold", "exact")
    assert rule("dejavu-sans") == ("DejaVu Sans", "Book", "exact")
    assert rule("Montserrat") == ("DejaVu Sans", "Book", "category")
    assert rule("Roboto Bold") == ("DejaVu Sans", "Bold", "category")
    assert rule("Open Sans Italic") == ("DejaVu Sans", "Oblique", "category")
    assert rule("Playfair Display") == ("DejaVu Serif", "Book", "category")
    assert rule("Courier New") == ("DejaVu Sans Mono", "Book", "category")  # no Liberation Mono installed
    assert rule("Lobster") == ("DejaVu Sans", "Book", "category")  # display → the sans list
    assert rule("Qwertyuiop") == ("DejaVu Sans", "Book", "fallback")
    assert rule(None) == ("DejaVu Sans", "Book", "fallback")
    assert rule("Noto Sans CJK") == ("DejaVu Sans", "Book", "category")
    assert resolver.resolve("Montserrat").category == "sans"
    assert resolver.resolve("Montserrat") is resolver.resolve("Montserrat")  # cached, no rescan


def test_font_rules_file_names_alias_and_last_resort(tmp_path):
    # A file whose internal name differs is still found by its file name; an alias beats the category.
    folder = _fonts_dir(tmp_path, {"Montserrat-Regular.ttf": "DejaVuSerif.ttf",
                                   "LiberationMono-Regular.ttf": "DejaVuSansMono.ttf",
                                   "DejaVuSerif.ttf": "DejaVuSerif.ttf"})
    resolver = FontResolver(font_dirs=[folder])
    montserrat = resolver.resolve("Montserrat Bold")
    assert montserrat.how == "exact" and Path(montserrat.path).name == "Montserrat-Regular.ttf"
    courier = resolver.resolve("Courier New")
    assert courier.how == "alias" and Path(courier.path).name == "LiberationMono-Regular.ttf"
    # no DejaVu Sans here: a sans name falls through its list to the last resort, the first face by family.
    last = resolver.resolve("Open Sans")
    assert (last.how, last.category, last.family) == ("fallback", "sans", "DejaVu Sans Mono")

    with pytest.raises(FontError, match="no font files"):
        FontResolver(font_dirs=[tmp_path / "empty"]).resolve("Montserrat")


def test_extra_dirs_add_to_the_standard_ones(tmp_path):
    folder = _fonts_dir(tmp_path, {"Zilla-Custom.ttf": "DejaVuSerif.ttf"})
    resolver = FontResolver(font_dirs=[str(DEJAVU)], extra_dirs=[folder])
    assert resolver.resolve("Zilla Custom").how == "exact"
    assert resolver.resolve("DejaVu Sans").how == "exact"


def test_missing_glyphs(fonts):
    choice = fonts.resolve("DejaVu Sans")
    assert missing_glyphs(choice, "Café €5 — ok") == ""
    assert missing_glyphs(choice, "中文中 abc") == "中文"


# --- errors ---------------------------------------------------------------------------------------------------


def test_bad_records_name_the_element(fonts):
    with pytest.raises(RenderError, match=r"element 1 \(b\).*opacity") as caught:
        _render(_design(Element("a", "background", 0, 0, 10, 10, color=(1, 2, 3)),
                        Element("b", "image", 0, 0, 10, 10, opacity=1.5, layer="x")), fonts)
    assert caught.value.reason_code == "bad_opacity"
    with pytest.raises(RenderError) as caught:
        _render(_design(Element("a", "image", 0, 0, 10, 10, layer="missing")), fonts, {})
    assert caught.value.reason_code == "layer_unavailable" and "'missing'" in str(caught.value)
    with pytest.raises(RenderError) as caught:
        _render(_design(Element("a", "image", 0, 0, 10, 10, layer="r", effects=(("sharpen", 1.0),))), fonts,
                {"r": _solid((1, 1, 1))})
    assert caught.value.reason_code == "unknown_effect"
    with pytest.raises(RenderError) as caught:
        _render(_design(_text(text_align="middle")), fonts)
    assert caught.value.reason_code == "bad_text_align"
    with pytest.raises(RenderError) as caught:
        _render(_design(_text(), _text()), fonts)
    assert caught.value.reason_code == "duplicate_element_id"


def test_values_beyond_the_bounds_are_rejected_with_a_reason_not_drawn(fonts):
    def code(design, layers=None):
        with pytest.raises(RenderError) as caught:
            _render(design, fonts, layers)
        return caught.value.reason_code

    assert code(_design(_text(font_size=100_000.0))) == "font_too_large"  # FreeType itself refuses such sizes
    assert code(_design(Element("a", "image", -5e14, 0, 1e15, 100, color=(1, 2, 3)))) == "element_too_large"
    assert code(Design("big", 100_000, 100_000, (Element("a", "background", 0, 0, 10, 10, color=(1, 2, 3)),))) == "canvas_too_large"
    assert code(_design(Element("a", "image", 0, 0, 10, 10, layer="r", effects=(("blur", 1e12),))),
                {"r": _solid((1, 1, 1))}) == "bad_effect"


def test_odd_but_drawable_values_render(fonts):
    layers = {"r": _solid((200, 10, 10))}
    turned = _render(_design(Element("a", "image", 20, 20, 40, 30, angle=720.0, layer="r")), fonts, layers)
    upright = _render(_design(Element("a", "image", 20, 20, 40, 30, layer="r")), fonts, layers)
    assert (_pixels(turned.image) == _pixels(upright.image)).all()
    clear = _render(_design(Element("a", "image", 20, 20, 40, 30, opacity=0.0, layer="r"), _text(opacity=0.0)), fonts, layers)
    assert not _ink(clear.image).any()


def test_invisible_elements_warn_instead_of_failing(fonts):
    result = _render(_design(Element("a", "image", 0, 0, 10, 10), _text("t", text=""),
                             Element("c", "image", 5, 5, 0.2, 10, color=(0, 0, 0)), _text("u", font_size=0.4)), fonts)
    assert len(result.warnings) == 4 and not _ink(result.image).any()
    assert "font size is under one pixel" in result.warnings[3]
    assert "element 0 (a)" in result.warnings[0] and "element 2 (c)" in result.warnings[2]


# --- preview difference and PNG bytes --------------------------------------------------------------------------


def test_preview_difference_values():
    base = Image.fromarray(np.random.default_rng(1).integers(20, 200, (30, 40, 3), dtype=np.uint8))
    assert preview_difference(base, base.copy()) == 0.0
    shifted = Image.fromarray((np.asarray(base, dtype=np.int16) + 10).astype(np.uint8))
    assert preview_difference(base, shifted) == pytest.approx(10.0)
    assert preview_difference(Image.new("RGB", (8, 8), (0, 0, 0)), Image.new("RGB", (8, 8), (255, 255, 255))) == 255.0
    # a preview at another size is resized first: a uniform grey at double size is still exactly 60 away.
    grey = Image.new("RGB", (40, 30), (100, 100, 100))
    assert preview_difference(grey, Image.new("RGB", (80, 60), (160, 160, 160))) == pytest.approx(60.0)
    # a transparent preview is seen over the white page
    assert preview_difference(Image.new("RGB", (5, 5), WHITE), Image.new("RGBA", (5, 5), (0, 0, 0, 0))) == 0.0


def test_png_bytes_ignore_metadata():
    image = Image.new("RGB", (12, 9), (10, 20, 30))
    tagged = image.copy()
    tagged.info.update({"dpi": (300, 300), "comment": "hello", "icc_profile": b"not really"})
    assert to_png_bytes(image) == to_png_bytes(tagged)
    assert Image.open(io.BytesIO(to_png_bytes(image))).getpixel((3, 3)) == (10, 20, 30)
