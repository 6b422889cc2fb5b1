"""Settings of the releases, filled from the config file (section ``releases``)."""

from typing import Literal, Optional

from dagster import Config, ConfigurableResource
from pydantic import Field, field_validator

from resources.config_paths import OutputPath

REDISTRIBUTION = ("allowed", "restricted", "unknown")


def _known_redistribution(values: Optional[list[str]]) -> Optional[list[str]]:
    unknown = [v for v in values or () if v not in REDISTRIBUTION]
    if unknown:
        raise ValueError(f"{unknown[0]!r} is not a redistribution value; use one of {', '.join(REDISTRIBUTION)}")
    return values


class DatasetPolicy(Config):
    """One dataset's own licence policy; unset fields take the releases section's."""

    withhold_images: Optional[list[str]] = Field(
        default=None, description="Redistribution values whose rows ship without image bytes (id, source URL, sha256 only)")

    _check_withheld = field_validator("withhold_images")(_known_redistribution)


class DatasetPolicies(Config):
    photocritique: DatasetPolicy = Field(default_factory=DatasetPolicy)
    critique_canvas: DatasetPolicy = Field(default_factory=DatasetPolicy)
    context_canvas: DatasetPolicy = Field(default_factory=DatasetPolicy)
    aeseval: DatasetPolicy = Field(default_factory=DatasetPolicy)
    poem_benchmark: DatasetPolicy = Field(default_factory=DatasetPolicy)


class ReleaseSettings(ConfigurableResource):
    """Where release folders go and what they may carry."""

    out_dir: OutputPath = Field(default="releases", description="Folder that holds one release folder per dataset")
    withhold_images: list[str] = Field(
        default_factory=lambda: ["restricted", "unknown"],
        description="Redistribution values whose rows ship without image bytes (id, source URL, sha256 only)")
    images: Literal["embed", "copy"] = Field(
        default="embed", description="embed: image bytes inside the Parquet shards; copy: files under images/")
    shard_max_bytes: int = Field(default=256 * 1024 * 1024, gt=0, description="Largest Parquet shard, in bytes")
    datasets: DatasetPolicies = Field(default_factory=DatasetPolicies, description="Per-dataset overrides")

    _check_withheld = field_validator("withhold_images")(_known_redistribution)

    def withheld(self, dataset: str) -> list[str]:
        """The redistribution values whose image bytes ``dataset`` leaves out."""
        own = getattr(self.datasets, dataset).withhold_images
        return list(self.withhold_images if own is None else own)


CONFIG_SECTIONS = {"releases": ("releases", ReleaseSettings)}
"""Config section -> (Dagster resource key, the class whose fields are the section's keys)."""
