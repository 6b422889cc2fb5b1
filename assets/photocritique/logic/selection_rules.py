"""The photocritique benchmark's selection rules: which posts are kept and which comments become references.

One pure call per post decides everything, and every post and every comment gets exactly one decision with a
stable reason code, so the selection flow can be counted step by step and nothing disappears unexplained.
Rules are checked in a fixed order; the first that fires is the recorded reason.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

from assets.photocritique.logic.reddit_records import Comment, Post

# Post reasons, in the order they are checked.
POST_DELETED = "post_deleted"
POST_REMOVED = "post_removed"
NO_IMAGE = "no_image"
IMAGE_UNSUPPORTED = "image_unsupported"
IMAGE_NOT_LOCAL = "image_not_local"
IMAGE_UNAVAILABLE = "image_unavailable"
POST_TOO_FEW_WORDS = "too_few_words"
TOO_FEW_QUALIFYING_COMMENTS = "too_few_qualifying_comments"
POST_REASONS = (POST_DELETED, POST_REMOVED, NO_IMAGE, IMAGE_UNSUPPORTED, IMAGE_NOT_LOCAL, IMAGE_UNAVAILABLE,
                POST_TOO_FEW_WORDS, TOO_FEW_QUALIFYING_COMMENTS)
IMAGE_REASONS = frozenset({NO_IMAGE, IMAGE_UNSUPPORTED, IMAGE_NOT_LOCAL, IMAGE_UNAVAILABLE})

# Comment reasons, in the order they are checked (the last two apply to qualifying comments).
COMMENT_DELETED = "comment_deleted"
COMMENT_REMOVED = "comment_removed"
NOT_TOP_LEVEL = "not_top_level"
MODERATOR_NOTICE = "moderator_notice"
AUTHOR_DELETED = "author_deleted"
BY_SUBMITTER = "by_submitter"
COMMENT_TOO_FEW_WORDS = "too_few_words"
DUPLICATE_COMMENT = "duplicate_comment"
NOT_IN_TOP_3 = "not_in_top_3"
POST_EXCLUDED = "post_excluded"
COMMENT_REASONS = (COMMENT_DELETED, COMMENT_REMOVED, NOT_TOP_LEVEL, MODERATOR_NOTICE, AUTHOR_DELETED, BY_SUBMITTER,
                   COMMENT_TOO_FEW_WORDS, DUPLICATE_COMMENT, NOT_IN_TOP_3, POST_EXCLUDED)

KEPT = "kept"
EXCLUDED = "excluded"
REFERENCE = "reference"

MODERATOR_ROLES = frozenset({"moderator", "admin"})
PLACEHOLDER_BODIES = frozenset({"[deleted]", "[removed]"})
# Values of the two judgement calls the paper does not make (README: the photocritique rule table).
DELETED_AUTHOR_EXCLUDE, DELETED_AUTHOR_KEEP = "exclude", "keep"
NULL_SCORE_ZERO, NULL_SCORE_LAST = "zero", "last"
DEFAULT_BOT_BOILERPLATE = (
    r"\bI(?: am|'m|’m) a bot\b",
    r"\bthis action was performed automatically\b",
)

_URL = re.compile(r"https?://\S+")
_MARKDOWN_LINK = re.compile(r"\[([^\]]*)\]\([^)\s]*\)")
_WORD = re.compile(r"[^\W_]+(?:['’\-][^\W_]+)*")


@dataclass(frozen=True)
class FilterParams:
    """The rule settings. The defaults are the paper's reading (section 3): a post is judged by its three rules
    only, whether or not it was removed (``exclude_removed_posts`` restores an exclusion the paper does not make);
    a comment with no known author cannot be shown not to be the submitter's (``deleted_author_comments`` "keep"
    lets it qualify); a comment with no score ranks as score 0 (``null_score`` "last" ranks it below every scored
    comment)."""

    min_post_words: int = 10
    min_comment_words: int = 5
    references_per_post: int = 3
    bot_boilerplate: tuple[str, ...] = DEFAULT_BOT_BOILERPLATE  # regexes, matched case-insensitively
    exclude_removed_posts: bool = False
    deleted_author_comments: str = DELETED_AUTHOR_EXCLUDE  # exclude | keep
    null_score: str = NULL_SCORE_ZERO  # zero | last

    def __post_init__(self) -> None:
        if self.deleted_author_comments not in (DELETED_AUTHOR_EXCLUDE, DELETED_AUTHOR_KEEP):
            raise ValueError(f"deleted_author_comments must be exclude or keep, not {self.deleted_author_comments!r}")
        if self.null_score not in (NULL_SCORE_ZERO, NULL_SCORE_LAST):
            raise ValueError(f"null_score must be zero or last, not {self.null_score!r}")


@dataclass(frozen=True)
class PostDecision:
    post_id: str
    status: str  # kept | excluded
    reason_code: str | None  # None when kept
    detail: str
    n_words: int  # words in title and body (``post_words``)
    n_comments: int  # comments considered
    n_qualifying: int


@dataclass(frozen=True)
class CommentDecision:
    comment_id: str
    post_id: str
    status: str  # reference | excluded
    reason_code: str | None  # None for references
    detail: str
    rank: int | None  # 1..references_per_post for references
    n_words: int


def count_words(text: str) -> int:
    """Words as a reader counts them: URLs dropped, link text kept, "don't" and "well-lit" one word each."""
    # Links first: removing a bare URL first would swallow the ")" that closes a markdown link.
    text = _MARKDOWN_LINK.sub(r" \1 ", text)
    text = _URL.sub(" ", text)
    return sum(1 for _ in _WORD.finditer(text))


def normalize_for_duplicates(text: str) -> str:
    """Comparison form for exact-duplicate detection: entity, case and whitespace differences do not count."""
    return " ".join(html.unescape(text).casefold().split())


def rank_key(comment: Comment, null_score: str = NULL_SCORE_ZERO) -> tuple[bool, int, int, int]:
    """Reference order: score descending, then earlier comment, then smaller id. An unknown score is 0 (an archive
    that scanned the comment before anyone voted saw no votes), or, with ``null_score`` "last", below every score."""
    unknown_last = comment.score is None and null_score == NULL_SCORE_LAST
    return (unknown_last, -(comment.score or 0), comment.created_utc, int(comment.comment_id, 36))


def _age_key(comment: Comment) -> tuple[int, int]:
    return (comment.created_utc, int(comment.comment_id, 36))


@lru_cache(maxsize=16)
def _boilerplate(patterns: tuple[str, ...]) -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(pattern, re.IGNORECASE) for pattern in patterns)


def _moderator_notice(comment: Comment, params: FilterParams) -> str | None:
    if comment.distinguished in MODERATOR_ROLES:
        return f"distinguished as {comment.distinguished}"
    if comment.stickied:
        return "stickied"
    if comment.author_is_bot:
        return "written by a bot account"
    for pattern in _boilerplate(params.bot_boilerplate):
        if pattern.search(comment.body):
            return f"bot boilerplate matching {pattern.pattern!r}"
    return None


def _early_exclusion(comment: Comment, post: Post, n_words: int, params: FilterParams) -> tuple[str, str] | None:
    """Rules 1-5, which look at one comment alone; (reason, detail) for the first that fires."""
    if comment.removed_state == "deleted":
        return COMMENT_DELETED, "comment body is [deleted]"
    if comment.removed_state == "removed":
        return COMMENT_REMOVED, "comment body is [removed]"
    if not comment.parent_id.startswith("t3_"):
        return NOT_TOP_LEVEL, f"reply to {comment.parent_id}"
    notice = _moderator_notice(comment, params)
    if notice:
        return MODERATOR_NOTICE, notice
    if comment.author_hash is None and params.deleted_author_comments == DELETED_AUTHOR_EXCLUDE:
        return AUTHOR_DELETED, "author is [deleted], [removed] or missing: cannot be shown not to be the submitter"
    if comment.author_hash is not None and comment.author_hash == post.author_hash:
        return BY_SUBMITTER, "written by the submitter"
    if n_words < params.min_comment_words:
        return COMMENT_TOO_FEW_WORDS, f"{n_words} words, fewer than {params.min_comment_words}"
    return None


def post_words(post: Post) -> int:
    """Words of title and body; a ``[deleted]``/``[removed]`` placeholder body is no text of the submitter's."""
    body = "" if post.body.strip() in PLACEHOLDER_BODIES else post.body
    return count_words(post.title + "\n" + body)


def _post_exclusion(post: Post, image_problem: tuple[str, str] | None, n_words: int, n_qualifying: int,
                    params: FilterParams) -> tuple[str, str] | None:
    if params.exclude_removed_posts and post.removed_state == "deleted":
        return POST_DELETED, "post was deleted by its author"
    if params.exclude_removed_posts and post.removed_state == "removed":
        return POST_REMOVED, "post was removed"
    if image_problem is not None:
        return image_problem
    if n_words < params.min_post_words:
        return POST_TOO_FEW_WORDS, f"title and body hold {n_words} words, fewer than {params.min_post_words}"
    if n_qualifying < params.references_per_post:
        return TOO_FEW_QUALIFYING_COMMENTS, f"{n_qualifying} qualifying comments, fewer than {params.references_per_post}"
    return None


def select_references(
    post: Post,
    comments: Iterable[Comment],
    image_problem: tuple[str, str] | None,
    params: FilterParams = FilterParams(),
) -> tuple[PostDecision, list[CommentDecision]]:
    """Decide one post and all of its comments; the result does not depend on the order comments arrive in.

    ``image_problem`` is None when the post's image is in the pool, else (no_image | image_unsupported |
    image_not_local | image_unavailable, detail). Comment decisions come back oldest first.
    """
    if image_problem is not None and image_problem[0] not in IMAGE_REASONS:
        raise ValueError(f"unknown image problem {image_problem[0]!r}")
    ordered = sorted(comments, key=_age_key)
    decisions: dict[str, CommentDecision] = {}
    n_words_of: dict[str, int] = {}
    seen_bodies: dict[str, str] = {}
    qualifying: list[Comment] = []
    for comment in ordered:
        if comment.post_id != post.post_id:
            raise ValueError(f"comment {comment.comment_id} belongs to post {comment.post_id}, not {post.post_id}")
        if comment.comment_id in n_words_of:
            raise ValueError(f"comment {comment.comment_id} was passed twice; merge observations first")
        n_words = n_words_of[comment.comment_id] = count_words(comment.body)
        exclusion = _early_exclusion(comment, post, n_words, params)
        if exclusion is None:
            # Oldest first, so the first copy of a body is the one that stays.
            body_key = normalize_for_duplicates(comment.body)
            if body_key in seen_bodies:
                exclusion = DUPLICATE_COMMENT, f"same text as earlier comment {seen_bodies[body_key]}"
            else:
                seen_bodies[body_key] = comment.comment_id
                qualifying.append(comment)
        if exclusion is not None:
            decisions[comment.comment_id] = CommentDecision(
                comment.comment_id, post.post_id, EXCLUDED, exclusion[0], exclusion[1], None, n_words
            )

    n_post_words = post_words(post)
    post_exclusion = _post_exclusion(post, image_problem, n_post_words, len(qualifying), params)
    ranked = sorted(qualifying, key=lambda comment: rank_key(comment, params.null_score))
    for rank, comment in enumerate(ranked, start=1):
        n_words = n_words_of[comment.comment_id]
        if post_exclusion is not None:
            decision = CommentDecision(comment.comment_id, post.post_id, EXCLUDED, POST_EXCLUDED,
                                       f"post excluded: {post_exclusion[0]}", None, n_words)
        elif rank <= params.references_per_post:
            decision = CommentDecision(comment.comment_id, post.post_id, REFERENCE, None, f"reference {rank}", rank, n_words)
        else:
            decision = CommentDecision(comment.comment_id, post.post_id, EXCLUDED, NOT_IN_TOP_3,
                                       f"ranked {rank} of {len(qualifying)} qualifying comments", None, n_words)
        decisions[comment.comment_id] = decision

    post_decision = PostDecision(
        post_id=post.post_id,
        status=KEPT if post_exclusion is None else EXCLUDED,
        reason_code=None if post_exclusion is None else post_exclusion[0],
        detail="kept" if post_exclusion is None else post_exclusion[1],
        n_words=n_post_words,
        n_comments=len(ordered),
        n_qualifying=len(qualifying),
    )
    return post_decision, [decisions[comment.comment_id] for comment in ordered]
