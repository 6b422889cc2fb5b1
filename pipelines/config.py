"""The user's config file: one YAML document that says where the warehouse and blobs live,
which sources feed the pool, and how each stage is tuned.

Relative paths in the file are resolved against the file's own folder, so a config works from
any working directory. Which file is used: ``$AESFORGE_CONFIG``, else ``./aesforge.yaml``, else
the bundled sample config (``config/sample.yaml``, which reads the generated sample corpus).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from dagster_aws.s3 import S3Resource

from assets.context_canvas.settings import ContextSettings
from assets.counterfactual.edits import CounterfactualSettings
from assets.critique_canvas.critique_pairs import CritiqueSettings
from assets.designs.settings import DesignSettings
from assets.image_pool.logic.perceptual import PerceptualParams
from assets.image_pool.logic.sources import is_url
from assets.poetry.settings import PoetrySettings
from assets.photocritique.settings import PhotocritiqueSettings
from assets.image_pool.settings import DedupConfig, PoolSettings
from pipelines.config_check import (
    ConfigError,
    Problem,
    construct,
    duplicate_keys,
    format_problems,
    known_keys_only,
    read_yaml,
    unknown_key,
)
from resources.blob_store import BlobStoreResource
from resources.clip_embedder import ClipEmbedderResource
from resources.http_fetcher import HttpFetcherResource
from resources.image_editing import ImageEditorResource, ImageGeneratorsResource
from resources.model_providers import ModelProvidersResource
from resources.ocr import OcrResource
from resources.reddit_archive_api import RedditArchiveApiResource
from resources.reddit_live_api import RedditApiResource
from resources.warehouse import WarehouseResource

REPO_ROOT = Path(__file__).resolve().parent.parent
SAMPLE_CONFIG = REPO_ROOT / "config" / "sample.yaml"
SECTIONS: dict[str, tuple[str, type]] = {
    # config section: (Dagster resource key, class whose fields are the section's keys)
    "warehouse": ("warehouse", WarehouseResource),
    "blob_store": ("blob_store", BlobStoreResource),
    "fetch": ("http_fetcher", HttpFetcherResource),
    "clip": ("clip", ClipEmbedderResource),
    "pool": ("pool", PoolSettings),
    "photocritique": ("photocritique", PhotocritiqueSettings),
    "reddit_archive_api": ("reddit_archive_api", RedditArchiveApiResource),
    "reddit_api": ("reddit_api", RedditApiResource),
    "models": ("model_providers", ModelProvidersResource),
    "critique": ("critique", CritiqueSettings),
    "designs": ("designs", DesignSettings),
    "image_editor": ("image_editor", ImageEditorResource),
    "counterfactual": ("counterfactual", CounterfactualSettings),
    "poetry": ("poetry", PoetrySettings),
    "image_generators": ("image_generators", ImageGeneratorsResource),
    "ocr": ("ocr", OcrResource),
    "context_canvas": ("context_canvas", ContextSettings),
}
SCHEMA_OVERRIDES = {(DedupConfig, "perceptual"): PerceptualParams}
"""Free ``dict`` fields whose keys are the fields of a dataclass, so they are checked against it. The other
free mapping, ``photocritique.url_rewrite`` (URL prefix -> folder or mirror), has keys of the user's choosing."""


def config_path() -> Path:
    explicit = os.environ.get("AESFORGE_CONFIG")
    if explicit:
        return Path(explicit).expanduser().resolve()
    local = Path.cwd() / "aesforge.yaml"
    return local.resolve() if local.is_file() else SAMPLE_CONFIG


def load_config(path: Path) -> dict[str, Any]:
    """Read, strictly check and path-resolve a config file.

    Every key is checked against its section's class and every section is built once, so a file that
    loads also builds its resources; otherwise ``ConfigError`` lists every problem, one line each.
    """
    raw, node = read_yaml(path)
    raw = {} if raw is None else raw
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: the top level must be a mapping of sections, not a {type(raw).__name__}")
    problems = list(duplicate_keys(node))
    config: dict[str, Any] = {section: {} for section in SECTIONS}
    for section, values in raw.items():
        if section not in SECTIONS:
            problems.append(unknown_key((), section, SECTIONS, noun="section"))
            continue
        config[section], unknown = known_keys_only({} if values is None else values, SECTIONS[section][1], (section,),
                                                   SCHEMA_OVERRIDES)
        problems += unknown + _resource(section, config[section])[1]
    if problems:
        raise ConfigError(format_problems(path, node, problems))
    base = path.parent

    def resolve(value: str) -> str:
        return str((base / Path(value).expanduser()).resolve())

    if "path" in config["warehouse"]:
        config["warehouse"]["path"] = resolve(config["warehouse"]["path"])
    if "root" in config["blob_store"]:
        config["blob_store"]["root"] = resolve(config["blob_store"]["root"])
    pretrained = config["clip"].get("pretrained")
    if pretrained and (str(pretrained).startswith((".", "/", "~")) or str(pretrained).endswith((".pt", ".bin", ".safetensors"))):
        config["clip"]["pretrained"] = resolve(str(pretrained))
    pool = config["pool"]
    pool["manifests"] = [resolve(m) for m in pool.get("manifests") or []]
    pool["folders"] = [{**f, "path": resolve(f["path"])} for f in pool.get("folders") or []]
    critique = config["photocritique"]
    critique["id_lists"] = [resolve(p) for p in critique.get("id_lists") or []]
    critique["dumps"] = [resolve(p) for p in critique.get("dumps") or []]
    critique["export_dir"] = resolve(critique.get("export_dir") or "data/exports/photocritique")
    if critique.get("local_images"):
        critique["local_images"] = {**critique["local_images"], "path": resolve(critique["local_images"]["path"])}
    critique["url_rewrite"] = {
        prefix: target if is_url(target) else resolve(target) for prefix, target in (critique.get("url_rewrite") or {}).items()
    }
    canvas = config["critique"]
    canvas["export_dir"] = resolve(canvas.get("export_dir") or "data/exports/critique_canvas")
    audit = canvas["audit"] = dict(canvas.get("audit") or {})
    audit["sheet_dir"] = resolve(audit.get("sheet_dir") or "data/audit/critique_canvas")
    audit["returned_dir"] = resolve(audit.get("returned_dir") or str(Path(audit["sheet_dir"]) / "returned"))
    designs = config["designs"]
    for key in ("folders", "parquet", "font_dirs"):
        designs[key] = [resolve(p) for p in designs.get(key) or []]
    designs["export_dir"] = resolve(designs.get("export_dir") or "data/exports/aeseval")
    review = designs["review"] = dict(designs.get("review") or {})
    review["sheet_dir"] = resolve(review.get("sheet_dir") or "data/review/designs")
    review["returned_dir"] = resolve(review.get("returned_dir") or str(Path(review["sheet_dir"]) / "returned"))
    for key in ("specs", "checks"):
        if config["counterfactual"].get(key):
            config["counterfactual"][key] = resolve(config["counterfactual"][key])
    poetry = config["poetry"]
    for key in ("corpus", "surveys", "adjudication"):
        poetry[key] = [resolve(p) for p in poetry.get(key) or []]
    for key, default in (("survey_dir", "data/survey/poetry"), ("export_dir", "data/exports/poetry")):
        poetry[key] = resolve(poetry.get(key) or default)
    if poetry.get("stand_in_folder"):
        poetry["stand_in_folder"] = resolve(poetry["stand_in_folder"])
    cases = config["context_canvas"]
    cases["cases"] = [resolve(p) for p in cases.get("cases") or []]
    cases["sheet_dir"] = resolve(cases.get("sheet_dir") or "data/review/context")
    cases["returned_dir"] = resolve(cases.get("returned_dir") or str(Path(cases["sheet_dir"]) / "returned"))
    cases["export_dir"] = resolve(cases.get("export_dir") or "data/exports/context_canvas")
    config["warehouse"].setdefault("path", resolve("data/warehouse.duckdb"))
    config["blob_store"].setdefault("root", resolve("data/blobs"))
    return config


def _resource(section: str, values: Any) -> tuple[Any, list[Problem]]:
    """The section's resource, or None and its problems; the nested ``s3`` resource is built as its own."""
    cls = SECTIONS[section][1]
    if cls is not BlobStoreResource or not isinstance(values, dict):
        return construct(cls, values, (section,))
    values = dict(values)
    s3, problems = construct(S3Resource, values.pop("s3", None) or {}, (section, "s3"))
    return (None, problems) if problems else construct(cls, values, (section,), s3=s3)


def build_resources(config: dict[str, Any]) -> dict[str, Any]:
    """Dagster resources for every section of a config from ``load_config``."""
    resources, problems = {}, []
    for section, (key, _) in SECTIONS.items():
        resources[key], invalid = _resource(section, config[section])
        problems += invalid
    if problems:
        raise ConfigError("\n".join(f"invalid configuration: {problem.message}" for problem in problems))
    return resources
