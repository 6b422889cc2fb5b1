"""Configuration of the poem-illustration benchmark (TangPoetryBench-style), section ``poetry`` of the config file."""

import os
from typing import Optional

from dagster import Config, ConfigurableResource, Failure
from pydantic import Field

from assets.poetry.logic.raters import RaterPseudonyms
from resources.config_paths import ConfigPath, OutputPath


class SurveyQcConfig(Config):
    """Quality control of survey responses (TangPoetryBench appendix D); every exclusion keeps its reason."""

    min_seconds: float = Field(default=15.0, description="A response faster than this many seconds is excluded (too_fast)")
    min_median_seconds: float = Field(default=20.0, description="An annotator whose median response time is below this"
                                      " many seconds is excluded (too_fast_annotator); 0 turns the screen off")
    constant_min_responses: int = Field(default=4, description="An annotator with at least this many responses, all with"
                                        " identical answers on the rated dimensions (text integrity is not compared),"
                                        " is excluded (constant_answers)")
    phase1_min_accuracy: float = Field(default=0.5, description="An annotator who picks the right poem less often is"
                                       " excluded (low_phase1_accuracy); chance is 0.25")
    phase1_min_items: int = Field(default=4, description="Responses an annotator needs before the accuracy floor applies")
    max_holistic_gap: float = Field(default=0.5, description="A response whose overall impression differs from the mean of"
                                    " its other dimensions by more than this is excluded (holistic_inconsistent)")


class PoetrySettings(ConfigurableResource):
    """Where poems, stand-in images, surveys and adjudication sheets come from, and the seeds of every sampled choice."""

    corpus: list[ConfigPath] = Field(default_factory=list, description="Poem corpus files (JSON or CSV)")
    stand_in_folder: Optional[ConfigPath] = Field(default=None, description="With no image generator configured: a folder of"
                                           " paintings used as stand-in illustrations (labelled stand_in, never generated)")
    stand_in_models: int = Field(default=3, description="Stand-in 'generators' (stand-in-1 ...), each assigning one"
                                 " painting per poem; used when stand_in_generators is empty")
    stand_in_generators: list[str] = Field(default_factory=list, description="Names of the stand-in generators, each"
                                           " assigning one painting per poem; no two generators of a poem show the"
                                           " same painting (empty: stand-in-1 ... stand-in-<stand_in_models>)")
    seed: int = Field(default=0, description="Seed of stand-in assignment and phase-1 option order")
    generation_seed: Optional[int] = Field(default=None, ge=-(2**31), le=2**31 - 1,
                                           description="Sent to image models that take a seed (32-bit)")
    generated_domain: str = Field(default="virtual", description="Pool domain of generated illustrations")
    generated_license: Optional[str] = Field(default=None, description="License recorded for generated images (the pool's"
                                             " allow-list decides whether they are admitted)")
    generated_redistribution: str = Field(default="unknown", description="allowed | restricted | unknown")
    survey_dir: OutputPath = Field(default="data/survey/poetry", description="Where the survey item sheet is written")
    phase1_items: Optional[ConfigPath] = Field(default=None, description="Phase-1 option sets of a study run elsewhere"
                                               " (CSV: item_id, option_A-option_D as poem ids, true_poem), used for the"
                                               " items it lists instead of generated distractors")
    surveys: list[ConfigPath] = Field(default_factory=list, description="Survey export CSVs (one row per annotator and item)")
    rater_salt_env: str = Field(default="AESFORGE_SURVEY_SALT", description="Environment variable holding the secret salt"
                                " that turns survey rater ids into pseudonyms (preferred over rater_salt)")
    rater_salt: Optional[str] = Field(default=None, description="The salt given in the config file instead (demo only;"
                                      " never stored in the warehouse)")
    adjudication: list[ConfigPath] = Field(default_factory=list, description="Text-integrity adjudication sheets (CSV)")
    qc: SurveyQcConfig = Field(default_factory=SurveyQcConfig)
    bootstrap_resamples: int = Field(default=10_000, description="Bootstrap resamples of the model ranking")
    bootstrap_seed: int = Field(default=0, description="Seed of the bootstrap")
    judge_role: str = Field(default="annotator", description="Provider-layer role that scores images against the rubric")
    judge_max_concurrency: int = Field(default=4, description="Images judged at once (model requests in flight)")
    batch_size: int = Field(default=64, description="Items per committed batch")
    export_dir: OutputPath = Field(default="data/exports/poetry", description="Where the benchmark files are written")

    def rater_pseudonyms(self) -> RaterPseudonyms:
        """Survey rater ids are stored only as keyed hashes: no salt, no survey."""
        salt = os.environ.get(self.rater_salt_env) or self.rater_salt
        if not salt:
            raise Failure(description=f"no survey rater salt: set the environment variable {self.rater_salt_env}"
                          " (or poetry.rater_salt); rater ids are only ever stored as keyed hashes")
        return RaterPseudonyms(salt)


CONFIG_SECTIONS = {"poetry": ("poetry", PoetrySettings)}
"""Config section -> (Dagster resource key, the class whose fields are the section's keys)."""
