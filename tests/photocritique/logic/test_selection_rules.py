import random

import pytest

from assets.photocritique.logic import selection_rules as cf
from assets.photocritique.logic.selection_rules import FilterParams, count_words, normalize_for_duplicates, rank_key, select_references
from assets.photocritique.logic.reddit_records import UsernameHasher, normalize_comment, normalize_submission
from resources.reddit_sources import Origin, RawItem

HASHER = UsernameHasher("filters-salt")
ORIGIN = Origin("dump", "/d/RC.zst")
GOOD = "The horizon leans left and the sky is blown out."  # 10 words


def make_post(**fields):
    data = {"id": "p1", "subreddit": "photocritique", "author": "Submitter", "created_utc": 1000, "url": "https://i.redd.it/a.jpg",
            "title": "Evening portrait of my grandfather in the garden", "selftext": "Any advice on the lighting?"}
    data.update(fields)
    return normalize_submission(RawItem("submission", data, ORIGIN), HASHER)


def make_comment(cid, body=GOOD, score=1, created=2000, **fields):
    data = {"id": cid, "link_id": "t3_p1", "parent_id": "t3_p1", "author": f"user_{cid}", "body": body, "score": score,
            "created_utc": created}
    data.update(fields)
    return normalize_comment(RawItem("comment", data, ORIGIN), HASHER)


def by_id(decisions):
    return {d.comment_id: d for d in decisions}


def test_count_words():
    assert count_words("Don't crop the well-lit part, it’s great!") == 7
    assert count_words("See https://example.com/a?b=c for more") == 3
    assert count_words("Read [this guide](https://example.com/g) (really) please") == 5
    assert count_words("[https://x.org](https://x.org)") == 0
    assert count_words("f/8, 1/250s & ISO 100 -- nice") == 7  # f 8 1 250s ISO 100 nice
    assert count_words("") == 0


def test_normalize_for_duplicates():
    assert normalize_for_duplicates("  Nice   SHOT &amp; colours\n") == normalize_for_duplicates("nice shot & colours")
    assert normalize_for_duplicates("Nice shot") != normalize_for_duplicates("Nice shot!")


def test_every_comment_rule_and_the_ranking():
    post = make_post()
    comments = [
        make_comment("a1", body="[deleted]", author="[deleted]"),
        make_comment("a2", body="[removed]"),
        make_comment("a3", parent_id="t1_b1", score=100),  # nested reply, however good
        make_comment("a4", distinguished="moderator"),
        make_comment("a5", distinguished="admin"),
        make_comment("a6", stickied=True),
        make_comment("a7", author="AutoModerator"),
        make_comment("a8", body="Thanks for posting! I am a bot, please contact the moderators."),
        make_comment("a9", body="Removed for rule 2. *This action was performed automatically.*"),
        make_comment("aa", author="SUBMITTER", score=50),
        make_comment("ab", body="Great shot, love it", score=40),  # four words
        make_comment("b1", score=10, created=2100),
        make_comment("b2", body="  the HORIZON leans left and the sky is blown   out. ", score=99, created=2200),  # dup of b1
        make_comment("b3", body="Try a reflector to fill the shadows under his eyes.", score=10, created=2050),
        make_comment("b4", body="Lovely mood, but the background is too busy for me.", score=7, created=2000),
        make_comment("b5", body="I would crop a little tighter on the face here.", score=10, created=2100),
        make_comment("b6", body="Nice use of the golden hour light on his face.", score=None, created=1500),
    ]
    decision, decisions = select_references(post, comments, None)
    got = by_id(decisions)
    assert len(decisions) == len(comments)
    expected_reasons = {
        "a1": "comment_deleted", "a2": "comment_removed", "a3": "not_top_level", "a4": "moderator_notice",
        "a5": "moderator_notice", "a6": "moderator_notice", "a7": "moderator_notice", "a8": "moderator_notice",
        "a9": "moderator_notice", "aa": "by_submitter", "ab": "too_few_words", "b2": "duplicate_comment",
        "b4": "not_in_top_3", "b6": "not_in_top_3",
    }
    assert {cid: d.reason_code for cid, d in got.items() if d.status == "excluded"} == expected_reasons
    assert "b1" in got["b2"].detail
    # score 10 three times: earlier created_utc first; b1 and b5 share the time, so the smaller base36 id wins.
    assert [(got[c].rank, got[c].status) for c in ("b3", "b1", "b5")] == [(1, "reference"), (2, "reference"), (3, "reference")]
    assert got["b6"].rank is None and got["ab"].n_words == 4
    assert decision.status == "kept" and decision.reason_code is None
    assert (decision.n_qualifying, decision.n_comments, decision.n_words) == (5, len(comments), 13)


def test_output_does_not_depend_on_input_order():
    post = make_post()
    comments = [make_comment(f"c{i}", body=f"{GOOD} Point {i % 4}.", score=i % 3, created=2000 + i % 2) for i in range(12)]
    comments.append(make_comment("zz", body=comments[0].body.upper(), created=1000))  # earlier copy: the original loses
    expected = select_references(post, comments, None)
    assert by_id(expected[1])["c0"].reason_code == "duplicate_comment"
    rng = random.Random(7)
    for _ in range(20):
        shuffled = comments[:]
        rng.shuffle(shuffled)
        assert select_references(post, shuffled, None) == expected


def test_rank_key_ranks_an_unknown_score_as_zero_or_with_null_score_last():
    comments = [make_comment("b", score=None, created=1000), make_comment("a", score=-5), make_comment("c", score=0),
                make_comment("d", score=2)]
    assert [c.comment_id for c in sorted(comments, key=rank_key)] == ["d", "b", "c", "a"]  # b: 0, and earlier than c
    last = sorted(comments, key=lambda c: rank_key(c, "last"))
    assert [c.comment_id for c in last] == ["d", "c", "a", "b"]


def test_a_comment_without_a_score_outranks_a_downvoted_one_unless_null_score_is_last():
    comments = [make_comment("q1", score=4), make_comment("q2", body=f"{GOOD} Two.", score=3),
                make_comment("q3", body=f"{GOOD} Three.", score=None), make_comment("q4", body=f"{GOOD} Four.", score=-2)]
    _, decisions = select_references(make_post(), comments, None)
    assert {c: d.rank for c, d in by_id(decisions).items()} == {"q1": 1, "q2": 2, "q3": 3, "q4": None}
    _, decisions = select_references(make_post(), comments, None, FilterParams(null_score="last"))
    assert {c: d.rank for c, d in by_id(decisions).items()} == {"q1": 1, "q2": 2, "q3": None, "q4": 3}


@pytest.mark.parametrize(
    ("post_fields", "image_problem", "reason"),
    [
        ({}, ("no_image", "self post without an image"), "no_image"),
        ({"removed_by_category": "moderator"}, ("no_image", "x"), "no_image"),
        ({}, ("image_unsupported", "imgur album"), "image_unsupported"),
        ({}, ("image_not_local", "not in images_by_post"), "image_not_local"),
        ({}, ("image_unavailable", "removed_image_placeholder"), "image_unavailable"),
        ({"title": "Thoughts?", "selftext": "Shot on a phone, be honest."}, None, "too_few_words"),  # 8 words
    ],
)
def test_excluded_posts_pass_the_reason_to_their_qualifying_comments(post_fields, image_problem, reason):
    comments = [make_comment(f"q{i}", body=f"{GOOD} Number {i}.", score=i) for i in range(4)] + [make_comment("r1", parent_id="t1_q1")]
    decision, decisions = select_references(make_post(**post_fields), comments, image_problem)
    assert decision.status == "excluded" and decision.reason_code == reason and decision.n_qualifying == 4
    if image_problem and image_problem[0] == reason:
        assert decision.detail == image_problem[1]
    got = by_id(decisions)
    assert {got[f"q{i}"].reason_code for i in range(4)} == {"post_excluded"} and reason in got["q0"].detail
    assert got["r1"].reason_code == "not_top_level"  # its own reason, not the post's
    assert all(d.rank is None for d in decisions)


def test_post_with_fewer_than_three_qualifying_comments():
    comments = [make_comment("q1", score=5), make_comment("q2", body=f"{GOOD} Also.", score=3), make_comment("m1", stickied=True)]
    decision, decisions = select_references(make_post(), comments, None)
    assert (decision.reason_code, decision.n_qualifying) == ("too_few_qualifying_comments", 2)
    reasons = {cid: d.reason_code for cid, d in by_id(decisions).items()}
    assert reasons == {"q1": "post_excluded", "q2": "post_excluded", "m1": "moderator_notice"}


def test_exactly_ten_words_and_five_words_pass():
    post = make_post(title="One two three four five", selftext="six seven eight nine ten")
    comments = [make_comment(f"q{i}", body=f"word{i} two three four five") for i in range(3)]
    decision, decisions = select_references(post, comments, None)
    assert decision.status == "kept" and decision.n_words == 10
    assert sorted(d.rank for d in decisions) == [1, 2, 3]


def test_custom_params_and_caller_errors():
    params = FilterParams(min_comment_words=1, references_per_post=1, bot_boilerplate=(r"^beep boop",))
    comments = [make_comment("q1", body="Nice"), make_comment("q2", body="BEEP BOOP I am a bot")]
    decision, decisions = select_references(make_post(), comments, None, params)
    assert decision.status == "kept"
    assert [(d.status, d.rank, d.reason_code) for d in decisions] == [("reference", 1, None), ("excluded", None, "moderator_notice")]
    with pytest.raises(ValueError):
        select_references(make_post(), [make_comment("q1"), make_comment("q1")], None)
    with pytest.raises(ValueError):
        select_references(make_post(id="other"), [make_comment("q1")], None)
    with pytest.raises(ValueError):
        select_references(make_post(), [], ("http_status", "404"))
    assert cf.POST_REASONS[0] == "post_deleted" and cf.COMMENT_REASONS[-1] == "post_excluded"


@pytest.mark.parametrize(
    ("post_fields", "reason"),
    [
        ({"selftext": "[deleted]", "author": "[deleted]"}, "post_deleted"),
        ({"removed_by_category": "deleted"}, "post_deleted"),
        ({"selftext": "[removed]"}, "post_removed"),
        ({"removed_by_category": "moderator"}, "post_removed"),
    ],
)
def test_a_removed_post_is_judged_by_the_three_rules_unless_exclude_removed_posts(post_fields, reason):
    post = make_post(title="Evening portrait of my grandfather in the garden at dusk", **post_fields)  # 10 words
    comments = [make_comment(f"q{i}", body=f"{GOOD} Number {i}.", score=i) for i in range(3)]
    decision, decisions = select_references(post, comments, None)
    assert decision.status == "kept" and sorted(d.rank for d in decisions) == [1, 2, 3]
    decision, decisions = select_references(post, comments, None, FilterParams(exclude_removed_posts=True))
    assert decision.reason_code == reason and {d.reason_code for d in decisions} == {"post_excluded"}


def test_a_placeholder_body_holds_no_words():
    post = make_post(title="One two three four five six seven eight nine", selftext="[removed]")
    comments = [make_comment(f"q{i}", body=f"{GOOD} Number {i}.") for i in range(3)]
    decision, _ = select_references(post, comments, None)
    assert (decision.reason_code, decision.n_words) == ("too_few_words", 9)
    decision, _ = select_references(make_post(title=post.title, selftext="removed"), comments, None)
    assert (decision.status, decision.n_words) == ("kept", 10)  # the same word written by the submitter counts


@pytest.mark.parametrize("author", ["[deleted]", "[removed]", None])
def test_a_comment_without_a_known_author_does_not_qualify_unless_deleted_author_comments_keep(author):
    comments = [make_comment("q1", score=9, author=author), make_comment("q2", body=f"{GOOD} Two.", score=3),
                make_comment("q3", body=f"{GOOD} Three.", score=2), make_comment("q4", body=f"{GOOD} Four.", score=1)]
    decision, decisions = select_references(make_post(), comments, None)
    got = by_id(decisions)
    assert got["q1"].reason_code == "author_deleted" and "submitter" in got["q1"].detail
    assert [got[c].rank for c in ("q2", "q3", "q4")] == [1, 2, 3] and decision.n_qualifying == 3
    _, decisions = select_references(make_post(), comments, None, FilterParams(deleted_author_comments="keep"))
    assert by_id(decisions)["q1"].rank == 1


def test_a_deleted_comment_keeps_its_own_reason_before_the_author_rule():
    _, decisions = select_references(make_post(), [make_comment("q1", body="[deleted]", author="[deleted]")], None)
    assert decisions[0].reason_code == "comment_deleted"


def test_unknown_option_values_are_refused():
    with pytest.raises(ValueError, match="deleted_author_comments"):
        FilterParams(deleted_author_comments="drop")
    with pytest.raises(ValueError, match="null_score"):
        FilterParams(null_score="first")
