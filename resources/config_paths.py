"""The mark on a settings field whose value is a filesystem path, so the config loader resolves it against the
config file's own folder (a config then works from any working directory) without a list of path keys per section.

It lives here, the lowest layer that has settings, because the clients (``warehouse.path``, ``blob_store.root``)
carry paths as well as every pipeline's settings, and resources never import assets.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Annotated, Any, Callable, Optional
from urllib.parse import urlsplit


@dataclass(frozen=True)
class PathField:
    """A path to resolve. An absent or empty value takes the field's default, resolved, or with ``under`` the
    resolved sibling field ``under`` joined with ``name``; a field defaulting to None stays unset. With ``when``,
    only values it accepts are paths (the others, a URL or a model tag, are kept as they are). ``output`` marks a
    place the pipeline writes (an export folder) rather than reads: no part of what a step's result depends on."""

    under: Optional[str] = None
    name: str = ""
    when: Optional[Callable[[str], bool]] = None
    output: bool = False


def not_url(value: str) -> bool:
    return urlsplit(value).scheme not in ("http", "https")


def looks_like_file(value: str) -> bool:
    """A checkpoint file rather than a tag (open_clip's ``pretrained`` takes both): it starts like a path or
    ends in a weights file's suffix."""
    return value.startswith((".", "/", "~")) or value.endswith((".pt", ".bin", ".safetensors"))


ConfigPath = Annotated[str, PathField()]
OutputPath = Annotated[str, PathField(output=True)]
"""A folder the pipeline writes to (exports, blank sheets)."""
LocalOrUrl = Annotated[str, PathField(when=not_url)]
"""A local folder or a URL (a mirror); only the folder is resolved."""
FileOrTag = Annotated[str, PathField(when=looks_like_file)]
"""A checkpoint file or the name of downloaded weights; only the file is resolved."""
ReturnedDir = Annotated[str, PathField(under="sheet_dir", name="returned")]
"""The folder filled review sheets come back to: ``<sheet_dir>/returned`` unless set."""


def marked_paths(settings: Any) -> Iterator[tuple[str, PathField]]:
    """Every path a built settings model holds, with its mark, in nested models, lists and dict values (a value its
    mark's ``when`` declines, a URL or a model tag, is not a path)."""
    for name, field in type(settings).model_fields.items():
        yield from _marked(getattr(settings, name), field.annotation, next(_marks(field.metadata), None))


def _marks(metadata: typing.Iterable[Any]) -> Iterator[PathField]:
    return (item for item in metadata if isinstance(item, PathField))


def _marked(value: Any, annotation: Any, mark: Optional[PathField]) -> Iterator[tuple[str, PathField]]:
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:
        yield from _marked(value, args[0], next(_marks(args[1:]), mark))
    elif origin in (typing.Union, types.UnionType):
        members = [a for a in args if a is not type(None)]
        yield from _marked(value, members[0] if len(members) == 1 else Any, mark)
    elif isinstance(value, str):
        if mark is not None and value and (mark.when is None or mark.when(value)):
            yield value, mark
    elif hasattr(type(value), "model_fields"):
        yield from marked_paths(value)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _marked(item, args[0] if args else Any, mark)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _marked(item, args[-1] if args else Any, mark)
