"""Configuration of the graphic-design stages (AesEval-style): where Crello records come from, how they are
perturbed and rendered."""

from typing import Literal, Optional

from dagster import Config, ConfigurableResource
from pydantic import Field, field_validator

from assets.designs.logic.labelling import TASKS
from assets.designs.logic.perturb import PerturbSettings
from resources.config_paths import ConfigPath, OutputPath, ReturnedDir


class PerturbConfig(Config):
    """Algorithm 1's knobs (assets/designs/logic/perturb.py has every intensity range and its default)."""

    seed: int = Field(default=0, description="Run seed; each design's generator derives from it and the design id")
    variants_per_design: int = Field(default=2, description="Perturbed variants made from each base design")
    min_elements: int = Field(default=1, description="Elements changed per variant, at least")
    max_elements: int = Field(default=3, description="Elements changed per variant, at most (the paper: one to three)")
    operations: list[str] = Field(default_factory=list, description="Enabled operations; empty means all")
    replacement_pool: int = Field(default=1000, description="Image layers offered to image_replacement")

    def settings(self) -> PerturbSettings:
        extra = {"operations": tuple(self.operations)} if self.operations else {}
        return PerturbSettings(min_elements=self.min_elements, max_elements=self.max_elements, **extra)


class ReviewConfig(Config):
    """Human review of perturbed designs (AesEval 3.2: several annotators per design, majority vote)."""

    round: str = Field(default="1", description="Written into the sheet; votes from every round count")
    sheet_dir: OutputPath = Field(default="data/review/designs", description="Where the blank review sheet is written")
    returned_dir: ReturnedDir = Field(default="data/review/designs/returned", description="Where filled sheets (*.csv) are read")
    tie_breaker: Optional[str] = Field(default=None, description="None: a tie stays unresolved (a benchmark item stays"
                                       " unlabelled, a training item goes to the labeller); flawed or good")
    min_votes: int = Field(default=1, description="Votes an item needs before the human label is used")


class DesignSettings(ConfigurableResource):
    """Crello-format sources and the design stages' settings."""

    folders: list[ConfigPath] = Field(default_factory=list, description="Folders of per-design Crello JSON (layers beside them)")
    parquet: list[ConfigPath] = Field(default_factory=list, description="Parquet exports of the Crello dataset")
    format: str = Field(default="auto", description="auto, crello-v4 or crello-v5")
    batch_size: int = Field(default=64, description="Designs per committed batch")
    font_dirs: list[ConfigPath] = Field(default_factory=list, description="Extra font folders searched before the system's")
    perturb: PerturbConfig = Field(default_factory=PerturbConfig)
    review: ReviewConfig = Field(default_factory=ReviewConfig)
    labeller: str = Field(default="heuristic", description="Labels where people gave none: heuristic (offline judge) or"
                          " model (few-shot through the provider layer's annotator role)")
    max_concurrency: int = Field(default=4, description="Designs labelled or explained at once (model requests in flight)")
    few_shot: int = Field(default=3, description="Human-labelled examples of the same indicator shown to the model labeller")
    indicators: Literal["all", "affected"] = Field(default="all", description="Indicators each perturbed design is reviewed"
                                                   " and asked about: all twelve (AesEval 3.1), or affected: only those its"
                                                   " operations may touch")
    benchmark_labels: Literal["human", "labeller"] = Field(default="human", description="human: a benchmark item with no"
                                                           " resolving vote is held out as unlabelled; labeller: the"
                                                           " labeller decides it, as for training items")
    source_splits: Literal["honour", "ignore"] = Field(default="honour", description="honour: Crello's own split, when a"
                                                       " source names it (test to the benchmark, train and validation to"
                                                       " training); ignore: every design is dealt by benchmark_fraction")
    benchmark_designs: Optional[int] = Field(default=1200, ge=0, description="Test designs the benchmark takes under"
                                             " source_splits: honour (AesEval: 1,200), seeded; null: every one")
    benchmark_fraction: float = Field(default=0.3, ge=0, le=1, description="Share of base designs (with all their variants) in"
                                      " the benchmark, for designs whose source names no split; between 0 and 1 exclusive,"
                                      " each side gets at least one of two or more")
    split_seed: int = Field(default=0, description="Seed of the benchmark/train assignment of base designs")
    question_seed: int = Field(default=0, description="Seed of the region-selection distractors and choice order")
    reasoning_tasks: list[str] = Field(default_factory=lambda: list(TASKS), description="Question formats given"
                                       " indicator-grounded reasoning paths: judgment, selection, localisation (AesEval"
                                       " 4: all three; [judgment] as before)")
    box_units: str = Field(default="pixels", description="pixels ([x1, y1, x2, y2]) or normalised (fractions of the canvas)")
    export_dir: OutputPath = Field(default="data/exports/aeseval", description="Where the question files are written")

    @field_validator("reasoning_tasks")
    @classmethod
    def _known_tasks(cls, tasks: list[str]) -> list[str]:
        unknown = [t for t in tasks if t not in TASKS]
        if unknown:
            raise ValueError(f"unknown reasoning task(s) {', '.join(map(repr, unknown))}; known: {', '.join(TASKS)}")
        return tasks


CONFIG_SECTIONS = {"designs": ("designs", DesignSettings)}
"""Config section -> (Dagster resource key, the class whose fields are the section's keys)."""
