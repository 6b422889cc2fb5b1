"""Settings of the evaluations, filled from the config file (section ``evaluation``)."""

from typing import Literal, Optional

from dagster import Config, ConfigurableResource
from pydantic import Field

from resources.config_paths import ConfigPath, FileOrTag


class MetricConfig(Config):
    """One metric's switch and, for a learned one, where its weights are (a local folder, or a model name already
    in the local Hugging Face cache: nothing is downloaded)."""

    enabled: bool = True
    model_path: Optional[FileOrTag] = Field(default=None, description="Local weights folder or cached model name;"
                                            " None: the metric's default name, used only when it is in the local cache")
    device: Literal["auto", "cpu", "cuda"] = "auto"
    batch_size: int = Field(default=32, gt=0)


class MetricsConfig(Config):
    rouge_l: MetricConfig = Field(default_factory=MetricConfig)
    bleu: MetricConfig = Field(default_factory=MetricConfig)
    meteor: MetricConfig = Field(default_factory=MetricConfig)
    sbert: MetricConfig = Field(default_factory=MetricConfig)
    bertscore: MetricConfig = Field(default_factory=MetricConfig)
    bleurt: MetricConfig = Field(default_factory=MetricConfig)
    clip_score: MetricConfig = Field(default_factory=MetricConfig)


class PredictionsImport(Config):
    """A predictions file made elsewhere, to be scored on a benchmark (JSON lines or Parquet, see the README)."""

    benchmark: Literal["photocritique", "critique_canvas"]
    file: ConfigPath


class EvaluationSettings(ConfigurableResource):
    """Which benchmark releases are evaluated, how, and where the reports go."""

    releases_dir: ConfigPath = Field(default="releases", description="Folder holding the release folders evaluated"
                                     " (<releases_dir>/<benchmark>), as `aesforge release` writes them")
    out_dir: ConfigPath = Field(default="evaluation", description="Where predictions files and reports are written")
    predictions: list[PredictionsImport] = Field(default_factory=list, description="Predictions files to score")
    metrics: MetricsConfig = Field(default_factory=MetricsConfig)
    bootstrap_resamples: int = Field(default=10_000, gt=0, description="Resamples of the bootstrap intervals")
    bootstrap_seed: int = Field(default=0, description="Seed of the bootstrap intervals")


CONFIG_SECTIONS = {"evaluation": ("evaluation", EvaluationSettings)}
"""Config section -> (Dagster resource key, the class whose fields are the section's keys)."""
