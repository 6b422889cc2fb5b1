"""What the pool's materializations show in the Dagster UI, and their data versions, through real runs."""

import base64
import csv
import re

from dagster import PathMetadataValue

from sample import synth
from tests.support.pool_harness import run_pool, warehouse_for, write_config

# The stages that decide what the pool holds for distinct images (no duplicate evidence to look for).
STAGES = ["source_records", "fetched_files", "normalized_images", "pool_candidates", "image_pool"]
FIELDS = ["locator", "title", "creator", "provider", "source_url", "license", "redistribution", "domain"]


def _manifest(folder, n):
    """A manifest of ``n`` distinct local paintings (rows in file order)."""
    rows = []
    for i in range(n):
        path = folder / f"p{i:02d}.png"
        if not path.exists():
            synth.render_painting(200 + i, (320, 256)).save(path)
        rows.append({"locator": str(path), "title": f"painting {i}", "creator": "t", "provider": "t", "source_url": "",
                     "license": "CC0-1.0", "redistribution": "allowed", "domain": "painting"})
    with (folder / "manifest.csv").open("w", newline="") as out:
        writer = csv.DictWriter(out, FIELDS)
        writer.writeheader()
        writer.writerows(rows)
    return folder / "manifest.csv"


def _materializations(result):
    events = result.get_asset_materialization_events()
    return {e.asset_key.to_user_string(): e.event_specific_data.materialization for e in events}


def _versions(result):
    return {key: m.tags["dagster/data_version"] for key, m in _materializations(result).items()}


def test_pool_metadata_shows_the_table_and_versions_follow_its_content(tmp_path):
    folder = tmp_path / "images"
    folder.mkdir()
    config = write_config(tmp_path / "cfg", {"manifests": [str(_manifest(folder, 5))]})
    first = run_pool(config, STAGES)
    assert first.success
    pool = _materializations(first)["image_pool"].metadata

    wh = warehouse_for(config)
    described = wh.query("DESCRIBE pool_images")
    schema = pool["dagster/column_schema"].schema
    assert [(c.name, c.type) for c in schema.columns] == list(zip(described["column_name"], described["column_type"]))
    assert pool["dagster/row_count"].value == wh.scalar("SELECT count(*) FROM pool_images") == 5
    assert "painting 0" in pool["preview"].md_str and "decided_in_run" not in pool["preview"].md_str
    counts = _materializations(first)["normalized_images"].metadata["counts"].md_str
    assert "| files waiting at start | 5 |" in counts and "| decoded | 5 |" in counts
    inline = re.fullmatch(r"!\[5 sample images\]\(data:image/png;base64,([A-Za-z0-9+/=]+)\)", pool["thumbnails"].md_str)
    assert inline and len(inline[0]) <= 60_000 and base64.b64decode(inline[1]).startswith(b"\x89PNG")
    sheet = pool["thumbnail_sheet"]
    assert isinstance(sheet, PathMetadataValue)
    sheet_bytes = open(sheet.path, "rb").read()

    again = run_pool(config, STAGES)
    assert _versions(again) == _versions(first)  # nothing changed: every version the same
    assert open(sheet.path, "rb").read() == sheet_bytes

    _manifest(folder, 6)  # one more row
    grown = run_pool(config, STAGES)
    changed = {key for key, version in _versions(grown).items() if version != _versions(first)[key]}
    assert {"source_records", "fetched_files", "normalized_images", "pool_candidates", "image_pool"} <= changed
    assert _materializations(grown)["image_pool"].metadata["dagster/row_count"].value == 6
