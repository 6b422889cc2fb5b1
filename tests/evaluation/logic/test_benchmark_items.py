"""Benchmark items are read from a release folder's shards, named by a digest of the released data."""

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from assets.evaluation.logic.benchmark_items import LAYOUTS, ReleaseError, iter_items, open_release


def _release(folder, dataset, config, split, rows, schema, version="0.1.0", n_shards=1):
    (folder / "data" / config).mkdir(parents=True)
    files = {}
    per = -(-len(rows) // n_shards)
    for i in range(n_shards):
        name = f"data/{config}/{split}-{i:05d}-of-{n_shards:05d}.parquet"
        pq.write_table(pa.Table.from_pylist(rows[i * per:(i + 1) * per], schema=schema), folder / name)
        files[name] = f"sha-of-{name}"
    files["README.md"] = "card"
    (folder / "release.json").write_text(json.dumps({"dataset": dataset, "version": version, "files": files,
                                                     "built_at": "2026-12-02T00:00:00", "run_id": "x"}))
    return folder


POST = pa.schema([("id", pa.string()), ("title", pa.string()), ("body", pa.string()),
                  ("image", pa.struct([("bytes", pa.binary()), ("path", pa.string())])), ("image_sha256", pa.string()),
                  ("critiques", pa.list_(pa.struct([("rank", pa.int32()), ("body", pa.string())])))])


def _post(n):
    return {"id": f"p{n}", "title": f"title {n}", "body": None, "image": None, "image_sha256": f"{n:064x}",
            "critiques": [{"rank": 2, "body": "second"}, {"rank": 1, "body": "first"}, {"rank": 3, "body": "third"}]}


def test_posts_stream_in_shard_order_with_ranked_references_and_withheld_images(tmp_path):
    layout = LAYOUTS["photocritique"]
    folder = _release(tmp_path / "photocritique", "photocritique", "posts", "test", [_post(n) for n in range(5)], POST, n_shards=2)
    release = open_release(folder, layout)
    items = list(iter_items(release, layout))
    assert [i.id for i in items] == ["p0", "p1", "p2", "p3", "p4"]
    assert items[0].references == ("first", "second", "third")
    assert items[0].fields == {"title": "title 0", "body": ""}
    assert items[0].images[0].data is None and items[0].images[0].sha256 == f"{0:064x}"


def test_the_digest_names_the_data_files_only_and_the_same_data_gives_it_anywhere(tmp_path):
    layout = LAYOUTS["photocritique"]
    one = open_release(_release(tmp_path / "a", "photocritique", "posts", "test", [_post(1)], POST), layout)
    two = open_release(_release(tmp_path / "b" / "c", "photocritique", "posts", "test", [_post(1)], POST), layout)
    assert one.digest == two.digest and len(one.digest) == 64


def test_a_folder_that_is_not_the_benchmarks_release_is_refused_with_one_line(tmp_path):
    layout = LAYOUTS["critique_canvas"]
    with pytest.raises(ReleaseError, match="no readable release.json"):
        open_release(tmp_path, layout)
    folder = _release(tmp_path / "p", "photocritique", "posts", "test", [_post(1)], POST)
    with pytest.raises(ReleaseError, match="a release of 'photocritique', not of 'critique_canvas'"):
        open_release(folder, layout)


def test_critique_canvas_records_carry_the_instruction_and_the_reference_response(tmp_path):
    schema = pa.schema([("id", pa.string()), ("image", pa.struct([("bytes", pa.binary()), ("path", pa.string())])),
                        ("image_sha256", pa.string()), ("domain", pa.string()), ("dimension", pa.string()),
                        ("selected_dimensions", pa.list_(pa.string())), ("instruction", pa.string()), ("response", pa.string())])
    row = {"id": "critique_pair:1", "image": {"bytes": b"\x89PNG", "path": "a.png"}, "image_sha256": "f" * 64,
           "domain": "painting", "dimension": "color", "selected_dimensions": ["color", "style"],
           "instruction": "How is colour used?", "response": "Warm ochres dominate."}
    layout = LAYOUTS["critique_canvas"]
    [item] = iter_items(open_release(_release(tmp_path / "c", "critique_canvas", "records", "eval", [row], schema), layout), layout)
    assert item.references == ("Warm ochres dominate.",) and item.fields["instruction"] == "How is colour used?"
    assert item.images[0].data == b"\x89PNG" and item.images[0].path == "a.png"
