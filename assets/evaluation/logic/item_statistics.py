"""Descriptive statistics of an item's answers, stored per item beside the metrics so every one gets the same
bootstrap interval, paired comparison and report as a metric, and applied identically to the human references
(the human baseline's "answers").

r/photocritique (``002_*`` §4): length in words, lexical diversity (MATTR, MTLD), repetition among a post's
critiques (word-set Jaccard, distinct bigrams), and the seven-aspect coverage: per aspect the share of the post's
critiques that mention it, so the mean over posts is the post-averaged coverage rate.
CritiqueCanvas (``000_*`` S2.3.2, Table S5): length, DimHits, term density per 100 words and Prompt Align (1 or 0
for a question that names dimensions, none for a generic one, so the mean is the share aligned). Table S5 pools
density over answers; the mean of per-answer densities here weighs each answer the same, and the report prints
the pooled figure with the Generic Top-3.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from statistics import fmean

from assets.evaluation.logic.aspect_coverage import ASPECTS, TERMS_DIGEST, aspects_of
from assets.evaluation.logic.benchmark_items import BenchmarkItem
from assets.evaluation.logic.response_stats import LEXICON_DIGEST, response_stats
from assets.evaluation.logic.text_stats import MATTR_WINDOW, MTLD_THRESHOLD, lexical_diversity, post_repetition, word_count

WORDS = "words"  # the mean length of an item's answers: reported beside the metrics, as the papers do
PHOTOCRITIQUE_STATISTICS = (WORDS, "mattr", "mtld", "repetition_jaccard", "distinct_2", "aspects_per_critique",
                            *(f"aspect:{a}" for a in ASPECTS))
CRITIQUE_CANVAS_STATISTICS = (WORDS, "dim_hits", "density", "prompt_align")

Statistics = Callable[[BenchmarkItem, Sequence[str]], Iterator[tuple[str, float | None]]]


def _mean(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return fmean(present) if present else None


def photocritique_statistics(item: BenchmarkItem, texts: Sequence[str]) -> Iterator[tuple[str, float | None]]:
    """(statistic, value) for a post's critiques; None where a statistic is undefined (no critiques, one critique
    for repetition, too few words for diversity)."""
    diversity = [lexical_diversity(t) for t in texts]
    repetition = post_repetition(texts) if len(texts) >= 2 else None
    covered = [aspects_of(t) for t in texts]
    yield WORDS, _mean([word_count(t) for t in texts])
    yield "mattr", _mean([d.mattr for d in diversity])
    yield "mtld", _mean([d.mtld for d in diversity])
    yield "repetition_jaccard", None if repetition is None else repetition.jaccard
    yield "distinct_2", None if repetition is None else repetition.distinct_2
    yield "aspects_per_critique", _mean([len(c) for c in covered])
    for aspect in ASPECTS:
        yield f"aspect:{aspect}", _mean([float(aspect in c) for c in covered])


def critique_canvas_statistics(item: BenchmarkItem, texts: Sequence[str]) -> Iterator[tuple[str, float | None]]:
    """(statistic, value) for the answers to one question (the model's one answer, or the reference)."""
    stats = [response_stats(t, item.fields.get("instruction", "")) for t in texts]
    yield WORDS, _mean([word_count(t) for t in texts])
    yield "dim_hits", _mean([len(s.dimensions) for s in stats])
    yield "density", _mean([100.0 * s.term_hits / s.words if s.words else None for s in stats])
    yield "prompt_align", _mean([None if s.aligned is None else float(s.aligned) for s in stats])


def word_statistics(item: BenchmarkItem, texts: Sequence[str]) -> Iterator[tuple[str, float | None]]:
    """Length only: for a benchmark with no statistics of its own."""
    yield WORDS, _mean([word_count(t) for t in texts])


STATISTICS: dict[str, tuple[Statistics, tuple[str, ...]]] = {
    "photocritique": (photocritique_statistics, PHOTOCRITIQUE_STATISTICS),
    "critique_canvas": (critique_canvas_statistics, CRITIQUE_CANVAS_STATISTICS),
}
"""Per benchmark, its statistics function and the names it yields."""

DESCRIPTIVE = tuple(sorted({name for _, names in STATISTICS.values() for name in names if name != WORDS}))
"""The statistics shown in the reports but not in the headline leaderboards (length is in both)."""

STATISTICS_VERSION = "item-statistics-v1"
STATISTICS_PARAMETERS = {"tokens": "assets/evaluation/logic/text_stats.py", "mattr_window": MATTR_WINDOW,
                         "mtld_threshold": MTLD_THRESHOLD, "aspect_terms": TERMS_DIGEST, "dimension_lexicon": LEXICON_DIGEST}
"""Recorded with every statistic's status row: which word lists and parameters produced it."""
