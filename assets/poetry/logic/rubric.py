"""The poem-illustration rubric (TangPoetryBench, appendix C): ten dimensions, their option letters and scores.

Why a table and not code per dimension: the survey, the scoring, the agreement statistics and the model judge
must all read the same letters the same way. Every option maps to a score in [0, 1], evenly spaced from the
best option (1) to the worst (0), or to ``None`` when it says the dimension does not apply to the image
("not applicable" answers are dropped from that image's score, never counted as failures).

Two dimensions keep the paper's letters out of score order: in scene consistency a contradiction (c) is worse
than a setting that is mentioned but not shown (d), and in emotional resonance "no emotion expected and none
shown" (c) is not applicable while d, e and f are graded. The letters are what annotators saw in the survey,
so they are kept as the survey used them.

Text integrity is asked in the survey as a yes/no question (a: no text issue, b: a text issue); its final
label per image comes from OCR or adjudication (``assets/poetry/logic/text_labels.py``), not from this vote.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

RUBRIC_VERSION = "tang-poetry-rubric-v1"


class RubricError(ValueError):
    """An answer that is not one of the dimension's option letters."""


@dataclass(frozen=True)
class Option:
    letter: str
    meaning: str
    score: float | None  # None: the dimension does not apply to this image

    @property
    def applicable(self) -> bool:
        return self.score is not None


@dataclass(frozen=True)
class Dimension:
    key: str
    name: str
    group: str  # visual quality | correspondence | poetic meaning | holistic
    asks: str   # what an annotator judges, in our words
    options: tuple[Option, ...]

    def option(self, letter: str) -> Option:
        wanted = letter.strip().lower()
        for option in self.options:
            if option.letter == wanted:
                return option
        allowed = ", ".join(o.letter for o in self.options)
        raise RubricError(f"{self.key}: {letter!r} is not an option (allowed: {allowed})")

    def score(self, letter: str) -> float | None:
        """The option's score in [0, 1], or None when it marks the dimension as not applicable."""
        return self.option(letter).score

    @property
    def levels(self) -> tuple[float, ...]:
        """The distinct scores of the graded options, best first: the ordinal scale agreement is measured on."""
        return tuple(sorted({o.score for o in self.options if o.score is not None}, reverse=True))

    def level(self, letter: str) -> int | None:
        """0 for the best level, 1 for the next, ...; None when not applicable. Options with equal scores
        (emotion's "conflicting" and "jarring") share a level."""
        score = self.score(letter)
        return None if score is None else self.levels.index(score)

    @property
    def binary(self) -> bool:
        return len(self.levels) == 2


def _options(*rows: tuple[str, str, float | None]) -> tuple[Option, ...]:
    return tuple(Option(letter, meaning, score) for letter, meaning, score in rows)


DIMENSIONS: tuple[Dimension, ...] = (
    Dimension("safety", "Safety", "visual quality", "whether the image is free of inappropriate or harmful content",
              _options(("a", "no issues", 1.0), ("b", "mild issues", 0.5), ("c", "serious issues", 0.0))),
    Dimension("technical_quality", "Technical quality", "visual quality", "clarity, resolution and colour rendering",
              _options(("a", "clear", 1.0), ("b", "minor flaws", 0.5), ("c", "poor", 0.0))),
    Dimension("ai_plausibility", "AI plausibility", "visual quality",
              "whether structures, anatomy and objects are free of generation artefacts",
              _options(("a", "no artefacts", 1.0), ("b", "minor artefacts", 0.67), ("c", "obvious artefacts", 0.33),
                       ("d", "severe artefacts", 0.0))),
    Dimension("text_integrity", "Text integrity", "visual quality",
              "whether the image is free of the poem's own text and of fake, garbled or unrelated characters",
              _options(("a", "no text issue", 1.0), ("b", "a text issue", 0.0))),
    Dimension("scene_consistency", "Scene consistency", "correspondence",
              "whether season, time of day and setting match the poem",
              _options(("a", "matches", 1.0), ("b", "slight mismatch", 0.67), ("d", "mentioned in the poem but not shown", 0.33),
                       ("c", "contradicts the poem", 0.0), ("e", "the poem sets no scene", None))),
    Dimension("cultural_coherence", "Cultural coherence", "correspondence",
              "whether dress, architecture and objects fit the poem's era",
              _options(("a", "coherent", 1.0), ("b", "minor issues", 0.5), ("c", "major errors", 0.0),
                       ("d", "the poem names no such elements", None))),
    Dimension("artistic_style", "Artistic style", "correspondence", "whether the style suits classical painting",
              _options(("a", "suitable", 1.0), ("b", "slightly unsuitable", 0.5), ("c", "clashing", 0.0))),
    Dimension("core_imagery", "Core imagery", "poetic meaning", "whether the poem's central image and meaning are depicted",
              _options(("a", "highly accurate", 1.0), ("b", "partial", 0.67), ("c", "inaccurate", 0.33), ("d", "unrelated", 0.0))),
    Dimension("emotional_resonance", "Emotional resonance", "poetic meaning", "whether the image carries the poem's emotion",
              _options(("a", "fully matches", 1.0), ("b", "roughly matches", 0.67), ("d", "expected but not visible", 0.33),
                       ("e", "a conflicting emotion", 0.0), ("f", "none expected, a jarring one added", 0.0),
                       ("c", "none expected and none shown", None))),
    Dimension("overall_impression", "Overall impression", "holistic", "the image as an illustration of this poem, as a whole",
              _options(("a", "excellent", 1.0), ("b", "good", 0.75), ("c", "fair", 0.5), ("d", "negative", 0.25),
                       ("e", "completely unsuitable", 0.0))),
)

DIMENSION_KEYS: tuple[str, ...] = tuple(d.key for d in DIMENSIONS)
HOLISTIC = "overall_impression"
TEXT_INTEGRITY = "text_integrity"


@cache
def dimension(key: str) -> Dimension:
    for d in DIMENSIONS:
        if d.key == key:
            return d
    raise RubricError(f"unknown dimension {key!r} (known: {', '.join(DIMENSION_KEYS)})")
