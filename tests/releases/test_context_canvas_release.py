"""The ContextCanvas release materialized through Dagster on a real warehouse: the bundled eight-case sample over
the sample corpus (a pool of the cases' images, the cases, the review sheet: six retained), with the second image of
the two-image case ctx-s04 marked restricted and ctx-s03's image unknown so those ship without bytes, then read back
with every reader a user has. The sample's two approved counterfactual edits (ctx-s01, ctx-s03) and three more
(an approved edit whose intended label no option has, an approved edit of a case the review left undecided, a
pending one) give the counterfactual_pairs config; a release written before any edit has none.

The old export folder loaded through ``datasets.load_dataset`` as one "test" split and lost the gold file; here
every config loads on its own with its eval split.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml
from PIL import Image, ImageOps

from tests.releases.release_checks import (
    LoadedRelease,
    check_no_local_traces,
    check_release_folder,
    file_states,
    last_summary,
    parquet_frame,
    release_rows,
    run_traces,
    shards,
)
from tests.support.context_harness import context_project
from tests.support.critique_harness import failures, materialize
from warehouse.db import Warehouse

RELEASE = "context_canvas_release"
RESTRICTED = ("ctx-s04", 1)  # (case, image position) whose rights say restricted
UNKNOWN = ("ctx-s03", 0)  # whose rights say unknown: withheld too, and so is the edit of it
CONFIGS = {"cases", "gold", "annotations", "counterfactual_pairs"}
PAIR_COLUMNS = ["id", "case_id", "scenario", "proposed_assessment", "question", "options", "original_image",
                "edited_image", "original_image_sha256", "edited_image_sha256", "original_gold", "edited_gold",
                "decisive_cue", "instruction", "edit_provider", "edit_model"]


@dataclass
class Built:
    root: Path
    wh: Warehouse
    folder: Path
    loaded: LoadedRelease
    first: dict
    second: dict
    without_edits: dict   # release rows written before any counterfactual edit
    with_edits: dict      # the step summary of the release that first held the pairs
    cases: dict           # case id -> its record as the fixture wrote it
    pairs: dict           # case id -> the sample's approved edit's record id


def _set_rights(document: dict) -> None:
    for (case_id, position), value in ((RESTRICTED, "restricted"), (UNKNOWN, "unknown")):
        (case,) = [c for c in document["cases"] if c["case_id"] == case_id]
        case["rights"][position]["redistribution"] = value


def _inverted(path: Path) -> bytes:
    with Image.open(path) as image:
        out = io.BytesIO()
        ImageOps.invert(image.convert("RGB")).save(out, format="PNG")
        return out.getvalue()


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Built:
    project = context_project(tmp_path_factory.mktemp("context_release"), _set_rights, releases={"out_dir": "releases"})
    root, config, folder = project.root, project.config, project.root / "releases" / "context_canvas"
    result = materialize(config, "context_cases", "context_case_review", RELEASE)
    assert result.success, failures(result)
    without_edits = release_rows(folder)
    # The sample's sheets, and three more edits: of ctx-s04's second image (its options are Image 1 / Image 2, so no
    # option says "Yes"), of ctx-s08 (needs adjudication: not in the release), of ctx-s02 (never checked).
    sheets = project.context / "counterfactual"
    document = json.loads((project.context / "cases.json").read_text(encoding="utf-8"))
    cases = {c["case_id"]: c for c in document["cases"]}
    for case_id, position in (("ctx-s04", 1), ("ctx-s08", 0), ("ctx-s02", 0)):
        (sheets / "edits" / f"{case_id}.png").write_bytes(_inverted(project.context / cases[case_id]["images"][position]))
    with (sheets / "specs.csv").open("a", encoding="utf-8", newline="") as stream:
        stream.write("ctx-s04#1,the snowy foreground,Make it a green meadow,No,Yes,edits/ctx-s04.png\n"
                     "ctx-s08,the red plain,Make it green,No,Yes,edits/ctx-s08.png\n"
                     "ctx-s02,the open hills,Add houses,Yes,No,edits/ctx-s02.png\n")
    data = yaml.safe_load(config.read_text(encoding="utf-8"))
    data["counterfactual"] = {"specs": str(sheets / "specs.csv"), "checks": str(sheets / "checks.csv")}
    config.write_text(yaml.safe_dump(data), encoding="utf-8")
    result = materialize(config, "counterfactual_edits")
    assert result.success, failures(result)
    wh = Warehouse(root / "warehouse.duckdb")
    more = dict(wh.query("SELECT case_id, record_id FROM counterfactual_edit WHERE case_id IN ('ctx-s04', 'ctx-s08')")
                .itertuples(index=False))
    with (sheets / "checks.csv").open("a", encoding="utf-8", newline="") as stream:
        stream.writelines(f"{more[c]},approved,ben,\n" for c in ("ctx-s04", "ctx-s08"))
    result = materialize(config, "counterfactual_edits", RELEASE)
    assert result.success, failures(result)
    with_edits = last_summary(wh, RELEASE)
    first = file_states(folder)
    again = materialize(config, RELEASE)
    assert again.success, failures(again)
    loaded = check_release_folder(folder, cache_dir=root / "hf_cache")
    return Built(root, wh, folder, loaded, first, file_states(folder), without_edits, with_edits, cases,
                 project.summary["counterfactual"]["record_ids"])


def _view(wh: Warehouse, sql: str) -> list[dict]:
    return wh.query(sql).to_dict("records")


def test_every_config_loads_with_its_eval_split_and_the_restricted_image_is_null(built: Built):
    assert set(built.loaded.configs) == CONFIGS
    assert all(set(d) == {"eval"} for d in built.loaded.configs.values())
    cases = {row["id"]: row for row in built.loaded.configs["cases"]["eval"]}
    restricted_id = built.wh.scalar("SELECT evaluation_id FROM context_case WHERE case_id = ?", [RESTRICTED[0]])
    first, second = cases[restricted_id]["images"]
    assert first is not None and second is None
    # cases: ctx-s04's second image and ctx-s03's withheld; pairs: both images of ctx-s03's pair, none of ctx-s01's
    n_images = sum(len(r["images"]) for r in cases.values())
    assert built.loaded.withheld == 2 + 2 and built.loaded.decoded == (n_images - 2) + 2
    assert set(built.loaded.configs["cases"]["eval"].column_names) == {
        "id", "images", "image_sha256", "scenario", "proposed_assessment", "question", "options",
        "neutral_description", "evidence_description"}  # no answer key


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
    assert manifest["rows"] == {"cases/eval": 6, "gold/eval": 6, "annotations/eval": 13, "counterfactual_pairs/eval": 2}
    assert manifest["withheld_images"] == 3  # ctx-s04's second image, ctx-s03's image and its edit


def test_the_case_descriptions_travel_from_the_case_file_to_the_release(built: Built):
    cases = parquet_frame(built.folder, "cases")
    ids = dict(built.wh.query("SELECT evaluation_id, case_id FROM context_case").itertuples(index=False))
    for row in cases.itertuples(index=False):
        written = built.cases[ids[row.id]]
        assert (row.neutral_description, row.evidence_description) == (
            written["neutral_description"], written["evidence_description"])
        assert row.neutral_description and row.evidence_description


def test_a_release_without_counterfactual_edits_has_no_pairs_config(built: Built):
    assert built.without_edits == {"cases": {"eval": 6}, "gold": {"eval": 6}, "annotations": {"eval": 13}}


def test_counterfactual_pairs_are_the_approved_edits_of_retained_cases(built: Built):
    wh = built.wh
    (files,) = shards(built.folder)["counterfactual_pairs"].values()
    assert pq.read_schema(files[0]).names == PAIR_COLUMNS
    pairs = parquet_frame(built.folder, "counterfactual_pairs")
    # Four approved edits; ctx-s08's case is not retained and no option of ctx-s04 says "Yes": two pairs.
    approved = dict(wh.query("SELECT case_id, record_id FROM counterfactual_edit WHERE manual_check = 'approved'")
                    .itertuples(index=False))
    assert sorted(approved) == ["ctx-s01", "ctx-s03", "ctx-s04", "ctx-s08"]
    assert sorted(pairs["id"]) == sorted(built.pairs.values()) == sorted(approved[c] for c in ("ctx-s01", "ctx-s03"))
    cases = {r["id"]: r for r in parquet_frame(built.folder, "cases").to_dict("records")}
    evaluation_ids = dict(wh.query("SELECT case_id, evaluation_id FROM context_case").itertuples(index=False))
    for case_id, record_id in built.pairs.items():
        pair = pairs[pairs["id"] == record_id].iloc[0]
        edit = wh.query("SELECT * FROM counterfactual_edit WHERE record_id = ?", [record_id]).iloc[0]
        case = cases[pair["case_id"]]
        assert pair["case_id"] == evaluation_ids[case_id]  # the cases config's id
        assert (pair["scenario"], pair["question"], pair["proposed_assessment"]) == (
            case["scenario"], case["question"], case["proposed_assessment"])
        assert [dict(o) for o in pair["options"]] == [dict(o) for o in case["options"]] == [
            {"id": "A", "text": "Yes"}, {"id": "B", "text": "No"}]
        assert (pair["original_gold"], pair["edited_gold"]) == ("B", "A")  # No with the original, Yes with the edit
        assert pair["original_image_sha256"] == edit["source_sha256"] == case["image_sha256"][0]
        assert pair["edited_image_sha256"] == edit["output_sha256"]
        assert (pair["decisive_cue"], pair["instruction"]) == (edit["decisive_cue"], edit["instruction"])
        assert (pair["edit_provider"], pair["edit_model"]) == ("supplied", "file")
    # Image bytes follow the original's licence: ctx-s01 (allowed) ships both, ctx-s03 (unknown) neither.
    loaded = {r["id"]: r for r in built.loaded.configs["counterfactual_pairs"]["eval"]}
    assert all(isinstance(loaded[built.pairs["ctx-s01"]][c], Image.Image) for c in ("original_image", "edited_image"))
    assert all(loaded[built.pairs["ctx-s03"]][c] is None for c in ("original_image", "edited_image"))
    with (built.folder / "ATTRIBUTION.csv").open(encoding="utf-8", newline="") as stream:
        attribution = {row["image_sha256"]: row for row in csv.DictReader(stream)}
    for case_id, shipped in (("ctx-s01", "true"), ("ctx-s03", "false")):
        pair = pairs[pairs["id"] == built.pairs[case_id]].iloc[0]
        original, edited = attribution[pair["original_image_sha256"]], attribution[pair["edited_image_sha256"]]
        assert edited["bytes_included"] == original["bytes_included"] == shipped
        assert {k: edited[k] for k in ("source_url", "creator", "license", "redistribution")} == {
            k: original[k] for k in ("source_url", "creator", "license", "redistribution")}


def test_left_out_pairs_are_counted_and_every_pair_has_its_provenance(built: Built):
    assert built.with_edits["left_out:counterfactual_pairs:no_option_for_intended_label"] == 1
    assert built.with_edits["rows:counterfactual_pairs/eval"] == 2
    card = (built.folder / "README.md").read_text(encoding="utf-8")
    assert "| left out of counterfactual_pairs | no_option_for_intended_label | 1 |" in card
    assert "config_name: counterfactual_pairs" in card and "## Counterfactual pairs" in card
    provenance = pq.read_table(built.folder / "provenance.parquet").to_pandas()
    for record_id in built.pairs.values():
        mine = provenance[(provenance["config"] == "counterfactual_pairs") & (provenance["row_id"] == record_id)]
        steps = set(zip(mine["depth"], mine["derived_as"].fillna("released"), mine["entity_kind"]))
        # the edit; the case image it edits, the case, the supplied file; the case's own file beyond
        assert {(0, "released", "counterfactual_edit"), (1, "edit_of_case", "context_case"),
                (1, "read_from", "file"), (2, "read_from", "case_source")} <= steps
        assert [kind for _, relation, kind in steps if relation == "counterfactual_of"] == ["pool_item"]
        assert set(mine.loc[mine["depth"] == 0, "asset_key"]) == {"counterfactual_edits"}
