"""The user's config file: one YAML document that says where the warehouse and blobs live,
which sources feed the pool, and how each stage is tuned.

Relative paths in the file are resolved against the file's own folder, so a config works from
any working directory; that folder is also the warehouse's ``project_root`` unless the file names another, the
root every local file is named relative to in ids and rows. Which file is used: ``$AESFORGE_CONFIG``, else ``./aesforge.yaml``, else
the bundled sample config (``config/sample.yaml``, which reads the generated sample corpus).
"""

from __future__ import annotations

import functools
import importlib.util
import os
import pkgutil
from pathlib import Path
from types import ModuleType
from typing import Any, Callable

import assets
from pipelines.config_check import (
    ConfigError,
    Problem,
    construct,
    duplicate_keys,
    format_problems,
    known_keys_only,
    read_yaml,
    resolve_paths,
    unknown_key,
)
from resources.warehouse_settings import WarehouseSettings

REPO_ROOT = Path(__file__).resolve().parent.parent
SAMPLE_CONFIG = REPO_ROOT / "config" / "sample.yaml"


def pipeline_modules(name: str) -> list[ModuleType]:
    """The ``assets.<package>.<name>`` module of every package that has one, in package name order: each pipeline
    declares its own config sections (``settings``) and run report (``report``), so no list of them is kept."""
    names = (f"assets.{package.name}.{name}" for package in pkgutil.iter_modules(assets.__path__) if package.ispkg)
    return [importlib.import_module(module) for module in sorted(names) if importlib.util.find_spec(module)]


@functools.cache
def sections() -> dict[str, tuple[str, type]]:
    """Config section -> (Dagster resource key, class whose fields are the section's keys). Built on first use: the
    classes import Dagster, every client and dagster-aws, which a command that only reads the warehouse never needs."""
    from resources.sections import CONFIG_SECTIONS as CLIENT_SECTIONS

    return {
        **CLIENT_SECTIONS,
        **{section: entry for module in pipeline_modules("settings") for section, entry in module.CONFIG_SECTIONS.items()},
    }


@functools.cache
def schema_overrides() -> dict[tuple[type, str], type]:
    """Free ``dict`` fields whose keys are the fields of a dataclass, so they are checked against it. The other
    free mapping, ``photocritique.url_rewrite`` (URL prefix -> folder or mirror), has keys of the user's choosing."""
    from assets.image_pool.logic.perceptual import PerceptualParams
    from assets.image_pool.settings import DedupConfig

    return {(DedupConfig, "perceptual"): PerceptualParams}


def config_path() -> Path:
    explicit = os.environ.get("AESFORGE_CONFIG")
    if explicit:
        return Path(explicit).expanduser().resolve()
    local = Path.cwd() / "aesforge.yaml"
    return local.resolve() if local.is_file() else SAMPLE_CONFIG


def load_config(path: Path) -> dict[str, Any]:
    """Read, strictly check and path-resolve a config file.

    Every key is checked against its section's class and every section is built once, so a file that
    loads also builds its resources; otherwise ``ConfigError`` lists every problem, one line each. Every
    value its class marks as a path (``resources.config_paths``) is resolved, an absent one to its default.
    """
    raw, node = _read_sections(path)
    known = sections()
    problems = list(duplicate_keys(node))
    config: dict[str, Any] = {section: {} for section in known}
    for section, values in raw.items():
        if section not in known:
            problems.append(unknown_key((), section, known, noun="section"))
            continue
        config[section], unknown = known_keys_only({} if values is None else values, known[section][1], (section,),
                                                   schema_overrides())
        problems += unknown + _resource(section, config[section])[1]
    if "blob_root" in config["warehouse"]:
        problems.append(Problem(("warehouse", "blob_root"), "warehouse.blob_root: it is blob_store.root, set that"
                                " instead", at_key=True))
    if problems:
        raise ConfigError(format_problems(path, node, problems))
    resolve = _resolver(path)
    resolved = {section: resolve_paths(values, known[section][1], resolve) for section, values in config.items()}
    if not resolved["blob_store"].get("s3_bucket"):  # the views show local blobs as files under this folder
        resolved["warehouse"]["blob_root"] = resolved["blob_store"]["root"]
    return resolved


def warehouse_settings(path: Path) -> WarehouseSettings:
    """The ``warehouse`` section alone, checked and path-resolved as ``load_config`` does it, for a command that only
    reads the warehouse (``aesforge provenance``): no other section's class is built, so neither Dagster's resources
    nor the clients are imported. The other sections are not checked, and ``blob_root`` stays unset (the
    ``provenance`` macro shows no blob paths)."""
    raw, node = _read_sections(path)
    section = raw.get("warehouse")
    values, problems = known_keys_only({} if section is None else section, WarehouseSettings, ("warehouse",), {})
    problems = [*duplicate_keys(node), *problems]
    if problems:
        raise ConfigError(format_problems(path, node, problems))
    return WarehouseSettings(**resolve_paths(values, WarehouseSettings, _resolver(path)))


def _read_sections(path: Path) -> tuple[dict[str, Any], Any]:
    """The file's top-level mapping (empty for an empty file) and its YAML node."""
    raw, node = read_yaml(path)
    raw = {} if raw is None else raw
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: the top level must be a mapping of sections, not a {type(raw).__name__}")
    return raw, node


def _resolver(path: Path) -> Callable[[str], str]:
    """Relative paths of a config file resolve against the file's own folder."""
    base = path.parent

    def resolve(value: str) -> str:
        return str((base / Path(value).expanduser()).resolve())

    return resolve


def _resource(section: str, values: Any) -> tuple[Any, list[Problem]]:
    """The section's resource, or None and its problems; the nested ``s3`` resource is built as its own."""
    from dagster_aws.s3 import S3Resource

    from resources.blob_store import BlobStoreResource

    cls = sections()[section][1]
    if cls is not BlobStoreResource or not isinstance(values, dict):
        return construct(cls, values, (section,))
    values = dict(values)
    s3, problems = construct(S3Resource, values.pop("s3", None) or {}, (section, "s3"))
    return (None, problems) if problems else construct(cls, values, (section,), s3=s3)


def build_resources(config: dict[str, Any]) -> dict[str, Any]:
    """Dagster resources for every section of a config from ``load_config``."""
    resources, problems = {}, []
    for section, (key, _) in sections().items():
        resources[key], invalid = _resource(section, config[section])
        problems += invalid
    if problems:
        raise ConfigError("\n".join(f"invalid configuration: {problem.message}" for problem in problems))
    return resources
