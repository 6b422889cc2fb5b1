"""The CritiqueCanvas audit loop and export, materialized for real on a heuristic-built four-image set:
sample and blank sheet, sheets from several reviewers (and a malformed one), figures, then the files."""

import csv
import json
from pathlib import Path

import duckdb
import pytest

from assets.critique_canvas.logic.answers import DIMENSION_IDS
from tests.support.critique_harness import built, failures, materialize
from warehouse.db import Warehouse

AUDIT = {"round": "r1", "size": 9, "seed": 3, "min_reviewers": 2, "acceptance_rule": "majority"}
REVIEW_HEADER = ["audit_round", "pair_id", "domain", "image", "instruction", "response",
                 "reviewer", "decision", "blocking_issues", "non_blocking_issues", "comment"]


@pytest.fixture
def audited(tmp_path) -> tuple[Path, Warehouse]:
    config, wh = built(tmp_path, "critique_pairs", "critique_splits", "critique_audit_sample", critique={"audit": AUDIT})
    return config, wh


def _blank_sheet(wh: Warehouse) -> tuple[Path, list[dict]]:
    path = wh.path_of(wh.scalar("SELECT sheet_path FROM critique_audit_round WHERE audit_round = 'r1'"))
    with path.open(encoding="utf-8", newline="") as stream:
        return path, list(csv.DictReader(stream))


def _return_sheet(returned: Path, name: str, rows: list[dict], reviewer: str, verdicts: dict[int, tuple[str, str, str]]) -> Path:
    """A reviewer's copy of the blank sheet: verdicts {row index: (decision, blocking, non_blocking)}, others left blank."""
    returned.mkdir(parents=True, exist_ok=True)
    path = returned / name
    with path.open("w", encoding="utf-8", newline="") as stream:
        writer = csv.DictWriter(stream, fieldnames=REVIEW_HEADER)
        writer.writeheader()
        for n, row in enumerate(rows):
            decision, blocking, non_blocking = verdicts.get(n, ("", "", ""))
            writer.writerow({**row, "reviewer": reviewer if decision else "", "decision": decision,
                             "blocking_issues": blocking, "non_blocking_issues": non_blocking})
    return path


def test_sample_is_stratified_frozen_and_its_sheet_readable(audited):
    config, wh = audited
    accepted = dict(wh.query("SELECT domain, count(*) AS n FROM critique_pair WHERE accepted GROUP BY ALL").itertuples(index=False))
    sampled = dict(wh.query("SELECT domain, count(*) AS n FROM critique_audit_sample GROUP BY ALL").itertuples(index=False))
    assert sum(sampled.values()) == 9 and set(sampled) == set(accepted)
    for domain, n in sampled.items():  # proportional: each domain within one of its exact share
        assert abs(n - 9 * accepted[domain] / sum(accepted.values())) < 1
    path, rows = _blank_sheet(wh)
    assert list(rows[0]) == REVIEW_HEADER and len(rows) == 9
    assert all(Path(r["image"]).is_file() and r["instruction"] and r["response"] and not r["decision"] for r in rows)
    pair_ids = {r["pair_id"] for r in rows}
    assert pair_ids == set(wh.query("SELECT pair_id FROM critique_audit_sample")["pair_id"])
    # Sampled pairs spread over images: no image gives a second pair while another gives none.
    per_group = wh.query("SELECT p.group_id, count(*) AS n FROM critique_audit_sample s JOIN critique_pair p USING (pair_id) GROUP BY ALL")
    assert per_group["n"].max() - per_group["n"].min() <= 1
    sheet_entity = wh.scalar("SELECT sheet_entity_id FROM critique_audit_round")
    assert wh.scalar("SELECT count(*) FROM was_derived_from WHERE entity_id = ? AND relation = 'samples'", [sheet_entity]) == 9

    # Frozen: an unchanged re-run draws nothing; a lost blank sheet is written again, with the same rows.
    path.unlink()
    assert materialize(config, "critique_audit_sample").success
    assert {r["pair_id"] for r in _blank_sheet(wh)[1]} == pair_ids
    assert wh.scalar("SELECT count(*) FROM critique_audit_sample") == 9
    # Changing the draw of a drawn round is refused with the way out; a new round draws a new sample.
    text = config.read_text()
    config.write_text(text.replace("size: 9", "size: 12"))
    result = materialize(config, "critique_audit_sample")
    assert not result.success
    assert any("audit round 'r1' was drawn with size=9" in m and "new name" in m for m in failures(result))
    config.write_text(text.replace("round: r1", "round: r2"))
    assert materialize(config, "critique_audit_sample").success
    assert wh.scalar("SELECT count(*) FROM critique_audit_sample WHERE audit_round = 'r2'") == 9
    assert (path.parent / "critique_audit_round-r2.csv").is_file()


def _figures(wh: Warehouse, scope: str = "all") -> dict:
    return wh.query("SELECT * FROM critique_audit_figure WHERE audit_round = 'r1' AND scope = ?", [scope]).iloc[0].to_dict()


def test_reviewer_sheets_give_figures_and_a_malformed_sheet_names_its_rows(audited):
    config, wh = audited
    _, rows = _blank_sheet(wh)
    returned = wh.path_of(wh.scalar("SELECT sheet_path FROM critique_audit_round")).parent / "returned"
    hallucinated, generic, mismatch = "invented a red car", "generic answer", "instruction does not match the image"
    ok = ("accept", "", "")
    _return_sheet(returned, "alice.csv", rows, "alice",
                  {0: ("reject", hallucinated, ""), 1: ("accept", "", "awkward wording"), **{n: ok for n in range(2, 9)}})
    _return_sheet(returned, "bob.csv", rows, "bob",
                  {0: ("reject", f"{hallucinated}; {generic}", ""), 1: ("reject", generic, ""), **{n: ok for n in range(2, 6)}})
    _return_sheet(returned, "carol.csv", rows, "carol", {0: ok, 1: ok, 2: ok})
    assert materialize(config, "critique_audit_report").success

    # Hand-computed, majority rule, at least two reviews:
    #   row 0: R R A -> rejected, 2 blocking flags; row 1: A(non-blocking) R A -> accepted, 1 flag;
    #   row 2: A A A; rows 3-5: A A -> accepted, no flag; rows 6-8: one review -> not decided.
    outcome = {0: (False, False), 1: (True, False), 2: (True, True), 3: (True, True), 4: (True, True), 5: (True, True)}
    figures = _figures(wh)
    assert (figures["n_sampled"], figures["n_decided"], figures["n_reviews"], figures["n_reviewers"]) == (9, 6, 15, 3)
    assert figures["acceptance_rate"] == pytest.approx(5 / 6)
    assert figures["no_blocking_rate"] == pytest.approx(4 / 6)
    assert figures["non_blocking_rate"] == pytest.approx(1 / 6)
    # Reviewer pairs agreeing: row 0 1/3, row 1 1/3, row 2 3/3, rows 3-5 1/1 each -> 8 of 12.
    assert figures["pairwise_agreement"] == pytest.approx(8 / 12)
    for domain in {r["domain"] for r in rows}:
        mine = [n for n in outcome if rows[n]["domain"] == domain]
        got = _figures(wh, domain)
        assert got["n_sampled"] == sum(r["domain"] == domain for r in rows) and got["n_decided"] == len(mine)
        assert got["n_accepted"] == sum(outcome[n][0] for n in mine) and got["n_no_blocking"] == sum(outcome[n][1] for n in mine)
    review = wh.query("SELECT * FROM critique_audit_review WHERE reviewer = 'bob' AND pair_id = ?", [rows[0]["pair_id"]]).iloc[0]
    assert json.loads(review["blocking_issues"]) == [hallucinated, generic] and review["sheet_row"] == 2
    assert review["sheet_path"].endswith("bob.csv")
    rejected = wh.query("SELECT entity_id, reason_code FROM rejection WHERE stage = 'critique_audit'")
    assert rejected.values.tolist() == [[rows[0]["pair_id"], "audit_rejected"]]

    # A malformed sheet: the run fails naming the sheet and each bad row; nothing of it is stored, the rest stays.
    dave = _return_sheet(returned, "dave.csv", rows, "dave", {0: ("reject", "", ""), 2: ("maybe", "", ""), 6: ok})
    result = materialize(config, "critique_audit_report")
    assert not result.success
    message = " ".join(failures(result))
    assert "dave.csv" in message and "row 2: decision is reject but no blocking issue" in message
    assert "row 4: decision 'maybe' is not accept or reject" in message
    sheet = wh.query("SELECT status, reason_code, detail FROM critique_audit_sheet WHERE path = ?", [wh.name_of(dave)]).iloc[0]
    assert sheet["status"] == "rejected" and sheet["reason_code"] == "malformed_audit_sheet" and "row 4" in sheet["detail"]
    assert wh.scalar("SELECT count(*) FROM critique_audit_review WHERE reviewer = 'dave'") == 0
    assert _figures(wh)["n_decided"] == 6
    assert wh.scalar("SELECT count(*) FROM rejection WHERE stage = 'critique_audit' AND reason_code = 'malformed_audit_sheet'") == 1

    # Dave fixes the sheet: rows 6 and 7 accepted by two, row 8 a tie (A vs R) -> rejected.
    _return_sheet(returned, "dave.csv", rows, "dave", {6: ok, 7: ok, 8: ("reject", mismatch, "")})
    assert materialize(config, "critique_audit_report").success
    figures = _figures(wh)
    assert (figures["n_decided"], figures["n_accepted"], figures["n_no_blocking"], figures["n_reviewers"]) == (9, 7, 6, 4)
    assert figures["pairwise_agreement"] == pytest.approx(10 / 15)
    assert set(wh.query("SELECT entity_id FROM rejection WHERE stage = 'critique_audit' AND reason_code = 'audit_rejected'")["entity_id"]) == {
        rows[0]["pair_id"], rows[8]["pair_id"]}
    summary = wh.query("SELECT * FROM critique_audit_summary WHERE scope = 'all'").iloc[0]
    assert summary["acceptance_pct"] == pytest.approx(77.8) and summary["no_blocking_pct"] == pytest.approx(66.7)
    # The report is an entity derived from every sheet it read and from the sample it audits.
    report = wh.scalar("SELECT DISTINCT report_entity_id FROM critique_audit_figure")
    relations = wh.query("SELECT relation, count(*) AS n FROM was_derived_from WHERE entity_id = ? GROUP BY ALL", [report])
    assert dict(relations.itertuples(index=False)) == {"reviewed_in": 4, "audits": 1}

    # An unchanged re-run reads no sheet again; the same reviewer's pair in a second file is refused.
    before = wh.scalar("SELECT count(*) FROM critique_audit_review")
    assert materialize(config, "critique_audit_report").success
    assert wh.scalar("SELECT count(*) FROM critique_audit_review") == before
    _return_sheet(returned, "dave-again.csv", rows, "dave", {6: ok})
    result = materialize(config, "critique_audit_report")
    assert not result.success and "row 8: reviewer 'dave' already reviewed pair" in " ".join(failures(result))


def test_export_holds_accepted_split_pairs_with_provenance_and_the_compact_form(tmp_path):
    config, wh = built(tmp_path, "critique_pairs", "critique_splits", "critique_audit_sample", critique={"audit": AUDIT})
    _, rows = _blank_sheet(wh)
    returned = wh.path_of(wh.scalar("SELECT sheet_path FROM critique_audit_round")).parent / "returned"
    for reviewer in ("alice", "bob"):
        _return_sheet(returned, f"{reviewer}.csv", rows, reviewer,
                      {0: ("reject", "material hallucination", ""), **{n: ("accept", "", "") for n in range(1, 9)}})
    result = materialize(config, "critique_audit_report", "critique_canvas_export")
    assert result.success, failures(result)
    out = tmp_path / "data" / "exports" / "critique_canvas"
    records = duckdb.sql(f"SELECT * FROM read_parquet('{out / 'critique_canvas.parquet'}')").df()
    lines = [json.loads(line) for line in (out / "critique_canvas.jsonl").read_text(encoding="utf-8").splitlines()]
    expected = set(wh.query("SELECT pair_id FROM critique_pair WHERE accepted")["pair_id"]) - {rows[0]["pair_id"]}
    assert set(records["id"]) == {r["id"] for r in lines} == expected  # the audit-rejected pair is left out
    assert set(lines[0]) == {"id", "image", "image_sha256", "domain", "selected_dimensions", "dimension", "improvement",
                             "instruction", "response", "conversation_group", "turn", "split", "provenance"}
    splits = dict(wh.query("SELECT group_id, split FROM critique_split").itertuples(index=False))
    for record in lines:
        assert Path(record["image"]).is_file() and record["instruction"] and record["response"]
        assert set(record["selected_dimensions"]) <= set(DIMENSION_IDS) and 1 <= len(record["selected_dimensions"]) <= 5
        assert record["split"] == splits[record["conversation_group"]]
        prov = record["provenance"]
        assert prov["license"] == "CC0-1.0" and prov["pool_item_id"]
        for role in ("planner", "annotator", "verifier"):
            assert prov[role]["provider"] == "heuristic" and prov[role]["calls"]
        assert prov["verifier"]["visual_grounding"] is True
    audited = {r["id"]: r["provenance"]["audit"] for r in lines if r["provenance"]["audit"]["rounds"]}
    assert set(audited) == {r["pair_id"] for r in rows[1:]} and all(a["accepted"] and a["n_reviews"] == 2 for a in audited.values())

    compact = {split: [json.loads(line) for line in (out / f"critique_canvas_{split}.conversations.jsonl").read_text().splitlines()]
               for split in ("train", "eval")}
    assert {len(compact["train"]) + len(compact["eval"])} == {len(lines)} and compact["eval"]
    by_id = {r["id"]: r for r in lines}
    for split, items in compact.items():
        for item in items:
            assert set(item) == {"id", "image", "conversations"} and by_id[item["id"]]["split"] == split
            human, gpt = item["conversations"]
            assert human == {"from": "human", "value": "<image>\n" + by_id[item["id"]]["instruction"]}
            assert gpt == {"from": "gpt", "value": by_id[item["id"]]["response"]}

    # Each file is an entity derived from the groups it holds; the eval file only from eval groups.
    files = wh.query("SELECT path, entity_id, n_rows FROM export_file WHERE dataset = 'critique_canvas'")
    assert len(files) == 4
    eval_file = files[files["path"].str.endswith("eval.conversations.jsonl")].iloc[0]
    assert eval_file["n_rows"] == len(compact["eval"])
    held = set(wh.query("SELECT source_entity_id FROM was_derived_from WHERE entity_id = ?", [eval_file["entity_id"]])["source_entity_id"])
    assert held == {g for g, s in splits.items() if s == "eval"}
    # Unchanged inputs leave the files alone; a file edited by hand is written again.
    stamp = (out / "critique_canvas.jsonl").stat().st_mtime_ns
    assert materialize(config, "critique_canvas_export").success
    assert (out / "critique_canvas.jsonl").stat().st_mtime_ns == stamp
    (out / "critique_canvas_train.conversations.jsonl").write_text("edited\n")
    assert materialize(config, "critique_canvas_export").success
    assert json.loads((out / "critique_canvas_train.conversations.jsonl").read_text().splitlines()[0])["conversations"]
