"""Strict config: every unknown key, wrong value and YAML error is one line naming file, line, column and key."""

from __future__ import annotations

import os
import subprocess
import sys
import typing
from pathlib import Path
from typing import Any, Optional

import pytest
from pydantic import BaseModel

from assets.critique_canvas.settings import CritiqueAuditSettings
from assets.designs.settings import ReviewConfig
from pipelines.config import REPO_ROOT, SAMPLE_CONFIG, build_resources, load_config, schema_overrides, sections
from pipelines.config_check import ConfigError, _fields, _unwrap, known_keys_only

AESFORGE = str(Path(sys.executable).parent / "aesforge")


def _error(tmp_path: Path, text: str | bytes) -> str:
    """The ConfigError message for a config file with this content."""
    path = tmp_path / "bad.yaml"
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    with pytest.raises(ConfigError) as raised:
        load_config(path)
    return str(raised.value)


UNKNOWN_KEYS = [  # (file text, expected line after the file name): section, nested block, list item, dict override
    ("warehouse:\n  lock_timeout: 3\n", "2:3: warehouse: unknown key 'lock_timeout'; did you mean 'lock_timeout_s'?"),
    ("fetch:\n  timeot_s: 20\n", "2:3: fetch: unknown key 'timeot_s'; did you mean 'timeout_s'?"),
    ("clip:\n  pretrianed: x\n", "2:3: clip: unknown key 'pretrianed'; did you mean 'pretrained'?"),
    ("pool:\n  filters:\n    licence_allowlist: [CC0-1.0]\n",
     "3:5: pool.filters: unknown key 'licence_allowlist'; did you mean 'license_allowlist'?"),
    ("pool:\n  folders:\n    - path: x\n      licence: CC0-1.0\n",
     "4:7: pool.folders[0]: unknown key 'licence'; did you mean 'license'?"),
    ("pool:\n  dedup:\n    perceptual: {phash_radious: 3}\n",
     "3:18: pool.dedup.perceptual: unknown key 'phash_radious'; did you mean 'phash_radius'?"),
    ("poetry:\n  qc: {min_secnds: 15}\n", "2:8: poetry.qc: unknown key 'min_secnds'; did you mean 'min_seconds'?"),
    ("models:\n  planner: {provider: heuristic, modle: x}\n",
     "2:34: models.planner: unknown key 'modle'; did you mean 'model'?"),
    ("image_generators:\n  generators:\n    - {name: a, model: m}\n    - {name: b, model: m, sise: 1024x1024}\n",
     "4:27: image_generators.generators[1]: unknown key 'sise'; did you mean 'size'?"),
    ("critique:\n  audit:\n    min_reviewer: 3\n", "3:5: critique.audit: unknown key 'min_reviewer'; did you mean 'min_reviewers'?"),
    ("designs:\n  review: {sheetdir: x}\n", "2:12: designs.review: unknown key 'sheetdir'; did you mean 'sheet_dir'?"),
    ("designs:\n  perturb: {variant_per_design: 2}\n",
     "2:13: designs.perturb: unknown key 'variant_per_design'; did you mean 'variants_per_design'?"),
    ("blob_store:\n  s3: {region: eu-west-1}\n", "2:8: blob_store.s3: unknown key 'region'; did you mean 'region_name'?"),
    ("photocritique:\n  local_images: {path: x, patern: y}\n",
     "2:27: photocritique.local_images: unknown key 'patern'; did you mean 'pattern'?"),
    ("pol:\n  batch_size: 3\n", "1:1: unknown section 'pol'; did you mean 'pool'?"),
    ("ocr:\n  zzz: 1\n", "2:3: ocr: unknown key 'zzz'; expected one of max_side, min_score, model_dir, threads"),
]
WRONG_VALUES = [  # pydantic type and value errors, a non-mapping section, a duplicate key
    ("pool:\n  filters: {min_side: abc}\n",
     "2:23: pool.filters.min_side: Input should be a valid integer, unable to parse string as an integer (got 'abc')"),
    ("pool:\n  dedup: {perceptual: {dhash_radius: x}}\n",
     "2:38: pool.dedup.perceptual.dhash_radius: Input should be a valid integer, unable to parse string as an integer (got 'x')"),
    ("pool:\n  folders:\n    - {provider: me}\n", "3:7: pool.folders[0].path: required key missing"),
    ("models:\n  planner: {provider: openia}\n",
     "2:23: models.planner.provider: Input should be 'openai', 'gemini' or 'heuristic' (got 'openia')"),
    # the value of a key named like a secret is never echoed
    ("models:\n  planner: {provider: openai, api_key_env: 5}\n", "2:44: models.planner.api_key_env: Input should be a valid string"),
    ("image_generators:\n  generators:\n    - {name: 'a b', model: m}\n",
     "3:14: image_generators.generators[0].name: generator name 'a b' may only contain letters, digits, '.', '_' and '-' (got 'a b')"),
    ("fetch: [1, 2]\n", "1:8: fetch: expected a mapping of keys, got list"),
    ("pool:\n  batch_size: 3\n  batch_size: 4\n", "3:3: pool: duplicate key 'batch_size' (first at line 2); remove one"),
]
SYNTAX_ERRORS = [  # a YAML syntax error or a non-UTF-8 byte: the line and column PyYAML (or the decoder) stopped at
    ("pool:\n  filters:\n    min_side: 3\n   max_side: 4\n",
     "4:4: expected <block end>, but found '<block mapping start>' (while parsing a block mapping that starts at line 2, column 3)"),
    ("pool: [a, b\n", "2:1: expected ',' or ']', but got '<stream end>' (while parsing a flow sequence that starts at line 1, column 7)"),
    ("pool:\n\tfilters: {}\n", "2:1: found character '\\t' that cannot start any token (while scanning for the next token)"),
    ("pool: {}\n---\nfetch: {}\n",
     "2:1: expected a single document in the stream that starts at line 1, column 1, but found another document"),
    ("pool: !!python/object:os.system {}\n", "1:7: could not determine a constructor for the tag 'tag:yaml.org,2002:python/object:os.system'"),
    (b"pool:\n  manifests: [\"caf\xe9.csv\"]\n", "2:19: not valid UTF-8 (byte 0xe9); save the file as UTF-8"),
]


@pytest.mark.parametrize(("text", "expected"), UNKNOWN_KEYS + WRONG_VALUES + SYNTAX_ERRORS)
def test_each_problem_is_one_line_with_file_line_column_key_and_hint(tmp_path, text, expected):
    assert _error(tmp_path, text) == f"{tmp_path / 'bad.yaml'}:{expected}"


def test_every_problem_of_a_file_is_reported_one_line_each_in_file_order(tmp_path):
    lines = _error(tmp_path, "pool:\n  filters: {min_side: abc, licence_allowlist: []}\nfetch:\n  timeot_s: 1\n").splitlines()
    assert [line.split(": ", 1)[1] for line in lines] == [
        "pool.filters.min_side: Input should be a valid integer, unable to parse string as an integer (got 'abc')",
        "pool.filters: unknown key 'licence_allowlist'; did you mean 'license_allowlist'?",
        "fetch: unknown key 'timeot_s'; did you mean 'timeout_s'?",
    ]


def test_a_missing_file_or_a_top_level_list_is_one_line(tmp_path):
    with pytest.raises(ConfigError, match=r"^config file not found: .*nope\.yaml$"):
        load_config(tmp_path / "nope.yaml")
    assert _error(tmp_path, "- pool\n") == f"{tmp_path / 'bad.yaml'}: the top level must be a mapping of sections, not a list"


def test_a_block_left_empty_takes_its_defaults_and_free_mappings_take_any_key(tmp_path):
    path = tmp_path / "ok.yaml"
    path.write_text("critique:\n  audit:\ndesigns:\n  review:\nphotocritique:\n  url_rewrite: {'https://any.host/': ./mirror}\n"
                    "pool:\n  dedup: {perceptual: {phash_radius: 8}}\n", encoding="utf-8")
    config = load_config(path)
    assert config["photocritique"]["url_rewrite"] == {"https://any.host/": str(tmp_path / "mirror")}
    resources = build_resources(config)
    assert resources["critique"].audit.size == CritiqueAuditSettings.model_fields["size"].default
    assert resources["designs"].review.min_votes == ReviewConfig.model_fields["min_votes"].default
    assert resources["pool"].dedup.perceptual == {"phash_radius": 8}


class _Inner(BaseModel):
    size: int = 1


class _Outer(BaseModel):
    by_name: dict[str, _Inner] = {}
    maybe: Optional[_Inner] = None
    pairs: list[tuple[str, _Inner]] = []


def test_the_walker_follows_dicts_of_models_optionals_and_tuples():
    value = {"by_name": {"a": {"sise": 2}, "b": {"size": 3}}, "maybe": {"siz": 1}, "pairs": [["x", {"sizes": 1}]], "extra": 0}
    kept, problems = known_keys_only(value, _Outer, ("demo",), {})
    assert [p.message for p in problems] == [
        "demo.by_name.a: unknown key 'sise'; did you mean 'size'?",
        "demo.maybe: unknown key 'siz'; did you mean 'size'?",
        "demo.pairs[0][1]: unknown key 'sizes'; did you mean 'size'?",
        "demo: unknown key 'extra'; expected one of by_name, maybe, pairs",
    ]
    assert kept == {"by_name": {"a": {}, "b": {"size": 3}}, "maybe": {}, "pairs": [["x", {}]]}
    assert _Outer.model_validate(kept).by_name["b"].size == 3


def _models(annotation: Any, seen: set) -> typing.Iterator[type]:
    annotation = _unwrap(annotation)
    fields = _fields(annotation)
    if fields is not None and annotation not in seen:
        seen.add(annotation)
        yield annotation
        for inner in fields.values():
            yield from _models(inner, seen)
    for arg in typing.get_args(annotation):
        yield from _models(arg, seen)


def test_every_free_form_dict_field_is_declared_deliberately():
    """A dict[str, Any] field's keys cannot be checked by the walker: each must name the class its keys come from."""
    seen: set = set()
    free = [
        (model, name)
        for _, cls in sections().values()
        for model in _models(cls, seen)
        for name, annotation in _fields(model).items()
        if typing.get_origin(_unwrap(annotation)) is dict and typing.get_args(_unwrap(annotation))[1] is Any
    ]
    assert free and set(free) <= set(schema_overrides())


def test_sections_are_found_in_resources_and_each_pipelines_settings():
    assert set(sections()) == {
        "warehouse", "blob_store", "fetch", "clip", "reddit_archive_api", "reddit_api", "models", "image_editor",
        "image_generators", "ocr", "executor", "pool", "photocritique", "critique", "designs", "counterfactual", "poetry", "context_canvas", "releases",
        "evaluation",
    }


def test_every_marked_path_is_resolved_against_the_config_folder_and_an_absent_one_takes_its_default(tmp_path):
    path = tmp_path / "cfg" / "c.yaml"
    path.parent.mkdir()
    path.write_text(
        "warehouse: {path: ../wh.duckdb}\nclip: {pretrained: weights/model.pt}\n"
        "pool: {manifests: [m.csv], folders: [{path: inbox}]}\n"
        "photocritique: {dumps: [d], local_images: {path: imgs}, url_rewrite: {'https://a/': 'https://b/', 'https://c/': m}}\n"
        "critique: {audit: {sheet_dir: sheets}}\ndesigns: {review: {returned_dir: back}}\ncounterfactual: {specs: s.csv}\n"
        "context_canvas: {returned_dir: ''}\n", encoding="utf-8")
    config, here = load_config(path), path.parent
    assert config["warehouse"]["path"] == str(tmp_path / "wh.duckdb")
    assert config["blob_store"]["root"] == str(here / "data" / "blobs")
    assert config["clip"]["pretrained"] == str(here / "weights" / "model.pt")
    assert config["pool"]["manifests"] == [str(here / "m.csv")] and config["pool"]["folders"] == [{"path": str(here / "inbox")}]
    photocritique = config["photocritique"]
    assert photocritique["local_images"]["path"] == str(here / "imgs") and photocritique["id_lists"] == []
    assert photocritique["url_rewrite"] == {"https://a/": "https://b/", "https://c/": str(here / "m")}
    assert config["critique"]["audit"] == {"sheet_dir": str(here / "sheets"), "returned_dir": str(here / "sheets" / "returned")}
    assert config["designs"]["review"]["returned_dir"] == str(here / "back")
    assert config["counterfactual"] == {"specs": str(here / "s.csv")}  # checks: None, so unset
    assert config["context_canvas"]["returned_dir"] == str(here / "data" / "review" / "context" / "returned")
    assert "stand_in_folder" not in config["poetry"] and config["poetry"]["export_dir"] == str(here / "data" / "exports" / "poetry")
    tag = tmp_path / "tag.yaml"  # an open_clip tag is a name, not a path
    tag.write_text("clip: {pretrained: laion2b_s34b_b79k}\n", encoding="utf-8")
    assert load_config(tag)["clip"]["pretrained"] == "laion2b_s34b_b79k"


@pytest.mark.parametrize("config", [SAMPLE_CONFIG, REPO_ROOT / "config" / "example.yaml"], ids=lambda p: p.name)
def test_the_bundled_configs_pass_the_strict_check(config):
    resources = build_resources(load_config(config))
    assert set(resources) == {key for key, _ in sections().values()}


def test_build_resources_names_the_key_of_a_wrong_value():
    config = load_config(SAMPLE_CONFIG)
    config["fetch"] = {"timeout_s": "soon"}
    with pytest.raises(ConfigError) as raised:
        build_resources(config)
    assert str(raised.value) == (
        "invalid configuration: fetch.timeout_s: Input should be a valid number, unable to parse string as a number (got 'soon')"
    )


def _cli(*args: str, **env: str) -> subprocess.CompletedProcess:
    environment = {key: value for key, value in os.environ.items() if key != "AESFORGE_CONFIG"}
    return subprocess.run([*args], capture_output=True, text=True, timeout=120, env={**environment, **env})


@pytest.mark.parametrize(
    ("command", "text", "message"),
    [
        (["run"], "fetch:\n  timeot_s: 20\n", "2:3: fetch: unknown key 'timeot_s'; did you mean 'timeout_s'?"),
        (["sql", "SELECT 1"], "pool:\n  filters:\n    min_side: 3\n   max_side: 4\n",
         "4:4: expected <block end>, but found '<block mapping start>' (while parsing a block mapping that starts at line 2, column 3)"),
    ],
    ids=["run_unknown_key", "sql_yaml_syntax"],
)
def test_aesforge_exits_2_with_one_line_before_any_run(tmp_path, command, text, message):
    bad = tmp_path / "bad.yaml"
    bad.write_text(text, encoding="utf-8")
    run = _cli(AESFORGE, *command, "--config", str(bad), DAGSTER_HOME=str(tmp_path / "home"))
    assert (run.returncode, run.stderr.splitlines(), run.stdout) == (2, [f"config error: {bad}:{message}"], "")
    assert not (tmp_path / "home").exists() and "Traceback" not in run.stderr


def test_the_dagster_code_location_raises_the_same_one_line_config_error(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("clip:\n  pretrianed: x\n", encoding="utf-8")
    probe = "from pipelines.config import ConfigError\ntry:\n    import pipelines.definitions\nexcept ConfigError as exc:\n    print(exc)"
    loaded = _cli(sys.executable, "-c", probe, AESFORGE_CONFIG=str(bad))
    assert loaded.stdout.splitlines() == [f"{bad}:2:3: clip: unknown key 'pretrianed'; did you mean 'pretrained'?"]


def test_the_warehouse_names_files_from_the_config_s_folder_and_shows_blobs_from_blob_store_root(tmp_path):
    path = tmp_path / "config" / "aesforge.yaml"
    path.parent.mkdir()
    path.write_text("blob_store:\n  root: ../blobs\n", encoding="utf-8")
    warehouse = build_resources(load_config(path))["warehouse"].get_warehouse()
    assert (warehouse.root, warehouse.blob_root) == (path.parent.resolve(), (tmp_path / "blobs").resolve())
    path.write_text("warehouse:\n  project_root: ..\nblob_store:\n  s3_bucket: b\n", encoding="utf-8")
    warehouse = build_resources(load_config(path))["warehouse"].get_warehouse()
    assert (warehouse.root, warehouse.blob_root) == (tmp_path.resolve(), None)  # an S3 store has no folder to show
    assert _error(tmp_path, "warehouse:\n  blob_root: x\n").endswith(
        "2:3: warehouse.blob_root: it is blob_store.root, set that instead")
