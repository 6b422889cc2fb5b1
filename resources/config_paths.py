"""The mark on a settings field whose value is a filesystem path, so the config loader resolves it against the
config file's own folder (a config then works from any working directory) without a list of path keys per section.

It lives here, the lowest layer that has settings, because the clients (``warehouse.path``, ``blob_store.root``)
carry paths as well as every pipeline's settings, and resources never import assets.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Callable, Optional
from urllib.parse import urlsplit


@dataclass(frozen=True)
class PathField:
    """A path to resolve. An absent or empty value takes the field's default, resolved, or with ``under`` the
    resolved sibling field ``under`` joined with ``name``; a field defaulting to None stays unset. With ``when``,
    only values it accepts are paths (the others, a URL or a model tag, are kept as they are)."""

    under: Optional[str] = None
    name: str = ""
    when: Optional[Callable[[str], bool]] = None


def not_url(value: str) -> bool:
    return urlsplit(value).scheme not in ("http", "https")


def looks_like_file(value: str) -> bool:
    """A checkpoint file rather than a tag (open_clip's ``pretrained`` takes both): it starts like a path or
    ends in a weights file's suffix."""
    return value.startswith((".", "/", "~")) or value.endswith((".pt", ".bin", ".safetensors"))


ConfigPath = Annotated[str, PathField()]
LocalOrUrl = Annotated[str, PathField(when=not_url)]
"""A local folder or a URL (a mirror); only the folder is resolved."""
FileOrTag = Annotated[str, PathField(when=looks_like_file)]
"""A checkpoint file or the name of downloaded weights; only the file is resolved."""
ReturnedDir = Annotated[str, PathField(under="sheet_dir", name="returned")]
"""The folder filled review sheets come back to: ``<sheet_dir>/returned`` unless set."""
