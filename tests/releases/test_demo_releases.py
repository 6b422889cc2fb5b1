"""The demo, built from scratch in two different folders: it writes all five release folders, each loads with
every reader a user has, and the two builds' releases are byte-identical (``release.json`` aside, which keeps the
build's date and run on purpose)."""

from __future__ import annotations

import json

import pytest

from pipelines.cli import print_releases, release_names
from pipelines.config import load_config
from tests.releases.release_checks import check_no_local_traces, check_one_type_per_column, check_release_folder
from tests.support.demo_build import build_demo

DATASETS = ["aeseval", "context_canvas", "critique_canvas", "photocritique", "poem_benchmark"]


@pytest.fixture(scope="module")
def demos(tmp_path_factory):
    first = tmp_path_factory.mktemp("demo_one") / "project"
    second = tmp_path_factory.mktemp("demo_two") / "elsewhere" / "copy"
    return [(root, build_demo(root)) for root in (first, second)]


def _manifest(root, name):
    return json.loads((root / "data" / "releases" / name / "release.json").read_text())


def test_the_demo_writes_every_release_and_says_where(demos, capsys):
    root, config = demos[0]
    assert release_names() == DATASETS
    print_releases(load_config(config), DATASETS)
    printed = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in printed] == [f"release {name}" for name in DATASETS]
    assert all(str(root / "data" / "releases") in line and "not written" not in line for line in printed)


@pytest.mark.parametrize("name", DATASETS)
def test_every_release_loads_with_datasets_pyarrow_duckdb_and_mlcroissant(demos, tmp_path, name):
    root, _ = demos[0]
    folder = root / "data" / "releases" / name
    loaded = check_release_folder(folder, cache_dir=tmp_path / "hf")
    check_one_type_per_column(folder)
    assert all(sum(split.num_rows for split in config.values()) > 0 for config in loaded.configs.values())
    if name != "photocritique":  # Reddit photos are restricted: the benchmark ships their ids, not their bytes
        assert loaded.decoded > 0
    check_no_local_traces(folder, [str(root), "file://"])


@pytest.mark.parametrize("name", DATASETS)
def test_two_folders_give_byte_identical_releases(demos, name):
    (one, _), (two, _) = demos
    first, second = _manifest(one, name), _manifest(two, name)
    assert first["files"] == second["files"] and first["rows"] == second["rows"]
    assert first["run_id"] != second["run_id"]


def test_the_aeseval_benchmark_is_not_empty_and_training_splits_are_guarded(demos):
    root, _ = demos[0]
    rows = _manifest(root, "aeseval")["rows"]
    assert rows.get("questions/benchmark", 0) > 0 and rows.get("questions/train", 0) > 0
    card = (root / "data" / "releases" / "critique_canvas" / "README.md").read_text()
    assert "## Held out for other benchmarks" in card


def test_the_context_canvas_release_carries_the_samples_counterfactual_pairs(demos):
    root, _ = demos[0]
    rows = _manifest(root, "context_canvas")["rows"]
    assert rows["counterfactual_pairs/eval"] == 2 and rows["cases/eval"] == 6  # ctx-s01 and ctx-s03, both approved
