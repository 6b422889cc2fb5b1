"""Checks every release test makes on a written release folder, with the readers a user has: ``datasets``,
pyarrow, pandas, DuckDB and mlcroissant. Each check compares what a reader sees with the folder's own
``release.json`` (rows per config and split) and ``ATTRIBUTION.csv`` (which image bytes are included), and fails
naming the config, split, row or file."""

from __future__ import annotations

import csv
import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import datasets
import duckdb
import mlcroissant
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from PIL import Image

from warehouse.db import Warehouse

SHA_COLUMNS = {"image": "image_sha256", "images": "image_sha256", "original_image": "original_image_sha256",
               "edited_image": "edited_image_sha256"}
"""Image column -> the column naming its image(s) by sha256, as the releases' row design has it."""


def release_rows(folder: Path) -> dict[str, dict[str, int]]:
    """{config: {split: rows}} as the folder's ``release.json`` records them."""
    rows: dict[str, dict[str, int]] = {}
    for key, n in json.loads((folder / "release.json").read_text())["rows"].items():
        config, split = key.split("/")
        rows.setdefault(config, {})[split] = n
    return rows


def included_images(folder: Path) -> dict[str, bool]:
    """{image sha256: whether its bytes ship}, from ``ATTRIBUTION.csv``."""
    with (folder / "ATTRIBUTION.csv").open(encoding="utf-8", newline="") as stream:
        return {row["image_sha256"]: row["bytes_included"] == "true" for row in csv.DictReader(stream)}


@dataclass
class LoadedRelease:
    configs: dict[str, datasets.DatasetDict]
    decoded: int  # image values that decoded to PIL images
    withheld: int  # image values that are null because their licence withholds the bytes


def check_release_loads(folder: Path, sha_columns: Mapping[str, str] = SHA_COLUMNS,
                        cache_dir: Path | None = None) -> LoadedRelease:
    """Every config loads with ``datasets.load_dataset(folder, config)`` with exactly the splits and rows of
    ``release.json``; every image value is a PIL image whose embedded bytes have the sha256 its row names, or null
    exactly where ``ATTRIBUTION.csv`` says the bytes are withheld."""
    expected = release_rows(folder)
    assert sorted(datasets.get_dataset_config_names(str(folder))) == sorted(expected)
    included = included_images(folder)
    loaded, decoded, withheld = {}, 0, 0
    for config, splits in expected.items():
        dataset = datasets.load_dataset(str(folder), config, cache_dir=str(cache_dir) if cache_dir else None)
        assert {split: d.num_rows for split, d in dataset.items()} == splits, config
        for split, part in dataset.items():
            for column, feature in part.features.items():
                many = isinstance(feature, datasets.List) and isinstance(feature.feature, datasets.Image)
                if not (many or isinstance(feature, datasets.Image)):
                    continue
                raw = part.cast_column(column, datasets.List(datasets.Image(decode=False)) if many
                                       else datasets.Image(decode=False))
                for n, (image, stored, sha) in enumerate(zip(part[column], raw[column], part[sha_columns[column]])):
                    where = f"{config}/{split} row {n} column {column}"
                    for one, bytes_of, sha256 in (zip(image, stored, sha) if many else [(image, stored, sha)]):
                        assert sha256 in included, f"{where}: image {sha256} is not in ATTRIBUTION.csv"
                        if included[sha256]:
                            assert isinstance(one, Image.Image), where
                            assert hashlib.sha256(bytes_of["bytes"]).hexdigest() == sha256, where
                            decoded += 1
                        else:
                            assert one is None and bytes_of is None, f"{where}: withheld image {sha256} has bytes"
                            withheld += 1
        loaded[config] = dataset
    return LoadedRelease(loaded, decoded, withheld)


def shards(folder: Path) -> dict[str, dict[str, list[Path]]]:
    """{config: {split: its shard files, in order}} found under ``data/``."""
    found: dict[str, dict[str, list[Path]]] = {}
    for path in sorted((folder / "data").glob("*/*.parquet")):
        found.setdefault(path.parent.name, {}).setdefault(path.name.split("-")[0], []).append(path)
    return found


def check_shard_readers(folder: Path) -> None:
    """pyarrow, pandas and DuckDB read every shard; each gives every split the rows ``release.json`` records."""
    expected = release_rows(folder)
    found = shards(folder)
    assert {c: set(s) for c, s in found.items()} == {c: set(s) for c, s in expected.items()}
    for config, splits in found.items():
        for split, files in splits.items():
            by_pyarrow = sum(pq.read_table(f).num_rows for f in files)
            by_pandas = sum(len(pd.read_parquet(f)) for f in files)
            by_duckdb = duckdb.connect().execute("SELECT count(*) FROM read_parquet(?)", [[str(f) for f in files]]).fetchone()[0]
            assert by_pyarrow == by_pandas == by_duckdb == expected[config][split], (config, split)


def _typed(data_type: pa.DataType) -> bool:
    """Whether a type, and every type nested in it, is something other than Arrow's null type."""
    return not pa.types.is_null(data_type) and all(_typed(data_type.field(i).type) for i in range(data_type.num_fields))


def check_one_type_per_column(folder: Path) -> dict[str, pa.Schema]:
    """Every shard of a config, whichever its split, has the same columns with the same types, and no column (nested
    fields included) is typed null, as an always-null column left uncast would be. Returns {config: schema}."""
    schemas: dict[str, pa.Schema] = {}
    for config, splits in shards(folder).items():
        found = {pq.read_schema(f).remove_metadata() for files in splits.values() for f in files}
        assert len(found) == 1, f"{config}: its shards disagree on the schema: {found}"
        (schema,) = found
        untyped = [f.name for f in schema if not _typed(f.type)]
        assert not untyped, f"{config}: columns typed null: {untyped}"
        schemas[config] = schema
    return schemas


def key_values(folder: Path, config: str, key: str) -> list[str]:
    """The key column of every shard of ``config``, read with pyarrow."""
    return [v for files in shards(folder)[config].values() for f in files for v in pq.read_table(f, columns=[key])[key].to_pylist()]


def check_croissant_records(folder: Path) -> None:
    """``mlcroissant.Dataset(croissant.json).records(record_set)`` yields, for every record set, one record per row
    of its config (all splits), with the same keys as the shards and the split read from the file name."""
    document = json.loads((folder / "croissant.json").read_text(encoding="utf-8"))
    dataset = mlcroissant.Dataset(str(folder / "croissant.json"))
    expected = release_rows(folder)
    assert sorted(rs["@id"] for rs in document["recordSet"]) == sorted(expected)
    for record_set in document["recordSet"]:
        config = record_set["@id"]
        key_field = record_set["key"]["@id"]
        records = list(dataset.records(config))
        assert len(records) == sum(expected[config].values()), config
        keys = [r[key_field].decode() for r in records]
        assert sorted(keys) == sorted(key_values(folder, config, key_field.split("/", 1)[1])), config
        assert {r[f"{config}/split"].decode() for r in records} == set(expected[config]), config


def check_release_folder(folder: Path, cache_dir: Path | None = None) -> LoadedRelease:
    """All three reading checks; returns what ``datasets`` loaded."""
    loaded = check_release_loads(folder, cache_dir=cache_dir)
    check_shard_readers(folder)
    check_croissant_records(folder)
    return loaded


def _text_of(path: Path) -> str:
    """A file as the text a reader can see in it: a Parquet file's schema metadata and every value but binary ones
    (image bytes), any other file decoded as UTF-8."""
    if path.suffix != ".parquet":
        return path.read_text(encoding="utf-8")
    table = pq.read_table(path)
    metadata = {k.decode(): v.decode() for k, v in (table.schema.metadata or {}).items()}

    def readable(value: Any) -> Any:
        if isinstance(value, bytes):
            return None
        if isinstance(value, dict):
            return {k: readable(v) for k, v in value.items()}
        if isinstance(value, list):
            return [readable(v) for v in value]
        return value

    return json.dumps([metadata, readable(table.to_pylist())], default=str, ensure_ascii=False)


def check_no_local_traces(folder: Path, forbidden: Iterable[str], files: Iterable[str] | None = None) -> None:
    """No file of the release (``release.json`` aside: it keeps the build's run on purpose) holds any of
    ``forbidden`` (absolute paths, ``file://``, run ids, activity ids); ``files`` narrows the check to those
    relative paths."""
    forbidden = sorted(set(forbidden))
    names = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()) if files is None else list(files)
    for name in names:
        if name == "release.json":
            continue
        text = _text_of(folder / name)
        found = [f for f in forbidden if f in text]
        assert not found, f"{name} holds {found}"


def run_traces(wh: Warehouse) -> list[str]:
    """What a release must not carry from this warehouse's runs: every run id and activity id, and ``file://``."""
    with wh.transaction() as con:
        rows = con.execute("SELECT DISTINCT run_id FROM activity UNION SELECT DISTINCT activity_id FROM activity").fetchall()
    return ["file://", "activity:", *(value for (value,) in rows if value)]


def file_states(folder: Path) -> dict[str, tuple[str, int]]:
    """{relative path: (sha256, modification time in ns)} of every file: equal before and after means untouched."""
    return {str(p.relative_to(folder)): (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns)
            for p in sorted(folder.rglob("*")) if p.is_file()}


def last_summary(wh: Warehouse, asset_key: str) -> dict[str, Any]:
    """The step summary (counts and notes) of ``asset_key``'s latest run."""
    summary = wh.scalar("SELECT summary FROM activity WHERE asset_key = ? ORDER BY started_at DESC LIMIT 1", [asset_key])
    return json.loads(summary or "{}")


def parquet_frame(folder: Path, config: str) -> pd.DataFrame:
    """Every shard of ``config`` as one frame with its split, for comparing rows with the warehouse."""
    return pd.concat([pd.read_parquet(f).assign(split=split) for split, files in shards(folder)[config].items()
                      for f in files], ignore_index=True)

