"""Deterministic synthetic images, transformations and bad files.

Why: the bundled sample corpus and the de-duplication benchmark need varied,
structured pictures in three domains (photography, painting, virtual) plus
controlled near-duplicates and look-alike negatives, without scraped or
copyrighted content and without committing binaries.  Everything here is a
pure function of its arguments: a given seed (an ``int`` or a
``numpy.random.Generator``) yields byte-identical output on the same numpy and
Pillow versions.  Array maths uses only arithmetic (no per-pixel
transcendental functions) so results do not depend on SIMD code paths.
"""

from __future__ import annotations

import colorsys
import io
import math
from typing import Literal

import numpy as np
from PIL import Image, ImageDraw, ImageEnhance, ImageFilter, ImageFont, ImageOps

Seed = int | np.random.Generator
Size = tuple[int, int]
Colour = tuple[int, int, int]
Anchor = Literal["top-left", "top-right", "bottom-left", "bottom-right", "center"]

MAX_CROP_FRACTION = 0.15
MAX_ROTATION_DEGREES = 15.0
MAX_OVERLAY_AREA_FRACTION = 0.10
MAX_SCENE_CROP_OVERLAP = 0.20
DEFAULT_SCENE_SIZE: Size = (2400, 900)
ANCHORS: tuple[Anchor, ...] = ("top-left", "top-right", "bottom-left", "bottom-right", "center")

_OUTLINE: Colour = (22, 20, 34)
_MIN_SIDE = 16


def make_rng(seed: Seed) -> np.random.Generator:
    """Accept an int seed or an existing Generator (which is then advanced)."""
    if isinstance(seed, np.random.Generator):
        return seed
    return np.random.default_rng(seed)


# --------------------------------------------------------------------------
# shared helpers
# --------------------------------------------------------------------------


def _check_size(size: Size) -> Size:
    width, height = int(size[0]), int(size[1])
    if width < _MIN_SIDE or height < _MIN_SIDE:
        raise ValueError(f"size must be at least {_MIN_SIDE}x{_MIN_SIDE}, got {size}")
    return width, height


def _hsv(hue: float, sat: float, val: float) -> np.ndarray:
    return np.array(colorsys.hsv_to_rgb(hue % 1.0, sat, val), dtype=np.float32) * 255.0


def _rgb(colour: np.ndarray) -> Colour:
    r, g, b = np.clip(np.rint(colour), 0, 255).astype(int).tolist()
    return r, g, b


def _mix(a: np.ndarray, b: np.ndarray, t: float | np.ndarray) -> np.ndarray:
    return a + (b - a) * t


def _to_image(canvas: np.ndarray) -> Image.Image:
    return Image.fromarray(np.clip(np.rint(canvas), 0, 255).astype(np.uint8))


def _smooth_profile(rng: np.random.Generator, n: int, cells: int, octaves: int = 3) -> np.ndarray:
    """1-D value noise in [-1, 1] (smoothstep-interpolated random control points)."""
    x = np.arange(n, dtype=np.float64) / max(n - 1, 1)
    total = np.zeros(n)
    amplitude, norm = 1.0, 0.0
    for octave in range(octaves):
        count = cells * 2**octave
        control = rng.uniform(-1.0, 1.0, count + 1)
        pos = x * count
        index = np.minimum(pos.astype(np.int64), count - 1)
        t = pos - index
        t = t * t * (3.0 - 2.0 * t)
        total += amplitude * (control[index] * (1.0 - t) + control[index + 1] * t)
        norm += amplitude
        amplitude *= 0.5
    return total / norm


def _noise_field(rng: np.random.Generator, size: Size, cells: int) -> np.ndarray:
    """Smooth 2-D noise in roughly [0, 1], shape (height, width)."""
    width, height = size
    cells_y = max(2, round(cells * height / width))
    grid = rng.random((cells_y + 1, cells + 1), dtype=np.float32)
    field = Image.fromarray(grid).resize((width, height), Image.Resampling.BICUBIC)
    return np.asarray(field, dtype=np.float32)


def _grids(size: Size) -> tuple[np.ndarray, np.ndarray]:
    width, height = size
    return (
        np.arange(width, dtype=np.float32)[None, :],
        np.arange(height, dtype=np.float32)[:, None],
    )


def _blur(canvas: np.ndarray, radius: float) -> np.ndarray:
    blurred = _to_image(canvas).filter(ImageFilter.GaussianBlur(radius))
    return np.asarray(blurred, dtype=np.float32).copy()


def _shade(colour: Colour, factor: float) -> Colour:
    return _rgb(np.array(colour, dtype=np.float32) * factor)


def _harmonious_palette(
    rng: np.random.Generator, count: int, sat: tuple[float, float], val: tuple[float, float]
) -> list[Colour]:
    """Colours around one to three hue centres (analogous, complementary or triadic)."""
    base = rng.random()
    centres = [base + offset for offset in ((0.0,), (0.0, 0.5), (0.0, 1 / 3, 2 / 3))[rng.integers(3)]]
    palette = []
    for i in range(count):
        hue = centres[i % len(centres)] + rng.normal(0.0, 0.04)
        palette.append(_rgb(_hsv(hue, rng.uniform(*sat), rng.uniform(*val))))
    return palette


# --------------------------------------------------------------------------
# photography
# --------------------------------------------------------------------------

# HSV of (sky top, sky at horizon, light source, far land, near land, cloud) per mood
# fmt: off
_MOODS: tuple[tuple[tuple[float, float, float], ...], ...] = (
    (  # day
        (0.60, 0.55, 0.85), (0.55, 0.20, 0.98), (0.14, 0.10, 1.00),
        (0.38, 0.35, 0.55), (0.30, 0.55, 0.40), (0.0, 0.0, 0.97),
    ),
    (  # dusk
        (0.70, 0.55, 0.45), (0.06, 0.65, 0.98), (0.10, 0.45, 1.00),
        (0.75, 0.30, 0.35), (0.80, 0.35, 0.18), (0.02, 0.35, 0.90),
    ),
    (  # night
        (0.62, 0.70, 0.12), (0.63, 0.55, 0.35), (0.15, 0.05, 0.95),
        (0.63, 0.35, 0.18), (0.63, 0.30, 0.08), (0.63, 0.15, 0.45),
    ),
    (  # overcast
        (0.58, 0.08, 0.70), (0.58, 0.05, 0.88), (0.14, 0.05, 0.98),
        (0.30, 0.12, 0.50), (0.28, 0.25, 0.35), (0.0, 0.0, 0.80),
    ),
    (  # desert
        (0.57, 0.45, 0.90), (0.10, 0.25, 0.98), (0.12, 0.20, 1.00),
        (0.08, 0.45, 0.75), (0.06, 0.60, 0.60), (0.0, 0.0, 1.00),
    ),
    (  # dawn over snow
        (0.95, 0.35, 0.70), (0.12, 0.40, 1.00), (0.13, 0.30, 1.00),
        (0.58, 0.20, 0.65), (0.55, 0.10, 0.90), (0.97, 0.15, 0.95),
    ),
)
# fmt: on


def _mood_colours(rng: np.random.Generator) -> list[np.ndarray]:
    mood = _MOODS[rng.integers(len(_MOODS))]
    return [
        _hsv(
            h + rng.normal(0, 0.03),
            float(np.clip(s + rng.normal(0, 0.08), 0, 1)),
            float(np.clip(v + rng.normal(0, 0.05), 0.03, 1)),
        )
        for h, s, v in mood
    ]


def _hill_layers(
    canvas: np.ndarray, rng: np.random.Generator, horizon: float, far: np.ndarray, haze: np.ndarray, wide: bool
) -> None:
    height, width = canvas.shape[:2]
    _, yy = _grids((width, height))
    layers = int(rng.integers(2, 5))
    for k in range(layers):
        nearness = (k + 1) / layers
        base = horizon - height * rng.uniform(0.02, 0.22) * (1.0 - 0.6 * nearness)
        amplitude = height * rng.uniform(0.03, 0.14)
        cells = int(rng.integers(2, 6)) * (3 if wide else 1)
        profile = base + amplitude * _smooth_profile(rng, width, cells)
        colour = _mix(far, haze, 0.75 * (1.0 - nearness))
        canvas[yy >= profile[None, :]] = colour


def _skyline(canvas: np.ndarray, rng: np.random.Generator, horizon: float, colour: np.ndarray, wide: bool) -> None:
    height, width = canvas.shape[:2]
    start = rng.uniform(0.0, 0.5) * width if not wide else 0.0
    end = start + rng.uniform(0.3, 0.5) * width if not wide else float(width)
    x = start
    window = np.array([255, 214, 140], dtype=np.float32)
    while x < end:
        bw = width * rng.uniform(0.025, 0.07)
        bh = height * rng.uniform(0.05, 0.3)
        top = int(horizon + height * 0.02 - bh)
        x0, x1 = int(x), int(min(x + bw, width))
        bottom = int(min(horizon + height * 0.03, height))
        canvas[max(top, 0) : bottom, x0:x1] = colour * rng.uniform(0.7, 1.1)
        step = max(4, int(bw / 4))
        for wy in range(max(top, 0) + step // 2, bottom - step, step):
            lit = rng.random(max((x1 - x0 - step // 2) // step, 0)) < 0.35
            for i in np.flatnonzero(lit):
                wx = x0 + step // 2 + int(i) * step
                canvas[wy : wy + step // 2, wx : wx + step // 2] = window
        x += bw + width * rng.uniform(0.0, 0.02)


def _trees(canvas: np.ndarray, rng: np.random.Generator, ground: np.ndarray, colour: np.ndarray) -> None:
    height, width = canvas.shape[:2]
    for _ in range(int(rng.integers(0, 7))):
        cx = int(rng.uniform(0, width))
        base_y = float(ground[min(cx, width - 1)])
        rx = height * rng.uniform(0.02, 0.06)
        ry = rx * rng.uniform(1.2, 2.5)
        cy = base_y - ry * 0.9
        x0, x1 = max(int(cx - rx), 0), min(int(cx + rx) + 1, width)
        y0, y1 = max(int(cy - ry), 0), min(int(cy + ry) + 1, height)
        if x0 >= x1 or y0 >= y1:
            continue
        xs = (np.arange(x0, x1, dtype=np.float32)[None, :] - cx) / rx
        ys = (np.arange(y0, y1, dtype=np.float32)[:, None] - cy) / ry
        inside = xs * xs + ys * ys < 1.0
        canvas[y0:y1, x0:x1][inside] = colour * rng.uniform(0.6, 1.0)


def _render_landscape(rng: np.random.Generator, size: Size, wide: bool) -> Image.Image:
    width, height = _check_size(size)
    xx, yy = _grids((width, height))
    sky_top, sky_low, light, land_far, land_near, cloud = _mood_colours(rng)
    horizon = rng.uniform(0.35, 0.68) * height

    t = np.clip(yy / horizon, 0.0, 1.0)[..., None]
    canvas = np.broadcast_to(_mix(sky_top, sky_low, t * t), (height, width, 3)).copy()

    clouds = _noise_field(rng, (width, height), int(rng.integers(3, 9)) * (2 if wide else 1))
    cover = rng.uniform(0.0, 0.75)
    cloud_mask = np.clip((clouds - (1.0 - cover)) * 4.0, 0.0, 0.85) * (yy < horizon)
    canvas = _mix(canvas, cloud, cloud_mask[..., None])

    sun_x, sun_y = rng.uniform(0.08, 0.92) * width, rng.uniform(0.08, 0.9) * horizon
    radius = rng.uniform(0.02, 0.07) * min(width, height)
    dist2 = ((xx - sun_x) ** 2 + (yy - sun_y) ** 2) / (radius * radius)
    canvas += light * (rng.uniform(0.2, 0.6) / (1.0 + 0.05 * dist2))[..., None]
    canvas[dist2 < 1.0] = light

    _hill_layers(canvas, rng, horizon, land_far, sky_low, wide)
    canvas = _blur(canvas, 0.004 * width + 0.5)  # distance is soft
    if wide or rng.random() < 0.45:
        _skyline(canvas, rng, horizon, land_far * 0.45, wide)

    if rng.random() < 0.35:  # a lake mirrors the sky
        lake_bottom = int(min(horizon + height * rng.uniform(0.1, 0.3), height))
        rows = np.arange(int(horizon), lake_bottom)
        mirrored = np.clip(2 * int(horizon) - rows, 0, height - 1)
        canvas[rows] = canvas[mirrored] * 0.65 + sky_top * 0.15

    ground_level = horizon + height * rng.uniform(0.08, 0.3)
    ground = ground_level + height * 0.07 * _smooth_profile(rng, width, int(rng.integers(1, 4)))
    coarse = int(rng.integers(6, 16))
    octaves = ((0.5, 1), (0.3, 4), (0.2, 16))
    texture = sum(weight * _noise_field(rng, (width, height), coarse * scale) for weight, scale in octaves)
    fade = np.clip((yy - horizon) / (height - horizon), 0.0, 1.0)  # darker towards the camera
    near = land_near[None, None, :] * ((0.7 + 0.6 * texture) * (1.15 - 0.35 * fade))[..., None]
    ground_mask = yy >= ground[None, :]
    canvas[ground_mask] = near[ground_mask]
    _trees(canvas, rng, ground, land_near * 0.6)

    vignette = rng.uniform(0.05, 0.3)
    r2 = ((xx - width / 2) / (width / 2)) ** 2 + ((yy - height / 2) / (height / 2)) ** 2
    canvas *= (1.0 - vignette * 0.5 * r2)[..., None]
    canvas = _blur(canvas, 0.6)  # lens softness
    canvas += rng.standard_normal((height, width, 3), dtype=np.float32) * rng.uniform(1.5, 6.0)
    return _to_image(canvas)


def render_photo(seed: Seed, size: Size) -> Image.Image:
    """Photo-like landscape: sky, light source, hills, maybe skyline/lake, noise."""
    return _render_landscape(make_rng(seed), size, wide=False)


def render_scene(seed: Seed, size: Size = DEFAULT_SCENE_SIZE) -> Image.Image:
    """A large panorama whose detail spreads over the whole width, for `scene_crops`."""
    return _render_landscape(make_rng(seed), size, wide=True)


# --------------------------------------------------------------------------
# painting
# --------------------------------------------------------------------------


def _paint_landscape(draw: ImageDraw.ImageDraw, rng: np.random.Generator, size: Size, palette: list[Colour]) -> None:
    width, height = size
    horizon = rng.uniform(0.3, 0.65) * height
    draw.rectangle((0, 0, width, horizon), fill=palette[0])
    for k in range(int(rng.integers(2, 4))):
        profile = horizon + height * (0.05 * k + 0.08 * _smooth_profile(rng, 24, int(rng.integers(1, 4))))
        points = [(i * width / 23, float(y)) for i, y in enumerate(profile)] + [(width, height), (0, height)]
        draw.polygon(points, fill=palette[1 + k])
    sun = rng.uniform(0.05, 0.12) * width
    sx, sy = rng.uniform(0.1, 0.9) * width, rng.uniform(0.1, 0.8) * horizon
    draw.ellipse((sx - sun, sy - sun, sx + sun, sy + sun), fill=palette[5])


def _paint_still_life(draw: ImageDraw.ImageDraw, rng: np.random.Generator, size: Size, palette: list[Colour]) -> None:
    width, height = size
    table = rng.uniform(0.5, 0.75) * height
    draw.rectangle((0, table, width, height), fill=palette[1])
    for k in range(int(rng.integers(2, 5))):
        rx = width * rng.uniform(0.06, 0.16)
        ry = rx * rng.uniform(0.8, 2.2)
        cx = rng.uniform(0.15, 0.85) * width
        cy = table + height * rng.uniform(-0.02, 0.08) - ry
        draw.ellipse((cx - rx, cy - ry, cx + rx, cy + ry), fill=palette[2 + k % 4])


def _paint_portrait(draw: ImageDraw.ImageDraw, rng: np.random.Generator, size: Size, palette: list[Colour]) -> None:
    width, height = size
    cx = rng.uniform(0.3, 0.7) * width
    head = rng.uniform(0.12, 0.2) * min(width, height) * 1.5
    cy = rng.uniform(0.3, 0.45) * height
    draw.ellipse((cx - 2.2 * head, cy + 1.1 * head, cx + 2.2 * head, height + 2 * head), fill=palette[1])
    draw.ellipse((cx - 1.1 * head, cy - 1.3 * head, cx + 1.1 * head, cy + 0.9 * head), fill=palette[3])
    draw.ellipse((cx - 0.8 * head, cy - 1.0 * head, cx + 0.8 * head, cy + 1.1 * head), fill=palette[2])


def _paint_abstract(draw: ImageDraw.ImageDraw, rng: np.random.Generator, size: Size, palette: list[Colour]) -> None:
    width, height = size
    for k in range(int(rng.integers(3, 8))):
        x0, x1 = sorted(rng.uniform(-0.1, 1.1, 2) * width)
        y0, y1 = sorted(rng.uniform(-0.1, 1.1, 2) * height)
        shape = (draw.rectangle, draw.ellipse)[rng.integers(2)]
        shape((x0, y0, x1, y1), fill=palette[1 + k % 5])


_COMPOSITIONS = (_paint_landscape, _paint_still_life, _paint_portrait, _paint_abstract)


def render_painting(seed: Seed, size: Size) -> Image.Image:
    """Painting-like: a blurred underpainting re-laid with brushstrokes, plus canvas grain."""
    rng = make_rng(seed)
    width, height = _check_size(size)
    palette = _harmonious_palette(rng, 6, sat=(0.2, 0.75), val=(0.25, 0.95))
    under = Image.new("RGB", (width, height), palette[0])
    _COMPOSITIONS[rng.integers(len(_COMPOSITIONS))](ImageDraw.Draw(under), rng, (width, height), palette)
    under = under.filter(ImageFilter.GaussianBlur(max(width, height) / 90))
    reference = np.asarray(under, dtype=np.float32)

    canvas = under.copy()
    draw = ImageDraw.Draw(canvas)
    flow = _noise_field(rng, (width, height), 4)
    base_angle = rng.uniform(0.0, math.pi)
    longest = max(width, height)
    for length_frac, width_frac, density in ((1 / 14, 1 / 70, 0.9), (1 / 30, 1 / 160, 1.2)):
        length, stroke = longest * length_frac, max(2, round(longest * width_frac))
        count = int(density * width * height / (length * stroke))
        xs = rng.uniform(0, width - 1, count)
        ys = rng.uniform(0, height - 1, count)
        yi, xi = ys.astype(np.int64), xs.astype(np.int64)
        angles = base_angle + 2.5 * flow[yi, xi] + rng.normal(0.0, 0.25, count)
        half = length * rng.uniform(0.3, 0.7, count)
        dx, dy = np.cos(angles) * half, np.sin(angles) * half
        colours = np.clip(np.rint(reference[yi, xi] + rng.normal(0.0, 14.0, (count, 3))), 0, 255).astype(int)
        for i in range(count):
            draw.line(
                ((xs[i] - dx[i], ys[i] - dy[i]), (xs[i] + dx[i], ys[i] + dy[i])),
                fill=tuple(colours[i].tolist()),
                width=stroke,
            )

    xx, yy = _grids((width, height))
    weave = 1.0 - 0.05 * ((xx % 4 < 1) | (yy % 4 < 1))
    grain = np.asarray(canvas, dtype=np.float32) * weave[..., None]
    grain += rng.standard_normal((height, width, 1), dtype=np.float32) * 5.0
    return _to_image(grain)


# --------------------------------------------------------------------------
# virtual (game / animation)
# --------------------------------------------------------------------------


def _saturated_palette(rng: np.random.Generator, count: int) -> list[Colour]:
    offset = rng.random()
    hues = (offset + np.arange(count) / count + rng.normal(0.0, 0.02, count)) % 1.0
    rng.shuffle(hues)
    return [_rgb(_hsv(float(h), rng.uniform(0.7, 1.0), rng.uniform(0.8, 1.0))) for h in hues]


Box = tuple[float, float, float, float]


def _cel_ellipse(draw: ImageDraw.ImageDraw, box: Box, colour: Colour, outline: int) -> None:
    """Shadow crescent at bottom-right, lit body, specular dot, hard outline."""
    x0, y0, x1, y1 = box
    bw, bh = x1 - x0, y1 - y0
    draw.ellipse(box, fill=_shade(colour, 0.62))
    draw.ellipse((x0 + 0.05 * bw, y0 + 0.05 * bh, x1 - 0.2 * bw, y1 - 0.2 * bh), fill=colour)
    draw.ellipse((x0 + 0.2 * bw, y0 + 0.15 * bh, x0 + 0.35 * bw, y0 + 0.3 * bh), fill=_shade(colour, 1.35))
    draw.ellipse(box, outline=_OUTLINE, width=outline)


def _cel_rect(draw: ImageDraw.ImageDraw, box: Box, colour: Colour, outline: int) -> None:
    x0, y0, x1, y1 = box
    draw.rectangle(box, fill=_shade(colour, 0.62))
    draw.rectangle((x0, y0, x1 - 0.15 * (x1 - x0), y1 - 0.12 * (y1 - y0)), fill=colour)
    draw.rectangle(box, outline=_OUTLINE, width=outline)


def _banded_sky(draw: ImageDraw.ImageDraw, size: Size, top: Colour, bottom: Colour, bands: int) -> None:
    width, height = size
    a, b = np.array(top, dtype=np.float32), np.array(bottom, dtype=np.float32)
    for i in range(bands):
        colour = _rgb(_mix(a, b, i / max(bands - 1, 1)))
        draw.rectangle((0, height * i / bands, width, height * (i + 1) / bands), fill=colour)


def _virtual_platformer(
    draw: ImageDraw.ImageDraw, rng: np.random.Generator, size: Size, palette: list[Colour], outline: int
) -> None:
    width, height = size
    _banded_sky(draw, size, _rgb(_hsv(rng.uniform(0.5, 0.65), 0.7, 0.95)), (235, 248, 255), int(rng.integers(3, 6)))
    for _ in range(int(rng.integers(2, 5))):  # hills
        r = rng.uniform(0.15, 0.4) * width
        cx, cy = rng.uniform(0, 1) * width, height * rng.uniform(0.75, 1.0)
        _cel_ellipse(draw, (cx - r, cy - r, cx + r, cy + r), palette[0], outline)
    for _ in range(int(rng.integers(1, 4))):  # clouds
        cx, cy, r = rng.uniform(0, 1) * width, rng.uniform(0.05, 0.35) * height, rng.uniform(0.03, 0.07) * width
        for dx in (-1.0, 0.0, 1.0):
            puff = (cx + dx * r - r, cy - r * (1.3 - abs(dx) * 0.4), cx + dx * r + r, cy + r)
            _cel_ellipse(draw, puff, (250, 250, 255), outline)
    ground = rng.uniform(0.72, 0.88) * height
    _cel_rect(draw, (-outline, ground, width + outline, height + outline), palette[1], outline)
    for _ in range(int(rng.integers(1, 4))):  # floating platforms
        px, py = rng.uniform(0, 0.8) * width, rng.uniform(0.3, 0.65) * height
        _cel_rect(draw, (px, py, px + rng.uniform(0.12, 0.3) * width, py + 0.05 * height), palette[2], outline)
    hero = rng.uniform(0.05, 0.09) * width
    hx = rng.uniform(0.15, 0.85) * width
    _cel_rect(draw, (hx - hero, ground - 2.6 * hero, hx + hero, ground), palette[3], outline)
    head_y = ground - 3.5 * hero
    head = 1.1 * hero
    _cel_ellipse(draw, (hx - head, head_y - head, hx + head, head_y + head), palette[4], outline)
    for ex in (-0.45, 0.35):
        eye_x = hx + ex * hero
        eye = (eye_x - 0.15 * hero, head_y - 0.4 * hero, eye_x + 0.15 * hero, head_y + 0.1 * hero)
        draw.ellipse(eye, fill=_OUTLINE)


def _virtual_city(
    draw: ImageDraw.ImageDraw, rng: np.random.Generator, size: Size, palette: list[Colour], outline: int
) -> None:
    width, height = size
    _banded_sky(draw, size, palette[0], palette[1], int(rng.integers(3, 7)))
    moon = rng.uniform(0.05, 0.1) * width
    mx, my = rng.uniform(0.1, 0.9) * width, rng.uniform(0.1, 0.3) * height
    _cel_ellipse(draw, (mx - moon, my - moon, mx + moon, my + moon), (255, 240, 150), outline)
    street = rng.uniform(0.75, 0.9) * height
    x = -rng.uniform(0, 0.05) * width
    while x < width:
        bw = rng.uniform(0.08, 0.2) * width
        top = rng.uniform(0.2, 0.6) * height
        colour = palette[2 + int(rng.integers(3))]
        _cel_rect(draw, (x, top, x + bw, street), colour, outline)
        step = bw / 4
        for wy in np.arange(top + step * 0.5, street - step, step):
            for wx in np.arange(x + step * 0.4, x + bw - step * 0.6, step):
                if rng.random() < 0.6:
                    pane = (wx, wy, wx + step * 0.45, wy + step * 0.55)
                    draw.rectangle(pane, fill=(255, 230, 120), outline=_OUTLINE, width=max(1, outline // 2))
        x += bw + rng.uniform(0.0, 0.03) * width
    _cel_rect(draw, (-outline, street, width + outline, height + outline), (70, 70, 90), outline)
    lane = street + (height - street) * 0.5
    for lx in np.arange(0, width, width / 8):
        draw.rectangle((lx, lane - 2, lx + width / 16, lane + 2), fill=(250, 250, 250))


def _virtual_space(
    draw: ImageDraw.ImageDraw, rng: np.random.Generator, size: Size, palette: list[Colour], outline: int
) -> None:
    width, height = size
    _banded_sky(draw, size, (10, 8, 40), _shade(palette[0], 0.35), int(rng.integers(2, 5)))
    for sx, sy in zip(rng.uniform(0, width, 60), rng.uniform(0, height, 60), strict=True):
        r = 1 + int(rng.integers(3))
        draw.rectangle((sx - r, sy - r, sx + r, sy + r), fill=(255, 255, 230))
    for k in range(int(rng.integers(1, 4))):
        r = rng.uniform(0.08, 0.3) * min(width, height)
        cx, cy = rng.uniform(0.1, 0.9) * width, rng.uniform(0.1, 0.9) * height
        _cel_ellipse(draw, (cx - r, cy - r, cx + r, cy + r), palette[1 + k], outline)
        if rng.random() < 0.5:
            ring = (cx - 1.8 * r, cy - 0.3 * r, cx + 1.8 * r, cy + 0.3 * r)
            draw.ellipse(ring, outline=palette[4], width=outline * 2)
    sx, sy, s = rng.uniform(0.2, 0.8) * width, rng.uniform(0.2, 0.8) * height, rng.uniform(0.04, 0.08) * width
    ship = ((sx, sy - 2 * s), (sx + s, sy + s), (sx - s, sy + s))
    draw.polygon(ship, fill=palette[5], outline=_OUTLINE, width=outline)


def _virtual_portrait(
    draw: ImageDraw.ImageDraw, rng: np.random.Generator, size: Size, palette: list[Colour], outline: int
) -> None:
    width, height = size
    cx, cy = rng.uniform(0.35, 0.65) * width, rng.uniform(0.4, 0.6) * height
    rays = int(rng.integers(8, 20))
    reach = 2 * max(width, height)
    phase = rng.uniform(0, 2 * math.pi)
    for i in range(rays):
        a0, a1 = phase + 2 * math.pi * i / rays, phase + 2 * math.pi * (i + 0.5) / rays
        edges = [(cx + reach * math.cos(a), cy + reach * math.sin(a)) for a in (a0, a1)]
        draw.polygon([(cx, cy), *edges], fill=palette[0])
    head = rng.uniform(0.18, 0.3) * min(width, height)
    _cel_ellipse(draw, (cx - 1.6 * head, cy + 0.6 * head, cx + 1.6 * head, cy + 3.5 * head), palette[2], outline)
    _cel_ellipse(draw, (cx - head, cy - head, cx + head, cy + head), palette[3], outline)
    hair = (cx - 1.1 * head, cy - 1.25 * head, cx + 1.1 * head, cy + 0.6 * head)
    draw.pieslice(hair, 180, 360, fill=palette[4], outline=_OUTLINE, width=outline)
    for ex in (-0.4, 0.4):
        eye = (cx + (ex - 0.18) * head, cy - 0.1 * head, cx + (ex + 0.18) * head, cy + 0.35 * head)
        draw.ellipse(eye, fill=(255, 255, 255), outline=_OUTLINE, width=outline)
        pupil = (cx + (ex - 0.08) * head, cy + 0.05 * head, cx + (ex + 0.08) * head, cy + 0.3 * head)
        draw.ellipse(pupil, fill=_OUTLINE)


_VIRTUAL_SCENES = (_virtual_platformer, _virtual_city, _virtual_space, _virtual_portrait)


def render_virtual(seed: Seed, size: Size) -> Image.Image:
    """Game/animation-like: flat cel-shaded shapes with hard outlines, saturated colours."""
    rng = make_rng(seed)
    width, height = _check_size(size)
    palette = _saturated_palette(rng, 6)
    image = Image.new("RGB", (width, height), palette[0])
    outline = max(2, round(max(width, height) / 180))
    _VIRTUAL_SCENES[rng.integers(len(_VIRTUAL_SCENES))](ImageDraw.Draw(image), rng, (width, height), palette, outline)
    return image


# --------------------------------------------------------------------------
# near-duplicate transformations
# --------------------------------------------------------------------------


def resized(img: Image.Image, scale: float) -> Image.Image:
    if scale <= 0:
        raise ValueError(f"scale must be positive, got {scale}")
    width, height = img.size
    return img.resize((max(1, round(width * scale)), max(1, round(height * scale))), Image.Resampling.LANCZOS)


def recompressed(img: Image.Image, quality: int) -> bytes:
    """JPEG bytes at `quality` (1..95); no metadata, so the bytes depend only on pixels."""
    if not 1 <= quality <= 95:
        raise ValueError(f"quality must be in 1..95, got {quality}")
    buffer = io.BytesIO()
    img.convert("RGB").save(buffer, format="JPEG", quality=quality)
    return buffer.getvalue()


def cropped(img: Image.Image, fraction: float, anchor: Anchor) -> Image.Image:
    """Remove `fraction` of width and height, keeping the `anchor` corner (or the centre)."""
    if not 0 <= fraction <= MAX_CROP_FRACTION:
        raise ValueError(f"fraction must be in [0, {MAX_CROP_FRACTION}], got {fraction}")
    if anchor not in ANCHORS:
        raise ValueError(f"anchor must be one of {ANCHORS}, got {anchor!r}")
    width, height = img.size
    dx, dy = round(width * fraction), round(height * fraction)
    left = {"top-left": 0, "bottom-left": 0, "top-right": dx, "bottom-right": dx, "center": dx // 2}[anchor]
    top = {"top-left": 0, "top-right": 0, "bottom-left": dy, "bottom-right": dy, "center": dy // 2}[anchor]
    return img.crop((left, top, left + width - dx, top + height - dy))


def brightness_shifted(img: Image.Image, factor: float) -> Image.Image:
    if factor <= 0:
        raise ValueError(f"factor must be positive, got {factor}")
    return ImageEnhance.Brightness(img).enhance(factor)


def hflipped(img: Image.Image) -> Image.Image:
    return ImageOps.mirror(img)


def rotated(img: Image.Image, degrees: float) -> Image.Image:
    """Rotate by a small angle, then zoom so the frame has no empty corners; keeps the size."""
    if abs(degrees) > MAX_ROTATION_DEGREES:
        raise ValueError(f"|degrees| must be <= {MAX_ROTATION_DEGREES}, got {degrees}")
    width, height = img.size
    theta = math.radians(abs(degrees))
    zoom = math.cos(theta) + max(width / height, height / width) * math.sin(theta)
    turned = img.rotate(degrees, resample=Image.Resampling.BICUBIC, expand=False)
    # one extra pixel each side drops the interpolated edge of the rotated frame
    left = math.ceil((width - width / zoom) / 2) + 1
    top = math.ceil((height - height / zoom) / 2) + 1
    return turned.crop((left, top, width - left, height - top)).resize((width, height), Image.Resampling.LANCZOS)


_OVERLAY_TEXTS = ("© aesforge", "SAMPLE", "watermark", "@synthetic", "PREVIEW")


def overlaid(img: Image.Image, seed: Seed) -> Image.Image:
    """A semi-opaque box with a logo dot and a short text in one corner (<= 10% of the area)."""
    rng = make_rng(seed)
    width, height = img.size
    box_w, box_h = round(width * rng.uniform(0.18, 0.3)), round(height * rng.uniform(0.06, 0.1))
    margin_x, margin_y = round(width * 0.03), round(height * 0.03)
    corner = ANCHORS[rng.integers(4)]
    x0 = margin_x if corner.endswith("left") else width - margin_x - box_w
    y0 = margin_y if corner.startswith("top") else height - margin_y - box_h
    layer = Image.new("RGBA", img.size, (0, 0, 0, 0))
    draw = ImageDraw.Draw(layer)
    ink = tuple(int(c) for c in rng.integers(0, 256, 3))
    draw.rectangle((x0, y0, x0 + box_w - 1, y0 + box_h - 1), fill=(*ink, 170))
    dot = box_h * 0.7
    pad = (box_h - dot) / 2
    draw.ellipse((x0 + pad, y0 + pad, x0 + pad + dot, y0 + pad + dot), fill=(255, 255, 255, 230))
    font = ImageFont.load_default(size=max(6, round(box_h * 0.55)))
    text = _OVERLAY_TEXTS[rng.integers(len(_OVERLAY_TEXTS))]
    draw.text((x0 + box_h, y0 + box_h / 2), text, fill=(255, 255, 255, 240), font=font, anchor="lm")
    return Image.alpha_composite(img.convert("RGBA"), layer).convert(img.mode)


# --------------------------------------------------------------------------
# look-alike negatives
# --------------------------------------------------------------------------


def recoloured(img: Image.Image, seed: Seed) -> Image.Image:
    """Same layout, clearly different colours: hue rotated by 110..250 degrees."""
    rng = make_rng(seed)
    shift = int(rng.integers(80, 178))  # in Pillow's 0..255 hue units
    hue, sat, val = img.convert("RGB").convert("HSV").split()
    hue = hue.point([(h + shift) % 256 for h in range(256)])
    sat = sat.point([min(255, 64 + s) for s in range(256)])  # greys would hide the change
    return Image.merge("HSV", (hue, sat, val)).convert("RGB")


def scene_crops(scene: Image.Image, seed: Seed) -> tuple[Image.Image, Image.Image]:
    """Two equal-size crops from either end of the scene's long axis, overlapping <= 20%."""
    rng = make_rng(seed)
    width, height = scene.size
    along, across = (width, height) if width >= height else (height, width)
    overlap = rng.uniform(0.0, MAX_SCENE_CROP_OVERLAP)
    span = math.floor(along / (2.0 - overlap))
    depth = int(rng.integers(round(across * 0.8), across + 1))
    offsets = rng.integers(0, across - depth + 1, 2)
    boxes = [(0, int(offsets[0])), (along - span, int(offsets[1]))]
    crops = []
    for start, cross in boxes:
        if width >= height:
            crops.append(scene.crop((start, cross, start + span, cross + depth)))
        else:
            crops.append(scene.crop((cross, start, cross + depth, start + span)))
    return crops[0], crops[1]


# --------------------------------------------------------------------------
# bad files
# --------------------------------------------------------------------------


def truncated_jpeg_bytes(img: Image.Image) -> bytes:
    """A JPEG cut in the middle of its entropy-coded data: the header parses, decoding fails."""
    data = recompressed(img, 90)
    return data[: len(data) // 2]


def not_an_image_bytes() -> bytes:
    """What a web server returns instead of an image: a small HTML error page."""
    return (
        b"<!DOCTYPE html>\n<html><head><title>404 Not Found</title></head>\n"
        b"<body><h1>Not Found</h1><p>The requested image was not found on this server.</p></body></html>\n"
    )


def tiny_image(size: Size = (12, 12)) -> Image.Image:
    """A thumbnail-sized picture with real content (a gradient), too small to be useful."""
    width, height = size
    xx, yy = _grids((width, height))
    red = np.broadcast_to(xx * (255.0 / max(width - 1, 1)), (height, width))
    green = np.broadcast_to(yy * (255.0 / max(height - 1, 1)), (height, width))
    return _to_image(np.stack([red, green, np.full((height, width), 128.0)], axis=-1))


def tracking_pixel_gif() -> bytes:
    """A 1x1 transparent GIF, as web pages embed to count views; scraped image sets are full of them."""
    pixel = Image.new("P", (1, 1), 0)
    pixel.putpalette([255, 255, 255] * 2)
    buffer = io.BytesIO()
    pixel.save(buffer, format="GIF", transparency=0)
    return buffer.getvalue()


def blank_image(
    size: Size, colour: Colour = (128, 128, 128), noise_seed: Seed | None = None, noise_amplitude: int = 2
) -> Image.Image:
    """A uniform image; with `noise_seed`, near-uniform (+-`noise_amplitude` per channel)."""
    width, height = _check_size(size)
    canvas = np.empty((height, width, 3), dtype=np.float32)
    canvas[:] = colour
    if noise_seed is not None:
        canvas += make_rng(noise_seed).integers(-noise_amplitude, noise_amplitude + 1, canvas.shape)
    return _to_image(canvas)
