"""DumpSource and the streaming line reader against real zstd files written in tmp_path."""

from __future__ import annotations

import json
import pickle
import threading
from pathlib import Path

import pytest
import zstandard

from assets.photocritique.logic.reddit_dumps import (
    COMMENT,
    NOT_ZSTD,
    SUBMISSION,
    DumpSource,
    classify_dump,
    dump_file_lines,
    iter_lines,
    read_line,
)
from assets.photocritique.logic.reddit_records import (
    BAD_FIELD_TYPE,
    MISSING_FIELD,
    TRUNCATED_FILE,
    UNREADABLE_FILE,
    UNSUPPORTED_FILE,
)
from assets.core.logic.textfiles import BAD_ENCODING, EMPTY_FILE
from resources.reddit_sources import MALFORMED_JSON, NOT_FOUND, RawItem, SourceProblem, SubredditWindow

MULTIBYTE_TEXT = "café 写真 📷 naïve — déjà vu"


def _line(value: dict | bytes | str) -> bytes:
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False).encode()
    return value if isinstance(value, bytes) else value.encode()


def write_zst(path: Path, lines: list, *, frames: int = 1, window_log: int | None = None, final_newline: bool = True) -> bytes:
    """Write ``lines`` as NDJSON in ``frames`` zstd frames via a streaming writer (no content size, like real dumps).

    Returns the uncompressed bytes so tests can compare offsets with them.
    """
    raw = b"\n".join(_line(value) for value in lines) + (b"\n" if final_newline else b"")
    params = zstandard.ZstdCompressionParameters.from_level(3, window_log=window_log or 0, write_checksum=1)
    compressor = zstandard.ZstdCompressor(compression_params=params)
    step = -(-len(raw) // frames)
    with open(path, "wb") as fh:
        for start in range(0, len(raw), step):
            with compressor.stream_writer(fh, closefd=False) as writer:
                writer.write(raw[start : start + step])
    return raw


def post(post_id: str, **fields) -> dict:
    return {"id": post_id, "name": f"t3_{post_id}", "subreddit": "photocritique", "title": f"title of {post_id}",
            "created_utc": 1_700_000_000, "retrieved_on": 1_700_000_600, **fields}


def comment(comment_id: str, post_id: str, parent: str | None = None, **fields) -> dict:
    return {"id": comment_id, "link_id": f"t3_{post_id}", "parent_id": parent or f"t3_{post_id}",
            "body": f"comment {comment_id} {MULTIBYTE_TEXT}", "created_utc": "1700000100", **fields}


def items(results) -> list[RawItem]:
    return [r for r in results if isinstance(r, RawItem)]


def problems(results) -> list[SourceProblem]:
    return [r for r in results if isinstance(r, SourceProblem)]


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("RS_2019-01.zst", SUBMISSION),
        ("RC_2019-01.zst", COMMENT),
        ("RS_2005-06.ndjson", SUBMISSION),
        ("RC_2023-12.jsonl", COMMENT),
        ("photocritique_submissions.zst", SUBMISSION),
        ("photocritique_comments.zst", COMMENT),
        ("Photo_Critique_comments.ndjson", COMMENT),
        ("photocritique_submissions.jsonl", SUBMISSION),
        ("/data/reddit/dumps/RS_2020-02.zst", SUBMISSION),
        ("RS_2019-1.zst", None),
        ("RS_2019-01.zst.part", None),
        ("RS_2019-01.json", None),
        ("rs_2019-01.zst", None),
        ("photocritique_posts.zst", None),
        ("_submissions.zst", None),
        ("notes.txt", None),
    ],
)
def test_classify_dump_by_name(name, kind):
    assert classify_dump(name) == kind
    assert classify_dump(Path(name)) == kind


@pytest.mark.parametrize("chunk_size", [1, 2, 3, 5, 7, 64, 4096])
def test_lines_come_out_whole_and_at_the_right_offsets(tmp_path, chunk_size):
    lines = [post(f"p{i}", title=f"{MULTIBYTE_TEXT} {'é' * i}") for i in range(12)] + [b"", b"  ", post("last")]
    raw = write_zst(tmp_path / "RS_2020-01.zst", lines, frames=3)

    read = list(iter_lines(tmp_path / "RS_2020-01.zst", chunk_size=chunk_size))

    assert [line for _, _, line in read] == raw.split(b"\n")[:-1]
    for line_no, offset, line in read:
        assert raw[offset : offset + len(line) + 1] == line + b"\n"
        assert raw.count(b"\n", 0, offset) == line_no - 1
        line.decode("utf-8")  # a multi-byte character cut between chunks would fail here


def test_resume_from_a_line_start_yields_exactly_the_rest(tmp_path):
    path = tmp_path / "RC_2020-01.zst"
    raw = write_zst(path, [comment(f"c{i}", "abc", body="ü" * i) for i in range(20)], frames=2)
    everything = list(iter_lines(path, chunk_size=16))

    for index in (0, 1, 7, 19):
        _, offset, _ = everything[index]
        for chunk_size in (3, 16, 10_000):
            assert list(iter_lines(path, chunk_size=chunk_size, start_offset=offset)) == everything[index:]
    assert list(iter_lines(path, start_offset=len(raw))) == []
    with pytest.raises(ValueError, match="not the start of a line"):
        list(iter_lines(path, chunk_size=5, start_offset=everything[3][1] + 2))
    with pytest.raises(ValueError, match="beyond the end"):
        list(iter_lines(path, start_offset=len(raw) + 10))


def test_scan_file_resumes_at_an_offset(tmp_path):
    path = tmp_path / "RS_2020-01.zst"
    write_zst(path, [post(f"p{i}") for i in range(10)])
    source = DumpSource([path], chunk_size=32)
    first = items(source.scan_file(path, SUBMISSION, ids={"p2", "p6", "p8"}))
    assert [i.data["id"] for i in first] == ["p2", "p6", "p8"]

    rest = items(source.scan_file(path, SUBMISSION, ids={"p2", "p6", "p8"}, start_offset=first[1].origin.byte_offset))

    assert rest == first[1:]
    assert rest[0].origin.line_no == 7


def test_a_files_lines_as_one_list_equal_the_streamed_scan_and_survive_pickling(tmp_path):
    """What a cluster task returns for one file: the same lines as the scan in the step's process, also from an
    offset, and the same records after the trip through pickle that carries them back."""
    path = tmp_path / "RC_2020-01.zst"
    write_zst(path, [comment(f"c{i}", "abc" if i % 3 else "xyz") for i in range(12)])
    source = DumpSource([path], chunk_size=64, name_of=lambda p: f"dumps/{p.name}")
    streamed = list(source.scan_lines(path, COMMENT, post_ids={"abc"}))
    listed = dump_file_lines(path, COMMENT, {"post_ids": frozenset({"abc"})}, "dumps/RC_2020-01.zst", 64)

    def places(lines: list) -> list[tuple]:
        return [(line.locator, line.line_no, line.byte_offset, line.data) for line in lines]

    assert len(listed) == 8 and places(listed) == places(streamed)  # c1, c2, c4, ... belong to abc
    carried = pickle.loads(pickle.dumps(listed))
    assert [read_line(line) for line in carried] == [read_line(line) for line in streamed]
    offset = listed[3].byte_offset
    assert places(dump_file_lines(path, COMMENT, {"post_ids": {"abc"}}, "dumps/RC_2020-01.zst", 64, offset)) == \
        places(listed[3:])


def test_a_last_line_without_newline_is_a_line(tmp_path):
    path = tmp_path / "photocritique_submissions.ndjson"
    raw = write_zst(tmp_path / "unused.zst", [post("a"), post("b")], final_newline=False)
    path.write_bytes(raw)
    zst_path = tmp_path / "photocritique_submissions.zst"
    write_zst(zst_path, [post("a"), post("b")], final_newline=False)

    for dump in (path, zst_path):
        found = list(DumpSource([dump]).submissions(["a", "b"], None))
        assert [(i.data["id"], i.origin.line_no) for i in items(found)] == [("a", 1), ("b", 2)]
        assert problems(found) == []


def test_malformed_lines_that_could_match_are_reported_and_the_scan_goes_on(tmp_path):
    path = tmp_path / "RS_2020-01.zst"
    raw = write_zst(
        path,
        [
            post("aa"),
            b'{"id": "bb", "title": "cut off',  # a wanted id, broken JSON
            b'{"id": "zz", "title": "cut off',  # broken, but its id is not wanted: not our business
            b"not json at all",  # no id to judge by: parsed and reported
            b'["a", "list"]',
            json.dumps({"title": "no id here"}).encode(),
            b"\xff\xfe" + b'{"id": "cc"}',  # invalid UTF-8
            post("dd"),
        ],
    )

    for chunk_size in (7, 1 << 20):
        found = list(DumpSource([path], chunk_size=chunk_size).submissions(["aa", "bb", "cc", "dd"], None))

        assert [i.data["id"] for i in items(found)] == ["aa", "dd"]
        reported = [(p.reason_code, p.origin.line_no, p.item_id) for p in problems(found)]
        assert reported == [
            (MALFORMED_JSON, 2, None),
            (MALFORMED_JSON, 4, None),
            (MALFORMED_JSON, 5, None),
            (MISSING_FIELD, 6, None),
            (BAD_ENCODING, 7, None),
            (NOT_FOUND, None, "bb"),
            (NOT_FOUND, None, "cc"),
        ]
        for problem in problems(found)[:5]:
            assert problem.origin.byte_offset == raw.index(raw.split(b"\n")[problem.origin.line_no - 1])
            assert problem.origin.locator == str(path)


@pytest.mark.parametrize("cut", ["mid_block", "in_checksum", "header_only"])
def test_a_truncated_file_keeps_the_lines_before_and_says_where_it_stopped(tmp_path, cut):
    full = tmp_path / "full.zst"
    lines = [post(f"p{i:03d}", selftext=f"{MULTIBYTE_TEXT} {i} " + "x" * (i * 37 % 400)) for i in range(400)]
    raw = write_zst(full, lines)
    compressed = full.read_bytes()
    assert zstandard.ZstdDecompressor().decompress(compressed, max_output_size=len(raw)) == raw
    keep = {"mid_block": len(compressed) // 2, "in_checksum": len(compressed) - 2, "header_only": 6}[cut]
    path = tmp_path / "RS_2020-01.zst"
    path.write_bytes(compressed[:keep])

    read = list(iter_lines(path, chunk_size=4096))
    *complete, problem = read
    assert isinstance(problem, SourceProblem)
    assert problem.reason_code == TRUNCATED_FILE
    assert [line for _, _, line in complete] == raw.split(b"\n")[: len(complete)]
    bytes_read = problem.origin.byte_offset
    assert bytes_read == sum(len(line) + 1 for _, _, line in complete)
    assert f"{len(complete)} complete lines" in problem.detail
    assert problem.origin.line_no == len(complete) + 1

    found = list(DumpSource([path]).submissions([f"p{i:03d}" for i in range(400)], None))
    truncations = [p for p in problems(found) if p.reason_code == TRUNCATED_FILE]
    assert len(truncations) == 1
    assert [i.data["id"] for i in items(found)] == [f"p{i:03d}" for i in range(len(complete))]
    assert len([p for p in problems(found) if p.reason_code == NOT_FOUND]) == 400 - len(complete)


def test_junk_after_the_last_frame_is_reported_and_everything_before_is_kept(tmp_path):
    path = tmp_path / "RC_2020-01.zst"
    write_zst(path, [comment(f"c{i}", "abc") for i in range(50)], frames=2)
    valid_bytes = path.stat().st_size
    path.write_bytes(path.read_bytes() + b"<html>this is not a zstd frame</html>")

    found = list(DumpSource([path]).comments(["abc"]))

    assert [i.data["id"] for i in items(found)] == [f"c{i}" for i in range(50)]
    assert [p.reason_code for p in problems(found)] == [TRUNCATED_FILE]
    assert f"compressed byte {valid_bytes} starts neither a zstd frame nor a block" in problems(found)[0].detail


def test_a_corrupt_block_ends_the_scan_with_a_problem(tmp_path):
    path = tmp_path / "RS_2020-01.zst"
    raw = write_zst(path, [post(f"p{i}", selftext=f"{MULTIBYTE_TEXT} {i}") for i in range(300)])
    damaged = bytearray(path.read_bytes())
    damaged[len(damaged) // 2] ^= 0xFF
    path.write_bytes(bytes(damaged))

    read = list(iter_lines(path, chunk_size=256))

    assert isinstance(read[-1], SourceProblem) and read[-1].reason_code == TRUNCATED_FILE  # the checksum catches it at the latest
    assert read[-1].origin.byte_offset == sum(len(line) + 1 for _, _, line in read[:-1]) < len(raw)


def test_multiple_frames_and_skippable_frames_are_read_across(tmp_path):
    path = tmp_path / "RC_2020-01.zst"
    raw = write_zst(path, [comment(f"c{i}", "abc") for i in range(30)], frames=4)
    skippable = (0x184D2A50).to_bytes(4, "little") + (3).to_bytes(4, "little") + b"xyz"
    path.write_bytes(skippable + path.read_bytes())

    read = list(iter_lines(path, chunk_size=50))

    assert b"".join(line + b"\n" for _, _, line in read) == raw


def test_a_frame_with_a_window_beyond_the_default_limit_decodes(tmp_path):
    path = tmp_path / "RS_2020-01.zst"
    raw = write_zst(path, [post("big")], window_log=30)
    assert zstandard.get_frame_parameters(path.read_bytes()).window_size == 2**30
    with pytest.raises(zstandard.ZstdError):  # what happens without max_window_size
        zstandard.ZstdDecompressor().stream_reader(path.read_bytes()).read()

    found = list(DumpSource([path]).submissions(["big"], None))

    assert [json.dumps(i.data, ensure_ascii=False).encode() + b"\n" for i in items(found)] == [raw]


def test_string_timestamps_and_retrieval_time(tmp_path):
    path = tmp_path / "RS_2012-05.zst"
    write_zst(path, [
        post("a1", created_utc="1336000000", retrieved_on="1336003600"),
        post("a2", created_utc=1336000001.0, retrieved_on=None, retrieved_utc=1700000000),
        post("a3", created_utc=1336000002, retrieved_on=None),
    ])
    window = SubredditWindow("photocritique", 1_336_000_000, 1_336_000_003)

    found = items(DumpSource([path]).submissions(None, window))

    assert [(i.data["id"], i.origin.retrieved_at) for i in found] == [("a1", 1336003600.0), ("a2", 1700000000.0), ("a3", None)]


def test_window_is_case_insensitive_half_open_and_judged_on_the_post_itself(tmp_path):
    start, end = 1_600_000_000, 1_600_086_400
    path = tmp_path / "RS_2020-09.zst"
    write_zst(path, [
        post("in1", subreddit="PhotoCritique", created_utc=start),
        post("out_end", created_utc=end),
        post("out_before", created_utc=start - 1),
        post("other", subreddit="pics", created_utc=start + 5,
             crosspost_parent_list=[post("parent", subreddit="photocritique")]),  # nested mention only
        post("in2", subreddit="PHOTOCRITIQUE", created_utc=str(end - 1)),
        post("no_time", created_utc="yesterday"),
        {"subreddit": "photocritique", "created_utc": start + 10, "title": "no id"},
    ])

    found = list(DumpSource([path], chunk_size=64).submissions(None, SubredditWindow("photoCRITIQUE", start, end)))

    assert [i.data["id"] for i in items(found)] == ["in1", "in2"]
    assert [(p.reason_code, p.item_id, p.origin.line_no) for p in problems(found)] == [
        (BAD_FIELD_TYPE, "no_time", 6),
        (MISSING_FIELD, None, 7),
    ]


def test_ids_are_confirmed_on_the_post_not_on_nested_ids(tmp_path):
    path = tmp_path / "RS_2021-01.zst"
    write_zst(path, [
        {"crosspost_parent_list": [post("nested")], "id": "outer", "subreddit": "pics"},  # nested id comes first
        {"crosspost_parent_list": [post("wanted")], "id": "other", "subreddit": "pics"},
        post("wanted"),
    ])

    found = list(DumpSource([path]).submissions(["outer", "wanted"], None))

    assert [(i.data["id"], i.origin.line_no) for i in items(found)] == [("outer", 1), ("wanted", 3)]
    assert problems(found) == []


def test_comments_in_a_later_monthly_file_are_found(tmp_path):
    write_zst(tmp_path / "RS_2020-01.zst", [post("abc"), post("def")])
    write_zst(tmp_path / "RC_2020-01.zst", [comment("c1", "abc"), comment("c2", "def"), comment("c3", "abc", "t1_c1")])
    write_zst(tmp_path / "RC_2020-02.zst", [comment("c9", "xyz"), comment("c4", "abc", "t1_c3")])
    source = DumpSource([tmp_path / "RC_2020-02.zst", tmp_path])  # a folder stands for the dumps in it

    found = list(source.comments(["abc"]))

    assert [(i.data["id"], Path(i.origin.locator).name, i.origin.line_no) for i in items(found)] == [
        ("c1", "RC_2020-01.zst", 1),
        ("c3", "RC_2020-01.zst", 3),
        ("c4", "RC_2020-02.zst", 2),  # named twice (directly and through its folder), scanned once
    ]
    assert problems(found) == []
    assert all(i.kind == COMMENT and i.origin.source_kind == "dump" for i in items(found))
    assert items(found)[0].data["body"].endswith(MULTIBYTE_TEXT)
    assert [p.name for p in source.files(SUBMISSION)] == ["RS_2020-01.zst"]


def test_comment_lines_without_usable_keys_are_reported(tmp_path):
    path = tmp_path / "photocritique_comments.zst"
    write_zst(path, [
        comment("c1", "abc"),
        {"id": "c2", "body": "no link"},
        {"link_id": "t3_abc", "body": "no id"},
        {"id": "c3", "link_id": "t1_wrong"},
        comment("c4", "zzz"),
    ])

    found = list(DumpSource([path]).comments(["abc"]))

    assert [i.data["id"] for i in items(found)] == ["c1"]
    assert [(p.reason_code, p.item_id, p.origin.line_no) for p in problems(found)] == [
        (MISSING_FIELD, "c2", 2),
        (MISSING_FIELD, None, 3),
        (MISSING_FIELD, "c3", 4),
    ]


def test_ids_never_seen_are_not_found_and_bad_files_are_reported(tmp_path):
    write_zst(tmp_path / "RS_2020-01.zst", [post("abc")])
    missing = tmp_path / "RS_2020-02.zst"
    odd = tmp_path / "submissions_2020.txt"
    odd.write_text("{}\n")
    source = DumpSource([tmp_path / "RS_2020-01.zst", missing, odd])

    found = list(source.submissions(["abc", "gone", "also_gone"], None))

    assert [i.data["id"] for i in items(found)] == ["abc"]
    reported = [(p.reason_code, p.item_id, Path(p.origin.locator).name) for p in problems(found)]
    assert reported == [
        (UNSUPPORTED_FILE, None, odd.name),
        (UNREADABLE_FILE, None, missing.name),
        (NOT_FOUND, "also_gone", tmp_path.name),
        (NOT_FOUND, "gone", tmp_path.name),
    ]
    assert "2 submission dump files" in problems(found)[-1].detail
    assert list(source.comments(["abc"])) == []


def test_scan_file_rejects_the_wrong_kind_and_selection(tmp_path):
    path = tmp_path / "RS_2020-01.zst"
    write_zst(path, [post("abc")])
    source = DumpSource([path])
    with pytest.raises(ValueError, match="submissions, not comments"):
        list(source.scan_file(path, COMMENT, post_ids=["abc"]))
    with pytest.raises(ValueError, match="exactly one"):
        list(source.scan_file(path, SUBMISSION, ids=["abc"], window=SubredditWindow("x", 0, 1)))
    with pytest.raises(ValueError, match="exactly one"):
        list(source.submissions(None, None))


def test_every_cut_inside_a_frame_is_detected(tmp_path):
    frames = [b"".join(_line(post(f"f{f}l{i}", title=MULTIBYTE_TEXT)) + b"\n" for i in range(4)) for f in range(3)]
    checksum_flags = (True, False, True)
    blob = b"".join(zstandard.ZstdCompressor(write_checksum=flag).compress(frame) for frame, flag in zip(frames, checksum_flags))
    boundaries = {0}
    for frame, flag in zip(frames, checksum_flags):
        boundaries.add(max(boundaries) + len(zstandard.ZstdCompressor(write_checksum=flag).compress(frame)))
    all_lines = b"".join(frames).split(b"\n")[:-1]
    path = tmp_path / "RS_2020-01.zst"

    for cut in range(len(blob) + 1):
        path.write_bytes(blob[:cut])
        read = list(iter_lines(path, chunk_size=97))
        truncated = [r for r in read if isinstance(r, SourceProblem)]
        lines = [r[2] for r in read if not isinstance(r, SourceProblem)]
        assert lines == all_lines[: len(lines)], cut
        if cut in boundaries and cut > 0:
            assert not truncated and len(lines) == 4 * sorted(boundaries).index(cut), cut
        else:  # nothing at all is an empty file, not a cut one
            assert [p.reason_code for p in truncated] == [EMPTY_FILE if cut == 0 else TRUNCATED_FILE], cut


def test_stopping_early_stops_the_reader_thread(tmp_path):
    path = tmp_path / "RC_2020-01.zst"
    write_zst(path, [comment(f"c{i}", "abc") for i in range(2000)])
    scan = DumpSource([path], chunk_size=256).comments(["abc"])

    first = next(scan)
    assert any(thread.name == "dump-read-ahead" for thread in threading.enumerate())
    scan.close()

    assert first.data["id"] == "c0"
    assert not any(thread.name == "dump-read-ahead" for thread in threading.enumerate())


def test_a_file_named_zst_that_is_not_zstd_is_not_zstd(tmp_path):
    path = tmp_path / "RS_2020-01.zst"
    path.write_bytes(_line(post("aa")) + b"\n")
    [problem] = list(iter_lines(path))
    assert problem.reason_code == NOT_ZSTD and problem.origin.line_no is None
    assert problem.detail.startswith(f"{path}: the file does not start with a zstd frame")
