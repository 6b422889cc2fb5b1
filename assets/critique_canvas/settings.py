"""Settings of the CritiqueCanvas stages, filled from the config file (section ``critique``)."""

from typing import Literal, Optional

from dagster import Config, ConfigurableResource
from pydantic import Field, field_validator

from assets.critique_canvas.logic.admission import DEFAULT_SOURCE_TYPES, POOL_SOURCE_TYPES, unknown_source_types
from assets.critique_canvas.logic.answers import DOMAINS
from resources.config_paths import OutputPath, ReturnedDir


class CritiqueAuditSettings(Config):
    """The human audit of accepted pairs (AesCanvas S2.3.1: five reviewers, 1,000 pairs)."""

    round: str = Field(default="1", description="Name of the audit round; a drawn round's sample is frozen, a new name draws anew")
    size: int = Field(default=1000, description="Pairs to sample (the paper audited 1,000)")
    seed: int = Field(default=0, description="Seed that orders the pairs within each domain")
    allocation: str = Field(default="proportional", description="Across domains: proportional (to accepted pairs) or equal")
    acceptance_rule: str = Field(default="majority", description="majority (a tie rejects) or unanimous")
    min_reviewers: int = Field(default=1, description="Reviews a pair needs before it counts in the figures")
    sheet_dir: OutputPath = Field(default="data/audit/critique_canvas", description="Where blank review sheets are written")
    returned_dir: ReturnedDir = Field(default="data/audit/critique_canvas/returned", description="Where filled sheets (*.csv) are read")


class CritiqueSettings(ConfigurableResource):
    """How hard the chain may push the providers, and which images it takes."""

    max_concurrency: int = Field(default=4, description="Images (hence model requests) in flight at once")
    requests_per_minute: Optional[float] = Field(default=None, description="Request starts per minute, all roles together")
    max_calls: Optional[int] = Field(default=None, description="Stop cleanly after this many requests (cache hits are free)")
    max_tokens: Optional[int] = Field(default=None, description="Stop cleanly after this many input + output tokens")
    image_max_side: int = Field(default=1024, description="Images are sent as JPEG with the longer side at most this")
    limit: Optional[int] = Field(default=None, description="At most this many new images per run")
    domains: list[str] = Field(default=list(DOMAINS), description="Domains to critique")
    source_types: list[str] = Field(
        default=list(DEFAULT_SOURCE_TYPES),
        description="Pool source types whose images may be critiqued (of manifest, folder, reddit, generated); reddit"
        " (r/photocritique benchmark photos) and generated (poem-benchmark illustrations) are benchmark images")
    paragraphs: int = Field(default=4, ge=0, description="Single-turn paragraph instructions (Fig. S1) written beside the"
                            " six-pair dialogue of each image: a broad appreciation, then one per planned dimension;"
                            " 0: the dialogue only")
    verifier: Literal["per_pair", "batch"] = Field(default="per_pair", description="per_pair: one verifier call per pair"
                                                   " with its decision and a reason per criterion (S2.2.1); batch: one"
                                                   " call judges every pair of the image, acceptance derived")
    eval_per_domain: int = Field(default=2000, description="Evaluation samples (exported pairs) per domain: the paper's"
                                 " 6,000 over three; groups with eval_unit: groups")
    eval_unit: Literal["samples", "groups"] = Field(default="samples", description="What eval_per_domain counts: samples"
                                                    " (the paper's unit) or groups (a group's pairs count once)")
    split_seed: int = Field(default=0, description="Seed that orders duplicate clusters for the split")
    audit: CritiqueAuditSettings = Field(default_factory=CritiqueAuditSettings)
    export_dir: OutputPath = Field(default="data/exports/critique_canvas", description="Where the CritiqueCanvas files are written")

    @field_validator("source_types")
    @classmethod
    def _known_source_types(cls, values: list[str]) -> list[str]:
        unknown = unknown_source_types(values)
        if unknown:
            raise ValueError(f"{unknown[0]!r} is not a pool source type; use one of {', '.join(POOL_SOURCE_TYPES)}")
        return values


CONFIG_SECTIONS = {"critique": ("critique", CritiqueSettings)}
"""Config section -> (Dagster resource key, the class whose fields are the section's keys)."""
