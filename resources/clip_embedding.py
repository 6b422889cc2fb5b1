"""open_clip image embeddings for near-duplicate search (no Dagster here, so it also runs bare on a GPU box).

Weights are only ever read from local files: this pipeline runs on machines
without internet, where open_clip's own download path retries for most of a
minute before failing.  A pretrained tag is therefore resolved against the
local caches first, and a missing file becomes a ``ClipUnavailable`` at once,
with a reason a user can act on.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Optional, TypeVar

import numpy as np
import open_clip
import torch
import torch.nn.functional as F
from huggingface_hub import try_to_load_from_cache
from huggingface_hub.constants import HF_HUB_CACHE
from open_clip.constants import HF_WEIGHTS_NAME
from open_clip.pretrained import _get_safe_alternatives  # the pinned open_clip's own .safetensors preference
from PIL import Image

from resources.clip_embedder import NO_WEIGHTS
from resources.clip_pixels import InputGeometry, Loader, PixelsFailed, model_inputs
from warehouse.ids import sha256_file

OPENCLIP_URL_CACHE = Path("~/.cache/clip").expanduser()  # where open_clip keeps URL downloads without cache_dir
K = TypeVar("K")


class ClipUnavailable(RuntimeError):
    """Carries a plain-language reason why the CLIP pass cannot run (shown to users, stored in the warehouse)."""


class ClipEmbedder:
    """Turns images into L2-normalised float32 CLIP image embeddings, a batch at a time.

    ``embed_stream`` is the way in for many images: decoding and resizing run in ``decode_workers`` processes,
    batches go to the model as uint8 pixels (pinned, copied without blocking on CUDA) and are normalised there,
    and each batch's results are read back while the next one runs, so the device waits on neither.
    """

    def __init__(
        self,
        model: torch.nn.Module,
        *,
        model_key: str,
        dim: int,
        device: str,
        batch_size: int,
        decode_workers: int,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        if decode_workers < 0:
            raise ValueError(f"decode_workers must be >= 0, got {decode_workers}")
        self.model_key = model_key
        self.dim = dim
        self.device = device
        self.batch_size = batch_size
        self.decode_workers = decode_workers
        self._model = model
        cfg = open_clip.get_model_preprocess_cfg(model)
        self.geometry = InputGeometry.from_preprocess_cfg(cfg)
        self._mean = torch.tensor(cfg["mean"], dtype=torch.float32, device=device).view(1, -1, 1, 1)
        self._std = torch.tensor(cfg["std"], dtype=torch.float32, device=device).view(1, -1, 1, 1)

    def embed_stream(
        self, work: Iterable[tuple[K, Loader]], *, decode_workers: Optional[int] = None
    ) -> Iterator[tuple[K, np.ndarray | PixelsFailed]]:
        """``(key, embedding)`` or ``(key, PixelsFailed)`` for each ``(key, loader)`` work item, in input order.

        A loader is a zero-argument callable returning a PIL image, called in a decode worker process, so it must
        pickle: a module-level function, or ``functools.partial`` of one over picklable arguments (a path, the
        file's bytes). Workers are spawned (never forked, see ``resources.clip_pixels``) and import the loader's
        module, which should then import neither torch nor Dagster. Whatever the loader or the resize raises becomes that item's
        ``PixelsFailed`` (type, message, where), never its batch's; embeddings are (dim,) float32 unit vectors.
        ``decode_workers`` overrides the embedder's (0: decode in this process, which accepts any callable). At most
        about two batches are decoded ahead of the consumer, so memory is flat in the number of items; results
        arrive a batch at a time. A model failure (out of device memory) raises: it concerns the whole step. E.g.::

            work = ((row.image_id, partial(pixels_from_file, path_of(row))) for row in rows)
            for image_id, result in embedder.embed_stream(work):
                if isinstance(result, PixelsFailed): ...  # that image's rejection, or raise it to quarantine it
                else: ...  # store the embedding
        """
        workers = self.decode_workers if decode_workers is None else decode_workers
        inputs = model_inputs(work, self.geometry, workers=workers, window=max(2 * self.batch_size, 4 * workers))
        running: Optional[tuple[list[tuple[K, np.ndarray | PixelsFailed]], _OnDevice]] = None
        for batch in _batches_of_inputs(inputs, self.batch_size):
            started = batch, self._start([v for _, v in batch if isinstance(v, np.ndarray)])
            if running is not None:  # read back only once the next batch is queued behind it
                yield from _landed(*running)
            running = started
        if running is not None:
            yield from _landed(*running)

    def embed_images(self, images: Iterable[Image.Image]) -> np.ndarray:
        """All embeddings as one (n, dim) array, decoded in this process; the first image that fails raises."""
        rows = []
        for index, result in self.embed_stream(((i, lambda image=image: image) for i, image in enumerate(images)),
                                               decode_workers=0):
            if isinstance(result, PixelsFailed):
                raise ValueError(f"image {index} could not be embedded: {result}") from result
            rows.append(result)
        return np.stack(rows) if rows else np.empty((0, self.dim), np.float32)

    def _start(self, pixels: list[np.ndarray]) -> _OnDevice:
        """Queue one batch of uint8 (H, W, 3) model inputs on the device; on CUDA this returns before it is done."""
        if not pixels:
            return _OnDevice(torch.empty((0, self.dim)), None)
        cuda = self.device.startswith("cuda")
        # page-locked on CUDA, so the copy to the device runs asynchronously; the arrays are copied once, into it
        batch = torch.empty((len(pixels), *pixels[0].shape), dtype=torch.uint8, pin_memory=cuda)
        np.stack(pixels, out=batch.numpy())
        with torch.inference_mode():
            batch = batch.to(self.device, non_blocking=cuda)
            # open_clip's ToTensor and Normalize, on the device and for the whole batch
            inputs = batch.permute(0, 3, 1, 2).float().div_(255).sub_(self._mean).div_(self._std).contiguous()
            with self._autocast():
                features = self._model.encode_image(inputs)
            unit = F.normalize(features.float(), dim=-1).to("cpu", non_blocking=cuda)
        if not cuda:
            return _OnDevice(unit, None)
        done = torch.cuda.Event()
        done.record(torch.cuda.current_stream(torch.device(self.device)))  # the model's GPU, which need not be GPU 0
        return _OnDevice(unit, done)

    def _autocast(self) -> contextlib.AbstractContextManager[Any]:
        """Half precision on CUDA only, where tensor cores make it pay; CPU runs keep exact fp32 results."""
        if not self.device.startswith("cuda"):
            return contextlib.nullcontext()
        dtype = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        return torch.autocast(device_type="cuda", dtype=dtype)


@dataclass(frozen=True)
class _OnDevice:
    """A batch's embeddings on their way back to the host; ``done`` is the CUDA event that marks them complete."""

    embeddings: torch.Tensor
    done: Optional[torch.cuda.Event]


def _batches_of_inputs(
    inputs: Iterable[tuple[K, np.ndarray | PixelsFailed]], size: int
) -> Iterator[list[tuple[K, np.ndarray | PixelsFailed]]]:
    """Consecutive items holding ``size`` model inputs each (the last may hold fewer); failures ride along in order."""
    batch: list[tuple[K, np.ndarray | PixelsFailed]] = []
    ready = 0
    for key, value in inputs:
        batch.append((key, value))
        ready += isinstance(value, np.ndarray)
        if ready == size:
            yield batch
            batch, ready = [], 0
    if batch:
        yield batch


def _landed(
    batch: list[tuple[K, np.ndarray | PixelsFailed]], on_device: _OnDevice
) -> Iterator[tuple[K, np.ndarray | PixelsFailed]]:
    if on_device.done is not None:
        on_device.done.synchronize()  # this batch only: the one queued after it keeps the device busy
    rows = iter(on_device.embeddings.numpy())
    for key, value in batch:
        yield key, value if isinstance(value, PixelsFailed) else next(rows)


@dataclass(frozen=True)
class _Weights:
    """Where the weights come from; hashable so loaded models can be cached per source."""

    tag: Optional[str] = None  # canonical open_clip pretrained tag
    checkpoint: Optional[str] = None  # local file to load (a cached tag file or a user checkpoint)
    file_stamp: Optional[tuple[int, int]] = None  # (size, mtime_ns) of a user checkpoint, so an edited file reloads


def load_embedder(
    model_name: str,
    pretrained: Optional[str],
    *,
    allow_random_init: bool = False,
    seed: int = 0,
    batch_size: int = 64,
    device: str = "auto",
    cache_dir: Optional[str] = None,
    decode_workers: Optional[int] = None,
) -> ClipEmbedder:
    """Build (or reuse, within this process) the model and wrap it in a ClipEmbedder.

    Raises ClipUnavailable when no weights are configured, or when they cannot be
    found or loaded locally.
    """
    resolved_device = _resolve_device(device)
    weights = _resolve_weights(model_name, pretrained, allow_random_init, cache_dir)
    model, _, model_key = _load_model(model_name, weights, seed, resolved_device)
    return ClipEmbedder(
        model,
        model_key=model_key,
        dim=int(open_clip.get_model_config(model_name)["embed_dim"]),
        device=resolved_device,
        batch_size=batch_size,
        decode_workers=(os.cpu_count() or 1) if decode_workers is None else decode_workers,
    )


def embedding_space(
    model_name: str, pretrained: Optional[str], *, allow_random_init: bool = False, seed: int = 0,
    cache_dir: Optional[str] = None,
) -> tuple[str, int]:
    """The model key and dimension of the embeddings these settings make, without building the model: a step that
    reads stored embeddings (the pool's model filters) needs to know which, not the model. Raises ClipUnavailable."""
    weights = _resolve_weights(model_name, pretrained, allow_random_init, cache_dir)
    return _model_key(model_name, weights, seed), int(open_clip.get_model_config(model_name)["embed_dim"])


def _resolve_device(device: str) -> str:
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    try:
        parsed = torch.device(device)
    except RuntimeError as exc:
        raise ClipUnavailable(f"device {device!r} is not a torch device name ({exc})") from exc
    if parsed.type == "cuda" and (parsed.index or 0) >= torch.cuda.device_count():
        raise ClipUnavailable(
            f"device {device!r} was requested but torch sees {torch.cuda.device_count()} CUDA GPU(s) on this machine"
        )
    return device


def _resolve_weights(
    model_name: str, pretrained: Optional[str], allow_random_init: bool, cache_dir: Optional[str]
) -> _Weights:
    if open_clip.get_model_config(model_name) is None:
        raise ClipUnavailable(
            f"{model_name!r} is not a built-in open_clip architecture (see open_clip.list_models())"
        )
    if pretrained is None:
        if not allow_random_init:
            raise ClipUnavailable(NO_WEIGHTS)
        return _Weights()
    tag_cfg = open_clip.get_pretrained_cfg(model_name, pretrained)
    if tag_cfg:
        tag = next(  # the canonical spelling, so equivalent spellings give one model_key
            t for t in open_clip.list_pretrained_tags_by_model(model_name)
            if open_clip.get_pretrained_cfg(model_name, t) is tag_cfg
        )
        return _Weights(tag=tag, checkpoint=_cached_tag_file(model_name, tag, tag_cfg, cache_dir))
    path = Path(pretrained).expanduser()
    if not path.is_file():
        known = ", ".join(open_clip.list_pretrained_tags_by_model(model_name)) or "none"
        raise ClipUnavailable(
            f"CLIP checkpoint file {path} does not exist, and {pretrained!r} is not an open_clip "
            f"pretrained tag for {model_name} (known tags: {known})"
        )
    stat = path.stat()
    return _Weights(checkpoint=str(path.resolve()), file_stamp=(stat.st_size, stat.st_mtime_ns))


def _cached_tag_file(model_name: str, tag: str, tag_cfg: dict[str, Any], cache_dir: Optional[str]) -> str:
    """The tag's weights file from the Hugging Face or open_clip URL cache, looked up without any network call.

    Mirrors where open_clip's own download would have put the file (``download_pretrained``).
    """
    if "file" in tag_cfg and Path(tag_cfg["file"]).is_file():
        return str(tag_cfg["file"])
    if tag_cfg.get("hf_hub"):
        repo_id, filename = os.path.split(tag_cfg["hf_hub"])
        filename = filename or HF_WEIGHTS_NAME
        for candidate in (*_get_safe_alternatives(filename), filename):
            cached = try_to_load_from_cache(repo_id, candidate, cache_dir=cache_dir)
            if isinstance(cached, str):
                return cached
    url_cache = Path(cache_dir) if cache_dir else OPENCLIP_URL_CACHE
    if tag_cfg.get("url"):
        cached_url_file = url_cache / os.path.basename(tag_cfg["url"])
        if cached_url_file.is_file():
            return str(cached_url_file)
    hf_cache = cache_dir or HF_HUB_CACHE
    raise ClipUnavailable(
        f"weights for open_clip tag {tag!r} of {model_name} are not in the local cache (looked in {hf_cache} "
        f"and {url_cache}); the pipeline never downloads weights, so pre-fetch them into that cache or set "
        "`pretrained` to a local checkpoint file"
    )


@lru_cache(maxsize=4)
def _load_model(
    model_name: str, weights: _Weights, seed: int, device: str
) -> tuple[torch.nn.Module, Callable[[Image.Image], torch.Tensor], str]:
    """Build once per (architecture, weights, seed, device) in this process; models are read-only at inference."""
    tag_cfg = open_clip.get_pretrained_cfg(model_name, weights.tag) if weights.tag else {}
    try:
        # The seed fixes random init (tests, benchmarks) without disturbing the caller's global RNG.
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            model, _, preprocess = open_clip.create_model_and_transforms(
                model_name,
                pretrained=weights.checkpoint,
                device=device,
                pretrained_text=False,  # never fetch separate text-tower weights from the Hub
                # A tag's weights were trained with these settings; loading its file by path must keep them.
                force_quick_gelu=bool(tag_cfg.get("quick_gelu", False)),
                image_mean=tag_cfg.get("mean"),
                image_std=tag_cfg.get("std"),
                image_interpolation=tag_cfg.get("interpolation"),
                image_resize_mode=tag_cfg.get("resize_mode"),
            )
    except Exception as exc:  # corrupt file, wrong architecture, unreadable format: all configuration problems
        if weights.checkpoint is None:
            raise
        raise ClipUnavailable(f"could not load CLIP weights {weights.checkpoint} into {model_name}: {exc}") from exc
    model.eval()
    return model, preprocess, _model_key(model_name, weights, seed)


def _model_key(model_name: str, weights: _Weights, seed: int) -> str:
    return f"{model_name}@{_weights_label(weights, seed)}"


def _weights_label(weights: _Weights, seed: int) -> str:
    if weights.tag is not None:
        return weights.tag
    if weights.checkpoint is not None:
        return f"ckpt:sha256:{sha256_file(Path(weights.checkpoint))[:16]}"
    return f"random-init(seed={seed})"
