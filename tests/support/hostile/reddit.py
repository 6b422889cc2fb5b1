"""Hostile Reddit inputs for the photocritique job, written byte by byte at test time.

Each :class:`RedditCase` is one input with the one outcome the job must give it: a ``reddit_source_problem``
row with a reason (a dump line, a whole dump file, an id-list line), or, for a value the normalizer coerces,
the decision of the post or comment it belongs to. The cases sit next to the sound fixture archive
(``sample/reddit_fixture.py``), whose kept posts must come out unchanged. :func:`write_reddit_cases` writes a
folder of dumps and an id list and returns the cases with the candidate ids to add.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import zstandard

AUGUST_2019 = 1_564_617_600
SOURCE = "source"  # the case's outcome is a reddit_source_problem row
POST = "post"  # ... a photocritique_post_decision row
COMMENT = "comment"  # ... a photocritique_comment_decision row


@dataclass(frozen=True)
class RedditCase:
    name: str
    outcome: str  # SOURCE, POST or COMMENT: the table the outcome is in
    expected: str  # the reason code (or "no_image" etc. for a coerced post's decision)
    file: str  # the file name the case sits in
    line: int | None = None  # its line; None for a whole-file case
    item_id: str | None = None  # the post or comment id it concerns, when it has one


def _post(post_id: str, **fields) -> dict:
    """A self post (no image, so it is decided no_image once it is read): enough to tell it was accepted."""
    return {"id": post_id, "name": f"t3_{post_id}", "subreddit": "photocritique", "author": "hostile_poster",
            "created_utc": AUGUST_2019 + 3600, "retrieved_on": AUGUST_2019 + 86_400, "score": 3, "num_comments": 0,
            "is_self": True, "selftext": "A body that says enough about the photograph to count.",
            "title": f"Hostile case {post_id}", "permalink": f"/r/photocritique/comments/{post_id}/x/", **fields}


def _comment(comment_id: str, post_id: str, **fields) -> dict:
    return {"id": comment_id, "link_id": f"t3_{post_id}", "parent_id": f"t3_{post_id}", "author": "hostile_critic",
            "body": "Lift the shadows a little and crop the left edge.", "score": 1,
            "created_utc": AUGUST_2019 + 7200, "retrieved_on": AUGUST_2019 + 86_400, **fields}


def _line(obj: object) -> bytes:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


class _Dump:
    """One dump file built line by line; each line may be a case."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.lines: list[bytes] = []
        self.cases: list[RedditCase] = []

    def add(self, data: bytes, name: str | None = None, expected: str = "", outcome: str = SOURCE,
            item_id: str | None = None) -> None:
        self.lines.append(data)
        if name:
            self.cases.append(RedditCase(name, outcome, expected, self.name, len(self.lines), item_id))

    def data(self) -> bytes:
        return b"".join(line + b"\n" for line in self.lines)


def write_reddit_cases(folder: Path, kept_post: str) -> tuple[list[RedditCase], Path, Path]:
    """Write the hostile dumps under ``folder/dumps`` and an id list; return (cases, dump folder, id list).

    ``kept_post`` is a post the sound archive keeps: the hostile comments go on its thread, where the bad ones
    must change nothing.
    """
    dumps = folder / "dumps"
    dumps.mkdir(parents=True, exist_ok=True)
    cases: list[RedditCase] = []
    ids: list[str] = []

    posts = _Dump("RS_2019-08.zst")
    posts.add(_line(_post("hgood1")), "sound post around the bad lines", "no_image", POST, "hgood1")
    posts.add(b'{"id":"hbadjson","title":"cut off in the middle', "invalid JSON line", "malformed_json")
    posts.add(b"[1,2]", "a JSON list, not an object", "malformed_json")
    posts.add(b'"str"', "a JSON string, not an object", "malformed_json")
    posts.add(_line(_post("hlatin")).replace(b"Hostile case", b"Caf\xe9 case"), "a latin-1 byte inside a line",
              "bad_encoding")
    posts.add(b"[" * 100_000 + b"]" * 100_000, "JSON nested too deeply to parse", "malformed_json")
    for post_id, field, value in (("hscore", "score", "abc"), ("hcreated", "created_utc", "abc"),
                                  ("hauthor", "author", 5), ("hgallery", "gallery_data", "x"),
                                  ("hsticky", "stickied", "yes"), ("hhuge", "score", 2**40)):
        posts.add(_line(_post(post_id, **{field: value})), f"{field} {value!r}", "bad_field_type", SOURCE, post_id)
    for post_id, field, value in (("hscorestr", "score", "12"), ("hnullbody", "selftext", None),
                                  ("hpreview", "preview", []), ("hflag", "over_18", 1)):
        posts.add(_line(_post(post_id, **{field: value})), f"{field} {value!r} is coerced", "no_image", POST, post_id)
    posts.add(json.dumps(_post("hsurrogate", title="half \ud83d emoji")).encode("ascii"),  # escaped: \\ud83d
              "a lone surrogate escape in the title is replaced", "no_image", POST, "hsurrogate")
    ids += ["hgood1", "hbadjson", "hlatin", "hscore", "hcreated", "hauthor", "hgallery", "hsticky", "hhuge",
            "hscorestr", "hnullbody", "hpreview", "hflag", "hsurrogate"]

    comments = _Dump("RC_2019-08.zst")
    comments.add(_line(_comment("hc1", kept_post, score="abc")), "comment score 'abc'", "bad_field_type", SOURCE, "hc1")
    comments.add(_line(_comment("hc2", kept_post, body=None)), "comment body null is empty", "too_few_words",
                 COMMENT, "hc2")
    comments.add(_line(_comment("hc3", kept_post, author=["x"])), "comment author a list", "bad_field_type",
                 SOURCE, "hc3")
    comments.add(_line(_comment("hc4", kept_post)).replace(b"Lift", b"L\xffft"), "comment with a binary byte",
                 "bad_encoding")

    for dump in (posts, comments):
        (dumps / dump.name).write_bytes(zstandard.ZstdCompressor(level=3).compress(dump.data()))
        cases += dump.cases

    # A frame cut in the middle: the block before the cut is read, the block after is lost.
    compressor = zstandard.ZstdCompressor(level=3).compressobj()
    head = compressor.compress(_line(_post("hbeforecut")) + b"\n") + compressor.flush(zstandard.COMPRESSOBJ_FLUSH_BLOCK)
    tail = compressor.compress(_line(_post("hlost")) + b"\n") + compressor.flush(zstandard.COMPRESSOBJ_FLUSH_FINISH)
    (dumps / "RS_2019-09.zst").write_bytes(head + tail[: len(tail) // 2])
    cases += [RedditCase("zstd frame cut mid-frame", SOURCE, "truncated_file", "RS_2019-09.zst", 2),
              RedditCase("the line before the cut", POST, "no_image", "RS_2019-09.zst", 1, "hbeforecut")]
    ids += ["hbeforecut", "hlost"]
    (dumps / "RS_2019-10.zst").write_bytes(b"")
    (dumps / "RS_2019-11.zst").write_bytes(_line(_post("hplain")) + b"\n")
    cases += [RedditCase("an empty .zst", SOURCE, "empty_file", "RS_2019-10.zst"),
              RedditCase("plain NDJSON named .zst", SOURCE, "not_zstd", "RS_2019-11.zst")]

    id_list = folder / "hostile_ids.txt"
    id_lines = [b"\xef\xbb\xbf" + ids[0].encode(), *(i.encode() for i in ids[1:]), b"", b"caf\xe9", b"\x00\x01\x02",
                b"not-an-id!"]
    id_list.write_bytes(b"\r\n".join(id_lines) + b"\r\n")
    n = len(ids)
    cases += [RedditCase("id list line in latin-1", SOURCE, "bad_encoding", id_list.name, n + 2),
              RedditCase("id list line of binary bytes", SOURCE, "bad_encoding", id_list.name, n + 3),
              RedditCase("id list line that is no id", SOURCE, "malformed_id", id_list.name, n + 4)]
    return cases, dumps, id_list
