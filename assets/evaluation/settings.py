"""Settings of the evaluations, filled from the config file (section ``evaluation``)."""

from typing import ClassVar, Literal, Optional

from dagster import Config, ConfigurableResource
from pydantic import Field

from assets.evaluation.judge_settings import JudgeSettings, RaterSalt
from resources.config_paths import ConfigPath, FileOrTag, OutputPath


class LexicalMetricConfig(Config):
    """A metric that runs in-process with no weights (ROUGE-L, METEOR)."""

    enabled: bool = True


class BleuConfig(LexicalMetricConfig):
    tokenize: str = Field(default="13a", description="sacrebleu tokenizer (offline ones: 13a, intl, zh, char, none)")
    smooth_method: str = Field(default="exp", description="sacrebleu sentence smoothing")


class LearnedMetricConfig(Config):
    """A metric with weights: a local folder or file, or a model name already in the local Hugging Face cache
    (nothing is downloaded; without weights the metric reports that it did not run, and why)."""

    enabled: bool = True
    model_path: Optional[FileOrTag] = Field(default=None, description="Local weights, or a cached model name; unset:"
                                            " the metric's default name, used when it is in the local cache")
    device: str = Field(default="auto", description="auto | cpu | cuda | cuda:N")
    batch_size: int = Field(default=32, gt=0)
    cache_dir: Optional[ConfigPath] = Field(default=None, description="The Hugging Face cache to look in")


class SbertConfig(LearnedMetricConfig):
    max_seq_length: Optional[int] = Field(default=None, description="Tokens per text; unset: the model's own limit")


class BertScoreConfig(LearnedMetricConfig):
    model_type: Optional[str] = Field(default=None, description="bert_score model type (roberta-large by default)")
    num_layers: Optional[int] = Field(default=None, description="Layer used; unset: bert_score's tuned one")
    rescale: bool = Field(default=True, description="Baseline rescaling (needs bert_score's shipped baseline)")


class BleurtConfig(LearnedMetricConfig):
    max_length: int = Field(default=512, gt=0, description="Tokens of reference and candidate together")


class ClipScoreConfig(LearnedMetricConfig):
    model_name: str = Field(default="ViT-B-32-quickgelu", description="open_clip architecture of a checkpoint file")
    weight: float = Field(default=2.5, description="CLIPScore's w (2.5, Hessel et al.); 1 with floor_at_zero false:"
                          " the raw cosine")
    floor_at_zero: bool = True


class MetricsConfig(Config):
    rouge_l: LexicalMetricConfig = Field(default_factory=LexicalMetricConfig)
    bleu: BleuConfig = Field(default_factory=BleuConfig)
    meteor: LexicalMetricConfig = Field(default_factory=LexicalMetricConfig)
    sbert: SbertConfig = Field(default_factory=SbertConfig)
    bertscore: BertScoreConfig = Field(default_factory=BertScoreConfig)
    bleurt: BleurtConfig = Field(default_factory=BleurtConfig)
    clip_score: ClipScoreConfig = Field(default_factory=ClipScoreConfig)

    def by_name(self) -> dict[str, dict]:
        """Each metric's settings as ``build_metrics`` takes them (unset values left to the metric's defaults)."""
        return {name: getattr(self, name).model_dump(exclude_none=True) for name in type(self).model_fields}


BENCHMARKS = Literal["photocritique", "critique_canvas", "context_canvas", "counterfactual", "aeseval", "poem_benchmark"]


class PoemSplit(Config):
    """The poem benchmark's judges are scored on held-out poems (``001_*`` §5: split by poem, not by image); the
    other poems are the calibration set a judge may be tuned on (and the calibration-mean baseline learns from)."""

    held_out_fraction: float = Field(default=0.2, gt=0, lt=1, description="Share of poems held out (the paper held out"
                                     " 256 of 1,280 images: 0.2)")
    seed: int = Field(default=0, description="Seed of the split (the same seed and poems give the same split)")


class GroundingAudit(RaterSalt):
    """ContextCanvas's grounding audit (``000_*`` S2.3.3): every correct answer with its stated reason goes on a blank
    sheet; raters mark whether the reason names the decisive visible cue and links it to the use. Evidence-grounded
    accuracy and the Unsupported rate are read from the returned sheets."""

    salt_label: ClassVar[str] = "grounding rater salt"

    sheet_dir: Optional[OutputPath] = Field(default=None, description="Folder the blank sheet is written to"
                                            " (context_canvas_grounding_sheet.csv); unset: no sheet is written")
    returned: list[ConfigPath] = Field(default_factory=list, description="Filled sheets to read (CSV, the blank sheet's"
                                       " columns with grounded, context_link (yes/no) and rater filled in)")
    rater_salt_env: str = Field(default="AESFORGE_GROUNDING_SALT", description="Environment variable holding the secret"
                                " salt that turns rater names into keyed hashes (preferred over rater_salt)")


class PredictionsImport(Config):
    """A predictions file made elsewhere, to be scored on a benchmark (JSON lines or Parquet, see the README)."""

    benchmark: BENCHMARKS
    file: ConfigPath


class ModelRun(Config):
    """A model asked for its answers on a benchmark, through the provider layer (cached, logged, resumable)."""

    benchmark: BENCHMARKS
    model: str = Field(description="A role of the models section (planner | annotator | verifier | judge) or one of its"
                       " named configurations (models.configs), or a baseline: baseline:title (photocritique),"
                       " baseline:instruction (critique_canvas), baseline:always_no (context_canvas, counterfactual),"
                       " baseline:first_option (aeseval), baseline:calibration_mean (poem_benchmark)")
    condition: Optional[str] = Field(default=None, description="The prompt condition; unset: the benchmark's primary one."
                                     " photocritique: capped_plain (+shuffled_image, +text_only controls) and the"
                                     " others of the paper; critique_canvas: instruction; context_canvas: image |"
                                     " text_only | neutral | evidence; counterfactual: image; aeseval: full | no_image |"
                                     " no_explanation | no_metadata; poem_benchmark: rubric")
    max_concurrency: int = Field(default=4, gt=0, description="Requests in flight")
    max_calls: Optional[int] = Field(default=None, gt=0, description="Requests this run may send in one"
                                     " materialization; when spent it stops cleanly and the next run goes on")
    max_tokens: Optional[int] = Field(default=None, gt=0, description="Tokens (in and out) it may spend, likewise")


class EvaluationSettings(ConfigurableResource):
    """Which benchmark releases are evaluated, how, and where the reports go."""

    # Written by the release assets (whose data versions tell the evaluations when a release changed), so it is an
    # output of the DAG, not an input file of the evaluations: a release copied in from elsewhere needs --force.
    releases_dir: OutputPath = Field(default="releases", description="Folder holding the release folders evaluated"
                                     " (<releases_dir>/<benchmark>), as `aesforge release` writes them")
    out_dir: OutputPath = Field(default="evaluation", description="Where predictions files and reports are written")
    predictions: list[PredictionsImport] = Field(default_factory=list, description="Predictions files to score")
    runs: list[ModelRun] = Field(default_factory=list, description="Models to ask for predictions")
    metrics: MetricsConfig = Field(default_factory=MetricsConfig)
    judges: JudgeSettings = Field(default_factory=JudgeSettings, description="The model judge of the predictions and"
                                  " the human sheet that checks it")
    poem_split: PoemSplit = Field(default_factory=PoemSplit)
    grounding_audit: GroundingAudit = Field(default_factory=GroundingAudit)
    bootstrap_resamples: int = Field(default=10_000, gt=0, description="Resamples of the bootstrap intervals")
    bootstrap_seed: int = Field(default=0, description="Seed of the bootstrap intervals")


CONFIG_SECTIONS = {"evaluation": ("evaluation", EvaluationSettings)}
"""Config section -> (Dagster resource key, the class whose fields are the section's keys)."""
