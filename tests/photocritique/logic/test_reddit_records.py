import itertools
import json
import pickle

import pytest

from assets.photocritique.logic import reddit_records as rr
from assets.photocritique.logic.reddit_records import (
    Comment,
    Post,
    UsernameHasher,
    merge_observations,
    normalize_comment,
    normalize_submission,
    parse_id_list,
)
from resources.reddit_sources import Origin, RawItem, SourceProblem
from warehouse.ids import digest_of

SALT = "pepper-for-tests-only"
HASHER = UsernameHasher(SALT)
DUMP = Origin("dump", "/dumps/RS_2015-03.zst", line_no=7, byte_offset=4096)


def submission(**fields):
    data = {
        "id": "abc12",
        "name": "t3_abc12",
        "subreddit": "photocritique",
        "author": "Shutterbug",
        "title": "Sunset over the lake",
        "selftext": "",
        "created_utc": 1425000000,
        "score": 12,
        "num_comments": 4,
        "url": "https://i.redd.it/xyz.jpg",
        "permalink": "/r/photocritique/comments/abc12/sunset/",
        "domain": "i.redd.it",
        "is_self": False,
    }
    data.update(fields)
    return RawItem("submission", {k: v for k, v in data.items() if v is not _DROP}, DUMP)


def comment(**fields):
    data = {
        "id": "c1",
        "name": "t1_c1",
        "link_id": "t3_abc12",
        "parent_id": "t3_abc12",
        "author": "Critic",
        "body": "The horizon is tilted a little to the left.",
        "score": 3,
        "created_utc": 1425000100,
        "distinguished": None,
        "stickied": False,
    }
    data.update(fields)
    return RawItem("comment", {k: v for k, v in data.items() if v is not _DROP}, DUMP)


_DROP = object()


def _raw_names_absent(row, *names):
    text = json.dumps(row, default=str).casefold()
    return all(name.casefold() not in text for name in names)


# --- usernames -------------------------------------------------------------------------------------------------


def test_hasher_hides_its_salt_and_compares_names_case_insensitively():
    assert SALT not in repr(HASHER) and SALT not in str(HASHER)
    assert HASHER.hash("Shutterbug") == HASHER.hash("shutterbug") == HASHER.hash("SHUTTERBUG")
    assert len(HASHER.hash("Shutterbug")) == 32 and HASHER.hash("Shutterbug") != HASHER.hash("Shutterbug2")
    assert UsernameHasher("another salt").hash("Shutterbug") != HASHER.hash("Shutterbug")
    assert [HASHER.hash(n) for n in (None, "", "[deleted]", "[removed]")] == [None] * 4
    fingerprint = HASHER.salt_fingerprint()
    assert fingerprint == UsernameHasher(SALT).salt_fingerprint() != UsernameHasher("another salt").salt_fingerprint()
    assert SALT not in fingerprint
    with pytest.raises(TypeError):
        pickle.dumps(HASHER)
    with pytest.raises(ValueError) as empty:
        UsernameHasher("")
    assert "salt" in str(empty.value)


# --- submissions -----------------------------------------------------------------------------------------------


def test_submission_is_unescaped_typed_and_free_of_the_username():
    post = normalize_submission(
        submission(
            title="Light &amp; shadow",
            selftext="Shot at f/8 &gt; f/4? Thoughts &amp; advice welcome.",
            url="https://preview.redd.it/a.jpg?width=640&amp;s=abc",
            created_utc="1425000000.0",
            score="12",
        ),
        HASHER,
    )
    assert isinstance(post, Post)
    assert post.title == "Light & shadow" and post.body == "Shot at f/8 > f/4? Thoughts & advice welcome."
    assert post.url == post.media["url"] == "https://preview.redd.it/a.jpg?width=640&s=abc"
    assert post.created_utc == 1425000000 and post.score == 12 and post.num_comments == 4
    assert post.permalink == "https://www.reddit.com/r/photocritique/comments/abc12/sunset/"
    assert post.author_hash == HASHER.hash("shutterbug")
    assert post.removed_state is None and post.crosspost_parent is None
    row = post.to_row()
    assert row["source_kind"] == "dump" and row["source_locator"] == "/dumps/RS_2015-03.zst"
    assert (row["line_no"], row["byte_offset"], row["retrieved_at"]) == (7, 4096, None)
    assert "origin" not in row and isinstance(row["media"], dict)
    assert _raw_names_absent(row, "Shutterbug")
    json.dumps(row)  # JSON-friendly as it stands


def test_old_schema_without_name_or_permalink_still_normalizes():
    post = normalize_submission(submission(name=_DROP, permalink=_DROP, created_utc=1200000000.7, score=_DROP), HASHER)
    assert post.name == "t3_abc12" and post.created_utc == 1200000000 and post.score is None
    assert post.permalink == "https://www.reddit.com/r/photocritique/comments/abc12/"


@pytest.mark.parametrize(
    ("fields", "detail_word"),
    [({"id": _DROP}, "id"), ({"id": "not an id!"}, "id"), ({"created_utc": _DROP}, "created_utc")],
)
def test_submission_without_usable_id_or_time_is_a_problem(fields, detail_word):
    problem = normalize_submission(submission(**fields), HASHER)
    assert isinstance(problem, SourceProblem)
    assert problem.reason_code == rr.MISSING_FIELD and detail_word in problem.detail and problem.origin == DUMP
    assert problem.detail.startswith("RS_2015-03.zst line 7: ")


@pytest.mark.parametrize(
    ("fields", "detail"),
    [
        ({"created_utc": "yesterday"}, "field created_utc is str, expected int (got 'yesterday')"),
        ({"score": "abc"}, "field score is str, expected int (got 'abc')"),
        ({"score": 2**40}, "field score is int, expected int within ±2147483647"),
        ({"author": 5}, "field author is int, expected str (got 5)"),
        ({"title": ["a"]}, "field title is list, expected str"),
        ({"stickied": "yes"}, "field stickied is str, expected bool"),
        ({"removed_by_category": ["x"]}, "field removed_by_category is list, expected str"),
        ({"gallery_data": "x"}, "field gallery_data is str, expected dict (got 'x')"),
        ({"preview": [1]}, "field preview is list, expected dict"),
        ({"crosspost_parent_list": [{"id": "p1", "preview": "x"}]},
         "field crosspost_parent_list[0].preview is str, expected dict"),
    ],
)
def test_a_field_of_the_wrong_type_is_a_problem_naming_it(fields, detail):
    problem = normalize_submission(submission(**fields), HASHER)
    assert isinstance(problem, SourceProblem) and problem.reason_code == rr.BAD_FIELD_TYPE
    assert problem.detail.startswith("RS_2015-03.zst line 7: submission abc12: ") and detail in problem.detail
    assert problem.item_id == "abc12"


def test_safe_coercions_of_odd_field_types():
    """Numeric strings and floats are numbers, null text is empty, 0/1 are flags, an empty list where an
    object belongs is absent, lone surrogates become U+FFFD, NaN in nested media becomes null."""
    post = normalize_submission(submission(score="12", num_comments=3.0, selftext=None, stickied=1, preview=[],
                                           title="half \ud83d emoji", media_metadata={"m": {"x": float("nan")}}), HASHER)
    assert isinstance(post, Post)
    assert (post.score, post.num_comments, post.body, post.stickied) == (12, 3, "", True)
    assert post.media["preview"] is None and post.media["media_metadata"] == {"m": {"x": None}}
    assert post.title == "half \ufffd emoji"
    assert len(post.content_digest()) == 64  # storable: the digest encodes it as UTF-8
    c = normalize_comment(comment(score=None, body=None, author=None), HASHER)
    assert (c.score, c.body, c.author_hash) == (None, "", None)
    assert normalize_comment(comment(score=[1]), HASHER).reason_code == rr.BAD_FIELD_TYPE


@pytest.mark.parametrize(
    ("fields", "state"),
    [
        ({"selftext": "[deleted]"}, "deleted"),
        ({"removed_by_category": "author"}, "deleted"),
        ({"removed_by_category": "deleted"}, "deleted"),
        ({"selftext": "[removed]"}, "removed"),
        ({"removed_by_category": "moderator"}, "removed"),
        ({"removed_by_category": "automod_filtered"}, "removed"),
        ({"removed_by_category": None, "author": "[deleted]"}, None),  # account gone, post still there
    ],
)
def test_post_removed_state(fields, state):
    assert normalize_submission(submission(**fields), HASHER).removed_state == state


def test_crosspost_keeps_only_the_parents_image_fields():
    parent = {
        "id": "par01",
        "author": "OriginalPoster",
        "selftext": "long story",
        "url": "https://i.redd.it/p.jpg?a=1&amp;b=2",
        "is_gallery": False,
    }
    post = normalize_submission(submission(crosspost_parent="t3_par01", crosspost_parent_list=[parent]), HASHER)
    assert post.crosspost_parent == "par01"
    (kept,) = post.media["crosspost_parent_list"]
    assert kept["id"] == "par01" and kept["url"] == "https://i.redd.it/p.jpg?a=1&b=2"
    assert "selftext" not in kept and _raw_names_absent(post.to_row(), "OriginalPoster", "Shutterbug")


def test_retrieval_time_comes_from_the_record_when_the_origin_has_none():
    post = normalize_submission(submission(retrieved_on="1425500000"), HASHER)
    assert post.retrieved_at == post.origin.retrieved_at == 1425500000.0
    api = RawItem("submission", submission(retrieved_utc=1).data, Origin("archive_api", "http://127.0.0.1/p", retrieved_at=5.0))
    assert normalize_submission(api, HASHER).retrieved_at == 5.0


def test_content_digest_ignores_where_and_when_a_copy_was_read():
    first = normalize_submission(submission(), HASHER)
    rescan = normalize_submission(RawItem("submission", submission().data, Origin("reddit_api", "x", retrieved_at=9.0)), HASHER)
    changed = normalize_submission(submission(score=13), HASHER)
    assert first.content_digest() == rescan.content_digest() != changed.content_digest()
    expected = {k: v for k, v in first.to_row().items()
                if k not in ("retrieved_at", "source_kind", "source_locator", "line_no", "byte_offset")}
    assert first.content_digest() == digest_of(expected)


def test_wrong_kind_is_a_caller_error():
    with pytest.raises(ValueError):
        normalize_submission(comment(), HASHER)
    with pytest.raises(ValueError):
        normalize_comment(submission(), HASHER)


# --- comments --------------------------------------------------------------------------------------------------


def test_comment_is_unescaped_and_hashed():
    c = normalize_comment(comment(body="Crop &amp; straighten &lt;3", created_utc="1425000100", author="Critic"), HASHER)
    assert isinstance(c, Comment)
    assert c.body == "Crop & straighten <3" and c.created_utc == 1425000100 and c.post_id == "abc12"
    assert c.parent_id == "t3_abc12" and c.author_hash == HASHER.hash("CRITIC") and not c.author_is_bot
    assert _raw_names_absent(c.to_row(), "Critic") and json.dumps(c.to_row())


def test_submitter_check_survives_hashing():
    post = normalize_submission(submission(author="Shutterbug"), HASHER)
    reply = normalize_comment(comment(author="shutterBUG"), HASHER)
    other = normalize_comment(comment(author="Critic"), HASHER)
    assert reply.author_hash == post.author_hash != other.author_hash


def test_nested_reply_keeps_its_full_parent_id():
    reply = normalize_comment(comment(id="c2", parent_id="t1_c1"), HASHER)
    assert reply.parent_id == "t1_c1" and reply.post_id == "abc12"


@pytest.mark.parametrize(("body", "state"), [("[deleted]", "deleted"), ("[removed]", "removed"), ("fine words", None)])
def test_comment_removed_state(body, state):
    c = normalize_comment(comment(body=body, author="[deleted]" if state else "Critic"), HASHER)
    assert c.removed_state == state
    assert (c.author_hash is None) == bool(state)


def test_bot_accounts_are_recognised_before_the_name_is_dropped():
    assert normalize_comment(comment(author="AutoModerator"), HASHER).author_is_bot
    assert not normalize_comment(comment(author="HelpfulBot"), HASHER).author_is_bot
    assert normalize_comment(comment(author="HelpfulBot"), HASHER, bot_accounts=("helpfulbot",)).author_is_bot


def test_moderator_fields_are_carried():
    c = normalize_comment(comment(distinguished="moderator", stickied=True), HASHER)
    assert c.distinguished == "moderator" and c.stickied


@pytest.mark.parametrize(
    ("fields", "detail_word"),
    [({"id": _DROP}, "id"), ({"link_id": _DROP}, "link_id"), ({"parent_id": _DROP}, "parent_id"),
     ({"created_utc": None}, "created_utc")],
)
def test_comment_missing_fields_are_problems(fields, detail_word):
    problem = normalize_comment(comment(**fields), HASHER)
    assert isinstance(problem, SourceProblem) and problem.reason_code == rr.MISSING_FIELD
    assert detail_word in problem.detail
    assert problem.item_id == (None if "id" in fields else "c1")


# --- merging ---------------------------------------------------------------------------------------------------


def _observation(score, origin):
    return normalize_submission(RawItem("submission", submission(score=score).data, origin), HASHER)


def test_merge_picks_the_latest_retrieval_whatever_the_input_order():
    observations = [
        _observation(1, Origin("dump", "/d/RS_2015-03.zst", 3, 300)),  # no retrieval time: oldest
        _observation(2, Origin("dump", "/d/RS_2015-03.zst", 9, 900, retrieved_at=100.0)),
        _observation(3, Origin("dump", "/d/RS_2015-04.zst", 1, 0, retrieved_at=100.0)),  # larger locator
        _observation(4, Origin("archive_api", "http://127.0.0.1/a", retrieved_at=100.0)),  # better source
        _observation(5, Origin("reddit_api", "http://127.0.0.1/r", retrieved_at=90.0)),  # older
    ]
    for order in itertools.permutations(observations):
        assert merge_observations(order).score == 4
    assert merge_observations(observations[:3]).score == 3
    assert merge_observations(observations[:2]).score == 2
    same_file = [_observation(6, Origin("dump", "/d/x.zst", 1, 10, 7.0)), _observation(7, Origin("dump", "/d/x.zst", 2, 20, 7.0))]
    assert merge_observations(same_file).score == merge_observations(same_file[::-1]).score == 7


def test_merge_of_identical_places_is_still_order_independent():
    origin = Origin("dump", "/d/x.zst", 1, 10, 7.0)
    twins = [_observation(1, origin), _observation(2, origin)]
    assert merge_observations(twins) == merge_observations(twins[::-1])


def test_merge_refuses_mixed_records_and_nothing():
    post = _observation(1, DUMP)
    other = normalize_submission(submission(id="zzz99"), HASHER)
    with pytest.raises(ValueError):
        merge_observations([post, other])
    with pytest.raises(ValueError):
        merge_observations([])


# --- id lists --------------------------------------------------------------------------------------------------


def test_id_list_streams_crlf_lf_blank_and_bad_lines(tmp_path):
    path = tmp_path / "test_ids.txt"
    path.write_bytes(b"\xef\xbb\xbfabc12\r\n\r\nDEF34\r\nt3_ghi56\nnot an id\n  \nxyz78")
    rows = list(parse_id_list(path))
    assert [(line, pid) for line, pid, _, _ in rows] == [(1, "abc12"), (3, "def34"), (4, "ghi56"), (5, None), (7, "xyz78")]
    assert rows[0][2:] == ("", "") and rows[3][2] == rr.MALFORMED_ID
    assert "line 5" in rows[3][3] and "not an id" in rows[3][3]
    with pytest.raises(OSError):
        list(parse_id_list(tmp_path / "missing.txt"))


def test_id_list_line_that_is_not_utf8_is_bad_encoding_and_the_rest_is_read(tmp_path):
    path = tmp_path / "ids.txt"
    path.write_bytes(b"abc12\r\ncaf\xe9\r\n\x00\x01\x02\r\ndef34\r\n")
    rows = list(parse_id_list(path))
    assert [(line, pid, reason) for line, pid, reason, _ in rows] == [
        (1, "abc12", ""), (2, None, "bad_encoding"), (3, None, "bad_encoding"), (4, "def34", "")]
    assert "line 2" in rows[1][3] and "e9" in rows[1][3]


def test_rows_round_trip_through_json_for_posts_and_comments():
    """The warehouse stores to_row() as JSON; from_row must give back an equal record (same digest)."""
    hasher = UsernameHasher("round-trip-salt")
    post = normalize_submission(
        RawItem("submission", {"id": "abc1", "subreddit": "photocritique", "author": "Someone", "title": "A &amp; B",
                               "selftext": "", "created_utc": "1557000000", "score": 4, "url": "https://i.redd.it/x.jpg",
                               "preview": {"images": [{"source": {"url": "https://preview.redd.it/x.jpg?a=1&amp;b=2"}}]}},
                Origin("dump", "/d/RS_2019-05.zst", 3, 120, 1557003600.0)),
        hasher,
    )
    comment = normalize_comment(
        RawItem("comment", {"id": "c1", "link_id": "t3_abc1", "parent_id": "t3_abc1", "author": "Other",
                            "body": "Nice &gt; light here", "score": 2, "created_utc": 1557000100},
                Origin("archive_api", "http://127.0.0.1/api/comments/tree?link_id=t3_abc1", None, None, 1557003700.0)),
        hasher,
    )
    for record in (post, comment):
        again = type(record).from_row(json.loads(json.dumps(record.to_row())))
        assert again == record and again.content_digest() == record.content_digest()
