"""The closed-answer benchmarks' own report sections, as Markdown from plain rows: the papers' tables rebuilt from
the leaderboard (ContextCanvas Tables S4 and S9, the counterfactual audit of Table S7, AesEval's per-indicator Tables
2-5, the poem judges' Table 4), the people's side of the poem benchmark (Spearman correlations with overall
impression, phase-1 accuracy by rater group) and the list of unreadable answers.

Plain rows in, text out (no warehouse): the same rows give the same bytes, and the wording is tested alone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from assets.counterfactual.logic.edit_pairs import PairFigures
from assets.evaluation.logic.report_markdown import _number, _table

Figure = tuple[float | None, float | None, float | None]
"""(mean, ci_low, ci_high) of one run's metric."""
_UNREADABLE_LISTED = 50


@dataclass(frozen=True)
class RunFigures:
    """One run's leaderboard, by metric."""

    model: str
    condition: str
    figures: Mapping[str, Figure]
    n_items: Mapping[str, int]

    @property
    def label(self) -> str:
        return f"{self.model} / {self.condition}"

    def value(self, metric: str, scale: float = 1.0, digits: int = 4) -> str:
        mean = (self.figures.get(metric) or (None, None, None))[0]
        return _number(None if mean is None else mean * scale, digits)

    def with_interval(self, metric: str, scale: float = 1.0, digits: int = 2) -> str:
        mean, low, high = self.figures.get(metric) or (None, None, None)
        if mean is None:
            return "–"
        interval = "" if low is None or high is None else f" [{low * scale:.{digits}f}, {high * scale:.{digits}f}]"
        return f"{mean * scale:.{digits}f}{interval}"


def _ordered(runs: Sequence[RunFigures], metric: str) -> list[RunFigures]:
    return sorted(runs, key=lambda r: (-(r.figures.get(metric, (None,))[0] or -1e9), r.label))


def context_sections(runs: Sequence[RunFigures], gold_yes_rate: float | None, binary_cases: int,
                     all_cases: int) -> list[tuple[str, str]]:
    """Table S4 (class-specific behaviour, percentages) and Table S9 (accuracy per visual-information condition)."""
    yes = "–" if gold_yes_rate is None else f"{100 * gold_yes_rate:.2f} %"
    body = [f"{all_cases} cases, {binary_cases} with two options. Gold Yes rate (A on two-option cases): {yes}; an"
            " always-No answerer's binary accuracy is one minus it.", ""]
    body += _table(("model / condition", "accuracy", "binary accuracy", "macro-F1", "Yes F1", "No F1", "predicted Yes",
                    "unreadable"),
                   [(r.label, r.with_interval("accuracy", 100), r.with_interval("binary_accuracy", 100),
                     r.with_interval("macro_f1", 100), r.value("f1:A", 100, 2), r.value("f1:B", 100, 2),
                     r.value("yes_rate", 100, 2), r.value("unreadable", 100, 2)) for r in _ordered(runs, "accuracy")])
    sections = [("Class-specific behaviour (AesCanvas Table S4; percentages)", "\n".join(body))]
    conditions = sorted({r.condition for r in runs})
    if len(conditions) > 1:
        models = sorted({r.model for r in runs})
        by = {(r.model, r.condition): r for r in runs}
        rows = [(model, *((by[(model, c)].value("accuracy", 100, 2) if (model, c) in by else "–") for c in conditions))
                for model in models]
        sections.append(("Accuracy per visual-information condition (AesCanvas Table S9; percentages)",
                         "\n".join(["text_only: question and options only; neutral: a verdict-free description instead"
                                    " of the image; evidence: the description with the decisive cue explicit; image: the"
                                    " image. Paired McNemar tests between conditions are in the comparisons above.", ""]
                                   + _table(("model", *conditions), rows))))
    return sections


@dataclass(frozen=True)
class PairCounts:
    """One run's pair figures as ``counterfactual.logic.edit_pairs.pair_figures`` gives them, with the unchanged
    split, the NCU interval and the model's accuracy on the whole benchmark."""

    label: str
    figures: PairFigures
    unchanged_correct: int
    unchanged_wrong: int
    ncu_interval: tuple[float | None, float | None]
    full_accuracy: float | None  # the same model's ContextCanvas accuracy on the whole benchmark (image condition)


def counterfactual_section(rows: Sequence[PairCounts]) -> tuple[str, str]:
    """Table S7: full, original and edit accuracy, pair accuracy, C/R, unchanged counts and NCU with its interval."""
    def ncu(r: PairCounts) -> str:
        low, high = r.ncu_interval
        interval = "" if low is None or high is None else f" [{100 * low:.2f}, {100 * high:.2f}]"
        return f"{r.figures.net_correct_update:.2f}{interval}"
    body = ["Percentages over the pairs. Full: the model's accuracy on all ContextCanvas cases (image condition), where"
            " that run exists. C/R: correct and reverse directional updates; unchanged answers split by whether they"
            " were right on the original. NCU = 100 × (C − R) / pairs, with its bootstrap 95 % interval.", ""]
    body += _table(("model / condition", "pairs", "full", "original", "edit", "pair", "C/R", "unchanged right/wrong", "NCU [95 % CI]"),
                   [(r.label, r.figures.pairs, _number(None if r.full_accuracy is None else 100 * r.full_accuracy, 2),
                     f"{r.figures.original_accuracy:.2f}", f"{r.figures.edited_accuracy:.2f}",
                     f"{r.figures.pair_accuracy:.2f}", f"{r.figures.correct}/{r.figures.reverse}",
                     f"{r.unchanged_correct}/{r.unchanged_wrong}", ncu(r))
                    for r in sorted(rows, key=lambda r: (-r.figures.net_correct_update, r.label))])
    return "Counterfactual audit (AesCanvas Table S7)", "\n".join(body)


AESEVAL_TABLES = (("judgment_accuracy", "Aesthetic judgment: accuracy per indicator (AesEval Table 2)"),
                  ("region_accuracy", "Region selection: accuracy per indicator (AesEval Table 3)"),
                  ("localisation_none_accuracy", "Precise localisation, None answers: accuracy per indicator (AesEval Table 4)"),
                  ("localisation_iou", "Precise localisation, boxes: IoU per indicator (AesEval Table 5)"))


def aeseval_sections(runs: Sequence[RunFigures], indicators: Sequence[str]) -> list[tuple[str, str]]:
    """One table per format and metric: overall (mean over indicators) and each indicator's mean."""
    sections = []
    for metric, title in AESEVAL_TABLES:
        present = [r for r in runs if f"{metric}_overall" in r.figures]
        if not present:
            continue
        shown = [i for i in indicators if any(f"{metric}:{i}" in r.figures for r in present)]
        rows = [(r.label, r.with_interval(f"{metric}_overall", 1, 4), *(r.value(f"{metric}:{i}") for i in shown))
                for r in _ordered(present, f"{metric}_overall")]
        sections.append((title, "\n".join(["Overall: the mean over indicators, with its bootstrap 95 % interval over items.", ""]
                                          + _table(("model / condition", "overall", *shown), rows))))
    return sections


def poem_judges_section(runs: Sequence[RunFigures], n_poems: int, n_images: int) -> tuple[str, str]:
    """Table 4: per judge whether it scores per dimension, its MAE, share within 0.05 and mean per-poem tau."""
    rows = [(r.label, "yes" if "mae" in r.figures else "no", r.value("mae"), r.value("within_005", 100, 1),
             r.with_interval("kendall_tau", 1, 3), (r.n_items.get("kendall_tau") or 0))
            for r in _ordered(runs, "kendall_tau")]
    body = [f"Held-out split: {n_poems} poem(s), {n_images} image(s). A scalar judge (CLIPScore) has no per-dimension"
            " output, so MAE and the share within 0.05 do not apply; tau orders each poem's images by predicted quality"
            " against the people's (poems where either side is constant are left out).", ""]
    body += _table(("judge / condition", "per-dim", "MAE", "≤ 0.05 (%)", "tau [95 % CI]", "poems"), rows)
    return "Judges against people (TangPoetryBench Table 4)", "\n".join(body)


def poem_people_section(spearman: Mapping[str, tuple[float | None, int]], phase1: Mapping[str, tuple[int, int, float]],
                        target: str, chance: float) -> tuple[str, str]:
    """The people's data: each dimension's Spearman rho with ``target`` over images, and phase-1 accuracy per group."""
    body = [f"Spearman's rho of each dimension with {target} per image (all released images):", ""]
    body += _table(("dimension", "rho", "images"),
                   [(d, _number(rho, 3), n) for d, (rho, n) in sorted(spearman.items(), key=lambda kv: (-(kv[1][0] or -2), kv[0]))])
    body += ["", f"Phase-1 recognizability (pick the poem among four; chance {100 * chance:.0f} %), answers that passed"
             " quality control:", ""]
    body += _table(("raters", "correct", "answers", "accuracy (%)"),
                   [(group, correct, n, f"{100 * accuracy:.1f}") for group, (correct, n, accuracy) in sorted(phase1.items())])
    return "The people's scores (TangPoetryBench §4)", "\n".join(body)


def unreadable_section(rows: Sequence[tuple[str, str, int, str, str]]) -> tuple[str, str] | None:
    """The answers that named no option or box (counted wrong): (run label, item, sample, problem, detail)."""
    if not rows:
        return None
    shown = sorted(rows)[:_UNREADABLE_LISTED]
    body = [f"{len(rows)} answer(s) could not be read and count as wrong"
            + (f"; the first {_UNREADABLE_LISTED} are listed (view `evaluation_answers` has all)." if len(rows) > len(shown) else "."), ""]
    body += _table(("model / condition", "item", "sample", "problem", "detail"), shown)
    return "Unreadable answers", "\n".join(body)
