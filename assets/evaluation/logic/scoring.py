"""Scoring an evaluation run: each item's predictions against its references, metric by metric, aggregated per
item the way the benchmark's paper does (r/photocritique: the 3×3 max-mapping; CritiqueCanvas: one response
against its one reference, the same arithmetic on a 1×1 matrix), and the human agreement baseline computed the
same way from the references alone (leave-one-out).

Items are scored a chunk at a time: each metric sees every pair of the chunk in one call, so learned metrics
batch across items, and memory stays bounded by the chunk.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from assets.core.logic.iteration import batched
from assets.evaluation.logic.benchmark_items import BenchmarkItem
from assets.evaluation.logic.max_mapping import MAX_MAPPING, aggregate, leave_one_out_from_matrix
from assets.evaluation.logic.metrics.base import ImageTextMetric, Metric, TextMetric
from assets.evaluation.logic.item_statistics import Statistics, word_statistics

_CHUNK_ITEMS = 64


@dataclass(frozen=True)
class ItemScore:
    item_id: str
    metric: str
    value: float | None  # None: the item could not be scored by the metric (no image, no references)


def score_items(pairs: Iterable[tuple[BenchmarkItem, Sequence[str]]], metrics: Sequence[Metric],
                image_of: Callable[[BenchmarkItem], bytes | None], aggregation: str = MAX_MAPPING,
                statistics: Statistics = word_statistics) -> Iterator[ItemScore]:
    """Each (item, its predictions) scored by every available metric, and its predictions' ``statistics``.
    Reference metrics compare every prediction with every reference and aggregate the matrix; an image-text
    metric (CLIP score) scores each prediction against the item's image and averages over the predictions."""
    for chunk in batched(pairs, _CHUNK_ITEMS):
        for item, predictions in chunk:
            yield from (ItemScore(item.id, name, value) for name, value in statistics(item, predictions))
        for metric in metrics:
            if isinstance(metric, TextMetric):
                yield from _reference_scores(metric, chunk, aggregation)
            elif isinstance(metric, ImageTextMetric):
                yield from _image_scores(metric, chunk, image_of)


def _reference_scores(metric: TextMetric, chunk: list[tuple[BenchmarkItem, Sequence[str]]],
                      aggregation: str) -> Iterator[ItemScore]:
    candidates, references = [], []
    for item, predictions in chunk:
        for prediction in predictions:
            for reference in item.references:
                candidates.append(prediction)
                references.append(reference)
    values = iter(metric.score(candidates, references) if candidates else [])
    for item, predictions in chunk:
        k, m = len(predictions), len(item.references)
        if not k or not m:
            yield ItemScore(item.id, metric.name, None)
            continue
        matrix = np.array([next(values) for _ in range(k * m)], dtype=float).reshape(k, m)
        yield ItemScore(item.id, metric.name, aggregate(matrix, aggregation).score)


def _image_scores(metric: ImageTextMetric, chunk: list[tuple[BenchmarkItem, Sequence[str]]],
                  image_of: Callable[[BenchmarkItem], bytes | None]) -> Iterator[ItemScore]:
    images, texts, owners = [], [], []
    for item, predictions in chunk:
        image = image_of(item)
        if image is None:
            continue
        for prediction in predictions:
            images.append(image)
            texts.append(prediction)
            owners.append(item.id)
    per_item: dict[str, list[float]] = {}
    for owner, value in zip(owners, metric.score_images(images, texts) if images else []):
        per_item.setdefault(owner, []).append(value)
    for item, _ in chunk:
        values = per_item.get(item.id)
        yield ItemScore(item.id, metric.name, float(np.mean(values)) if values else None)


def human_baseline(items: Iterable[BenchmarkItem], metrics: Sequence[Metric], aggregation: str = MAX_MAPPING,
                   statistics: Statistics = word_statistics) -> Iterator[ItemScore]:
    """The leave-one-out agreement of each item's references with one another (each in turn the candidate, the
    others its references), per reference metric, and the references' ``statistics``: the scale the
    predictions' scores are read on. Items with fewer than two references have none."""
    text_metrics = [m for m in metrics if isinstance(m, TextMetric)]
    for chunk in batched(items, _CHUNK_ITEMS):
        for item in chunk:
            yield from (ItemScore(item.id, name, value) for name, value in statistics(item, item.references))
        for metric in text_metrics:
            firsts, seconds = [], []
            for item in chunk:
                if len(item.references) >= 2:
                    for i, a in enumerate(item.references):
                        for j, b in enumerate(item.references):
                            if i != j:
                                firsts.append(a)
                                seconds.append(b)
            values = iter(metric.score(firsts, seconds) if firsts else [])
            for item in chunk:
                m = len(item.references)
                if m < 2:
                    yield ItemScore(item.id, metric.name, None)
                    continue
                matrix = np.zeros((m, m))
                for i in range(m):
                    for j in range(m):
                        if i != j:
                            matrix[i, j] = next(values)
                yield ItemScore(item.id, metric.name, leave_one_out_from_matrix(matrix, aggregation).score)
