"""The pure parts of what a materialization shows: digest and sample SQL, Markdown cells and tables, counters,
thumbnail sheets, column comments."""

import io

import duckdb
import pytest
from PIL import Image

from assets.core.logic import previews


def _png(colour, size=(80, 40)) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", size, colour).save(out, format="PNG")
    return out.getvalue()


def test_run_columns_are_the_run_not_the_data():
    assert all(map(previews.is_run_column, ["activity_id", "run_id", "decided_in_run", "recorded_at", "started_at", "latency_ms"]))
    assert not any(map(previews.is_run_column, ["record_id", "attempts", "score", "at_rest", "format"]))


def test_digest_is_order_independent_counts_repeats_and_sees_one_changed_value():
    con = duckdb.connect()
    con.execute("CREATE TABLE t (k VARCHAR, v INTEGER, j JSON, l INTEGER[])")
    rows = [("a", 1, '{"x": 1}', [1, 2]), ("b", 2, None, []), ("c", 3, '[]', None)]
    con.executemany("INSERT INTO t VALUES (?, ?, ?, ?)", rows)
    query = previews.digest_query("t", ["k", "v", "j", "l"])
    before = con.execute(query).fetchone()
    con.execute("CREATE TABLE u AS SELECT * FROM t ORDER BY k DESC")
    assert con.execute(previews.digest_query("u", ["k", "v", "j", "l"])).fetchone() == before
    con.execute("UPDATE t SET v = 4 WHERE k = 'b'")
    changed = con.execute(query).fetchone()
    assert changed[0] == 3 and changed != before
    con.execute("UPDATE t SET v = 2 WHERE k = 'b'")
    con.execute("INSERT INTO t VALUES ('a', 1, '{\"x\": 1}', [1, 2])")  # a repeated row is a change
    assert con.execute(query).fetchone()[0] == 4
    assert con.execute(previews.digest_query("t", [], "k = 'a'")).fetchone() == (2, 0)


def test_sample_is_the_same_rows_in_the_same_order_with_the_extra_expression_last():
    con = duckdb.connect()
    con.execute("CREATE TABLE t AS SELECT i AS n, 'x' || i AS s FROM range(20) r(i) ORDER BY random()")
    rows = con.execute(previews.sample_query("t", ["n", "s"], "n >= 3", 4, also="upper(s)")).fetchall()
    assert rows == [(3, "x3", "X3"), (4, "x4", "X4"), (5, "x5", "X5"), (6, "x6", "X6")]


def test_cells_are_one_line_escaped_redacted_and_short():
    assert previews.cell("a|b\nc") == "a\\|b c"
    assert previews.cell(None) == ""
    assert "SECRET" not in previews.cell("https://h/v1?api_key=SECRET", max_chars=200)
    assert previews.cell("x" * 100, max_chars=10) == "x" * 9 + "…"
    assert previews.markdown_table(["a", "b"], [(1, "z")]) == "| a | b |\n| --- | --- |\n| 1 | z |"


def test_counter_labels_do_not_read_as_contradictions():
    assert previews.count_label("images_pending") == "images waiting at start"
    assert previews.count_label("rows:critique_canvas_train.jsonl") == "rows: critique canvas train.jsonl"
    assert previews.counts_markdown({"rejected:too_small": 2, "images_pending": 69}).splitlines()[2:] == [
        "| images waiting at start | 69 |", "| rejected: too small | 2 |"]


def test_thumbnail_sheet_is_a_deterministic_grid_and_the_small_one_fits():
    images = [_png((i * 20, 100, 200 - i * 20)) for i in range(8)]
    sheet = previews.thumbnail_sheet(images, 32, columns=6, gap=4)
    assert sheet == previews.thumbnail_sheet(images, 32, columns=6, gap=4)
    assert Image.open(io.BytesIO(sheet)).size == (6 * 32 + 5 * 4, 2 * 32 + 4)
    assert Image.open(io.BytesIO(previews.thumbnail_sheet([b"not an image"], 16))).size == (16, 16)
    noisy = [Image.effect_noise((256, 256), 100).convert("RGB") for _ in range(6)]
    encoded = []
    for image in noisy:
        out = io.BytesIO()
        image.save(out, format="PNG")
        encoded.append(out.getvalue())
    assert len(previews.small_sheet(encoded, 20_000)) <= 20_000
    with pytest.raises(ValueError):
        previews.small_sheet(encoded, 100)


def test_column_comments_are_read_from_create_and_alter_statements():
    sql = """
    CREATE TABLE t (
        a VARCHAR PRIMARY KEY,   -- the key
        b INTEGER NOT NULL,
        PRIMARY KEY (a)          -- not a column
    );
    ALTER TABLE t ADD COLUMN c DOUBLE;   -- added later
    """
    assert previews.column_comments(sql) == {("t", "a"): "the key", ("t", "c"): "added later"}
