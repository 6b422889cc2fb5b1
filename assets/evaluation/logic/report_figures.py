"""The evaluation report's plots, as PNG bytes: score distributions per run and answer lengths against the humans'.

Why bytes from plain lists: the report is rebuilt from the warehouse on every evaluation, and the same scores must
give the same file (no timestamp, no software tag in the PNG, a fixed size and font), so a re-run that changed
nothing rewrites nothing a reader could see differ.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence

import matplotlib

matplotlib.use("Agg")  # files only: no display, whatever the machine has

import matplotlib.pyplot as plt  # noqa: E402  (after the backend is chosen)
import numpy as np  # noqa: E402

_SIZE = (7.0, 3.6)
_DPI = 100
_COLOURS = ("#4C72B0", "#DD8452", "#55A868", "#C44E52", "#8172B3", "#937860", "#DA8BC3", "#8C8C8C", "#CCB974", "#64B5CD")
HUMAN_COLOUR = "#222222"


def _png(figure) -> bytes:
    out = io.BytesIO()
    figure.savefig(out, format="png", dpi=_DPI, metadata={"Software": None})
    plt.close(figure)
    return out.getvalue()


def score_distributions(metric: str, values: Mapping[str, Sequence[float]]) -> bytes:
    """One box per run (label → its per-item values), the mean marked: how the items spread, not only where the
    mean lies. Runs without values are left out."""
    labels = [label for label, v in values.items() if len(v)]
    figure, axis = plt.subplots(figsize=_SIZE)
    if labels:
        data = [np.asarray(values[label], dtype=float) for label in labels]
        axis.boxplot(data, orientation="horizontal", showmeans=True, widths=0.6)
        axis.set_yticks(range(1, len(labels) + 1), [_short(label) for label in labels], fontsize=7)
        axis.invert_yaxis()  # the first run on top, as in the table
    axis.set_xlabel(f"{metric} per item")
    axis.set_title(f"{metric}: distribution over items", fontsize=9)
    figure.tight_layout()
    return _png(figure)


def length_histogram(lengths: Mapping[str, Sequence[int]], human: Sequence[int]) -> bytes:
    """Words per answer: each run's answers as a step histogram over the human references' filled one, on shared
    bins (the papers compare model critiques' length with the humans')."""
    everything = [n for v in lengths.values() for n in v] + list(human)
    top = max(everything) if everything else 1
    bins = np.linspace(0, max(top, 1) + 1, min(40, max(top, 1) + 2))
    figure, axis = plt.subplots(figsize=_SIZE)
    if len(human):
        axis.hist(human, bins=bins, weights=_shares(human), color=HUMAN_COLOUR, alpha=0.25, label=f"human references (n={len(human)})")
    for k, (label, v) in enumerate(lengths.items()):
        if len(v):
            axis.hist(v, bins=bins, weights=_shares(v), histtype="step", linewidth=1.4, color=_COLOURS[k % len(_COLOURS)],
                      label=f"{_short(label)} (n={len(v)})")
    axis.set_xlabel("words per answer")
    axis.set_ylabel("share of answers")
    axis.set_title("answer length against the human references", fontsize=9)
    if axis.get_legend_handles_labels()[0]:
        axis.legend(fontsize=7)
    figure.tight_layout()
    return _png(figure)


def _shares(values: Sequence[int]) -> np.ndarray:
    """Each answer's weight, so a bar's height is the share of that run's answers in the bin."""
    return np.full(len(values), 1.0 / len(values))


def _short(label: str, width: int = 48) -> str:
    return label if len(label) <= width else label[: width - 1] + "…"
