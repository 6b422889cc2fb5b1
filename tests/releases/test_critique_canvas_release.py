"""The CritiqueCanvas release materialized through Dagster on a real warehouse: the harness's four-image pool (its
photography images redistributable, the painting restricted, the virtual image of unknown rights and with no
public URL), critiqued by the offline heuristic, split (one eval group per domain, the second photograph in
train), a human audit that rejects one pair, then the release, read back with every reader a user has.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from assets.core.logic.normalized_pixels import normalized_png
from resources.blob_store import LocalBlobStore

from tests.critique_canvas.test_audit_export import AUDIT, _blank_sheet, _return_sheet
from tests.releases.release_checks import (
    LoadedRelease,
    check_no_local_traces,
    check_release_folder,
    file_states,
    last_summary,
    parquet_frame,
    run_traces,
)
from tests.support.critique_harness import failures, materialize, pool_folder
from tests.support.pool_harness import run_pool, write_config
from warehouse.db import Warehouse

RELEASE = "critique_canvas_release"
RIGHTS = {"photography": "allowed", "painting": "restricted", "virtual": "unknown"}


@dataclass
class Built:
    root: Path
    wh: Warehouse
    folder: Path
    loaded: LoadedRelease
    audit_rejected: str
    first: dict
    second: dict


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Built:
    root = tmp_path_factory.mktemp("critique_release")
    images = pool_folder(root)
    folders = [{"path": str(images / domain), "domain": domain, "license": "CC0-1.0", "provider": "test",
                "redistribution": rights,
                **({} if domain == "virtual" else {"source_url_prefix": f"https://images.example.org/{domain}"})}
               for domain, rights in RIGHTS.items()]
    # pool_folder's images are noise over a gradient: the low-quality rules (rightly) off for them
    config = write_config(root, {"folders": folders, "filters": {"clarity": {"domains": []}}}, releases={"out_dir": "releases"},
                          critique={"max_concurrency": 3, "eval_per_domain": 1, "audit": AUDIT})
    assert run_pool(config).success
    chain = materialize(config, "critique_pairs", "critique_splits", "critique_audit_sample")
    assert chain.success, failures(chain)
    wh = Warehouse(root / "warehouse.duckdb")
    sheet, rows = _blank_sheet(wh)
    for reviewer in ("alice", "bob"):  # both reject the first sampled pair, accept the rest
        _return_sheet(sheet.parent / "returned", f"{reviewer}.csv", rows, reviewer,
                      {0: ("reject", "material hallucination", ""), **{n: ("accept", "", "") for n in range(1, len(rows))}})
    released = materialize(config, "critique_audit_report", RELEASE)
    assert released.success, failures(released)
    folder = root / "releases" / "critique_canvas"
    first = file_states(folder)
    again = materialize(config, RELEASE)
    assert again.success, failures(again)
    loaded = check_release_folder(folder, cache_dir=root / "hf_cache")
    return Built(root, wh, folder, loaded, rows[0]["pair_id"], first, file_states(folder))


def test_every_config_and_split_loads_with_images_decoded_or_withheld_by_licence(built: Built):
    assert set(built.loaded.configs) == {"records", "conversations"}
    assert all(set(d) == {"train", "eval"} for d in built.loaded.configs.values())
    rights = dict(built.wh.query("SELECT DISTINCT id, provenance.redistribution AS r"
                                 " FROM critique_canvas_records").itertuples(index=False))
    assert sorted(set(rights.values())) == ["allowed", "restricted", "unknown"]
    for config, dataset in built.loaded.configs.items():
        for split, rows in dataset.items():
            for row in rows:
                assert (row["image"] is None) == (rights[row["id"]] != "allowed"), (config, split, row["id"])
    assert built.loaded.decoded and built.loaded.withheld
    assert built.loaded.decoded + built.loaded.withheld == 2 * built.wh.scalar("SELECT count(*) FROM critique_canvas_records")


def test_rows_are_the_views_pairs_with_provenance_but_no_run_ids(built: Built):
    view = built.wh.query("SELECT * FROM critique_canvas_records")
    records, conversations = parquet_frame(built.folder, "records"), parquet_frame(built.folder, "conversations")
    expected = sorted(zip(view["split"], view["id"]))
    assert sorted(zip(records["split"], records["id"])) == expected == sorted(zip(conversations["split"], conversations["id"]))
    assert built.audit_rejected not in set(records["id"])  # both reviewers rejected it
    by_id = {row["id"]: row for row in view.to_dict("records")}
    for row in records.to_dict("records"):
        mine = by_id[row["id"]]
        for column in ("domain", "dimension", "improvement", "instruction", "response", "conversation_group", "turn"):
            assert row[column] == mine[column], column
        # The view names the image by its pixel digest and shows its original; the release, by the sha256 of the PNG
        # of its normalised pixels that it publishes.
        original = LocalBlobStore(built.root / "blobs").get_bytes(mine["image"].removeprefix("blob:"))
        assert row["image_sha256"] == hashlib.sha256(normalized_png(original)).hexdigest()
        assert list(row["selected_dimensions"]) == list(mine["selected_dimensions"])
        provenance, source = row["provenance"], mine["provenance"]
        assert "activity_id" not in provenance and "run_id" not in provenance
        for role in ("planner", "annotator", "verifier"):
            assert provenance[role]["model"] == "heuristic-v1" and list(provenance[role]["calls"]) == list(source[role]["calls"])
        assert provenance["verifier"]["visual_grounding"] and provenance["license"] == "CC0-1.0"
        if row["domain"] == "virtual":  # the folder has no public URL: the local file it names stays out
            assert not source["source_url"].startswith("http") and provenance["source_url"] is None
        else:
            assert provenance["source_url"] == source["source_url"] and provenance["source_url"].startswith("https://")
    audited = records[[p["audit"]["rounds"] is not None for p in records["provenance"]]]
    assert len(audited) == len(_blank_sheet(built.wh)[1]) - 1
    assert all(p["audit"]["accepted"] and p["audit"]["n_reviews"] == 2 for p in audited["provenance"])
    for row in conversations.to_dict("records"):
        human, gpt = row["conversations"]
        assert human == {"from": "human", "value": "<image>\n" + by_id[row["id"]]["instruction"]}
        assert gpt == {"from": "gpt", "value": by_id[row["id"]]["response"]}


def test_rows_croissant_and_attribution_hold_no_run_or_activity_id_or_local_path(built: Built):
    rows = [str(p.relative_to(built.folder)) for p in (built.folder / "data").rglob("*.parquet")]
    check_no_local_traces(built.folder, [*run_traces(built.wh), str(built.root)],
                          files=[*rows, "croissant.json", "ATTRIBUTION.csv"])


def test_card_and_provenance_hold_no_local_path(built: Built):
    check_no_local_traces(built.folder, [*run_traces(built.wh), str(built.root)], files=["README.md", "provenance.parquet"])


def test_an_unchanged_second_materialization_rewrites_nothing(built: Built):
    assert built.second == built.first
    assert "unchanged" in last_summary(built.wh, RELEASE)
    manifest = json.loads((built.folder / "release.json").read_text())
    splits = dict(built.wh.query("SELECT split, count(*) AS n FROM critique_canvas_records GROUP BY ALL").itertuples(index=False))
    assert manifest["rows"] == {f"{config}/{split}": n for config in ("records", "conversations") for split, n in splits.items()}
