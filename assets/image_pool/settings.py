"""Settings of the image-pool stages, filled from the user's config file (section ``pool``)."""

from __future__ import annotations

from typing import Any, Optional

from dagster import Config, ConfigurableResource
from pydantic import Field

from assets.image_pool.logic.clarity import ClarityRules
from assets.image_pool.logic.images import FilterRules
from assets.image_pool.logic.sources import FolderDefaults
from resources.config_paths import ConfigPath


class FolderSourceConfig(Config):
    """A local folder of images; its provenance comes from here, as the files carry none."""

    path: ConfigPath
    provider: str = Field(default="local folder", description="Who supplied the images")
    license: Optional[str] = Field(default=None, description="License of every image in the folder")
    creator: str = Field(default="unknown", description="Creator, or 'unknown' (never inferred)")
    redistribution: str = Field(default="unknown", description="allowed | restricted | unknown")
    domain: Optional[str] = Field(
        default=None, description="photography | painting | virtual; subfolders named after a domain override it"
    )
    source_url_prefix: Optional[str] = Field(default=None, description="Public URL the folder mirrors, if any")

    def defaults(self) -> FolderDefaults:
        return FolderDefaults(
            provider=self.provider,
            license=self.license,
            creator=self.creator,
            redistribution=self.redistribution,
            domain=self.domain,
            source_url_prefix=self.source_url_prefix,
        )


class ClarityConfig(Config):
    """The low-quality rules (assets/image_pool/logic/clarity.py); null switches one off."""

    min_sharpness: Optional[float] = Field(
        default=ClarityRules.min_sharpness, description="Sharpness (block Laplacian RMS over the luminance spread) below this: blurred")
    max_noise_sigma: Optional[float] = Field(
        default=ClarityRules.max_noise_sigma, description="Luminance noise sigma (0-255) above this: noisy")
    max_highlights_clipped: Optional[float] = Field(
        default=ClarityRules.max_highlights_clipped, description="Share of pixels clipped to white above this: overexposed")
    max_shadows_crushed: Optional[float] = Field(
        default=ClarityRules.max_shadows_crushed, description="Share of pixels crushed to black above this: underexposed")

    domains: list[str] = Field(
        default=list(ClarityRules.domains),
        description="Pool domains these rules judge (photography | painting | virtual): blur, noise and exposure are"
                    " camera defects, and a flat illustration or a design on white would read as blurred and overexposed")

    def rules(self) -> ClarityRules:
        return ClarityRules(self.min_sharpness, self.max_noise_sigma, self.max_highlights_clipped,
                            self.max_shadows_crushed, tuple(self.domains))


class FilterConfig(Config):
    min_side: int = Field(default=128, description="Shorter side below this many pixels: too_small")
    max_side: int = Field(default=16384, description="Longer side above this many pixels: too_large_dimensions")
    max_pixels: int = Field(default=100_000_000, description="Refuse to decode above this many pixels (bomb guard)")
    max_aspect_ratio: float = Field(default=6.0, description="Long side / short side above this: extreme_aspect_ratio")
    blank_max_std: float = Field(default=2.0, description="Largest channel std below this (0-255 scale): blank")
    placeholder_sizes: list[list[int]] = Field(
        default=[[161, 81]],
        description="Exact sizes of hosts' 'image removed' placeholders (imgur serves 161x81): removed_image_placeholder",
    )
    license_allowlist: list[str] = Field(
        default=["CC0-1.0", "PDM-1.0", "CC-BY-4.0", "CC-BY-SA-4.0"],
        description="Licenses admitted to the pool, most permissive first (the order breaks representative ties)",
    )
    clarity: ClarityConfig = Field(default_factory=ClarityConfig, description="Low-quality rules: blurred, noisy, badly exposed")

    def rules(self) -> FilterRules:
        return FilterRules(
            min_side=self.min_side,
            max_side=self.max_side,
            max_aspect_ratio=self.max_aspect_ratio,
            blank_max_std=self.blank_max_std,
            license_allowlist=tuple(self.license_allowlist),
            placeholder_sizes=tuple(tuple(size) for size in self.placeholder_sizes),
        )


class DedupConfig(Config):
    clip_threshold: float = Field(default=0.95, description="Cosine similarity at or above which CLIP calls two images near-duplicates")
    perceptual: dict[str, Any] = Field(
        default={}, description="Overrides of assets.image_pool.logic.perceptual.PerceptualParams (radii, verification thresholds)"
    )


class PoolSettings(ConfigurableResource):
    """What goes into the shared image pool and how it is filtered and de-duplicated."""

    manifests: list[ConfigPath] = Field(default=[], description="CSV or JSONL manifests: locator (URL or path) + provenance")
    folders: list[FolderSourceConfig] = Field(default=[], description="Local folders of images")
    filters: FilterConfig = Field(default_factory=FilterConfig)
    dedup: DedupConfig = Field(default_factory=DedupConfig)
    batch_size: int = Field(default=256, description="Items per warehouse transaction; a crash loses at most one batch")


CONFIG_SECTIONS = {"pool": ("pool", PoolSettings)}
"""Config section -> (Dagster resource key, the class whose fields are the section's keys)."""
