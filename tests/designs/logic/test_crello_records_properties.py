"""Property tests of the Crello record parser: whatever a record holds, one design or one rejection comes back
with a documented reason; nothing raises out of it, and nothing it accepts is unrenderable by its numbers."""

import json
import math

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assets.designs.logic.crello_records import FORMATS, REASON_CODES, read_design_file, read_design_record
from assets.designs.parquet_source import parquet_rows
from tests.designs.logic.test_crello_records import v4_record, v5_record

JSON_SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=12),
    st.sampled_from(["TextElement", "rgba(1, 2, 3, 1)", "#fff", "blob:" + "0" * 64, "../x.png", "NaN", "1e400"]),
    st.binary(max_size=16),
)
VALUES = st.recursive(JSON_SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                             st.dictionaries(st.text(max_size=6), inner, max_size=3)),
                      max_leaves=8)
FIELDS = sorted(set(v5_record()) | set(v4_record()) | {"preview", "text_line", "font_bold", "font_italic", "suitability"})


@st.composite
def mutated(draw):
    """A valid v4 or v5 record with a few fields, or single list entries, replaced, deleted or added."""
    record = draw(st.sampled_from([v5_record, v4_record]))()
    for _ in range(draw(st.integers(min_value=1, max_value=4))):
        name = draw(st.sampled_from(FIELDS))
        action = draw(st.sampled_from(["replace", "delete", "entry", "entry"]))
        if action == "delete":
            record.pop(name, None)
        elif action == "entry" and isinstance(record.get(name), list) and record[name]:
            record[name][draw(st.integers(min_value=0, max_value=len(record[name]) - 1))] = draw(VALUES)
        else:
            record[name] = draw(VALUES)
    return record


def _one_outcome(read):
    assert (read.design is None) == (read.reason_code is not None)
    if read.design is None:
        assert read.reason_code in REASON_CODES and read.detail
        return
    json.loads(read.design.to_json())  # canonical JSON holds only finite numbers
    for element in read.design.elements:
        assert all(math.isfinite(v) for v in (element.left, element.top, element.width, element.height, element.angle))
        assert element.width > 0 and element.height > 0


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated(), st.sampled_from(FORMATS))
def test_random_mutations_of_a_valid_record_never_raise(record, fmt):
    _one_outcome(read_design_record("case.json", record, fmt=fmt))


@settings(max_examples=150, deadline=None)
@given(VALUES)
def test_any_json_value_is_a_rejection_or_a_design(value):
    _one_outcome(read_design_record("case.json", value))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=200))
def test_random_bytes_as_a_design_file_are_rejected(tmp_path, data):
    file = tmp_path / "random.json"
    file.write_bytes(data)
    read = read_design_file(file)
    assert read.design is None and read.reason_code in REASON_CODES


def test_a_parquet_row_of_wrong_types_is_that_rows_rejection(tmp_path):
    import duckdb

    path = tmp_path / "odd.parquet"
    con = duckdb.connect()
    con.execute(f"""COPY (SELECT 'p1' AS id, 'wide' AS canvas_width, 300 AS canvas_height, ['TextElement'] AS type,
                     'left' AS left, [0.0] AS top, [1.0] AS width, [1.0] AS height
                     UNION ALL SELECT 'p2', '400', 300, ['TextElement'], 'x', [0.0], [1.0], [1.0])
                    TO '{path}' (FORMAT parquet)""")
    con.close()
    reads = [row.parse() for row in parquet_rows(path)]
    assert [(r.source, r.reason_code) for r in reads] == [("odd.parquet#row=0", "bad_canvas"), ("odd.parquet#row=1", "not_a_list")]
