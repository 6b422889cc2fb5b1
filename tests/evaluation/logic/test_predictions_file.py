"""The predictions file: every row read gets one outcome, bad rows named by file and line; JSON lines and Parquet
hold the same rows; writing is byte-stable."""

import json

import pyarrow as pa
import pyarrow.parquet as pq

from assets.evaluation.logic.predictions_file import (
    BAD_TIMESTAMP,
    DUPLICATE_PREDICTION,
    MALFORMED_LINE,
    MISSING_FIELD,
    NOT_AN_OBJECT,
    SCHEMA,
    UNKNOWN_FIELD,
    UNREADABLE_FILE,
    WRONG_TYPE,
    Prediction,
    RowProblem,
    read_predictions,
    write_predictions,
)

GOOD = {"id": "abc123", "sample": 1, "task": "photocritique/critique", "model": "m", "condition": "capped_plain",
        "prompt": "Critique this photo.", "image_paths": ["images/abc123.jpg"], "reference": ["r1", "r2", "r3"],
        "prediction": "Nice light, tilted horizon.", "timestamp": "2026-12-02T10:00:00Z"}


def _jsonl(path, lines):
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def test_every_row_gets_one_outcome_and_bad_rows_name_their_line(tmp_path):
    lines = [
        json.dumps(GOOD),
        "{not json",
        json.dumps([1, 2]),
        json.dumps({**GOOD, "sample": 2, "predicton": "typo"}),
        json.dumps({k: v for k, v in GOOD.items() if k != "prediction"} | {"sample": 3}),
        json.dumps({**GOOD, "sample": 4, "reference": [1, 2]}),
        json.dumps({**GOOD, "sample": -1}),
        json.dumps({**GOOD, "sample": 5, "timestamp": "yesterday"}),
        json.dumps(GOOD),  # the same id and sample again
        "",
        json.dumps({**GOOD, "sample": 6, "reference": "one reference", "image_paths": None}),
    ]
    out = [parsed for _, parsed in read_predictions(_jsonl(tmp_path / "p.jsonl", lines), "runs/p.jsonl")]
    assert len(out) == 10  # the blank line is not a row
    kept = [o for o in out if isinstance(o, Prediction)]
    problems = [o for o in out if isinstance(o, RowProblem)]
    assert [(p.id, p.sample) for p in kept] == [("abc123", 1), ("abc123", 6)]
    assert kept[1].reference == ("one reference",) and kept[1].image_paths == ()
    assert [(p.reason_code, p.locator) for p in problems] == [
        (MALFORMED_LINE, "runs/p.jsonl#line=2"),
        (NOT_AN_OBJECT, "runs/p.jsonl#line=3"),
        (UNKNOWN_FIELD, "runs/p.jsonl#line=4"),
        (MISSING_FIELD, "runs/p.jsonl#line=5"),
        (WRONG_TYPE, "runs/p.jsonl#line=6"),
        (WRONG_TYPE, "runs/p.jsonl#line=7"),
        (BAD_TIMESTAMP, "runs/p.jsonl#line=8"),
        (DUPLICATE_PREDICTION, "runs/p.jsonl#line=9"),
    ]
    assert "did you mean 'prediction'?" in problems[2].detail and "already at runs/p.jsonl#line=1" in problems[7].detail
    assert all(p.detail.startswith("runs/p.jsonl") for p in problems)


def test_blank_ids_and_non_text_fields_are_rejected(tmp_path):
    lines = [json.dumps({**GOOD, "id": " "}), json.dumps({**GOOD, "model": 7}), json.dumps({**GOOD, "sample": True})]
    codes = [o.reason_code for _, o in read_predictions(_jsonl(tmp_path / "p.jsonl", lines), "p.jsonl")]
    assert codes == [MISSING_FIELD, WRONG_TYPE, WRONG_TYPE]


def test_parquet_and_jsonl_hold_the_same_rows_and_write_the_same_bytes_twice(tmp_path):
    rows = [Prediction(**{**GOOD, "sample": s, "image_paths": ("a.jpg",), "reference": ("r",)}) for s in range(3)]
    for suffix in (".jsonl", ".parquet"):
        first, second = tmp_path / f"one{suffix}", tmp_path / f"two{suffix}"
        assert write_predictions(rows, first) == write_predictions(rows, second) == 3
        assert first.read_bytes() == second.read_bytes()
        assert [p for _, p in read_predictions(first, first.name)] == rows
    assert pq.read_schema(tmp_path / "one.parquet").equals(SCHEMA)


def test_a_parquet_file_from_elsewhere_is_checked_row_by_row(tmp_path):
    table = pa.Table.from_pylist([{"id": "a", "task": "t", "model": "m", "prediction": "p", "sample": 0},
                                  {"id": "b", "task": "t", "model": "m", "prediction": None, "sample": 0}])
    pq.write_table(table, tmp_path / "theirs.parquet")
    out = [p for _, p in read_predictions(tmp_path / "theirs.parquet", "theirs.parquet")]
    assert isinstance(out[0], Prediction) and out[0].id == "a"
    assert (out[1].reason_code, out[1].locator) == (MISSING_FIELD, "theirs.parquet#row=2")


def test_a_file_that_cannot_be_read_is_one_problem(tmp_path):
    (tmp_path / "broken.parquet").write_bytes(b"not parquet at all")
    [(_, problem)] = read_predictions(tmp_path / "broken.parquet", "broken.parquet")
    assert problem.reason_code == UNREADABLE_FILE and "broken.parquet" in problem.detail
    [(_, missing)] = read_predictions(tmp_path / "absent.jsonl", "absent.jsonl")
    assert missing.reason_code == UNREADABLE_FILE
