"""The predictions file: what a model answered on a benchmark's items, as aesforge writes it and as it reads
someone else's (AesCanvas S2.4: the evaluator scores prediction files, so a run elsewhere can be scored here).

One row per answer: the benchmark item's ``id`` and, where a benchmark asks several answers per item
(photocritique: three critiques per post), the ``sample`` index; the ``task``, ``model`` and prompt
``condition``; the ``prompt`` as sent; the item's ``image_paths`` (relative to the release folder); the
``reference`` texts; the ``prediction``; and a ``timestamp`` (ISO 8601). JSON lines or Parquet with the same
columns. Reading validates every row and gives each one exactly one outcome: a ``Prediction``, or a
``RowProblem`` with a reason code and the file and line it came from; a bad row never stops the file.
"""

from __future__ import annotations

import difflib
import json
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from assets.core.logic.iteration import batched

FORMAT_VERSION = "1"

REQUIRED = ("id", "task", "model", "prediction")
OPTIONAL = ("sample", "condition", "prompt", "image_paths", "reference", "timestamp", "call_id")
FIELDS = (*REQUIRED, *OPTIONAL)

# Reason codes of a rejected row.
MALFORMED_LINE = "malformed_line"
NOT_AN_OBJECT = "not_an_object"
MISSING_FIELD = "missing_field"
UNKNOWN_FIELD = "unknown_field"
WRONG_TYPE = "wrong_type"
BAD_TIMESTAMP = "bad_timestamp"
DUPLICATE_PREDICTION = "duplicate_prediction"
UNREADABLE_FILE = "unreadable_predictions_file"

SCHEMA = pa.schema([
    ("id", pa.string()), ("sample", pa.int32()), ("task", pa.string()), ("model", pa.string()),
    ("condition", pa.string()), ("prompt", pa.string()), ("image_paths", pa.list_(pa.string())),
    ("reference", pa.list_(pa.string())), ("prediction", pa.string()), ("timestamp", pa.string()),
    ("call_id", pa.string()),
])
_PARQUET_SETTINGS = {"compression": "zstd", "compression_level": 9, "use_dictionary": False, "write_statistics": False}
_BATCH_ROWS = 4096


@dataclass(frozen=True)
class Prediction:
    id: str
    task: str
    model: str
    prediction: str
    sample: int = 0
    condition: str = ""
    prompt: str = ""
    image_paths: tuple[str, ...] = ()
    reference: tuple[str, ...] = ()
    timestamp: str = ""
    call_id: str | None = None

    @property
    def key(self) -> tuple[str, str, str, int]:
        """A model's answer under a condition is one row per item and sample: the key a file may hold once."""
        return (self.model, self.condition, self.id, self.sample)

    def as_row(self) -> dict[str, Any]:
        return {"id": self.id, "sample": self.sample, "task": self.task, "model": self.model, "condition": self.condition,
                "prompt": self.prompt, "image_paths": list(self.image_paths), "reference": list(self.reference),
                "prediction": self.prediction, "timestamp": self.timestamp, "call_id": self.call_id}


@dataclass(frozen=True)
class RowProblem:
    locator: str  # <file>#line=N (JSON lines) or <file>#row=N (Parquet), 1-based
    reason_code: str
    detail: str


def parse_row(record: Any, locator: str) -> Prediction | RowProblem:
    """One row as read (a decoded JSON value or a Parquet row as a dict), checked field by field."""
    if not isinstance(record, dict):
        return RowProblem(locator, NOT_AN_OBJECT, f"{locator}: a row is a JSON object, not {type(record).__name__}")
    unknown = sorted(set(record) - set(FIELDS))
    if unknown:
        hints = [f"{k!r}" + (f" (did you mean {close[0]!r}?)" if (close := difflib.get_close_matches(k, FIELDS, 1)) else "")
                 for k in unknown]
        return RowProblem(locator, UNKNOWN_FIELD, f"{locator}: unknown field(s) {', '.join(hints)}; fields: {', '.join(FIELDS)}")
    missing = [k for k in REQUIRED if record.get(k) is None]
    if missing:
        return RowProblem(locator, MISSING_FIELD, f"{locator}: missing {', '.join(missing)}")
    problems = [f"{k} is {type(record[k]).__name__}, not text" for k in (*REQUIRED, "condition", "prompt", "timestamp", "call_id")
                if record.get(k) is not None and not isinstance(record[k], str)]
    sample = record.get("sample", 0)
    if sample is None:
        sample = 0
    if isinstance(sample, float) and sample.is_integer() and math.isfinite(sample):
        sample = int(sample)
    if isinstance(sample, bool) or not isinstance(sample, int) or sample < 0:
        problems.append(f"sample is {sample!r}, not a whole number >= 0")
    lists = {k: _texts(record.get(k)) for k in ("image_paths", "reference")}
    problems += [f"{k} is {type(record[k]).__name__}, not text or a list of texts" for k, v in lists.items() if v is None]
    if problems:
        return RowProblem(locator, WRONG_TYPE, f"{locator}: {'; '.join(problems)}")
    if not record["id"].strip() or not record["task"].strip() or not record["model"].strip():
        return RowProblem(locator, MISSING_FIELD, f"{locator}: id, task and model must not be blank")
    timestamp = record.get("timestamp") or ""
    if timestamp and not _is_iso(timestamp):
        return RowProblem(locator, BAD_TIMESTAMP, f"{locator}: timestamp {timestamp!r} is not ISO 8601")
    return Prediction(id=record["id"], task=record["task"], model=record["model"], prediction=record["prediction"],
                      sample=sample, condition=record.get("condition") or "", prompt=record.get("prompt") or "",
                      image_paths=lists["image_paths"] or (), reference=lists["reference"] or (), timestamp=timestamp,
                      call_id=record.get("call_id"))


def _texts(value: Any) -> tuple[str, ...] | None:
    """A text or a list of texts as a tuple (None or absent: empty); None for anything else."""
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return tuple(value)
    return None


def _is_iso(value: str) -> bool:
    try:
        datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return False
    return True


def read_predictions(path: Path, name: str) -> Iterator[tuple[str, Prediction | RowProblem]]:
    """Every row of a ``.jsonl`` or ``.parquet`` predictions file with its locator (``<name>#line=N`` or
    ``#row=N``), streamed in file order; ``name`` is how the warehouse names the file. A second row for a (model,
    condition, id, sample) already read is a ``duplicate_prediction``; a file that cannot be read at all yields one
    ``unreadable_predictions_file`` problem after the rows it gave."""
    seen: dict[tuple[str, str, str, int], str] = {}
    rows = _parquet_rows(path, name) if path.suffix == ".parquet" else _jsonl_rows(path, name)
    for locator, parsed in rows:
        if isinstance(parsed, Prediction):
            if parsed.key in seen:
                yield locator, RowProblem(locator, DUPLICATE_PREDICTION, f"{locator}: id {parsed.id!r} sample {parsed.sample}"
                                          f" of {parsed.model!r} ({parsed.condition or 'no condition'}) is already at"
                                          f" {seen[parsed.key]}")
                continue
            seen[parsed.key] = locator
        yield locator, parsed


def _jsonl_rows(path: Path, name: str) -> Iterator[tuple[str, Prediction | RowProblem]]:
    try:
        with path.open("rb") as stream:
            for number, raw in enumerate(stream, start=1):
                locator = f"{name}#line={number}"
                if not raw.strip():
                    continue
                try:
                    record = json.loads(raw)
                except (UnicodeDecodeError, json.JSONDecodeError) as exc:
                    yield locator, RowProblem(locator, MALFORMED_LINE, f"{locator}: not JSON ({exc})")
                    continue
                yield locator, parse_row(record, locator)
    except OSError as exc:
        yield name, RowProblem(name, UNREADABLE_FILE, f"{name}: {type(exc).__name__}: {exc.strerror or exc}")


def _parquet_rows(path: Path, name: str) -> Iterator[tuple[str, Prediction | RowProblem]]:
    number = 0
    try:
        for batch in pq.ParquetFile(path).iter_batches(batch_size=_BATCH_ROWS):
            for record in batch.to_pylist():
                number += 1
                locator = f"{name}#row={number}"
                yield locator, parse_row(record, locator)
    except (OSError, pa.ArrowException) as exc:
        yield name, RowProblem(name, UNREADABLE_FILE, f"{name}: not a readable Parquet file ({exc})")


def write_predictions(predictions: Iterable[Prediction], path: Path) -> int:
    """Stream predictions to a JSON-lines or Parquet file (by the suffix) with fixed settings, in the order given
    (callers give (model, condition, id, sample) order, so the same predictions give the same bytes). Returns the row count."""
    n = 0
    if path.suffix == ".parquet":
        with pq.ParquetWriter(path, SCHEMA, **_PARQUET_SETTINGS) as writer:
            for chunk in batched(predictions, _BATCH_ROWS):
                writer.write_table(pa.Table.from_pylist([p.as_row() for p in chunk], schema=SCHEMA))
                n += len(chunk)
        return n
    with path.open("w", encoding="utf-8", newline="\n") as stream:
        for p in predictions:
            stream.write(json.dumps(p.as_row(), ensure_ascii=False, sort_keys=True) + "\n")
            n += 1
    return n
