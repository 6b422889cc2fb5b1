"""Anti-shortcut report for contextual-suitability cases: can the answers be had without looking at the image?

ContextCanvas (seed paper 000) keeps a case only when neither wording, option length nor label priors reveal
the answer (anti-shortcut validity), and checks the finished set from the outside: the gold Yes rate (38.14%
there), and a text-only run (question and options, no image) that should not beat the majority baseline (61%
on its 100-case diagnostic subset). This module computes those figures for any case set, from the cases and a
text-only answer per case, plus two cheap checks of its own: option length against gold, and how often the
longest option is the gold one.

The text-only answers normally come from a model through the provider layer; ``text_only_guess`` is an
offline stand-in computed from the text alone (see its docstring), useful to spot crude cues and to exercise
the report without a model. It is a shortcut detector, not a solver.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from assets.context_canvas.logic.case_records import CaseOption, ContextCase

SIGNIFICANCE = 0.05
_WORD = re.compile(r"[a-z0-9]+")
_STOPWORDS = frozenset(
    "a an the and or but of to in on for with as at by from into is are was were be been being it its this that "
    "these those there their they them he she his her we our you your i me my not no yes do does did can could "
    "should would will may might must than then so such which who whom whose what when where why how all any "
    "each more most other some only own same very just also about over under".split()
)


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOPWORDS}


def text_only_guess(scenario: str, question: str, options: Sequence[CaseOption]) -> str:
    """The option a reader without the image might pick from wording alone: the option sharing the most
    distinct content words (lower-cased letters/digits, common function words dropped) with the scenario and
    question; ties go to the longer option text, then to the first listed.

    Why these rules: echoing the prompt's words and being the longer, more qualified answer are the two
    classic give-aways of hand-written multiple-choice items. On plain Yes/No options there is no overlap and
    the tie rule picks the longer label ("Yes"), which is exactly the always-Yes prior the report compares with.
    A shortcut detector, not a solver: it never sees the image and is not meant to be right.
    """
    if not options:
        raise ValueError("text_only_guess needs at least one option")
    context = _words(scenario) | _words(question)
    best = max(enumerate(options), key=lambda item: (len(_words(item[1].text) & context), len(item[1].text), -item[0]))
    return best[1].option_id


def text_only_answers(cases: Iterable[ContextCase]) -> dict[str, str]:
    """``text_only_guess`` for every case (the scenario counts as text: it is model input too)."""
    return {case.case_id: text_only_guess(case.scenario + " " + (case.proposed_assessment or ""), case.question,
                                          case.options) for case in cases}


def _pearson(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    n = len(xs)
    if n < 2:
        return None
    mean_x, mean_y = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mean_x) ** 2 for x in xs)
    syy = sum((y - mean_y) ** 2 for y in ys)
    if sxx == 0 or syy == 0:
        return None
    sxy = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys))
    return sxy / math.sqrt(sxx * syy)


def binomial_tail(successes: int, trials: int, p: float) -> float:
    """P(X >= successes) for X ~ Binomial(trials, p): the one-sided exact test of "better than p"."""
    if successes <= 0:
        return 1.0
    if p <= 0.0:
        return 0.0
    if p >= 1.0:
        return 1.0
    log_p, log_q = math.log(p), math.log1p(-p)
    total = 0.0
    for k in range(successes, trials + 1):
        log_term = (math.lgamma(trials + 1) - math.lgamma(k + 1) - math.lgamma(trials - k + 1)
                    + k * log_p + (trials - k) * log_q)
        total += math.exp(log_term)
    return min(1.0, total)


def _pct(value: float) -> str:
    return f"{100 * value:.1f}%"


def shortcut_report(cases: Sequence[ContextCase], text_only: Mapping[str, str | None]) -> dict[str, Any]:
    """Label balance, length cues and a text-only run against the majority baseline, as one JSON-ready dict.

    Keys:
    - ``n_cases``, ``n_binary``; ``gold_counts`` (gold option id -> cases);
    - ``gold_yes_rate``: share of binary cases whose gold is the canonical Yes option (id ``A``, else the first
      option, as the paper's scorer maps binary answers); None without binary cases;
    - ``length_gold_correlation``: point-biserial correlation between an option's length in characters and
      whether it is the gold, over every option of every case; None when undefined (no variation);
    - ``n_unique_longest``, ``longest_is_gold_rate`` and ``longest_chance_rate``: over cases whose longest option
      is unique, how often it is the gold, and what picking at random would give (mean of 1/options);
    - ``majority_option``, ``majority_baseline_accuracy``: always answering the most frequent gold id (ties to
      the smaller id), scored over all cases;
    - ``text_only_accuracy`` over all cases (a missing, None or non-option answer is wrong, as in the paper),
      ``n_text_only_answered``, ``n_text_only_invalid``, ``text_only_minus_baseline`` (accuracy points),
      ``text_only_p_value`` (one-sided exact binomial test of the text-only hits against the baseline rate);
      all None when ``text_only`` is empty (no text-only run yet);
    - ``verdict``: one plain sentence.
    """
    n = len(cases)
    binary = [case for case in cases if case.is_binary]
    gold_counts = Counter(case.gold for case in cases)
    lengths: list[float] = []
    is_gold: list[float] = []
    unique_longest = longest_gold = 0
    chance = 0.0
    for case in cases:
        sizes = [len(option.text) for option in case.options]
        lengths.extend(sizes)
        is_gold.extend(1.0 if option.option_id == case.gold else 0.0 for option in case.options)
        longest = max(sizes)
        if sizes.count(longest) == 1:
            unique_longest += 1
            longest_gold += case.options[sizes.index(longest)].option_id == case.gold
            chance += 1 / len(case.options)
    majority, majority_hits = (sorted(gold_counts.items(), key=lambda kv: (-kv[1], kv[0]))[0] if gold_counts
                               else (None, 0))
    baseline = majority_hits / n if n else None
    report: dict[str, Any] = {
        "n_cases": n,
        "n_binary": len(binary),
        "gold_counts": dict(sorted(gold_counts.items())),
        "gold_yes_rate": (sum(case.gold == case.yes_option_id for case in binary) / len(binary)) if binary else None,
        "length_gold_correlation": _pearson(lengths, is_gold),
        "n_unique_longest": unique_longest,
        "longest_is_gold_rate": longest_gold / unique_longest if unique_longest else None,
        "longest_chance_rate": chance / unique_longest if unique_longest else None,
        "majority_option": majority,
        "majority_baseline_accuracy": baseline,
        "text_only_accuracy": None,
        "n_text_only_answered": None,
        "n_text_only_invalid": None,
        "text_only_minus_baseline": None,
        "text_only_p_value": None,
    }
    if not n:
        report["verdict"] = "no cases: nothing to check"
        return report
    if not text_only:
        report["verdict"] = "no text-only answers given: run the text-only pass to compare with the majority baseline"
        return report
    hits = answered = invalid = 0
    for case in cases:
        raw = text_only.get(case.case_id)
        answer = case.resolve_answer(raw)
        if raw is not None and str(raw).strip() and answer is None:
            invalid += 1
        if answer is not None:
            answered += 1
            hits += answer == case.gold
    accuracy = hits / n
    assert baseline is not None
    p_value = binomial_tail(hits, n, baseline)
    report.update({
        "text_only_accuracy": accuracy,
        "n_text_only_answered": answered,
        "n_text_only_invalid": invalid,
        "text_only_minus_baseline": 100 * (accuracy - baseline),
        "text_only_p_value": p_value,
    })
    gap = f"{_pct(accuracy)} against a {_pct(baseline)} majority baseline ({n} cases)"
    if accuracy > baseline and p_value < SIGNIFICANCE:
        verdict = (f"shortcut risk: text-only answers score {gap}, clearly above it (one-sided binomial p={p_value:.3g}); "
                   f"some cases may be answerable without the image: recheck visual necessity and anti-shortcut validity")
    elif accuracy > baseline:
        verdict = (f"text-only answers score {gap}: above it, but not clearly (p={p_value:.3g}); "
                   f"no firm sign of a text shortcut at this size")
    else:
        verdict = f"text-only answers score {gap}: no better than always giving the most common answer"
    report["verdict"] = verdict
    return report
