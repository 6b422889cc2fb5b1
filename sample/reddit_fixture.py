"""A small, invented r/photocritique corpus with hand-written ground truth.

Why: the reference-set pipeline reads Reddit data from three kinds of source (zstd NDJSON dumps, an
Arctic-Shift-style HTTP API, the Reddit API through PRAW) and must reach exactly the same decisions from
each. The integration tests and the demo need data that holds every tricky case at once, that anyone can
regenerate byte-for-byte, and that contains no real Reddit content: every username, title, text, id and
picture here is made up (pictures come from ``sample.synth``).

Usage: ``python -m sample.reddit_fixture --out data/reddit_sample``, or ``write_fixture(out_dir)``.

The outcome of every case is written by hand next to the case (``_Post.expect``, ``_Post.references``,
``_Post.image_of``, ``_Comment.expect``), never computed by the filter code that the tests check. It
applies the default ``FilterParams`` thresholds (10 post words, 5 comment words, 3 references, the default bot
boilerplate) and the default bot account list ("automoderator"), under the readings ``exclude_removed_posts: true``,
``deleted_author_comments: keep`` and ``null_score: last``; tests/photocritique/test_assets.py checks, case by case,
what the paper's defaults change.

Layout written under ``out_dir``::

    ids/test_ids.txt                         candidate ids as in the RPCD split files: bare base36, CRLF,
                                             no header; plus one malformed line and one blank line
    dumps/monthly/RS_2019-05.zst             latest copy of the May 2019 submissions (several subreddits)
    dumps/monthly/RC_2019-05.zst             May 2019 comments
    dumps/monthly/RC_2019-06.zst             June comments, some on a post from 31 May
    dumps/monthly/RS_2013-02.zst             old schema: created_utc a numeric string, no ``name``, no
    dumps/monthly/RC_2013-02.zst               removed_by_category / is_gallery / media_metadata / stickied
    dumps/subreddit/photocritique_submissions.zst   another scan of some r/photocritique items: mostly
    dumps/subreddit/photocritique_comments.zst      OLDER copies (lower retrieved_on, other score or state),
                                                    one NEWER copy, one comment found only here, and
                                                    identical copies of the 2013 items
    dumps/broken/RS_2019-07.zst              one malformed line, one line without ``id``, valid lines, then
                                             cut inside the last compressed block (no candidates in it)
    images/<host>/<path>                     a local mirror of every image URL (query string dropped), so a
                                             prefix rewrite https://<host>/ -> images/<host>/ finds them
    images_by_post/<post_id>.jpg             already-downloaded copies for two kept posts (same bytes as
                                             the image at ``image_of``)
    expected.json                            the ground truth, schema below

Every dump line is one JSON object (``\\n`` endings, UTF-8, keys in the order they are built), with text
and URLs HTML-escaped the way archives keep them (``&amp;``, ``&lt;``, ``&gt;``). The API servers of the
tests serve ``RedditFixture.posts`` / ``.comments``: the latest copy of every submission and comment of
the sound dumps, in that same archived (escaped) form, the 2013 ones in the old schema. Posts of the
broken dump are not part of them.

``expected.json`` (schema_version 1)::

    {
      "schema_version": 1,
      "salt": str,                         # username salt for the run (not a secret: demo only)
      "bot_accounts": ["automoderator"],
      "subreddit": "photocritique",
      "candidates_file": "ids/test_ids.txt",
      "candidate_ids": [str],              # the well-formed ids of the file, in file order
      "kept": {post_id: [comment_id rank 1, rank 2, rank 3]},
      "post_reasons": {post_id: reason},   # every excluded candidate, incl. "not_found", and the
                                           # malformed line (as written, stripped) -> "malformed_id"
      "comment_reasons": {comment_id: reason | "reference"},   # every comment of every candidate post
      "image_of": {post_id: url},          # first candidate the pool admits, for every candidate whose
                                           # decision gets past the image rule (kept, too_few_words,
                                           # too_few_qualifying_comments); deleted/removed posts are left
                                           # out: whether their image is fetched at all is the pipeline's call
      "source_problems": {reason: count},  # what reading dumps/broken/RS_2019-07.zst must report, by id
                                           # (any id list) or by the July 2019 window below; not_found
                                           # problems for the ids asked come on top in an id read
      "broken_dump": {"path": str, "readable_ids": [str], "lost_ids": [str], "problems": {reason: count},
                      "window": {"subreddit": str, "start_utc": int, "end_utc": int}},   # the readable ids
                                           # are what a window read of this file returns
      "rewrite": {url_prefix: folder},     # URL-prefix rewrite onto images/ (folders relative to out_dir)
      "local_images": {post_id: path},     # files of images_by_post/ (name pattern "{post_id}*")
      "unreachable_urls": [str],           # image URLs that appear in posts but are in no mirror
      "placeholder_urls": [str],           # URLs that serve the 161x81 removed-image placeholder
      "window": {"subreddit": str, "start_utc": int, "end_utc": int, "post_ids": [str]},
      "cases": {post_id: str}              # what each candidate exercises, in words
    }
"""

from __future__ import annotations

import argparse
import html
import io
import json
import re
import shutil
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import zstandard
from PIL import Image, ImageDraw

from sample import synth

SCHEMA_VERSION = 1
SUBREDDIT = "photocritique"
SALT = "aesforge-demo-salt-not-secret"
BOT_ACCOUNTS = ("automoderator",)
JPEG_QUALITY = 90
PREVIEW_SCALE = 0.75
PLACEHOLDER_SIZE = (161, 81)
ZSTD_LEVEL = 3
MALFORMED_ID_LINE = "not-an-id!"
MALFORMED_ID_REASON = "malformed_id"
NOT_FOUND_ID = "blf9k3"  # a well-formed id that no file and no server holds
CANDIDATES_FILE = "ids/test_ids.txt"
BROKEN_DUMP = "dumps/broken/RS_2019-07.zst"
MIRROR_HOSTS = ("i.redd.it", "preview.redd.it", "external-preview.redd.it", "i.imgur.com")
IMGUR_REMOVED_URL = "https://i.imgur.com/removed.png"  # where imgur redirects a removed image

# Reason codes of the spec (assets/photocritique/logic/selection_rules.py); listed here so the fixture test can check
# that every one of them is exercised.
POST_REASONS = (
    "post_deleted",
    "post_removed",
    "no_image",
    "image_unsupported",
    "image_unavailable",
    "too_few_words",
    "too_few_qualifying_comments",
    "not_found",
)
COMMENT_REASONS = (
    "comment_deleted",
    "comment_removed",
    "not_top_level",
    "moderator_notice",
    "by_submitter",
    "too_few_words",
    "duplicate_comment",
    "not_in_top_3",
    "post_excluded",
)
REFERENCE = "reference"
KEPT = "kept"

_MAY_2019 = 1_556_668_800  # 2019-05-01T00:00:00Z
_JUNE_2019 = 1_559_347_200
_FEB_2013 = 1_359_676_800
_JULY_2019 = 1_561_939_200
_AUGUST_2019 = 1_564_617_600
_RETRIEVED_AFTER_S = 6 * 3600  # latest copies: fetched a few hours after posting
_OLDER_RETRIEVED_AFTER_S = 40 * 60  # older rescans: fetched soon after posting
_NEWER_RETRIEVED_AFTER_S = 9 * 3600  # the one newer copy kept in the per-subreddit file
_OLD_SCHEMA_RETRIEVED_ON = 1_440_288_000  # 2013 items were archived in 2015
_SUBREDDIT_IDS = {
    "photocritique": "t5_2s6vq",
    "coastalframes": "t5_3k1m8",
    "sourdoughdiaries": "t5_39fz2",
    "woodcarvingtips": "t5_2u7ce",
}
_BUILD_ENTRIES = frozenset({"ids", "dumps", "images", "images_by_post", "expected.json"})

# How a copy of an item relates to the latest one (see _Comment.rescan / _Post.rescan).
OLDER_IN_SUBREDDIT_FILE = "older_in_subreddit_file"  # the subreddit file holds an older copy
NEWER_IN_SUBREDDIT_FILE = "newer_in_subreddit_file"  # the subreddit file holds the latest, the monthly an older
ONLY_IN_SUBREDDIT_FILE = "only_in_subreddit_file"  # no monthly file holds the item
SAME_IN_SUBREDDIT_FILE = "same_in_subreddit_file"  # an identical copy in both files


def _may(day: int, hour: int, minute: int) -> int:
    return _MAY_2019 + (day - 1) * 86_400 + hour * 3600 + minute * 60


def _feb_2013(day: int, hour: int, minute: int) -> int:
    return _FEB_2013 + (day - 1) * 86_400 + hour * 3600 + minute * 60


# --------------------------------------------------------------------------
# case specifications (expected outcomes written by hand)
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class _Picture:
    """One synthetic photograph and the URLs serving it (None: the mirror has no such copy)."""

    seed: int
    size: tuple[int, int]
    full_url: str | None
    preview_url: str | None = None
    placeholder: bool = False  # the full URL serves the 161x81 removed-image placeholder instead


@dataclass(frozen=True)
class _GalleryItem:
    media_id: str
    status: str
    picture: _Picture | None = None  # full_url is the media_metadata "s.u" URL


@dataclass(frozen=True)
class _Comment:
    id: str
    author: str
    body: str  # as the user wrote it (unescaped)
    score: int
    minute: int  # minutes after the post was created
    expect: str  # hand-written decision: a reason code, or "reference"
    parent: str = ""  # id of the comment replied to; "" for a top-level comment
    distinguished: str | None = None
    stickied: bool = False
    rescan: str = ""  # one of the *_SUBREDDIT_FILE relations, "" when only the monthly file holds it
    older: Mapping[str, Any] = field(default_factory=dict)  # fields that differ in the older copy


@dataclass(frozen=True)
class _Post:
    id: str
    author: str
    title: str  # unescaped
    body: str  # selftext, unescaped
    created: int
    score: int
    domain: str
    case: str  # what the post exercises
    expect: str  # hand-written: "kept" or the post reason code
    references: tuple[str, ...] = ()  # hand-written: comment ids of ranks 1..3 for kept posts
    image_of: str | None = None  # hand-written: the image URL expected to represent the post
    link: str = ""  # the post's url field, unescaped; "" for self posts, whose url is their permalink
    comments: tuple[_Comment, ...] = ()  # in the order the dumps (and servers) list them
    picture: _Picture | None = None
    gallery: tuple[_GalleryItem, ...] = ()  # gallery_data order
    metadata_order: tuple[str, ...] = ()  # media_metadata key order
    crosspost_of: str | None = None  # id of the parent post (a non-candidate in this corpus)
    subreddit: str = SUBREDDIT
    is_self: bool = False
    post_hint: str | None = "image"
    removed_by_category: str | None = None
    flair: str | None = None
    old_schema: bool = False
    local_copy: bool = False  # also written to images_by_post/<id>.jpg
    rescan: str = ""  # as for _Comment
    older: Mapping[str, Any] = field(default_factory=dict)


_BOT_FOOTER = "I am a bot, and this action was performed automatically."

# fmt: off
_POSTS: tuple[_Post, ...] = (
    _Post(
        id="bk2m7q", author="tidepool_lens", created=_may(2, 14, 5), score=24,
        title="Low tide at the old pier, trying to balance the bright sky",
        body="Shot on a cheap 35mm prime at f/8. Did I lose too much detail in the shadows?",
        link="https://i.redd.it/4k2p9x7wq1v21.jpg", domain="i.redd.it", flair="Landscape",
        picture=_Picture(101, (640, 480), "https://i.redd.it/4k2p9x7wq1v21.jpg",
                         "https://preview.redd.it/4k2p9x7wq1v21.jpg?auto=webp&s=8e1f0b6c2a9d7e3f41a0"),
        local_copy=True, rescan=OLDER_IN_SUBREDDIT_FILE, older={"score": 3},
        case="clean kept post; the older rescan in the subreddit files has reversed comment scores",
        expect=KEPT,
        # scores 15 > 9 > 4 in the latest copies; the older copies (1, 2, 6) would reverse the order
        references=("emk1a01", "emk1a07", "emk1a0c"),
        image_of="https://i.redd.it/4k2p9x7wq1v21.jpg",
        comments=(
            _Comment("emk1a01", "grainyfilm_gus", "The horizon sits right in the middle and splits the frame in two. "
                     "Put it on the lower third so the sky gets more room.", 15, 12, REFERENCE,
                     rescan=OLDER_IN_SUBREDDIT_FILE, older={"score": 1}),
            _Comment("emk1a07", "north_of_f8", "Shadows look fine to me, but the highlights on the wet sand are "
                     "clipped. Bracket next time or use a graduated filter.", 9, 20, REFERENCE,
                     rescan=OLDER_IN_SUBREDDIT_FILE, older={"score": 2}),
            _Comment("emk1a0c", "marisol_shoots", "I like the pier as a leading line. The posts on the left edge "
                     "feel cramped though.", 4, 31, REFERENCE, rescan=OLDER_IN_SUBREDDIT_FILE, older={"score": 6}),
            # two words
            _Comment("emk1a0h", "quietshutter", "Nice shot!", 2, 40, "too_few_words"),
            # the submitter answering in a thread: a reply, so not_top_level fires before by_submitter
            _Comment("emk1a0m", "tidepool_lens", "Thanks, I'll try a lower horizon next time I'm out there.", 3, 55,
                     "not_top_level", parent="emk1a01"),
        ),
    ),
    _Post(
        id="bk6t3d", author="[deleted]", created=_may(4, 9, 20), score=12,
        title="Portrait of my grandfather in his workshop, window light only", body="[deleted]",
        link="https://i.redd.it/r8d2w6m1k3v21.jpg", domain="i.redd.it", removed_by_category="deleted",
        picture=_Picture(102, (480, 640), "https://i.redd.it/r8d2w6m1k3v21.jpg",
                         "https://preview.redd.it/r8d2w6m1k3v21.jpg?auto=webp&s=1c3e5a7b9d0f2e4a6c8b"),
        rescan=OLDER_IN_SUBREDDIT_FILE,
        older={"author": "lumen_and_loam", "removed_by_category": None, "score": 5,
               "selftext": "My grandfather in his workshop. Only window light, no reflector. Thoughts on the crop?"},
        case="deleted post (latest copy deleted; the older rescan still shows it intact)",
        expect="post_deleted",
        comments=(
            _Comment("emn3b02", "halfstop_hank", "Gorgeous skin tones, the window light really suits him.", 6, 8,
                     "post_excluded"),
            _Comment("emn3b09", "cobalt_hour", "I would crop a little off the right, the door frame pulls my eye.",
                     3, 17, "post_excluded"),
            _Comment("emn3b0f", "bokehbramble", "The background is busy; a wider aperture would separate him from "
                     "the tools.", 2, 26, "post_excluded"),
            # deleted after the first scan: the older copy has the text, the latest says [deleted]
            _Comment("emn3b0m", "[deleted]", "[deleted]", 1, 33, "comment_deleted", rescan=OLDER_IN_SUBREDDIT_FILE,
                     older={"author": "quietshutter", "body": "This is lovely, print it large and frame it for him."}),
        ),
    ),
    _Post(
        id="bk9w1e", author="fernwood_frames", created=_may(5, 18, 45), score=0,
        title="Just bought my first mirrorless camera, is this a good one for beginners?", body="[removed]",
        link="https://i.redd.it/c5n7q2x9t4v21.jpg", domain="i.redd.it", removed_by_category="moderator",
        picture=_Picture(103, (640, 480), "https://i.redd.it/c5n7q2x9t4v21.jpg"),
        case="post removed by a moderator (selftext [removed], removed_by_category moderator)",
        expect="post_removed",
        comments=(
            _Comment("emp0c01", "AutoModerator", "Your post has been removed because it breaks rule 2: no gear "
                     "questions, please use the weekly thread.\n\n*" + _BOT_FOOTER + " Message the moderators if "
                     "you think this was a mistake.*", 1, 2, "moderator_notice", distinguished="moderator",
                     stickied=True),
            _Comment("emp0c05", "north_of_f8", "Gear questions go in the weekly thread, but that body is a solid "
                     "start.", 3, 9, "post_excluded"),
            _Comment("emp0c09", "grainyfilm_gus", "Post a photo you took with it and we can talk about the picture.",
                     2, 15, "post_excluded"),
            _Comment("emp0c0d", "[deleted]", "[removed]", 1, 21, "comment_removed"),
        ),
    ),
    _Post(
        id="bkc8n0", author="saltmarsh_sara", created=_may(6, 23, 10), score=31,
        title="First attempt at astrophotography from my backyard, Milky Way core over the shed",
        body="Canon 80D, 24mm f/2.8, 20 seconds at ISO 3200. Be brutal.",
        link="https://i.redd.it/m2v8k4p7z5v21.jpg", domain="i.redd.it", flair="Astro",
        picture=_Picture(104, (720, 480), "https://i.redd.it/m2v8k4p7z5v21.jpg",
                         "https://preview.redd.it/m2v8k4p7z5v21.jpg?auto=webp&s=5b7d9f1a3c5e7a9b0d2f"),
        case="moderator notices, one rule each: AutoModerator (not distinguished), a distinguished moderator, "
             "a stickied comment, bot boilerplate from an unlisted bot; each scores high enough to enter the top 3",
        expect=KEPT,
        references=("emr4d0b", "emr4d0f", "emr4d0j"),  # 11 > 7 > 6; the notices score 12, 14, 20 and 9
        image_of="https://i.redd.it/m2v8k4p7z5v21.jpg",
        comments=(
            # written by the bot account, neither distinguished nor stickied, no boilerplate
            _Comment("emr4d01", "AutoModerator", "Thanks for posting! Remember to tell everyone what you were going "
                     "for and which settings you used.", 12, 1, "moderator_notice"),
            _Comment("emr4d03", "pc_mod_wren", "Reminder for everyone: critique the photo, not the photographer, and "
                     "keep it constructive.", 14, 6, "moderator_notice", distinguished="moderator"),
            _Comment("emr4d06", "pc_mod_oskar", "The weekly gear thread is pinned at the top of the sub, ask camera "
                     "questions there.", 20, 9, "moderator_notice", stickied=True),
            # a bot that is not in the account list, caught by the "I am a bot" boilerplate
            _Comment("emr4d08", "StarTrackerTipsBot", "Looks like you are shooting the night sky! The 500 rule "
                     "suggests at most 13 seconds at 24mm on a crop sensor. I am a bot, beep boop.", 9, 11,
                     "moderator_notice"),
            _Comment("emr4d0b", "dustyprimes", "The core is nicely placed, but the shed is a black blob. Light "
                     "paint it for a second or blend in a blue hour exposure.", 11, 25, REFERENCE),
            _Comment("emr4d0f", "cobalt_hour", "Stars are trailing a little in the corners; shorten the exposure or "
                     "stack several frames.", 7, 38, REFERENCE),
            _Comment("emr4d0j", "marisol_shoots", "White balance is very warm. Try around 3800K so the sky looks "
                     "less orange.", 6, 52, REFERENCE),
            _Comment("emr4d0n", "halfstop_hank", "Noise looks fine for a first try. Which lens was this?", 2, 70,
                     "not_in_top_3"),
        ),
    ),
    _Post(
        id="bkf0x2", author="Wanderlens_Theo", created=_may(8, 7, 55), score=18,
        title="Street scene in the rain, going for a moody cinematic look", body="",
        link="https://i.redd.it/t6b1x9q3w7v21.jpg", domain="i.redd.it", flair="Street",
        picture=_Picture(105, (640, 480), "https://i.redd.it/t6b1x9q3w7v21.jpg",
                         "https://preview.redd.it/t6b1x9q3w7v21.jpg?auto=webp&s=9a1c3e5f7b9d1f3a5c7e"),
        case="replies by the submitter (top level and nested) and a reply chain four levels deep",
        expect=KEPT,
        # 10 > 8 > 5; the submitter's own top-level comment (25) and the deep reply (6) must not count
        references=("emt7e01", "emt7e0k", "emt7e0p"),
        image_of="https://i.redd.it/t6b1x9q3w7v21.jpg",
        comments=(
            _Comment("emt7e01", "grainyfilm_gus", "The umbrella is a great subject but it's dead centre. Give the "
                     "walker space to move into.", 10, 14, REFERENCE),
            _Comment("emt7e04", "Wanderlens_Theo", "Settings for anyone curious: 1/60s at f/2, ISO 1600, teal split "
                     "tone in Lightroom.", 25, 16, "by_submitter"),
            _Comment("emt7e06", "Wanderlens_Theo", "Good point, I cropped it tight to hide a bin on the left.", 4, 30,
                     "not_top_level", parent="emt7e01"),
            _Comment("emt7e09", "grainyfilm_gus", "Clone the bin out instead, the space matters more than the bin "
                     "does.", 3, 41, "not_top_level", parent="emt7e06"),
            _Comment("emt7e0c", "Wanderlens_Theo", "Fair, I'll try the healing brush tonight and repost.", 2, 58,
                     "not_top_level", parent="emt7e09"),
            _Comment("emt7e0g", "north_of_f8", "Link the repost here when you have it, curious to see the "
                     "difference.", 6, 75, "not_top_level", parent="emt7e0c"),
            _Comment("emt7e0k", "lumen_and_loam", "Reflections on the pavement are the best part. A lower angle "
                     "would let them fill more of the frame.", 8, 90, REFERENCE),
            _Comment("emt7e0p", "fernwood_frames", "The teal grade is heavy on skin tones, pull the blue saturation "
                     "back a touch.", 5, 110, REFERENCE),
        ),
    ),
    _Post(
        id="bkh5r8", author="cobalt_hour", created=_may(9, 16, 30), score=9,
        title="Tulips in the park, my first time using a macro lens outdoors", body="",
        link="https://i.redd.it/h2j6p0v4y8v21.jpg", domain="i.redd.it", flair="Nature",
        picture=_Picture(106, (480, 640), "https://i.redd.it/h2j6p0v4y8v21.jpg",
                         "https://preview.redd.it/h2j6p0v4y8v21.jpg?auto=webp&s=3e5a7c9b1d3f5b7d9a1c"),
        case="exact duplicate comments: one differing in case and whitespace, one identical; the earliest stays",
        expect=KEPT,
        # 7 > 4 > 3; the later copies (12 and 1) are duplicates of emv2f01, which was written first
        references=("emv2f08", "emv2f01", "emv2f0c"),
        image_of="https://i.redd.it/h2j6p0v4y8v21.jpg",
        comments=(
            _Comment("emv2f01", "dustyprimes", "Rotate it a degree or two, the stems lean left.", 4, 5, REFERENCE),
            _Comment("emv2f05", "bokehbramble", "  rotate it a degree or two,\n the stems lean LEFT.  ", 12, 11,
                     "duplicate_comment"),
            _Comment("emv2f08", "saltmarsh_sara", "Focus landed on the back petal instead of the front edge. Stop "
                     "down to f/8 for more depth.", 7, 19, REFERENCE),
            _Comment("emv2f0c", "halfstop_hank", "Lovely colours, but the bright path behind the flowers steals "
                     "attention. A lower angle would hide it.", 3, 27, REFERENCE),
            _Comment("emv2f0h", "marisol_shoots", "Rotate it a degree or two, the stems lean left.", 1, 40,
                     "duplicate_comment"),
        ),
    ),
    _Post(
        id="bkk9p3", author="north_of_f8", created=_may(11, 11, 15), score=27,
        title="Abandoned greenhouse, shot through the broken glass panels with a 50mm", body="",
        link="https://i.redd.it/k7m1r5x9a0w21.jpg", domain="i.redd.it", flair="Urbex",
        picture=_Picture(107, (800, 533), "https://i.redd.it/k7m1r5x9a0w21.jpg",
                         "https://preview.redd.it/k7m1r5x9a0w21.jpg?auto=webp&s=7c9e1a3d5f7b9c1e3a5d"),
        case="deleted and removed comments (the removed one intact in the older rescan), and a comment whose "
             "author is [deleted] but whose body survives (it qualifies under deleted_author_comments: keep)",
        expect=KEPT,
        references=("emx8g07", "emx8g0a", "emx8g0e"),  # 8 > 6 > 3; the deleted (9) and removed (14) do not count
        image_of="https://i.redd.it/k7m1r5x9a0w21.jpg",
        comments=(
            _Comment("emx8g01", "[deleted]", "[deleted]", 9, 7, "comment_deleted"),
            _Comment("emx8g04", "ferrous_film", "[removed]", 14, 12, "comment_removed",
                     rescan=OLDER_IN_SUBREDDIT_FILE,
                     older={"score": 2, "body": "Stunning! You should check out my preset pack, link in my profile."}),
            _Comment("emx8g07", "[deleted]", "The broken panes make a natural frame. I would darken the edges "
                     "slightly to hold the eye in.", 8, 20, REFERENCE),
            _Comment("emx8g0a", "lumen_and_loam", "Verticals converge quite a lot. A perspective correction would "
                     "make the structure feel calmer.", 6, 33, REFERENCE),
            _Comment("emx8g0e", "quietshutter", "The moss on the frames is a great detail, get closer for a second "
                     "shot.", 3, 47, REFERENCE),
            _Comment("emx8g0i", "cobalt_hour", "Too dark for me.", 1, 60, "too_few_words"),
        ),
    ),
    _Post(
        id="bkn4v6", author="marisol_shoots", created=_may(12, 20, 40), score=15,
        title="Dusk & dawn: same lake, two edits, which one works better?",
        body="Left is straight out of camera, right is my edit -> too much?",
        link="https://i.redd.it/n4q8t2b6c1w21.jpg", domain="i.redd.it", flair="Editing",
        picture=_Picture(108, (640, 480), "https://i.redd.it/n4q8t2b6c1w21.jpg",
                         "https://preview.redd.it/n4q8t2b6c1w21.jpg?auto=webp&s=2f4b6d8a0c2e4f6b8d0a"),
        case="HTML escapes (&amp; &lt; &gt;) in title, body and comments; a comment that has 4 words after "
             "unescaping but 6 if 'lt' and 'amp' were counted",
        expect=KEPT,
        references=("emz1h01", "emz1h05", "emz1h09"),  # 9 > 6 > 4; emz1h0d (11) has only 4 words
        image_of="https://i.redd.it/n4q8t2b6c1w21.jpg",
        comments=(
            _Comment("emz1h01", "dustyprimes", "> which one works better?\n\nThe edit, but only just. The sky & water "
                     "are oversaturated; pull vibrance down by 20.", 9, 9, REFERENCE),
            _Comment("emz1h05", "saltmarsh_sara", "The straight version has the more natural colours <3 but the edit "
                     "has better contrast in the trees.", 6, 16, REFERENCE),
            _Comment("emz1h09", "fernwood_frames", "Try a middle ground: keep the edited contrast & the original "
                     "white balance.", 4, 28, REFERENCE),
            # Love, it, 3, thanks: 4 words once "&lt;" and "&amp;" are unescaped
            _Comment("emz1h0d", "halfstop_hank", "Love it <3 & thanks", 11, 35, "too_few_words"),
            _Comment("emz1h0h", "bokehbramble", "Agreed, the reds in the water look radioactive.", 2, 44,
                     "not_top_level", parent="emz1h01"),
        ),
    ),
    _Post(
        id="bkq2a9", author="bokehbramble", created=_may(14, 6, 25), score=11,
        # Fog, boats, at, dawn + Shot, this, handheld, thoughts, welcome = 9 words; reading "&amp;" as a
        # word would make it 10 and keep the post
        title="Fog & boats at dawn", body="Shot this handheld, thoughts welcome.",
        link="https://i.redd.it/p9s3v7d1e2w21.jpg", domain="i.redd.it",
        picture=_Picture(109, (640, 480), "https://i.redd.it/p9s3v7d1e2w21.jpg",
                         "https://preview.redd.it/p9s3v7d1e2w21.jpg?auto=webp&s=6d8f0b2c4e6a8c0e2b4d"),
        case="title plus body with 9 words after unescaping (10 if the escaped &amp; counted)",
        expect="too_few_words",
        image_of="https://i.redd.it/p9s3v7d1e2w21.jpg",
        comments=(
            _Comment("en1j001", "north_of_f8", "The boats are too small in the frame; get closer or use a longer "
                     "lens.", 7, 10, "post_excluded"),
            _Comment("en1j005", "grainyfilm_gus", "Fog is lovely but the exposure is a bit dark, lift the midtones.",
                     5, 18, "post_excluded"),
            _Comment("en1j009", "quietshutter", "Try a square crop around the two boats on the right side.", 3, 26,
                     "post_excluded"),
            _Comment("en1j00d", "lumen_and_loam", "There is a dust spot in the sky near the top left corner.", 2, 35,
                     "post_excluded"),
            _Comment("en1j00h", "bokehbramble", "I only had a 35mm with me that morning.", 1, 50, "not_top_level",
                     parent="en1j001"),
        ),
    ),
    _Post(
        id="bks7c4", author="lumen_and_loam", created=_may(15, 13, 0), score=22,
        title="A small series from a foggy forest walk, which frame is the strongest?",
        body="Four frames, all from the same path about ten minutes apart.",
        link="https://www.reddit.com/gallery/bks7c4", domain="reddit.com", post_hint=None,
        gallery=(
            _GalleryItem("q8v1x3f0a2b41", "failed"),
            _GalleryItem("h4t8w1q6j2e51", "valid", _Picture(
                110, (640, 480), "https://preview.redd.it/h4t8w1q6j2e51.jpg?width=640&format=pjpg&auto=webp&s=4b7e2d9a0c1f3e5d")),
            _GalleryItem("z7p3n6r2k8d41", "valid", _Picture(
                111, (640, 480), "https://preview.redd.it/z7p3n6r2k8d41.jpg?width=640&format=pjpg&auto=webp&s=0e2c4a6f8d1b3e5c")),
            _GalleryItem("a2k9m4x7b1c31", "valid", _Picture(
                112, (480, 640), "https://preview.redd.it/a2k9m4x7b1c31.jpg?width=480&format=pjpg&auto=webp&s=7a9c1e3b5d7f9a1c")),
        ),
        # first valid item: h4t8 in gallery order, z7p3 in media_metadata order, a2k9 in sorted key order
        metadata_order=("z7p3n6r2k8d41", "a2k9m4x7b1c31", "q8v1x3f0a2b41", "h4t8w1q6j2e51"),
        case="gallery: the first item failed, media_metadata keys in another order; the second gallery item "
             "represents the post",
        expect=KEPT,
        references=("en4k201", "en4k205", "en4k209"),  # 8 > 5 > 4 > 1
        image_of="https://preview.redd.it/h4t8w1q6j2e51.jpg?width=640&format=pjpg&auto=webp&s=4b7e2d9a0c1f3e5d",
        comments=(
            _Comment("en4k201", "saltmarsh_sara", "The second frame is the strongest, the light beams give it depth "
                     "the others lack.", 8, 12, REFERENCE),
            _Comment("en4k205", "dustyprimes", "As a set they work, but the third one is slightly tilted compared to "
                     "the rest.", 5, 20, REFERENCE),
            _Comment("en4k209", "halfstop_hank", "Warm the last frame a little so the series does not feel so cold.",
                     4, 31, REFERENCE),
            _Comment("en4k20d", "marisol_shoots", "Second one, easily.", 1, 45, "too_few_words"),
            _Comment("en4k20h", "cobalt_hour", "Could you repost the first one? It failed to load for me.", 1, 57,
                     "not_in_top_3"),
        ),
    ),
    _Post(
        id="bkv0d8", author="halfstop_hank", created=_may(17, 19, 35), score=14,
        title="Headshot for a friend's portfolio, lit with one speedlight and an umbrella", body="",
        link="https://imgur.com/Ab3dE7f", domain="imgur.com", post_hint="link", flair="Portrait",
        picture=_Picture(114, (480, 640), "https://i.imgur.com/Ab3dE7f.jpg",
                         "https://external-preview.redd.it/Jq8xZ2mB4vT0.jpg?auto=webp&s=9c2e4f6a8b0d1e3f"),
        case="imgur page link turned into the direct i.imgur.com image; one reference lives only in the "
             "subreddit comment file",
        expect=KEPT,
        # 9 > 7 > 3; without the subreddit file only two comments would qualify
        references=("en7p301", "en7p305", "en7p309"),
        image_of="https://i.imgur.com/Ab3dE7f.jpg",
        comments=(
            _Comment("en7p301", "fernwood_frames", "Catchlights look great, but the umbrella is a bit too far to the "
                     "side and the nose shadow is long.", 9, 6, REFERENCE),
            _Comment("en7p305", "north_of_f8", "Background is too close to her; step her forward so it falls off "
                     "into shadow.", 7, 15, REFERENCE, rescan=ONLY_IN_SUBREDDIT_FILE),
            _Comment("en7p309", "grainyfilm_gus", "Crop is tight at the top of the head, which works for headshots, "
                     "but leave more shoulder.", 3, 27, REFERENCE),
            _Comment("en7p30d", "halfstop_hank", "Thanks, I'll feather the umbrella more next time.", 2, 40,
                     "not_top_level", parent="en7p301"),
            _Comment("en7p30h", "bokehbramble", "I'd hire her.", 1, 52, "too_few_words"),
        ),
    ),
    _Post(
        id="bkx6f1", author="quietshutter", created=_may(18, 8, 50), score=4,
        title="Three shots from the coastal trail, please critique all three of them", body="",
        link="https://imgur.com/a/Zx81Qw2", domain="imgur.com", post_hint="link",
        case="imgur album link without a preview: nothing to resolve",
        expect="image_unsupported",
        comments=(
            _Comment("en9q501", "cobalt_hour", "Only the album link shows for me; post the best one directly so we can "
                     "see it.", 3, 11, "post_excluded"),
            _Comment("en9q505", "dustyprimes", "First frame has a lovely S curve along the path, the others feel "
                     "flat.", 2, 19, "post_excluded"),
            _Comment("en9q509", "quietshutter", "Sorry, here they are again, the album should load now.", 2, 25,
                     "by_submitter"),
            _Comment("en9q50d", "marisol_shoots", "The second one has a crooked horizon; the third is my favourite by "
                     "far.", 1, 38, "post_excluded"),
        ),
    ),
    _Post(
        id="bl0a3h", author="dustyprimes", created=_may(19, 9, 30), score=19,
        title="Sea stack at blue hour, 90 second exposure with a 10 stop ND", body="",
        link="/r/coastalframes/comments/bkzp4m/sea_stack_at_blue_hour_90_second_exposure_with_a_1/",
        domain="i.redd.it", crosspost_of="bkzp4m",
        picture=_Picture(115, (800, 533), None,
                         "https://preview.redd.it/8c3v5n2m7q031.jpg?auto=webp&s=2d4f6b8a0c1e3f5a"),
        case="crosspost: its url is the parent's permalink, the image comes from crosspost_parent_list",
        expect=KEPT,
        references=("enc6s01", "enc6s05", "enc6s09"),  # 13 > 6 > 4; the submitter's note (3) does not count
        image_of="https://i.redd.it/8c3v5n2m7q031.jpg",
        comments=(
            _Comment("enc6s01", "grainyfilm_gus", "The long exposure smooths the sea nicely, but the stack is a "
                     "silhouette. Lift the shadows a stop.", 13, 8, REFERENCE),
            _Comment("enc6s05", "saltmarsh_sara", "Blue hour colour is spot on. I would crop some of the empty "
                     "foreground rocks.", 6, 17, REFERENCE),
            _Comment("enc6s09", "tidepool_lens", "Is there a second exposure for the rocks? A blend would give you "
                     "detail everywhere.", 4, 30, REFERENCE),
            _Comment("enc6s0d", "dustyprimes", "Thanks all, this is a crosspost of my own post in coastalframes.", 3,
                     44, "by_submitter"),
        ),
    ),
    _Post(
        id="bl3e7j", author="ember_and_iso", created=_may(21, 15, 20), score=6,
        title="Old film scan from my dad's Pentax, colours shifted a lot over the years", body="",
        link="https://i.imgur.com/Pl4c3Hd.jpg", domain="i.imgur.com",
        picture=_Picture(0, PLACEHOLDER_SIZE, "https://i.imgur.com/Pl4c3Hd.jpg", placeholder=True),
        case="removed-image placeholder: the direct link serves the 161x81 PNG, and there is no preview",
        expect="image_unavailable",  # detail: removed_image_placeholder (or removed_image if served by redirect)
        comments=(
            _Comment("enf3t01", "halfstop_hank", "The link shows the imgur removed picture for me, can you upload it "
                     "again?", 4, 9, "post_excluded"),
            _Comment("enf3t05", "tidepool_lens", "Faded film scans usually recover well with a per-channel levels "
                     "adjustment.", 3, 16, "post_excluded"),
            _Comment("enf3t09", "lumen_and_loam", "Scan at a higher bit depth so the colour correction has more "
                     "room.", 2, 28, "post_excluded"),
            _Comment("enf3t0d", "north_of_f8", "Same here, only the grey placeholder loads.", 1, 39, "not_top_level",
                     parent="enf3t01"),
        ),
    ),
    _Post(
        id="bl5h2k", author="pinecone_pixels", created=_may(22, 12, 45), score=21,
        title="Lighthouse at golden hour, I struggled with the harsh backlight on the tower", body="",
        link="https://i.redd.it/s1u5x9f3g4w21.jpg", domain="i.redd.it", flair="Landscape",
        picture=_Picture(116, (640, 480), "https://i.redd.it/s1u5x9f3g4w21.jpg",
                         "https://preview.redd.it/s1u5x9f3g4w21.jpg?auto=webp&s=8b0d2f4a6c8e0a2c4f6b"),
        case="score ties listed out of order: 12/12 in the same second (the smaller id wins rank 1), 7/7 for "
             "ranks 3 and 4 (the earlier comment wins)",
        expect=KEPT,
        references=("enh8u03", "enh8u07", "enh8u0c"),
        image_of="https://i.redd.it/s1u5x9f3g4w21.jpg",
        comments=(
            _Comment("enh8u07", "dustyprimes", "Shoot a few minutes later when the sun drops behind the tower and the "
                     "backlight softens.", 12, 10, REFERENCE),
            _Comment("enh8u03", "grainyfilm_gus", "The tower is a silhouette with a bright halo. Expose for the sky and "
                     "fill with a reflector.", 12, 10, REFERENCE),
            _Comment("enh8u0k", "cobalt_hour", "I'd crop out the parked car on the left, it distracts from the "
                     "lighthouse.", 7, 34, "not_in_top_3"),
            _Comment("enh8u0c", "saltmarsh_sara", "Lens flare across the door is actually nice, keep it but reduce its "
                     "contrast.", 7, 20, REFERENCE),
            _Comment("enh8u0p", "quietshutter", "Composition is classic, maybe too classic; try a low angle through "
                     "the grass.", 2, 50, "not_in_top_3"),
            _Comment("enh8u0t", "pinecone_pixels", "I did not have a reflector, but I will bring one next time.", 3,
                     55, "not_top_level", parent="enh8u03"),
        ),
    ),
    _Post(
        id="bl8k5m", author="tidepool_lens", created=_may(24, 8, 5), score=16,
        title="Morning market stall, testing a new 28mm lens for street photography",
        body="Went for a documentary feel, slight crop, no other edits 📷",
        link="https://i.redd.it/v3w7z1h5j6w21.jpg", domain="i.redd.it", flair="Street",
        picture=_Picture(117, (720, 480), "https://i.redd.it/v3w7z1h5j6w21.jpg",
                         "https://preview.redd.it/v3w7z1h5j6w21.jpg?auto=webp&s=1a3c5e7d9f1b3d5f7a9c"),
        case="six qualifying comments (ranks 4-6 not_in_top_3); the top one's latest copy (score 30) is in the "
             "subreddit file while the monthly file holds an older copy (score 2)",
        expect=KEPT,
        references=("enk1v04", "enk1v01", "enk1v07"),  # 30 > 9 > 7 > 6 > 4 > 3
        image_of="https://i.redd.it/v3w7z1h5j6w21.jpg",
        comments=(
            _Comment("enk1v01", "grainyfilm_gus", "The vendor's hands are the story here, I would crop tighter on them "
                     "and the fruit.", 9, 5, REFERENCE),
            _Comment("enk1v04", "marisol_shoots", "The colours are superb, the oranges against the blue awning really "
                     "pop out.", 30, 11, REFERENCE, rescan=NEWER_IN_SUBREDDIT_FILE, older={"score": 2}),
            _Comment("enk1v07", "north_of_f8", "28mm suits this, but you are a little too far; step in one more "
                     "pace.", 7, 19, REFERENCE),
            _Comment("enk1v0a", "saltmarsh_sara", "Highlights on the scale are blown, meter for the brightest part "
                     "next time.", 6, 26, "not_in_top_3"),
            _Comment("enk1v0e", "fernwood_frames", "The customer's blurred arm on the right edge is distracting; crop "
                     "or clone.", 4, 38, "not_in_top_3"),
            _Comment("enk1v0h", "lumen_and_loam", "Consider black and white here; the mixed colours compete with each "
                     "other.", 3, 47, "not_in_top_3"),
            _Comment("enk1v0m", "cobalt_hour", "Great light, well-timed.", 5, 60, "too_few_words"),
        ),
    ),
    _Post(
        id="bl9r3t", author="soft_focus_sam", created=_may(24, 17, 30), score=3,
        title="Why are my photos always soft even at fast shutter speeds?",
        body="Using the kit lens on a Nikon D3400. Examples in my profile, but I mostly want general advice on "
             "what to check first.",
        domain="self.photocritique", is_self=True, post_hint="self",
        case="self post without any image or preview",
        expect="no_image",
        comments=(
            _Comment("enl5w01", "north_of_f8", "Check the autofocus mode first; single point AF on the eye fixes most "
                     "soft portraits.", 6, 7, "post_excluded"),
            _Comment("enl5w05", "dustyprimes", "Kit lenses are softest wide open, stop down to f/8 and compare.", 4,
                     13, "post_excluded"),
            _Comment("enl5w09", "grainyfilm_gus", "Post an actual photo and we can tell you what is going on.", 3, 22,
                     "post_excluded"),
            _Comment("enl5w0d", "halfstop_hank", "Clean the lens.", 1, 35, "too_few_words"),
        ),
    ),
    _Post(
        id="blb0n7", author="ember_and_iso", created=_may(25, 10, 0), score=5,
        title="Kids playing in the sprinkler, shot from the porch with my phone camera", body="",
        link="https://i.redd.it/x5y9b3k7m8w21.jpg", domain="i.redd.it",
        picture=_Picture(118, (640, 480), "https://i.redd.it/x5y9b3k7m8w21.jpg",
                         "https://preview.redd.it/x5y9b3k7m8w21.jpg?auto=webp&s=5f7b9d1c3e5a7c9e1b3d"),
        case="only two qualifying comments among six (submitter, short, reply, AutoModerator notice)",
        expect="too_few_qualifying_comments",
        image_of="https://i.redd.it/x5y9b3k7m8w21.jpg",
        comments=(
            _Comment("enm9x00", "AutoModerator", "Reminder: top-level comments must be critiques. " + _BOT_FOOTER, 1,
                     1, "moderator_notice", distinguished="moderator", stickied=True),
            _Comment("enm9x01", "halfstop_hank", "Phone did a good job, but the faces are in shadow. Move so the sun "
                     "is behind you.", 5, 8, "post_excluded"),
            _Comment("enm9x04", "ember_and_iso", "For context, I had about two seconds before they ran off.", 6, 14,
                     "by_submitter"),
            _Comment("enm9x08", "marisol_shoots", "Cute moment, but tilted.", 3, 20, "too_few_words"),
            _Comment("enm9x0c", "lumen_and_loam", "Tap to focus on the kids next time; the grass is sharper than they "
                     "are.", 2, 31, "post_excluded"),
            _Comment("enm9x0f", "north_of_f8", "Agreed, or use fill flash if the phone has it.", 1, 40,
                     "not_top_level", parent="enm9x01"),
        ),
    ),
    _Post(
        id="bld7w5", author="fernwood_frames", created=_may(26, 14, 10), score=8,
        title="Golden retriever portrait at the beach, tried to freeze the splash", body="",
        link="https://i.redd.it/w3xq8n1f5b331.jpg", domain="i.redd.it",
        case="direct image link that no mirror holds (unreachable), no preview",
        expect="image_unavailable",  # detail: missing_file through the mirror, http_status 404 over HTTP
        comments=(
            _Comment("enp2y01", "saltmarsh_sara", "Image will not load for me, is it still up?", 3, 10,
                     "post_excluded"),
            _Comment("enp2y05", "tidepool_lens", "Broken link here too, the thumbnail looked great though.", 2, 18,
                     "post_excluded"),
            _Comment("enp2y09", "marisol_shoots", "Splash shots need 1/2000s or faster, what shutter speed did you "
                     "use?", 2, 31, "post_excluded"),
            _Comment("enp2y0d", "fernwood_frames", "It should work now, sorry about that.", 1, 45, "by_submitter"),
        ),
    ),
    _Post(
        id="bli5z1", author="sandgrain_studio", created=_may(27, 18, 0), score=10,
        title="Dune study in the late afternoon, shared from my portfolio site for feedback", body="",
        link="https://www.lensfolio.example/photos/dune-study-4", domain="lensfolio.example", post_hint="link",
        picture=_Picture(119, (800, 533), None,
                         "https://external-preview.redd.it/Vb3nQ8rT1xLk.jpg?auto=webp&s=6a8c0e2f4b1d3f5e"),
        case="link to a web page: the preview is the only image; comments at the word threshold: 5 words with "
             "a markdown link (qualifies), 4 words with a URL, a hyphen and a curly apostrophe (too few)",
        expect=KEPT,
        # exactly three qualify (8 > 6 > 3): miscounting the 5-word one drops the post, counting the URL of
        # the 4-word one (score 12) puts it at rank 1
        references=("enr6z01", "enr6z09", "enr6z0d"),
        image_of="https://external-preview.redd.it/Vb3nQ8rT1xLk.jpg?auto=webp&s=6a8c0e2f4b1d3f5e",
        comments=(
            # Try, dodging, the, ridge, slightly
            _Comment("enr6z01", "dustyprimes", "Try [dodging the ridge](https://example.com/dodge-and-burn-guide) "
                     "slightly.", 8, 9, REFERENCE),
            # Well-lit, but, here’s, mine
            _Comment("enr6z05", "grainyfilm_gus", "Well-lit, but here’s mine: https://imgur.com/a/Qw3rTy9", 12, 14,
                     "too_few_words"),
            _Comment("enr6z09", "lumen_and_loam", "The shadow lines are beautiful but the sky is empty; crop it to a "
                     "panorama.", 6, 23, REFERENCE),
            _Comment("enr6z0d", "halfstop_hank", "Lovely tones. Is that a person on the far ridge? Scale really helps "
                     "here.", 3, 37, REFERENCE),
        ),
    ),
    _Post(
        id="bll8b4", author="harbourlight_kim", created=_may(29, 7, 40), score=13,
        title="Fishing boats coming home, my first attempt at a panning shot", body="",
        link="https://i.redd.it/g0n3k2v9x1c31.jpg", domain="i.redd.it",
        picture=_Picture(120, (640, 480), None,
                         "https://preview.redd.it/g0n3k2v9x1c31.jpg?auto=webp&s=0f2e4d6c8a1b3d5f"),
        case="direct link unreachable, the preview copy is admitted instead",
        expect=KEPT,
        references=("enu4a01", "enu4a05", "enu4a09"),  # 7 > 5 > 4; the deleted one (2) does not count
        image_of="https://preview.redd.it/g0n3k2v9x1c31.jpg?auto=webp&s=0f2e4d6c8a1b3d5f",
        comments=(
            _Comment("enu4a01", "north_of_f8", "Panning worked on the lead boat, but the background blur is uneven; "
                     "follow through longer.", 7, 12, REFERENCE),
            _Comment("enu4a05", "tidepool_lens", "The horizon is slanted by a couple of degrees, an easy fix in any "
                     "editor.", 5, 21, REFERENCE),
            _Comment("enu4a09", "cobalt_hour", "Nice motion, though the boat's bow is cut off on the right. Leave room "
                     "ahead.", 4, 33, REFERENCE),
            _Comment("enu4a0d", "[deleted]", "[deleted]", 2, 47, "comment_deleted"),
        ),
    ),
    _Post(
        id="blq4n2", author="nightowl_nils", created=_may(31, 22, 40), score=17,
        title="Late night tram stop, handheld at ISO 6400 with a fast prime", body="",
        link="https://i.redd.it/y7a1c5m9n0x21.jpg", domain="i.redd.it", flair="Night",
        picture=_Picture(121, (640, 480), "https://i.redd.it/y7a1c5m9n0x21.jpg",
                         "https://preview.redd.it/y7a1c5m9n0x21.jpg?auto=webp&s=9e1a3c5b7d9f1c3e5a7b"),
        case="posted late on 31 May: the two best comments were written on 1 June and sit in RC_2019-06",
        expect=KEPT,
        # 11 and 6 from the June file, then 4; without RC_2019-06 only two would qualify
        references=("eo01c03", "eo01c07", "enz7b01"),
        image_of="https://i.redd.it/y7a1c5m9n0x21.jpg",
        comments=(
            _Comment("enz7b01", "halfstop_hank", "Noise is well controlled for 6400, but the tram lights are blown "
                     "out.", 4, 15, REFERENCE),
            _Comment("enz7b05", "pinecone_pixels", "Nice mood. Was the tram moving or stopped?", 2, 40,
                     "not_in_top_3"),
            _Comment("eo01c03", "grainyfilm_gus", "The reflection in the tram window is the best part, crop in so it "
                     "leads the frame.", 11, 95, REFERENCE),
            _Comment("eo01c07", "marisol_shoots", "Straighten the verticals on the shelter; the lean is obvious at "
                     "this focal length.", 6, 130, REFERENCE),
            _Comment("eo01c0b", "nightowl_nils", "Good idea, I have a tighter version too.", 3, 200, "not_top_level",
                     parent="eo01c03"),
        ),
    ),
    _Post(
        id="18gq2w", author="filmgrain_1987", created=_feb_2013(10, 20, 15), score=7,
        title="Tried a long exposure of the river at night, not sure about the framing", body="",
        link="https://i.imgur.com/Rv7mK2p.jpg", domain="i.imgur.com", post_hint=None,
        picture=_Picture(122, (640, 480), "https://i.imgur.com/Rv7mK2p.jpg"),
        old_schema=True, local_copy=True, rescan=SAME_IN_SUBREDDIT_FILE,
        case="2013 post in the old schema (string created_utc, no name, no stickied); identical copies in the "
             "subreddit files",
        expect=KEPT,
        references=("c8r2k01", "c8r2k05", "c8r2k0d"),  # 5 > 3 > 2
        image_of="https://i.imgur.com/Rv7mK2p.jpg",
        comments=(
            _Comment("c8r2k01", "riverbend_ray", "The bridge lights are lovely but they pull the eye out of the frame "
                     "on the right.", 5, 20, REFERENCE, rescan=SAME_IN_SUBREDDIT_FILE),
            _Comment("c8r2k05", "oldschool_olga", "Exposure is good. I would try a slightly higher vantage point to "
                     "show the river bend.", 3, 45, REFERENCE, rescan=SAME_IN_SUBREDDIT_FILE),
            _Comment("c8r2k09", "filmgrain_1987", "Good call, there is a footbridge just upstream I can use.", 2, 60,
                     "not_top_level", parent="c8r2k01", rescan=SAME_IN_SUBREDDIT_FILE),
            _Comment("c8r2k0d", "tripod_tess", "The sky is noisy; a longer exposure at lower ISO would clean it up.", 2,
                     80, REFERENCE, rescan=SAME_IN_SUBREDDIT_FILE),
            _Comment("c8r2k0h", "riverbend_ray", "Agree on the vantage point.", 1, 95, "not_top_level",
                     parent="c8r2k05", rescan=SAME_IN_SUBREDDIT_FILE),
        ),
    ),
)

# Posts that are in the dumps and on the servers but not candidates (other subreddits, a crosspost parent,
# an r/photocritique post missing from the id list, an old post of another subreddit).
_OTHER_POSTS: tuple[_Post, ...] = (
    _Post(
        id="bkd2r5", author="crumb_theory", created=_may(7, 12, 0), score=48, subreddit="sourdoughdiaries",
        title="Third loaf this week and the crumb is finally open, what changed?",
        body="Longer bulk ferment in a warmer spot, I think.",
        domain="self.sourdoughdiaries", is_self=True, post_hint="self",
        case="another subreddit", expect="",
        comments=(_Comment("ems0a01", "rye_and_shine", "Warmer bulk is usually the answer, nice ear on that loaf.", 4,
                           30, ""),),
    ),
    _Post(
        id="bkt1w9", author="pinecone_pixels", created=_may(16, 10, 10), score=9,
        title="Heron on a fence post, handheld at 400mm, is the background too busy?", body="",
        link="https://i.redd.it/b8d2f6j0k9w21.jpg", domain="i.redd.it",
        picture=_Picture(113, (640, 480), "https://i.redd.it/b8d2f6j0k9w21.jpg",
                         "https://preview.redd.it/b8d2f6j0k9w21.jpg?auto=webp&s=4c6e8a0b2d4f6a8c0e2d"),
        case="r/photocritique post in the window but not in the id list", expect="",
        comments=(
            _Comment("en5m101", "north_of_f8", "Background is fine, but the beak is soft; the shutter speed was "
                     "probably too slow.", 3, 14, ""),
            _Comment("en5m105", "quietshutter", "Great timing with the wings, café-worthy print!", 1, 33, ""),
        ),
    ),
    _Post(
        id="bkzp4m", author="dustyprimes", created=_may(18, 21, 5), score=212, subreddit="coastalframes",
        title="Sea stack at blue hour, 90 second exposure with a 10 stop ND", body="",
        link="https://i.redd.it/8c3v5n2m7q031.jpg", domain="i.redd.it",
        picture=_Picture(115, (800, 533), "https://i.redd.it/8c3v5n2m7q031.jpg",
                         "https://preview.redd.it/8c3v5n2m7q031.jpg?auto=webp&s=2d4f6b8a0c1e3f5a"),
        case="parent of the crosspost bl0a3h", expect="",
        comments=(_Comment("enb2r01", "tidepool_lens", "Those smooth waves around the stack are hypnotic.", 40, 25,
                           ""),),
    ),
    _Post(
        id="18h0ab", author="chip_and_chisel", created=_feb_2013(11, 9, 0), score=12, subreddit="woodcarvingtips",
        title="Basswood or butternut for a first spoon?", body="Never carved before, have a sloyd knife.",
        domain="self.woodcarvingtips", is_self=True, post_hint=None, old_schema=True,
        case="another subreddit, 2013", expect="",
        comments=(_Comment("c8s0a01", "whittle_wendy", "Basswood, it forgives mistakes.", 6, 50, ""),),
    ),
)
# fmt: on

# Hand-written expectations for the broken dump (see _broken_dump_lines).
_BROKEN_READABLE_IDS = ("c9k2a1", "c9k5b3", "c9k7c0")
_BROKEN_LOST_IDS = ("c9m0d7", "c9m3e2", "c9m6f5")
_BROKEN_PROBLEMS = {"malformed_json": 1, "missing_field": 1, "truncated_file": 1}

# Hand-written: image URLs of posts that no mirror serves (bld7w5, bll8b4) and the placeholder (bl3e7j).
_UNREACHABLE_URLS = ("https://i.redd.it/g0n3k2v9x1c31.jpg", "https://i.redd.it/w3xq8n1f5b331.jpg")
_PLACEHOLDER_URLS = ("https://i.imgur.com/Pl4c3Hd.jpg",)

# Where the candidate list puts the id that exists nowhere, the malformed line and the blank line.
_NOT_FOUND_AFTER = "bl8k5m"
_MALFORMED_AFTER = "bkn4v6"
_BLANK_AFTER = "bl3e7j"


# --------------------------------------------------------------------------
# raw Reddit JSON, in the archived (HTML-escaped) form
# --------------------------------------------------------------------------


def _esc(text: str) -> str:
    """Escape like Reddit's JSON and the archives: &, < and > only."""
    return html.escape(text, quote=False)


def _slug(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", title.lower()).strip("_")[:50].rstrip("_")


def _permalink(post: _Post) -> str:
    return f"/r/{post.subreddit}/comments/{post.id}/{_slug(post.title)}/"


def _url(post: _Post) -> str:
    return post.link or f"https://www.reddit.com{_permalink(post)}"


def _preview(picture: _Picture, preview_url: str) -> dict[str, Any]:
    width, height = _preview_size(picture)
    image_id = preview_url.split("/")[-1].split(".")[0]
    return {
        "enabled": True,
        "images": [
            {
                "id": image_id,
                "resolutions": [],
                "source": {"height": height, "url": _esc(preview_url), "width": width},
                "variants": {},
            }
        ],
    }


def _media_metadata(post: _Post) -> dict[str, Any]:
    items = {item.media_id: item for item in post.gallery}
    metadata: dict[str, Any] = {}
    for media_id in post.metadata_order:
        item = items[media_id]
        if item.picture is None or item.picture.full_url is None:
            metadata[media_id] = {"id": media_id, "status": item.status}
            continue
        width, height = item.picture.size
        metadata[media_id] = {
            "e": "Image",
            "id": media_id,
            "m": "image/jpg",
            "p": [],
            "s": {"u": _esc(item.picture.full_url), "x": width, "y": height},
            "status": item.status,
        }
    return metadata


def _submission(post: _Post, retrieved_on: int, overrides: Mapping[str, Any], parents: Mapping[str, dict]) -> dict:
    """The dump/API form of a 2019 submission: fields in a fixed order, text and URLs escaped."""
    data: dict[str, Any] = {
        "author": overrides.get("author", post.author),
        "created_utc": post.created,
        "distinguished": None,
        "domain": post.domain,
        "id": post.id,
        "is_self": post.is_self,
        "link_flair_text": post.flair,
        "name": f"t3_{post.id}",
        "num_comments": len(post.comments),
        "over_18": False,
        "permalink": _permalink(post),
    }
    if post.post_hint is not None:
        data["post_hint"] = post.post_hint
    if post.picture is not None and post.picture.preview_url is not None:
        data["preview"] = _preview(post.picture, post.picture.preview_url)
    if post.gallery:
        data["is_gallery"] = True
        data["gallery_data"] = {
            "items": [{"id": 41_000 + k, "media_id": item.media_id} for k, item in enumerate(post.gallery)]
        }
        data["media_metadata"] = _media_metadata(post)
    if post.crosspost_of is not None:
        data["crosspost_parent"] = f"t3_{post.crosspost_of}"
        data["crosspost_parent_list"] = [parents[post.crosspost_of]]
    data.update(
        {
            "removed_by_category": overrides.get("removed_by_category", post.removed_by_category),
            "retrieved_on": retrieved_on,
            "score": overrides.get("score", post.score),
            "selftext": _esc(overrides.get("selftext", post.body)),
            "stickied": False,
            "subreddit": post.subreddit,
            "subreddit_id": _SUBREDDIT_IDS[post.subreddit],
            "title": _esc(post.title),
            "url": _esc(_url(post)),
        }
    )
    return data


def _old_submission(post: _Post, retrieved_on: int) -> dict:
    """The 2013 dump form: created_utc a numeric string, no name/stickied/removed_by_category/gallery fields."""
    return {
        "author": post.author,
        "created_utc": str(post.created),
        "distinguished": None,
        "domain": post.domain,
        "edited": False,
        "id": post.id,
        "is_self": post.is_self,
        "num_comments": len(post.comments),
        "over_18": False,
        "permalink": _permalink(post),
        "retrieved_on": retrieved_on,
        "score": post.score,
        "selftext": _esc(post.body),
        "subreddit": post.subreddit,
        "subreddit_id": _SUBREDDIT_IDS[post.subreddit],
        "title": _esc(post.title),
        "url": _esc(_url(post)),
    }


def _comment_created(post: _Post, comment: _Comment) -> int:
    return post.created + comment.minute * 60


def _comment(post: _Post, comment: _Comment, retrieved_on: int, overrides: Mapping[str, Any]) -> dict:
    author = overrides.get("author", comment.author)
    parent = f"t1_{comment.parent}" if comment.parent else f"t3_{post.id}"
    if post.old_schema:
        return {
            "author": author,
            "author_flair_css_class": None,
            "author_flair_text": None,
            "body": _esc(overrides.get("body", comment.body)),
            "controversiality": 0,
            "created_utc": str(_comment_created(post, comment)),
            "distinguished": comment.distinguished,
            "edited": False,
            "gilded": 0,
            "id": comment.id,
            "link_id": f"t3_{post.id}",
            "parent_id": parent,
            "retrieved_on": retrieved_on,
            "score": overrides.get("score", comment.score),
            "subreddit": post.subreddit,
            "subreddit_id": _SUBREDDIT_IDS[post.subreddit],
            "ups": overrides.get("score", comment.score),
        }
    return {
        "author": author,
        "author_flair_text": None,
        "body": _esc(overrides.get("body", comment.body)),
        "created_utc": _comment_created(post, comment),
        "distinguished": comment.distinguished,
        "edited": False,
        "id": comment.id,
        "is_submitter": author == post.author and author != "[deleted]",
        "link_id": f"t3_{post.id}",
        "name": f"t1_{comment.id}",
        "parent_id": parent,
        "permalink": f"{_permalink(post)}{comment.id}/",
        "retrieved_on": retrieved_on,
        "score": overrides.get("score", comment.score),
        "stickied": comment.stickied,
        "subreddit": post.subreddit,
        "subreddit_id": _SUBREDDIT_IDS[post.subreddit],
    }


@dataclass(frozen=True)
class _Copies:
    """Every copy of every item, by the file that holds it (relative path -> JSON objects in line order)."""

    files: dict[str, list[dict]]
    latest_posts: list[dict]
    latest_comments: list[dict]


def _month_file(prefix: str, created: int) -> str:
    if created < _MAY_2019:
        return f"dumps/monthly/{prefix}_2013-02.zst"
    return f"dumps/monthly/{prefix}_2019-0{5 if created < _JUNE_2019 else 6}.zst"


def _copies() -> _Copies:
    files: dict[str, list[dict]] = {
        "dumps/monthly/RS_2013-02.zst": [],
        "dumps/monthly/RC_2013-02.zst": [],
        "dumps/monthly/RS_2019-05.zst": [],
        "dumps/monthly/RC_2019-05.zst": [],
        "dumps/monthly/RC_2019-06.zst": [],
        f"dumps/subreddit/{SUBREDDIT}_submissions.zst": [],
        f"dumps/subreddit/{SUBREDDIT}_comments.zst": [],
    }
    sub_posts, sub_comments = (
        files[f"dumps/subreddit/{SUBREDDIT}_submissions.zst"],
        files[f"dumps/subreddit/{SUBREDDIT}_comments.zst"],
    )
    all_posts = sorted(_POSTS + _OTHER_POSTS, key=lambda p: p.created)
    parents = {}
    for post in all_posts:
        if post.id in {p.crosspost_of for p in all_posts}:
            parent = _submission(post, post.created + _RETRIEVED_AFTER_S, {}, {})
            del parent["retrieved_on"]  # embedded API copies carry no archive fields
            parents[post.id] = parent
    latest_posts, latest_comments = [], []
    for post in all_posts:
        if post.old_schema:
            latest = _old_submission(post, _OLD_SCHEMA_RETRIEVED_ON)
        else:
            latest = _submission(post, post.created + _RETRIEVED_AFTER_S, {}, parents)
        latest_posts.append(latest)
        files[_month_file("RS", post.created)].append(latest)
        if post.rescan == OLDER_IN_SUBREDDIT_FILE:
            sub_posts.append(_submission(post, post.created + _OLDER_RETRIEVED_AFTER_S, post.older, parents))
        elif post.rescan == SAME_IN_SUBREDDIT_FILE:
            sub_posts.append(latest)
        for comment in post.comments:
            created = _comment_created(post, comment)
            if post.old_schema:
                newest = _comment(post, comment, _OLD_SCHEMA_RETRIEVED_ON, {})
            elif comment.rescan == NEWER_IN_SUBREDDIT_FILE:
                newest = _comment(post, comment, created + _NEWER_RETRIEVED_AFTER_S, {})
            else:
                newest = _comment(post, comment, created + _RETRIEVED_AFTER_S, {})
            latest_comments.append(newest)
            monthly = files[_month_file("RC", created)]
            if comment.rescan == ONLY_IN_SUBREDDIT_FILE:
                sub_comments.append(newest)
            elif comment.rescan == NEWER_IN_SUBREDDIT_FILE:
                monthly.append(_comment(post, comment, created + _OLDER_RETRIEVED_AFTER_S, comment.older))
                sub_comments.append(newest)
            else:
                monthly.append(newest)
                if comment.rescan == OLDER_IN_SUBREDDIT_FILE:
                    sub_comments.append(_comment(post, comment, created + _OLDER_RETRIEVED_AFTER_S, comment.older))
                elif comment.rescan == SAME_IN_SUBREDDIT_FILE:
                    sub_comments.append(newest)
    return _Copies(files, latest_posts, latest_comments)


def _ndjson(objects: Iterable[dict]) -> bytes:
    return b"".join(
        json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n" for obj in objects
    )


def _compress(data: bytes) -> bytes:
    return zstandard.ZstdCompressor(level=ZSTD_LEVEL).compress(data)


def _broken_post(post_id: str, hour: int, title: str) -> dict:
    created = _JULY_2019 + 2 * 86_400 + hour * 3600
    return {
        "author": "quietshutter",
        "created_utc": created,
        "id": post_id,
        "name": f"t3_{post_id}",
        "num_comments": 0,
        "permalink": f"/r/{SUBREDDIT}/comments/{post_id}/{_slug(title)}/",
        "retrieved_on": created + _RETRIEVED_AFTER_S,
        "score": 1,
        "selftext": "",
        "subreddit": SUBREDDIT,
        "title": _esc(title),
        "url": f"https://i.redd.it/{post_id}brk0x31.jpg",
    }


def _broken_dump_lines() -> tuple[bytes, bytes]:
    """(the lines a reader can recover, the lines lost to the cut) of dumps/broken/RS_2019-07.zst.

    Recoverable: two valid posts, a line cut off mid-string (malformed_json), a post without id/name
    (missing_field), a third valid post. Lost: three posts in the block that the cut destroys. The two bad
    lines name the subreddit and have no readable id, so a reader has to parse them whether it looks for
    ids or for a subreddit window; all lines are r/photocritique posts of July 2019.
    """
    without_id = _broken_post("unknown", 3, "Mountain lake, polariser or not?")
    for key in ("id", "name", "permalink"):
        del without_id[key]
    readable = (
        _ndjson(
            [
                _broken_post(_BROKEN_READABLE_IDS[0], 1, "Poppy field at sunrise & a lone tree"),
                _broken_post(_BROKEN_READABLE_IDS[1], 2, "Night market lanterns, first time shooting at f/1.4"),
            ]
        )
        + b'{"author":"marisol_shoots","created_utc":1562140800,"subreddit":"photocritique","title":"Half a line\n'
        + _ndjson([without_id, _broken_post(_BROKEN_READABLE_IDS[2], 4, "Self portrait in a shop window reflection")])
    )
    lost = _ndjson(
        _broken_post(post_id, 5 + k, f"Lost frame number {k}, never to be read back")
        for k, post_id in enumerate(_BROKEN_LOST_IDS)
    )
    return readable, lost


def _broken_dump() -> bytes:
    """Readable lines in their own block, then the lost lines in a block that is cut in half."""
    readable, lost = _broken_dump_lines()
    compressor = zstandard.ZstdCompressor(level=ZSTD_LEVEL).compressobj()
    head = compressor.compress(readable) + compressor.flush(zstandard.COMPRESSOBJ_FLUSH_BLOCK)
    tail = compressor.compress(lost) + compressor.flush(zstandard.COMPRESSOBJ_FLUSH_FINISH)
    return head + tail[: len(tail) // 2]


# --------------------------------------------------------------------------
# images
# --------------------------------------------------------------------------


def _preview_size(picture: _Picture) -> tuple[int, int]:
    width, height = picture.size
    return round(width * PREVIEW_SCALE), round(height * PREVIEW_SCALE)


def _placeholder_png() -> bytes:
    """A 161x81 grey card with a crossed-out frame: the shape of an image host's 'removed' placeholder."""
    image = Image.new("RGB", PLACEHOLDER_SIZE, (232, 232, 232))
    draw = ImageDraw.Draw(image)
    draw.rectangle((58, 18, 102, 52), outline=(150, 150, 150), width=3)
    draw.line((58, 18, 102, 52), fill=(150, 150, 150), width=3)
    draw.line((58, 52, 102, 18), fill=(150, 150, 150), width=3)
    draw.rectangle((40, 62, 120, 66), fill=(190, 190, 190))
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def _pictures() -> list[_Picture]:
    pictures = []
    for post in _POSTS + _OTHER_POSTS:
        if post.picture is not None:
            pictures.append(post.picture)
        pictures.extend(item.picture for item in post.gallery if item.picture is not None)
    return pictures


def _render_images(seed: int) -> tuple[dict[str, bytes], dict[int, bytes]]:
    """URL -> bytes for every served copy, and picture seed -> full-size JPEG bytes."""
    images: dict[str, bytes] = {}
    photos: dict[int, Image.Image] = {}
    full_size: dict[int, bytes] = {}
    placeholder = _placeholder_png()
    for picture in _pictures():
        if picture.placeholder:
            images[IMGUR_REMOVED_URL] = placeholder
            if picture.full_url is not None:
                images[picture.full_url] = placeholder
            continue
        if picture.seed not in photos:
            photos[picture.seed] = synth.render_photo(seed * 1000 + picture.seed, picture.size)
            full_size[picture.seed] = synth.recompressed(photos[picture.seed], JPEG_QUALITY)
        if picture.full_url is not None:
            images[picture.full_url] = full_size[picture.seed]
        if picture.preview_url is not None:
            preview = photos[picture.seed].resize(_preview_size(picture), Image.Resampling.LANCZOS)
            images[picture.preview_url] = synth.recompressed(preview, JPEG_QUALITY)
    return dict(sorted(images.items())), full_size


def mirror_path(url: str) -> str:
    """Where the local mirror keeps a URL: images/<host>/<path>, the query string dropped.

    Every URL of the corpus has its own path, so dropping the query never makes two images collide.
    """
    parts = urlsplit(url)
    return f"images/{parts.netloc}{parts.path}"


# --------------------------------------------------------------------------
# the fixture
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class RedditFixture:
    posts: list[dict]  # the latest copy of every submission of the sound dumps (archived, escaped form)
    comments: list[dict]  # the latest copy of every comment, flat (link_id/parent_id)
    images: dict[str, bytes]  # image URL (unescaped) -> bytes served there (plus imgur's removed.png)
    candidate_ids: list[str]  # well-formed ids of the candidate list, in file order (incl. NOT_FOUND_ID)
    expected: dict  # the content of expected.json


def _candidate_ids() -> list[str]:
    ids = []
    for post in _POSTS:
        ids.append(post.id)
        if post.id == _NOT_FOUND_AFTER:
            ids.append(NOT_FOUND_ID)
    return ids


def _candidates_file(candidate_ids: list[str]) -> bytes:
    lines = []
    for post_id in candidate_ids:
        lines.append(post_id)
        if post_id == _MALFORMED_AFTER:
            lines.append(MALFORMED_ID_LINE)
        if post_id == _BLANK_AFTER:
            lines.append("")
    return "".join(f"{line}\r\n" for line in lines).encode("ascii")


def _expected(candidate_ids: list[str]) -> dict[str, Any]:
    kept = {p.id: list(p.references) for p in _POSTS if p.expect == KEPT}
    post_reasons = {p.id: p.expect for p in _POSTS if p.expect != KEPT}
    post_reasons[NOT_FOUND_ID] = "not_found"
    post_reasons[MALFORMED_ID_LINE] = MALFORMED_ID_REASON
    window_posts = [
        p.id for p in _POSTS + _OTHER_POSTS if p.subreddit == SUBREDDIT and _MAY_2019 <= p.created < _JUNE_2019
    ]
    return {
        "schema_version": SCHEMA_VERSION,
        "salt": SALT,
        "bot_accounts": list(BOT_ACCOUNTS),
        "subreddit": SUBREDDIT,
        "candidates_file": CANDIDATES_FILE,
        "candidate_ids": candidate_ids,
        "kept": kept,
        "post_reasons": post_reasons,
        "comment_reasons": {c.id: c.expect for p in _POSTS for c in p.comments},
        "image_of": {p.id: p.image_of for p in _POSTS if p.image_of is not None},
        "source_problems": dict(_BROKEN_PROBLEMS),
        "broken_dump": {
            "path": BROKEN_DUMP,
            "readable_ids": list(_BROKEN_READABLE_IDS),
            "lost_ids": list(_BROKEN_LOST_IDS),
            "problems": dict(_BROKEN_PROBLEMS),
            "window": {"subreddit": SUBREDDIT, "start_utc": _JULY_2019, "end_utc": _AUGUST_2019},
        },
        "rewrite": {f"https://{host}/": f"images/{host}/" for host in MIRROR_HOSTS},
        "local_images": {p.id: f"images_by_post/{p.id}.jpg" for p in _POSTS if p.local_copy},
        "unreachable_urls": list(_UNREACHABLE_URLS),
        "placeholder_urls": list(_PLACEHOLDER_URLS),
        "window": {
            "subreddit": SUBREDDIT,
            "start_utc": _MAY_2019,
            "end_utc": _JUNE_2019,
            "post_ids": sorted(window_posts),
        },
        "cases": {p.id: p.case for p in _POSTS} | {NOT_FOUND_ID: "candidate id that no source holds"},
    }


def build_fixture(seed: int = 0) -> RedditFixture:
    """The corpus in memory. `seed` changes only the pictures (the tests check their distinctness for seed 0)."""
    copies = _copies()
    images, _ = _render_images(seed)
    candidate_ids = _candidate_ids()
    return RedditFixture(
        posts=copies.latest_posts,
        comments=copies.latest_comments,
        images=images,
        candidate_ids=candidate_ids,
        expected=_expected(candidate_ids),
    )


def _prepare(out_dir: Path) -> None:
    """Clear a previous (even half-written) build; refuse a folder holding anything else."""
    foreign = sorted(p.name for p in out_dir.iterdir() if p.name not in _BUILD_ENTRIES) if out_dir.exists() else []
    if foreign:
        raise FileExistsError(f"{out_dir} holds files that are not part of a Reddit fixture build: {foreign[:5]}")
    for tree in ("ids", "dumps", "images", "images_by_post"):
        shutil.rmtree(out_dir / tree, ignore_errors=True)
    out_dir.mkdir(parents=True, exist_ok=True)


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def write_fixture(out_dir: Path, seed: int = 0) -> dict[str, Any]:
    """Write the corpus under `out_dir` (layout in the module docstring) and return counts of what was written."""
    out_dir = Path(out_dir)
    _prepare(out_dir)
    copies = _copies()
    images, full_size = _render_images(seed)
    candidate_ids = _candidate_ids()
    expected = _expected(candidate_ids)

    _write(out_dir / CANDIDATES_FILE, _candidates_file(candidate_ids))
    for relative, objects in copies.files.items():
        _write(out_dir / relative, _compress(_ndjson(objects)))
    _write(out_dir / BROKEN_DUMP, _broken_dump())
    for url, data in images.items():
        _write(out_dir / mirror_path(url), data)
    for post in _POSTS:
        if post.local_copy and post.picture is not None:
            _write(out_dir / expected["local_images"][post.id], full_size[post.picture.seed])
    (out_dir / "expected.json").write_text(json.dumps(expected, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return {
        "out_dir": str(out_dir),
        "candidates": len(candidate_ids),
        "kept": len(expected["kept"]),
        "excluded": len(expected["post_reasons"]),
        "posts": len(copies.latest_posts),
        "comments": len(copies.latest_comments),
        "dump_lines": {relative: len(objects) for relative, objects in copies.files.items()},
        "images": len(images),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Write aesforge's invented r/photocritique fixture corpus.")
    parser.add_argument("--out", type=Path, default=Path("data/reddit_sample"), help="output folder")
    parser.add_argument("--seed", type=int, default=0, help="picture seed (0 is the tested one)")
    args = parser.parse_args(argv)
    summary = write_fixture(args.out, args.seed)
    print(
        f"wrote {summary['candidates']} candidate ids, {summary['posts']} posts, {summary['comments']} comments "
        f"and {summary['images']} images to {args.out}"
    )


if __name__ == "__main__":
    main()
