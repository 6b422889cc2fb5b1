"""The design stages materialized for real on the generated Crello sample: ingestion of v4, v5 and broken
records, seeded perturbations with their log, deterministic renders, and resume without repeats."""

import csv
import json
from pathlib import Path

import numpy as np
from dagster import AssetKey, DagsterInstance
from PIL import Image

from assets.designs.logic.design_model import Design
from assets.designs.logic.perturb import OPERATIONS
from pipelines.config import load_config
from pipelines.definitions import build_definitions
from tests.support.pool_harness import write_config
from tests.support.design_model import remote_design_labeller
from tests.support.model_servers import MALFORMED_CONTENT, InjectedFailure, ModelApiServer, wire_user_text
from warehouse.db import Warehouse

DESIGN_ASSETS = ["design_records", "perturbed_designs", "design_renders", "design_review_sheet", "design_labels", "design_splits",
                 "design_questions", "design_reasoning_paths", "aeseval_export"]


def _run(config: Path, assets: list[str] = DESIGN_ASSETS):
    job = build_definitions(load_config(config)).resolve_job_def("design_aesthetics_job")
    return job.execute_in_process(instance=DagsterInstance.ephemeral(), raise_on_error=False,
                                  asset_selection=[AssetKey(a) for a in assets])


def _built(folder: Path, designs: dict) -> tuple[Path, Warehouse]:
    config = write_config(folder, {}, designs={"batch_size": 3, **designs})
    result = _run(config)
    assert result.success, [e.message for e in result.all_events if e.is_failure]
    return config, Warehouse(folder / "warehouse.duckdb")


def _png(wh: Warehouse, folder: Path, design_id: str) -> Image.Image:
    sha = wh.scalar("SELECT png_sha256 FROM design_render WHERE design_id = ?", [design_id])
    return Image.open(folder / "blobs" / sha[:2] / sha[2:4] / sha)


def test_records_perturbations_and_renders(tmp_path, fixture_dir):
    source, expected = fixture_dir
    config, wh = _built(tmp_path, {"folders": [str(source / "v5"), str(source / "broken")],
                                   "perturb": {"seed": 5, "variants_per_design": 2}})
    n_designs = len(expected["designs"])
    # Every broken record is rejected with the reason the fixture expects, and keeps its locator.
    rejected = dict(wh.query("SELECT regexp_extract(locator, '[^/]+$') AS name, reason_code FROM design_source_read"
                             " WHERE reason_code IS NOT NULL").itertuples(index=False))
    assert rejected == expected["broken"]
    assert wh.scalar("SELECT count(*) FROM rejection WHERE stage = 'design_records'") == len(expected["broken"])
    assert wh.scalar("SELECT count(*) FROM design WHERE NOT is_perturbed") == n_designs
    # Two variants per base, 1-3 operations each, every operation logged and within its registry entry.
    variants = wh.query("SELECT base_design_id, count(*) AS n FROM design_variant WHERE design_id IS NOT NULL GROUP BY ALL")
    assert len(variants) == n_designs and set(variants["n"]) == {2}
    ops = wh.query("SELECT design_id, count(*) AS n FROM design_perturbation_op GROUP BY ALL")
    assert len(ops) == 2 * n_designs and ops["n"].between(1, 3).all()
    for design_id, record, base_record in wh.query(
        "SELECT p.design_id, p.record, b.record FROM design p JOIN design b ON b.design_id = p.base_design_id WHERE p.is_perturbed"
    ).itertuples(index=False):
        perturbed, base = Design.from_dict(json.loads(record)), Design.from_dict(json.loads(base_record))
        logged = wh.query("SELECT element_index, op, after_values FROM design_perturbation_op WHERE design_id = ?", [design_id])
        changed = {i for i, (a, b) in enumerate(zip(perturbed.elements, base.elements)) if a != b}
        assert changed == set(logged["element_index"])  # the log names exactly the elements that differ
        for index, op, after in logged.itertuples(index=False):
            fields = set(json.loads(after))
            assert fields <= set(OPERATIONS[op].fields)
            element = perturbed.elements[index].to_dict()
            assert all(element[f] == v for f, v in json.loads(after).items())
    # Every design rendered at its canvas size; the lineage reaches back to the source folder.
    renders = wh.query("SELECT d.design_id, d.canvas_width, d.canvas_height, r.width, r.height, r.preview_mean_abs_diff"
                       " FROM design d JOIN design_render r USING (design_id)")
    assert len(renders) == 3 * n_designs
    assert (renders["width"] == renders["canvas_width"]).all() and (renders["height"] == renders["canvas_height"]).all()
    base_renders = renders[renders["preview_mean_abs_diff"].notna()]
    assert len(base_renders) == n_designs and base_renders["preview_mean_abs_diff"].max() < 20
    some = wh.scalar("SELECT design_id FROM design WHERE is_perturbed LIMIT 1")
    kinds = wh.query("SELECT DISTINCT e.kind FROM provenance(?) p JOIN entity e ON e.entity_id = p.entity_id", [some])
    assert {"design", "design_source"} <= set(kinds["kind"])
    # A perturbed design's render differs from its base's.
    base_id = wh.scalar("SELECT base_design_id FROM design WHERE design_id = ?", [some])
    diff = np.abs(np.asarray(_png(wh, tmp_path, some), dtype=int) - np.asarray(_png(wh, tmp_path, base_id), dtype=int))
    assert diff.max() > 0

    # Resume: an unchanged re-run reads, perturbs and renders nothing and adds no row.
    counts = {t: wh.scalar(f"SELECT count(*) FROM {t}") for t in ("design", "design_perturbation_op", "design_render", "entity")}
    assert _run(config).success
    assert {t: wh.scalar(f"SELECT count(*) FROM {t}") for t in counts} == counts


def test_v4_and_v5_forms_render_alike_and_renders_are_deterministic(tmp_path, fixture_dir):
    source, expected = fixture_dir
    _, v5 = _built(tmp_path / "v5", {"folders": [str(source / "v5")], "perturb": {"variants_per_design": 1}})
    _, v4 = _built(tmp_path / "v4", {"folders": [str(source / "v4")], "perturb": {"variants_per_design": 1}})
    by_name = {}
    for tag, wh in (("v5", v5), ("v4", v4)):
        for design_id, source_id in wh.query("SELECT design_id, source_design_id FROM design WHERE NOT is_perturbed").itertuples(index=False):
            by_name.setdefault(source_id, {})[tag] = np.asarray(_png(wh, tmp_path / tag, design_id).convert("RGB"), dtype=float)
    assert len(by_name) == len(expected["designs"])
    for name, pair in by_name.items():
        assert pair["v5"].shape == pair["v4"].shape
        assert np.abs(pair["v5"] - pair["v4"]).mean() < 1.0, name  # v4's float rounding moves edges by at most a pixel
    # The same design and seed give byte-identical PNGs in two separate warehouses.
    _, again = _built(tmp_path / "again", {"folders": [str(source / "v5")], "perturb": {"variants_per_design": 1}})
    assert set(again.query("SELECT png_sha256 FROM design_render")["png_sha256"]) == set(
        v5.query("SELECT png_sha256 FROM design_render")["png_sha256"])


def _write_votes(path: Path, rows: list[dict], annotator: str, votes: dict[int, str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="") as stream:
        writer = csv.DictWriter(stream, fieldnames=list(rows[0]))
        writer.writeheader()
        for n, row in enumerate(rows):
            writer.writerow({**row, "annotator": annotator if n in votes else "", "vote": votes.get(n, "")})


def test_review_votes_labels_questions_checks_and_export(tmp_path, fixture_dir):
    source, _ = fixture_dir
    config, wh = _built(tmp_path, {"folders": [str(source / "v5")], "perturb": {"seed": 2, "variants_per_design": 1},
                                   "benchmark_fraction": 0.5, "split_seed": 1, "benchmark_labels": "labeller"})
    items = wh.scalar("SELECT count(*) FROM design_review_item")
    assert items == wh.scalar("SELECT count(*) FROM design_label WHERE source = 'heuristic'") > 0
    sheet = tmp_path / "data" / "review" / "designs" / "design_review_round-1.csv"
    with sheet.open(encoding="utf-8", newline="") as stream:
        rows = list(csv.DictReader(stream))
    assert len(rows) == items and all(Path(r["image"]).is_file() and r["definition"] for r in rows)
    returned = sheet.parent / "returned"
    # Row 0: 2 flawed vs 1 good -> flawed; row 1: 1-1 tie -> unresolved (the heuristic keeps it); row 2: good x2.
    _write_votes(returned / "ana.csv", rows, "ana", {0: "flawed", 1: "flawed", 2: "good"})
    _write_votes(returned / "ben.csv", rows, "ben", {0: "yes", 1: "good", 2: "good"})
    _write_votes(returned / "cy.csv", rows, "cy", {0: "good"})
    _write_votes(returned / "dee.csv", rows, "dee", {0: "maybe", 2: "flawed"})  # malformed: row 2 of the sheet
    result = _run(config)
    assert not result.success
    message = " ".join(str(e.event_specific_data.error.message) for e in result.all_events if e.is_step_failure)
    assert "dee.csv" in message and "row 2" in message
    labels = {r["item_id"]: r for r in wh.query(
        "SELECT i.item_id, l.flawed, l.source, l.n_votes FROM design_label l JOIN design_review_item i USING (design_id, indicator)"
    ).to_dict("records")}
    first, tie, good = (labels[rows[n]["item_id"]] for n in range(3))
    assert (first["flawed"], first["source"], first["n_votes"]) == (True, "human", 3)
    assert tie["source"] == "heuristic" and tie["n_votes"] == 2
    assert (good["flawed"], good["source"]) == (False, "human")
    assert wh.scalar("SELECT count(*) FROM design_review_vote WHERE annotator = 'dee'") == 0
    assert wh.scalar("SELECT status FROM design_review_sheet WHERE path LIKE '%dee.csv'") == "rejected"
    (returned / "dee.csv").unlink()
    assert _run(config).success
    # Questions follow the labels; the blocking checks passed; files hold every question of their split.
    for n, label in ((0, first), (2, good)):
        design_id, indicator = rows[n]["design_id"], rows[n]["indicator"]
        answers = dict(wh.query("SELECT format, answer FROM design_question WHERE design_id = ? AND indicator = ?",
                                [design_id, indicator]).itertuples(index=False))
        assert answers["aesthetic_judgment"] == ('"yes"' if label["flawed"] else '"no"')
        assert (answers["precise_localisation"] == "null") == (not label["flawed"])
    checks = wh.query("SELECT check_name, passed FROM check_result WHERE asset_key IN ('design_questions', 'perturbed_designs')")
    assert len(checks) >= 8 and checks["passed"].all()
    out = tmp_path / "data" / "exports" / "aeseval"
    exported = [json.loads(line) for name in ("aeseval_benchmark.jsonl", "aeseval_train.jsonl")
                for line in (out / name).read_text().splitlines()]
    assert len(exported) == wh.scalar("SELECT count(*) FROM design_question")
    # Training judgment questions carry a reasoning path whose every cited element exists in the design.
    paths = wh.query("SELECT x.steps, x.cited, d.record FROM design_reasoning x JOIN design d USING (design_id)")
    assert len(paths) > 0
    for steps, cited, record in paths.itertuples(index=False):
        ids = {e["element_id"] for e in json.loads(record)["elements"]}
        assert len(cited) and set(cited) <= ids and all(s["element_id"] in ids for s in json.loads(steps) if s["element_box"])
    assert any(r.get("reasoning") for r in exported if r["split"] == "train" and r["format"] == "aesthetic_judgment")
    splits = {r["base_design_id"]: r["split"] for r in exported}
    assert all(splits[r["base_design_id"]] == r["split"] for r in exported)  # one side per base design
    assert {"benchmark", "train"} == set(splits.values())

    # The check can fail: a question whose answer contradicts its label is caught.
    with wh.transaction() as con:
        con.execute("UPDATE design_question SET answer = 'null' WHERE format = 'precise_localisation' AND judged_flawed")
    defs = build_definitions(load_config(config))
    checked = defs.resolve_job_def("design_aesthetics_job").execute_in_process(
        instance=DagsterInstance.ephemeral(), raise_on_error=False, asset_selection=[AssetKey("design_questions")])
    failed = wh.query("SELECT check_name FROM check_result WHERE NOT passed AND run_id = ?", [checked.run_id])
    assert not checked.success and set(failed["check_name"]) == {"none_exactly_when_good"}


LABEL_ASSETS = DESIGN_ASSETS[:DESIGN_ASSETS.index("design_labels") + 1] + ["design_splits"]


def test_model_labelling_through_the_real_sdk_with_human_examples(tmp_path, fixture_dir, monkeypatch):
    source, _ = fixture_dir
    monkeypatch.setenv("LOOP_LABEL_KEY", "sk-loopback-label")
    failures = [InjectedFailure(MALFORMED_CONTENT, match='"design_label"', content='{"flawed": "maybe"}', times=1)]
    with ModelApiServer(responder=remote_design_labeller, failures=failures, openai_key="sk-loopback-label") as server:
        models = {"annotator": {"provider": "openai", "model": "loop-labeller-1", "base_url": server.openai_base_url,
                                "api_key_env": "LOOP_LABEL_KEY"}, "timeout_s": 5, "max_retries": 1, "backoff_s": 0.01}
        config = write_config(tmp_path, {}, models=models, designs={
            "folders": [str(source / "v5")], "perturb": {"seed": 4, "variants_per_design": 1}, "labeller": "model",
            "benchmark_labels": "labeller", "batch_size": 4})
        result = _run(config, LABEL_ASSETS)
        assert result.success, [e.message for e in result.all_events if e.is_failure]
        wh = Warehouse(tmp_path / "warehouse.duckdb")
        items = wh.scalar("SELECT count(*) FROM design_review_item")
        labels = wh.query("SELECT source, flawed, evidence, answer_element_id FROM design_label")
        assert len(labels) == items and set(labels["source"]) == {"model"} and labels["flawed"].sum() >= items - 2
        # A flawed verdict's box names an element of the design (validated against it); a clean one names none.
        for flawed, evidence in labels[["flawed", "evidence"]].itertuples(index=False):
            assert (json.loads(evidence)["element_id"] is not None) == flawed
        calls = wh.query("SELECT role, template_id, status FROM model_call")
        assert set(calls["template_id"]) >= {"design/labeller"} and (calls["role"] == "repair").sum() == 1
        sent = len(server.requests)
        # People vote on one item with a comment: it becomes a human label and a few-shot example for the rest.
        sheet = tmp_path / "data" / "review" / "designs" / "design_review_round-1.csv"
        with sheet.open(encoding="utf-8", newline="") as stream:
            rows = list(csv.DictReader(stream))
        (sheet.parent / "returned").mkdir(exist_ok=True)
        with (sheet.parent / "returned").joinpath("ana.csv").open("w", encoding="utf-8", newline="") as stream:
            writer = csv.DictWriter(stream, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerow({**rows[0], "annotator": "ana", "vote": "good", "comment": "the change is barely visible"})
        config.write_text(config.read_text().replace("variants_per_design: 1", "variants_per_design: 2"))
        assert _run(config, LABEL_ASSETS).success
        assert wh.scalar("SELECT source FROM design_label JOIN design_review_item USING (design_id, indicator) WHERE item_id = ?",
                         [rows[0]["item_id"]]) == "human"
        # Only the new variants' items were asked about (the rest keep their labels), with the person's label of the
        # same indicator shown as an example.
        new_items = wh.scalar("SELECT count(*) FROM design_review_item") - items
        fresh = server.requests[sent:]
        assert len(fresh) == new_items
        indicator = rows[0]["indicator"]
        asked = [wire_user_text(r.body) for r in fresh if f"{indicator.replace('_', ' ')}" in wire_user_text(r.body).lower()
                 or indicator in wire_user_text(r.body)]
        assert asked and all("the change is barely visible" in text for text in asked)
