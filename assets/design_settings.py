"""Configuration of the graphic-design stages (AesEval-style): where Crello records come from, how they are
perturbed and rendered."""

from dagster import Config, ConfigurableResource
from pydantic import Field

from assets.lib.design_perturb import PerturbSettings


class PerturbConfig(Config):
    """Algorithm 1's knobs (assets/lib/design_perturb.py has every intensity range and its default)."""

    seed: int = Field(default=0, description="Run seed; each design's generator derives from it and the design id")
    variants_per_design: int = Field(default=2, description="Perturbed variants made from each base design")
    min_elements: int = Field(default=1, description="Elements changed per variant, at least")
    max_elements: int = Field(default=3, description="Elements changed per variant, at most (the paper: one to three)")
    operations: list[str] = Field(default_factory=list, description="Enabled operations; empty means all")
    replacement_pool: int = Field(default=1000, description="Image layers offered to image_replacement")

    def settings(self) -> PerturbSettings:
        extra = {"operations": tuple(self.operations)} if self.operations else {}
        return PerturbSettings(min_elements=self.min_elements, max_elements=self.max_elements, **extra)


class DesignSettings(ConfigurableResource):
    """Crello-format sources and the design stages' settings."""

    folders: list[str] = Field(default_factory=list, description="Folders of per-design Crello JSON (layers beside them)")
    parquet: list[str] = Field(default_factory=list, description="Parquet exports of the Crello dataset")
    format: str = Field(default="auto", description="auto, crello-v4 or crello-v5")
    batch_size: int = Field(default=64, description="Designs per committed batch")
    font_dirs: list[str] = Field(default_factory=list, description="Extra font folders searched before the system's")
    perturb: PerturbConfig = Field(default_factory=PerturbConfig)
