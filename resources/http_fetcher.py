"""Dagster resource that configures the image fetcher; the fetching logic lives in resources.fetching."""

from __future__ import annotations

from pathlib import Path

from dagster import ConfigurableResource
from pydantic import Field

from resources import fetching
from resources.fetching import HttpFetcher

DEFAULT_MAX_ATTEMPT_RUNS = 3


class HttpFetcherResource(ConfigurableResource):
    """Politeness and size limits for downloading source images."""

    user_agent: str = Field(
        default=fetching.DEFAULT_USER_AGENT,
        description="User-Agent sent with every request, so hosts can see who is fetching and how to reach us.",
    )
    timeout_s: float = Field(
        default=fetching.DEFAULT_TIMEOUT_S,
        description="Connect timeout and per-read timeout, in seconds; also the most time all attempts at one URL"
        " together may wait on the server in a run (a retry gets what is left), so a stalled server costs one"
        " timeout_s per run plus the backoff sleeps.",
    )
    max_retries: int = Field(
        default=fetching.DEFAULT_MAX_RETRIES,
        description="Retries within a run after the first attempt, for timeouts, connection errors, short bodies,"
        " 429 and 5xx, while the URL's timeout_s budget lasts.",
    )
    max_attempt_runs: int = Field(
        default=DEFAULT_MAX_ATTEMPT_RUNS,
        ge=1,
        description="Runs in which a locator may fail transiently before it is rejected as gave_up (with each"
        " run's reason); `aesforge retry --reason gave_up` makes such records pending again.",
    )
    backoff_s: float = Field(
        default=fetching.DEFAULT_BACKOFF_S,
        description="Base of the exponential backoff between retries, in seconds (jitter is added).",
    )
    max_backoff_s: float = Field(
        default=fetching.DEFAULT_MAX_BACKOFF_S,
        description="Upper bound on any wait between retries, including a server's Retry-After.",
    )
    max_bytes: int = Field(
        default=fetching.DEFAULT_MAX_BYTES,
        description="Largest accepted image in bytes; bigger downloads are stopped at this size.",
    )
    per_host_limit: int = Field(
        default=fetching.DEFAULT_PER_HOST_LIMIT,
        description="Most requests in flight to any one host.",
    )
    max_workers: int = Field(
        default=fetching.DEFAULT_MAX_WORKERS,
        description="Most fetches in flight overall.",
    )

    removed_image_urls: list[str] = Field(
        default=list(fetching.DEFAULT_REMOVED_IMAGE_URLS),
        description="Regexes searched in the final URL after redirects that mark a host's 'image removed' placeholder.",
    )

    def get_fetcher(self, base_dir: Path | None = None) -> HttpFetcher:
        """A fetcher with these limits; relative local paths resolve against ``base_dir``."""
        return HttpFetcher(
            user_agent=self.user_agent,
            timeout_s=self.timeout_s,
            max_retries=self.max_retries,
            backoff_s=self.backoff_s,
            max_backoff_s=self.max_backoff_s,
            max_bytes=self.max_bytes,
            per_host_limit=self.per_host_limit,
            max_workers=self.max_workers,
            base_dir=base_dir,
            removed_image_urls=self.removed_image_urls,
        )
