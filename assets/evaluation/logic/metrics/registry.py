"""Every similarity metric by name, and the one place that turns per-metric settings into metric instances."""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Iterable, Mapping
from typing import Any

from assets.evaluation.logic.metrics.base import Metric
from assets.evaluation.logic.metrics.bertscore import BertScore
from assets.evaluation.logic.metrics.bleu import Bleu
from assets.evaluation.logic.metrics.bleurt import Bleurt
from assets.evaluation.logic.metrics.clip_score import ClipScore
from assets.evaluation.logic.metrics.meteor import Meteor
from assets.evaluation.logic.metrics.rouge_l import RougeL
from assets.evaluation.logic.metrics.sbert import SbertCosine

METRICS: dict[str, type[Metric]] = {
    metric.name: metric for metric in (RougeL, Bleu, Meteor, SbertCosine, BertScore, Bleurt, ClipScore)
}
SHARED_SETTINGS = ("model_path", "device", "batch_size")  # every metric's config has them, with or without a model


def build_metrics(settings: Mapping[str, Mapping[str, Any]]) -> list[Metric]:
    """The enabled metrics among those named in ``settings``, in ``METRICS`` order.

    Each metric's settings are its constructor's keyword arguments plus ``enabled`` (default true).  A metric
    without a model (the lexical ones) also takes the shared ``device`` and ``batch_size``, which do not apply
    to it (it runs in-process on the CPU), and ``model_path`` only unset.  Every name and key is checked,
    disabled metrics' too, so that a typo fails loudly instead of silently leaving a default in place.
    """
    for name in settings:
        if name not in METRICS:
            raise ValueError(_unknown(f"metric {name!r}", name, METRICS))
    built: list[Metric] = []
    for name, metric in METRICS.items():
        if name in settings:
            enabled, options = _checked_settings(name, metric, settings[name])
            if enabled:
                built.append(metric(**options))
    return built


def _checked_settings(name: str, metric: type[Metric], given: Mapping[str, Any]) -> tuple[bool, dict[str, Any]]:
    """``enabled`` and the constructor's arguments from one metric's settings; what it does not take is refused."""
    options = dict(given)
    enabled = options.pop("enabled", True)
    if not isinstance(enabled, bool):
        raise ValueError(f"{name}: enabled must be true or false, got {enabled!r}")
    accepted = setting_keys(metric)
    for key in options:
        if key not in accepted and key not in SHARED_SETTINGS:
            known = {*accepted, *SHARED_SETTINGS, "enabled"}
            raise ValueError(_unknown(f"setting {key!r} for metric {name!r}", key, known))
    not_applying = {key: options.pop(key) for key in SHARED_SETTINGS if key in options and key not in accepted}
    if not_applying.get("model_path") is not None:
        raise ValueError(f"{name}: has no model, so model_path must be unset, got {not_applying['model_path']!r}")
    return enabled, options


def setting_keys(metric: type[Metric]) -> list[str]:
    """The settings a metric takes besides ``enabled``: its constructor's keyword arguments."""
    return [
        parameter.name for parameter in inspect.signature(metric).parameters.values()
        if parameter.kind is inspect.Parameter.KEYWORD_ONLY
    ]


def _unknown(what: str, given: str, known: Iterable[str]) -> str:
    known = sorted(known)
    close = difflib.get_close_matches(given, known, n=1)
    suggestion = f"; did you mean {close[0]!r}?" if close else ""
    return f"unknown {what}{suggestion} (known: {', '.join(known) or 'none'})"
