"""What the model-based metrics share: weights read from local files only, a device, loading on first use.

Evaluation runs on machines without internet, and a library's download path may retry for a minute before
failing, so weights are never fetched: a model name is looked up in the local Hugging Face cache, a path must
exist, and anything missing becomes an ``unavailable()`` reason a user can act on.  The ML libraries are
imported only when a metric is checked or used, so importing the registry stays cheap.
"""

from __future__ import annotations

import re
from abc import abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from assets.evaluation.logic.metrics.base import SETTINGS_PREFIX, Metric, MetricUnavailable

DEVICE_PATTERN = re.compile(r"auto|cpu|cuda(:\d+)?")


@dataclass(kw_only=True, eq=False)
class LearnedMetric(Metric):
    """A metric that needs model weights; the model is loaded once, on the first score.

    Subclasses are keyword-only dataclasses too: their fields are exactly the settings a user can give.
    """

    default_model: ClassVar[str | None]  # Hugging Face name looked up in the local cache when no model_path is set
    weights_hint: ClassVar[str]  # what model_path should point at, for reasons

    model_path: str | None = None  # a local file or directory, or a model name in the Hugging Face cache
    device: str = "auto"
    batch_size: int = 32
    cache_dir: str | None = None  # the Hugging Face cache to look in; unset: huggingface_hub's default

    def __post_init__(self) -> None:
        device_ok = DEVICE_PATTERN.fullmatch(str(self.device)) is not None
        require(self, "device", device_ok, "'auto', 'cpu', 'cuda' or 'cuda:N'")
        require(self, "batch_size", is_integer(self.batch_size, 1), "a positive integer")
        self._model: Any = None
        self._load_failure: str | None = None
        self._checked = False  # whether ``_reason`` holds the answer of the checks (weights, device)
        self._reason: str | None = None

    @property
    def model_source(self) -> str | None:
        """Where the weights are to be found: the configured path or name, else the default name."""
        return self.model_path if self.model_path is not None else self.default_model

    def unavailable(self) -> str | None:
        """Why the metric cannot run here, or None. Checked once per instance (the answer cannot change within a
        run, and the device check imports torch)."""
        if self._load_failure is not None:
            return self._load_failure
        if not self._checked:
            try:
                self._prepare()
            except MetricUnavailable as exc:
                self._reason = str(exc)
            except Exception as exc:  # the contract is a reason, never an exception: an unforeseen check failure too
                self._reason = f"{self.name}: {type(exc).__name__}: {exc}"
            self._checked = True
        return self._reason

    def weights_path(self) -> Path | None:
        """The local weights in use, or None where they cannot be found."""
        try:
            return self._resolved_weights()
        except MetricUnavailable:
            return None

    def _weights_parameters(self) -> dict[str, Any]:
        path = self.weights_path()
        return {"model": self.model_source, "weights": None if path is None else str(path)}

    def _loaded(self) -> Any:
        """The loaded model, loading it on the first call; a failed load makes the metric unavailable."""
        if self._model is None:
            weights, device = self._prepare()
            try:
                self._model = self._load(weights, device)
            except Exception as exc:  # corrupt file, wrong architecture, missing tokenizer: all configuration
                self._load_failure = f"{self.name}: could not load {weights}: {type(exc).__name__}: {exc}"
                raise MetricUnavailable(self._load_failure) from exc
        return self._model

    def _prepare(self) -> tuple[Path, str]:
        """The weights, checked, then the device: without weights torch is never imported."""
        weights = self._resolved_weights()
        self._check_weights(weights)
        return weights, _resolved_device(self.name, self.device)

    def _resolved_weights(self) -> Path:
        setting = f"{SETTINGS_PREFIX}.{self.name}.model_path"
        if self.model_source is None:
            raise MetricUnavailable(f"{self.name}: no weights configured (set {setting} to {self.weights_hint})")
        return local_weights(self.name, self.model_source, setting, self.cache_dir)

    def _check_weights(self, weights: Path) -> None:
        """Cheap checks that the weights suit this metric, before anything is loaded; raises MetricUnavailable."""

    @abstractmethod
    def _load(self, weights: Path, device: str) -> Any:
        """The model (and whatever else scoring needs) from ``weights``, in eval mode on ``device``."""


def is_integer(value: object, minimum: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= minimum


def require(metric: Metric, setting: str, holds: bool, expected: str) -> None:
    """Refuse a setting at construction, so a bad configuration fails before any scoring starts."""
    if not holds:
        raise ValueError(f"{metric.name}: {setting} must be {expected}, got {getattr(metric, setting)!r}")


def local_weights(metric: str, source: str, setting: str, cache_dir: str | None) -> Path:
    """``source`` as an existing local file or directory, or as a model cached by Hugging Face; never downloads."""
    from huggingface_hub import snapshot_download
    from huggingface_hub.constants import HF_HUB_CACHE
    from huggingface_hub.errors import HFValidationError, LocalEntryNotFoundError

    path = Path(source).expanduser()
    if path.exists():
        return path.resolve()
    try:
        return Path(snapshot_download(source, cache_dir=cache_dir, local_files_only=True))
    except HFValidationError:
        raise MetricUnavailable(f"{metric}: no weights at {path} (set {setting})") from None
    except LocalEntryNotFoundError:
        cache = cache_dir or HF_HUB_CACHE
        raise MetricUnavailable(
            f"{metric}: {source!r} is neither a local path nor a model in the Hugging Face cache {cache}; "
            f"weights are never downloaded: pre-fetch it there or set {setting}"
        ) from None


def _resolved_device(metric: str, device: str) -> str:
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda"):
        index = int(device.partition(":")[2] or 0)
        if index >= torch.cuda.device_count():
            raise MetricUnavailable(
                f"{metric}: device {device!r} requested but torch sees {torch.cuda.device_count()} CUDA GPU(s)"
            )
    return device
