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
    to_item: Callable[[Mapping[str, Any], Mapping[str, Mapping[str, Mapping[str, Any]]]], BenchmarkItem] = field(repr=False)
    side: tuple[tuple[str, str], ...] = ()  # (config, key column): small configs an item is joined with (gold, poems)
    optional: bool = False  # a release may lack the config (counterfactual pairs): nothing to evaluate, not an error


class NoItems(ReleaseError):
    """The release has no rows of an optional benchmark config."""


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
        if layout.optional:
            raise NoItems(f"{folder}: the release has no {layout.config}/{layout.split}: nothing to evaluate")
        raise ReleaseError(f"{folder}: no shards of {layout.config}/{layout.split} (data/{layout.config}/{layout.split}-*.parquet)")
    data = {name: sha for name, sha in sorted(files.items()) if name.startswith("data/")}
    return Release(folder, layout.dataset, str(manifest.get("version", "")), digest_of(data))


def _shards(folder: Path, layout: BenchmarkLayout, config: str | None = None) -> list[Path]:
    return sorted((folder / "data" / (config or layout.config)).glob(f"{layout.split}-*-of-*.parquet"))


def _rows(release: Release, layout: BenchmarkLayout, config: str | None = None) -> Iterator[dict[str, Any]]:
    for shard in _shards(release.folder, layout, config):
        for batch in pq.ParquetFile(shard).iter_batches(batch_size=_BATCH_ROWS):
            yield from batch.to_pylist()


def side_rows(release: Release, layout: BenchmarkLayout, config: str) -> Iterator[dict[str, Any]]:
    """The rows of another config of the release, same split (the poem benchmark's annotations), streamed."""
    return _rows(release, layout, config)


def iter_items(release: Release, layout: BenchmarkLayout) -> Iterator[BenchmarkItem]:
    """Every evaluation item of the release, in shard and row order (side configs read once, whole: they are
    small, one row per item or per poem)."""
    side = {config: {row[key]: row for row in _rows(release, layout, config)} for config, key in layout.side}
    for number, row in enumerate(_rows(release, layout), start=1):
        try:
            yield layout.to_item(row, side)
        except (KeyError, TypeError, ValueError) as exc:  # a row the release writer would not write: not this release
            raise ReleaseError(f"{release.folder}: {layout.config}/{layout.split} row {number} is not a"
                               f" {layout.name} item ({type(exc).__name__}: {exc})") from exc


def _image(value: Mapping[str, Any] | None, sha256: str) -> ItemImage:
    value = value or {}
    return ItemImage(sha256, value.get("bytes"), value.get("path"))


Side = Mapping[str, Mapping[str, Mapping[str, Any]]]


def photocritique_item(row: Mapping[str, Any], side: Side) -> BenchmarkItem:
    """A post: its title and body, its photo, and its three ranked community critiques as references."""
    critiques = sorted(row.get("critiques") or [], key=lambda c: c["rank"])
    return BenchmarkItem(id=row["id"], fields={"title": row.get("title") or "", "body": row.get("body") or ""},
                         images=(_image(row.get("image"), row["image_sha256"]),),
                         references=tuple(c["body"] for c in critiques))


def critique_canvas_item(row: Mapping[str, Any], side: Side) -> BenchmarkItem:
    """An instruction about an image, with the verified response as its reference."""
    return BenchmarkItem(
        id=row["id"],
        fields={"instruction": row["instruction"], "domain": row.get("domain") or "", "dimension": row.get("dimension") or "",
                "selected_dimensions": list(row.get("selected_dimensions") or [])},
        images=(_image(row.get("image"), row["image_sha256"]),),
        references=(row["response"],),
    )


def _case_fields(row: Mapping[str, Any]) -> dict[str, Any]:
    return {"scenario": row.get("scenario") or "", "proposed_assessment": row.get("proposed_assessment") or "",
            "question": row.get("question") or "", "options": [{"id": o["id"], "text": o["text"]} for o in row.get("options") or []],
            "neutral_description": row.get("neutral_description") or "",
            "evidence_description": row.get("evidence_description") or ""}


def context_canvas_item(row: Mapping[str, Any], side: Side) -> BenchmarkItem:
    """A case: its scenario, question and options (the gold option id, kept in the release's ``gold`` config,
    joined by id, is the one reference; a case without gold cannot be scored)."""
    gold = (side.get("gold") or {}).get(row["id"]) or {}
    images = tuple(_image(image, sha) for image, sha in zip(row.get("images") or [], row.get("image_sha256") or []))
    return BenchmarkItem(id=row["id"], fields={**_case_fields(row), "golds": [gold.get("gold")],
                                               "rationale": gold.get("rationale") or ""}, images=images,
                         references=(gold["gold"],) if gold.get("gold") else ())


def counterfactual_item(row: Mapping[str, Any], side: Side) -> BenchmarkItem:
    """A counterfactual pair: the case with its original image (gold ``original_gold``) and its approved edit
    (gold ``edited_gold``), asked once each."""
    return BenchmarkItem(
        id=row["id"],
        fields={**_case_fields(row), "golds": [row["original_gold"], row["edited_gold"]], "case_id": row.get("case_id"),
                "decisive_cue": row.get("decisive_cue") or ""},
        images=(_image(row.get("original_image"), row["original_image_sha256"]),
                _image(row.get("edited_image"), row["edited_image_sha256"])),
        references=(row["original_gold"], row["edited_gold"]))


def aeseval_item(row: Mapping[str, Any], side: Side) -> BenchmarkItem:
    """A design question in one of the three formats, with the design's JSON metadata; judgment options are their
    own ids (yes, no), region options are lettered A-D, localisation has none (a box or None is the answer)."""
    texts = list(row.get("options") or [])
    ids = texts if row["format"] == "aesthetic_judgment" else [chr(ord("A") + i) for i in range(len(texts))]
    metadata = row.get("metadata") or "{}"
    try:
        canvas = json.loads(metadata).get("canvas") or {}
    except (ValueError, AttributeError):  # unreadable metadata: the question is still asked; boxes cannot be read
        canvas = {}
    return BenchmarkItem(
        id=row["question_id"],
        fields={"question": row["question"], "format": row["format"], "indicator": row["indicator"],
                "options": [{"id": i, "text": t} for i, t in zip(ids, texts)], "metadata": metadata,
                "box_units": row.get("box_units") or "pixels", "canvas": [canvas.get("width"), canvas.get("height")],
                "gold_box": list(row["answer_box"]) if row.get("answer_box") is not None else None},
        images=(_image(row.get("image"), row["image_sha256"]),),
        references=(row["answer"],))


def poem_item(row: Mapping[str, Any], side: Side) -> BenchmarkItem:
    """An illustration with its poem (joined from the release's ``poems`` config) and the people's mean score per
    rubric dimension (the gold a judge is compared with)."""
    poem = (side.get("poems") or {}).get(row["poem_id"]) or {}
    return BenchmarkItem(
        id=row["id"],
        fields={"poem_id": row["poem_id"], "generator": row.get("generator") or "", "title": poem.get("title") or row.get("title") or "",
                "author": poem.get("author") or row.get("author") or "", "text": poem.get("text") or "",
                "translation": poem.get("translation"), "human": dict(row.get("dimensions") or {}),
                "quality": row.get("quality"), "recognizability": row.get("recognizability")},
        images=(_image(row.get("image"), row["image_sha256"]),),
        references=())


LAYOUTS = {
    "photocritique": BenchmarkLayout("photocritique", "photocritique", "posts", "test", "photocritique/critique",
                                     photocritique_item),
    "critique_canvas": BenchmarkLayout("critique_canvas", "critique_canvas", "records", "eval", "critique_canvas/critique",
                                       critique_canvas_item),
    "context_canvas": BenchmarkLayout("context_canvas", "context_canvas", "cases", "eval", "context_canvas/choice",
                                      context_canvas_item, side=(("gold", "id"),)),
    "counterfactual": BenchmarkLayout("counterfactual", "context_canvas", "counterfactual_pairs", "eval",
                                      "counterfactual/choice", counterfactual_item, optional=True),
    "aeseval": BenchmarkLayout("aeseval", "aeseval", "questions", "benchmark", "aeseval/answer", aeseval_item),
    "poem_benchmark": BenchmarkLayout("poem_benchmark", "poem_benchmark", "images", "test", "poem_benchmark/judge",
                                      poem_item, side=(("poems", "poem_id"),)),
}
"""The benchmarks this package evaluates, by name."""
