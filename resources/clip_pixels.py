"""CLIP model input pixels, made in decode worker processes: load, resize and crop, convert to RGB.

Only Pillow and numpy run in a worker (this module imports nothing else), so a spawned worker starts in a tenth
of a second where importing torch would take seconds and about 600 MB. The mean/std normalisation is left to the
embedder, which does it for a whole batch on the device, and what crosses back from a worker is the model's uint8
input (150 KB at 224 px), a quarter of its float32 tensor.
"""

from __future__ import annotations

import traceback
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from itertools import islice
from multiprocessing import get_context
from typing import Any, TypeVar

import numpy as np
from PIL import Image, ImageOps

K = TypeVar("K")
Loader = Callable[[], Image.Image]  # a zero-argument callable giving one image; must pickle to run in a worker
MAX_CHUNK = 16  # work items per task sent to a worker: fewer round trips, while the window stays spread over workers
# Workers are spawned, never forked: the step process that embeds holds DuckDB connections and torch, neither of
# which survives a fork (DuckDB's threads are not in the child, duckdb/duckdb-python#292; a forked child of a step
# process died with SIGSEGV in our tests). A spawned worker imports the loader's module and this one (Pillow and
# numpy), once per embedding pass.
START_METHOD = "spawn"


class PixelsFailed(Exception):
    """One work item gave no model input: its loader, or the resize, raised. Carries the original error's type,
    message and where it was raised, since a worker's exception and traceback need not cross back intact."""

    def __init__(self, error_type: str, message: str, where: str) -> None:
        super().__init__(error_type, message, where)
        self.error_type, self.message, self.where = error_type, message, where

    def __str__(self) -> str:
        return f"{self.error_type}: {self.message} (raised in {self.where})"

    @classmethod
    def of(cls, exc: Exception) -> PixelsFailed:
        frames = traceback.extract_tb(exc.__traceback__)
        where = f"{frames[-1].name} at {frames[-1].filename}:{frames[-1].lineno}" if frames else "?"
        return cls(type(exc).__name__, " ".join(str(exc).split())[:500], where)


@dataclass(frozen=True)
class InputGeometry:
    """How open_clip's eval transform resizes and crops an image (``open_clip.transform.image_transform``: resize
    modes ``shortest``, ``longest``, ``squash``), in Pillow alone and to the same pixels as its torchvision
    transforms, which the tests check."""

    height: int
    width: int
    resize_mode: str
    resample: int  # a Pillow resampling filter
    fill: int = 0  # padding value where ``longest`` leaves the image smaller than the input

    @classmethod
    def from_preprocess_cfg(cls, cfg: Mapping[str, Any]) -> InputGeometry:
        """From ``open_clip.get_model_preprocess_cfg(model)``, the settings the model's own transform is built from."""
        size = cfg["size"]
        height, width = (size, size) if isinstance(size, int) else size
        resize_mode = cfg.get("resize_mode") or "shortest"
        if resize_mode not in ("shortest", "longest", "squash"):
            raise ValueError(f"unknown open_clip resize_mode {resize_mode!r}")
        resample = Image.Resampling.BILINEAR if cfg.get("interpolation") == "bilinear" else Image.Resampling.BICUBIC
        return cls(int(height), int(width), resize_mode, int(resample), int(cfg.get("fill_color") or 0))

    def __call__(self, image: Image.Image) -> np.ndarray:
        """The model input as a (height, width, 3) uint8 array: resized, cropped or padded, then RGB."""
        new_height, new_width = self._resized_size(image.height, image.width)
        if (new_height, new_width) != (image.height, image.width):
            image = image.resize((new_width, new_height), self.resample)
        if self.resize_mode != "squash":
            image = self._center_crop_or_pad(image)
        return np.asarray(image.convert("RGB"))

    def _resized_size(self, height: int, width: int) -> tuple[int, int]:
        if self.resize_mode == "squash":
            return self.height, self.width
        if self.resize_mode == "shortest" and self.height == self.width:  # torchvision Resize(int): long side truncated
            short, long = min(height, width), max(height, width)
            new_long = int(self.height * long / short)
            return (new_long, self.height) if width <= height else (self.height, new_long)
        # open_clip's ResizeKeepRatio: the shortest (or longest) side's ratio, sides rounded
        ratios = (height / self.height, width / self.width)
        ratio = max(ratios) if self.resize_mode == "longest" else min(ratios)
        return round(height / ratio), round(width / ratio)

    def _center_crop_or_pad(self, image: Image.Image) -> Image.Image:
        """torchvision's center crop (open_clip's ``center_crop_or_pad``): pad a short side, then crop the middle."""
        pad_w, pad_h = max(self.width - image.width, 0), max(self.height - image.height, 0)
        if pad_w or pad_h:
            fill = self.fill if len(image.getbands()) == 1 else (self.fill,) * len(image.getbands())
            image = ImageOps.expand(image, (pad_w // 2, pad_h // 2, (pad_w + 1) // 2, (pad_h + 1) // 2), fill)
        top, left = int(round((image.height - self.height) / 2.0)), int(round((image.width - self.width) / 2.0))
        if (top, left, image.height, image.width) == (0, 0, self.height, self.width):
            return image
        return image.crop((left, top, left + self.width, top + self.height))


def model_input(geometry: InputGeometry, loader: Loader) -> np.ndarray | PixelsFailed:
    """One work item's model input, or why it has none: whatever its loader or the resize raises is this item's
    failure, never its batch's."""
    try:
        image = loader()
        if not isinstance(image, Image.Image):
            raise TypeError(f"the loader gave a {type(image).__name__}, not a PIL.Image.Image")
        return geometry(image)
    except Exception as exc:  # noqa: BLE001 - isolation is the point: the caller decides what a failure means
        return PixelsFailed.of(exc)


def _model_inputs_of_chunk(geometry: InputGeometry, loaders: Sequence[Loader]) -> list[np.ndarray | PixelsFailed]:
    """A worker's task: several items, each isolated."""
    return [model_input(geometry, loader) for loader in loaders]


def model_inputs(
    work: Iterable[tuple[K, Loader]], geometry: InputGeometry, *, workers: int, window: int
) -> Iterator[tuple[K, np.ndarray | PixelsFailed]]:
    """Each work item's key with its model input (or its :class:`PixelsFailed`), in input order.

    ``workers`` = 0 makes them here, one by one as they are asked for. Otherwise that many spawned processes make
    them, a few items per task, at most ``window`` items ahead of the consumer, so memory does not grow with the
    number of items; a loader then has to pickle (a module-level function, or ``functools.partial`` of one).
    """
    if workers == 0:
        for key, loader in work:
            yield key, model_input(geometry, loader)
        return
    chunk = max(1, min(MAX_CHUNK, window // (4 * workers)))
    tasks: deque[tuple[tuple[K, ...], Future[list[np.ndarray | PixelsFailed]]]] = deque()
    items = iter(work)
    with ProcessPoolExecutor(workers, mp_context=get_context(START_METHOD)) as pool:
        try:
            while part := list(islice(items, chunk)):
                keys, loaders = zip(*part)
                tasks.append((keys, pool.submit(_model_inputs_of_chunk, geometry, loaders)))
                if len(tasks) * chunk >= window:
                    keys, task = tasks.popleft()
                    yield from zip(keys, task.result())
            while tasks:
                keys, task = tasks.popleft()
                yield from zip(keys, task.result())
        finally:  # the consumer stopped early, or a task failed as a whole: start nothing more
            for _, task in tasks:
                task.cancel()
