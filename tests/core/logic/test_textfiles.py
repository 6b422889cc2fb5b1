"""The record-by-record reader: one bad line is that line's problem, the rest of the file is read."""

import codecs

from hypothesis import given, settings
from hypothesis import strategies as st

from assets.core.logic.textfiles import read_csv_records, read_jsonl_records, read_lines


def _write(tmp_path, data: bytes, name="f.csv"):
    path = tmp_path / name
    path.write_bytes(data)
    return path


def test_latin1_line_is_its_own_problem_and_the_other_lines_are_read(tmp_path):
    path = _write(tmp_path, b"locator,title\na.jpg,Fine\nb.jpg,Caf\xe9\nc.jpg,Also fine\n")
    records = list(read_csv_records(path))
    assert [(r.line, r.fields) for r in records if r.problem is None] == [
        (2, {"locator": "a.jpg", "title": "Fine"}), (4, {"locator": "c.jpg", "title": "Also fine"})]
    [bad] = [r for r in records if r.problem]
    assert bad.line == 3 and bad.problem[0] == "bad_encoding" and "line 3" in bad.problem[1] and "e9" in bad.problem[1]
    assert not bad.file_level


def test_bom_crlf_and_blank_lines(tmp_path):
    path = _write(tmp_path, codecs.BOM_UTF8 + b"locator,title\r\n\r\na.jpg,One\r\n\r\nb.jpg,\"Two,\r\nlines\"\r\n")
    records = list(read_csv_records(path))
    assert [(r.line, r.fields) for r in records] == [
        (3, {"locator": "a.jpg", "title": "One"}), (5, {"locator": "b.jpg", "title": "Two,\nlines"})]


def test_empty_header_only_and_bad_header(tmp_path):
    [empty] = read_csv_records(_write(tmp_path, b"", "e.csv"))
    assert empty.file_level and empty.problem[0] == "empty_file"
    assert list(read_csv_records(_write(tmp_path, b"locator,title\n", "h.csv"))) == []
    [bad] = read_csv_records(_write(tmp_path, b"locator,locator\nx,y\n", "d.csv"))
    assert bad.file_level and bad.problem[0] == "bad_header" and "repeats" in bad.problem[1]


def test_ragged_rows(tmp_path):
    records = list(read_csv_records(_write(tmp_path, b"a,b\n1,2,3\n4\n5,6\n")))
    assert [(r.line, r.problem[0] if r.problem else r.fields) for r in records] == [
        (2, "ragged_row"), (3, "ragged_row"), (4, {"a": "5", "b": "6"})]


def test_binary_garbage_is_one_problem_per_line(tmp_path):
    path = _write(tmp_path, b"locator\n\x00\x01\xff\xfe garbage\nok.jpg\n")
    records = list(read_csv_records(path))
    assert [r.problem[0] if r.problem else r.fields for r in records] == ["bad_encoding", {"locator": "ok.jpg"}]


def test_utf16_file_is_read(tmp_path):
    path = _write(tmp_path, "locator,title\nä.jpg,Über\n".encode("utf-16"))
    assert [r.fields for r in read_csv_records(path)] == [{"locator": "ä.jpg", "title": "Über"}]


def test_jsonl_bad_lines(tmp_path):
    path = _write(tmp_path, b'{"a": 1}\n{broken\n\n"\xff"\n[2]\n', "f.jsonl")
    records = list(read_jsonl_records(path))
    assert [(r.line, r.fields, r.problem[0] if r.problem else None) for r in records] == [
        (1, {"a": 1}, None), (2, None, "invalid_json"), (4, None, "bad_encoding"), (5, [2], None)]
    [empty] = read_jsonl_records(_write(tmp_path, b"\n\n", "e.jsonl"))
    assert empty.file_level and empty.problem[0] == "empty_file"


def test_line_numbers_count_physical_lines(tmp_path):
    lines = list(read_lines(_write(tmp_path, b"a\r\nb\n\nc")))
    assert [(l.number, l.text) for l in lines] == [(1, "a"), (2, "b"), (3, ""), (4, "c")]


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=400))
def test_random_bytes_never_raise(tmp_path_factory, data):
    folder = tmp_path_factory.mktemp("fuzz")
    for reader, name in ((read_csv_records, "x.csv"), (read_jsonl_records, "x.jsonl")):
        path = folder / name
        path.write_bytes(data)
        for record in reader(path):
            assert (record.fields is None) == (record.problem is not None)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from([b"locator,title\n", b"a.jpg,T\n", b"\xe9", b'"', b",", b"\r\n", b"\n", b"\x00", b"b.png,\"x\ny\"\n"]),
                max_size=30))
def test_mutated_manifests_never_raise(tmp_path_factory, parts):
    path = tmp_path_factory.mktemp("mut") / "m.csv"
    path.write_bytes(b"locator,title\n" + b"".join(parts))
    for record in read_csv_records(path):
        assert record.line >= 0
        if record.fields is not None:
            assert set(record.fields) == {"locator", "title"}
