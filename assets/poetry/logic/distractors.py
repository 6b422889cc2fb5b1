"""Recognizability items: three distractor poems per image, chosen by textual similarity, and seeded option order.

Why: in phase 1 an annotator sees the image and four poems and picks the one it illustrates. Random distractors
would make the choice trivial (a frontier poem against three garden poems), so, as in the paper, the distractors
are the poems most similar in wording to the true one. The method, in full:

1. Features. Each poem becomes a bag of terms: the character 1-grams and 2-grams of its original text (for
   classical Chinese these are characters and character pairs; pairs are taken within a run of letters or
   digits, never across punctuation or a line break) and, when it has a translation, the lower-cased word
   unigrams of the translation. The two kinds are kept apart by a prefix, so an English "a" is not the
   character "a" of a romanised original.
2. Weights. TF-IDF: ``(1 + ln count) * (ln((1 + N) / (1 + df)) + 1)`` (sublinear term frequency, smoothed idf),
   each poem's vector scaled to unit length. Terms that occur in more than ``max_df`` of the poems (default half)
   say nothing about which poem is meant, so they are dropped from every vector.
3. Similarity. Cosine similarity, i.e. the dot product of the unit vectors. It is computed through an inverted
   index (term -> the poems holding it), so a poem is only ever compared with the poems it shares a term with;
   no poem-by-poem matrix is built. Similarities are rounded to 9 decimals so ties are stable.
4. Choice. The ``k`` most similar other poems, best first, ties broken by ``poem_id``. The true poem is never
   its own distractor, and neither is any poem with the same text (whitespace ignored): that would be a second
   correct answer. When fewer than ``k`` poems share a term, the rest are filled (similarity 0) by walking a
   seeded ring of all poems (ordered by ``digest_of([seed, poem_id])``) from a start point fixed by the true poem,
   so fillers are spread over the corpus and reproducible.

Option order: ``phase1_options`` shuffles the true poem and its three distractors with a ``random.Random``
seeded from ``digest_of([seed, item_id])``, so each image gets its own order and the same seed always gives the
same letters.
"""

from __future__ import annotations

import random
import re
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from assets.poetry.logic.poems import Poem
from warehouse.ids import digest_of

OPTION_LETTERS = ("A", "B", "C", "D")
DEFAULT_K = 3
DEFAULT_MAX_DF = 0.5
# Names the method above (features, weights, defaults, tie and filler rules) in provenance: change it with them.
DISTRACTOR_METHOD = f"tfidf-cosine:char-1-2-grams+translation-words:max_df={DEFAULT_MAX_DF}:ties-by-id:seeded-ring-fill:v1"
_SIMILARITY_DIGITS = 9
_RUN = re.compile(r"[^\W_]+")  # a run of letters / digits (CJK characters included)

# Reason codes.
CORPUS_TOO_SMALL = "corpus_too_small"
NOT_ENOUGH_CANDIDATES = "not_enough_candidates"
DUPLICATE_POEM_ID = "duplicate_poem_id"
BAD_OPTIONS = "bad_options"


class DistractorError(ValueError):
    """Distractors or options that cannot be made as asked; ``reason_code`` says why."""

    def __init__(self, reason_code: str, detail: str) -> None:
        super().__init__(f"{reason_code}: {detail}")
        self.reason_code = reason_code
        self.detail = detail


@dataclass(frozen=True)
class Distractor:
    poem_id: str
    similarity: float  # cosine of the TF-IDF vectors, 0 for a seeded filler


def poem_terms(poem: Poem) -> Counter[str]:
    """The poem's terms with their counts (step 1 of the method): ``c:`` character 1- and 2-grams of the
    original, ``w:`` word unigrams of the translation."""
    terms: Counter[str] = Counter()
    for run in _RUN.findall(poem.text.lower()):
        terms.update("c:" + char for char in run)
        terms.update("c:" + run[i:i + 2] for i in range(len(run) - 1))
    if poem.translation:
        terms.update("w:" + word for word in _RUN.findall(poem.translation.lower()))
    return terms


def _text_key(poem: Poem) -> str:
    return "".join(poem.text.split())


def distractors(poems: Sequence[Poem], k: int = DEFAULT_K, *, max_df: float = DEFAULT_MAX_DF,
                seed: int = 0) -> dict[str, tuple[Distractor, ...]]:
    """{poem_id: its ``k`` distractors, most similar first} for every poem (see the module docstring).
    ``seed`` only orders the fillers used when a poem shares terms with fewer than ``k`` others."""
    if k < 1:
        raise ValueError(f"k must be at least 1, not {k}")
    if not 0 < max_df <= 1:
        raise ValueError(f"max_df must be in (0, 1], not {max_df}")
    n = len(poems)
    if n < k + 1:
        raise DistractorError(CORPUS_TOO_SMALL, f"{n} poem(s): {k} distractors per poem need at least {k + 1} poems")
    ids = [poem.poem_id for poem in poems]
    if len(set(ids)) != n:
        repeated = sorted(poem_id for poem_id, count in Counter(ids).items() if count > 1)
        raise DistractorError(DUPLICATE_POEM_ID, f"poem_id(s) given more than once: {', '.join(repeated[:10])}")

    # Term ids and document frequencies, one pass.
    vocabulary: dict[str, int] = {}
    doc_terms: list[tuple[np.ndarray, np.ndarray]] = []  # (term ids, counts) per poem
    for poem in poems:
        counts = poem_terms(poem)
        term_ids = np.fromiter((vocabulary.setdefault(t, len(vocabulary)) for t in counts), dtype=np.int64,
                               count=len(counts))
        doc_terms.append((term_ids, np.fromiter(counts.values(), dtype=np.float64, count=len(counts))))
    df = np.zeros(len(vocabulary), dtype=np.int64)
    for term_ids, _ in doc_terms:
        df[term_ids] += 1
    kept = df <= max_df * n
    idf = np.log((1.0 + n) / (1.0 + df)) + 1.0

    # Unit TF-IDF vectors and the inverted index (terms in a single poem match nothing and are not indexed).
    vectors: list[tuple[np.ndarray, np.ndarray]] = []
    postings: dict[int, list[tuple[int, float]]] = defaultdict(list)
    for index, (term_ids, counts) in enumerate(doc_terms):
        mask = kept[term_ids]
        term_ids = term_ids[mask]
        weights = (1.0 + np.log(counts[mask])) * idf[term_ids]
        norm = float(np.sqrt((weights ** 2).sum()))
        weights = weights / norm if norm > 0 else weights
        vectors.append((term_ids, weights))
        for term, weight in zip(term_ids.tolist(), weights.tolist()):
            if df[term] > 1:
                postings[term].append((index, weight))
    index_arrays = {term: (np.array([i for i, _ in plist], dtype=np.int64), np.array([w for _, w in plist]))
                    for term, plist in postings.items()}
    del postings

    same_text: dict[str, list[int]] = defaultdict(list)
    for index, poem in enumerate(poems):
        same_text[_text_key(poem)].append(index)
    ring = sorted(range(n), key=lambda i: (digest_of([seed, ids[i]]), ids[i]))
    id_array = np.array(ids, dtype=object)

    position = {poem_id: index for index, poem_id in enumerate(ids)}
    result: dict[str, tuple[Distractor, ...]] = {}
    for index, poem in enumerate(poems):
        excluded = set(same_text[_text_key(poem)])  # the poem itself and any copy of its text
        chosen = _most_similar(vectors[index], index_arrays, excluded, id_array, k)
        if len(chosen) < k:
            start = int(digest_of([seed, poem.poem_id])[:16], 16) % n
            chosen += _fillers(ring, start, excluded | {position[d.poem_id] for d in chosen}, ids, k - len(chosen))
        if len(chosen) < k:
            raise DistractorError(NOT_ENOUGH_CANDIDATES,
                                  f"poem {poem.poem_id}: only {len(chosen)} other poem(s) with a different text; "
                                  f"{k} distractors are needed")
        result[poem.poem_id] = tuple(chosen)
    return result


def _most_similar(vector: tuple[np.ndarray, np.ndarray], index: dict[int, tuple[np.ndarray, np.ndarray]],
                  excluded: set[int], id_array: np.ndarray, k: int) -> list[Distractor]:
    term_ids, weights = vector
    parts_i, parts_w = [], []
    for term, weight in zip(term_ids.tolist(), weights.tolist()):
        posting = index.get(term)
        if posting is not None:
            parts_i.append(posting[0])
            parts_w.append(posting[1] * weight)
    if not parts_i:
        return []
    others, inverse = np.unique(np.concatenate(parts_i), return_inverse=True)
    scores = np.round(np.bincount(inverse, weights=np.concatenate(parts_w)), _SIMILARITY_DIGITS)
    keep = np.array([i not in excluded for i in others.tolist()], dtype=bool) & (scores > 0)
    others, scores = others[keep], scores[keep]
    if others.size == 0:
        return []
    order = _top(scores, id_array[others], k)
    return [Distractor(str(id_array[others[j]]), float(scores[j])) for j in order]


def _top(scores: np.ndarray, names: np.ndarray, k: int) -> list[int]:
    """Positions of the k best (highest score, then smallest poem_id) without sorting every candidate."""
    if scores.size <= k:
        candidates = np.arange(scores.size)
    else:
        cut = np.partition(scores, scores.size - k)[scores.size - k]  # the k-th highest score
        candidates = np.flatnonzero(scores >= cut)
    return sorted(candidates.tolist(), key=lambda j: (-scores[j], names[j]))[:k]


def _fillers(ring: list[int], start: int, excluded: set[int], ids: list[str], needed: int) -> list[Distractor]:
    out: list[Distractor] = []
    n = len(ring)
    for step in range(n):
        candidate = ring[(start + step) % n]
        if candidate in excluded:
            continue
        out.append(Distractor(ids[candidate], 0.0))
        if len(out) == needed:
            break
    return out


# --- phase-1 options ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Phase1Options:
    item_id: str
    options: tuple[str, str, str, str]  # poem ids under letters A, B, C, D
    correct_letter: str

    def letter_of(self, poem_id: str) -> str:
        return OPTION_LETTERS[self.options.index(poem_id)]

    def as_dict(self) -> dict[str, Any]:
        return {"item_id": self.item_id, "options": dict(zip(OPTION_LETTERS, self.options)),
                "correct_letter": self.correct_letter}


def option_rng(item_id: str, seed: int) -> random.Random:
    return random.Random(int(digest_of([seed, item_id])[:16], 16))


def phase1_options(item_id: str, true_poem_id: str, distractor_ids: Sequence[str], seed: int) -> Phase1Options:
    """The four options of one image's phase-1 question: ``[true, *distractors]`` shuffled by the item's seeded
    generator; ``correct_letter`` is where the true poem landed."""
    given = list(distractor_ids)
    problems = []
    if len(given) != len(OPTION_LETTERS) - 1:
        problems.append(f"{len(given)} distractors given, {len(OPTION_LETTERS) - 1} needed")
    if true_poem_id in given:
        problems.append(f"the true poem {true_poem_id} is among the distractors")
    if len(set(given)) != len(given):
        problems.append("the distractors repeat a poem")
    if problems:
        raise DistractorError(BAD_OPTIONS, f"item {item_id}: " + "; ".join(problems))
    options = [true_poem_id, *given]
    option_rng(item_id, seed).shuffle(options)
    return Phase1Options(item_id, (options[0], options[1], options[2], options[3]),
                         OPTION_LETTERS[options.index(true_poem_id)])

