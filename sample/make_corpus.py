"""Build aesforge's bundled sample corpus from `sample.synth`, deterministically.

Why: the pipeline, its tests and its demo need a small corpus with known
ground truth (planted duplicates, bad files, licence problems) that anyone can
regenerate byte-for-byte instead of committing binaries or scraped pictures.

Usage: ``python -m sample.make_corpus --out data/sample``.  The build rewrites
``images/``, ``inbox/``, ``manifest.csv``, ``additions.csv`` and ``expected.json``
in ``--out`` and refuses a folder that holds anything else.

Ground-truth promises (asserted by tests/sample/test_sample_corpus.py): planted
near-duplicates are mild (64-bit pHash distance <= 10 to their original) while
distinct originals are all > 10 apart; harder variants (rotation, overlays,
large crops, look-alike negatives) belong to the benchmark, built from
``sample.synth``.  Every image not listed under ``rejections`` decodes and is at
least MIN_VALID_SIDE (320) px on its short side; the only licences outside
ALLOWED_LICENSES are on the ``license_not_allowed`` rows.  ``additions.csv`` is a
second, hostile manifest, as a user's spreadsheet export: it has an ``id`` column,
one row saved in latin-1 (``bad_encoding``), an id used twice (``duplicate_id``:
the first row wins) and a 1x1 tracking-pixel GIF (``too_small``), among good rows.

Layout written under ``out_dir``::

    manifest.csv                      one row per file under images/ but additions' (columns: MANIFEST_COLUMNS)
    additions.csv                     the hostile manifest (columns: ADDITIONS_COLUMNS; one row not UTF-8)
    images/<domain>/<name>.(jpg|png)  manifest source; locator = path relative to manifest.csv
    inbox/<domain>/<name>.(jpg|png)   local folder source; provenance comes from the folder config
    expected.json                     ground truth, schema below

``expected.json`` (schema_version 1).  Every locator is a POSIX path relative to
``out_dir`` (which is also the manifest's folder), e.g. ``images/painting/painting_03.png``
or ``inbox/virtual/inbox_virtual_00.png``::

    {
      "schema_version": 1,
      "manifest": "manifest.csv",
      "allowed_licenses": ["CC-BY-4.0", "CC0-1.0"],   # licences the corpus treats as allowed
      "originals": [                                  # every distinct rendered picture (manifest + inbox)
        {"locator": str, "domain": str, "seed": int, "width": int, "height": int,
         "format": "JPEG" | "PNG"}                    # width/height as displayed (after EXIF orientation)
      ],
      "duplicates": [                                 # planted copies; "original" is always a manifest row
        {"original": str, "copy": str,
         "transformation": "exact" | "resized" | "recompressed" | "cropped" | "brightness_shifted",
         "params": {...}}                             # scale | quality | fraction+anchor | factor; {} for exact
      ],
      "rejections": [                                 # inputs a correct pipeline must reject, one reason each
        {"locator": str,                              # a file, or "additions.csv#line=N" for an unreadable row
         "kind": "truncated" | "not_an_image" | "too_small" | "blank" | "license_not_allowed"
                 | "bad_encoding" | "duplicate_id"}
      ],
      "exif_orientation": [                           # files whose pixels must be rotated before use
        {"locator": str, "orientation": int, "stored_size": [w, h], "upright_size": [w, h]}
      ],
      "inbox": [{"locator": str, "domain": str}],     # every file of the folder source
      "manifests": ["manifest.csv", "additions.csv"], # every manifest, to be listed in the pool's config
      "counts": {                                     # per domain, every domain present (0 if none)
        "manifest_rows": {domain: int},               # rows of both manifests
        "inbox_files": {domain: int}, "originals": {domain: int},
        "duplicate_copies": {domain: int}, "rejections": {domain: int}
      }
    }
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import math
import shutil
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from sample import synth

SCHEMA_VERSION = 1
DOMAINS = ("photography", "painting", "virtual")
MANIFEST_COLUMNS = ("locator", "title", "creator", "provider", "source_url", "license", "redistribution", "domain")
ALLOWED_LICENSES = ("CC0-1.0", "CC-BY-4.0")
REDISTRIBUTION_VALUES = ("allowed", "restricted", "unknown")
ADDITIONS_COLUMNS = ("id", *MANIFEST_COLUMNS)
REJECTION_KINDS = ("truncated", "not_an_image", "too_small", "blank", "license_not_allowed", "bad_encoding", "duplicate_id")
TRANSFORMATIONS = ("exact", "resized", "recompressed", "cropped", "brightness_shifted")
PROVIDER = "aesforge synthetic sample"
SOURCE_URL_BASE = "https://sample.aesforge.invalid/"
ORIGINALS_PER_DOMAIN = 16
MIN_VALID_SIDE = 320  # every image not listed in "rejections" is at least this big on its short side
ORIENTATION_TAG = 0x0112
JPEG_QUALITY = 92

_CORPUS_SEED = 20_240_611
_PREFIX = {"photography": "photo", "painting": "painting", "virtual": "virtual"}
_SEED_BASE = {"photography": 1000, "painting": 2000, "virtual": 3000}
_INBOX_SEED_BASE = 4000
_RENDERERS: dict[str, Callable[[int, synth.Size], Image.Image]] = {
    "photography": synth.render_photo,
    "painting": synth.render_painting,
    "virtual": synth.render_virtual,
}
_ATTRIBUTED_CREATOR = "aesforge sample generator"


@dataclass(frozen=True)
class _Plant:
    """A planted copy of manifest original `index` in `domain`."""

    transformation: str
    domain: str
    index: int
    params: Mapping[str, Any] = field(default_factory=dict)
    to_inbox: bool = False


_PLANTS = (
    _Plant("exact", "photography", 1),
    _Plant("exact", "painting", 2),
    _Plant("exact", "virtual", 3),
    _Plant("resized", "photography", 4, {"scale": 0.5}),
    _Plant("resized", "virtual", 5, {"scale": 0.75}),
    _Plant("recompressed", "painting", 6, {"quality": 35}),
    _Plant("recompressed", "photography", 7, {"quality": 60}),
    _Plant("cropped", "virtual", 8, {"fraction": 0.08, "anchor": "top-left"}),
    _Plant("cropped", "painting", 9, {"fraction": 0.08, "anchor": "center"}),
    _Plant("brightness_shifted", "photography", 10, {"factor": 1.25}),
    _Plant("brightness_shifted", "painting", 11, {"factor": 0.8}),
    _Plant("resized", "painting", 12, {"scale": 0.6}, to_inbox=True),
    _Plant("recompressed", "virtual", 13, {"quality": 50}, to_inbox=True),
)
# (domain, index) -> (licence, redistribution, creator); everything else is CC0-1.0 / allowed
_LICENSING = {
    ("photography", 2): ("CC-BY-4.0", "allowed", _ATTRIBUTED_CREATOR),
    ("virtual", 6): ("CC-BY-4.0", "allowed", _ATTRIBUTED_CREATOR),
    ("photography", 14): ("All-Rights-Reserved", "restricted", "unknown"),
    ("painting", 15): ("LicenseRef-Proprietary", "unknown", "unknown"),
}
_EXIF_ORIGINAL = ("virtual", 0)
_EXIF_ORIENTATION = 6  # stored rotated 90° counter-clockwise; viewers turn it back clockwise
_EXIF_UPRIGHT_SIZE = (880, 560)  # not square, so a missed rotation shows in the size
_INBOX_ORIGINALS = {"photography": 1, "painting": 2, "virtual": 1}
_BUILD_ENTRIES = frozenset({"images", "inbox", "manifest.csv", "additions.csv", "expected.json",
                            "reddit", "designs", "poetry", "context"})  # the other fixtures `aesforge sample` writes beside
_ADDITIONS_SEED = 5000


@dataclass(frozen=True)
class _File:
    """One file to write; `format` is the encoding its name claims (bad files may lie)."""

    locator: str
    data: bytes
    domain: str
    title: str
    format: str
    licence: str = "CC0-1.0"
    redistribution: str = "allowed"
    creator: str = _ATTRIBUTED_CREATOR


def _encode(img: Image.Image, fmt: str, exif: Image.Exif | None = None) -> bytes:
    buffer = io.BytesIO()
    options: dict[str, Any] = {"quality": JPEG_QUALITY} if fmt == "JPEG" else {}
    if exif is not None:
        options["exif"] = exif
    img.save(buffer, format=fmt, **options)
    return buffer.getvalue()


def _decode(data: bytes) -> Image.Image:
    with Image.open(io.BytesIO(data)) as img:
        return img.convert("RGB")


def _original_entry(locator: str, domain: str, seed: int, upright: Image.Image, fmt: str) -> dict[str, Any]:
    return {
        "locator": locator,
        "domain": domain,
        "seed": seed,
        "width": upright.width,
        "height": upright.height,
        "format": fmt,
    }


def _extension(fmt: str) -> str:
    return {"JPEG": "jpg", "PNG": "png"}[fmt]


def _original_sizes(rng: np.random.Generator) -> dict[tuple[str, int], synth.Size]:
    """Varied sizes, mostly 320..1024 px (resize/crop sources grow so copies keep MIN_VALID_SIDE)."""
    sizes = {}
    for domain in DOMAINS:
        for index in range(ORIGINALS_PER_DOMAIN):
            long_side = int(rng.integers(400, 1025))
            aspect = float(rng.choice([1.0, 4 / 3, 3 / 2, 16 / 9]))
            short_side = max(320, round(long_side / aspect))
            sizes[(domain, index)] = (short_side, long_side) if rng.random() < 0.3 else (long_side, short_side)
    sizes[_EXIF_ORIGINAL] = _EXIF_UPRIGHT_SIZE
    for plant in _PLANTS:  # enlarge sources so shrunken copies stay >= MIN_VALID_SIDE
        shrink = plant.params.get("scale", 1.0) * (1.0 - plant.params.get("fraction", 0.0))
        width, height = sizes[(plant.domain, plant.index)]
        grow = max(1.0, MIN_VALID_SIDE / (shrink * min(width, height)))
        sizes[(plant.domain, plant.index)] = (math.ceil(width * grow), math.ceil(height * grow))
    return sizes


def _render_originals() -> tuple[dict[tuple[str, int], _File], list[dict[str, Any]], list[dict[str, Any]]]:
    """Manifest originals keyed by (domain, index), their ground-truth entries, EXIF entries."""
    sizes = _original_sizes(synth.make_rng(_CORPUS_SEED))
    files, originals, exif_entries = {}, [], []
    for domain in DOMAINS:
        prefix = _PREFIX[domain]
        for index in range(ORIGINALS_PER_DOMAIN):
            seed = _SEED_BASE[domain] + index
            fmt = "PNG" if index % 3 == 0 else "JPEG"
            upright = _RENDERERS[domain](seed, sizes[(domain, index)])
            locator = f"images/{domain}/{prefix}_{index:02d}.{_extension(fmt)}"
            if (domain, index) == _EXIF_ORIGINAL:
                exif = Image.Exif()
                exif[ORIENTATION_TAG] = _EXIF_ORIENTATION
                stored = upright.transpose(Image.Transpose.ROTATE_90)
                data = _encode(stored, fmt, exif)
                exif_entries.append(
                    {
                        "locator": locator,
                        "orientation": _EXIF_ORIENTATION,
                        "stored_size": list(stored.size),
                        "upright_size": list(upright.size),
                    }
                )
            else:
                data = _encode(upright, fmt)
            default_creator = "unknown" if index % 5 == 4 else _ATTRIBUTED_CREATOR
            licence, redistribution, creator = _LICENSING.get((domain, index), ("CC0-1.0", "allowed", default_creator))
            title = f"Synthetic {domain} {index:02d}"
            files[(domain, index)] = _File(locator, data, domain, title, fmt, licence, redistribution, creator)
            originals.append(_original_entry(locator, domain, seed, upright, fmt))
    return files, originals, exif_entries


def _transform(plant: _Plant, original: bytes, original_format: str) -> tuple[bytes, str]:
    """Bytes and format of the planted copy, derived from the original's decoded file."""
    if plant.transformation == "exact":
        return original, original_format
    image = _decode(original)
    if plant.transformation == "recompressed":
        return synth.recompressed(image, plant.params["quality"]), "JPEG"
    if plant.transformation == "resized":
        changed = synth.resized(image, plant.params["scale"])
    elif plant.transformation == "cropped":
        changed = synth.cropped(image, plant.params["fraction"], plant.params["anchor"])
    elif plant.transformation == "brightness_shifted":
        changed = synth.brightness_shifted(image, plant.params["factor"])
    else:
        raise ValueError(f"unknown transformation {plant.transformation!r}")
    return _encode(changed, original_format), original_format


def _plant_copies(originals: Mapping[tuple[str, int], _File]) -> tuple[list[_File], list[_File], list[dict[str, Any]]]:
    manifest_copies, inbox_copies, duplicates = [], [], []
    for plant in _PLANTS:
        original = originals[(plant.domain, plant.index)]
        if original.licence not in ALLOWED_LICENSES or (plant.domain, plant.index) == _EXIF_ORIGINAL:
            raise ValueError(f"planted source {original.locator} must be an allowed, upright original")
        data, fmt = _transform(plant, original.data, original.format)
        prefix = _PREFIX[plant.domain]
        if plant.to_inbox:
            number = _INBOX_ORIGINALS[plant.domain] + sum(c.domain == plant.domain for c in inbox_copies)
            locator = f"inbox/{plant.domain}/inbox_{prefix}_{number:02d}.{_extension(fmt)}"
            inbox_copies.append(_File(locator, data, plant.domain, "", fmt))
        else:
            suffix = "copy" if plant.transformation == "exact" else plant.transformation
            locator = f"images/{plant.domain}/{prefix}_{plant.index:02d}_{suffix}.{_extension(fmt)}"
            manifest_copies.append(_File(locator, data, plant.domain, f"{original.title} ({suffix})", fmt))
        duplicates.append(
            {
                "original": original.locator,
                "copy": locator,
                "transformation": plant.transformation,
                "params": dict(plant.params),
            }
        )
    return manifest_copies, inbox_copies, duplicates


def _bad_files() -> tuple[list[_File], list[dict[str, Any]]]:
    truncated = synth.truncated_jpeg_bytes(synth.render_photo(5000, (640, 480)))
    empty_canvas = _encode(synth.blank_image((512, 384), colour=(236, 232, 220)), "PNG")
    html, icon = synth.not_an_image_bytes(), _encode(synth.tiny_image(), "PNG")
    bad = [
        (_File("images/photography/photo_truncated.jpg", truncated, "photography", "Sunset", "JPEG"), "truncated"),
        (_File("images/virtual/virtual_preview.png", html, "virtual", "Preview", "PNG"), "not_an_image"),
        (_File("images/virtual/virtual_thumb.png", icon, "virtual", "Icon", "PNG"), "too_small"),
        (_File("images/painting/painting_blank.png", empty_canvas, "painting", "Study in white", "PNG"), "blank"),
    ]
    return [file for file, _ in bad], [{"locator": file.locator, "kind": kind} for file, kind in bad]


def _inbox_originals() -> tuple[list[_File], list[dict[str, Any]]]:
    files, originals = [], []
    rng = synth.make_rng(_CORPUS_SEED + 1)
    for domain in DOMAINS:
        for k in range(_INBOX_ORIGINALS[domain]):
            seed = _INBOX_SEED_BASE + 100 * DOMAINS.index(domain) + k
            size = (int(rng.integers(480, 1025)), int(rng.integers(360, 769)))
            fmt = "JPEG" if k % 2 == 0 else "PNG"
            image = _RENDERERS[domain](seed, size)
            locator = f"inbox/{domain}/inbox_{_PREFIX[domain]}_{k:02d}.{_extension(fmt)}"
            files.append(_File(locator, _encode(image, fmt), domain, "", fmt))
            originals.append(_original_entry(locator, domain, seed, image, fmt))
    return files, originals


def _additions() -> tuple[list[tuple[str, _File, str]], list[dict[str, Any]], list[dict[str, Any]]]:
    """The hostile manifest's rows in order, as (id, file, encoding); the originals they add; their rejections."""
    rendered = []
    for number, (domain, size) in enumerate((("painting", (640, 480)), ("painting", (560, 720)), ("virtual", (600, 400))), 1):
        seed = _ADDITIONS_SEED + number
        image = _RENDERERS[domain](seed, size)
        locator = f"images/{domain}/addition_{number:02d}.jpg"
        rendered.append((_File(locator, _encode(image, "JPEG"), domain, f"Addition {number:02d}", "JPEG"),
                         _original_entry(locator, domain, seed, image, "JPEG")))
    (first, _), (latin, _), (repeat, _) = rendered
    first = replace(first, title="Étude en gris")  # non-Latin letters saved as UTF-8 are fine
    latin = replace(latin, title="Étude en ocre")  # the same letters saved as latin-1 are not
    pixel = _File("images/virtual/tracking_pixel.gif", synth.tracking_pixel_gif(), "virtual", "Tracking pixel", "GIF")
    rows = [("add-01", first, "utf-8"), ("add-02", latin, "latin-1"), ("add-01", repeat, "utf-8"), ("add-03", pixel, "utf-8")]
    rejections = [
        {"locator": "additions.csv#line=3", "kind": "bad_encoding"},
        {"locator": repeat.locator, "kind": "duplicate_id"},
        {"locator": pixel.locator, "kind": "too_small"},
    ]
    return rows, [entry for _, entry in rendered], rejections


def _additions_csv(rows: list[tuple[str, _File, str]]) -> bytes:
    """The hostile manifest's bytes: each row encoded on its own, as a careless export does."""
    out = [",".join(ADDITIONS_COLUMNS).encode()]
    for ident, file, encoding in rows:
        line = io.StringIO()
        csv.DictWriter(line, fieldnames=ADDITIONS_COLUMNS, lineterminator="").writerow({"id": ident, **_manifest_rows([file])[0]})
        out.append(line.getvalue().encode(encoding))
    return b"\n".join(out) + b"\n"


def _per_domain(domains: list[str]) -> dict[str, int]:
    counts = Counter(domains)
    return {domain: counts[domain] for domain in DOMAINS}


def _manifest_rows(files: list[_File]) -> list[dict[str, str]]:
    return [
        {
            "locator": f.locator,
            "title": f.title,
            "creator": f.creator,
            "provider": PROVIDER,
            "source_url": SOURCE_URL_BASE + f.locator.removeprefix("images/"),
            "license": f.licence,
            "redistribution": f.redistribution,
            "domain": f.domain,
        }
        for f in files
    ]


def check_sample_folder(out_dir: Path) -> None:
    """Refuse a folder holding anything a sample build does not write (it is not ours to overwrite)."""
    foreign = sorted(p.name for p in out_dir.iterdir() if p.name not in _BUILD_ENTRIES) if out_dir.exists() else []
    if foreign:
        raise FileExistsError(f"{out_dir} holds files that are not part of a sample build: {foreign[:5]}")


def _prepare(out_dir: Path) -> None:
    """Clear a previous (even half-written) build; refuse a folder holding anything else."""
    check_sample_folder(out_dir)
    for tree in ("images", "inbox"):
        shutil.rmtree(out_dir / tree, ignore_errors=True)
    out_dir.mkdir(parents=True, exist_ok=True)


def build_corpus(out_dir: Path) -> dict[str, Any]:
    """Write the corpus under `out_dir` and return the ground truth also written to expected.json."""
    out_dir = Path(out_dir)
    _prepare(out_dir)
    originals_by_key, originals, exif_entries = _render_originals()
    originals_files = list(originals_by_key.values())
    manifest_copies, inbox_copies, duplicates = _plant_copies(originals_by_key)
    bad, rejections = _bad_files()
    disallowed = [f for f in originals_files if f.licence not in ALLOWED_LICENSES]
    rejections += [{"locator": f.locator, "kind": "license_not_allowed"} for f in disallowed]
    inbox_files, inbox_originals = _inbox_originals()
    inbox_files += inbox_copies
    additions, addition_originals, addition_rejections = _additions()
    rejections += addition_rejections
    addition_files = [file for _, file, _ in additions]

    manifest_files = sorted(originals_files + manifest_copies + bad, key=lambda f: f.locator)
    inbox_files.sort(key=lambda f: f.locator)
    all_originals = originals + addition_originals + inbox_originals
    domain_of = {f.locator: f.domain for f in manifest_files + addition_files + inbox_files}
    domain_of["additions.csv#line=3"] = additions[1][1].domain
    expected = {
        "schema_version": SCHEMA_VERSION,
        "manifest": "manifest.csv",
        "allowed_licenses": sorted(ALLOWED_LICENSES),
        "originals": all_originals,
        "duplicates": duplicates,
        "rejections": sorted(rejections, key=lambda r: r["locator"]),
        "exif_orientation": exif_entries,
        "manifests": ["manifest.csv", "additions.csv"],
        "inbox": [{"locator": f.locator, "domain": f.domain} for f in inbox_files],
        "counts": {
            "manifest_rows": _per_domain([f.domain for f in manifest_files + addition_files]),
            "inbox_files": _per_domain([f.domain for f in inbox_files]),
            "originals": _per_domain([o["domain"] for o in all_originals]),
            "duplicate_copies": _per_domain([domain_of[d["copy"]] for d in duplicates]),
            "rejections": _per_domain([domain_of[r["locator"]] for r in rejections]),
        },
    }

    for f in manifest_files + addition_files + inbox_files:
        path = out_dir / f.locator
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(f.data)
    with open(out_dir / "manifest.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=MANIFEST_COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(_manifest_rows(manifest_files))
    (out_dir / "additions.csv").write_bytes(_additions_csv(additions))
    (out_dir / "expected.json").write_text(json.dumps(expected, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return expected


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Write aesforge's deterministic synthetic sample corpus.")
    parser.add_argument("--out", type=Path, default=Path("data/sample"), help="output folder (default: data/sample)")
    args = parser.parse_args(argv)
    expected = build_corpus(args.out)
    counts = expected["counts"]
    print(
        f"wrote {sum(counts['manifest_rows'].values())} manifest rows and "
        f"{sum(counts['inbox_files'].values())} inbox files to {args.out}"
    )


if __name__ == "__main__":
    main()
