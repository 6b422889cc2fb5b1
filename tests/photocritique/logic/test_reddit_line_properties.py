"""Property tests: whatever bytes a dump line holds, parsing, normalizing and resolving its images never raise;
each line is a record, a problem with a reason naming its file and line, or not selected."""

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assets.photocritique.logic.reddit_dumps import COMMENT, SUBMISSION, DumpLine, read_line, selector
from assets.photocritique.logic.image_links import resolve_images
from assets.photocritique.logic.reddit_records import Post, UsernameHasher, normalize_comment, normalize_submission
from resources.reddit_sources import RawItem, SourceProblem

HASHER = UsernameHasher("property-salt")
POSTS = selector(SUBMISSION, ids={"abc12", "p1"})
COMMENTS = selector(COMMENT, post_ids={"abc12"})
VALID_POST = {
    "id": "abc12", "subreddit": "photocritique", "author": "someone", "title": "Sunset &amp; lake", "selftext": "",
    "created_utc": 1425000000, "score": 12, "num_comments": 4, "url": "https://i.redd.it/xyz.jpg", "is_self": False,
    "is_gallery": True, "gallery_data": {"items": [{"media_id": "m1"}]},
    "media_metadata": {"m1": {"status": "valid", "s": {"u": "https://i.redd.it/m1.jpg", "x": 10, "y": 20}}},
    "preview": {"images": [{"source": {"url": "https://preview.redd.it/a.jpg", "width": 1, "height": 2}}]},
    "crosspost_parent_list": [{"id": "p1", "url": "https://i.imgur.com/AbCdE", "preview": {}}],
}
VALID_COMMENT = {"id": "c1", "link_id": "t3_abc12", "parent_id": "t3_abc12", "author": "critic", "body": "Nice light.",
                 "score": 3, "created_utc": 1425000100, "stickied": False, "distinguished": None}

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


def _outcome(data: bytes, selection) -> object:
    result = read_line(DumpLine("/dumps/RS_2020-01.zst", 17, 4096, data, selection))
    if isinstance(result, RawItem):
        result = (normalize_submission(result, HASHER) if result.kind == "submission"
                  else normalize_comment(result, HASHER))
    if isinstance(result, SourceProblem):
        assert result.detail.startswith("RS_2020-01.zst line 17: ") and result.reason_code
    if isinstance(result, Post):
        resolve_images(result, 2)
        assert len(result.content_digest()) == 64  # storable
    return result


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=400))
def test_random_bytes_never_raise(data: bytes) -> None:
    _outcome(data, POSTS)
    _outcome(data, COMMENTS)


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from([(VALID_POST, POSTS), (VALID_COMMENT, COMMENTS)]), st.data())
def test_a_valid_record_with_any_field_replaced_never_raises(valid, data) -> None:
    record, selection = valid
    mutated = dict(record)
    for key in data.draw(st.lists(st.sampled_from(sorted(record) + ["removed_by_category", "retrieved_on"]), max_size=3)):
        mutated[key] = data.draw(json_values)
    _outcome(json.dumps(mutated).encode(), selection)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_valid_lines_cut_or_with_bytes_flipped_never_raise(data) -> None:
    line = json.dumps(VALID_POST).encode()
    position = data.draw(st.integers(0, len(line) - 1))
    if data.draw(st.booleans()):
        line = line[:position]
    else:
        line = line[:position] + bytes([data.draw(st.integers(0, 255))]) + line[position + 1:]
    _outcome(line, POSTS)
