"""What every similarity metric tells about itself, so that each stored score can name exactly what produced it.

A metric scores pairs element-wise: candidate i against reference i (or image i against text i).  Its
``name``, ``version()`` and ``parameters()`` together identify the scoring; a harness stores them next to
the scores.  ``unavailable()`` lets a harness skip a metric whose weights are not on this machine, with a
reason it can show, instead of failing half-way through a run.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from importlib import metadata
from typing import Any, ClassVar

SETTINGS_PREFIX = "evaluation.metrics"  # where a user configures a metric; reasons point there
BLANK_TEXT_SCORE = 0.0  # what embedding metrics give a pair with a blank side: there is nothing to compare


class MetricUnavailable(RuntimeError):
    """A metric was asked to score although it cannot run here; the message is its ``unavailable()`` reason."""


class Metric(ABC):
    """A named, versioned similarity metric."""

    name: ClassVar[str]
    needs_image: ClassVar[bool] = False  # True: score with ``score_images(images, texts)``, else ``score``
    libraries: ClassVar[tuple[str, ...]]  # distributions whose releases can change the scores
    scoring_version: ClassVar[int] = 1  # bump whenever this package changes how the metric's scores come out

    def version(self) -> str:
        """The libraries' installed versions and our scoring version, e.g. ``sacrebleu==2.6.0;scoring=1``."""
        pins = ";".join(f"{dist}=={metadata.version(dist)}" for dist in self.libraries)
        return f"{pins};scoring={self.scoring_version}"

    @abstractmethod
    def parameters(self) -> dict[str, Any]:
        """JSON-able settings that determine the scores (model, tokeniser, rescaling, ...)."""

    def unavailable(self) -> str | None:
        """None when the metric can run here, else a one-line reason; never raises, never downloads."""
        return None

    def _checked_scores(
        self,
        pairs: tuple[Sequence[Any], Sequence[Any]],
        names: tuple[str, str],
        score: Callable[[list[Any], list[Any]], list[float]],
    ) -> list[float]:
        """``score`` on the pairs once they are known to line up and the metric to be runnable."""
        firsts, seconds = paired(*pairs, *names)
        reason = self.unavailable()
        if reason is not None:
            raise MetricUnavailable(reason)
        return score(firsts, seconds) if firsts else []


class TextMetric(Metric):
    """Scores candidate texts against reference texts."""

    def score(self, candidates: Sequence[str], references: Sequence[str]) -> list[float]:
        """One score per (candidate, reference) pair, in input order."""
        return self._checked_scores((candidates, references), ("candidates", "references"), self._score_pairs)

    @abstractmethod
    def _score_pairs(self, candidates: list[str], references: list[str]) -> list[float]:
        """Scores for a non-empty list of pairs."""


class ImageTextMetric(Metric):
    """Scores texts against the images they describe (encoded image files, e.g. PNG or JPEG bytes)."""

    needs_image = True

    def score_images(self, images: Sequence[bytes], texts: Sequence[str]) -> list[float]:
        """One score per (image, text) pair, in input order."""
        return self._checked_scores((images, texts), ("images", "texts"), self._score_image_pairs)

    @abstractmethod
    def _score_image_pairs(self, images: list[bytes], texts: list[str]) -> list[float]:
        """Scores for a non-empty list of pairs."""


def paired(firsts: Sequence[Any], seconds: Sequence[Any], first_name: str, second_name: str) -> tuple[list, list]:
    """Both sides as lists of equal length; a bare string is refused, since it would be scored letter by letter."""
    for label, side in ((first_name, firsts), (second_name, seconds)):
        if isinstance(side, (str, bytes)):
            raise TypeError(f"{label} must be a sequence of items, not a single {type(side).__name__}")
    firsts, seconds = list(firsts), list(seconds)
    if len(firsts) != len(seconds):
        raise ValueError(f"{len(firsts)} {first_name} but {len(seconds)} {second_name}: scores are pair by pair")
    return firsts, seconds


def is_blank(text: str) -> bool:
    return not text.strip()


def scores_with_blanks(blank: Sequence[bool], score_rest: Callable[[list[int]], Sequence[float]]) -> list[float]:
    """``BLANK_TEXT_SCORE`` where ``blank``; the other positions scored by ``score_rest(their indices)``.

    Keeps blank text away from the models: an embedding of nothing carries no meaning, and bert_score fails
    on empty text under transformers 5.
    """
    rest = [index for index, skip in enumerate(blank) if not skip]
    scores = [BLANK_TEXT_SCORE] * len(blank)
    for index, value in zip(rest, score_rest(rest) if rest else [], strict=True):
        scores[index] = float(value)
    return scores
