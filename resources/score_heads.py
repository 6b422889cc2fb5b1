"""Score heads over CLIP image embeddings, loaded from local weight files: the pool's model-based filters (an
aesthetic predictor, a content-safety classifier). Nothing is ever downloaded.

Three formats. ``exported_program``: any head saved with ``torch.export.save`` (exported with a dynamic batch
dimension); ``torchscript``: any head saved with ``torch.jit.save``. Both carry their architecture, so no code of ours
has to match it. ``linear_chain``: a state dict of affine layers applied in order with nothing between them,
which is how LAION's aesthetic predictors are published (the linear head, and the "improved" MLP whose dropout
layers do nothing at inference); the chain is folded into one affine map when loaded.

Imported only by the step that scores, so processes that never filter by model do not import torch.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from warehouse.ids import sha256_file

FORMATS = ("exported_program", "torchscript", "linear_chain")
SCORE_BLOCK = 4096  # embeddings per forward pass


class HeadUnavailable(RuntimeError):
    """The configured head cannot be used (missing or unreadable file, wrong input size, not one score per image)."""


@dataclass(frozen=True)
class ScoreHead:
    """A loaded head: ``scores`` maps an (n, dim) float32 array of embeddings to n float64 scores."""

    weights_sha256: str
    format: str
    dim: int
    forward: Callable[[np.ndarray], np.ndarray]

    @property
    def version(self) -> str:
        return f"sha256:{self.weights_sha256[:16]}"

    def scores(self, embeddings: np.ndarray) -> np.ndarray:
        embeddings = np.asarray(embeddings, dtype=np.float32)
        if embeddings.ndim != 2 or embeddings.shape[1] != self.dim:
            raise ValueError(f"expected embeddings of shape (n, {self.dim}), got {embeddings.shape}")
        if len(embeddings) == 0:
            return np.zeros(0)
        return np.concatenate([self.forward(embeddings[i:i + SCORE_BLOCK])
                               for i in range(0, len(embeddings), SCORE_BLOCK)])


def load_head(path: Path, fmt: str, dim: int) -> ScoreHead:
    """Load the head at ``path`` for embeddings of ``dim`` values and check, on a probe batch, that it gives one
    finite-typed score per embedding; raises HeadUnavailable naming the file and what is wrong."""
    if fmt not in FORMATS:
        raise HeadUnavailable(f"unknown head format {fmt!r} (known: {', '.join(FORMATS)})")
    if not path.is_file():
        raise HeadUnavailable(f"weights file {path.name} does not exist ({path})")
    try:
        forward = _linear_chain(path, dim) if fmt == "linear_chain" else _module(path, fmt)
    except HeadUnavailable:
        raise
    except Exception as exc:  # an unreadable or foreign file is a configuration problem, said in one line
        raise HeadUnavailable(f"could not load {path.name} as {fmt}: {_one_line(exc)}") from exc
    head = ScoreHead(sha256_file(path), fmt, dim, forward)
    try:
        probe = head.scores(np.zeros((3, dim), dtype=np.float32))
    except Exception as exc:
        raise HeadUnavailable(f"{path.name} does not take embeddings of {dim} values: {_one_line(exc)}") from exc
    if probe.shape != (3,):
        raise HeadUnavailable(f"{path.name} gives output of shape {probe.shape} for 3 embeddings; one score each is needed")
    return head


def _one_line(exc: Exception) -> str:
    """The exception's last message line (torch's carry a whole TorchScript traceback before it)."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    last = lines[-1][:300] if lines else ""
    return last if last.startswith(f"{type(exc).__name__}:") else f"{type(exc).__name__}: {last}"


def _module(path: Path, fmt: str) -> Callable[[np.ndarray], np.ndarray]:
    if fmt == "torchscript":
        module = torch.jit.load(str(path), map_location="cpu")
        module.eval()
    else:
        module = torch.export.load(str(path)).module()

    def forward(block: np.ndarray) -> np.ndarray:
        with torch.inference_mode():
            out = module(torch.from_numpy(block))
        out = out.detach().to(torch.float64).numpy()
        return out.reshape(len(block)) if out.size == len(block) else out

    return forward


def _linear_chain(path: Path, dim: int) -> Callable[[np.ndarray], np.ndarray]:
    state = torch.load(str(path), map_location="cpu", weights_only=True)  # tensors only: never runs pickled code
    if isinstance(state, dict) and isinstance(state.get("state_dict"), dict):
        state = state["state_dict"]
    if not isinstance(state, dict) or not state:
        raise HeadUnavailable(f"{path.name} is not a state dict of layers")
    weight, bias = fold_affine_chain(_affine_layers(state), dim)

    def forward(block: np.ndarray) -> np.ndarray:
        return block.astype(np.float64) @ weight + bias

    return forward


def _affine_layers(state: dict) -> list[tuple[str, np.ndarray, np.ndarray | None]]:
    """(name, weight, bias) of every ``<name>.weight`` in the state dict, in the dict's (the model's) order."""

    def array(tensor: torch.Tensor) -> np.ndarray:
        return tensor.detach().to(torch.float64).numpy()

    layers = []
    for key, value in state.items():
        if key == "weight" or key.endswith(".weight"):
            prefix = key[: -len("weight")]
            bias = state.get(prefix + "bias")
            layers.append((prefix.rstrip("."), array(value), None if bias is None else array(bias)))
    return layers


def fold_affine_chain(layers: list[tuple[str, np.ndarray, np.ndarray | None]], dim: int) -> tuple[np.ndarray, float]:
    """One (weight vector, bias) equal to applying the layers (name, (out, in) weight, bias) in order to a ``dim``
    vector, checking that each layer's input is the previous one's output and that the last gives one value."""
    if not layers:
        raise HeadUnavailable("the state dict holds no layer weights")
    weight, bias = np.eye(dim), np.zeros(dim)  # the map so far: x -> weight @ x + bias
    for name, w, b in layers:
        if w.ndim != 2 or w.shape[1] != len(bias):
            raise HeadUnavailable(f"layer {name or 'weight'} of shape {tuple(w.shape)} does not take the"
                                  f" {len(bias)} values the input or the layer before gives")
        weight, bias = w @ weight, w @ bias + (0 if b is None else b)
    if weight.shape[0] != 1:
        raise HeadUnavailable(f"the last layer gives {weight.shape[0]} values; a score head gives one")
    return weight[0], float(bias[0])
