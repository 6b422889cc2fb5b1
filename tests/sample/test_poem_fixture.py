import csv
import io
from collections import Counter, defaultdict

import pytest

from assets.poetry.logic.distractors import distractors, phase1_options
from assets.poetry.logic.rubric import DIMENSION_KEYS, dimension
from assets.poetry.logic.poems import Poem, read_poems
from sample.poem_fixture import GENERATORS, write_poem_sample

COLUMNS = ["annotator_id", "item_id", "phase1_choice", *DIMENSION_KEYS, "seconds", "annotator_group"]


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    out = tmp_path_factory.mktemp("poems")
    summary = write_poem_sample(out)
    rows = list(csv.DictReader(io.StringIO((out / "survey.csv").read_text("utf-8"))))
    return out, summary, rows


def test_byte_identical_on_two_runs(sample, tmp_path):
    out, summary, _ = sample
    again = write_poem_sample(tmp_path)
    assert again == summary
    for name in ("poems.json", "survey.csv"):
        assert (tmp_path / name).read_bytes() == (out / name).read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["poems.json", "survey.csv"]


def test_corpus_reads_back_as_eight_poems_with_translations(sample):
    out, summary, _ = sample
    poems = list(read_poems(out / "poems.json"))
    assert all(isinstance(p, Poem) for p in poems) and len(poems) == summary["counts"]["poems"] == 8
    assert [p.poem_id for p in poems] == [f"tang-{i:03d}" for i in range(1, 9)]
    assert all(p.translation and p.themes and p.form and p.source for p in poems)
    assert "床前明月光" in poems[0].text and "Li Bai" in poems[0].author


def test_survey_has_the_shared_columns_and_valid_letters(sample):
    out, summary, rows = sample
    header = (out / "survey.csv").read_text("utf-8").splitlines()[0]
    assert header.split(",") == COLUMNS
    assert len(rows) == summary["counts"]["responses"]
    items = {f"tang-{i:03d}@{g}" for i in range(1, 9) for g in GENERATORS}
    assert {r["item_id"] for r in rows} == items == set(summary["answer_key"])
    for row in rows:
        assert row["phase1_choice"] in "ABCD" and float(row["seconds"]) >= 0
        assert row["annotator_group"] in ("expert", "crowd")
        for key in DIMENSION_KEYS:
            dimension(key).option(row[key])  # raises on a letter the dimension does not offer
    assert len({(r["annotator_id"], r["item_id"]) for r in rows}) == len(rows)  # one response per pair
    per_item = Counter(r["item_id"] for r in rows)
    assert set(per_item.values()) <= {2, 3} and summary["counts"]["multi_rated_items"] == 24
    per_annotator = Counter(r["annotator_id"] for r in rows)
    assert len(per_annotator) == 8 and min(per_annotator.values()) >= 4
    assert {r["annotator_id"] for r in rows if r["annotator_group"] == "expert"} == {"e01", "e02"}
    # Not-applicable letters occur: scene e, cultural d, emotion c.
    used = {(key, r[key]) for r in rows for key in DIMENSION_KEYS}
    assert {("scene_consistency", "e"), ("cultural_coherence", "d"), ("emotional_resonance", "c")} <= used


def test_answer_key_is_the_pipelines_phase1_letters_at_seed_0(sample):
    out, summary, _ = sample
    poems = list(read_poems(out / "poems.json"))
    chosen = distractors(poems)
    for item_id, letter in summary["answer_key"].items():
        poem_id = item_id.split("@")[0]
        options = phase1_options(item_id, poem_id, [d.poem_id for d in chosen[poem_id]], seed=0)
        assert options.correct_letter == letter


def test_planted_quality_control_cases(sample):
    _, summary, rows = sample
    key = summary["answer_key"]
    cases = summary["qc_cases"]
    fast = [(r["annotator_id"], r["item_id"]) for r in rows if float(r["seconds"]) < 15]
    assert fast == [(c["annotator_id"], c["item_id"]) for c in cases["too_fast"]] and len(fast) == 1
    by_annotator = defaultdict(list)
    for row in rows:
        by_annotator[row["annotator_id"]].append(row)
    constant = [a for a, mine in by_annotator.items() if len({tuple(r[k] for k in DIMENSION_KEYS) for r in mine}) == 1]
    assert constant == cases["constant_answers"] == ["c05"]
    accuracy = {a: sum(r["phase1_choice"] == key[r["item_id"]] for r in mine) / len(mine)
                for a, mine in by_annotator.items()}
    assert [a for a, value in accuracy.items() if value < 0.5] == cases["low_phase1_accuracy"] == ["c06"]
    assert min(v for a, v in accuracy.items() if a != "c06") >= 0.75  # "mostly correct"
    (inconsistent,) = cases["holistic_inconsistent"]
    row = next(r for r in rows if (r["annotator_id"], r["item_id"]) == (inconsistent["annotator_id"],
                                                                          inconsistent["item_id"]))
    assert row["overall_impression"] == "e" and all(row[k] == "a" for k in DIMENSION_KEYS[:-1])


def test_stand_ins_separate_by_quality(sample):
    _, _, rows = sample
    quality = defaultdict(list)
    for row in rows:
        if row["annotator_id"] in ("c05", "c06"):
            continue
        scores = [s for key in DIMENSION_KEYS if (s := dimension(key).score(row[key])) is not None]
        quality[row["item_id"].split("@")[1]].append(sum(scores) / len(scores))
    means = [sum(quality[g]) / len(quality[g]) for g in GENERATORS]
    assert means[0] > means[1] + 0.1 > means[2] + 0.2


def test_survey_parses_and_quality_control_excludes_the_planted_cases(sample):
    poem_survey = pytest.importorskip("assets.poetry.logic.survey_rows")
    out, summary, _ = sample
    with (out / "survey.csv").open(encoding="utf-8", newline="") as stream:
        parsed = poem_survey.parse_survey(stream, "survey.csv", summary["answer_key"])
    assert parsed.problems == [] and len(parsed.responses) == summary["counts"]["responses"]
    result = poem_survey.quality_control(parsed.responses)
    annotators = {(e.subject, e.reason_code) for e in result.exclusions if e.level == "annotator"}
    assert annotators == {("c05", "constant_answers"), ("c06", "low_phase1_accuracy")}
    response_reasons = Counter(e.reason_code for e in result.exclusions if e.level == "response")
    assert response_reasons["too_fast"] == 1 and response_reasons["holistic_inconsistent"] == 1
    assert response_reasons["annotator_excluded"] == 16
    assert len(result.kept) == summary["counts"]["responses"] - 18
    assert {r.item_id for r in result.kept} == set(summary["answer_key"])  # every image keeps a rating
