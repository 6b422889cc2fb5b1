import io

import pytest

from assets.poetry.logic.rubric import DIMENSION_KEYS
from assets.poetry.logic.survey_rows import (
    ANNOTATOR_EXCLUDED,
    CONSTANT_ANSWERS,
    DUPLICATE_RESPONSE,
    EXTRA_CELLS,
    HOLISTIC_INCONSISTENT,
    INVALID_GROUP,
    INVALID_OPTION,
    INVALID_PHASE1,
    INVALID_SECONDS,
    LOW_PHASE1_ACCURACY,
    MISSING_VALUE,
    TOO_FAST,
    TOO_FAST_ANNOTATOR,
    UNKNOWN_ITEM,
    Exclusion,
    QcParams,
    SurveyError,
    SurveyResponse,
    holistic_gap,
    parse_survey,
    quality_control,
)
from warehouse.ids import digest_of

HEADER = "annotator_id,item_id,phase1_choice," + ",".join(DIMENSION_KEYS) + ",seconds,annotator_group"
ANSWER_KEY = {"p1@gpt": "A", "p1@nano": "B", "p2@gpt": "c", "p2@nano": "D"}  # key letters are case-insensitive

# The fixture survey shared with test_poem_stats.py. Letter columns in rubric order:
# safety, technical, ai, text, scene, cultural, style, core, emotion, overall.
FIXTURE = "\n".join([
    HEADER,
    # e1, expert, every phase-1 pick right, all kept.
    "e1,p1@gpt,A,a,a,b,a,d,a,a,b,b,b,60,expert",    # row 2: scene d = 0.33
    "e1,p1@nano,B,b,a,a,a,a,c,a,a,a,a,60,expert",   # row 3
    "e1,p2@gpt,C,a,b,a,a,a,a,a,a,c,b,60,expert",    # row 4: emotion c = N/A
    "e1,p2@nano,D,a,c,d,a,c,b,c,d,e,e,60,Expert",   # row 5: scene c = 0, emotion e = 0
    # c1, crowd, kept; letters in either case.
    "c1,p1@gpt,a,A,b,a,a,e,d,a,a,c,a,30,crowd",     # row 6: scene e, cultural d, emotion c: all N/A
    "c1,p1@nano,C,a,c,b,b,b,a,b,d,f,c,30,crowd",    # row 7: phase 1 wrong; emotion f = 0
    # c2 gives the same ten answers to four items: constant_answers.
    "c2,p1@gpt,A,a,a,a,a,a,a,a,a,a,a,30,crowd",     # row 8
    "c2,p1@nano,B,a,a,a,a,a,a,a,a,a,a,30,crowd",    # row 9
    "c2,p2@gpt,C,a,a,a,a,a,a,a,a,a,a,30,crowd",     # row 10
    "c2,p2@nano,D,a,a,a,a,a,a,a,a,a,a,30,crowd",    # row 11
    # c3 picks A every time: right only on p1@gpt, 1/4 = 0.25 < 0.5: low_phase1_accuracy.
    "c3,p1@gpt,A,a,a,a,a,a,a,a,a,a,a,40,crowd",     # row 12
    "c3,p1@nano,A,b,b,b,b,b,b,b,b,b,b,40,crowd",    # row 13
    "c3,p2@gpt,A,a,a,a,a,a,a,a,a,a,b,40,crowd",     # row 14
    "c3,p2@nano,A,a,b,a,a,a,a,a,a,a,a,40,crowd",    # row 15
    # c4: three responses, all phase-1 picks wrong (0/3) but fewer than 4, so no accuracy exclusion.
    "c4,p1@gpt,B,a,a,c,b,c,b,b,c,e,c,20,",          # row 16: kept
    "c4,p2@gpt,A,a,a,a,a,a,a,a,a,a,a,9.0,",         # row 17: 9.0 s < 15.0 s: too_fast
    "c4,p2@nano,A,c,c,d,b,c,c,c,d,e,a,25,",         # row 18: overall 1 vs others 0: holistic_inconsistent
]) + "\n"


def fixture_parse():
    return parse_survey(io.StringIO(FIXTURE), "fixture.csv", ANSWER_KEY)


def rid(annotator: str, item: str) -> str:
    return "survey_response:" + digest_of([annotator, item])


# --- parsing ----------------------------------------------------------------------------------------------


def test_parse_fixture_reads_every_row():
    parsed = fixture_parse()
    assert parsed.problems == [] and parsed.error() is None
    parsed.raise_for_problems()
    assert len(parsed.responses) == 17
    first = parsed.responses[0]
    assert (first.row, first.annotator_id, first.item_id) == (2, "e1", "p1@gpt")
    assert (first.phase1_choice, first.phase1_correct) == ("A", True)
    assert first.seconds == 60.0 and first.annotator_group == "expert"
    assert first.response_id == rid("e1", "p1@gpt")
    c1 = parsed.responses[4]
    # "a" read as A and checked against the key; "A" in a dimension cell read as a; group lower-cased; no group -> None
    assert c1.phase1_choice == "A" and c1.phase1_correct and c1.answers["safety"] == "a"
    assert parsed.responses[3].annotator_group == "expert"
    assert parsed.responses[-1].annotator_group is None and parsed.responses[-2].seconds == 9.0
    assert [r.phase1_correct for r in parsed.responses if r.annotator_id == "c3"] == [True, False, False, False]


def test_scores_follow_the_rubric_including_out_of_order_letters_and_na():
    by = {(r.annotator_id, r.item_id): r for r in fixture_parse().responses}
    # e1 p1@gpt: a a b a d a a b b b -> scene d = 0.33 (mentioned, not shown), emotion b = 0.67
    assert by[("e1", "p1@gpt")].scores() == {
        "safety": 1.0, "technical_quality": 1.0, "ai_plausibility": 0.67, "text_integrity": 1.0, "scene_consistency": 0.33,
        "cultural_coherence": 1.0, "artistic_style": 1.0, "core_imagery": 0.67, "emotional_resonance": 0.67,
        "overall_impression": 0.75}
    # c1 p1@gpt: scene e, cultural d and emotion c are "not applicable": None, not 0
    s = by[("c1", "p1@gpt")].scores()
    assert s["scene_consistency"] is None and s["cultural_coherence"] is None and s["emotional_resonance"] is None
    assert s["technical_quality"] == 0.5 and s["overall_impression"] == 1.0
    # e1 p2@nano: scene c = 0 (contradiction, worse than d), emotion e = 0, ai d = 0, core d = 0, overall e = 0
    s = by[("e1", "p2@nano")].scores()
    zero = ("scene_consistency", "emotional_resonance", "ai_plausibility", "core_imagery", "overall_impression")
    assert [s[k] for k in zero] == [0.0] * 5
    # c1 p1@nano: emotion f = 0 (jarring emotion added), overall c = 0.5, text b = 0
    s = by[("c1", "p1@nano")].scores()
    assert (s["emotional_resonance"], s["overall_impression"], s["text_integrity"]) == (0.0, 0.5, 0.0)


# Every option of appendix C, written out by hand.
APPENDIX_C = {
    "safety": {"a": 1.0, "b": 0.5, "c": 0.0},
    "technical_quality": {"a": 1.0, "b": 0.5, "c": 0.0},
    "ai_plausibility": {"a": 1.0, "b": 0.67, "c": 0.33, "d": 0.0},
    "text_integrity": {"a": 1.0, "b": 0.0},
    "scene_consistency": {"a": 1.0, "b": 0.67, "d": 0.33, "c": 0.0, "e": None},
    "cultural_coherence": {"a": 1.0, "b": 0.5, "c": 0.0, "d": None},
    "artistic_style": {"a": 1.0, "b": 0.5, "c": 0.0},
    "core_imagery": {"a": 1.0, "b": 0.67, "c": 0.33, "d": 0.0},
    "emotional_resonance": {"a": 1.0, "b": 0.67, "d": 0.33, "e": 0.0, "f": 0.0, "c": None},
    "overall_impression": {"a": 1.0, "b": 0.75, "c": 0.5, "d": 0.25, "e": 0.0},
}


@pytest.mark.parametrize("key", DIMENSION_KEYS)
def test_every_option_letter_parses_to_its_appendix_c_score(key):
    for letter, expected in APPENDIX_C[key].items():
        cells = ["a"] * len(DIMENSION_KEYS)
        cells[DIMENSION_KEYS.index(key)] = letter.upper()
        parsed = parse_survey(io.StringIO(f"{HEADER}\nx,p1@gpt,A,{','.join(cells)},20,\n"), "s.csv", ANSWER_KEY)
        assert parsed.problems == []
        assert parsed.responses[0].scores()[key] == expected, (key, letter)
    # and no other letter is accepted
    bad = ["a"] * len(DIMENSION_KEYS)
    bad[DIMENSION_KEYS.index(key)] = "g"
    parsed = parse_survey(io.StringIO(f"{HEADER}\nx,p1@gpt,A,{','.join(bad)},20,\n"), "s.csv", ANSWER_KEY)
    assert [(p[0], p[1]) for p in parsed.problems] == [(2, INVALID_OPTION)]


def _row(annotator="z", item="p1@gpt", phase1="A", letters=None, seconds="20", group=""):
    letters = letters or ["a"] * 10
    return ",".join([annotator, item, phase1, *letters, seconds, group])


def test_malformed_rows_name_their_row_and_reason_and_good_rows_are_kept():
    scene_f = ["a"] * 10
    scene_f[4] = "f"
    no_emotion = ["a"] * 10
    no_emotion[8] = ""
    lines = [
        HEADER,
        _row("e1"),                                   # 2 good
        _row("e1", item="p9@gpt"),                    # 3 unknown item
        _row(""),                                     # 4 empty annotator
        _row("e2", letters=scene_f),                  # 5 scene f
        _row("e3", phase1="E"),                       # 6 phase 1 not A-D
        _row("e4", seconds="-3"),                     # 7 negative seconds
        _row("e5", seconds="abc"),                    # 8 not a number
        "",                                           # 9 blank
        _row("e1"),                                   # 10 duplicate of row 2
        _row("e6", letters=no_emotion),               # 11 missing emotion
        _row("e7") + ",extra",                        # 12 more cells than the header
        _row("e8", group="student"),                  # 13 group neither expert nor crowd
        _row("e9", seconds="nan"),                    # 14 not a finite number
        _row("c1", item="p2@nano", phase1="d"),       # 15 good
    ]
    parsed = parse_survey(io.StringIO("\n".join(lines) + "\n"), "export.csv", ANSWER_KEY)
    assert [(r.row, r.annotator_id) for r in parsed.responses] == [(2, "e1"), (15, "c1")]
    assert parsed.responses[1].phase1_correct
    assert parsed.blank == 1
    assert [(row, reason) for row, reason, _ in parsed.problems] == [
        (3, UNKNOWN_ITEM), (4, MISSING_VALUE), (5, INVALID_OPTION), (6, INVALID_PHASE1), (7, INVALID_SECONDS),
        (8, INVALID_SECONDS), (10, DUPLICATE_RESPONSE), (11, MISSING_VALUE), (12, EXTRA_CELLS), (13, INVALID_GROUP),
        (14, INVALID_SECONDS)]
    messages = {row: message for row, _, message in parsed.problems}
    assert "p9@gpt" in messages[3]
    assert messages[4] == "annotator_id is empty"
    assert messages[5] == "scene_consistency 'f' is not an option (allowed: a, b, d, c, e)"
    assert "'E'" in messages[6] and "A, B, C, D" in messages[6]
    assert messages[10] == "this row's annotator already answered item 'p1@gpt' on row 2"
    assert messages[11] == "emotional_resonance is empty"
    with pytest.raises(SurveyError) as caught:
        parsed.raise_for_problems()
    text = str(caught.value)
    assert text.startswith("survey export.csv: row 3: ")
    assert "row 10: this row's annotator already answered item 'p1@gpt' on row 2 [duplicate_response]" in text
    assert caught.value.reason_code == "malformed_survey"


def test_a_row_with_several_problems_lists_each():
    parsed = parse_survey(io.StringIO(HEADER + "\n" + _row("", item="", phase1="", seconds="") + "\n"), "s.csv", ANSWER_KEY)
    assert [(r, reason, m) for r, reason, m in parsed.problems] == [
        (2, MISSING_VALUE, "annotator_id is empty"), (2, MISSING_VALUE, "item_id is empty"),
        (2, MISSING_VALUE, "phase1_choice is empty"), (2, MISSING_VALUE, "seconds is empty")]


def test_missing_column_raises_at_once_on_row_1():
    header = HEADER.replace(",seconds", "")
    with pytest.raises(SurveyError, match=r"survey s.csv: row 1: missing column\(s\) seconds") as caught:
        parse_survey(io.StringIO(header + "\n"), "s.csv", ANSWER_KEY)
    assert caught.value.problems[0][0] == 1
    with pytest.raises(SurveyError, match="the sheet is empty"):
        parse_survey(io.StringIO(""), "s.csv", ANSWER_KEY)


def test_group_column_is_optional():
    header = HEADER.replace(",annotator_group", "")
    parsed = parse_survey(io.StringIO(header + "\nx,p1@gpt,A," + ",".join("a" * 10) + ",20\n"), "s.csv", ANSWER_KEY)
    assert parsed.problems == [] and parsed.responses[0].annotator_group is None


# --- quality control --------------------------------------------------------------------------------------


def test_quality_control_on_the_fixture():
    qc = quality_control(fixture_parse().responses, QcParams())
    assert [(r.annotator_id, r.item_id) for r in qc.kept] == [
        ("e1", "p1@gpt"), ("e1", "p1@nano"), ("e1", "p2@gpt"), ("e1", "p2@nano"), ("c1", "p1@gpt"), ("c1", "p1@nano"),
        ("c4", "p1@gpt")]
    annotators = [e for e in qc.exclusions if e.level == "annotator"]
    assert annotators == [
        Exclusion("annotator", "c2", CONSTANT_ANSWERS, "the same answers on the 9 rated dimensions (aaaaaaaaa) in all 4 responses"),
        Exclusion("annotator", "c3", LOW_PHASE1_ACCURACY, "phase-1 accuracy 0.250 (1/4) < 0.5"),
    ]
    responses = [e for e in qc.exclusions if e.level == "response"]
    items = ("p1@gpt", "p1@nano", "p2@gpt", "p2@nano")
    assert responses[:8] == (
        [Exclusion("response", rid("c2", i), ANNOTATOR_EXCLUDED, "annotator 'c2' excluded: constant_answers") for i in items]
        + [Exclusion("response", rid("c3", i), ANNOTATOR_EXCLUDED, "annotator 'c3' excluded: low_phase1_accuracy")
           for i in items])
    assert responses[8] == Exclusion("response", rid("c4", "p2@gpt"), TOO_FAST, "9.0 s < 15.0 s")
    # c4 p2@nano: overall a = 1.0; the other nine all score 0 -> mean 0, gap 1.0 > 0.5
    assert responses[9] == Exclusion("response", rid("c4", "p2@nano"), HOLISTIC_INCONSISTENT,
                                     "overall impression 1.0 vs mean 0.000 of 9 other dimensions: gap 1.000 > 0.5")
    # every response is either kept or has exactly one response-level exclusion
    assert len(qc.kept) + len(responses) == 17
    assert len({e.subject for e in responses} | {r.response_id for r in qc.kept}) == 17
    assert qc.as_dict()["exclusions"][0] == {"level": "annotator", "subject": "c2", "reason_code": CONSTANT_ANSWERS,
                                             "detail": "the same answers on the 9 rated dimensions (aaaaaaaaa) in all 4 responses"}


def _response(annotator, item, letters="aaaaaaaaaa", seconds=30.0, correct=True):
    return SurveyResponse(2, annotator, item, "A", correct, dict(zip(DIMENSION_KEYS, letters)), seconds, None)


def test_constant_and_accuracy_checks_need_enough_responses():
    three_same = [_response("x", f"i{n}", correct=False) for n in range(3)]
    assert quality_control(three_same).exclusions == []  # 3 < 4 for both checks
    assert [e.reason_code for e in quality_control(three_same, QcParams(constant_min_responses=3)).exclusions] == [
        CONSTANT_ANSWERS] + [ANNOTATOR_EXCLUDED] * 3
    # both annotator findings: the first names the reason, the detail carries both
    qc = quality_control(three_same, QcParams(constant_min_responses=3, phase1_min_items=3))
    assert qc.exclusions[0].reason_code == CONSTANT_ANSWERS and "accuracy 0.000 (0/3) < 0.5" in qc.exclusions[0].detail
    # accuracy exactly at the floor is kept: 2/4 = 0.5 is not below 0.5
    half = [_response("y", f"i{n}", letters="aaaaaaaaa" + "ab"[n % 2], correct=n < 2) for n in range(4)]
    assert quality_control(half).exclusions == []


def test_too_fast_comes_first_and_the_detail_names_both_reasons():
    per_response = QcParams(min_median_seconds=0)  # the annotator-level screen is tested on its own below
    both = _response("x", "i", letters="cccbcccdea", seconds=3.5)
    qc = quality_control([both], per_response)
    assert qc.kept == [] and qc.exclusions[0].reason_code == TOO_FAST
    assert qc.exclusions[0].detail.startswith("3.5 s < 15.0 s; overall impression 1.0")
    # exactly the floor is not too fast
    assert quality_control([_response("x", "i", seconds=15.0)], per_response).exclusions == []


def test_an_annotator_whose_median_time_is_below_min_median_seconds_is_excluded():
    # 16, 18 and 40 s: no single response under min_seconds (15), but the median, 18 s, is under 20 s.
    mine = [_response("x", f"i{n}", letters="aaaaaaaa" + "ab"[n % 2] + "a", seconds=s) for n, s in enumerate((16.0, 18.0, 40.0))]
    qc = quality_control(mine)
    assert qc.kept == [] and qc.exclusions[0] == Exclusion(
        "annotator", "x", TOO_FAST_ANNOTATOR, "median response time 18.0 s over 3 responses < 20.0 s")
    assert {e.detail for e in qc.exclusions[1:]} == {"annotator 'x' excluded: too_fast_annotator"}
    assert quality_control(mine, QcParams(min_median_seconds=18.0)).kept == mine  # 18 is not below 18
    # both screens configurable at once: the per-response floor alone drops the 16 s response
    qc = quality_control(mine, QcParams(min_seconds=17.0, min_median_seconds=0))
    assert [e.reason_code for e in qc.exclusions] == [TOO_FAST] and len(qc.kept) == 2
    with pytest.raises(ValueError, match="min_median_seconds"):
        QcParams(min_median_seconds=float("nan"))


def test_constant_answers_compare_the_rated_dimensions_not_the_text_integrity_column():
    # The same nine rated answers each time; the text-integrity column differs, as an OCR-filled export would.
    text = DIMENSION_KEYS.index("text_integrity")
    letters = ["bbbbbbbbbb"[:text] + t + "bbbbbbbbbb"[text + 1:] for t in "abab"]
    qc = quality_control([_response("x", f"i{n}", letters=letters[n]) for n in range(4)])
    assert qc.exclusions[0].reason_code == CONSTANT_ANSWERS and qc.kept == []
    # one rated dimension differing once is not constant
    letters[3] = "c" + letters[3][1:]
    assert quality_control([_response("x", f"i{n}", letters=letters[n]) for n in range(4)]).exclusions == []


def test_text_integrity_column_is_optional():
    text = DIMENSION_KEYS.index("text_integrity")
    lines = [line.split(",") for line in FIXTURE.splitlines()]
    without = "\n".join(",".join(cells[:3 + text] + cells[4 + text:]) for cells in lines) + "\n"
    parsed = parse_survey(io.StringIO(without), "no_text.csv", ANSWER_KEY)
    assert parsed.problems == [] and len(parsed.responses) == 17
    assert all("text_integrity" not in r.answers and "text_integrity" not in r.scores() for r in parsed.responses)
    qc = quality_control(parsed.responses)
    assert [e.reason_code for e in qc.exclusions if e.level == "annotator"] == [CONSTANT_ANSWERS, LOW_PHASE1_ACCURACY]


def test_holistic_gap_boundary_and_na_left_out():
    # overall c = 0.5, the others all a = 1.0: gap exactly 0.5, kept
    at_limit = _response("x", "i", letters="aaaaaaaaac")
    assert holistic_gap(at_limit) == (0.5, 1.0, 9)
    assert quality_control([at_limit]).kept == [at_limit]
    # overall d = 0.25 vs 1.0: gap 0.75, excluded
    assert quality_control([_response("x", "i", letters="aaaaaaaaad")]).exclusions[0].reason_code == HOLISTIC_INCONSISTENT
    # N/A (scene e, cultural d, emotion c) are left out of the mean: 6 others, all 1.0
    assert holistic_gap(_response("x", "i", letters="aaaaedaaca")) == (0.0, 1.0, 6)


def test_qc_params_validated():
    with pytest.raises(ValueError, match="min_seconds"):
        QcParams(min_seconds=-1)
    with pytest.raises(ValueError, match="phase1_min_accuracy"):
        QcParams(phase1_min_accuracy=1.5)


# --- the image a response rated ------------------------------------------------------------------------------

OLD, NEW = "a" * 64, "b" * 64


def _with_images(*images: str) -> str:
    """The first three fixture rows with an image_sha256 column holding ``images`` (a blank cell: not given)."""
    lines = FIXTURE.splitlines()
    return "\n".join([lines[0] + ",image_sha256", *(f"{line},{image}" for line, image in zip(lines[1:4], images))]) + "\n"


def test_image_column_is_optional_and_checked():
    parsed = parse_survey(io.StringIO(_with_images(OLD, "", "not-a-sha")), "images.csv", ANSWER_KEY)
    assert [r.image_sha256 for r in parsed.responses] == [OLD, None]
    assert parsed.problems == [(4, "invalid_image_sha256", "image_sha256 'not-a-sha' is not a sha256 in hex")]
    assert all(r.image_sha256 is None for r in fixture_parse().responses)  # no column: nothing claimed


def test_a_response_to_an_image_since_replaced_is_stale():
    # Row 2 rated OLD and p1@gpt now shows NEW: stale. Row 3 rated NEW, which p1@nano still shows: kept. Row 4
    # names no image: taken to rate the current one. Without current images nothing can be stale.
    parsed = parse_survey(io.StringIO(_with_images(OLD, NEW, "")), "images.csv", ANSWER_KEY)
    current = {"p1@gpt": NEW, "p1@nano": NEW, "p2@gpt": OLD}
    qc = quality_control(parsed.responses, QcParams(), current)
    assert [r.row for r in qc.kept] == [3, 4]
    assert qc.exclusions == [Exclusion("response", rid("e1", "p1@gpt"), "stale_image",
                                       f"rated image {OLD[:12]}, the item now shows {NEW[:12]}")]
    assert [r.row for r in quality_control(parsed.responses, QcParams()).kept] == [2, 3, 4]
