"""The Dagster resource that says which CLIP weights embed images and how to run them.

The model code lives in ``resources.clip_embedding`` and is imported only when an embedder is
asked for, so the step processes that never embed do not pay for importing torch and open_clip.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from dagster import ConfigurableResource
from pydantic import Field

from resources.config_paths import FileOrTag

if TYPE_CHECKING:
    from resources.clip_embedding import ClipEmbedder

NO_WEIGHTS = ("no CLIP weights are configured: set `pretrained` to an open_clip tag whose weights are in the local"
              " cache, or to a local checkpoint file")


class ClipEmbedderResource(ConfigurableResource):
    """Which CLIP weights embed images for near-duplicate search, and how to run them."""

    model_name: str = Field(default="ViT-B-32", description="Built-in open_clip architecture name.")
    pretrained: Optional[FileOrTag] = Field(
        default=None,
        description="An open_clip pretrained tag whose weights are already in the local cache, or a checkpoint file path.",
    )
    allow_random_init: bool = Field(
        default=False,
        description="Tests/benchmarks only: use seeded random weights when `pretrained` is unset.",
    )
    seed: int = Field(default=0, description="torch seed for random init, so its embeddings are reproducible.")
    batch_size: int = Field(default=64, description="Images per forward pass.")
    device: str = Field(default="auto", description="torch device; 'auto' is cuda when available, else cpu.")
    cache_dir: Optional[str] = Field(
        default=None,
        description="open_clip/Hugging Face cache directory holding pre-fetched tag weights; unset means their defaults.",
    )
    decode_workers: Optional[int] = Field(
        default=None,
        ge=0,
        description="Processes decoding and resizing images for ClipEmbedder.embed_stream; unset means one per CPU"
                    " core (the step's own process mostly waits on the model), 0 decodes in the step's process.",
    )

    def unavailable(self) -> str | None:
        """Why no embedder can be built, when that is known from the settings alone (no weights configured): the
        caller then skips importing torch and open_clip, seconds and a gigabyte of memory for nothing."""
        if self.pretrained is None and not self.allow_random_init:
            return NO_WEIGHTS
        return None

    def embedding_space(self) -> tuple[str, int]:
        """The model key and dimension of the embeddings these settings make, without loading the model; raises
        ``resources.clip_embedding.ClipUnavailable`` with a reason."""
        from resources.clip_embedding import embedding_space

        return embedding_space(self.model_name, self.pretrained, allow_random_init=self.allow_random_init,
                               seed=self.seed, cache_dir=self.cache_dir)

    def get_embedder(self) -> ClipEmbedder:
        """Load (or reuse) the model; raises ``resources.clip_embedding.ClipUnavailable`` with a reason."""
        from resources.clip_embedding import load_embedder

        return load_embedder(
            self.model_name,
            self.pretrained,
            allow_random_init=self.allow_random_init,
            seed=self.seed,
            batch_size=self.batch_size,
            device=self.device,
            cache_dir=self.cache_dir,
            decode_workers=self.decode_workers,
        )
