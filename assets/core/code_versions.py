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

import ast
import hashlib
import importlib.util
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


ASSET_DECORATORS = frozenset({"asset", "multi_asset"})


@lru_cache(maxsize=None)
def _source(module: str) -> tuple[str, tuple[str, ...], bool]:
    """The source text of ``module``, the covered modules it imports (absolute imports, as aesforge writes) and
    whether it defines assets."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return "", (), False
    text = Path(spec.origin).read_text(encoding="utf-8")
    imported: set[str] = set()
    defines_assets = False
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.FunctionDef):
            defines_assets |= any(_name_of(d) in ASSET_DECORATORS for d in node.decorator_list)
        elif isinstance(node, ast.Import):
            imported |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            imported.add(node.module)
            imported |= {f"{node.module}.{alias.name}" for alias in node.names}  # a submodule imported by name
    return text, tuple(sorted(name for name in imported if covered(name) and _is_module(name))), defines_assets


def _name_of(decorator: ast.expr) -> str:
    """``asset`` for ``@asset``, ``@asset(...)`` and ``@dagster.asset(...)``."""
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    return target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")


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
