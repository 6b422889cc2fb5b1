"""What a published dataset file must be for pyarrow, Hugging Face ``datasets`` and Croissant readers: one type per
column in every row, nested values included, and a declared type even for a column that holds no value in a run.
Shared by the AesEval and poem-benchmark export tests."""

import json
import tempfile
from pathlib import Path

import datasets
import pyarrow as pa
import pyarrow.json as pa_json
import pyarrow.parquet as pq


def _json_shape(value):
    """The JSON type of a value, nested; None where it is null (a null, or an empty list's element, fits any type).
    Raises when one list holds elements of two types."""
    if value is None:
        return None
    if isinstance(value, dict):
        return ("object", tuple(sorted((k, _json_shape(v)) for k, v in value.items())))
    if isinstance(value, list):
        inner = None
        for item in value:
            inner = _merge(inner, _json_shape(item))
        return ("array", inner)
    return type(value).__name__


def _merge(a, b):
    """The one type of two values of a column (or of a list): equal wherever both are known."""
    if a is None or b is None:
        return a if b is None else b
    if a[0] == b[0] == "array":
        return ("array", _merge(a[1], b[1]))
    if a[0] == b[0] == "object":
        assert [k for k, _ in a[1]] == [k for k, _ in b[1]], (a, b)
        return ("object", tuple((k, _merge(x, y)) for (k, x), (_, y) in zip(a[1], b[1])))
    assert a == b, (a, b)
    return a


def _no_null_type(data_type: pa.DataType) -> bool:
    if pa.types.is_null(data_type):
        return False
    return all(_no_null_type(data_type.field(i).type) for i in range(data_type.num_fields))


def assert_typed_exports(folder: Path, names: list[str]) -> None:
    """Every <name>.parquet declares a (non-null) type per column; every <name>.jsonl has one JSON shape per column
    and reads, under the Parquet file's schema, to the same table."""
    for name in names:
        table = pq.read_table(folder / f"{name}.parquet")
        assert table.num_rows > 0
        assert all(_no_null_type(field.type) for field in table.schema), table.schema
        lines = [json.loads(line) for line in (folder / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()]
        assert len(lines) == table.num_rows and all(list(line) == table.column_names for line in lines)
        for column in table.column_names:
            shape = None
            for line in lines:
                shape = _merge(shape, _json_shape(line[column]))
        pa_json.read_json(folder / f"{name}.jsonl")  # inferred types: a column that changes type would raise here
        declared = pa_json.read_json(folder / f"{name}.jsonl",
                                     parse_options=pa_json.ParseOptions(explicit_schema=table.schema))
        assert [field.type for field in declared.schema] == [field.type for field in table.schema]
        assert declared.to_pylist() == table.to_pylist(), name
        with tempfile.TemporaryDirectory() as cache:  # Hugging Face datasets reads both files to the same rows
            for kind in ("json", "parquet"):
                loaded = datasets.load_dataset(kind, data_files=str(folder / f"{name}.{'jsonl' if kind == 'json' else kind}"),
                                               split="train", cache_dir=cache)
                assert loaded.num_rows == table.num_rows and loaded.column_names == table.column_names
