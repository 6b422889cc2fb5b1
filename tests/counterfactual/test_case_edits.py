"""Counterfactual edits of ContextCanvas case images, materialized for real over the bundled case sample: spec rows
that name a case (and one of its images), edits supplied as files (no model called), every bad row its own
rejection naming its line, the lineage to the case and its image, and a case image edited through the real openai
SDK against a loopback server."""

import hashlib
import io
import json

import pytest
import yaml
from dagster import AssetKey
from PIL import Image, ImageOps

from pipelines.config import SAMPLE_CONFIG, load_config
from pipelines.definitions import build_definitions
from tests.support.context_harness import ContextProject, context_project
from tests.support.critique_harness import failures, materialize
from tests.support.model_servers import ModelApiServer, invert_named_region
from tests.support.pool_harness import step_summaries
from warehouse.db import Warehouse

HEADER = "source_id,decisive_cue,instruction,original_label,intended_label,edited_image\n"
KEY = "sk-loopback-case-edit-never-stored"


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> ContextProject:
    project = context_project(tmp_path_factory.mktemp("case_edits"))
    result = materialize(project.config, "context_cases")
    assert result.success, failures(result)
    return project


def _configure(config, **counterfactual) -> None:
    data = yaml.safe_load(config.read_text(encoding="utf-8"))
    data["counterfactual"] = {key: str(value) for key, value in counterfactual.items()}
    data.pop("image_editor", None)
    config.write_text(yaml.safe_dump(data), encoding="utf-8")


def _case_image(wh: Warehouse, case_id: str, position: int = 0) -> dict:
    return wh.query("SELECT * FROM context_case_images WHERE case_id = ? AND position = ?",
                    [case_id, position]).iloc[0].to_dict()


def _stored(root, sha: str) -> bytes:
    return (root / "blobs" / sha[:2] / sha[2:4] / sha).read_bytes()


def _png(image: Image.Image) -> bytes:
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def _inverted(data: bytes) -> bytes:
    with Image.open(io.BytesIO(data)) as image:
        return _png(ImageOps.invert(image.convert("RGB")))


def test_the_edits_wait_for_the_cases_and_the_release_for_the_edits():
    graph = build_definitions(load_config(SAMPLE_CONFIG)).resolve_asset_graph()
    assert {AssetKey("image_pool"), AssetKey("context_cases")} <= graph.get(AssetKey("counterfactual_edits")).parent_keys
    assert AssetKey("counterfactual_edits") in graph.get(AssetKey("context_canvas_release")).parent_keys


def test_spec_rows_naming_cases_with_supplied_edits_are_kept_or_rejected_naming_their_line(project):
    root, wh = project.root, Warehouse(project.root / "warehouse.duckdb")
    s01, s04 = _case_image(wh, "ctx-s01"), _case_image(wh, "ctx-s04", 1)
    sheets = root / "sheets"
    (sheets / "edits").mkdir(parents=True)
    s01_edit = _inverted(_stored(root, s01["image_sha256"]))
    (sheets / "edits" / "s01.png").write_bytes(s01_edit)
    (sheets / "edits" / "s04 image 2.png").write_bytes(_inverted(_stored(root, s04["image_sha256"])))
    (sheets / "edits" / "broken.png").write_bytes(b"<html>not an image</html>")
    s05 = _case_image(wh, "ctx-s05")
    (sheets / "edits" / "s05-unchanged.png").write_bytes(_stored(root, s05["image_sha256"]))
    specs = sheets / "specs.csv"
    specs.write_text(HEADER + "\n".join([
        "ctx-s01,the lit towers,Remove the towers,No,Yes,edits/s01.png",                  # 2: kept
        "ctx-s04#1,the snowy foreground,Make it a summer meadow,No,Yes,edits/s04 image 2.png",  # 3: kept, image 2
        "ctx-nope,a cue,Change it,No,Yes,",                                                # 4: no such case
        "ctx-s04#2,a cue,Change it,No,Yes,",                                               # 5: no third image
        "ctx-s02,the hills,Add houses,Yes,No,edits/missing.png",                           # 6: file not there
        "ctx-s03,the palette,Warm it,No,Yes,edits/broken.png",                             # 7: not an image
        "ctx-s05,the disc,Brighten it,No,Yes,edits/s05-unchanged.png",                     # 8: the source itself
        "ctx-s07,the glow,Remove it,Yes,No,",                                              # 9: waits for a model
        f"ctx-s01,the moon,Hide it,No,Yes,{root / 'sheets' / 'edits' / 's01.png'}",        # 10: an absolute path
    ]) + "\n", encoding="utf-8")
    _configure(project.config, specs=specs)
    result = materialize(project.config, "counterfactual_edits")
    assert result.success, failures(result)
    summary = step_summaries(wh, result.run_id)["counterfactual_edits"]
    assert summary["edited"] == 2 and summary["specs_waiting_for_a_model"] == 1 and "no_model" in summary

    edits = {r["case_id"]: r for r in wh.query("SELECT * FROM counterfactual_edit WHERE provider = 'supplied'")
             .to_dict("records")}
    assert set(edits) == {"ctx-s01", "ctx-s04"}
    first, second = edits["ctx-s01"], edits["ctx-s04"]
    # No model was called: the file is the edit, recorded by its name relative to the project root.
    assert (first["provider"], first["model"], first["provider_model"], first["attempts"]) == ("supplied", "file", None, 0)
    assert first["supplied_file"] == "sheets/edits/s01.png" and second["supplied_file"] == "sheets/edits/s04 image 2.png"
    assert (first["source_id"], first["image_position"], second["source_id"], second["image_position"]) == (
        "ctx-s01", 0, "ctx-s04#1", 1)
    assert first["source_sha256"] == s01["image_sha256"] and second["source_sha256"] == s04["image_sha256"]
    assert first["output_sha256"] == hashlib.sha256(s01_edit).hexdigest() and first["output_mime"] == "image/png"
    assert _stored(root, first["output_sha256"]) == s01_edit
    assert {r["manual_check"] for r in edits.values()} == {"pending"} and all(r["synthetic"] for r in edits.values())
    # Lineage: the image edited (its pool item, as the case links it), the case, and the file it was read from.
    for row, image in ((first, s01), (second, s04)):
        assert image["pool_item_id"]
        edges = set(wh.query("SELECT source_entity_id, relation FROM was_derived_from WHERE entity_id = ?",
                             [row["record_id"]]).itertuples(index=False, name=None))
        assert edges == {(image["pool_item_id"], "counterfactual_of"), (image["case_entity_id"], "edit_of_case"),
                         (f"file:{row['output_sha256']}", "read_from")}
        attributes = json.loads(wh.scalar("SELECT attributes FROM entity WHERE entity_id = ?", [f"file:{row['output_sha256']}"]))
        assert attributes == {"path": row["supplied_file"]}
    with wh.transaction() as con:
        dumped = " ".join(str(r) for r in con.execute(
            "SELECT * FROM counterfactual_edit e JOIN entity n ON n.entity_id IN (e.record_id, 'file:' || e.output_sha256)"
        ).fetchall())
    assert str(root) not in dumped

    rejected = {int(d.split("#line=")[1].split(":")[0]): (c, d) for c, d in wh.query(
        "SELECT reason_code, detail FROM rejection WHERE stage = 'counterfactual_edit'").itertuples(index=False)}
    assert {line: code for line, (code, _) in rejected.items()} == {
        4: "unknown_case", 5: "unknown_case_image", 6: "edited_image_missing", 7: "edited_image_unreadable",
        8: "invalid_counterfactual_spec", 10: "invalid_counterfactual_spec"}
    assert all(str(specs) in detail for _, detail in rejected.values())
    assert "ctx-nope is not a stored ContextCanvas case" in rejected[4][1]
    assert "case ctx-s04 has 2 image(s) (positions 0-1); there is no image 2" in rejected[5][1]
    assert "edited_image sheets/edits/missing.png: file not found" in rejected[6][1]
    assert "edited_image sheets/edits/broken.png: not a readable image (not_an_image" in rejected[7][1]
    assert "returned the source unchanged" in rejected[8][1]
    assert "edited_image:" in rejected[10][1] and "is absolute or a URL" in rejected[10][1]

    # Done once; a supplied file replaced by another edit is a new edit (a new record beside the old one).
    again = materialize(project.config, "counterfactual_edits")
    assert again.success and step_summaries(wh, again.run_id)["counterfactual_edits"]["already_edited"] == 2
    redone = _png(Image.open(io.BytesIO(s01_edit)).rotate(180))
    (sheets / "edits" / "s01.png").write_bytes(redone)
    assert materialize(project.config, "counterfactual_edits").success
    outputs = set(wh.query("SELECT output_sha256 FROM counterfactual_edit WHERE case_id = 'ctx-s01'")["output_sha256"])
    assert outputs == {first["output_sha256"], hashlib.sha256(redone).hexdigest()}

    # Supplied edits go through the manual check like any other.
    checks = sheets / "checks.csv"
    checks.write_text(f"record_id,decision,reviewer,note\n{first['record_id']},approved,ana,\n"
                      f"{second['record_id']},rejected,ana,the trees changed too\n", encoding="utf-8")
    _configure(project.config, specs=specs, checks=checks)
    assert materialize(project.config, "counterfactual_edits").success
    states = dict(wh.query("SELECT record_id, manual_check FROM counterfactual_edit").itertuples(index=False))
    assert (states[first["record_id"]], states[second["record_id"]]) == ("approved", "rejected")


def test_a_case_image_is_edited_by_the_configured_model(project, monkeypatch):
    monkeypatch.setenv("LOOP_EDIT_KEY", KEY)
    root, wh = project.root, Warehouse(project.root / "warehouse.duckdb")
    image = _case_image(wh, "ctx-s08")  # a case the review left undecided: edits do not wait for the review
    specs = root / "model_specs.csv"
    specs.write_text(HEADER + "ctx-s08,the bare red plain,Cover the left half with young green trees,No,Yes,\n",
                     encoding="utf-8")
    with ModelApiServer(openai_key=KEY) as server:
        data = yaml.safe_load(project.config.read_text(encoding="utf-8"))
        data["counterfactual"] = {"specs": str(specs)}
        data["image_editor"] = {"provider": "openai", "model": "loop-edit-1", "api_key_env": "LOOP_EDIT_KEY",
                                "base_url": server.openai_base_url, "max_retries": 1, "backoff_s": 0.01, "timeout_s": 5}
        project.config.write_text(yaml.safe_dump(data), encoding="utf-8")
        result = materialize(project.config, "counterfactual_edits")
        assert result.success, failures(result)
        assert len(server.requests) == 1
    row = wh.query("SELECT * FROM counterfactual_edit WHERE case_id = 'ctx-s08'").iloc[0]
    assert (row["provider"], row["model"], row["supplied_file"], row["image_position"]) == ("openai", "loop-edit-1", None, 0)
    # The model was sent the case image's bytes, and its answer is stored.
    source = _stored(root, image["image_sha256"])
    assert row["source_sha256"] == image["image_sha256"]
    assert _stored(root, row["output_sha256"]) == invert_named_region(source, row["prompt"])
    relations = dict(wh.query("SELECT relation, source_entity_id FROM was_derived_from WHERE entity_id = ?",
                              [row["record_id"]]).itertuples(index=False))
    assert relations == {"counterfactual_of": image["pool_item_id"] or f"file:{image['image_sha256']}",
                         "edit_of_case": image["case_entity_id"]}
