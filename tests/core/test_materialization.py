"""The declared outputs of every asset, and what ``describe`` / ``Step.result`` make of a warehouse's rows."""

import io

import pytest
from dagster import MarkdownMetadataValue, PathMetadataValue
from PIL import Image

from assets.core.materialization import Output, declared_output, describe, writes
from assets.core.step import Step
from pipelines.definitions import defs
from resources.blob_store import LocalBlobStore
from warehouse.db import Warehouse


@pytest.fixture
def wh(tmp_path) -> Warehouse:
    return Warehouse(tmp_path / "warehouse.duckdb")


def test_every_asset_declares_an_output_a_fresh_warehouse_describes(wh, tmp_path):
    """Each declared relation exists after the migrations, its filter and image expression run, and the schema
    comes back with DuckDB's columns (an empty warehouse: no rows, no thumbnails)."""
    store = LocalBlobStore(tmp_path / "blobs")
    specs = list(defs.resolve_all_asset_specs())
    assert len(specs) > 40
    for spec in specs:
        key = spec.key.to_user_string()
        output = declared_output(key, spec.metadata)
        assert spec.metadata["dagster/table_name"] == output.primary
        described = describe(wh, output, key, store)
        columns = wh.query(f'DESCRIBE "{output.primary}"')
        schema = described.metadata["dagster/column_schema"]
        assert [(c.name, c.type) for c in schema.columns] == list(zip(columns["column_name"], columns["column_type"])), key
        assert described.metadata["dagster/row_count"] == 0, key


def test_an_asset_without_a_declaration_is_named():
    with pytest.raises(ValueError, match="asset x declares no warehouse output"):
        declared_output("x", {})


def _toy(wh: Warehouse, rows: list[tuple]) -> None:
    with wh.transaction() as con:
        con.execute("CREATE OR REPLACE TABLE toy (k VARCHAR, v INTEGER, part VARCHAR, activity_id VARCHAR, made_at TIMESTAMPTZ)")
        con.executemany("INSERT INTO toy VALUES (?, ?, ?, ?, now())", rows)


def test_data_version_follows_content_not_the_run(wh):
    output = Output(("toy",), where="part = 'mine'")
    _toy(wh, [("a", 1, "mine", "activity:1"), ("b", 2, "mine", "activity:1"), ("z", 9, "theirs", "activity:1")])
    first = describe(wh, output, "toy").data_version
    _toy(wh, [("b", 2, "mine", "activity:2"), ("a", 1, "mine", "activity:2"), ("z", 8, "theirs", "activity:2")])
    assert describe(wh, output, "toy").data_version == first  # rewritten by another run, others' rows changed
    _toy(wh, [("a", 1, "mine", "activity:3"), ("b", 3, "mine", "activity:3")])
    assert describe(wh, output, "toy").data_version != first


def _png(colour) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (40, 30), colour).save(out, format="PNG")
    return out.getvalue()


def test_step_result_shows_counts_files_preview_and_thumbnails(wh, tmp_path):
    store = LocalBlobStore(tmp_path / "blobs")
    refs = [store.put_bytes(_png(c)).uri for c in ("red", "green", "blue")]
    with wh.transaction() as con:
        con.execute("CREATE TABLE pics (k VARCHAR, blob VARCHAR, prompt_url VARCHAR, activity_id VARCHAR)")
        con.executemany("INSERT INTO pics VALUES (?, ?, 'https://h/v1?key=SECRET', 'activity:x')",
                        [(f"k{i}", ref) for i, ref in enumerate(refs)])
    metadata = writes("pics", images="blob")
    step = Step(wh, "activity:x", "pics", output=declared_output("pics", metadata))
    step.counts.update({"images_pending": 3, "images:complete": 3, "rejected:too_small": 1})
    step.files["sheet"] = tmp_path / "sheet.csv"
    result = step.result(store, report=MarkdownMetadataValue("# hi"))
    shown = result.metadata
    assert shown["dagster/row_count"] == 3 and shown["rejected"] == 1
    assert "| images waiting at start | 3 |" in shown["counts"].md_str
    assert isinstance(shown["sheet"], PathMetadataValue) and shown["report"].md_str == "# hi"
    preview = shown["preview"].md_str
    assert "| k | blob | prompt_url |" in preview and "SECRET" not in preview and "activity:x" not in preview
    assert shown["thumbnails"].md_str.startswith("![3 sample images](data:image/png;base64,")
    sheet = tmp_path / "previews" / "pics.png"
    assert shown["thumbnail_sheet"].path == str(sheet)
    written = sheet.read_bytes()
    assert step.result(store).data_version == result.data_version and sheet.read_bytes() == written
    with pytest.raises(ValueError, match="pass the blob store"):
        step.result()
