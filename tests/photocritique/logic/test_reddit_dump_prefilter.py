"""The numpy key prefilter against the regex it stands in for, and scans spread over worker processes.

The prefilter decides which dump lines get parsed, so it must pick exactly the lines the regex picks: the
property test builds blocks from lines with wanted and unwanted ids, nested ids, blanks, long and odd values,
keys that overlap, and lines with no key at all, and compares the two on every one.
"""

from __future__ import annotations

import json

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assets.core.worker_processes import CpuPool
from assets.photocritique.logic.reddit_dumps import (
    COMMENT,
    SUBMISSION,
    DumpSource,
    LineBlock,
    _key_spans,
    read_dump_file,
    selector,
)
from resources.reddit_sources import RawItem, SourceProblem
from tests.photocritique.logic.test_reddit_dumps import comment, post, write_zst

WANTED = ["abc", "p1", "zz9", "abcdefgh", "abcdefghij", "k" * 20]  # heads of eight bytes: alike, then compared whole
ID_VALUES = st.sampled_from(["abc", "p1", "zz9", "abcdefgh", "abcdefghij", "abcdefghi", "abcdefgz", "k" * 20, "k" * 21,
                             "ab", "abcd", "P1", "p-1", "", "x" * 40, "y" * 300])
BLANKS = st.sampled_from(["", " ", "\t", "  ", " \t ", " " * 9])


@st.composite
def key_fields(draw, key: str, prefix: str) -> str:
    """One ``"key": "value"`` the way dumps write it, or one of the ways it can go wrong."""
    value = draw(ID_VALUES)
    shape = draw(st.sampled_from(["plain", "plain", "plain", "number", "null", "unquoted", "overlap", "no_prefix"]))
    blank = draw(BLANKS)
    if shape == "number":
        return f'"{key}":{blank}12'
    if shape == "null":
        return f'"{key}":{blank}null'
    if shape == "unquoted":
        return f'"{key}":{blank}{prefix}{value}'
    if shape == "overlap":  # a match whose value is itself a key: the regex skips the key inside it
        return f'"{key}":{blank}"{prefix}{key}":"{prefix}{value}"'
    if shape == "no_prefix":
        return f'"{key}":{blank}"{value}"'
    return f'"{key}":{blank}"{prefix}{value}"'


@st.composite
def dump_lines(draw, key: str, prefix: str) -> bytes:
    kind = draw(st.sampled_from(["record", "record", "nested", "no_key", "blank", "text"]))
    if kind == "blank":
        return draw(st.sampled_from([b"", b" ", b"\t \r"]))
    if kind == "text":
        return draw(st.binary(max_size=60)).replace(b"\n", b" ")
    fields = [f'"title":"{draw(st.text(max_size=12))}"'.replace("\n", " ")]
    if kind != "no_key":
        fields += [draw(key_fields(key, prefix)) for _ in range(draw(st.integers(1, 3)))]
    if kind == "nested":
        fields.insert(0, f'"crosspost_parent_list":[{{{draw(key_fields(key, prefix))}}}]')
    fields.append('"media_metadata":{"m":{"id":"abcdefghijklm"}}')  # 13-character media ids, as Reddit's
    return ("{" + ",".join(draw(st.permutations(fields))) + "}").encode("utf-8", "surrogatepass")


def _block(lines: list[bytes], lead: bytes) -> LineBlock:
    """The lines as a block that starts ``len(lead)`` bytes into its chunk, followed by part of a next line."""
    body = b"".join(line + b"\n" for line in lines)
    data = lead + body + b'{"id":"p1'
    line_ends = np.flatnonzero(np.frombuffer(body, np.uint8) == 0x0A)
    return LineBlock(data, len(lead), len(lead) + len(body), 0, 1, line_ends)


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_the_prefilter_picks_the_lines_the_regex_picks(data):
    for kind, key, prefix in ((SUBMISSION, "id", ""), (COMMENT, "link_id", "t3_")):
        lines = data.draw(st.lists(dump_lines(key, prefix), min_size=1, max_size=12))
        block = _block(lines, data.draw(st.sampled_from([b"", b'x"id":"p1"\n', b"abc"])))
        selection = selector(kind, ids=WANTED) if kind == SUBMISSION else selector(kind, post_ids=WANTED)

        assert selection.spans(block) == selection.spans_by_regex(block)


def test_the_numpy_path_settles_dump_like_blocks_itself():
    """Blanks after colons, nested ids and 13-character media ids are all in ordinary dumps: none of them may
    send a block to the regex, or the prefilter would be the regex again."""
    posts = [json.dumps(post(f"p{i}", media_metadata={"abcdefghijklm": {"id": "abcdefghijklm"}},
                             crosspost_parent_list=[{"id": "abc"}])).encode() for i in range(50)]
    comments = [json.dumps(comment(f"c{i}", "abc" if i % 7 == 0 else "zzz")).encode() for i in range(50)]
    for kind, lines in ((SUBMISSION, posts), (COMMENT, comments)):
        selection = selector(kind, ids=["abc", "p3"]) if kind == SUBMISSION else selector(kind, post_ids=["abc"])
        block = _block(lines, b"")

        spans = _key_spans(block, selection.key, selection.value_prefix, selection.wanted_bytes, selection.wanted_heads)

        assert spans is not None and spans == selection.spans_by_regex(block)
        assert len(spans) == (50 if kind == SUBMISSION else 8)  # every post has a nested "abc"


def test_ids_longer_than_one_window_are_followed_and_compared_whole():
    lines = [json.dumps(post(name)).encode() for name in ("short", "a" * 20, "a" * 21, "b" * 40)]
    selection = selector(SUBMISSION, ids=["a" * 20, "short"])
    block = _block(lines, b"")

    spans = _key_spans(block, selection.key, selection.value_prefix, selection.wanted_bytes, selection.wanted_heads)

    assert [index for _, _, index in spans] == [0, 1]


def test_a_pool_scans_several_files_at_once_with_the_same_results(tmp_path):
    write_zst(tmp_path / "RS_2020-01.zst", [post("abc"), post("zzz"), post("def")], frames=2)
    write_zst(tmp_path / "RS_2020-02.zst", [post("ghi"), b"not json", post("abc")])
    (tmp_path / "RS_2020-03.zst").write_bytes((tmp_path / "RS_2020-02.zst").read_bytes()[:-7])  # truncated
    write_zst(tmp_path / "RC_2020-01.zst", [comment("c1", "abc"), comment("c2", "zzz"), {"id": "c3"}])
    write_zst(tmp_path / "RC_2020-02.zst", [comment("c4", "def", "t1_c9"), comment("c5", "abc")])
    ids = ["abc", "def", "ghi", "gone"]

    serial = DumpSource([tmp_path])
    expected = list(serial.submissions(ids, None)) + list(serial.comments(ids))
    with CpuPool(2) as pool:
        pooled = DumpSource([tmp_path], pool=pool)
        found = list(pooled.submissions(ids, None)) + list(pooled.comments(ids))

    assert found == expected
    assert [r.data["id"] for r in found if isinstance(r, RawItem)] == ["abc", "def", "ghi", "abc", "c1", "c4", "c5"]
    assert [(r.reason_code, r.origin.line_no) for r in found if isinstance(r, SourceProblem)] == [
        ("malformed_json", 2), ("truncated_file", 1), ("not_found", None), ("missing_field", 3)]


def test_read_dump_file_is_one_files_scan(tmp_path):
    path = tmp_path / "RC_2020-01.zst"
    write_zst(path, [comment("c1", "abc"), comment("c2", "zzz")])

    [record] = read_dump_file(path, selector(COMMENT, post_ids=["abc"]), "dumps/RC_2020-01.zst")

    assert record.data["id"] == "c1" and record.origin.locator == "dumps/RC_2020-01.zst" and record.origin.line_no == 1
