"""Settings of the r/photocritique stages, filled from the config file (section ``photocritique``)."""

from __future__ import annotations

import os
from pathlib import Path
from datetime import datetime, timezone
from collections.abc import Callable
from typing import Literal, Optional

from dagster import Config, ConfigurableResource, Failure
from pydantic import Field

from assets.photocritique.logic.selection_rules import DEFAULT_BOT_BOILERPLATE, FilterParams
from assets.photocritique.logic.reddit_records import UsernameHasher
from resources.reddit_sources import SubredditWindow
from resources.config_paths import ConfigPath, LocalOrUrl, OutputPath


class LocalImagesConfig(Config):
    """A folder of already-downloaded post images (as many users of the Reddit Photo Critique Dataset have)."""

    path: ConfigPath
    pattern: str = Field(
        default="{post_id}*",
        description="Glob for a post's file; {post_id} and {position} are filled in (e.g. '{post_id}.jpg')",
    )
    fallback_to_network: bool = Field(
        default=False,
        description="false: the folder is authoritative, a post whose file is absent is image_not_local and nothing"
        " is downloaded for it (a url_rewrite local folder is still looked in); true: fetch it from the URL or mirror",
    )


class PhotocritiqueSettings(ConfigurableResource):
    """Which posts to rebuild, from which archives, and the benchmark's filter settings."""

    id_lists: list[ConfigPath] = Field(
        default=[], description="RPCD-style split files: bare base36 submission ids, one per line"
    )
    subreddit: Optional[str] = Field(default=None, description="Without id lists: the subreddit to take posts from")
    start_date: Optional[str] = Field(default=None, description="Window start (ISO date or datetime, UTC, inclusive)")
    end_date: Optional[str] = Field(default=None, description="Window end (ISO date or datetime, UTC, exclusive)")
    dumps: list[ConfigPath] = Field(
        default=[],
        description="zst dump files or folders holding RS_/RC_YYYY-MM.zst or <sub>_submissions/_comments.zst",
    )
    username_salt_env: str = Field(
        default="AESFORGE_REDDIT_SALT",
        description="Environment variable holding the salt for hashing usernames (preferred over username_salt)",
    )
    username_salt: Optional[str] = Field(
        default=None, description="Salt given in the config file instead (never stored in the warehouse)"
    )
    bot_accounts: list[str] = Field(default=["AutoModerator"], description="Accounts whose comments are notices")
    bot_boilerplate: list[str] = Field(
        default=list(DEFAULT_BOT_BOILERPLATE), description="Regexes (case-insensitive) marking bot notices"
    )
    min_post_words: int = Field(default=10, description="Title plus body must hold at least this many words")
    min_comment_words: int = Field(default=5, description="A critique must hold at least this many words")
    references_per_post: int = Field(default=3, description="Qualifying comments needed, and kept, per post")
    exclude_removed_posts: bool = Field(
        default=False, description="false (the paper): a deleted or removed post is judged by the three rules like any"
        " other; true: it is excluded first (post_deleted / post_removed)"
    )
    deleted_author_comments: Literal["exclude", "keep"] = Field(
        default="exclude", description="exclude: a comment whose author is [deleted]/[removed] does not qualify"
        " (author_deleted: it cannot be shown not to be the submitter's); keep: it may qualify"
    )
    null_score: Literal["zero", "last"] = Field(
        default="zero", description="zero: a comment with no score ranks as score 0 (below positive, above negative"
        " scores); last: below every scored comment"
    )
    gallery_items: int = Field(default=1, description="Gallery images per post offered to the pool, in gallery order")
    image_license: str = Field(
        default="reddit-user-content",
        description="License recorded on post images; add it to pool.filters.license_allowlist to admit them",
    )
    image_redistribution: str = Field(
        default="restricted", description="Redistribution status of post images (the benchmark ships ids, not images)"
    )
    local_images: Optional[LocalImagesConfig] = Field(default=None)
    url_rewrite: dict[str, LocalOrUrl] = Field(
        default={}, description="URL prefix -> mirror URL prefix or local folder, tried in order"
    )
    export_dir: OutputPath = Field(default="data/exports/photocritique", description="Where the Parquet and JSONL exports go")
    batch_size: int = Field(default=500, description="Items per warehouse transaction; a crash loses at most one batch")

    def enabled(self) -> bool:
        return bool(self.id_lists or self.subreddit)

    def window(self) -> SubredditWindow | None:
        if self.id_lists or not self.subreddit:
            return None
        if not (self.start_date and self.end_date):
            raise Failure(description="photocritique.subreddit needs start_date and end_date (ISO, UTC)")
        return SubredditWindow(self.subreddit, _epoch(self.start_date), _epoch(self.end_date))

    def hasher(self) -> UsernameHasher:
        salt = os.environ.get(self.username_salt_env) or self.username_salt
        if not salt:
            raise Failure(
                description=f"no username salt: set the environment variable {self.username_salt_env}"
                " (or photocritique.username_salt); usernames are only ever stored as salted hashes"
            )
        return UsernameHasher(salt)

    def filter_params(self) -> FilterParams:
        return FilterParams(
            min_post_words=self.min_post_words,
            min_comment_words=self.min_comment_words,
            references_per_post=self.references_per_post,
            bot_boilerplate=tuple(self.bot_boilerplate),
            exclude_removed_posts=self.exclude_removed_posts,
            deleted_author_comments=self.deleted_author_comments,
            null_score=self.null_score,
        )

    def recorded_parameters(self, name_of: Callable[[str], str]) -> dict:
        """The settings as provenance parameters, local files by ``name_of`` (relative to the project, so the
        parameters do not change when it moves); the salt is left out."""
        values = self.model_dump(exclude={"username_salt"})
        values.update(id_lists=[name_of(p) for p in self.id_lists], dumps=[name_of(p) for p in self.dumps],
                      export_dir=name_of(self.export_dir), url_rewrite=self.named_url_rewrite(name_of))
        if self.local_images is not None:
            values["local_images"] = {**values["local_images"], "path": name_of(self.local_images.path)}
        return values


    def named_url_rewrite(self, name_of: Callable[[str], str]) -> dict[str, str]:
        """``url_rewrite`` with its local folders (resolved to absolute paths by the loader) by ``name_of``; a
        mirror URL as it is."""
        return {prefix: named_locator(name_of, target) for prefix, target in self.url_rewrite.items()}


def named_locator(name_of: Callable[[str], str], locator: str) -> str:
    """A local file or folder (absolute, as the loader resolves them) by ``name_of``; a URL as it is."""
    return name_of(locator) if Path(locator).is_absolute() else locator


def _epoch(value: str) -> int:
    moment = datetime.fromisoformat(value)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return int(moment.timestamp())


CONFIG_SECTIONS = {"photocritique": ("photocritique", PhotocritiqueSettings)}
"""Config section -> (Dagster resource key, the class whose fields are the section's keys)."""
