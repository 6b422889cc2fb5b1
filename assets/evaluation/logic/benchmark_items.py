"""A benchmark's items, read from its release folder (the published Parquet shards), not from the tables that
built it: an evaluation scores exactly what was released, names the release by its digest, and runs the same on
a release downloaded from elsewhere.

Each benchmark says which config and split hold its evaluation items and how a row becomes a ``BenchmarkItem``
(the fields its prompts are rendered from, its images, its reference texts). Shards are streamed in name order,
a batch at a time, so a release of any size is read in bounded memory.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from warehouse.ids import digest_of

_BATCH_ROWS = 256  # rows hold embedded images: keep a batch small


class ReleaseError(ValueError):
    """A folder that is not a readable release of the benchmark (one line: the folder and what is wrong)."""


@dataclass(frozen=True)
class ItemImage:
    sha256: str
    data: bytes | None  # None: the release withholds the bytes (its licence policy); found by sha256 elsewhere
    path: str | None = None  # the image's path inside the release, as its row names it


@dataclass(frozen=True)
class BenchmarkItem:
    id: str
    fields: Mapping[str, Any]  # what the item's prompt is rendered from
    images: tuple[ItemImage, ...]
    references: tuple[str, ...]  # the human or gold texts a prediction is scored against


@dataclass(frozen=True)
class BenchmarkLayout:
    """Where a benchmark's evaluation items are in its release, and how a row becomes an item."""

    name: str
    dataset: str  # the release folder's dataset name (release.json "dataset")
    config: str
    split: str
    task: str  # predictions name it ("photocritique/critique")
    to_item: Callable[[Mapping[str, Any]], BenchmarkItem] = field(repr=False)


@dataclass(frozen=True)
class Release:
    folder: Path
    dataset: str
    version: str
    digest: str  # of the data files' sha256s: the same released data gives the same digest anywhere


def open_release(folder: Path, layout: BenchmarkLayout) -> Release:
    """The release in ``folder`` if it is one of ``layout``'s dataset with its evaluation split."""
    try:
        manifest = json.loads((folder / "release.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ReleaseError(f"{folder}: no readable release.json ({type(exc).__name__}); write it with"
                           f" `aesforge release {layout.dataset}`") from exc
    if manifest.get("dataset") != layout.dataset:
        raise ReleaseError(f"{folder}: a release of {manifest.get('dataset')!r}, not of {layout.dataset!r}")
    files = manifest.get("files") or {}
    if not _shards(folder, layout):
        raise ReleaseError(f"{folder}: no shards of {layout.config}/{layout.split} (data/{layout.config}/{layout.split}-*.parquet)")
    data = {name: sha for name, sha in sorted(files.items()) if name.startswith("data/")}
    return Release(folder, layout.dataset, str(manifest.get("version", "")), digest_of(data))


def _shards(folder: Path, layout: BenchmarkLayout) -> list[Path]:
    return sorted((folder / "data" / layout.config).glob(f"{layout.split}-*-of-*.parquet"))


def iter_items(release: Release, layout: BenchmarkLayout) -> Iterator[BenchmarkItem]:
    """Every evaluation item of the release, in shard and row order."""
    for shard in _shards(release.folder, layout):
        for batch in pq.ParquetFile(shard).iter_batches(batch_size=_BATCH_ROWS):
            for row in batch.to_pylist():
                yield layout.to_item(row)


def _image(value: Mapping[str, Any] | None, sha256: str) -> ItemImage:
    value = value or {}
    return ItemImage(sha256, value.get("bytes"), value.get("path"))


def photocritique_item(row: Mapping[str, Any]) -> BenchmarkItem:
    """A post: its title and body, its photo, and its three ranked community critiques as references."""
    critiques = sorted(row.get("critiques") or [], key=lambda c: c["rank"])
    return BenchmarkItem(id=row["id"], fields={"title": row.get("title") or "", "body": row.get("body") or ""},
                         images=(_image(row.get("image"), row["image_sha256"]),),
                         references=tuple(c["body"] for c in critiques))


def critique_canvas_item(row: Mapping[str, Any]) -> BenchmarkItem:
    """An instruction about an image, with the verified response as its reference."""
    return BenchmarkItem(
        id=row["id"],
        fields={"instruction": row["instruction"], "domain": row.get("domain") or "", "dimension": row.get("dimension") or "",
                "selected_dimensions": list(row.get("selected_dimensions") or [])},
        images=(_image(row.get("image"), row["image_sha256"]),),
        references=(row["response"],),
    )


LAYOUTS = {
    "photocritique": BenchmarkLayout("photocritique", "photocritique", "posts", "test", "photocritique/critique",
                                     photocritique_item),
    "critique_canvas": BenchmarkLayout("critique_canvas", "critique_canvas", "records", "eval", "critique_canvas/critique",
                                       critique_canvas_item),
}
"""The benchmarks this package evaluates, by name."""
