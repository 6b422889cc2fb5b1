"""The ContextCanvas release materialized through Dagster on a real warehouse: the bundled eight-case sample over
the sample corpus (a pool of the cases' images, the cases, the review sheet: six retained), with the second image of the two-image case ctx-s04
marked restricted so one image ships without bytes, then read back with every reader a user has.

The old export folder loaded through ``datasets.load_dataset`` as one "test" split and lost the gold file; here
every config loads on its own with its eval split.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from sample.context_fixture import write_context_sample
from sample.make_corpus import build_corpus
from tests.releases.release_checks import (
    LoadedRelease,
    check_no_local_traces,
    check_release_folder,
    file_states,
    last_summary,
    parquet_frame,
    run_traces,
)
from tests.support.critique_harness import failures, materialize
from tests.support.pool_harness import run_pool, write_config
from warehouse.db import Warehouse

RELEASE = "context_canvas_release"
RESTRICTED = ("ctx-s04", 1)  # (case, image position) whose rights say restricted
CONFIGS = {"cases", "gold", "annotations"}


@dataclass
class Built:
    root: Path
    wh: Warehouse
    folder: Path
    loaded: LoadedRelease
    first: dict
    second: dict


def _cases_manifest(corpus: Path, cases_file: Path, document: dict) -> Path:
    """The corpus manifest cut to the cases' images (a pool of nine, not sixty), beside the original so its
    locators stay relative to it."""
    used = {(cases_file.parent / ref).resolve() for case in document["cases"] for ref in case["images"]}
    with (corpus / "manifest.csv").open(encoding="utf-8", newline="") as stream:
        rows = list(csv.DictReader(stream))
    manifest = corpus / "manifest_of_cases.csv"
    with manifest.open("w", encoding="utf-8", newline="") as stream:
        writer = csv.DictWriter(stream, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(r for r in rows if (corpus / r["locator"]).resolve() in used)
    return manifest


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Built:
    root = tmp_path_factory.mktemp("context_release")
    expected = build_corpus(root / "sample")
    write_context_sample(root / "context", root / "sample")
    cases_file = root / "context" / "cases.json"
    document = json.loads(cases_file.read_text(encoding="utf-8"))
    case_id, position = RESTRICTED
    (case,) = [c for c in document["cases"] if c["case_id"] == case_id]
    case["rights"][position]["redistribution"] = "restricted"
    cases_file.write_text(json.dumps(document, indent=2, ensure_ascii=False), encoding="utf-8")
    pool = {"manifests": [str(_cases_manifest(root / "sample", cases_file, document))],
            "filters": {"license_allowlist": list(expected["allowed_licenses"])}}
    config = write_config(root, pool, context_canvas={"cases": [str(cases_file)], "returned_dir": str(root / "context")},
                          releases={"out_dir": "releases"})
    assert run_pool(config).success
    result = materialize(config, "context_cases", "context_case_review", RELEASE)
    assert result.success, failures(result)
    folder = root / "releases" / "context_canvas"
    first = file_states(folder)
    again = materialize(config, RELEASE)
    assert again.success, failures(again)
    wh = Warehouse(root / "warehouse.duckdb")
    loaded = check_release_folder(folder, cache_dir=root / "hf_cache")
    return Built(root, wh, folder, loaded, first, file_states(folder))


def _view(wh: Warehouse, sql: str) -> list[dict]:
    return wh.query(sql).to_dict("records")


def test_every_config_loads_with_its_eval_split_and_the_restricted_image_is_null(built: Built):
    assert set(built.loaded.configs) == CONFIGS
    assert all(set(d) == {"eval"} for d in built.loaded.configs.values())
    cases = {row["id"]: row for row in built.loaded.configs["cases"]["eval"]}
    restricted_id = built.wh.scalar("SELECT evaluation_id FROM context_case WHERE case_id = ?", [RESTRICTED[0]])
    first, second = cases[restricted_id]["images"]
    assert first is not None and second is None
    assert built.loaded.withheld == 1 and built.loaded.decoded == sum(len(r["images"]) for r in cases.values()) - 1
    assert set(built.loaded.configs["cases"]["eval"].column_names) == {
        "id", "images", "image_sha256", "scenario", "proposed_assessment", "question", "options"}  # no answer key


def test_cases_and_gold_rows_are_the_retained_cases_of_the_views(built: Built):
    wh = built.wh
    eval_view = {r["id"]: r for r in _view(wh, "SELECT * FROM context_canvas_eval_records")}
    gold_view = {r["id"]: r for r in _view(wh, "SELECT * FROM context_canvas_gold_records")}
    statuses = dict(wh.query("SELECT case_id, status FROM context_case_status").itertuples(index=False))
    assert sorted(statuses.values()).count("retained") == 6 == len(eval_view) == len(gold_view)
    cases, gold = parquet_frame(built.folder, "cases"), parquet_frame(built.folder, "gold")
    assert sorted(cases["id"]) == sorted(eval_view) == sorted(gold["id"]) == sorted(gold_view)
    assert set(gold["case_id"]) == {c for c, s in statuses.items() if s == "retained"}  # ctx-s06, ctx-s08 left out
    images = wh.query("SELECT c.evaluation_id AS id, i.position, i.image_sha256, i.pool_item_id, i.rights"
                      " FROM context_case_image i JOIN context_case c USING (case_id) ORDER BY id, position")
    for row in cases.itertuples(index=False):
        view = eval_view[row.id]
        assert (row.scenario, row.question, row.proposed_assessment) == (view["scenario"], view["question"],
                                                                         view["proposed_assessment"])
        assert [dict(o) for o in row.options] == [dict(o) for o in view["options"]]
        assert list(row.image_sha256) == list(images[images["id"] == row.id]["image_sha256"])
    for row in gold.itertuples(index=False):
        view = gold_view[row.id]
        assert (row.case_id, row.gold, row.gold_text, row.rationale, row.source_basis) == (
            view["case_id"], view["gold"], view["gold_text"], view["rationale"], view["source_basis"])
        mine = images[images["id"] == row.id]
        assert [r["image_sha256"] for r in row.image_rights] == list(mine["image_sha256"])
        assert [r["pool_item_id"] for r in row.image_rights] == list(mine["pool_item_id"])
        for released, rights in zip(row.image_rights, mine["rights"]):
            rights = json.loads(rights)
            assert {k: released[k] for k in rights} == rights  # every rights field, the URL being public
    restricted = gold[gold["case_id"] == RESTRICTED[0]].iloc[0]["image_rights"][RESTRICTED[1]]
    assert restricted["redistribution"] == "restricted" and restricted["pool_item_id"]


def test_annotations_are_every_review_of_a_retained_case_under_pseudonyms(built: Built):
    wh = built.wh
    reviews = wh.query("SELECT c.evaluation_id AS id, v.reviewer, v.final, v.criteria FROM context_review v"
                       " JOIN context_case c USING (case_id) JOIN context_retention r USING (case_id)"
                       " WHERE r.status = 'retained'")
    assert sorted(set(reviews["reviewer"])) == ["ana", "ben", "panel"]
    pseudonym = {"ana": "reviewer_1", "ben": "reviewer_2", "panel": "reviewer_3"}  # numbered in name order
    annotations = parquet_frame(built.folder, "annotations")
    assert len(annotations) == len(reviews) == 13  # six cases by two reviewers, and the panel's row on ctx-s07
    released = {(r.id, r.reviewer, r.final): {c["criterion"]: c["passed"] for c in r.criteria}
                for r in annotations.itertuples(index=False)}
    assert released == {(r.id, pseudonym[r.reviewer], r.final): json.loads(r.criteria)
                        for r in reviews.itertuples(index=False)}
    (final,) = annotations[annotations["final"]].itertuples(index=False)
    assert final.annotation_id == f"{final.id}/reviewer_3/final" and final.reviewer == "reviewer_3"
    assert set(annotations["reviewer"]) == set(pseudonym.values())
    assert not any(name in a for a in annotations["annotation_id"] for name in pseudonym)


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
    assert manifest["rows"] == {"cases/eval": 6, "gold/eval": 6, "annotations/eval": 13}
    assert manifest["withheld_images"] == 1
