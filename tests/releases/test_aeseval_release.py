"""The AesEval release materialized through Dagster on a warehouse the design pipeline built from the generated
Crello sample (the sample's settings put base designs on both sides): every config and split reads back with
datasets, pyarrow, pandas, DuckDB and mlcroissant; rows are the warehouse's questions and reasoning paths, one type
per column; nothing local or run-specific is in the files; an unchanged second run writes nothing; and by default
the renders, whose rights the warehouse does not know, ship without bytes."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from tests.designs.test_aeseval_rows import _sample_designs
from tests.designs.conftest import fixture_dir  # noqa: F401 - fixture_dir is a fixture used here
from tests.designs.test_assets import _built
from tests.releases.release_checks import (check_no_local_traces, check_one_type_per_column, check_release_folder,
                                           check_release_loads, file_states, included_images, last_summary,
                                           parquet_frame, run_traces)
from tests.support.critique_harness import failures, materialize

RELEASE = "aeseval_release"


def _with_releases(config: Path, releases: dict, name: str) -> Path:
    """A copy of ``config`` beside it (same warehouse and blobs) with ``releases`` as its releases section."""
    settings = yaml.safe_load(config.read_text(encoding="utf-8"))
    target = config.with_name(name)
    target.write_text(yaml.safe_dump({**settings, "releases": releases}), encoding="utf-8")
    return target


def _release(config: Path) -> None:
    result = materialize(config, RELEASE)
    assert result.success, failures(result)


@pytest.fixture(scope="module")
def built(tmp_path_factory, fixture_dir) -> dict:  # noqa: F811 - the fixture imported above
    source, _ = fixture_dir
    root = tmp_path_factory.mktemp("aeseval_release")
    config, wh = _built(root, _sample_designs(source))
    # The operator has cleared the designs' terms: renders of unknown rights ship with their bytes.
    cleared = _with_releases(config, {"out_dir": "releases", "datasets": {"aeseval": {"withhold_images": ["restricted"]}}},
                             "cleared.yaml")
    _release(cleared)
    return {"root": root, "config": cleared, "wh": wh, "folder": root / "releases" / "aeseval"}


def _ids(wh, sql: str) -> dict[str, list[str]]:
    return {split: sorted(ids) for split, ids in wh.query(
        f"SELECT split, list(question_id) AS ids FROM ({sql}) GROUP BY split").itertuples(index=False)}


def test_every_config_and_split_loads_with_its_images(built, tmp_path):
    loaded = check_release_folder(built["folder"], cache_dir=tmp_path / "hf")
    assert set(loaded.configs) == {"questions", "reasoning"}
    assert set(loaded.configs["questions"]) == {"benchmark", "train"}
    n_questions = sum(d.num_rows for d in loaded.configs["questions"].values())
    assert loaded.withheld == 0 and loaded.decoded == n_questions > 0  # one render per question, all included
    first = loaded.configs["questions"]["benchmark"][0]
    assert first["image"].size == tuple(json.loads(first["metadata"])["canvas"][k] for k in ("width", "height"))


def test_rows_are_the_warehouse_questions_and_reasoning_paths(built):
    wh, folder = built["wh"], built["folder"]
    questions = parquet_frame(folder, "questions")
    expected = _ids(wh, "SELECT * FROM aeseval_question_rows")
    assert set(expected) == {"benchmark", "train"}
    assert {split: sorted(ids) for split, ids in questions.groupby("split")["question_id"]} == expected
    by_id = questions.set_index("question_id")
    view = wh.query("SELECT question_id, image_sha256, answer, metadata, options FROM aeseval_question_rows")
    for question_id, sha, answer, metadata, options in view.itertuples(index=False):
        row = by_id.loc[question_id]
        assert (row["image_sha256"], row["answer"], row["metadata"]) == (sha, answer, metadata)
        assert list(row["options"]) == list(options)
    reasoning = parquet_frame(folder, "reasoning")
    assert {split: sorted(ids) for split, ids in reasoning.groupby("split")["question_id"]} == _ids(
        wh, "SELECT * FROM design_question_records WHERE reasoning IS NOT NULL") != {}
    assert set(reasoning["question_id"]) <= set(questions["question_id"])  # paths for all three formats (AesEval 4)
    elements = {q: {e["element_id"] for e in json.loads(m)["elements"]} for q, m in zip(questions["question_id"], questions["metadata"])}
    for question_id, steps in zip(reasoning["question_id"], reasoning["steps"]):
        cited = [step["element_id"] for step in steps if step["element_box"] is not None]
        assert cited and set(cited) <= elements[question_id], question_id  # every cited box is one of the design's
    # Every released row's lineage is in provenance.parquet, starting at the render it shows.
    lineage = pq.read_table(folder / "provenance.parquet").to_pandas()
    roots = lineage[lineage["depth"] == 0]
    assert set(roots["entity_kind"]) == {"design_render"}
    for config, frame in (("questions", questions), ("reasoning", reasoning)):
        assert set(roots.loc[roots["config"] == config, "row_id"]) == set(frame["question_id"]), config


def test_each_shard_is_recorded_as_an_export_with_its_own_row_count(built):
    wh, folder = built["wh"], built["folder"]
    recorded = dict(wh.query("SELECT path, n_rows FROM export_file WHERE dataset = 'aeseval_release'"
                             " AND format = 'parquet'").itertuples(index=False))
    shards = {wh.name_of(p): pq.ParquetFile(p).metadata.num_rows for p in folder.rglob("*.parquet")}
    assert recorded == shards and all(n > 0 for n in shards.values())
    manifest = json.loads((folder / "release.json").read_text())
    for key, n in manifest["rows"].items():  # "config/split": rows over that split's shards
        config, split = key.split("/")
        assert sum(v for name, v in recorded.items() if f"/data/{config}/{split}-" in name) == n, key


def test_every_column_has_one_declared_type_in_every_shard(built):
    schemas = check_one_type_per_column(built["folder"])
    assert set(schemas) == {"questions", "reasoning"}
    schema = schemas["questions"]
    # The JSON the old aeseval_train.jsonl mixed (choices as strings or boxes, answer as text or a box) is typed.
    assert schema.field("options").type == pa.list_(pa.string()) and schema.field("answer").type == pa.string()
    assert schema.field("option_boxes").type == pa.list_(pa.list_(pa.float64()))
    assert schema.field("metadata").type == pa.string() and schema.field("answer_index").type == pa.int32()


def test_no_local_path_file_uri_run_or_activity_id_in_any_file(built):
    folder, traces = built["folder"], run_traces(built["wh"])
    check_no_local_traces(folder, [str(built["root"]), *traces])  # stage parameters name files relative to the root


def test_an_unchanged_second_materialization_rewrites_nothing(built):
    _release(built["config"])  # whatever an earlier test left, the release is current after this run
    before = file_states(built["folder"])
    _release(built["config"])
    assert file_states(built["folder"]) == before
    assert "unchanged" in last_summary(built["wh"], RELEASE)


def test_by_default_renders_ship_without_bytes_but_keep_their_sha256(built, tmp_path):
    default = _with_releases(built["config"], {"out_dir": "releases_default"}, "default.yaml")
    _release(default)
    folder = built["root"] / "releases_default" / "aeseval"
    included = included_images(folder)
    assert included and not any(included.values())  # redistribution unknown: withheld by default
    loaded = check_release_loads(folder, cache_dir=tmp_path / "hf")
    assert loaded.decoded == 0 and loaded.withheld == sum(d.num_rows for d in loaded.configs["questions"].values())
    assert f"{len(included)} image(s) of this release are withheld" in (folder / "README.md").read_text()
