"""The poem-benchmark release materialized through Dagster on a warehouse built by the real pipelines: the pool
over the sample's painting folder (CC0, redistribution allowed), then the poetry chain with those paintings as
stand-ins and the bundled fixture survey. Every config reads back with datasets, pyarrow, pandas, DuckDB and
mlcroissant; rows are the warehouse's illustrations, poems and annotations, one type per column (the generator
columns stand-ins leave empty included); each image carries the rights of the pool record holding its bytes;
nothing local or run-specific is in the files; an unchanged second run writes nothing."""

from __future__ import annotations

import csv
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.poetry.test_assets import CHAIN, _ok, _run, _write_config, sample  # noqa: F401 - sample is a fixture
from tests.releases.release_checks import (check_no_local_traces, check_one_type_per_column, check_release_folder,
                                           file_states, last_summary, parquet_frame, run_traces)
from tests.support.critique_harness import failures, materialize
from tests.support.pool_harness import run_pool
from warehouse.db import Warehouse

RELEASE = "poem_benchmark_release"
PAINTINGS_LICENSE = "CC0-1.0"


def _release(config: Path) -> None:
    result = materialize(config, RELEASE)
    assert result.success, failures(result)


@pytest.fixture(scope="module")
def built(tmp_path_factory, sample) -> dict:  # noqa: F811 - the fixture imported above
    root = tmp_path_factory.mktemp("poem_release")
    pool = {"folders": [{"path": str(sample["paintings"]), "license": PAINTINGS_LICENSE, "provider": "sample paintings",
                         "domain": "painting", "redistribution": "allowed"}],
            "filters": {"license_allowlist": [PAINTINGS_LICENSE]}}
    config = _write_config(root, {"corpus": [str(sample["poems"])], "stand_in_folder": str(sample["paintings"]),
                                  "surveys": [str(sample["survey"])]}, pool=pool, releases={"out_dir": "releases"})
    assert run_pool(config).success
    _ok(_run(config, [a for a in CHAIN if a != "poem_judge_scores"]))
    _release(config)
    return {"root": root, "config": config, "wh": Warehouse(root / "warehouse.duckdb"),
            "folder": root / "releases" / "poem_benchmark"}


def test_every_config_loads_in_one_test_split_with_every_image_decoding(built, tmp_path):
    loaded = check_release_folder(built["folder"], cache_dir=tmp_path / "hf")
    assert {config: set(splits) for config, splits in loaded.configs.items()} == {
        "images": {"test"}, "poems": {"test"}, "annotations": {"test"}}
    n_images = loaded.configs["images"]["test"].num_rows
    assert loaded.withheld == 0 and loaded.decoded == n_images > 0  # every stand-in is a pool painting: CC0, allowed


def _sorted(wh, sql: str) -> list:
    return sorted(wh.query(sql).iloc[:, 0])


def test_rows_are_the_warehouse_illustrations_poems_and_annotations(built):
    wh, folder = built["wh"], built["folder"]
    images = parquet_frame(folder, "images")
    assert sorted(images["id"]) == _sorted(wh, "SELECT item_id FROM poem_illustration")
    scores = wh.query("SELECT item_id, quality, n_raters FROM poem_image_score").set_index("item_id")
    rated = images.set_index("id").loc[scores.index]
    assert list(rated["quality"]) == pytest.approx(list(scores["quality"]))
    assert list(rated["n_raters"]) == list(scores["n_raters"])
    choices = wh.query("SELECT item_id, options, correct_letter FROM poem_phase1_item").set_index("item_id")
    for item_id, row in images.set_index("id").iterrows():
        assert list(row["recognizability_choices"]) == list(choices.loc[item_id, "options"])
        true_poem = row["recognizability_choices"]["ABCD".index(row["recognizability_answer"])]
        assert true_poem == row["poem_id"]
    assert sorted(parquet_frame(folder, "poems")["poem_id"]) == _sorted(wh, "SELECT poem_id FROM poem")
    annotations = parquet_frame(folder, "annotations")
    expected = wh.query("SELECT rater_id, item_id, item, answer, passed_qc FROM poem_rater_annotations")
    assert len(annotations) == len(expected) == annotations["id"].nunique() > 0
    key = ["rater_id", "item_id", "item"]
    merged = annotations.merge(expected, on=key, suffixes=("", "_warehouse"))
    assert len(merged) == len(expected)
    assert (merged["answer"] == merged["answer_warehouse"]).all()
    assert (merged["passed_qc"] == merged["passed_qc_warehouse"]).all()
    assert not annotations["passed_qc"].all()  # the fixture survey has responses quality control left out
    # Every released row's lineage is in provenance.parquet: illustrations, poems and survey responses as its roots.
    lineage = pq.read_table(folder / "provenance.parquet").to_pandas()
    roots = lineage[lineage["depth"] == 0].groupby("config")
    assert {config: set(frame["entity_kind"]) for config, frame in roots} == {
        "images": {"illustration"}, "poems": {"poem"}, "annotations": {"survey_response"}}
    assert set(roots.get_group("annotations")["row_id"]) == set(annotations["id"])
    assert set(roots.get_group("images")["row_id"]) == set(images["id"])


def test_every_column_is_typed_even_where_stand_ins_leave_it_empty(built):
    schemas = check_one_type_per_column(built["folder"])
    assert set(schemas) == {"images", "poems", "annotations"}
    images, schema = parquet_frame(built["folder"], "images"), schemas["images"]
    for column in ("provider", "model", "provider_model", "prompt_template"):  # null for every stand-in
        assert images[column].isna().all() and schema.field(column).type == pa.string(), column
    assert schema.field("dimensions").type.field("core_imagery").type == pa.float64()
    assert schema.field("n_ratings").type.field("core_imagery").type == pa.int32()


def test_each_image_carries_the_rights_of_the_pool_record_holding_its_bytes(built):
    with (built["folder"] / "ATTRIBUTION.csv").open(encoding="utf-8", newline="") as stream:
        rows = {r["image_sha256"]: r for r in csv.DictReader(stream)}
    assert set(rows) == set(_sorted(built["wh"], "SELECT DISTINCT image_sha256 FROM poem_illustration"))
    held = built["wh"].query(
        "SELECT DISTINCT f.file_sha256, r.license, r.provider FROM record_file f JOIN source_record r USING (record_id)"
        " WHERE f.file_sha256 IN (SELECT image_sha256 FROM poem_illustration)")
    assert set(held["file_sha256"]) == set(rows)
    for sha, license_, provider in held.itertuples(index=False):
        assert (rows[sha]["license"], rows[sha]["provider"], rows[sha]["redistribution"]) == (license_, provider, "allowed")
        assert rows[sha]["bytes_included"] == "true" and rows[sha]["source_url"] == ""  # a folder file: no public URL


def test_no_local_path_file_uri_run_or_activity_id_in_any_file(built):
    folder, traces = built["folder"], run_traces(built["wh"])
    check_no_local_traces(folder, [str(built["root"]), *traces])  # stage parameters name files relative to the root


def test_an_unchanged_second_materialization_rewrites_nothing(built):
    before = file_states(built["folder"])
    _release(built["config"])
    assert file_states(built["folder"]) == before
    assert "unchanged" in last_summary(built["wh"], RELEASE)
