"""Settings of the image-pool stages, filled from the user's config file (section ``pool``)."""

from __future__ import annotations

import os
from typing import Any, Literal, Optional

from dagster import Config, ConfigurableResource
from pydantic import Field, field_validator, model_validator

from assets.image_pool.logic.clarity import ClarityRules
from assets.image_pool.logic.images import FilterRules
from assets.image_pool.logic.model_filters import ScoreBand
from assets.image_pool.logic.sources import DOMAINS, FolderDefaults
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


def _pool_domains(cls: type, values: list[str]) -> list[str]:
    """The ``domains`` validator of the sections that judge some domains only: a misspelt domain would judge none."""
    unknown = [v for v in values if v not in DOMAINS]
    if unknown:
        raise ValueError(f"{unknown[0]!r} is not a pool domain; use one of {', '.join(DOMAINS)}")
    return values


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

    _known_domains = field_validator("domains")(_pool_domains)

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


class ModelFilterConfig(Config):
    """A model-based pool filter: a score head over each image's CLIP embedding, from local weights, and the band of
    scores a record may have (resources/score_heads.py; README "Model filters")."""

    name: str = Field(pattern=r"^[a-z][a-z0-9_]*$", description="What the head scores (aesthetic, safety, ...); names the filter's stage and rows")
    weights: ConfigPath = Field(description="Local weights file of the head (never downloaded)")
    format: Literal["exported_program", "torchscript", "linear_chain"] = Field(
        default="exported_program",
        description="exported_program: torch.export.save with a dynamic batch dimension; torchscript: torch.jit.save;"
                    " linear_chain: a state dict of affine layers with nothing between them (LAION's aesthetic predictors)")
    reject_below: Optional[float] = Field(default=None, description="Scores below this are rejected (an aesthetic score)")
    reject_above: Optional[float] = Field(default=None, description="Scores above this are rejected (an unsafe-content probability)")
    reason: str = Field(pattern=r"^[a-z][a-z0-9_]*$", description="Reason code of a rejection (low_aesthetic_score, unsafe_content, ...)")
    domains: list[str] = Field(default=list(DOMAINS), description="Pool domains the filter judges")
    unscored: Literal["keep", "reject"] = Field(
        default="keep", description="A record whose image has no embedding to score: keep it, or reject it as not_scored (fail closed)")
    required: bool = Field(
        default=False, description="Fail the step when the filter cannot run (no CLIP weights); otherwise it is reported as not run")

    _known_domains = field_validator("domains")(_pool_domains)

    @model_validator(mode="after")
    def _has_a_bound(self) -> "ModelFilterConfig":
        if self.reject_below is None and self.reject_above is None:
            raise ValueError(f"model filter {self.name!r} sets neither reject_below nor reject_above, so it would reject nothing")
        return self

    def band(self) -> ScoreBand:
        return ScoreBand(self.name, self.reason, self.reject_below, self.reject_above, self.unscored == "reject")


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
    model_filters: list[ModelFilterConfig] = Field(
        default=[], description="Model-based filters over the CLIP embeddings (aesthetic score, content safety); none by default")
    batch_size: int = Field(default=256, description="Items per warehouse transaction; a crash loses at most one batch")
    worker_processes: Optional[int] = Field(
        default=None, ge=1, description="Worker processes that decode images and verify duplicate pairs; null: one per core")

    @field_validator("model_filters")
    @classmethod
    def _unique_filter_names(cls, filters: list[ModelFilterConfig]) -> list[ModelFilterConfig]:
        names = [f.name for f in filters]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise ValueError(f"two model filters are named {repeated[0]!r}; each needs its own name")
        return filters

    def worker_process_count(self) -> int:
        """How many worker processes a pool stage starts: ``worker_processes``, or one per core (null)."""
        return self.worker_processes or os.cpu_count() or 2


CONFIG_SECTIONS = {"pool": ("pool", PoolSettings)}
"""Config section -> (Dagster resource key, the class whose fields are the section's keys)."""
