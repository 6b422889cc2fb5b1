"""Generation-style statistics of CritiqueCanvas answers (AesCanvas S2.3.2, Table S5), per answer and per model.

Why: reference-overlap metrics cannot tell a long generic critique from a focused one, so Table S5 adds lexical
diagnostics of verbosity, breadth and controllability (not correctness): length in words, Len/Ref, DimHits (how
many dimensions an answer explicitly addresses), aesthetic-term density per 100 words, Prompt Align (a focused
question's every dimension is addressed in the answer) and the Generic Top-3 dimensions (over answers to
questions that name no dimension).

Text is lower-cased and split into ``[a-z]+`` words, as in the paper. Before dimension matching, Markdown
heading lines and link targets are dropped (other markers hold no letters), so a section title such as
"## Lighting" does not count as addressing lighting; lengths count every word. Matching uses a versioned lexicon of words and
phrases per dimension, read longest phrase first, so "leading lines" counts once, for composition, and not also
as a line. It has no notion of negation: "no symbolism here" mentions symbolism. The ``question`` passed in must
be the current question alone (few-shot examples and earlier turns removed), since focus is detected in it.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from warehouse.ids import digest_of

LEXICON_VERSION = "1"

# The ten CritiqueCanvas dimensions (ids as in the construction pipeline's vocabulary) and the words or phrases that
# show an answer is explicitly about one. The domain criteria the construction prompts stress (photography: exposure,
# perspective, depth of field, focus, motion; painting: line, brushwork, genre, symbolism, emotional expression;
# virtual: character design, scene construction, rendering consistency, story setting, stylization) are criteria
# within these ten, so they are listed as terms of the dimension they belong to. Words that every critique question
# uses ("image", "aesthetic", "quality", "detail", "overall") are left out, or every question would look focused.
LEXICON: dict[str, tuple[str, ...]] = {
    "content_and_narrative": (
        "content", "subject", "subjects", "subject matter", "main subject", "narrative", "narratives", "story",
        "stories", "storytelling", "story world", "theme", "themes", "thematic", "depicts", "depicted", "depicting",
        "depiction", "scene", "setting", "character", "characters", "character design", "figure", "figures",
        "protagonist", "plot", "storyline",
    ),
    "composition": (
        "composition", "compositional", "composed", "framing", "framed", "crop", "cropped", "cropping", "balance",
        "balanced", "imbalance", "symmetry", "symmetrical", "asymmetry", "asymmetrical", "rule of thirds", "thirds",
        "focal point", "leading lines", "perspective", "vanishing point", "viewpoint", "vantage point",
        "camera angle", "foreground", "midground", "background", "negative space", "layout", "arrangement",
        "placement", "visual hierarchy", "horizon", "scene construction",
    ),
    "color": (
        "color", "colors", "colour", "colours", "colored", "coloured", "coloring", "colouring", "colorful",
        "colourful", "palette", "palettes", "hue", "hues", "saturation", "saturated", "desaturated", "monochrome",
        "monochromatic", "chromatic", "pastel", "pastels", "color harmony", "colour harmony", "color temperature",
        "colour temperature", "complementary colors", "complementary colours", "warm tones", "cool tones",
    ),
    "lighting": (
        "light", "lights", "lighting", "lit", "illumination", "illuminated", "illuminates", "shadow", "shadows",
        "highlight", "highlights", "backlight", "backlit", "backlighting", "exposure", "overexposed",
        "underexposed", "chiaroscuro", "sunlight", "daylight", "golden hour", "glow", "glowing", "brightness",
        "luminosity", "contrast", "tonal range", "dynamic range",
    ),
    "lines_and_brushstrokes": (
        "line", "lines", "linework", "line work", "line quality", "brushstroke", "brushstrokes", "brush stroke",
        "brush strokes", "brushwork", "stroke", "strokes", "impasto", "contour", "contours", "outline", "outlines",
        "hatching", "mark making", "texture", "textures", "textured",
    ),
    "style": (
        "style", "styles", "stylistic", "stylized", "stylised", "stylization", "stylisation", "genre", "genres",
        "art movement", "impressionism", "impressionist", "expressionism", "expressionist", "realism", "surreal",
        "surrealism", "surrealist", "abstract", "abstraction", "minimalism", "minimalist", "baroque", "renaissance",
        "cubism", "cubist", "pop art", "art nouveau", "ukiyo e", "anime", "cartoonish", "photorealistic",
        "painterly", "visual language",
    ),
    "emotion": (
        "emotion", "emotions", "emotional", "emotionally", "mood", "moods", "moody", "atmosphere", "atmospheric",
        "feeling", "feelings", "evoke", "evokes", "evoking", "evocative", "expressive", "melancholy", "melancholic",
        "serene", "serenity", "tranquil", "tranquility", "calm", "calming", "peaceful", "nostalgic", "nostalgia",
        "joyful", "sadness", "loneliness", "lonely", "tension", "tense", "dramatic", "drama", "somber", "sombre",
        "mysterious", "intimate", "intimacy",
    ),
    "technique": (
        "technique", "techniques", "technical", "technically", "craftsmanship", "execution", "executed", "rendering",
        "rendered", "rendering consistency", "depth of field", "bokeh", "in focus", "out of focus", "sharp focus",
        "sharpness", "blur", "blurred", "blurry", "motion blur", "long exposure", "shutter speed", "aperture",
        "lens", "post processing", "retouching", "resolution", "noise", "grain", "level of detail", "fine details",
        "proportion", "proportions", "anatomy", "skill", "skillful", "skilled",
    ),
    "symbolism": (
        "symbol", "symbols", "symbolic", "symbolism", "symbolize", "symbolizes", "symbolized", "symbolise",
        "symbolises", "symbolised", "symbolizing", "symbolising", "metaphor", "metaphors", "metaphorical", "allegory",
        "allegorical", "iconography", "iconographic", "motif", "motifs", "emblem", "emblematic", "signifies",
        "connotation", "connotations", "deeper meaning", "hidden meaning", "cultural significance",
    ),
    "visual_appeal": (
        "visual appeal", "aesthetic appeal", "appeal", "appealing", "attractive", "attractiveness", "beautiful",
        "beauty", "striking", "eye catching", "pleasing", "captivating", "stunning", "memorable", "harmonious",
        "harmony", "visual interest", "engaging", "elegant", "elegance",
    ),
}
DIMENSIONS: tuple[str, ...] = tuple(LEXICON)
DIMENSION_NAMES: dict[str, str] = {
    "content_and_narrative": "Content and narrative", "composition": "Composition", "color": "Color",
    "lighting": "Lighting", "lines_and_brushstrokes": "Lines and brushstrokes", "style": "Style",
    "emotion": "Emotion", "technique": "Technique", "symbolism": "Symbolism", "visual_appeal": "Visual appeal",
}
LEXICON_DIGEST = digest_of({"version": LEXICON_VERSION, "lexicon": LEXICON})

_WORD = re.compile(r"[a-z]+")
_HEADING_LINE = re.compile(r"^[ \t]{0,3}#{1,6}(?:[ \t].*)?$", re.M)
_LINK_TARGET = re.compile(r"\]\([^)]*\)")


def _phrases() -> dict[str, list[tuple[tuple[str, ...], str]]]:
    """First word -> (phrase words, dimension), longest phrase first; a phrase may belong to one dimension only."""
    owner: dict[tuple[str, ...], str] = {}
    for dimension, terms in LEXICON.items():
        for term in terms:
            words = tuple(_WORD.findall(term))
            if words in owner:
                raise ValueError(f"lexicon term {term!r} is listed under {owner[words]} and {dimension}")
            owner[words] = dimension
    by_first: dict[str, list[tuple[tuple[str, ...], str]]] = {}
    for words, dimension in sorted(owner.items(), key=lambda item: -len(item[0])):
        by_first.setdefault(words[0], []).append((words, dimension))
    return by_first


_BY_FIRST_WORD = _phrases()


def words(text: str) -> list[str]:
    """The paper's tokens: lower-cased runs of ``[a-z]``."""
    return _WORD.findall(text.lower())


def _matchable_words(text: str) -> list[str]:
    return words(_LINK_TARGET.sub("]", _HEADING_LINE.sub("", text)))


def term_hits(text: str) -> Counter[str]:
    """Per dimension, how many lexicon terms occur in ``text`` (repeats count), longest phrase first."""
    tokens = _matchable_words(text)
    hits: Counter[str] = Counter()
    i = 0
    while i < len(tokens):
        for phrase, dimension in _BY_FIRST_WORD.get(tokens[i], ()):
            if tuple(tokens[i:i + len(phrase)]) == phrase:
                hits[dimension] += 1
                i += len(phrase)
                break
        else:
            i += 1
    return hits


def dimensions_in(text: str) -> tuple[str, ...]:
    """The dimensions ``text`` explicitly addresses, in lexicon order."""
    hits = term_hits(text)
    return tuple(d for d in DIMENSIONS if hits[d])


# --- one answer ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CritiqueAnswer:
    """One model's answer to one CritiqueCanvas question; ``question`` is the current question only."""

    model: str
    question: str
    response: str
    references: tuple[str, ...] = ()


@dataclass(frozen=True)
class ResponseStats:
    words: int
    reference_words: float | None   # mean length of the item's references; None without one
    dimensions: tuple[str, ...]     # addressed by the response, lexicon order
    term_hits: int                  # matched term occurrences in the response
    focus: tuple[str, ...]          # dimensions the question names; empty for a generic question
    aligned: bool | None            # every focus dimension addressed; None for a generic question

    def as_dict(self) -> dict[str, Any]:
        return {"words": self.words, "reference_words": self.reference_words, "dimensions": list(self.dimensions),
                "term_hits": self.term_hits, "focus": list(self.focus), "aligned": self.aligned}


def response_stats(response: str, question: str, references: Sequence[str] = ()) -> ResponseStats:
    hits = term_hits(response)
    dimensions = tuple(d for d in DIMENSIONS if hits[d])
    focus = dimensions_in(question)
    reference_words = sum(len(words(r)) for r in references) / len(references) if references else None
    return ResponseStats(len(words(response)), reference_words, dimensions, sum(hits.values()), focus,
                         set(focus) <= set(dimensions) if focus else None)


# --- per model ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ModelResponseStats:
    model: str
    n: int                            # answers
    avg_length: float                 # mean words per answer
    len_ref: float | None             # mean answer length / mean reference length, over answers with a reference
    dim_hits: float                   # mean distinct dimensions per answer
    density: float | None             # matched term occurrences per 100 words, pooled over answers
    n_focused: int                    # answers to questions that name at least one dimension
    prompt_align: float | None        # share of those whose every named dimension is addressed
    n_generic: int                    # answers to questions that name none
    generic_top3: tuple[str, ...]     # most often addressed dimensions in those answers (ties: lexicon order)
    generic_counts: dict[str, int]    # per dimension, generic answers addressing it (dimensions with none left out)

    def as_dict(self) -> dict[str, Any]:
        return {"model": self.model, "n": self.n, "avg_length": self.avg_length, "len_ref": self.len_ref,
                "dim_hits": self.dim_hits, "density": self.density, "n_focused": self.n_focused,
                "prompt_align": self.prompt_align, "n_generic": self.n_generic, "generic_top3": list(self.generic_top3),
                "generic_counts": dict(self.generic_counts), "lexicon_version": LEXICON_VERSION,
                "lexicon_digest": LEXICON_DIGEST}


@dataclass
class _Totals:
    n: int = 0
    words: int = 0
    term_hits: int = 0
    dimension_hits: int = 0
    referenced_words: int = 0
    reference_words: float = 0.0
    n_referenced: int = 0
    n_focused: int = 0
    n_aligned: int = 0
    generic: Counter[str] = field(default_factory=Counter)
    n_generic: int = 0

    def add(self, stats: ResponseStats) -> None:
        self.n += 1
        self.words += stats.words
        self.term_hits += stats.term_hits
        self.dimension_hits += len(stats.dimensions)
        if stats.reference_words is not None:
            self.n_referenced += 1
            self.referenced_words += stats.words
            self.reference_words += stats.reference_words
        if stats.aligned is None:
            self.n_generic += 1
            self.generic.update(stats.dimensions)
        else:
            self.n_focused += 1
            self.n_aligned += stats.aligned

    def result(self, model: str) -> ModelResponseStats:
        len_ref = (self.referenced_words / self.reference_words
                   if self.n_referenced and self.reference_words else None)
        counts = {d: self.generic[d] for d in DIMENSIONS if self.generic[d]}
        top3 = tuple(sorted(counts, key=lambda d: (-counts[d], DIMENSIONS.index(d)))[:3])
        return ModelResponseStats(
            model=model, n=self.n, avg_length=self.words / self.n, len_ref=len_ref, dim_hits=self.dimension_hits / self.n,
            density=100.0 * self.term_hits / self.words if self.words else None, n_focused=self.n_focused,
            prompt_align=self.n_aligned / self.n_focused if self.n_focused else None, n_generic=self.n_generic,
            generic_top3=top3, generic_counts=counts)


def model_response_stats(answers: Iterable[CritiqueAnswer]) -> dict[str, ModelResponseStats]:
    """Table S5's row for each model, in one pass (memory per model, not per answer)."""
    totals: dict[str, _Totals] = {}
    for answer in answers:
        totals.setdefault(answer.model, _Totals()).add(
            response_stats(answer.response, answer.question, answer.references))
    return {model: totals[model].result(model) for model in sorted(totals)}
