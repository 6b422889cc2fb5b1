"""The poem-illustration benchmark materialized for real (TangPoetryBench-style, issue 6).

1. The demo chain with no image model: stand-in paintings labelled as such, the bundled fixture survey through
   quality control, scores recomputed here from the survey letters, the per-model table, the bootstrap, OCR
   labels, the checks, and a re-run that writes and asks nothing.
2. Generation through the real openai and google-genai SDKs against the loopback server: the stored bytes are
   the server's picture of the prompt it received, retries, rejections that the next run fills in, the pool
   entry of a generated image, and OCR flagging an image that shows the poem's text (then adjudicated).
3. Malformed survey rows: the step's metadata names both rows; the good rows are stored; fixing the file heals it.
4. Malformed poem records: each keeps its locator and reason; the other poems are stored.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from dagster import AssetKey, DagsterInstance, ExecuteInProcessResult

from assets.poetry.logic.distractors import DISTRACTOR_METHOD
from assets.poetry.logic.rubric import DIMENSION_KEYS, TEXT_INTEGRITY, dimension
from assets.poetry.logic.poems import illustration_template
from assets.poetry.logic.raters import RaterPseudonyms
from pipelines.config import load_config
from pipelines.definitions import build_definitions
from sample.make_corpus import build_corpus
from sample.poem_fixture import write_poem_sample
from tests.designs.typed_exports import assert_typed_exports
from tests.support.model_servers import (
    NO_IMAGE,
    OPENAI_GENERATIONS,
    OPENAI_GENERATIONS_PATH,
    InjectedFailure,
    ModelApiServer,
    gemini_path,
    outcomes,
    paint_prompt,
    wire_user_text,
)
from warehouse.db import Warehouse

CHAIN = ["poem_corpus", "poem_illustrations", "recognizability_items", "poem_survey_responses", "poem_text_integrity",
         "poem_scores", "poem_benchmark_statistics", "poem_judge_scores", "poetry_benchmark_export"]
GENERATORS = ("stand-in-1", "stand-in-2", "stand-in-3")
TEMPLATE = f"{illustration_template().id}@{illustration_template().version}"
OPENAI_KEY = "sk-loopback-poem-openai-never-stored"
GEMINI_KEY = "loopback-poem-gemini-never-stored"
OPENAI_MODEL = "loop-image-1"
GEMINI_MODEL = "loop-gemini-image"
RATER_SALT = "loopback-survey-salt-never-stored"
RATERS = RaterPseudonyms(RATER_SALT)


# --- harness ------------------------------------------------------------------------------------------------


def _write_config(folder: Path, poetry: dict, **sections) -> Path:
    config = {"warehouse": {"path": "warehouse.duckdb"}, "blob_store": {"root": "blobs"},
              "poetry": {"survey_dir": "survey", "export_dir": "exports", "rater_salt": RATER_SALT, **poetry},
              "ocr": {"threads": 1}, **sections}
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "aesforge.yaml"
    path.write_text(yaml.safe_dump(config, allow_unicode=True), encoding="utf-8")
    return path


def _run(config: Path, assets: list[str]) -> ExecuteInProcessResult:
    job = build_definitions(load_config(config)).resolve_job_def("poetry_benchmark_job")
    return job.execute_in_process(instance=DagsterInstance.ephemeral(), raise_on_error=False,
                                  asset_selection=[AssetKey(a) for a in assets])


def _failures(result: ExecuteInProcessResult) -> str:
    return " ".join(e.step_failure_data.error.message for e in result.all_events if e.is_step_failure)


def _ok(result: ExecuteInProcessResult) -> None:
    assert result.success, _failures(result)


def _metadata(result: ExecuteInProcessResult, asset: str) -> dict:
    (materialization,) = result.asset_materializations_for_node(asset)
    return {key: value.value for key, value in materialization.metadata.items()}


def _blob(folder: Path, sha: str) -> bytes:
    return (folder / "blobs" / sha[:2] / sha[2:4] / sha).read_bytes()


def _rows(wh: Warehouse, sql: str) -> list[tuple]:
    with wh.transaction() as con:
        return sorted(con.execute(sql).fetchall(), key=repr)


@pytest.fixture(scope="module")
def sample(tmp_path_factory) -> dict:
    """The sample corpus (its paintings are the stand-ins) and the poem fixture (poems.json, survey.csv)."""
    root = tmp_path_factory.mktemp("poem_sample")
    build_corpus(root / "corpus")
    summary = write_poem_sample(root / "poetry")
    return {"root": root, "paintings": root / "corpus" / "images" / "painting", "poems": root / "poetry" / "poems.json",
            "survey": root / "poetry" / "survey.csv", "summary": summary}


def _survey_rows(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as stream:
        return list(csv.DictReader(stream))


# --- 1. the stand-in demo chain -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def demo(tmp_path_factory, sample) -> dict:
    folder = tmp_path_factory.mktemp("poem_demo")
    config = _write_config(folder, {"corpus": [str(sample["poems"])], "stand_in_folder": str(sample["paintings"]),
                                    "surveys": [str(sample["survey"])]})
    result = _run(config, CHAIN)
    _ok(result)
    return {"folder": folder, "config": config, "result": result, "wh": Warehouse(folder / "warehouse.duckdb")}


def test_stand_ins_are_labelled_and_say_no_model_is_configured(demo, sample):
    wh = demo["wh"]
    notes = _metadata(demo["result"], "poem_illustrations")
    assert "no text-to-image model configured" in notes["generators"]
    assert "not model output" in notes["stand_ins"]
    items = wh.query("SELECT * FROM poem_illustration ORDER BY item_id")
    assert len(items) == 24 == sample["summary"]["counts"]["items"]
    assert set(items["item_id"]) == set(sample["summary"]["answer_key"])
    assert set(items["kind"]) == {"stand_in"}
    assert items["provider"].isna().all() and items["model"].isna().all() and items["prompt_template"].isna().all()
    assert items.groupby("generator").size().to_dict() == dict.fromkeys(GENERATORS, 8)
    # Each stand-in is a painting of the folder, stored byte for byte; none is handed to the pool as generated.
    for source, sha in items[["stand_in_source", "image_sha256"]].itertuples(index=False):
        assert Path(source).parent == sample["paintings"]
        assert hashlib.sha256(Path(source).read_bytes()).hexdigest() == sha
    assert items["pool_record_id"].isna().all()
    assert wh.scalar("SELECT count(*) FROM source_record WHERE source_type = 'generated'") == 0
    assert not any("blank" in s for s in items["stand_in_source"])  # the blank canvas illustrates nothing
    # The sample folder holds two files with the same bytes: still no poem shows one image under two generators.
    assert items.groupby("poem_id")["image_sha256"].nunique().to_dict() == dict.fromkeys(items["poem_id"], 3)


def test_quality_control_excludes_the_planted_cases(demo, sample):
    wh = demo["wh"]
    cases = sample["summary"]["qc_cases"]
    rows = _survey_rows(sample["survey"])
    assert wh.scalar("SELECT count(*) FROM poem_survey_response") == len(rows) == 64
    annotators = dict(_rows(wh, "SELECT subject, reason_code FROM poem_survey_exclusion WHERE level = 'annotator'"))
    assert annotators == {RATERS.of("c05"): "constant_answers", RATERS.of("c06"): "low_phase1_accuracy"}
    assert cases["constant_answers"] == ["c05"] and cases["low_phase1_accuracy"] == ["c06"]
    own = _rows(wh, "SELECT r.annotator_id, r.item_id, e.reason_code FROM poem_survey_exclusion e JOIN poem_survey_response r"
                    " ON e.subject = r.response_id WHERE e.level = 'response' AND e.reason_code <> 'annotator_excluded'")
    (fast,), (inconsistent,) = cases["too_fast"], cases["holistic_inconsistent"]
    assert own == sorted([(RATERS.of(fast["annotator_id"]), fast["item_id"], "too_fast"),
                          (RATERS.of(inconsistent["annotator_id"]), inconsistent["item_id"], "holistic_inconsistent")], key=repr)
    by_annotator = wh.scalar("SELECT count(*) FROM poem_survey_exclusion WHERE reason_code = 'annotator_excluded'")
    assert by_annotator == sum(r["annotator_id"] in ("c05", "c06") for r in rows) == 16
    assert wh.scalar("SELECT count(*) FROM poem_survey_response WHERE kept") == 64 - 16 - 2 == 46
    assert wh.scalar("SELECT count(*) FROM poem_survey_bad_row") == 0
    # Every excluded response is a rejection of the survey stage with its reason.
    assert wh.scalar("SELECT count(*) FROM rejection WHERE stage = 'poem_survey'") == 18


def _expected_scores(rows: list[dict[str, str]], item: str, key: dict[str, str], excluded: set[tuple[str, str]],
                     bad_annotators: set[str], text_label: float) -> dict:
    """Independent arithmetic: per dimension the mean of applicable scores over the kept raters (N/A left out),
    the final text label in place of the vote, quality the plain mean of the dimensions that have a value."""
    kept = [r for r in rows if r["item_id"] == item and r["annotator_id"] not in bad_annotators
            and (r["annotator_id"], item) not in excluded]
    dims = {}
    for k in DIMENSION_KEYS:
        scores = [dimension(k).score(r[k]) for r in kept]
        applicable = [s for s in scores if s is not None]
        dims[k] = sum(applicable) / len(applicable) if applicable else None
    dims[TEXT_INTEGRITY] = text_label
    values = [v for v in dims.values() if v is not None]
    return {"dims": dims, "quality": sum(values) / len(values), "n_raters": len(kept),
            "recognizability": sum(r["phase1_choice"] == key[item] for r in kept) / len(kept)}


def test_scores_match_the_survey_letters(demo, sample):
    wh = demo["wh"]
    rows = _survey_rows(sample["survey"])
    key = sample["summary"]["answer_key"]
    cases = sample["summary"]["qc_cases"]
    excluded = {(c["annotator_id"], c["item_id"]) for c in cases["too_fast"] + cases["holistic_inconsistent"]}
    stored = {r[0]: r[1:] for r in _rows(wh, "SELECT item_id, dimensions, quality, recognizability, n_raters"
                                             " FROM poem_image_score")}
    assert len(stored) == 24

    # One image by hand: tang-002@stand-in-3, rated by c02, c03, c04 (all kept). Its letters exercise the
    # out-of-order options (scene d = 0.33; emotion f = 0.0) and not-applicable ones (cultural d, emotion c).
    item = "tang-002@stand-in-3"
    letters = {r["annotator_id"]: [r[k] for k in DIMENSION_KEYS] for r in rows if r["item_id"] == item}
    assert letters == {"c02": list("abbadd" "ccc" "c"), "c03": list("accabd" "bcf" "c"), "c04": list("bcbadd" "bcc" "c")}, \
        "the fixture survey changed: redo the hand arithmetic below"
    dims, quality, recognizability, n_raters = stored[item]
    dims = json.loads(dims)
    hand = {"safety": (1 + 1 + 0.5) / 3, "technical_quality": (0.5 + 0 + 0) / 3, "ai_plausibility": (0.67 + 0.33 + 0.67) / 3,
            "text_integrity": 1.0,  # the OCR label (no text found), not the vote
            "scene_consistency": (0.33 + 0.67 + 0.33) / 3, "cultural_coherence": None,  # all three: not applicable
            "artistic_style": (0 + 0.5 + 0.5) / 3, "core_imagery": 0.33, "emotional_resonance": 0.0,  # c, f, c: one rating
            "overall_impression": 0.5}
    assert dims.keys() == hand.keys()
    for k, v in hand.items():
        assert dims[k] == (None if v is None else pytest.approx(v, abs=1e-12)), k
    assert quality == pytest.approx(sum(v for v in hand.values() if v is not None) / 9, abs=1e-12)
    assert quality == pytest.approx(4.1633333333333333 / 9, abs=1e-12)
    correct = key[item]
    assert recognizability == pytest.approx(sum(r["phase1_choice"] == correct for r in rows if r["item_id"] == item) / 3)
    assert n_raters == 3

    # Every image the same way, from the CSV and the rubric alone.
    for item_id, (dims, quality, recognizability, n_raters) in stored.items():
        expected = _expected_scores(rows, item_id, key, excluded, {"c05", "c06"}, 1.0)
        got = json.loads(dims)
        for k in DIMENSION_KEYS:
            assert (got[k] is None) == (expected["dims"][k] is None), (item_id, k)
            if got[k] is not None:
                assert got[k] == pytest.approx(expected["dims"][k], abs=1e-12), (item_id, k)
        assert quality == pytest.approx(expected["quality"], abs=1e-12), item_id
        assert recognizability == pytest.approx(expected["recognizability"], abs=1e-12), item_id
        assert n_raters == expected["n_raters"], item_id


def _records(wh: Warehouse, sql: str) -> list[dict]:
    with wh.transaction() as con:
        cursor = con.execute(sql)
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row)) for row in cursor.fetchall()]


def test_rater_annotations_are_pseudonymous_and_hold_every_answer_with_its_qc_outcome(demo, sample):
    wh = demo["wh"]
    rows = _survey_rows(sample["survey"])
    key = sample["summary"]["answer_key"]
    cases = sample["summary"]["qc_cases"]
    annotations = _records(wh, "SELECT * FROM poem_rater_annotations")
    assert len(annotations) == len(rows) * (1 + len(DIMENSION_KEYS)) == 704
    by_key = {(a["rater_id"], a["item_id"], a["item"]): a for a in annotations}
    assert len(by_key) == len(annotations)  # (rater_id, item_id, item) is the key
    # No survey id is stored anywhere a rater is named: only its keyed hash.
    raw = {r["annotator_id"] for r in rows}
    assert {a["rater_id"] for a in annotations} == {RATERS.of(name) for name in raw}
    assert wh.scalar("SELECT count(*) FROM poem_survey_response WHERE annotator_id IN (SELECT unnest(?))", [sorted(raw)]) == 0
    assert wh.scalar("SELECT count(*) FROM entity WHERE kind = 'survey_response' AND attributes->>'annotator' IN"
                     " (SELECT unnest(?))", [sorted(raw)]) == 0
    assert wh.scalar("SELECT count(*) FROM poem_survey_exclusion WHERE subject IN (SELECT unnest(?))", [sorted(raw)]) == 0
    images = dict(_rows(wh, "SELECT item_id, image_sha256 FROM poem_illustration"))
    dropped = {(c["annotator_id"], c["item_id"]): reason for reason in ("too_fast", "holistic_inconsistent")
               for c in cases[reason]}
    bad_raters = {*cases["constant_answers"], *cases["low_phase1_accuracy"]}
    for row in rows:
        rater, item = RATERS.of(row["annotator_id"]), row["item_id"]
        reason = "annotator_excluded" if row["annotator_id"] in bad_raters else dropped.get((row["annotator_id"], item))
        choice = by_key[(rater, item, "poem_choice")]
        assert (choice["phase"], choice["answer"], choice["correct"]) == ("recognizability", row["phase1_choice"],
                                                                          row["phase1_choice"] == key[item])
        for dim in DIMENSION_KEYS:
            answer = by_key[(rater, item, dim)]
            assert (answer["phase"], answer["answer"], answer["correct"]) == ("rubric", row[dim], None)
        for answer in (by_key[(rater, item, k)] for k in ("poem_choice", *DIMENSION_KEYS)):
            assert answer["image_sha256"] == images[item] and answer["poem_id"] == item.split("@")[0]
            assert answer["rater_group"] == row["annotator_group"]
            assert (answer["passed_qc"], answer["qc_reason"]) == (reason is None, reason)
            assert answer["rater_passed_qc"] == (row["annotator_id"] not in bad_raters)
    # The published per-image means are the means of the annotations that passed quality control.
    for item_id, recognizability, n_raters in _rows(wh, "SELECT item_id, recognizability, n_raters FROM poem_image_score"):
        passed = [a for a in annotations if a["item_id"] == item_id and a["item"] == "poem_choice" and a["passed_qc"]]
        assert len(passed) == n_raters and sum(a["correct"] for a in passed) / n_raters == pytest.approx(recognizability)


def test_the_benchmark_files_have_one_declared_type_per_column(demo):
    out = demo["folder"] / "exports"
    assert_typed_exports(out, ["poem_images", "poem_rater_annotations"])
    images = pq.read_table(out / "poem_images.parquet").schema
    # stand-ins have no model: the generator columns are null in every row, and still typed as text
    assert all(images.field(c).type == pa.string() for c in ("provider", "model", "provider_model", "prompt_template"))
    assert [f.name for f in images.field("dimensions").type] == sorted(DIMENSION_KEYS)
    assert [f.name for f in images.field("n_ratings").type] == sorted(DIMENSION_KEYS)
    assert (out / "poem_model_table.csv").is_file()


def test_model_table_and_rank_frequencies(demo):
    wh = demo["wh"]
    table = wh.query("SELECT * FROM poem_model_table ORDER BY quality DESC")
    assert list(table["generator"]) == list(GENERATORS)
    assert set(table["n_images"]) == {8}
    # The table's quality is the mean of the generator's image qualities.
    for generator, quality in table[["generator", "quality"]].itertuples(index=False):
        mean = wh.scalar("SELECT avg(quality) FROM poem_image_score WHERE generator = ?", [generator])
        assert quality == pytest.approx(mean, abs=1e-12)
    ranks = wh.query("SELECT * FROM poem_rank_frequency")
    assert set(ranks["n_resamples"]) == {10_000} and set(ranks["n_poems"]) == {8}
    for _, share in ranks.groupby("generator")["share"].sum().items():
        assert share == pytest.approx(1.0, abs=1e-9)
    for _, share in ranks.groupby("rank")["share"].sum().items():
        assert share == pytest.approx(1.0, abs=1e-9)
    observed = dict(_rows(wh, "SELECT DISTINCT generator, observed_rank FROM poem_rank_frequency"))
    assert observed == {"stand-in-1": 1, "stand-in-2": 2, "stand-in-3": 3}
    # Agreement is over rater pairs on multi-rated images: every item has 2-3 raters.
    assert wh.scalar("SELECT count(*) FROM poem_agreement") == 10
    assert wh.scalar("SELECT min(rate) >= 0 AND max(rate) <= 1 FROM poem_agreement WHERE rate IS NOT NULL")


def test_every_image_has_an_ocr_label_and_the_checks_pass(demo):
    wh = demo["wh"]
    labels = wh.query("SELECT l.item_id, l.label, l.source, o.issue FROM poem_text_label l JOIN poem_illustration i"
                      " USING (item_id) JOIN poem_ocr o ON o.item_id = i.item_id AND o.image_sha256 = i.image_sha256")
    assert len(labels) == 24
    assert set(labels["source"]) == {"ocr"}
    assert set(labels["issue"]) == {"none"} and set(labels["label"]) == {1.0}  # the sample paintings carry no text
    assert set(wh.query("SELECT text_label_source FROM poem_image_score")["text_label_source"]) == {"ocr"}
    checks = demo["result"].get_asset_check_evaluations()
    assert len(checks) == 7
    assert all(c.passed for c in checks), [c.check_name for c in checks if not c.passed]
    # The judge scored every image through the provider layer (the offline heuristic in this config).
    assert wh.scalar("SELECT count(*) FROM poem_judgement") == 24
    assert wh.scalar("SELECT n FROM poem_judge_agreement WHERE dimension = 'all'") > 0


def test_rerun_writes_and_asks_nothing(demo):
    wh = demo["wh"]
    tables = ("poem_illustration", "poem_survey_response", "poem_survey_exclusion", "poem_ocr", "poem_image_score",
              "poem_judgement")
    before = {t: _rows(wh, f"SELECT * FROM {t}") for t in tables}
    calls = wh.scalar("SELECT count(*) FROM model_call")
    result = _run(demo["config"], CHAIN)
    _ok(result)
    assert {t: _rows(wh, f"SELECT * FROM {t}") for t in tables} == before
    assert wh.scalar("SELECT count(*) FROM model_call") == calls
    assert "requests sent" not in _metadata(result, "poem_judge_scores")["counts"]
    assert "| stand in: already assigned | 24 |" in _metadata(result, "poem_illustrations")["counts"]


# --- 2. generation through the real SDKs ---------------------------------------------------------------------

TINY = [
    {"poem_id": "p-a", "title": "Quiet Night Thoughts", "author": "Li Bai", "text": "床前明月光，\n疑是地上霜。",
     "translation": "Moonlight lies pale at the foot of my bed", "themes": ["night"], "form": "quatrain",
     "source": "test"},
    # A model that ignores "no text in the image": the loopback server draws the marker's text into the picture.
    {"poem_id": "p-b", "title": "Lantern Song", "author": "Anonymous", "text": "灯火照长街。\n[render text: Lantern Song]",
     "translation": "Lamplight along the long street", "themes": ["festival"], "form": "couplet", "source": "test"},
]


def _generation_config(folder: Path, corpus: Path, server: ModelApiServer, *, openai_model: str = OPENAI_MODEL,
                       vendors: tuple[str, ...] = ("openai", "gemini"), **poetry) -> Path:
    generators = [
        {"name": "gpt", "provider": "openai", "model": openai_model, "base_url": server.openai_base_url,
         "api_key_env": "LOOP_POEM_OPENAI_KEY"},
        {"name": "nano", "provider": "gemini", "model": GEMINI_MODEL, "base_url": server.gemini_base_url,
         "api_key_env": "LOOP_POEM_GEMINI_KEY"},
    ]
    generators = [g for g in generators if g["provider"] in vendors]
    return _write_config(folder, {"corpus": [str(corpus)], "generation_seed": 7, **poetry},
                         image_generators={"generators": generators, "max_retries": 2, "backoff_s": 0.01,
                                           "max_backoff_s": 0.05, "timeout_s": 5})


def test_generation_through_both_sdks(tmp_path, monkeypatch):
    monkeypatch.setenv("LOOP_POEM_OPENAI_KEY", OPENAI_KEY)
    monkeypatch.setenv("LOOP_POEM_GEMINI_KEY", GEMINI_KEY)
    corpus = tmp_path / "tiny.json"
    corpus.write_text(json.dumps(TINY, ensure_ascii=False), encoding="utf-8")
    wh = Warehouse(tmp_path / "warehouse.duckdb")
    failures = [
        InjectedFailure(500, path=OPENAI_GENERATIONS_PATH, match="Quiet Night", times=1),       # retried
        InjectedFailure(NO_IMAGE, path=OPENAI_GENERATIONS_PATH, match="Lantern", times=None),  # declined: not retried
        InjectedFailure(503, path=gemini_path(GEMINI_MODEL), match="Lantern", times=None),     # retries run out
    ]
    with ModelApiServer(failures=failures, openai_key=OPENAI_KEY, gemini_key=GEMINI_KEY) as server:
        config = _generation_config(tmp_path, corpus, server)
        _ok(_run(config, ["poem_corpus", "poem_illustrations"]))
        first = list(server.requests)
    # Calls go generator by generator, poem by poem: gpt (p-a, p-b), then nano (p-a, p-b).
    assert outcomes([r for r in first if r.api == OPENAI_GENERATIONS]) == ["500", "ok", "no_image"]
    assert outcomes([r for r in first if r.api == "gemini"]) == ["ok", "503", "503", "503"]
    assert all(r.authorized for r in first)
    items = wh.query("SELECT * FROM poem_illustration ORDER BY item_id")
    assert list(items["item_id"]) == ["p-a@gpt", "p-a@nano"]
    assert dict(items[["item_id", "attempts"]].itertuples(index=False)) == {"p-a@gpt": 2, "p-a@nano": 1}
    rejected = _rows(wh, "SELECT reason_code, retryable, split_part(detail, ':', 1) FROM rejection"
                         " WHERE stage = 'poem_illustration'")
    assert rejected == sorted([("http_error", True, "p-b@nano"), ("no_image", False, "p-b@gpt")], key=repr)

    # The next run asks only for the two missing images (a fresh server: nothing injected).
    with ModelApiServer(openai_key=OPENAI_KEY, gemini_key=GEMINI_KEY) as server:
        config = _generation_config(tmp_path, corpus, server)
        _ok(_run(config, ["poem_illustrations", "poem_text_integrity"]))
        second = list(server.requests)
    assert sorted((r.api, "Lantern" in wire_user_text(r.body)) for r in second) == [("gemini", True), (OPENAI_GENERATIONS, True)]
    assert outcomes(second) == ["ok", "ok"]
    assert wh.scalar("SELECT count(*) FROM rejection WHERE stage = 'poem_illustration'") == 0

    items = wh.query("SELECT * FROM poem_illustration ORDER BY item_id")
    assert list(items["item_id"]) == ["p-a@gpt", "p-a@nano", "p-b@gpt", "p-b@nano"]
    prompts = {}  # item -> the prompt the server received for the successful call
    for request in first + second:
        if request.outcome == "ok":
            poem = "p-b" if "Lantern" in wire_user_text(request.body) else "p-a"
            prompts[f"{poem}@{'gpt' if request.api == OPENAI_GENERATIONS else 'nano'}"] = request
    poems = {p["poem_id"]: p for p in TINY}
    for row in items.itertuples(index=False):
        request = prompts[row.item_id]
        prompt = wire_user_text(request.body)
        poem = poems[row.poem_id]
        assert poem["text"] in prompt and poem["translation"] not in prompt
        assert "Moonlight" not in prompt and "Lamplight" not in prompt
        # The stored image is exactly the server's picture of the prompt it received.
        picture = paint_prompt(prompt)
        assert _blob(tmp_path, row.image_sha256) == picture
        assert row.image_sha256 == hashlib.sha256(picture).hexdigest()
        assert row.prompt_sha256 == hashlib.sha256(prompt.encode()).hexdigest()
        assert (row.width, row.height, row.mime) == (256, 256, "image/png")
        assert row.kind == "generated" and row.prompt_template == TEMPLATE and row.seed == 7
        if row.generator == "gpt":
            assert (row.provider, row.model, row.provider_model) == ("openai", OPENAI_MODEL, None)
            assert request.body["model"] == OPENAI_MODEL and "seed" not in request.body
        else:
            assert (row.provider, row.model, row.provider_model) == ("gemini", GEMINI_MODEL, f"{GEMINI_MODEL}-loopback-001")
            assert request.path == gemini_path(GEMINI_MODEL) and request.body["generationConfig"]["seed"] == 7
        # It enters the pool as a generated source record, linked to its bytes, derived from its poem.
        record = wh.query("SELECT source_type, extra FROM source_record WHERE record_id = ?", [row.pool_record_id])
        assert list(record["source_type"]) == ["generated"]
        extra = json.loads(record["extra"].iloc[0])
        assert extra["synthetic"] is True and extra["poem_id"] == row.poem_id and extra["generator"] == row.generator
        assert extra["model"] == row.model and extra["prompt_template"] == TEMPLATE
        assert wh.scalar("SELECT file_sha256 FROM record_file WHERE record_id = ?", [row.pool_record_id]) == row.image_sha256
        poem_entity = wh.scalar("SELECT entity_id FROM poem WHERE poem_id = ?", [row.poem_id])
        assert wh.scalar("SELECT relation FROM was_derived_from WHERE entity_id = ? AND source_entity_id = ?",
                         [row.entity_id, poem_entity]) == "illustrates"

    # OCR: the pictures of p-b show the poem's own words; those of p-a show none.
    ocr = dict(_rows(wh, "SELECT item_id, issue FROM poem_ocr"))
    assert ocr == {"p-a@gpt": "none", "p-a@nano": "none", "p-b@gpt": "leaked_poem_text", "p-b@nano": "leaked_poem_text"}
    labels = {r[0]: r[1:] for r in _rows(wh, "SELECT item_id, label, issue, source FROM poem_text_label")}
    assert labels["p-b@gpt"] == (0.0, "leaked_poem_text", "ocr") and labels["p-b@nano"] == (0.0, "leaked_poem_text", "ocr")
    assert labels["p-a@gpt"] == (1.0, "none", "ocr")

    # Adjudication overrides OCR in both directions; OCR is not run again.
    sheet = tmp_path / "adjudication.csv"
    sheet.write_text("item_id,text_issue,issue,reviewer,note\np-b@nano,no,,rui,a seal not text\n"
                     "p-a@gpt,yes,fake_characters,rui,faint glyphs in the sky\n", encoding="utf-8")
    with ModelApiServer(openai_key=OPENAI_KEY, gemini_key=GEMINI_KEY) as server:
        config = _generation_config(tmp_path, corpus, server, adjudication=[str(sheet)])
        result = _run(config, ["poem_illustrations", "poem_text_integrity"])
        _ok(result)
        assert server.requests == []
    assert "| ocr: " not in _metadata(result, "poem_text_integrity")["counts"]
    labels = {r[0]: r[1:] for r in _rows(wh, "SELECT item_id, label, issue, source FROM poem_text_label")}
    assert labels == {"p-a@gpt": (0.0, "fake_characters", "adjudicated"), "p-a@nano": (1.0, "none", "ocr"),
                      "p-b@gpt": (0.0, "leaked_poem_text", "ocr"), "p-b@nano": (1.0, "none", "adjudicated")}

    # The keys never reach the warehouse.
    with wh.transaction() as con:
        dumped = " ".join(str(row) for table in ("poem_illustration", "source_record", "rejection", "activity", "entity")
                          for row in con.execute(f"SELECT * FROM {table}").fetchall())
    assert OPENAI_KEY not in dumped and GEMINI_KEY not in dumped


def _tiny_corpus(folder: Path, poems: list[dict]) -> Path:
    corpus = folder / "tiny.json"
    corpus.write_text(json.dumps(poems, ensure_ascii=False), encoding="utf-8")
    return corpus


def test_a_changed_poem_is_illustrated_again(tmp_path, monkeypatch):
    """A poem whose text changes under the same id is a new poem: its old picture illustrates words it no
    longer has, so the next run must ask for a new one (and only for that one)."""
    monkeypatch.setenv("LOOP_POEM_OPENAI_KEY", OPENAI_KEY)
    corpus = _tiny_corpus(tmp_path, TINY)
    wh = Warehouse(tmp_path / "warehouse.duckdb")
    with ModelApiServer(openai_key=OPENAI_KEY, gemini_key=GEMINI_KEY) as server:
        config = _generation_config(tmp_path, corpus, server, vendors=("openai",))
        _ok(_run(config, ["poem_corpus", "poem_illustrations"]))
        assert len(server.requests) == 2
        changed = [{**TINY[0], "text": "举头望明月，\n低头思故乡。"}, TINY[1]]
        _tiny_corpus(tmp_path, changed)
        _ok(_run(config, ["poem_corpus", "poem_illustrations"]))
        again = server.requests[2:]
    assert wh.scalar("SELECT text FROM poem WHERE poem_id = 'p-a'") == changed[0]["text"]
    assert [changed[0]["text"] in wire_user_text(r.body) for r in again] == [True]
    prompt = wire_user_text(again[0].body)
    row = wh.query("SELECT prompt_sha256, image_sha256 FROM poem_illustration WHERE item_id = 'p-a@gpt'").iloc[0]
    assert row["prompt_sha256"] == hashlib.sha256(prompt.encode()).hexdigest()
    assert row["image_sha256"] == hashlib.sha256(paint_prompt(prompt)).hexdigest()


def test_a_regenerated_image_is_judged_again(tmp_path, monkeypatch):
    """The judge's scores belong to the image it saw: when an item's image is replaced (here the generator's model
    changed, and the new model paints differently), the stored judgement must be of the new image."""
    monkeypatch.setenv("LOOP_POEM_OPENAI_KEY", OPENAI_KEY)
    corpus = _tiny_corpus(tmp_path, TINY)
    wh = Warehouse(tmp_path / "warehouse.duckdb")
    judged = ("SELECT i.item_id, i.image_sha256, m.image_sha256 AS judged_sha256 FROM poem_illustration i"
              " JOIN poem_judgement j USING (item_id), unnest(j.call_ids) AS u(call_id) JOIN model_call m USING (call_id)"
              " ORDER BY i.item_id")
    with ModelApiServer(openai_key=OPENAI_KEY) as server:
        config = _generation_config(tmp_path, corpus, server, vendors=("openai",))
        _ok(_run(config, ["poem_corpus", "poem_illustrations"]))
    _ok(_run(config, ["poem_judge_scores"]))  # separate runs: the judge does not depend on the images directly
    first = wh.query(judged)
    assert list(first["item_id"]) == ["p-a@gpt", "p-b@gpt"]
    assert (first["image_sha256"] == first["judged_sha256"]).all()
    with ModelApiServer(openai_key=OPENAI_KEY, image_generator=lambda prompt: paint_prompt(prompt + " (v2)")) as server:
        config = _generation_config(tmp_path, corpus, server, vendors=("openai",), openai_model="loop-image-2")
        _ok(_run(config, ["poem_illustrations"]))
        assert len(server.requests) == 2
    _ok(_run(config, ["poem_judge_scores"]))
    after = wh.query(judged)
    assert set(after["image_sha256"]).isdisjoint(first["image_sha256"])
    assert (after["image_sha256"] == after["judged_sha256"]).all(), after.to_dict("records")


# --- 3. malformed survey rows --------------------------------------------------------------------------------


SURVEY_CHAIN = ["poem_corpus", "poem_illustrations", "recognizability_items", "poem_survey_responses"]


def test_a_survey_needs_a_salt_and_keeps_the_one_its_raters_were_named_with(tmp_path, sample, monkeypatch):
    poetry = {"corpus": [str(sample["poems"])], "stand_in_folder": str(sample["paintings"]), "surveys": [str(sample["survey"])],
              "rater_salt": None, "rater_salt_env": "LOOP_SURVEY_SALT"}
    config = _write_config(tmp_path, poetry)
    monkeypatch.delenv("LOOP_SURVEY_SALT", raising=False)
    result = _run(config, SURVEY_CHAIN)
    assert not result.success and "no survey rater salt" in _failures(result)
    wh = Warehouse(tmp_path / "warehouse.duckdb")
    assert wh.scalar("SELECT count(*) FROM poem_survey_response") == 0  # nothing stored under raw ids
    monkeypatch.setenv("LOOP_SURVEY_SALT", "first-salt")
    _ok(_run(config, SURVEY_CHAIN))
    named = set(wh.query("SELECT annotator_id FROM poem_survey_response")["annotator_id"])
    assert named == {RaterPseudonyms("first-salt").of(r["annotator_id"]) for r in _survey_rows(sample["survey"])}
    assert "first-salt" not in json.dumps(wh.query("SELECT parameters FROM activity")["parameters"].tolist())
    monkeypatch.setenv("LOOP_SURVEY_SALT", "another-salt")
    result = _run(config, ["poem_survey_responses"])
    assert not result.success and "salt differs" in _failures(result)
    assert set(wh.query("SELECT annotator_id FROM poem_survey_response")["annotator_id"]) == named


def test_malformed_survey_rows_are_named_and_the_rest_kept(tmp_path, sample):
    original = sample["survey"].read_text(encoding="utf-8")
    rows = _survey_rows(sample["survey"])
    broken = [dict(r) for r in rows]
    broken[3]["safety"] = "z"                        # spreadsheet row 5: not a safety option
    broken[7]["item_id"] = "tang-999@stand-in-1"     # spreadsheet row 9: no such item
    survey = tmp_path / "survey_bad.csv"
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(broken)
    survey.write_text(buffer.getvalue(), encoding="utf-8")
    config = _write_config(tmp_path, {"corpus": [str(sample["poems"])], "stand_in_folder": str(sample["paintings"]),
                                      "surveys": [str(survey)]})
    assets = ["poem_corpus", "poem_illustrations", "recognizability_items", "poem_survey_responses"]
    result = _run(config, assets)
    _ok(result)  # a malformed row is that row's outcome; the metadata names it
    message = _metadata(result, "poem_survey_responses")["malformed_rows"]
    assert "survey_bad.csv row 5" in message and "row 9" in message
    assert "safety 'z'" in message and "tang-999@stand-in-1" in message
    wh = Warehouse(tmp_path / "warehouse.duckdb")
    stored = set(_rows(wh, "SELECT annotator_id, item_id FROM poem_survey_response"))
    good = {(RATERS.of(r["annotator_id"]), r["item_id"]) for i, r in enumerate(rows) if i not in (3, 7)}
    assert stored == good and len(stored) == 62
    assert _rows(wh, "SELECT row_number, reason_code FROM poem_survey_bad_row") == [(5, "invalid_option"), (9, "unknown_item")]
    bad = _rows(wh, "SELECT reason_code, detail FROM rejection WHERE stage = 'poem_survey'"
                    " AND reason_code IN ('invalid_option', 'unknown_item')")
    assert [code for code, _ in bad] == ["invalid_option", "unknown_item"]
    assert bad[0][1].startswith("survey_bad.csv row 5:") and bad[1][1].startswith("survey_bad.csv row 9:")

    survey.write_text(original, encoding="utf-8")  # fixed
    _ok(_run(config, assets))
    assert wh.scalar("SELECT count(*) FROM poem_survey_response") == 64
    assert wh.scalar("SELECT count(*) FROM poem_survey_bad_row") == 0
    assert wh.scalar("SELECT count(*) FROM rejection WHERE stage = 'poem_survey'"
                     " AND reason_code IN ('invalid_option', 'unknown_item')") == 0


def test_every_problem_of_a_row_and_an_unreadable_file_are_kept(tmp_path, sample):
    """A row with two bad letters keeps both reasons; a file without the survey's columns is recorded as bad
    (on row 1, the header) while the good rows of the other file are still stored."""
    rows = _survey_rows(sample["survey"])
    broken = [dict(r) for r in rows]
    broken[3]["safety"] = "z"                        # spreadsheet row 5: two letters that are not options
    broken[3]["technical_quality"] = "q"
    survey = tmp_path / "survey_bad.csv"
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(broken)
    survey.write_text(buffer.getvalue(), encoding="utf-8")
    headless = tmp_path / "survey_headless.csv"
    headless.write_text("annotator_id,item_id\nx,tang-001@stand-in-1\n", encoding="utf-8")
    config = _write_config(tmp_path, {"corpus": [str(sample["poems"])], "stand_in_folder": str(sample["paintings"]),
                                      "surveys": [str(survey), str(headless)]})
    result = _run(config, ["poem_corpus", "poem_illustrations", "recognizability_items", "poem_survey_responses"])
    _ok(result)  # a malformed row is that row's outcome; the metadata names it
    message = _metadata(result, "poem_survey_responses")["malformed_rows"]
    assert "2 malformed row(s)" in message and "survey_headless.csv row 1" in message
    wh = Warehouse(tmp_path / "warehouse.duckdb")
    assert wh.scalar("SELECT count(*) FROM poem_survey_response") == 63
    bad = _rows(wh, "SELECT regexp_replace(survey_file, '^.*/', ''), row_number, reason_code, detail FROM poem_survey_bad_row"
                    " ORDER BY 1, 2")
    assert [b[:3] for b in bad] == [("survey_bad.csv", 5, "invalid_option"), ("survey_headless.csv", 1, "malformed_survey")]
    assert "safety 'z'" in bad[0][3] and "technical_quality 'q'" in bad[0][3]
    assert "seconds" in bad[1][3]  # the missing columns are named
    rejected = _rows(wh, "SELECT detail FROM rejection WHERE stage = 'poem_survey' AND detail LIKE 'survey_bad.csv row 5:%'")
    assert len(rejected) == 1 and "safety 'z'" in rejected[0][0] and "technical_quality 'q'" in rejected[0][0]


def test_a_malformed_adjudication_sheet_fails_naming_its_row_and_keeps_a_rejection(tmp_path, sample):
    sheet = tmp_path / "adjudication.csv"
    sheet.write_text("item_id,text_issue,reviewer\ntang-001@stand-in-1,maybe,ada\n", encoding="utf-8")
    config = _write_config(tmp_path, {"corpus": [str(sample["poems"])], "stand_in_folder": str(sample["paintings"]),
                                      "adjudication": [str(sheet)]})
    result = _run(config, ["poem_corpus", "poem_illustrations", "poem_text_integrity"])
    assert not result.success
    assert "text adjudication sheet adjudication.csv: row 2" in _failures(result)
    wh = Warehouse(tmp_path / "warehouse.duckdb")
    assert wh.scalar("SELECT count(*) FROM poem_text_label WHERE source = 'ocr'") == 24  # OCR labels are kept
    rejected = _rows(wh, "SELECT e.kind, r.reason_code, r.detail FROM rejection r JOIN entity e USING (entity_id)"
                         " WHERE r.stage = 'poem_text_integrity'")
    assert len(rejected) == 1 and rejected[0][:2] == ("adjudication_sheet", "malformed_text_adjudication_sheet")
    assert "row 2" in rejected[0][2]


def test_named_stand_in_generators(tmp_path, sample):
    config = _write_config(tmp_path, {"corpus": [str(sample["poems"])], "stand_in_folder": str(sample["paintings"]),
                                      "stand_in_generators": ["ink-wash", "gongbi"]})
    result = _run(config, ["poem_corpus", "poem_illustrations"])
    _ok(result)
    assert "stand-in generators ink-wash, gongbi" in _metadata(result, "poem_illustrations")["stand_ins"]
    items = Warehouse(tmp_path / "warehouse.duckdb").query("SELECT poem_id, generator, image_sha256 FROM poem_illustration")
    assert items.groupby("generator").size().to_dict() == {"ink-wash": 8, "gongbi": 8}
    assert (items.groupby("poem_id")["image_sha256"].nunique() == 2).all()


def test_a_survey_without_a_text_integrity_column_is_scored_from_the_ocr_label(tmp_path, sample):
    rows = _survey_rows(sample["survey"])
    survey = tmp_path / "survey_no_text.csv"
    with survey.open("w", encoding="utf-8", newline="") as stream:
        writer = csv.DictWriter(stream, fieldnames=[c for c in rows[0] if c != TEXT_INTEGRITY], lineterminator="\n",
                                extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    config = _write_config(tmp_path, {"corpus": [str(sample["poems"])], "stand_in_folder": str(sample["paintings"]),
                                      "surveys": [str(survey)]})
    _ok(_run(config, [*SURVEY_CHAIN, "poem_text_integrity", "poem_scores"]))
    wh = Warehouse(tmp_path / "warehouse.duckdb")
    assert wh.scalar("SELECT count(*) FROM poem_survey_response") == len(rows)
    assert wh.scalar("SELECT count(*) FROM poem_survey_response WHERE json_exists(answers, '$.text_integrity')") == 0
    labels = dict(_rows(wh, "SELECT item_id, label FROM poem_text_label"))
    scores = _rows(wh, "SELECT item_id, dimensions, text_integrity_survey, text_label_source FROM poem_image_score")
    assert len(scores) == 24
    for item_id, dims, survey_mean, source in scores:
        assert json.loads(dims)[TEXT_INTEGRITY] == labels[item_id] and survey_mean is None and source == "ocr"


PHASE1_HEADER = "item_id,option_A,option_B,option_C,option_D,true_poem\n"


def test_supplied_phase1_options_replace_the_generated_ones_for_their_items(tmp_path, sample):
    poems = sorted(p["poem_id"] for p in json.loads(sample["poems"].read_text(encoding="utf-8"))["poems"])
    first = f"{poems[0]}@stand-in-1"
    items_file = tmp_path / "phase1.csv"
    items_file.write_text(PHASE1_HEADER + f"{first},{poems[3]},{poems[2]},{poems[0]},{poems[1]},{poems[0]}\n", encoding="utf-8")
    config = _write_config(tmp_path, {"corpus": [str(sample["poems"])], "stand_in_folder": str(sample["paintings"]),
                                      "phase1_items": str(items_file)})
    result = _run(config, ["poem_corpus", "poem_illustrations", "recognizability_items"])
    _ok(result)
    assert "| items: supplied | 1 |" in _metadata(result, "recognizability_items")["counts"]
    wh = Warehouse(tmp_path / "warehouse.duckdb")
    rows = {r[0]: r[1:] for r in _rows(wh, "SELECT item_id, options, correct_letter, method FROM poem_phase1_item")}
    assert len(rows) == 24
    assert rows[first] == ([poems[3], poems[2], poems[0], poems[1]], "C", "supplied:phase1.csv")
    assert {method for item, (_, _, method) in rows.items() if item != first} == {DISTRACTOR_METHOD}
    # A file with a bad row is rejected whole, naming the row; the run fails.
    items_file.write_text(PHASE1_HEADER + f"{first},{poems[3]},{poems[2]},{poems[1]},{poems[1]},{poems[0]}\n", encoding="utf-8")
    result = _run(config, ["recognizability_items"])
    assert not result.success and "phase-1 items file phase1.csv: row 2" in _failures(result)
    rejected = _rows(wh, "SELECT e.kind, r.reason_code, r.detail FROM rejection r JOIN entity e USING (entity_id)"
                         " WHERE r.stage = 'recognizability_items'")
    assert [r[:2] for r in rejected] == [("phase1_items_file", "malformed_phase1_items")] and "row 2" in rejected[0][2]


# --- 4. malformed poem records -------------------------------------------------------------------------------


def test_an_unreadable_corpus_file_is_kept_as_rejected_and_the_other_files_are_read(tmp_path):
    headless = tmp_path / "headless.csv"
    headless.write_text("poem_id,title\ntang-201,No Text\n", encoding="utf-8")  # no author or text column
    good = tmp_path / "good.csv"
    good.write_text("poem_id,title,author,text\ntang-202,Spring Dawn,Meng Haoran,春眠不觉晓\n", encoding="utf-8")
    config = _write_config(tmp_path, {"corpus": [str(headless), str(good)]})
    result = _run(config, ["poem_corpus"])
    _ok(result)  # a rejected file is that file's outcome, not the step's failure
    assert "headless.csv" in str(_metadata(result, "poem_corpus")["unreadable_files"])
    wh = Warehouse(tmp_path / "warehouse.duckdb")
    assert _rows(wh, "SELECT poem_id FROM poem") == [("tang-202",)]
    rejected = _rows(wh, "SELECT e.kind, e.attributes->>'path' FROM rejection r JOIN entity e USING (entity_id)"
                         " WHERE r.stage = 'poem_corpus'")
    assert rejected == [("poem_source", "headless.csv")]  # named relative to the config's folder


def test_malformed_poem_records_keep_locator_and_reason(tmp_path):
    corpus = tmp_path / "poems.csv"
    corpus.write_text(
        "poem_id,title,author,text,translation,themes,form,source\n"
        'tang-101,River Snow,Liu Zongyuan,"千山鸟飞绝，\n万径人踪灭。",,winter; solitude,quatrain,test\n'  # lines 2-3
        "tang-102,Empty Poem,Someone,,,,,test\n"            # line 4: no text
        "bad id!,Odd Id,Someone,some text,,,,test\n"        # line 5: id with a space and '!'
        "tang-101,Twice,Someone,other text,,,,test\n"       # line 6: id already used on line 2
        "tang-105,Spring Dawn,Meng Haoran,春眠不觉晓,,,,test\n",  # line 7
        encoding="utf-8")
    config = _write_config(tmp_path, {"corpus": [str(corpus)]})
    _ok(_run(config, ["poem_corpus"]))
    wh = Warehouse(tmp_path / "warehouse.duckdb")
    reads = _rows(wh, "SELECT regexp_replace(locator, '^.*/', ''), poem_id, reason_code FROM poem_source_read")
    assert reads == [("poems.csv#line=2", "tang-101", None), ("poems.csv#line=4", None, "empty_field"),
                     ("poems.csv#line=5", None, "bad_poem_id"), ("poems.csv#line=6", None, "duplicate_poem_id"),
                     ("poems.csv#line=7", "tang-105", None)]
    details = dict(_rows(wh, "SELECT regexp_replace(locator, '^.*/', ''), detail FROM poem_source_read WHERE reason_code IS NOT NULL"))
    assert details["poems.csv#line=4"] == "text is empty"
    assert "poems.csv#line=2" in details["poems.csv#line=6"]
    poems = wh.query("SELECT poem_id, title, text, themes, locator FROM poem ORDER BY poem_id")
    assert list(poems["poem_id"]) == ["tang-101", "tang-105"]
    assert poems["text"].iloc[0] == "千山鸟飞绝，\n万径人踪灭。" and list(poems["themes"].iloc[0]) == ["winter", "solitude"]
    rejections = _rows(wh, "SELECT reason_code, detail FROM rejection WHERE stage = 'poem_corpus'")
    assert [code for code, _ in rejections] == ["bad_poem_id", "duplicate_poem_id", "empty_field"]
    assert all(detail.startswith("poems.csv#line=") for _, detail in rejections)  # the file's name from the config's folder
