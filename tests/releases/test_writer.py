"""The release writer on a real warehouse and blob store, over a small table of its own: shards, images, licence
policy, empty splits, byte-identical folders, and what datasets, pyarrow, DuckDB and mlcroissant read back."""

from __future__ import annotations

import io
import json
import random
from pathlib import Path

import datasets
import duckdb
import mlcroissant
import pyarrow.parquet as pq
import pytest
from PIL import Image

from assets.core.step import Step
from assets.releases.logic.croissant import ResponsibleAI
from assets.releases.writer import ReleaseSpec, ReleaseTable, write_release
from resources.blob_store import LocalBlobStore
from warehouse.db import Warehouse
from warehouse.lineage import Entity, start_activity

RAI = ResponsibleAI("collected for a test", ("Synthetic",), "none", "none", "none", "small", "none", "tests", "this test")
N = 160


def _png(i: int) -> bytes:
    """About 2 KB of noise that PNG cannot shrink, so a few row groups fill a shard."""
    buffer = io.BytesIO()
    Image.frombytes("RGB", (16 + i % 5, 12), random.Random(i).randbytes((16 + i % 5) * 12 * 3)).save(buffer, "PNG")
    return buffer.getvalue()


def _spec() -> ReleaseSpec:
    rows = "SELECT id, split, image, image_sha256, tags, meta FROM t_items"
    return ReleaseSpec(
        dataset="toy", pretty_name="Toy", summary="A toy release.",
        tables=(
            ReleaseTable("items", "one toy item", "id", {s: f"{rows} WHERE split = '{s}'" for s in ("train", "test", "dev")},
                         images=("image",), columns={"id": "row id"}, default=True),
            ReleaseTable("notes", "one note", "id", {"train": "SELECT id, CAST(NULL AS VARCHAR) AS note FROM t_items"}),
        ),
        images_query="SELECT image_sha256, 'https://example.org/' || id AS source_url, NULL AS creator,"
        " 'CC0-1.0' AS license, 'toy' AS provider, redistribution FROM t_items",
        rows_query="SELECT 'items' AS config, split, id AS row_id, entity_id FROM t_items",
        composition_query="SELECT split, 'toy', count(*) FROM t_items GROUP BY ALL",
        assets=("toy_asset",), stages=("toy_stage",), task_categories=("image-classification",),
        citations=("@misc{toy, title={Toy}}",), limitations=("tiny",), rai=RAI,
    )


def _build(root: Path) -> tuple[Warehouse, LocalBlobStore]:
    """The same warehouse contents and blobs under ``root``, wherever it is."""
    wh = Warehouse(root / "w.duckdb")
    store = LocalBlobStore(root / "blobs")
    shas = [store.put_bytes(_png(i)).sha256 for i in range(N)]
    with wh.transaction() as con:
        con.execute("CREATE TABLE t_items (id VARCHAR, split VARCHAR, image VARCHAR, image_sha256 VARCHAR, tags VARCHAR[],"
                    " meta STRUCT(score DOUBLE, who VARCHAR), redistribution VARCHAR, entity_id VARCHAR)")
        for i, sha in enumerate(shas):
            con.execute("INSERT INTO t_items VALUES (?, ?, ?, ?, ?, ?, ?, ?)", [
                f"item{i:03d}", "test" if i % 4 == 0 else "train", sha, sha, [f"t{i % 3}"] * (i % 3),
                {"score": i / 3, "who": None if i % 2 else "x"}, "restricted" if i % 10 == 3 else "allowed", f"toy:{i}"])
        log = start_activity(con, asset_key="toy_asset", partition_key=None, run_id="r0", code_version="toy v1",
                             parameters={"k": 1}, agents=())
        log.entities(Entity(f"toy:{i}", "toy") for i in range(N))
        log.generated(f"toy:{i}" for i in range(N))
    return wh, store


def _write(root: Path, run_id: str, **kw) -> tuple[Warehouse, object]:
    wh, store = (Warehouse(root / "w.duckdb"), LocalBlobStore(root / "blobs")) if (root / "w.duckdb").exists() else _build(root)
    with wh.transaction() as con:
        log = start_activity(con, asset_key="toy_release", partition_key=None, run_id=run_id, code_version="v",
                             parameters={}, agents=())
    step = Step(wh, log.activity_id, "toy_release")
    settings = {"withhold_images": ["restricted", "unknown"], "images": "embed", "shard_max_bytes": 40_000, **kw}
    summary = write_release(step, store, _spec(), root / "out" / "toy", withheld_values=settings["withhold_images"],
                            images=settings["images"], shard_max_bytes=settings["shard_max_bytes"], version="0.1.0")
    return wh, summary, step


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    first = tmp_path_factory.mktemp("one") / "a"
    second = tmp_path_factory.mktemp("two") / "deeper" / "b"
    return {"first": _write(first, "run-1"), "second": _write(second, "run-2"), "roots": (first, second)}


def test_shards_are_named_with_their_count_and_empty_splits_are_not_written(built):
    folder = built["first"][1].folder
    train = sorted(p.name for p in (folder / "data" / "items").glob("train-*.parquet"))
    assert len(train) > 1  # 40 KB shards: 120 train rows of about 2 KB images need several
    assert train == [f"train-{i:05d}-of-{len(train):05d}.parquet" for i in range(len(train))]
    assert not list((folder / "data" / "items").glob("dev-*"))  # no dev rows: no dev file, no dev split in the card
    assert "dev" not in (folder / "README.md").read_text().split("---")[1]
    assert built["first"][1].rows == {"items/train": 120, "items/test": 40, "notes/train": 160}


def test_two_folders_give_byte_identical_releases_except_release_json(built):
    one, two = built["first"][1].files, built["second"][1].files
    assert one == two and "README.md" in one and "croissant.json" in one and "provenance.parquet" in one
    manifests = [json.loads((b[1].folder / "release.json").read_text()) for b in (built["first"], built["second"])]
    assert manifests[0]["run_id"] != manifests[1]["run_id"] and manifests[0]["files"] == manifests[1]["files"]


def test_no_run_ids_timestamps_or_absolute_paths_in_the_data_files(built):
    folder = built["first"][1].folder
    for root in built["roots"]:
        for path in folder.rglob("*"):
            if path.is_file() and path.name != "release.json":
                data = path.read_bytes()
                assert str(root).encode() not in data and b"run-1" not in data and b"file://" not in data, path


def test_datasets_loads_every_config_and_split_with_images_decoding_and_withheld_ones_null(built):
    folder = built["first"][1].folder
    assert sorted(datasets.get_dataset_config_names(str(folder))) == ["items", "notes"]
    items = datasets.load_dataset(str(folder), "items")
    assert {s: d.num_rows for s, d in items.items()} == {"train": 120, "test": 40}
    rows = {r["id"]: r for split in items.values() for r in split}
    assert rows["item003"]["image"] is None  # restricted: id, sha256 and source URL only
    assert rows["item001"]["image"].size == (17, 12) and rows["item001"]["tags"] == ["t1"]
    assert rows["item002"]["meta"] == {"score": pytest.approx(2 / 3), "who": "x"}
    assert datasets.load_dataset(str(folder), "notes")["train"].features["note"].dtype == "string"  # typed, not null


def test_pyarrow_pandas_and_duckdb_read_the_shards_in_key_order(built):
    folder = built["first"][1].folder
    table = pq.read_table(folder / "data" / "items")
    assert table.num_rows == N
    frame = pq.read_table(sorted((folder / "data" / "items").glob("train-*"))[0]).to_pandas()
    assert list(frame["id"]) == sorted(frame["id"])
    ids = duckdb.sql(f"SELECT id FROM read_parquet('{folder}/data/items/train-*.parquet')").fetchall()
    assert sorted(r[0] for r in ids) == sorted(f"item{i:03d}" for i in range(N) if i % 4)


def test_croissant_record_sets_read_with_mlcroissant(built):
    folder = built["first"][1].folder
    dataset = mlcroissant.Dataset(str(folder / "croissant.json"))
    records = list(dataset.records("items"))
    assert len(records) == N
    by_id = {r["items/id"].decode(): r for r in records}
    assert by_id["item001"]["items/image"].size == (17, 12) and by_id["item003"]["items/image"] is None
    assert {r["items/split"].decode() for r in records} == {"train", "test"}
    assert len(list(dataset.records("notes"))) == N


def test_attribution_and_provenance_cover_every_image_and_row(built):
    folder = built["first"][1].folder
    attribution = (folder / "ATTRIBUTION.csv").read_text().splitlines()
    assert len(attribution) == N + 1 and attribution[0].startswith("image_sha256,source_url,creator,license")
    assert sum(line.endswith(",restricted,false") for line in attribution) == 16 and ",unknown," in attribution[1]
    provenance = pq.read_table(folder / "provenance.parquet").to_pandas()
    assert provenance["row_id"].nunique() == N and set(provenance["asset_key"]) == {"toy_asset"}
    assert "activity_id" not in provenance.columns and "run_id" not in provenance.columns


def test_card_front_matter_lists_configs_features_and_licence(built):
    import yaml

    card = (built["first"][1].folder / "README.md").read_text()
    matter = yaml.safe_load(card.split("---")[1])
    assert matter["license"] == "cc0-1.0" and matter["size_categories"] == ["n<1K"]
    assert [c["config_name"] for c in matter["configs"]] == ["items", "notes"] and matter["configs"][0]["default"]
    features = {f["name"]: f for f in matter["dataset_info"][0]["features"]}
    assert features["image"] == {"name": "image", "dtype": "image"} and features["tags"]["list"] == "string"
    assert "16 image(s) of this release are withheld" in card


def test_an_unchanged_release_is_not_rewritten_and_a_damaged_one_is(built):
    root = built["roots"][0]
    folder = built["first"][1].folder
    _, again, step = _write(root, "run-3")
    assert not again.written and "unchanged" in step.notes
    (folder / "README.md").write_text("edited by hand")
    _, repaired, _ = _write(root, "run-4")
    assert repaired.written and repaired.files == built["first"][1].files


def test_an_empty_withhold_list_embeds_every_image(tmp_path):
    _, summary, _ = _write(tmp_path / "open", "run-5", withhold_images=[])
    items = datasets.load_dataset(str(summary.folder), "items")
    assert all(r["image"] is not None for split in items.values() for r in split) and summary.withheld_images == 0
    attribution = (summary.folder / "ATTRIBUTION.csv").read_text().splitlines()[1:]
    assert len(attribution) == N and all(line.endswith(",true") for line in attribution)


def test_training_rows_the_leakage_guard_excluded_are_left_out_with_their_lineage(tmp_path):
    root = tmp_path / "guarded"
    wh, _ = _build(root)
    sha = wh.scalar("SELECT image_sha256 FROM t_items WHERE id = 'item001'")
    with wh.transaction() as con:
        con.execute("INSERT INTO release_exclusion VALUES ('toy', 'train', ?, 'photocritique', 'test', 'p1', ?,"
                    " 'exact_duplicate', 'planted', 1, 'release_exclusion:x', 'a')", [sha, sha])
    _, summary, _ = _write(root, "run-6")
    items = datasets.load_dataset(str(summary.folder), "items")
    assert "item001" not in items["train"]["id"] and items["train"].num_rows == 119
    provenance = pq.read_table(summary.folder / "provenance.parquet").to_pandas()
    assert "item001" not in set(provenance["row_id"]) and provenance["row_id"].nunique() == N - 1
    assert "| train | exact_duplicate | 1 |" in (summary.folder / "README.md").read_text()
