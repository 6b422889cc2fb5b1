"""Code versions that change when an asset's logic changes, without anyone remembering to bump them.

An asset's code version is its declared version (the ``code_version=`` of its decorator: the lever for a change
the digest cannot see) joined with a digest of the source of its module and of every aesforge module that module
imports, transitively, within the asset packages: its own package's helpers and ``logic/`` and any other
package's ``logic/``. The shared plumbing (``assets.core``'s step, item loop and model-call modules, the
warehouse, the resources) is left out: it moves data, it does not decide what the data is, and a change there
would otherwise mark every asset stale at once. A plumbing change that does alter outputs bumps the declared
versions of the assets it alters.

Dagster compares these versions with the one each materialization recorded, so the UI marks an asset whose
logic changed as unsynced and ``aesforge run`` rebuilds it (and what reads it) while skipping the rest.
"""

from __future__ import annotations

import hashlib
import importlib.util
import re
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path

from dagster import AssetsDefinition

ASSET_PACKAGES = "assets."
PLUMBING = "assets.core."
PLUMBING_LOGIC = "assets.core.logic"  # pure functions shared by the pipelines: they decide what the data is


def covered(module: str) -> bool:
    """Whether ``module`` counts towards an asset's code version (see the module docstring)."""
    if not module.startswith(ASSET_PACKAGES):
        return False
    return not module.startswith(PLUMBING) or module.startswith(PLUMBING_LOGIC)


# Read from the source text line by line rather than through ``ast``: every step process loads the definitions and so
# computes every asset's version, and parsing and walking the trees of all asset modules cost most of a second there.
_FROM_IMPORT = re.compile(r"^[ \t]*from[ \t]+([\w.]+)[ \t]+import[ \t]+(\([^)]*\)|[^\n]*)", re.MULTILINE)
_IMPORT = re.compile(r"^[ \t]*import[ \t]+([\w.]+(?:[ \t]*,[ \t]*[\w.]+)*)", re.MULTILINE)
_ASSET_DECORATOR = re.compile(r"^[ \t]*@(?:dagster\.)?(?:asset|multi_asset)\b", re.MULTILINE)


@lru_cache(maxsize=None)
def _source(module: str) -> tuple[str, tuple[str, ...], bool]:
    """The source text of ``module``, the covered modules it imports (absolute imports, as aesforge writes, at any
    depth: a function's own imports count) and whether it defines assets (an ``@asset`` / ``@multi_asset`` line)."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return "", (), False
    text = Path(spec.origin).read_text(encoding="utf-8")
    imported = {name.strip() for found in _IMPORT.finditer(text) for name in found[1].split(",")}
    for found in _FROM_IMPORT.finditer(text):
        imported.add(found[1])
        names = re.sub(r"#[^\n]*", "", found[2]).strip("() \t\n")
        imported |= {f"{found[1]}.{name.split()[0]}" for name in names.split(",") if name.strip()}  # a submodule by name
    defines_assets = _ASSET_DECORATOR.search(text) is not None
    return text, tuple(sorted(name for name in imported if covered(name) and _is_module(name))), defines_assets


def _is_module(name: str) -> bool:
    """Whether ``name`` is a module (``from m import f`` also names ``m.f``, which may be a function)."""
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return False


def module_closure(module: str) -> list[str]:
    """``module`` and every covered module it reaches through imports, sorted, not entering the modules of other
    assets: they are imported to name dependencies, and their changes reach this asset through data versions."""
    seen, todo = set(), [module]
    while todo:
        name = todo.pop()
        if name not in seen and (name == module or not _source(name)[2]):
            seen.add(name)
            todo.extend(_source(name)[1])
    return sorted(seen)


@lru_cache(maxsize=None)
def _prompts(package: str) -> tuple[tuple[str, bytes], ...]:
    """The prompt templates of pipeline ``package`` (its ``prompts`` folder): text the models are asked with,
    part of the logic though not Python."""
    spec = importlib.util.find_spec(package)
    folder = Path(spec.origin).parent / "prompts" if spec and spec.origin else None
    if folder is None or not folder.is_dir():
        return ()
    return tuple((f"{package}.prompts/{path.name}", path.read_bytes()) for path in sorted(folder.glob("*.txt")))


def source_digest(modules: Iterable[str]) -> str:
    """A digest of the modules' names and source text, and of their packages' prompt templates (12 hex digits:
    enough to tell versions apart)."""
    digest = hashlib.sha256()
    modules = sorted(modules)
    for name in modules:
        digest.update(name.encode() + b"\0" + _source(name)[0].encode() + b"\0")
    for package in sorted({".".join(name.split(".")[:2]) for name in modules}):
        for name, content in _prompts(package):
            digest.update(name.encode() + b"\0" + content + b"\0")
    return digest.hexdigest()[:12]


def defining_module(assets_def: AssetsDefinition) -> str:
    """The module whose function computes ``assets_def``."""
    compute = assets_def.node_def.compute_fn  # type: ignore[union-attr]
    return getattr(compute, "decorated_fn", compute).__module__


def code_version(declared: str | None, assets_def: AssetsDefinition) -> str:
    """``<declared>+<digest>``: the declared version (``1`` when none) and the digest of the asset's source."""
    return f"{declared or '1'}+{source_digest(module_closure(defining_module(assets_def)))}"
