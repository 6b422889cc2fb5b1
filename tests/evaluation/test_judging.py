"""The evaluation's judges on a real warehouse and step: the heuristic provider's offline judges (verdicts computed
from the texts), a remote judge through the real ``openai`` SDK whose preference follows the position (the swap
finds it out), resuming without asking again, the lineage of a judgement, and the human similarity sheet written,
returned with good and bad rows and read back into agreement figures, raters never stored in clear."""

import csv
import io
import json
import re
from pathlib import Path

import krippendorff
import numpy as np
import pytest
from PIL import Image

from assets.core.step import Step
from assets.evaluation.judge_settings import JudgeSettings, SimilaritySheetSettings
from assets.evaluation.judging import (PREFERENCE, QUALITY, SIMILARITY, _offline_quality, judge_scores, read_similarity_sheets,
                                       similarity_agreement, write_similarity_sheet)
from assets.evaluation.logic.aspect_coverage import aspects_of
from assets.evaluation.logic.benchmark_items import LAYOUTS, BenchmarkItem, ItemImage, Release
from assets.evaluation.logic.quality_judge import CRITERIA
from assets.evaluation.logic.run_identity import prediction_entity_id, run_key, run_row
from assets.evaluation.logic.text_stats import word_count
from assets.evaluation.store import record_run, write_predictions
from resources.model_providers import ModelProvidersResource, RoleConfig
from resources.models.types import ModelRequest
from tests.support.critique_harness import OPENAI_KEY
from tests.support.model_servers import OPENAI, ModelApiServer, wire_schema, wire_user_text
from warehouse.db import Warehouse
from warehouse.lineage import start_activity

PHOTO = ItemImage("ab" * 32, None)
HUMAN = {"p1": "nice shot", "p2": "the horizon is tilted and the sky is blown out, crop the left",
         "p3": "lovely colours in the fog"}
MODEL_SAYS = {  # sample 0 of each post; samples 1 and 2 are shorter variants
    "p1": "The composition is balanced and the soft lighting flatters the subject, but the colours look muddy.",
    "p2": "the horizon is tilted and the sky is blown out, crop the left side",
    "p3": "Strong mood.",
}


def _png() -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (32, 24), (90, 120, 200)).save(out, format="PNG")
    return out.getvalue()


def _step(wh: Warehouse, run: str) -> Step:
    with wh.transaction() as con:
        log = start_activity(con, asset_key="t", partition_key=None, run_id=run, code_version="t v1", parameters={},
                             agents=())
    return Step(wh, log.activity_id, "t", "t v1")


def _predictions(wh: Warehouse, benchmark: str, texts: dict[str, list[str]], model: str = "loop/model",
                 source: str = "model") -> str:
    """A run of ``benchmark`` with these predictions, stored as an evaluation stores them."""
    layout = LAYOUTS[benchmark]
    release = Release(Path("releases"), layout.dataset, "0.1.0", "r" * 64)
    key = run_key(benchmark, release, source, model, "c", {}, 0, None)
    step = _step(wh, f"setup-{key}")
    with step.batch() as log:
        record_run(log.con, run_row(layout, release, key, source, model, "c", {}, 0, None, None, log.activity_id))
        write_predictions(log.con, [
            {"run_key": key, "item_id": item_id, "sample": k, "entity_id": prediction_entity_id(key, item_id, k, text),
             "prediction": text, "prompt_sha256": None, "template": None, "call_id": None, "n_words": word_count(text),
             "activity_id": log.activity_id} for item_id, samples in texts.items() for k, text in enumerate(samples)])
    return key


def _posts() -> dict[str, BenchmarkItem]:
    return {pid: BenchmarkItem(pid, {"title": f"post {pid}", "body": "what do you think?"}, (PHOTO,),
                               (HUMAN[pid], "another critique", "a third one")) for pid in HUMAN}


def _model_texts() -> dict[str, list[str]]:
    return {pid: [text, text.split(",")[0], "Nice."] for pid, text in MODEL_SAYS.items()}


@pytest.fixture
def wh(tmp_path):
    return Warehouse(tmp_path / "w.duckdb", root=tmp_path)


def _scores(scores) -> dict[tuple[str, str], float | None]:
    return {(s.item_id, s.metric): s.value for s in scores}


def _expected_preference(model: str, human: str) -> float:
    weight = lambda t: (len(aspects_of(t)), word_count(t))  # noqa: E731
    return 1.0 if weight(model) > weight(human) else 0.0 if weight(model) < weight(human) else 0.5


def test_offline_judges_compute_each_verdict_from_the_texts(wh):
    items, texts = _posts(), _model_texts()
    key = _predictions(wh, "photocritique", texts)
    step = _step(wh, "judge")
    statuses, scores = judge_scores(step, LAYOUTS["photocritique"], key, items, JudgeSettings(), ModelProvidersResource(),
                                    lambda item: _png())
    values = _scores(scores)
    assert {s.metric: s.status for s in statuses} == {PREFERENCE: "ran", SIMILARITY: "ran"}
    assert all("evaluation/photocritique_" in s.version and "heuristic/heuristic-v1" in s.version for s in statuses)
    for pid, samples in texts.items():
        expected = [_expected_preference(t, HUMAN[pid]) for t in samples]
        assert values[(pid, PREFERENCE)] == pytest.approx(sum(expected) / 3)
    # p2's first critique repeats the human one almost word for word: the top of the scale; unrelated ones the bottom
    rows = wh.query("SELECT item_id, sample, value FROM evaluation_judgement WHERE metric = ? ORDER BY ALL", [SIMILARITY])
    by = {(i, s): v for i, s, v in rows.itertuples(index=False)}
    assert by[("p2", 0)] == 5 and by[("p3", 2)] == 1  # "Nice." against "lovely colours in the fog"
    assert values[("p2", SIMILARITY)] == pytest.approx(np.mean([by[("p2", k)] for k in range(3)]))
    # the offline judge ignores position, so every preference is consistent: both orders agree with the combined row
    both = wh.query("SELECT outcome, reason FROM evaluation_judgement WHERE metric = ? AND position = 'both'", [PREFERENCE])
    assert len(both) == 9 and set(both["reason"].dropna()) == set()
    calls = wh.scalar("SELECT count(*) FROM model_call")
    # two orders per preference, one similarity request per critique; p3's samples 0 and 1 are the same text, so
    # their prompts are the same requests, answered once from the cache
    assert calls == 8 * 3
    # lineage: a judgement comes from the prediction it judged, its benchmark item and its calls
    entity = wh.scalar("SELECT entity_id FROM evaluation_judgement WHERE item_id = 'p1' AND sample = 0 AND position = 'both'")
    relations = set(wh.query("SELECT relation FROM was_derived_from WHERE entity_id = ?", [entity])["relation"])
    assert relations == {"judges", "judged_against", "judged_by"}
    assert wh.scalar("SELECT count(*) FROM was_derived_from WHERE entity_id = ? AND relation = 'judged_by'", [entity]) == 2

    again = _step(wh, "judge again")
    _, rescored = judge_scores(again, LAYOUTS["photocritique"], key, items, JudgeSettings(), ModelProvidersResource(),
                               lambda item: _png())
    assert _scores(rescored) == values
    assert wh.scalar("SELECT count(*) FROM model_call") == calls and not any(k.startswith("judged:") for k in again.counts)


def test_a_disabled_judge_reports_why_and_an_item_without_its_image_is_rejected(wh):
    items = _posts()
    key = _predictions(wh, "photocritique", {"p1": ["The lighting is harsh."]})
    step = _step(wh, "judge")
    statuses, scores = judge_scores(step, LAYOUTS["photocritique"], key, items, JudgeSettings(similarity=False),
                                    ModelProvidersResource(), lambda item: None)
    status = {s.metric: s for s in statuses}
    assert status[SIMILARITY].status == "unavailable" and "judges.similarity" in status[SIMILARITY].reason
    assert _scores(scores)[("p1", PREFERENCE)] is None
    rejected = wh.query("SELECT reason_code, detail FROM rejection WHERE stage = 'photocritique_judgements'")
    assert rejected["reason_code"].tolist() == ["image_unavailable"]


def test_the_quality_judge_scores_every_criterion(wh):
    instruction = "Analyse the composition and the colour of this painting."
    responses = {"c1": "The composition is balanced around the figure and the warm colour palette glows.",
                 "c2": "Nice."}
    items = {cid: BenchmarkItem(cid, {"instruction": instruction}, (PHOTO,), ("gold answer",)) for cid in responses}
    key = _predictions(wh, "critique_canvas", {cid: [text] for cid, text in responses.items()})
    statuses, scores = judge_scores(_step(wh, "judge"), LAYOUTS["critique_canvas"], key, items, JudgeSettings(),
                                    ModelProvidersResource(), lambda item: _png())
    values = _scores(scores)
    assert {s.metric for s in statuses} == {QUALITY} | {f"judge_{c}" for c in CRITERIA if c != "overall_quality"}
    for cid, text in responses.items():
        expected = _offline_quality(ModelRequest("judge", "m", "", "", None, None, None, None,
                                                 context={"instruction": instruction, "response": text}))
        assert values[(cid, QUALITY)] == expected["overall_quality"]
        assert values[(cid, "judge_visual_grounding")] == expected["visual_grounding"]
    assert values[("c1", QUALITY)] > values[("c2", QUALITY)]


def _critiques(body: dict) -> tuple[str, str] | None:
    """The two critiques a judge prompt shows; None for a repair request (it shows the unreadable answer instead)."""
    text = wire_user_text(body)
    a, b = re.search(r"Critique A:\n(.*?)\n\nCritique B:", text, re.S), re.search(r"Critique B:\n(.*?)\n\n", text, re.S)
    return (a.group(1), b.group(1)) if a and b else None


def _position_biased_judge(body: dict) -> str:
    """A remote judge that prefers a critique saying "sharp" wherever it stands, cannot decide about "garbled"
    (its answer states both letters), and otherwise always picks the first critique shown."""
    name, _ = wire_schema(body)
    shown = _critiques(body)
    if name == "photocritique_similarity":
        return json.dumps({"similarity": 2, "reason": "little in common"})
    if shown is None or "garbled" in "".join(shown):  # only the "garbled" answers are asked again
        return "Critique A is more useful. Verdict: B"
    a, b = shown
    winner = "A" if "sharp" in a else "B" if "sharp" in b else "A"
    return json.dumps({"winner": winner, "reason": "decided"})


def test_a_remote_judge_that_follows_the_position_is_found_out_by_the_swap(wh, monkeypatch):
    monkeypatch.setenv("LOOP_JUDGE_KEY", OPENAI_KEY)
    items = _posts()
    key = _predictions(wh, "photocritique", {"p1": ["the eyes are sharp and well lit"], "p2": ["a pleasant scene"],
                                             "p3": ["garbled thoughts"]})
    with ModelApiServer(responder=_position_biased_judge, openai_key=OPENAI_KEY) as server:
        providers = ModelProvidersResource(judge=RoleConfig(provider="openai", model="loop-judge", base_url=server.openai_base_url,
                                                            api_key_env="LOOP_JUDGE_KEY"), timeout_s=2, max_retries=1)
        statuses, scores = judge_scores(_step(wh, "judge"), LAYOUTS["photocritique"], key, items, JudgeSettings(),
                                        providers, lambda item: _png())
        sent = server.requests_to(OPENAI)
    assert all(r.body["messages"][1]["content"][0]["type"] == "image_url" for r in sent
               if wire_schema(r.body)[0] == "photocritique_preference")
    combined = dict(wh.query("SELECT item_id, outcome FROM evaluation_judgement WHERE metric = ? AND position = 'both'",
                             [PREFERENCE]).itertuples(index=False))
    assert combined == {"p1": "model", "p2": "inconsistent", "p3": "unparsed"}
    orders = wh.query("SELECT position, outcome, reason FROM evaluation_judgement WHERE item_id = 'p2' AND metric = ?"
                      " AND position <> 'both' ORDER BY position", [PREFERENCE])
    assert orders.values.tolist() == [["model_first", "model", None], ["reference_first", "reference", None]]
    unreadable = wh.query("SELECT reason FROM evaluation_judgement WHERE item_id = 'p3' AND metric = ? AND position <> 'both'",
                          [PREFERENCE])
    assert set(unreadable["reason"]) == {"ambiguous"}
    values = _scores(scores)
    assert values[("p1", PREFERENCE)] == 1.0 and values[("p2", PREFERENCE)] is None and values[("p3", PREFERENCE)] is None
    assert values[("p2", SIMILARITY)] == 2.0
    preference = next(s for s in statuses if s.metric == PREFERENCE)
    assert preference.parameters["judged"] == 1
    assert preference.parameters["excluded"] == {"inconsistent": 1, "unparsed": 1}
    assert "openai/loop-judge" in preference.version
    # the ambiguous answers were asked once more (the repair), then kept as unreadable; both orders' answers were the
    # same text, so their repair prompts are one request, sent once
    assert wh.scalar("SELECT count(*) FROM model_call WHERE repair_of IS NOT NULL") == 1


RATERS = {"Ana Lima": [1, 2, 3, 4, 5, 2], "Bo Chen": [2, 2, 3, 5, 4, 1]}


def _fill(blank: Path, target: Path, rater: str, ratings: list[int], extra: list[list[str]] = ()) -> None:
    with blank.open(encoding="utf-8", newline="") as stream:
        rows = list(csv.DictReader(stream))
    with target.open("w", encoding="utf-8", newline="") as stream:
        writer = csv.writer(stream)
        writer.writerow(["row_id", "critique_a", "critique_b", "rating", "rater"])
        for row, rating in zip(rows, ratings):
            writer.writerow([row["row_id"], row["critique_a"], row["critique_b"], rating, rater])
        writer.writerows(extra)


def test_the_similarity_sheet_round_trip(wh, tmp_path):
    items = _posts()
    key = _predictions(wh, "photocritique", _model_texts())
    baseline = _predictions(wh, "photocritique", {pid: [f"post {pid}"] for pid in items}, "baseline:title", "baseline")
    judges = JudgeSettings(similarity_sheet=SimilaritySheetSettings(
        sheet_dir=str(tmp_path / "sheets"), pairs=6, seed=3, rater_salt="pepper",
        returned=[str(tmp_path / "ana.csv"), str(tmp_path / "bo.csv"), str(tmp_path / "not-yet.csv")]))
    providers = ModelProvidersResource()
    step = _step(wh, "sheet")
    judge_scores(step, LAYOUTS["photocritique"], key, items, judges, providers, lambda item: _png())
    blank = write_similarity_sheet(step, LAYOUTS["photocritique"], items, [key, baseline], judges)
    first = blank.read_bytes()
    assert write_similarity_sheet(_step(wh, "again"), LAYOUTS["photocritique"], items, [key, baseline], judges).read_bytes() == first
    with blank.open(encoding="utf-8", newline="") as stream:
        rows = list(csv.DictReader(stream))
    assert len(rows) == 6 and list(rows[0]) == ["row_id", "critique_a", "critique_b", "rating", "rater"]
    assert all(r["rating"] == "" and r["rater"] == "" and r["row_id"].startswith("sim-") for r in rows)
    assert not any(r["critique_a"].startswith("post ") or r["critique_b"].startswith("post ") for r in rows)  # no baseline
    assert {HUMAN[pid] for pid in items} & {t for r in rows for t in (r["critique_a"], r["critique_b"])}
    shown = set(wh.query("SELECT model_shown_as FROM evaluation_similarity_pair")["model_shown_as"])
    assert shown <= {"A", "B"}

    ids = [r["row_id"] for r in rows]
    _fill(blank, tmp_path / "ana.csv", "Ana Lima", RATERS["Ana Lima"], [
        ["sim-0000000000000000", "", "", "3", "Ana Lima"],  # line 8: unknown row
        [ids[0], "", "", "7", "Cy"],                          # line 9: off the scale
        [ids[1], "", "", "three", "Cy"],                      # line 10: not a number
        [ids[2], "", "", "4", ""],                            # line 11: no rater
        [ids[0], "", "", "5", " ana  lima "],                 # line 12: Ana again, spelled otherwise
        [ids[3], "", "", "", "Cy"],                           # line 13: not rated yet
    ])
    _fill(blank, tmp_path / "bo.csv", "Bo Chen", RATERS["Bo Chen"])
    reading = _step(wh, "read")
    title, body = read_similarity_sheets(reading, LAYOUTS["photocritique"], judges, providers)

    rejected = wh.query("SELECT reason_code, detail FROM rejection WHERE stage = 'photocritique_similarity_ratings'"
                        " ORDER BY CAST(regexp_extract(detail, 'line=([0-9]+)', 1) AS INTEGER)")
    assert rejected.values.tolist() == [
        ["unknown_row_id", f"ana.csv#line=8: row_id 'sim-0000000000000000' is on no similarity sheet written here"],
        ["invalid_rating", "ana.csv#line=9: rating '7' is not a whole number from 1 to 5"],
        ["invalid_rating", "ana.csv#line=10: rating 'three' is not a whole number from 1 to 5"],
        ["missing_rater", "ana.csv#line=11: the rater column is empty"],
        ["duplicate_rating", f"ana.csv#line=12: this rater already rated {ids[0]} at ana.csv#line=2"],
    ]
    assert reading.counts["similarity_ratings_read"] == 12 and reading.counts["similarity_rows_unrated"] == 1
    assert wh.scalar("SELECT count(*) FROM evaluation_similarity_rating") == 12
    assert set(wh.query("SELECT DISTINCT sheet FROM evaluation_similarity_rating")["sheet"]) == {"ana.csv", "bo.csv"}
    # rater names are never stored, in any table
    for table, column in wh.query("SELECT table_name, column_name FROM duckdb_columns() WHERE data_type IN ('VARCHAR', 'JSON')"
                                  " AND NOT internal").itertuples(index=False):
        assert not wh.scalar(f'SELECT count(*) FROM "{table}" WHERE lower(CAST("{column}" AS VARCHAR)) LIKE \'%lima%\''
                             f' OR lower(CAST("{column}" AS VARCHAR)) LIKE \'%chen%\''), (table, column)
    assert "Ana" not in body and "Bo Chen" not in body

    found = similarity_agreement(wh, "photocritique", "heuristic/heuristic-v1")
    assert len(found.humans) == 2 and len(found.rows) == 6
    data = [[v for v in ratings] for ratings in found.humans.values()]
    assert sorted(map(sorted, data)) == sorted(map(sorted, RATERS.values()))
    expected = krippendorff.alpha(reliability_data=np.array(data, dtype=float), level_of_measurement="ordinal")
    assert found.among_humans.alpha == pytest.approx(expected)
    pairs = list(zip(*data))
    assert found.among_humans.exact == pytest.approx(sum(a == b for a, b in pairs) / 6)
    assert found.among_humans.within_one == pytest.approx(sum(abs(a - b) <= 1 for a, b in pairs) / 6)
    assert all(r is not None for r in found.judge) and found.judge_vs_humans is not None
    assert title.startswith("photocritique: human similarity") and f"{expected:.3f}" in body
    assert "not-yet.csv" in body and "duplicate_rating 1" in body

    # read again: the table holds what the sheets say now, not a second copy
    read_similarity_sheets(_step(wh, "read again"), LAYOUTS["photocritique"], judges, providers)
    assert wh.scalar("SELECT count(*) FROM evaluation_similarity_rating") == 12
