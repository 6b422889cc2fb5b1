"""ContextCanvas cases materialized for real: the bundled case sample over a pool built from the sample corpus,
the text-only shortcut run through the real openai SDK against a loopback server, malformed case records and
review sheets, and the blocking checks failing on corrupted rows.

Expected values come from the fixture (sample/context_fixture.py) and are worked out by hand in the comments.
"""

import csv
import hashlib
import io
import json
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from dagster import AssetSelection, DagsterInstance, Definitions, define_asset_job
from PIL import Image, ImageOps
from scipy.stats import binom

from assets.context_canvas.cases import context_cases
from assets.context_canvas.review import context_case_review
from assets.context_canvas.export import context_canvas_export
from pipelines.config import load_config
from pipelines.definitions import build_definitions
from sample.context_fixture import write_context_sample
from sample.make_corpus import build_corpus
from tests.support.critique_harness import failures, materialize
from resources.blob_store import LocalBlobStore, ref_sha256
from tests.support.pool_harness import run_pool, step_summaries, warehouse_for, write_config
from tests.support.model_servers import OPENAI, ModelApiServer, wire_images, wire_schema, wire_system, wire_user_text
from warehouse.db import Warehouse

CONTEXT_ASSETS = ("context_cases", "context_case_review", "context_shortcut_report", "context_canvas_export")
EVAL_KEYS = {"id", "images", "contact_sheet", "scenario", "proposed_assessment", "question", "options",
             "neutral_description", "evidence_description"}
GOLD_KEYS = {"id", "case_id", "gold", "gold_text", "rationale", "source_basis", "images", "provenance"}
PROBE_MODEL = "dev-probe (illustrative)"
HEURISTIC = "heuristic/heuristic-v1"
KEY = "sk-loopback-context-never-stored"


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def blob_path(config: Path, ref: str) -> Path:
    """The file of a blob reference in the config's local blob store."""
    return LocalBlobStore(Path(load_config(config)["blob_store"]["root"])).path(ref_sha256(ref))


@dataclass
class Sample:
    corpus: Path
    context: Path          # cases.json and reviews.csv
    summary: dict          # write_context_sample's account (expected statuses, ...)
    cases: dict            # case_id -> record as written in cases.json
    allowed: list


@pytest.fixture(scope="module")
def sample(tmp_path_factory) -> Sample:
    root = tmp_path_factory.mktemp("context_sample")
    expected = build_corpus(root / "sample")
    summary = write_context_sample(root / "context", root / "sample")
    records = json.loads((root / "context" / "cases.json").read_text(encoding="utf-8"))["cases"]
    return Sample(root / "sample", root / "context", summary, {r["case_id"]: r for r in records}, expected["allowed_licenses"])


def context_config(folder: Path, sample: Sample, *, pool: dict | None = None, returned: Path | None = None,
                   cases: list[Path] | None = None, **sections) -> Path:
    settings = {"cases": [str(p) for p in cases or [sample.context / "cases.json"]],
                "returned_dir": str(returned or sample.context)}
    return write_config(folder, pool or {}, context_canvas=settings, **sections)


# --- 1. the sample chain with the heuristic provider ----------------------------------------------------------


@dataclass
class Chain:
    config: Path
    wh: Warehouse
    first: object
    calls_after_first: int
    export_stamps: dict
    rerun: object


@pytest.fixture(scope="module")
def chain(sample, tmp_path_factory) -> Chain:
    root = tmp_path_factory.mktemp("context_chain")
    # The pool takes the whole sample manifest but photo_10.jpg and its planted copy, so ctx-s08's image is one the
    # pool does not hold (the case then shows the file itself).
    with (sample.corpus / "manifest.csv").open(encoding="utf-8", newline="") as stream:
        rows = list(csv.DictReader(stream))
    manifest = sample.corpus / "manifest_without_photo_10.csv"  # beside the original: locators stay relative to it
    with manifest.open("w", encoding="utf-8", newline="") as stream:
        writer = csv.DictWriter(stream, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(r for r in rows if not Path(r["locator"]).name.startswith("photo_10"))
    pool = {"manifests": [str(manifest)], "filters": {"license_allowlist": list(sample.allowed)}}
    config = context_config(root, sample, pool=pool)
    assert run_pool(config).success
    first = materialize(config, *CONTEXT_ASSETS)
    assert first.success, failures(first)
    wh = warehouse_for(config)
    calls = wh.scalar("SELECT count(*) FROM model_call")
    out = root / "data" / "exports" / "context_canvas"
    stamps = {p.name: p.stat().st_mtime_ns for p in out.glob("*.jsonl")}
    rerun = materialize(config, *CONTEXT_ASSETS)
    assert rerun.success, failures(rerun)
    return Chain(config, wh, first, calls, stamps, rerun)


def test_cases_are_stored_with_images_linked_to_the_pool_items_holding_their_bytes(sample, chain):
    wh = chain.wh
    assert sorted(wh.query("SELECT case_id FROM context_case")["case_id"]) == sample.summary["case_ids"]
    assert wh.scalar("SELECT count(*) FROM context_case_read WHERE reason_code IS NOT NULL") == 0
    images = wh.query("SELECT case_id, position, reference, image_sha256, image_uri, pool_item_id, rights"
                      " FROM context_case_image ORDER BY case_id, position")
    assert len(images) == 9  # eight cases, ctx-s04 has two images
    # Which kept pool item holds which bytes, worked out from the corpus files on disk and the pool's own members:
    # an image is linked exactly when a kept record has its bytes (a near-duplicate kept in its place does not count).
    records = wh.query("SELECT r.locator, m.pool_item_id FROM source_record r JOIN pool_member m USING (record_id)")
    kept_by_bytes: dict[str, set] = {}
    for locator, pool_item in records.itertuples(index=False):
        if pool_item:
            kept_by_bytes.setdefault(sha256_of(wh.path_of(locator)), set()).add(pool_item)
    for row in images.itertuples(index=False):
        case = sample.cases[row.case_id]
        assert row.reference == case["images"][row.position]
        on_disk = sample.context / row.reference
        assert row.image_sha256 == sha256_of(on_disk) == sha256_of(blob_path(chain.config, row.image_uri))  # stored
        assert json.loads(row.rights) == case["rights"][row.position]
        if row.pool_item_id is None:
            assert row.image_sha256 not in kept_by_bytes
        else:
            assert row.pool_item_id in kept_by_bytes[row.image_sha256]
    # By hand, from the corpus's planted duplicates: photo_08.jpg (ctx-s01) has no copy and is its own pool item;
    # photo_01.jpg (ctx-s04, image 2) has an exact copy, and the pool keeps one of the two records: the case links
    # to that one, whichever it is (same bytes); photo_10.jpg (ctx-s08) was left out of the pool: no item.
    item_at = {Path(locator).name: item for locator, item in records.itertuples(index=False)}
    linked = {(r.case_id, r.position): r.pool_item_id for r in images.itertuples(index=False)}
    assert item_at["photo_08.jpg"] and linked[("ctx-s01", 0)] == item_at["photo_08.jpg"]
    (kept,) = [item for item in (item_at["photo_01.jpg"], item_at["photo_01_copy.jpg"]) if item]
    assert linked[("ctx-s04", 1)] == kept
    assert "photo_10.jpg" not in item_at and linked[("ctx-s08", 0)] is None
    entities = dict(wh.query("SELECT case_id, entity_id FROM context_case").itertuples(index=False))
    for row in images.itertuples(index=False):
        shown = row.pool_item_id or f"file:{row.image_sha256}"
        assert wh.scalar("SELECT count(*) FROM was_derived_from WHERE entity_id = ? AND source_entity_id = ?"
                         " AND relation = 'shows'", [entities[row.case_id], shown]) == 1


def test_two_image_case_has_a_labelled_side_by_side_sheet(sample, chain):
    wh = chain.wh
    sheets = wh.query("SELECT case_id, sha256, uri, labels FROM context_contact_sheet")
    assert sheets["case_id"].tolist() == sample.summary["multi_image"] == ["ctx-s04"]
    row = sheets.iloc[0]
    assert list(row["labels"]) == ["Image 1", "Image 2"]
    path = blob_path(chain.config, row["uri"])
    assert sha256_of(path) == row["sha256"]
    sheet = Image.open(path).convert("RGB")
    # Each image scaled to the 512 px panel height; a 16 px gap between; a label band of 56 px on top
    # (label font: 6% of 512 = 31 px; band: 1.8 x 31 = 55.8 -> 56).
    sources = []
    for reference in sample.cases["ctx-s04"]["images"]:
        with Image.open(sample.context / reference) as opened:
            sources.append(ImageOps.exif_transpose(opened).convert("RGB"))
    widths = [round(image.width * 512 / image.height) for image in sources]
    assert sheet.size == (widths[0] + 16 + widths[1], 56 + 512)
    pixels = np.asarray(sheet).astype(int)
    band, gap = pixels[:56], pixels[:, widths[0]:widths[0] + 16]
    assert (gap == 255).all()  # white between the panels, band included
    for left, width in ((0, widths[0]), (widths[0] + 16, widths[1])):
        ink = (band[:, left:left + width].max(axis=2) < 96).sum()
        white = (band[:, left:left + width].min(axis=2) == 255).mean()
        assert ink > 30 and white > 0.8  # a label drawn in black on a white band over each panel
    for left, width, image in ((0, widths[0], sources[0]), (widths[0] + 16, widths[1], sources[1])):
        expected = np.asarray(image.resize((width, 512), Image.Resampling.LANCZOS)).astype(int)
        assert np.abs(pixels[56:, left:left + width] - expected).mean() < 2  # the panel is that image


def test_review_sheet_decides_the_fixture_statuses(sample, chain):
    wh = chain.wh
    statuses = dict(wh.query("SELECT case_id, status FROM context_case_status").itertuples(index=False))
    assert statuses == sample.summary["expected_status"]
    s06 = wh.query("SELECT failed_criteria, reasons FROM context_retention WHERE case_id = 'ctx-s06'").iloc[0]
    assert list(s06["failed_criteria"]) == ["visual_necessity"] and "ana, ben" in s06["reasons"]
    assert list(wh.scalar("SELECT reviewers FROM context_retention WHERE case_id = 'ctx-s07'")) == ["ana", "ben", "panel"]
    rejected = dict(wh.query("SELECT e.attributes, r.reason_code FROM rejection r JOIN entity e USING (entity_id)"
                             " WHERE r.stage = 'context_case_review'").itertuples(index=False))
    assert sorted(json.loads(a)["case_id"] for a in rejected) == ["ctx-s06", "ctx-s08"]
    assert sorted(rejected.values()) == ["needs_adjudication", "rejected"]
    blank = load_config(chain.config)["context_canvas"]["sheet_dir"] + "/context_review_sheet.csv"
    with open(blank, encoding="utf-8", newline="") as stream:
        rows = list(csv.DictReader(stream))
    assert [r["case_id"] for r in rows] == sample.summary["case_ids"] and not any(r["reviewer"] for r in rows)


def test_export_separates_model_input_from_the_answer_key_and_never_ships_the_probe(sample, chain):
    wh = chain.wh
    out = Path(load_config(chain.config)["context_canvas"]["export_dir"])
    eval_text = (out / "context_canvas_eval.jsonl").read_text(encoding="utf-8")
    gold_text = (out / "context_canvas_gold.jsonl").read_text(encoding="utf-8")
    evals = [json.loads(line) for line in eval_text.splitlines()]
    golds = [json.loads(line) for line in gold_text.splitlines()]
    retained = {c for c, s in sample.summary["expected_status"].items() if s == "retained"}
    ids = dict(wh.query("SELECT case_id, evaluation_id FROM context_case").itertuples(index=False))
    assert sorted(r["id"] for r in evals) == sorted(r["id"] for r in golds) == sorted(ids[c] for c in retained)
    by_id = {ids[c]: c for c in ids}
    sheet_path = blob_path(chain.config, wh.scalar("SELECT uri FROM context_contact_sheet"))
    for record in evals:
        case = sample.cases[by_id[record["id"]]]
        assert set(record) == EVAL_KEYS
        assert (record["scenario"], record["question"], record["proposed_assessment"]) == (
            case["scenario"], case["question"], case["proposed_assessment"])
        assert (record["neutral_description"], record["evidence_description"]) == (
            case["neutral_description"], case["evidence_description"])
        assert record["options"] == [{"id": o["option_id"], "text": o["text"]} for o in case["options"]]
        assert [sha256_of(Path(p)) for p in record["images"]] == [sha256_of(sample.context / r) for r in case["images"]]
        assert record["contact_sheet"] == (str(sheet_path) if len(case["images"]) > 1 else None)
        assert case["rationale"] not in eval_text
    for record in golds:
        case = sample.cases[record["case_id"]]
        assert set(record) == GOLD_KEYS and by_id[record["id"]] == record["case_id"]
        assert (record["gold"], record["gold_text"], record["rationale"], record["source_basis"]) == (
            case["gold"], case["gold_text"], case["rationale"], case["source_basis"])
        assert [i["rights"] for i in record["images"]] == case["rights"]
    # The probe answer (ctx-s01, retained) is kept for diagnostics only.
    assert "ctx-s01" in retained
    assert PROBE_MODEL not in eval_text and PROBE_MODEL not in gold_text and "probe" not in eval_text + gold_text
    probe = wh.query("SELECT case_id, model, answer FROM context_case_probe").values.tolist()
    assert probe == [["ctx-s01", PROBE_MODEL, "A"]]
    assert PROBE_MODEL not in wh.scalar("SELECT record FROM context_case WHERE case_id = 'ctx-s01'")


def test_shortcut_report_matches_the_hand_computed_figures(sample, chain):
    wh = chain.wh
    figures = json.loads(wh.scalar("SELECT figures FROM context_shortcut_report WHERE answerer = ?", [HEURISTIC]))
    # Golds: s01 B, s02 A, s03 B, s04 B, s05 B (three options), s06 B, s07 A, s08 B.
    assert figures["n_cases"] == 8 and figures["n_binary"] == 7 and figures["gold_counts"] == {"A": 2, "B": 6}
    assert figures["gold_yes_rate"] == pytest.approx(2 / 7)          # A on s02 and s07 of the 7 binary cases
    assert figures["majority_option"] == "B" and figures["majority_baseline_accuracy"] == pytest.approx(6 / 8)
    # The heuristic answers A everywhere: no option shares a content word with its text, and the longer option
    # wins ("Yes" over "No", "Morning and renewal" on s05) or the first on the "Image 1" / "Image 2" tie.
    answers = dict(wh.query("SELECT case_id, answer FROM context_text_only_answer WHERE answerer = ?",
                            [HEURISTIC]).itertuples(index=False))
    assert answers == {case_id: "A" for case_id in sample.summary["case_ids"]}
    assert figures["text_only_accuracy"] == pytest.approx(2 / 8) and figures["n_text_only_answered"] == 8
    assert figures["n_text_only_invalid"] == 0 and figures["text_only_minus_baseline"] == pytest.approx(-50.0)
    assert figures["text_only_p_value"] == pytest.approx(binom.sf(1, 8, 6 / 8))  # P(X >= 2), X ~ Bin(8, 0.75)
    assert "no better than always giving the most common answer" in figures["verdict"]
    # Longest option: unique on the 6 Yes/No cases ("Yes") and s05 (A), tied on s04: 7 cases, gold on 2.
    assert figures["n_unique_longest"] == 7 and figures["longest_is_gold_rate"] == pytest.approx(2 / 7)
    assert figures["longest_chance_rate"] == pytest.approx((6 / 2 + 1 / 3) / 7)
    lengths = [len(o["text"]) for c in sample.cases.values() for o in c["options"]]
    is_gold = [float(o["option_id"] == c["gold"]) for c in sample.cases.values() for o in c["options"]]
    assert figures["length_gold_correlation"] == pytest.approx(np.corrcoef(lengths, is_gold)[0, 1])


def test_checks_pass_and_a_rerun_sends_no_model_call(chain):
    wh = chain.wh
    results = wh.query("SELECT check_name, passed FROM check_result WHERE run_id = ?", [chain.first.run_id])
    context = {"gold_option_among_options", "rights_for_every_image", "retained_cases_pass_all_criteria",
               "eval_file_is_model_input_only", "no_probe_output_in_exports"}
    assert context <= set(results["check_name"]) and results["passed"].all()
    assert chain.calls_after_first == 8  # one text-only call per case, none repaired
    assert wh.scalar("SELECT count(*) FROM model_call") == chain.calls_after_first
    summaries = step_summaries(wh, chain.rerun.run_id)
    assert summaries["context_cases"]["files_unchanged"] == 1 and "cases" not in summaries["context_cases"]
    assert not summaries["context_shortcut_report"].get("requests_sent")
    assert summaries["context_shortcut_report"]["report"]["text_only_accuracy"] == pytest.approx(2 / 8)
    out = Path(load_config(chain.config)["context_canvas"]["export_dir"])
    assert {p.name: p.stat().st_mtime_ns for p in out.glob("*.jsonl")} == chain.export_stamps


# --- 2. the text-only run through the real openai SDK ---------------------------------------------------------


def text_only_responder(body: dict) -> str:
    """Answers computed from what was sent: the last listed option; on the anthology case (ctx-s05) an option that
    does not exist ("D"), again after the repair; on the festival case (ctx-s04) "C", then B once repaired."""
    user = wire_user_text(body)
    if "Options:" in user:
        listed = re.findall(r"^([A-Za-z0-9]+): ", user.split("Options:", 1)[1], flags=re.M)
        if "poetry anthology" in user:
            return json.dumps({"answer": "D", "reason": "stubborn guess"})
        if "winter festival" in user:
            return json.dumps({"answer": "C", "reason": "fixable guess"})
        return json.dumps({"answer": listed[-1], "reason": "the last option"})
    if "fixable guess" in user:  # the repair prompt quotes the earlier answer
        return json.dumps({"answer": "B", "reason": "the second image"})
    return json.dumps({"answer": "D", "reason": "still stubborn"})


def test_text_only_run_through_the_openai_sdk_repairs_once_then_rejects(sample, tmp_path, monkeypatch):
    monkeypatch.setenv("LOOP_CONTEXT_KEY", KEY)
    with ModelApiServer(responder=text_only_responder, openai_key=KEY) as server:
        models = {"annotator": {"provider": "openai", "model": "loop-text-1", "base_url": server.openai_base_url,
                                "api_key_env": "LOOP_CONTEXT_KEY"}, "timeout_s": 5, "max_retries": 1, "backoff_s": 0.01}
        config = context_config(tmp_path, sample, models=models)
        result = materialize(config, "context_cases", "context_shortcut_report")
        assert result.success, failures(result)
        requests = server.requests_to(OPENAI)
        assert len(server.requests) == len(requests) == 8 + 2  # one per case, one repair each for s04 and s05
        assert all(r.authorized and wire_images(r.body) == [] for r in requests)  # no image part, ever
        assert {wire_schema(r.body)[0] for r in requests} == {"context_text_only"}
        for case in sample.cases.values():
            (asked,) = [r for r in requests if case["scenario"] in wire_user_text(r.body)]
            user = wire_user_text(asked.body)
            assert case["question"] in user and "withheld" in wire_system(asked.body)
            assert all(f"{o['option_id']}: {o['text']}" in user for o in case["options"])
            assert case["rationale"] not in user and "../sample/images" not in user
            if case["proposed_assessment"]:
                assert case["proposed_assessment"] in user
        assert PROBE_MODEL not in json.dumps([r.body for r in requests])
        wh = Warehouse(tmp_path / "warehouse.duckdb")
        answerer = "openai/loop-text-1"
        rows = {r[0]: (r[1], len(r[2])) for r in wh.query(
            "SELECT case_id, answer, call_ids FROM context_text_only_answer WHERE answerer = ?", [answerer]).itertuples(index=False)}
        assert rows.pop("ctx-s05") == (None, 2)  # D, repaired once, D again: rejected
        assert rows.pop("ctx-s04") == ("B", 2)   # C, repaired once to B
        assert rows == {c: ("B", 1) for c in rows}  # every other case lists A then B
        rejected = wh.query("SELECT entity_id, reason_code, detail FROM rejection WHERE stage = 'context_text_only'")
        assert rejected["entity_id"].tolist() == [f"ctx-s05|{answerer}"] and rejected["reason_code"].tolist() == ["invalid_option"]
        assert "after one repair attempt" in rejected["detail"].iloc[0]
        roles = dict(wh.query("SELECT role, count(*) AS n FROM model_call GROUP BY ALL").itertuples(index=False))
        assert roles == {"annotator": 8, "repair": 2}
        # B answers: right on s01, s03, s04, s06, s08 (gold B), wrong on s02, s07 (gold A); s05 has none: 5 of 8.
        figures = json.loads(wh.scalar("SELECT figures FROM context_shortcut_report WHERE answerer = ?", [answerer]))
        assert figures["text_only_accuracy"] == pytest.approx(5 / 8) and figures["n_text_only_answered"] == 7
        assert figures["majority_baseline_accuracy"] == pytest.approx(6 / 8)
        # A re-run asks nothing: every case already has its answer (or its rejection) for this answerer.
        assert materialize(config, "context_cases", "context_shortcut_report").success
        assert len(server.requests) == 10
    with wh.transaction() as con:
        dumped = " ".join(str(r) for t in ("model_call", "context_text_only_answer", "rejection", "activity")
                          for r in con.execute(f"SELECT * FROM {t}").fetchall())
    assert KEY not in dumped


# --- 3. malformed case records ---------------------------------------------------------------------------------

CSV_HEADER = ["case_id", "images", "scenario", "question", "options", "gold", "rationale", "source_basis",
              "title", "creator", "provider", "url", "license_note", "redistribution"]


def _picture(path: Path, colour: tuple[int, int, int]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    ramp = np.linspace(0, 60, 96, dtype=np.uint8)[None, :, None]
    Image.fromarray(np.clip(np.array(colour, dtype=int)[None, None, :] + ramp, 0, 255).astype(np.uint8)
                    .repeat(64, axis=0)).save(path)


def _csv_row(case_id: str, image: str, gold: str = "A", options: str = "A=Yes|B=No") -> list[str]:
    return [case_id, image, f"Scenario of {case_id}", "Is it suitable?", options, gold, "Because it shows so.",
            "the image itself", "A picture", "", "test provider", "https://example.invalid/p", "CC0-1.0", "allowed"]


def test_malformed_case_records_are_rejected_by_locator_and_the_good_ones_kept(sample, tmp_path):
    folder = tmp_path / "cases"
    _picture(folder / "images" / "red.png", (200, 40, 40))
    _picture(folder / "images" / "blue.png", (40, 40, 200))
    (folder / "images" / "note.png").write_text("not a picture", encoding="utf-8")
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerows([CSV_HEADER,
                      _csv_row("c-01", "images/red.png"),                      # row 2: good
                      _csv_row("c-02", "images/red.png", gold="C"),            # row 3: gold not among A, B
                      _csv_row("c-03", "images/missing.png"),                  # row 4: no such file
                      _csv_row("c-04", "images/blue.png", gold="b"),           # row 5: good (gold matched as B)
                      _csv_row("c-05", "images/note.png")])                    # row 6: not an image
    (folder / "cases.csv").write_text(buffer.getvalue(), encoding="utf-8")
    good = dict(zip(CSV_HEADER, _csv_row("j-01", "images/blue.png")))
    document = [{**good, "images": ["images/blue.png"], "options": {"A": "Yes", "B": "No"},
                 "rights": [{"title": "A picture", "creator": "unknown", "provider": "p", "url": "https://example.invalid/q",
                             "license_note": "CC0-1.0", "redistribution": "allowed"}]},
                "just a string"]
    document.append({**document[0], "images": ["images/red.png"]})  # a valid case reusing j-01
    (folder / "cases.json").write_text(json.dumps(document), encoding="utf-8")
    config = context_config(tmp_path, sample, cases=[folder / "cases.csv", folder / "cases.json"])
    result = materialize(config, "context_cases")
    assert result.success, failures(result)
    wh = Warehouse(tmp_path / "warehouse.duckdb")
    stored = dict(wh.query("SELECT case_id, gold FROM context_case").itertuples(index=False))
    assert stored == {"c-01": "A", "c-04": "B", "j-01": "A"}
    reads = {r[0]: (r[1], r[2]) for r in wh.query("SELECT regexp_replace(locator, '^.*/', ''), case_id, reason_code FROM context_case_read").itertuples(index=False)}
    assert reads == {
        "cases.csv#line=2": ("c-01", None), "cases.csv#line=3": (None, "gold_not_option"),
        "cases.csv#line=4": (None, "image_unreadable"), "cases.csv#line=5": ("c-04", None),
        "cases.csv#line=6": (None, "image_unreadable"), "cases.json#record=0": ("j-01", None),
        "cases.json#record=1": (None, "not_an_object"), "cases.json#record=2": (None, "duplicate_case_id"),
    }
    detail = dict(wh.query("SELECT regexp_replace(locator, '^.*/', ''), detail FROM context_case_read WHERE reason_code IS NOT NULL").itertuples(index=False))
    assert "gold 'C' is not an option (A, B)" in detail["cases.csv#line=3"]
    assert "images/missing.png" in detail["cases.csv#line=4"] and "file not found" in detail["cases.csv#line=4"]
    assert "not a readable image" in detail["cases.csv#line=6"]
    assert "already read at cases.json#record=0" in detail["cases.json#record=2"]
    rejections = wh.query("SELECT reason_code, detail FROM rejection WHERE stage = 'context_cases' ORDER BY detail")
    assert [Path(d.split(": ", 1)[0]).name for d in rejections["detail"]] == [
        "cases.csv#line=3", "cases.csv#line=4", "cases.csv#line=6", "cases.json#record=1", "cases.json#record=2"]
    assert rejections["reason_code"].tolist() == ["gold_not_option", "image_unreadable", "image_unreadable",
                                                  "not_an_object", "duplicate_case_id"]
    # Nothing of a rejected case reaches the image table; the good cases' images are stored (no pool: no item).
    images = wh.query("SELECT case_id, image_sha256, pool_item_id FROM context_case_image ORDER BY case_id")
    assert images["case_id"].tolist() == ["c-01", "c-04", "j-01"] and images["pool_item_id"].isna().all()
    assert images["image_sha256"].tolist() == [sha256_of(folder / "images" / n) for n in ("red.png", "blue.png", "blue.png")]


def test_an_unreadable_case_file_is_kept_as_rejected_and_the_other_files_are_read(sample, tmp_path):
    folder = tmp_path / "cases"
    _picture(folder / "images" / "red.png", (200, 40, 40))
    _write_cases_csv(folder / "good.csv", [_csv_row("c-01", "images/red.png")])
    (folder / "broken.json").write_text('[{"case_id": "j-01", ', encoding="utf-8")  # cut off mid-record
    config = context_config(tmp_path, sample, cases=[folder / "broken.json", folder / "good.csv"])
    result = materialize(config, "context_cases")
    assert result.success, failures(result)  # a rejected file is that file's outcome, not the step's failure
    wh = Warehouse(tmp_path / "warehouse.duckdb")
    assert "case file broken.json" in wh.scalar("SELECT summary FROM activity WHERE asset_key = 'context_cases'")
    assert wh.query("SELECT case_id FROM context_case")["case_id"].tolist() == ["c-01"]  # read after the broken one
    rejected = wh.query("SELECT e.kind, r.reason_code, e.attributes->>'path' AS path FROM rejection r"
                        " JOIN entity e USING (entity_id) WHERE r.stage = 'context_cases'")
    assert rejected.values.tolist() == [["case_source", "malformed_case_file", "cases/broken.json"]]  # by its name


def _write_cases_csv(path: Path, rows: list[list[str]]) -> None:
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerows([CSV_HEADER, *rows])
    path.write_text(buffer.getvalue(), encoding="utf-8")


def test_an_edited_case_file_replaces_what_its_earlier_version_stored(sample, tmp_path):
    folder = tmp_path / "cases"
    _picture(folder / "images" / "red.png", (200, 40, 40))
    _write_cases_csv(folder / "cases.csv", [_csv_row("c-01", "images/red.png"), _csv_row("c-02", "images/red.png", gold="C")])
    config = context_config(tmp_path, sample, cases=[folder / "cases.csv"])
    assert materialize(config, "context_cases").success
    wh = Warehouse(tmp_path / "warehouse.duckdb")
    assert wh.query("SELECT case_id FROM context_case")["case_id"].tolist() == ["c-01"]
    # The author fixes row 3 and, in the same edit, breaks row 2: c-01 is now invalid, c-02 valid.
    _write_cases_csv(folder / "cases.csv", [_csv_row("c-01", "images/red.png", gold="C"), _csv_row("c-02", "images/red.png")])
    assert materialize(config, "context_cases").success
    reads = dict(wh.query("SELECT regexp_replace(locator, '^.*/', ''), reason_code FROM context_case_read").itertuples(index=False))
    assert reads == {"cases.csv#line=2": "gold_not_option", "cases.csv#line=3": None}
    # What the file says now is what is stored: the invalid c-01 must not stay in the benchmark from the old version,
    # and row 3 (now the valid c-02) must no longer be listed as rejected.
    assert wh.query("SELECT case_id FROM context_case ORDER BY 1")["case_id"].tolist() == ["c-02"]
    assert wh.query("SELECT regexp_extract(detail, '([^/]+#(line|record)=[0-9]+)', 1) AS at FROM rejection"
                    " WHERE stage = 'context_cases'")["at"].tolist() == ["cases.csv#line=2"]


def test_an_edited_case_is_asked_again_without_its_image(sample, tmp_path):
    folder = tmp_path / "cases"
    _picture(folder / "images" / "red.png", (200, 40, 40))
    _write_cases_csv(folder / "cases.csv", [_csv_row("c-01", "images/red.png")])
    config = context_config(tmp_path, sample, cases=[folder / "cases.csv"])
    assert materialize(config, "context_cases", "context_shortcut_report").success
    wh = Warehouse(tmp_path / "warehouse.duckdb")
    assert wh.scalar("SELECT answer FROM context_text_only_answer WHERE case_id = 'c-01'") == "A"  # "Yes" is longer
    # New options; the scenario now shares "winter" and "snow" with option B only: the heuristic picks B.
    edited = _csv_row("c-01", "images/red.png", options="A=Summer meadow|B=Winter snow scene")
    edited[2] = "A festival programme needs the town in winter snow."
    _write_cases_csv(folder / "cases.csv", [edited])
    assert materialize(config, "context_cases", "context_shortcut_report").success
    assert wh.scalar("SELECT count(*) FROM model_call") == 2
    assert wh.scalar("SELECT answer FROM context_text_only_answer WHERE case_id = 'c-01'") == "B"


# --- 4. a malformed returned review sheet -------------------------------------------------------------------


def _split_reviews(sample: Sample) -> tuple[list[str], list[list[str]], list[list[str]]]:
    with (sample.context / "reviews.csv").open(encoding="utf-8", newline="") as stream:
        header, *rows = list(csv.reader(stream))
    return header, [r for r in rows if r[1] == "ana"], [r for r in rows if r[1] != "ana"]


def _write_sheet(path: Path, header: list[str], rows: list[list[str]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="") as stream:
        csv.writer(stream, lineterminator="\n").writerows([header, *rows])


def test_malformed_review_sheet_fails_naming_its_rows_after_the_good_sheet_is_stored(sample, tmp_path):
    header, ana, others = _split_reviews(sample)
    returned = tmp_path / "returned"
    broken = [list(r) for r in ana]
    broken[1][header.index("answerability")] = "maybe"  # spreadsheet row 3
    broken[3][0] = "ctx-s99"                             # spreadsheet row 5
    _write_sheet(returned / "ana.csv", header, broken)   # read first (sorted by name), and rejected
    _write_sheet(returned / "ben.csv", header, others)   # ben's eight rows and the panel's row on ctx-s07
    config = context_config(tmp_path, sample, returned=returned)
    result = materialize(config, "context_cases", "context_case_review")
    assert not result.success
    message = " ".join(failures(result))
    assert "ana.csv" in message and "row 3: answerability is 'maybe'" in message
    assert "row 5: case_id 'ctx-s99' is not a case under review" in message and "ben.csv" not in message
    wh = Warehouse(tmp_path / "warehouse.duckdb")
    sheets = {Path(p).name: s for p, s in wh.query("SELECT path, status FROM context_review_sheet").itertuples(index=False)}
    assert sheets == {"ana.csv": "rejected", "ben.csv": "read"}
    stored = wh.query("SELECT sheet, reviewer FROM context_review")
    assert len(stored) == len(others) == 9 and {Path(s).name for s in stored["sheet"]} == {"ben.csv"}
    assert wh.scalar("SELECT count(*) FROM rejection WHERE stage = 'context_case_review'"
                     " AND reason_code = 'malformed_case_review_sheet'") == 1
    # With one reviewer per case nothing is decided, except ctx-s07, which the panel's final row retains.
    statuses = dict(wh.query("SELECT case_id, status FROM context_retention").itertuples(index=False))
    assert statuses == {c: ("retained" if c == "ctx-s07" else "unreviewed") for c in sample.summary["case_ids"]}
    # Unchanged, the bad sheet keeps failing the run; fixed, the next run reads it and decides every case.
    again = materialize(config, "context_case_review")
    assert not again.success and "row 5" in " ".join(failures(again))
    _write_sheet(returned / "ana.csv", header, ana)
    fixed = materialize(config, "context_case_review")
    assert fixed.success, failures(fixed)
    assert wh.scalar("SELECT status FROM context_review_sheet WHERE path = ?", [warehouse_for(config).name_of(returned / "ana.csv")]) == "read"
    assert wh.scalar("SELECT count(*) FROM context_review") == 17
    assert dict(wh.query("SELECT case_id, status FROM context_case_status").itertuples(index=False)) == sample.summary["expected_status"]


# --- 5. the blocking checks fail on corrupted rows ------------------------------------------------------------


def _run_checks_of(config: Path, asset) -> object:
    """Only the asset checks of ``asset`` (the asset itself would rewrite the rows the test corrupted)."""
    job = define_asset_job("context_checks_only", selection=AssetSelection.checks_for_assets(asset))
    defs = Definitions.merge(build_definitions(load_config(config)), Definitions(jobs=[job]))
    return defs.resolve_job_def("context_checks_only").execute_in_process(instance=DagsterInstance.ephemeral(), raise_on_error=False)


def _check_results(wh: Warehouse, run_id: str) -> dict[str, bool]:
    return dict(wh.query("SELECT check_name, passed FROM check_result WHERE run_id = ?", [run_id]).itertuples(index=False))


def _counts(wh: Warehouse, run_id: str, check: str) -> tuple[int, int]:
    """(rows checked, rows failing) of one check in one run."""
    details = json.loads(wh.scalar("SELECT details FROM check_result WHERE run_id = ? AND check_name = ?", [run_id, check]))
    return details["element_count"], details["unexpected_count"]


def test_checks_fail_on_a_gold_outside_the_options_a_wrongly_retained_case_and_a_leaked_probe(sample, tmp_path):
    config = context_config(tmp_path, sample)
    first = materialize(config, "context_cases", "context_case_review", "context_canvas_export")
    assert first.success, failures(first)
    wh = Warehouse(tmp_path / "warehouse.duckdb")
    assert all(_check_results(wh, first.run_id).values())

    # A gold outside the options: the case file is unchanged, so the re-run reads nothing and its check fails.
    with wh.transaction() as con:
        con.execute("UPDATE context_case SET gold = 'Z' WHERE case_id = 'ctx-s02'")
    result = materialize(config, "context_cases")
    assert not result.success
    assert _check_results(wh, result.run_id) == {"gold_option_among_options": False, "rights_for_every_image": True}
    assert _counts(wh, result.run_id, "gold_option_among_options") == (8, 1)

    # ctx-s06 failed visual necessity with both reviewers; marked retained by hand, the review check fails.
    with wh.transaction() as con:
        con.execute("UPDATE context_retention SET status = 'retained' WHERE case_id = 'ctx-s06'")
    result = _run_checks_of(config, context_case_review)
    assert not result.success
    assert _check_results(wh, result.run_id) == {"retained_cases_pass_all_criteria": False}
    assert _counts(wh, result.run_id, "retained_cases_pass_all_criteria") == (7, 1)  # six retained + ctx-s06

    # A probe answer pasted into the evaluation file: both export checks fail.
    path = Path(load_config(config)["context_canvas"]["export_dir"]) / "context_canvas_eval.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    leaked = {**json.loads(lines[0]), "probe": {"model": PROBE_MODEL, "answer": "A"}}
    path.write_text("\n".join([json.dumps(leaked), *lines[1:]]) + "\n", encoding="utf-8")
    result = _run_checks_of(config, context_canvas_export)
    assert not result.success
    assert _check_results(wh, result.run_id) == {"eval_file_is_model_input_only": False, "no_probe_output_in_exports": False}
    for check in ("eval_file_is_model_input_only", "no_probe_output_in_exports"):
        assert _counts(wh, result.run_id, check) == (12, 1)  # six records in each file, one of them edited
    # The untouched case checks still pass on their own.
    with wh.transaction() as con:
        con.execute("UPDATE context_case SET gold = 'A' WHERE case_id = 'ctx-s02'")
    assert _run_checks_of(config, context_cases).success
