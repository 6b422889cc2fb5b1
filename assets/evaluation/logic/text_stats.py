"""Length, lexical diversity and within-post repetition of critiques, computed the same way for model and human text.

Tokenisation (one rule for every figure here): markdown links keep their text, bare URLs are dropped, and a word
is a run of letters or digits, with inner apostrophes and hyphens kept ("don't", "well-lit" are one word each;
"f/2.8" is three: f, 2, 8), case-folded, with typographic apostrophes read as straight ones. It counts words the
way the photocritique benchmark counts its references, so lengths compare with the benchmark's own.

Diversity: the type–token ratio falls as a text grows, so the length-robust moving-average TTR (MATTR, mean TTR
over every window of ``window`` tokens) and MTLD (McCarthy & Jarvis 2010: mean length of the stretches over
which the TTR stays above 0.72, both directions averaged) are given beside it. Repetition across the critiques
of one post: mean pairwise Jaccard overlap of their word sets (function words included, identically for every
critic) and distinct-n over their pooled n-grams.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import combinations

_MARKDOWN_LINK = re.compile(r"\[([^\]]*)\]\([^)\s]*\)")
_URL = re.compile(r"https?://\S+")
_TOKEN = re.compile(r"[^\W_]+(?:['\-][^\W_]+)*")
MTLD_THRESHOLD = 0.72
MATTR_WINDOW = 50


def tokens(text: str) -> list[str]:
    """The text's words by the module's rule (see the module docstring), case-folded."""
    text = _URL.sub(" ", _MARKDOWN_LINK.sub(r" \1 ", text)).replace("’", "'")
    return [t.casefold() for t in _TOKEN.findall(text)]


def word_count(text: str) -> int:
    return len(tokens(text))


# --- length ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LengthStats:
    n: int
    mean: float | None                   # None for no texts
    median: float | None
    word_range: tuple[int, int] | None   # the requested range, inclusive at both ends
    share_in_range: float | None         # None when no range was asked or there are no texts


def length_stats(texts: Iterable[str], word_range: tuple[int, int] | None = None) -> LengthStats:
    """Word-count summary; ``share_in_range`` says how often a length instruction (e.g. 50–150) was met."""
    if word_range is not None and not 0 <= word_range[0] <= word_range[1]:
        raise ValueError(f"a word range needs 0 <= low <= high, not {word_range}")
    counts = [word_count(t) for t in texts]
    if not counts:
        return LengthStats(0, None, None, word_range, None)
    share = None
    if word_range is not None:
        share = sum(word_range[0] <= c <= word_range[1] for c in counts) / len(counts)
    return LengthStats(len(counts), statistics.fmean(counts), float(statistics.median(counts)), word_range, share)


# --- lexical diversity ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LexicalDiversity:
    n_tokens: int
    ttr: float | None    # None for an empty text
    mattr: float | None  # None for an empty text
    mtld: float | None   # None where it is undefined (see mtld)


def type_token_ratio(words: Sequence[str]) -> float | None:
    return len(set(words)) / len(words) if words else None


def moving_average_ttr(words: Sequence[str], window: int = MATTR_WINDOW) -> float | None:
    """Mean TTR over all windows of ``window`` consecutive tokens; a text shorter than the window gets its TTR."""
    if window < 1:
        raise ValueError(f"the MATTR window must be at least 1 token, not {window}")
    if len(words) <= window:
        return type_token_ratio(words)
    counts: dict[str, int] = {}
    for word in words[:window]:
        counts[word] = counts.get(word, 0) + 1
    total = len(counts)
    for start in range(1, len(words) - window + 1):
        leaving, entering = words[start - 1], words[start + window - 1]
        counts[leaving] -= 1
        if not counts[leaving]:
            del counts[leaving]
        counts[entering] = counts.get(entering, 0) + 1
        total += len(counts)
    return total / ((len(words) - window + 1) * window)


def _mtld_one_way(words: Sequence[str], threshold: float) -> float:
    factors = 0.0
    types: set[str] = set()
    seen = 0
    for word in words:
        types.add(word)
        seen += 1
        if len(types) / seen <= threshold:
            factors += 1
            types, seen = set(), 0
    if seen:
        factors += (1 - len(types) / seen) / (1 - threshold)
    return len(words) / factors if factors else float("inf")


def mtld(words: Sequence[str], threshold: float = MTLD_THRESHOLD) -> float | None:
    """MTLD, forward and backward passes averaged. None for an empty text and for one whose TTR never falls
    (every word distinct: no factor completes, so the measure is unbounded); it is unstable below ~50 tokens."""
    if not 0 < threshold < 1:
        raise ValueError(f"the MTLD threshold must lie strictly between 0 and 1, not {threshold}")
    if not words:
        return None
    both = (_mtld_one_way(words, threshold), _mtld_one_way(words[::-1], threshold))
    if any(v == float("inf") for v in both):
        return None
    return (both[0] + both[1]) / 2


def lexical_diversity(text: str, window: int = MATTR_WINDOW) -> LexicalDiversity:
    words = tokens(text)
    return LexicalDiversity(len(words), type_token_ratio(words), moving_average_ttr(words, window), mtld(words))


# --- repetition within a post ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Repetition:
    n: int                     # critiques (post_repetition) or posts (mean_repetition)
    jaccard: float             # mean pairwise word-set Jaccard; higher = more repetitive
    distinct_1: float | None   # distinct unigrams / all unigrams, pooled; lower = more repetitive
    distinct_2: float | None   # the same for bigrams (within a critique, never across two); None: no n-grams


def _jaccard(a: set[str], b: set[str]) -> float:
    union = a | b
    return len(a & b) / len(union) if union else 1.0  # two empty critiques repeat each other exactly


def _distinct(per_critique: Sequence[Sequence[str]], n: int) -> float | None:
    grams = [tuple(words[i:i + n]) for words in per_critique for i in range(len(words) - n + 1)]
    return len(set(grams)) / len(grams) if grams else None


def post_repetition(critiques: Sequence[str]) -> Repetition:
    """How much one critic's critiques of the same post repeat one another (at least two critiques)."""
    if isinstance(critiques, str) or len(critiques) < 2:
        raise ValueError("repetition is measured across at least two critiques of one post")
    per_critique = [tokens(c) for c in critiques]
    sets = [set(words) for words in per_critique]
    jaccard = statistics.fmean(_jaccard(a, b) for a, b in combinations(sets, 2))
    return Repetition(len(critiques), jaccard, _distinct(per_critique, 1), _distinct(per_critique, 2))


def mean_repetition(posts: Iterable[Sequence[str]]) -> Repetition | None:
    """``post_repetition`` averaged over posts (each weighs the same); None for no posts. A post's undefined
    distinct-n is left out of that mean."""
    scored = [post_repetition(critiques) for critiques in posts]
    if not scored:
        return None
    return Repetition(len(scored), statistics.fmean(r.jaccard for r in scored),
                      _mean_present([r.distinct_1 for r in scored]), _mean_present([r.distinct_2 for r in scored]))


def _mean_present(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.fmean(present) if present else None
