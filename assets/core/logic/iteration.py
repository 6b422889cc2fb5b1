"""Batching for streams: stages work in bounded batches so memory stays flat and commits stay small."""

from collections.abc import Iterable, Iterator
from itertools import islice
from typing import TypeVar

T = TypeVar("T")


def batched(items: Iterable[T], size: int) -> Iterator[list[T]]:
    """Consecutive lists of at most ``size`` items, read lazily from ``items``."""
    iterator = iter(items)
    while chunk := list(islice(iterator, size)):
        yield chunk
