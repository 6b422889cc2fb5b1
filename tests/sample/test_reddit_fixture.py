"""The invented r/photocritique fixture is deterministic, complete, and its hand-written expectations hold.

The last group re-derives the expected decisions with a small, independent model of the spec's rules
(written here, not imported from the pipeline) to catch mistakes in the hand-written data, and checks
that each tricky case really changes the outcome when it is mishandled.
"""

from __future__ import annotations

import hashlib
import html
import io
import itertools
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import imagehash
import pytest
import zstandard
from PIL import Image

from sample.reddit_fixture import (
    BROKEN_DUMP,
    COMMENT_REASONS,
    MALFORMED_ID_LINE,
    NOT_FOUND_ID,
    PLACEHOLDER_SIZE,
    POST_REASONS,
    REFERENCE,
    RedditFixture,
    build_fixture,
    mirror_path,
    write_fixture,
)

MAY_2019, JUNE_2019 = 1_556_668_800, 1_559_347_200
SOUND_DUMPS = (
    "dumps/monthly/RS_2019-05.zst",
    "dumps/monthly/RC_2019-05.zst",
    "dumps/monthly/RC_2019-06.zst",
    "dumps/monthly/RS_2013-02.zst",
    "dumps/monthly/RC_2013-02.zst",
    "dumps/subreddit/photocritique_submissions.zst",
    "dumps/subreddit/photocritique_comments.zst",
)
IMAGE_REASONS = ("no_image", "image_unsupported", "image_unavailable")
DISTINCT_MIN_PHASH = 11
PREVIEW_MAX_PHASH = 6


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("reddit_fixture")
    write_fixture(folder)
    return folder


@pytest.fixture(scope="module")
def fixture() -> RedditFixture:
    return build_fixture()


@pytest.fixture(scope="module")
def expected(out: Path) -> dict:
    return json.loads((out / "expected.json").read_text(encoding="utf-8"))


def _tree_digests(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def _dump_lines(path: Path) -> list[bytes]:
    """Stream-decompress a dump and split it into lines (without the newline)."""
    with open(path, "rb") as handle, zstandard.ZstdDecompressor().stream_reader(handle) as reader:
        data = reader.read()
    assert data.endswith(b"\n"), f"{path} must end with a newline"
    return data[:-1].split(b"\n")


def _dump(out: Path, relative: str) -> list[dict]:
    return [json.loads(line) for line in _dump_lines(out / relative)]


# --------------------------------------------------------------------------
# determinism and layout
# --------------------------------------------------------------------------


def test_two_writes_are_byte_identical_and_a_rewrite_clears_stale_files(
    out: Path, fixture: RedditFixture, tmp_path: Path
) -> None:
    stale = tmp_path / "images" / "i.redd.it" / "stale.jpg"
    stale.parent.mkdir(parents=True)
    stale.write_bytes(b"left over from an older build")

    summary = write_fixture(tmp_path)

    assert not stale.exists()
    assert _tree_digests(out) == _tree_digests(tmp_path)
    assert summary["candidates"] == 24 and summary["kept"] == 15
    assert summary["images"] == len(fixture.images)


def test_refuses_a_folder_holding_files_that_are_not_its_own(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine", encoding="utf-8")
    with pytest.raises(FileExistsError, match="notes.txt"):
        write_fixture(tmp_path)
    assert (tmp_path / "notes.txt").read_text(encoding="utf-8") == "mine"


def test_in_memory_fixture_matches_the_written_files(out: Path, fixture: RedditFixture, expected: dict) -> None:
    assert fixture.expected == expected
    assert fixture.candidate_ids == expected["candidate_ids"]
    monthly = [item for name in SOUND_DUMPS if "/monthly/" in name for item in _dump(out, name)]
    subreddit = [item for name in SOUND_DUMPS if "/subreddit/" in name for item in _dump(out, name)]
    for latest in fixture.posts + fixture.comments:
        assert latest in monthly or latest in subreddit, latest["id"]


def test_candidate_file_has_the_rpcd_format_with_one_malformed_and_one_blank_line(out: Path, expected: dict) -> None:
    raw = (out / expected["candidates_file"]).read_bytes()
    assert raw.endswith(b"\r\n") and raw.count(b"\n") == raw.count(b"\r\n")
    lines = raw.decode("ascii").split("\r\n")[:-1]
    assert "" in lines and MALFORMED_ID_LINE in lines
    well_formed = [line for line in lines if re.fullmatch(r"[0-9a-z]+", line)]
    assert well_formed == expected["candidate_ids"]
    assert len(lines) == len(well_formed) + 2
    assert NOT_FOUND_ID in well_formed
    assert 18 <= len(well_formed) - 1 <= 25  # posts that exist


# --------------------------------------------------------------------------
# expected.json covers everything
# --------------------------------------------------------------------------


def test_every_reason_code_of_the_spec_is_exercised(expected: dict) -> None:
    assert set(POST_REASONS) <= set(expected["post_reasons"].values())
    assert set(COMMENT_REASONS) | {REFERENCE} == set(expected["comment_reasons"].values())
    assert expected["post_reasons"][NOT_FOUND_ID] == "not_found"
    assert expected["post_reasons"][MALFORMED_ID_LINE] == "malformed_id"


def test_every_candidate_has_exactly_one_outcome(expected: dict, fixture: RedditFixture) -> None:
    kept, excluded = set(expected["kept"]), set(expected["post_reasons"])
    assert not kept & excluded
    assert kept | excluded == set(expected["candidate_ids"]) | {MALFORMED_ID_LINE}
    existing = {post["id"] for post in fixture.posts}
    assert NOT_FOUND_ID not in existing
    assert set(expected["candidate_ids"]) - {NOT_FOUND_ID} <= existing
    assert set(expected["cases"]) == set(expected["candidate_ids"])


def test_every_comment_of_every_candidate_has_an_expected_reason(expected: dict, fixture: RedditFixture) -> None:
    candidates = {f"t3_{post_id}" for post_id in expected["candidate_ids"]}
    of_candidates = [c["id"] for c in fixture.comments if c["link_id"] in candidates]
    assert len(of_candidates) == len(set(of_candidates))
    assert set(of_candidates) == set(expected["comment_reasons"])
    per_post = [sum(c["link_id"] == f"t3_{p}" for c in fixture.comments) for p in expected["candidate_ids"]]
    assert all(4 <= n <= 9 for n, p in zip(per_post, expected["candidate_ids"]) if p != NOT_FOUND_ID)


def test_kept_posts_have_exactly_three_distinct_top_level_references(expected: dict, fixture: RedditFixture) -> None:
    by_id = {c["id"]: c for c in fixture.comments}
    for post_id, references in expected["kept"].items():
        assert len(references) == 3 and len(set(references)) == 3, post_id
        for comment_id in references:
            assert expected["comment_reasons"][comment_id] == REFERENCE
            assert by_id[comment_id]["link_id"] == by_id[comment_id]["parent_id"] == f"t3_{post_id}"
    n_references = sum(reason == REFERENCE for reason in expected["comment_reasons"].values())
    assert n_references == 3 * len(expected["kept"])


def test_image_of_lists_posts_that_pass_the_image_rule(expected: dict, fixture: RedditFixture) -> None:
    past_image_rule = set(expected["kept"]) | {
        post_id
        for post_id, reason in expected["post_reasons"].items()
        if reason in ("too_few_words", "too_few_qualifying_comments")
    }
    assert set(expected["image_of"]) == past_image_rule
    assert set(expected["image_of"].values()) <= set(fixture.images)
    assert len(set(expected["image_of"].values())) == len(expected["image_of"])


# --------------------------------------------------------------------------
# dumps
# --------------------------------------------------------------------------


def test_sound_dumps_are_ndjson_objects_with_ids(out: Path) -> None:
    for relative in SOUND_DUMPS:
        lines = _dump_lines(out / relative)
        assert lines, relative
        for line in lines:
            item = json.loads(line.decode("utf-8"))
            assert isinstance(item, dict) and re.fullmatch(r"[0-9a-z]+", item["id"]), (relative, line[:80])
            assert b"\r" not in line


def test_archived_text_and_urls_are_html_escaped(out: Path) -> None:
    submissions = (out / "dumps/monthly/RS_2019-05.zst").read_bytes()
    text = zstandard.ZstdDecompressor().decompress(submissions).decode("utf-8")
    assert '"title":"Dusk &amp; dawn' in text
    assert '"title":"Fog &amp; boats at dawn"' in text
    assert "right is my edit -&gt; too much?" in text
    assert ".jpg?auto=webp&amp;s=" in text  # preview URLs
    assert "?width=640&amp;format=pjpg&amp;auto=webp&amp;s=" in text  # media_metadata URLs
    comments = zstandard.ZstdDecompressor().decompress((out / "dumps/monthly/RC_2019-05.zst").read_bytes()).decode()
    assert "&gt; which one works better?" in comments and "Love it &lt;3 &amp; thanks" in comments

    def strings(value: object) -> Iterable[str]:
        if isinstance(value, str):
            yield value
        elif isinstance(value, dict):
            for inner in value.values():
                yield from strings(inner)
        elif isinstance(value, list):
            for inner in value:
                yield from strings(inner)

    for relative in SOUND_DUMPS:
        for item in _dump(out, relative):
            for value in strings(item):
                assert "<" not in value and ">" not in value, value
                assert not re.search(r"&(?!amp;|lt;|gt;)", value), value


def test_2013_files_use_the_old_schema(out: Path) -> None:
    for relative in ("dumps/monthly/RS_2013-02.zst", "dumps/monthly/RC_2013-02.zst"):
        for item in _dump(out, relative):
            assert isinstance(item["created_utc"], str) and item["created_utc"].isdigit()
            assert not {"name", "removed_by_category", "is_gallery", "media_metadata", "stickied"} & set(item)
            assert isinstance(item["retrieved_on"], int)
    for relative in ("dumps/monthly/RS_2019-05.zst", "dumps/monthly/RC_2019-05.zst"):
        for item in _dump(out, relative):
            assert isinstance(item["created_utc"], int) and item["name"].endswith(item["id"])
            assert MAY_2019 <= item["created_utc"] < JUNE_2019
            assert item["created_utc"] < item["retrieved_on"] <= item["created_utc"] + 12 * 3600


def test_ids_grow_with_creation_time_as_on_reddit(fixture: RedditFixture) -> None:
    for items in (fixture.posts, fixture.comments):
        ordered = sorted(items, key=lambda item: (int(item["created_utc"]), int(item["id"], 36)))
        ids = [int(item["id"], 36) for item in ordered]
        assert ids == sorted(ids)


def test_subreddit_files_hold_older_newer_and_extra_copies_and_the_latest_is_served(
    out: Path, fixture: RedditFixture
) -> None:
    copies: dict[str, list[dict]] = {}
    for relative in SOUND_DUMPS:
        for item in _dump(out, relative):
            copies.setdefault(item["id"], []).append(item | {"_file": relative})
    served = {item["id"]: item for item in fixture.posts + fixture.comments}
    assert set(served) == set(copies)
    relations = set()
    for item_id, found in copies.items():
        latest = max(found, key=lambda copy: copy["retrieved_on"])
        assert {k: v for k, v in latest.items() if k != "_file"} == served[item_id]
        in_subreddit = [copy for copy in found if "/subreddit/" in copy["_file"]]
        in_monthly = [copy for copy in found if "/monthly/" in copy["_file"]]
        if in_subreddit and not in_monthly:
            relations.add("only_in_subreddit_file")
        elif in_subreddit and in_subreddit[0]["retrieved_on"] < in_monthly[0]["retrieved_on"]:
            relations.add("older_in_subreddit_file")
            assert in_subreddit[0]["score"] != latest["score"] or in_subreddit[0]["author"] != latest["author"]
        elif in_subreddit and in_subreddit[0]["retrieved_on"] > in_monthly[0]["retrieved_on"]:
            relations.add("newer_in_subreddit_file")
        elif in_subreddit:
            relations.add("same_in_subreddit_file")
            assert in_subreddit[0] | {"_file": ""} == in_monthly[0] | {"_file": ""}
    assert relations == {
        "only_in_subreddit_file",
        "older_in_subreddit_file",
        "newer_in_subreddit_file",
        "same_in_subreddit_file",
    }


def test_a_late_may_post_has_references_in_the_june_file(out: Path, expected: dict) -> None:
    june = _dump(out, "dumps/monthly/RC_2019-06.zst")
    posts = {post["id"]: post for post in _dump(out, "dumps/monthly/RS_2019-05.zst")}
    assert june and all(item["created_utc"] >= JUNE_2019 for item in june)
    post_ids = {item["link_id"].removeprefix("t3_") for item in june}
    assert post_ids <= set(expected["kept"]) and post_ids <= set(posts)
    references = {c for post_id in post_ids for c in expected["kept"][post_id]}
    assert {item["id"] for item in june} & references


def test_broken_dump_is_truncated_after_its_recoverable_lines(out: Path, expected: dict) -> None:
    broken = expected["broken_dump"]
    assert broken["path"] == BROKEN_DUMP and broken["problems"] == expected["source_problems"]
    assert expected["source_problems"] == {"malformed_json": 1, "missing_field": 1, "truncated_file": 1}
    decompressor = zstandard.ZstdDecompressor().decompressobj()
    recovered = decompressor.decompress((out / BROKEN_DUMP).read_bytes())
    assert not decompressor.eof, "the frame must end early"
    assert recovered.endswith(b"\n")
    malformed, without_id, ids = 0, 0, []
    for line in recovered[:-1].split(b"\n"):
        try:
            item = json.loads(line)
        except json.JSONDecodeError:
            malformed += 1
            continue
        if "id" in item:
            ids.append(item["id"])
        else:
            without_id += 1
    assert (malformed, without_id) == (1, 1)
    assert ids == broken["readable_ids"]
    readable = [json.loads(line) for line in recovered.split(b"\n") if line.startswith(b'{"author":"quietshutter"')]
    window = broken["window"]
    in_window = [item for item in readable if window["start_utc"] <= item["created_utc"] < window["end_utc"]]
    assert len(in_window) == len(readable) and [item["id"] for item in in_window if "id" in item] == ids
    for line in recovered[:-1].split(b"\n"):
        if line.startswith(b'{"author":"marisol_shoots"') or b'"id"' not in line:
            assert b'"subreddit":"photocritique"' in line, "bad lines must be reachable by id and by window reads"
    assert not any(lost.encode() in recovered for lost in broken["lost_ids"])
    assert not set(ids + broken["lost_ids"]) & set(expected["candidate_ids"])


# --------------------------------------------------------------------------
# images
# --------------------------------------------------------------------------


def _local(out: Path, expected: dict, url: str) -> Path:
    """The mirror file a prefix rewrite onto a local folder finds (query string dropped)."""
    for prefix, folder in expected["rewrite"].items():
        if url.startswith(prefix):
            return out / folder / urlsplit(url.removeprefix(prefix)).path
    raise AssertionError(f"no rewrite prefix for {url}")


def test_the_mirror_holds_every_image_under_its_rewritten_path(
    out: Path, expected: dict, fixture: RedditFixture
) -> None:
    on_disk = {p.relative_to(out).as_posix() for p in (out / "images").rglob("*") if p.is_file()}
    assert on_disk == {mirror_path(url) for url in fixture.images}
    for url, data in fixture.images.items():
        assert _local(out, expected, url).read_bytes() == data, url
    for url in expected["unreachable_urls"]:
        assert url not in fixture.images and not _local(out, expected, url).exists()
        assert any(html.unescape(post["url"]) == url for post in fixture.posts)
    for post_id, relative in expected["local_images"].items():
        assert (out / relative).read_bytes() == fixture.images[expected["image_of"][post_id]]


def _decode(data: bytes) -> Image.Image:
    with Image.open(io.BytesIO(data)) as img:
        img.load()
        return img.convert("RGB")


def _preview_pairs(fixture: RedditFixture, expected: dict) -> set[tuple[str, str]]:
    """(preview URL, full-size URL) of every post and embedded crosspost parent that has both."""
    pairs = set()
    for post in fixture.posts + [parent for p in fixture.posts for parent in p.get("crosspost_parent_list", [])]:
        full_url = expected["image_of"].get(post["id"], html.unescape(post["url"]))  # imgur pages: the direct link
        for image in post.get("preview", {}).get("images", []):
            pairs.add((html.unescape(image["source"]["url"]), full_url))
    return pairs


def test_pictures_are_distinct_and_previews_are_smaller_copies_of_theirs(
    expected: dict, fixture: RedditFixture
) -> None:
    pictures = {url: _decode(data) for url, data in fixture.images.items() if url not in expected["placeholder_urls"]}
    pictures.pop("https://i.imgur.com/removed.png")
    assert all(min(img.size) >= 240 for img in pictures.values())
    hashes = {url: imagehash.phash(img) for url, img in pictures.items()}
    pairs = {pair for pair in _preview_pairs(fixture, expected) if pair[1] in pictures and pair[0] != pair[1]}
    assert len(pairs) >= 10
    for preview_url, full_url in pairs:
        preview, full = pictures[preview_url], pictures[full_url]
        assert preview.width < full.width and preview.height < full.height
        assert hashes[preview_url] - hashes[full_url] <= PREVIEW_MAX_PHASH
    same_picture = pairs | {(full, preview) for preview, full in pairs}
    for a, b in itertools.combinations(hashes, 2):
        if (a, b) not in same_picture:
            assert hashes[a] - hashes[b] >= DISTINCT_MIN_PHASH, (a, b)
    for post in fixture.posts:
        for image in post.get("preview", {}).get("images", []):
            preview = pictures[html.unescape(image["source"]["url"])]
            assert preview.size == (image["source"]["width"], image["source"]["height"])


def test_the_placeholder_is_a_161_by_81_png(expected: dict, fixture: RedditFixture) -> None:
    assert expected["placeholder_urls"]
    for url in expected["placeholder_urls"]:
        with Image.open(io.BytesIO(fixture.images[url])) as img:
            assert (img.format, img.size) == ("PNG", PLACEHOLDER_SIZE)
        assert expected["post_reasons"][next(p["id"] for p in fixture.posts if p["url"] == url)] == "image_unavailable"


def test_the_gallery_starts_with_a_failed_item_and_lists_media_in_another_order(
    expected: dict, fixture: RedditFixture
) -> None:
    (gallery,) = [post for post in fixture.posts if post.get("is_gallery")]
    metadata = gallery["media_metadata"]
    order = [item["media_id"] for item in gallery["gallery_data"]["items"]]
    assert metadata[order[0]]["status"] == "failed"

    def first_valid(media_ids: Iterable[str]) -> str:
        return next(m for m in media_ids if metadata[m]["status"] == "valid")

    chosen = html.unescape(metadata[first_valid(order)]["s"]["u"])
    assert chosen == expected["image_of"][gallery["id"]] and gallery["id"] in expected["kept"]
    assert first_valid(metadata) != first_valid(order) and first_valid(sorted(metadata)) != first_valid(order)


def test_the_crosspost_image_comes_from_its_parent(expected: dict, fixture: RedditFixture) -> None:
    (crosspost,) = [post for post in fixture.posts if post.get("crosspost_parent")]
    (parent,) = crosspost["crosspost_parent_list"]
    assert crosspost["url"].startswith(f"/r/{parent['subreddit']}/comments/{parent['id']}/")
    assert crosspost["crosspost_parent"] == parent["name"]
    assert expected["image_of"][crosspost["id"]] == html.unescape(parent["url"])
    assert parent["id"] not in expected["candidate_ids"]


# --------------------------------------------------------------------------
# the hand-written expectations against an independent model of the spec
# --------------------------------------------------------------------------

_URL = re.compile(r"https?://\S+")
_MARKDOWN_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
_WORD = re.compile(r"[^\W_]+(?:['’-][^\W_]+)*")
_BOILERPLATE = (re.compile(r"\bI am a bot\b", re.IGNORECASE), re.compile(r"action was performed automatically", re.I))


@dataclass(frozen=True)
class Mishandling:
    """A way an implementation could go wrong; the model applies it to show the fixture catches it."""

    keep_escapes: bool = False  # forget to unescape HTML entities
    count_urls: bool = False  # count URLs as words
    split_words: bool = False  # split "well-lit" and "don’t" into two words
    reverse_ties: bool = False  # sort (score, created_utc, id) descending as a whole
    drop_files: tuple[str, ...] = ()  # dump files left out
    oldest_wins: bool = False  # keep the first retrieval instead of the latest


def _count_words(text: str, how: Mishandling) -> int:
    if not how.count_urls:
        text = _URL.sub(" ", _MARKDOWN_LINK.sub(r"\1", text))
    return len(re.findall(r"[^\W_]+", text) if how.split_words else _WORD.findall(text))


def _text(value: str, how: Mishandling) -> str:
    return value if how.keep_escapes else html.unescape(value)


def _merged(out: Path, how: Mishandling) -> dict[str, dict]:
    chosen: dict[str, dict] = {}
    for relative in SOUND_DUMPS:
        if relative in how.drop_files:
            continue
        for item in _dump(out, relative):
            current = chosen.get(item["id"])
            newer = current is None or (
                item["retrieved_on"] < current["retrieved_on"]
                if how.oldest_wins
                else item["retrieved_on"] > current["retrieved_on"]
            )
            if newer:
                chosen[item["id"]] = item
    return chosen


def _model(out: Path, expected: dict, how: Mishandling) -> tuple[dict[str, list[str]], dict[str, str], dict[str, str]]:
    """(kept, post_reasons, comment_reasons) by the spec's rules; image outcomes are taken from expected."""
    items = _merged(out, how)
    kept: dict[str, list[str]] = {}
    post_reasons: dict[str, str] = {}
    comment_reasons: dict[str, str] = {}
    bots = set(expected["bot_accounts"])
    for post_id in expected["candidate_ids"]:
        post = items.get(post_id)
        if post is None:
            post_reasons[post_id] = "not_found"
            continue
        submitter = None if post["author"] in ("[deleted]", "[removed]") else post["author"].casefold()
        comments = sorted(
            (c for c in items.values() if c.get("link_id") == f"t3_{post_id}"),
            key=lambda c: (int(c["created_utc"]), int(c["id"], 36)),
        )
        qualifying, seen_bodies = [], set()
        for c in comments:
            body = _text(c["body"], how)
            author = c["author"].casefold()
            if body in ("[deleted]", "[removed]"):
                reason = "comment_deleted" if body == "[deleted]" else "comment_removed"
            elif not c["parent_id"].startswith("t3_"):
                reason = "not_top_level"
            elif (
                c.get("distinguished") in ("moderator", "admin")
                or c.get("stickied")
                or author in bots
                or any(pattern.search(body) for pattern in _BOILERPLATE)
            ):
                reason = "moderator_notice"
            elif submitter is not None and author == submitter:
                reason = "by_submitter"
            elif _count_words(body, how) < 5:
                reason = "too_few_words"
            elif " ".join(body.casefold().split()) in seen_bodies:
                reason = "duplicate_comment"
            else:
                seen_bodies.add(" ".join(body.casefold().split()))
                qualifying.append(c)
                continue
            comment_reasons[c["id"]] = reason

        def rank_key(c: dict) -> tuple[int, int, int]:
            return (-c["score"], int(c["created_utc"]), int(c["id"], 36))

        if how.reverse_ties:
            ranked = sorted(
                qualifying, key=lambda c: (c["score"], int(c["created_utc"]), int(c["id"], 36)), reverse=True
            )
        else:
            ranked = sorted(qualifying, key=rank_key)
        selftext = _text(post["selftext"], how)
        category = post.get("removed_by_category")
        if selftext == "[deleted]" or category in ("deleted", "author"):
            reason = "post_deleted"
        elif selftext == "[removed]" or category:
            reason = "post_removed"
        elif expected["post_reasons"].get(post_id) in IMAGE_REASONS:
            reason = expected["post_reasons"][post_id]
        elif _count_words(_text(post["title"], how) + "\n" + selftext, how) < 10:
            reason = "too_few_words"
        elif len(ranked) < 3:
            reason = "too_few_qualifying_comments"
        else:
            kept[post_id] = [c["id"] for c in ranked[:3]]
            for rank, c in enumerate(ranked, start=1):
                comment_reasons[c["id"]] = REFERENCE if rank <= 3 else "not_in_top_3"
            continue
        post_reasons[post_id] = reason
        for c in ranked:
            comment_reasons[c["id"]] = "post_excluded"
    return kept, post_reasons, comment_reasons


def test_hand_written_expectations_agree_with_a_model_of_the_rules(out: Path, expected: dict) -> None:
    kept, post_reasons, comment_reasons = _model(out, expected, Mishandling())
    assert kept == expected["kept"]
    assert post_reasons | {MALFORMED_ID_LINE: "malformed_id"} == expected["post_reasons"]
    assert comment_reasons == expected["comment_reasons"]


def test_word_counts_sit_on_the_thresholds(fixture: RedditFixture) -> None:
    posts = {p["id"]: p for p in fixture.posts}
    comments = {c["id"]: c for c in fixture.comments}
    right, escaped = Mishandling(), Mishandling(keep_escapes=True)
    fog = posts["bkq2a9"]
    assert _count_words(html.unescape(fog["title"] + "\n" + fog["selftext"]), right) == 9
    assert _count_words(fog["title"] + "\n" + fog["selftext"], escaped) == 10
    assert _count_words(html.unescape(comments["emz1h0d"]["body"]), right) == 4
    assert _count_words(comments["emz1h0d"]["body"], escaped) == 6
    assert _count_words(comments["enr6z01"]["body"], right) == 5
    assert _count_words(comments["enr6z05"]["body"], right) == 4
    assert _count_words(comments["enr6z05"]["body"], Mishandling(count_urls=True)) > 5
    assert _count_words(comments["enr6z05"]["body"], Mishandling(split_words=True)) == 6


def _outcomes(
    verdict: tuple[dict[str, list[str]], dict[str, str], dict[str, str]], expected: dict, fixture: RedditFixture
) -> dict[str, tuple]:
    """Per candidate: (references, post reason, reasons of its comments in id order)."""
    kept, post_reasons, comment_reasons = verdict
    comments_of: dict[str, list[str]] = {}
    for comment in fixture.comments:
        comments_of.setdefault(comment["link_id"].removeprefix("t3_"), []).append(comment["id"])
    return {
        post_id: (
            kept.get(post_id),
            post_reasons.get(post_id),
            tuple(comment_reasons.get(c) for c in sorted(comments_of.get(post_id, []))),
        )
        for post_id in expected["candidate_ids"]
    }


@pytest.mark.parametrize(
    ("how", "changed_posts"),
    [
        (Mishandling(keep_escapes=True), {"bkq2a9", "bkn4v6"}),
        (Mishandling(count_urls=True), {"bli5z1"}),
        (Mishandling(split_words=True), {"bli5z1"}),
        (Mishandling(reverse_ties=True), {"bl5h2k"}),
        (Mishandling(drop_files=("dumps/monthly/RC_2019-06.zst",)), {"blq4n2"}),
        (Mishandling(drop_files=("dumps/subreddit/photocritique_comments.zst",)), {"bkv0d8", "bl8k5m"}),
        (Mishandling(oldest_wins=True), {"bk2m7q", "bk6t3d", "bkk9p3", "bl8k5m"}),
    ],
    ids=["escapes", "urls", "word-splitting", "tie-order", "june-file", "subreddit-file", "oldest-wins"],
)
def test_each_mishandling_changes_exactly_the_outcomes_of_its_cases(
    out: Path, expected: dict, fixture: RedditFixture, how: Mishandling, changed_posts: set[str]
) -> None:
    right = _outcomes((expected["kept"], expected["post_reasons"], expected["comment_reasons"]), expected, fixture)
    wrong = _outcomes(_model(out, expected, how), expected, fixture)
    assert {post_id for post_id in right if wrong[post_id] != right[post_id]} == changed_posts
