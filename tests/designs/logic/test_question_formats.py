import json

import pytest

from assets.designs.logic.design_model import Design, Element
from assets.designs.logic.question_formats import (
    JUDGMENT,
    LOCALISATION,
    PERTURBED_OFF_CANVAS,
    REGION_SELECTION,
    TOO_FEW_ELEMENTS,
    AnswerBalance,
    Question,
    QuestionInput,
    QuestionInputError,
    SkippedQuestion,
    answer_balance,
    build_questions,
    judgment_question,
    localisation_question,
    normalised_box,
    pixel_box,
    question_input_from_design,
    region_selection_question,
)

DEFINITION = "Visual weight is spread so that no side of the design feels heavier than the other."
BOXES = {
    "bg": (0, 0, 200, 100),
    "title": (10, 10, 110, 30),
    "photo": (120, 20, 190, 90),
    "logo": (10, 70, 40, 95),
    "title-shadow": (10, 10, 110, 30),  # same box as the title: must never appear as a second identical choice
}


def _item(judged_flawed=True, perturbed="title", boxes=None, indicator="layout_balance", design_id="d1", **kw) -> QuestionInput:
    return QuestionInput(
        design_id=design_id,
        canvas_width=200,
        canvas_height=100,
        element_boxes=dict(BOXES if boxes is None else boxes),
        perturbed_element_id=perturbed,
        judged_flawed=judged_flawed,
        indicator=indicator,
        definition=DEFINITION,
        **kw,
    )


# --- aesthetic judgment -----------------------------------------------------------------------------------


def test_judgment_yes_exactly_when_flawed():
    flawed, good = judgment_question(_item(True)), judgment_question(_item(False))
    assert (flawed.format, flawed.choices, flawed.answer, flawed.answer_index) == (JUDGMENT, ("yes", "no"), "yes", 0)
    assert (good.answer, good.answer_index) == ("no", 1)
    assert DEFINITION in flawed.prompt and "layout balance" in flawed.prompt
    # a good design that was perturbed (the perturbation did no harm) is still a "no"
    assert judgment_question(_item(False, perturbed="title")).answer == "no"
    assert judgment_question(_item(False, perturbed=None)).answer == "no"


# --- region selection -------------------------------------------------------------------------------------


def _check_region_rules(q: Question, judged_flawed: bool):
    assert q.format == REGION_SELECTION and len(q.choices) == 4
    assert q.choices.count(None) == 1
    assert len(set(q.choices)) == 4                         # distinct
    assert q.choices[q.answer_index] == q.answer
    assert sum(c == q.answer for c in q.choices) == 1       # exactly one correct
    assert (q.answer is None) == (not judged_flawed)
    for box, element_id in zip(q.choices, q.choice_elements):
        assert (box is None) == (element_id is None)
        if box is not None:
            assert BOXES[element_id] == box
    for letter, box in zip("ABCD", q.choices):
        shown = "None" if box is None else "[" + ", ".join(map(str, box)) + "]"
        assert f"{letter}. {shown}" in q.prompt


def test_region_selection_flawed_holds_perturbed_box_two_others_and_none():
    for seed in range(20):
        q = region_selection_question(_item(True), seed)
        _check_region_rules(q, True)
        assert q.answer == (10, 10, 110, 30) and q.choice_elements[q.answer_index] == "title"
        # distractors: two of bg, photo, logo (title-shadow has the title's box, so it is not a distinct choice)
        others = {e for e in q.choice_elements if e not in (None, "title")}
        assert len(others) == 2 and others <= {"bg", "photo", "logo"}


def test_region_selection_good_holds_three_boxes_and_none_answer_none():
    for seed in range(20):
        q = region_selection_question(_item(False), seed)
        _check_region_rules(q, False)
        assert q.answer is None and q.choices[q.answer_index] is None
        # four distinct boxes exist (title and title-shadow count once); the perturbed one may be sampled
        assert len([e for e in q.choice_elements if e]) == 3


def test_region_selection_keeps_other_perturbed_elements_out_of_flawed_distractors():
    # photo was perturbed too; with it excluded only bg and logo remain, so the distractors are fixed
    item = _item(True, other_perturbed_ids=frozenset({"photo"}))
    for seed in range(10):
        q = region_selection_question(item, seed)
        assert set(q.choice_elements) == {"title", "bg", "logo", None}


def test_region_selection_seeded_deterministic_and_order_independent():
    q = region_selection_question(_item(True), 7)
    assert region_selection_question(_item(True), 7) == q
    reversed_boxes = dict(reversed(list(BOXES.items())))
    assert region_selection_question(_item(True, boxes=reversed_boxes), 7) == q
    assert {region_selection_question(_item(True), s).choices for s in range(10)} != {q.choices}


def test_region_selection_indicators_shuffle_independently_and_positions_spread():
    indicators = ["layout_balance", "color_contrast"]
    orders = {i: [region_selection_question(_item(True, indicator=i, design_id=f"d{n}"), 1).choices for n in range(40)]
              for i in indicators}
    assert orders["layout_balance"] != orders["color_contrast"]
    positions = {region_selection_question(_item(True, design_id=f"d{n}"), 1).answer_index for n in range(40)}
    assert positions == {0, 1, 2, 3}


def test_region_selection_too_few_distinct_boxes_is_skipped_not_invented():
    # flawed: title plus only one other distinct box (the shadow shares the title's box)
    boxes = {"title": (10, 10, 110, 30), "title-shadow": (10, 10, 110, 30), "logo": (10, 70, 40, 95)}
    skipped = region_selection_question(_item(True, boxes=boxes), 1)
    assert isinstance(skipped, SkippedQuestion) and skipped.reason_code == TOO_FEW_ELEMENTS
    assert "1 distinct candidate" in skipped.detail
    # good: two distinct boxes cannot make three
    skipped = region_selection_question(_item(False, boxes=boxes), 1)
    assert isinstance(skipped, SkippedQuestion) and skipped.reason_code == TOO_FEW_ELEMENTS
    # the other formats are still built
    questions, skips = build_questions(_item(True, boxes=boxes), 1)
    assert [q.format for q in questions] == [JUDGMENT, LOCALISATION] and [s.format for s in skips] == [REGION_SELECTION]
    # exactly enough: title + two other distinct boxes
    boxes["photo"] = (120, 20, 190, 90)
    assert isinstance(region_selection_question(_item(True, boxes=boxes), 1), Question)


# --- precise localisation ---------------------------------------------------------------------------------


def test_localisation_box_when_flawed_none_when_good():
    flawed, good = localisation_question(_item(True)), localisation_question(_item(False))
    assert (flawed.answer, flawed.choices, flawed.answer_index) == ((10, 10, 110, 30), (), None)
    assert good.answer is None and "None" in good.prompt and "200x100" in good.prompt


def test_normalised_units():
    assert normalised_box((10, 10, 110, 30), 200, 100) == (0.05, 0.1, 0.55, 0.3)
    assert localisation_question(_item(True), "normalised").answer == (0.05, 0.1, 0.55, 0.3)
    q = region_selection_question(_item(True), 3, "normalised")
    assert q.answer == (0.05, 0.1, 0.55, 0.3) and q.box_units == "normalised" and "[0.050, 0.100, 0.550, 0.300]" in q.prompt
    # boxes 1 px apart on a 3000 px canvas round to the same normalised box: they count once
    boxes = {"a": (0, 0, 1000, 1000), "b": (1, 1, 1000, 1000), "c": (0, 0, 3000, 3000)}
    item = QuestionInput("d", 3000, 3000, boxes, None, False, "layout_balance", DEFINITION)
    assert isinstance(region_selection_question(item, 1, "pixels"), Question)
    assert region_selection_question(item, 1, "normalised").reason_code == TOO_FEW_ELEMENTS
    with pytest.raises(ValueError, match="box_units"):
        region_selection_question(_item(True), 1, "percent")


# --- ids, serialisation -----------------------------------------------------------------------------------


def test_question_ids_are_content_derived():
    a, _ = build_questions(_item(True), 5)
    b, _ = build_questions(_item(True), 5)
    assert [q.question_id for q in a] == [q.question_id for q in b]
    assert len({q.question_id for q in a}) == 3 and all(q.question_id.startswith("design-question:") for q in a)
    other, _ = build_questions(_item(True, indicator="color_contrast"), 5)
    assert not {q.question_id for q in a} & {q.question_id for q in other}
    json.dumps([q.to_dict() for q in a])
    assert a[1].to_dict()["choices"].count(None) == 1


# --- boxes from a design ----------------------------------------------------------------------------------


def test_pixel_box_rounds_outward_rotates_and_clips():
    assert pixel_box(10.4, 5.0, 20.2, 10.0, 0, 200, 100) == (10, 5, 31, 15)
    # 100x20 turned 90 degrees about its centre (50, 10): 20 wide, 100 tall -> x 40..60, y -40..60, clipped at 0
    assert pixel_box(0, 0, 100, 20, 90, 200, 100) == (40, 0, 60, 60)
    # a 10x10 square at 45 degrees: half extent 10*(cos45+sin45)/2 = 7.07 about (5, 5)
    assert pixel_box(0, 0, 10, 10, 45, 100, 100) == (0, 0, 13, 13)
    assert pixel_box(300, 10, 50, 50, 0, 200, 100) is None
    assert pixel_box(190, 90, 50, 50, 0, 200, 100) == (190, 90, 200, 100)


def _design() -> Design:
    return Design(
        design_id="design:abc",
        canvas_width=200,
        canvas_height=100,
        elements=(
            Element("bg", "background", 0, 0, 200, 100),
            Element("title", "text", 10, 10, 100, 20, text="Sale"),
            Element("photo", "image", 120, 20, 70, 70),
            Element("logo", "svg", 10, 70, 30, 25),
            Element("gone", "image", 250, 10, 20, 20),
        ),
    )


def test_question_input_from_design():
    item = question_input_from_design(_design(), "layout_balance", DEFINITION, ["title"], True)
    assert item.element_boxes["title"] == (10, 10, 110, 30) and item.perturbed_element_id == "title"
    assert item.off_canvas == frozenset({"gone"}) and "gone" not in item.element_boxes
    item = question_input_from_design(_design(), "layout_balance", DEFINITION, ["title", "photo"], True, "title")
    assert item.other_perturbed_ids == frozenset({"photo"})
    with pytest.raises(QuestionInputError, match="say which one"):
        question_input_from_design(_design(), "layout_balance", DEFINITION, ["title", "photo"], True)
    with pytest.raises(QuestionInputError, match="'nope' is not an element"):
        question_input_from_design(_design(), "layout_balance", DEFINITION, ["nope"], False)
    # judged good with several perturbed elements needs no answer element
    no_bg = question_input_from_design(_design(), "layout_balance", DEFINITION, ["title"], True, exclude_types=("background",))
    assert set(no_bg.element_boxes) == {"title", "photo", "logo"}
    bg = question_input_from_design(_design(), "color_harmony", DEFINITION, ["bg"], True, exclude_types=("background",))
    assert bg.element_boxes["bg"] == (0, 0, 200, 100)   # a perturbed element stays whatever its type
    good = question_input_from_design(_design(), "layout_balance", DEFINITION, ["title", "photo"], False)
    assert good.perturbed_element_id is None


def test_perturbed_element_off_canvas_skips_box_formats():
    item = question_input_from_design(_design(), "layout_balance", DEFINITION, ["gone"], True)
    questions, skips = build_questions(item, 1)
    assert [q.answer for q in questions] == ["yes"]
    assert [(s.format, s.reason_code) for s in skips] == [
        (REGION_SELECTION, PERTURBED_OFF_CANVAS), (LOCALISATION, PERTURBED_OFF_CANVAS),
    ]


@pytest.mark.parametrize(
    ("changes", "field", "match"),
    [
        ({"element_boxes": {"title": (10, 10, 210, 30)}}, "element_boxes['title']", "inside the 200x100 canvas"),
        ({"element_boxes": {"title": (10.0, 10, 110, 30)}}, "element_boxes['title']", "integers"),
        ({"element_boxes": {"title": (10, 30, 110, 30)}}, "element_boxes['title']", "non-empty box"),
        ({"perturbed_element_id": None}, "perturbed_element_id", "judged flawed"),
        ({"perturbed_element_id": "ghost"}, "perturbed_element_id", "'ghost'"),
        ({"definition": " "}, "definition", "non-empty definition"),
        ({"canvas_width": 0}, "canvas_width", "positive"),
    ],
)
def test_invalid_inputs_name_the_field(changes, field, match):
    values = dict(design_id="d1", canvas_width=200, canvas_height=100, element_boxes={"title": (10, 10, 110, 30)},
                  perturbed_element_id="title", judged_flawed=True, indicator="layout_balance", definition=DEFINITION)
    values.update(changes)
    with pytest.raises(QuestionInputError, match=match) as caught:
        build_questions(QuestionInput(**values), 1)
    assert caught.value.field == field and caught.value.reason_code == "invalid_question_input"


# --- answer balance ---------------------------------------------------------------------------------------


def test_answer_balance_counts_per_indicator_and_format():
    questions = []
    # layout_balance: designs d0..d2 flawed, d3 good; color_contrast: d0 good only
    for n, flawed in enumerate([True, True, True, False]):
        questions += build_questions(_item(flawed, design_id=f"d{n}"), 9)[0]
    questions += build_questions(_item(False, indicator="color_contrast"), 9)[0]
    region_positions = [0, 0, 0, 0]
    for q in questions:
        if q.indicator == "layout_balance" and q.format == REGION_SELECTION:
            region_positions[q.answer_index] += 1
    balance = answer_balance(questions)
    assert balance == [
        AnswerBalance("color_contrast", JUDGMENT, 1, 0, 1, 0, 0, (0, 1)),
        AnswerBalance("color_contrast", REGION_SELECTION, 1, 0, 0, 1, 0, balance[1].positions),
        AnswerBalance("color_contrast", LOCALISATION, 1, 0, 0, 1, 0, ()),
        AnswerBalance("layout_balance", JUDGMENT, 4, 3, 1, 0, 0, (3, 1)),
        AnswerBalance("layout_balance", REGION_SELECTION, 4, 0, 0, 1, 3, tuple(region_positions)),
        AnswerBalance("layout_balance", LOCALISATION, 4, 0, 0, 1, 3, ()),
    ]
    assert sum(balance[1].positions) == 1 and sum(region_positions) == 4
    assert answer_balance([]) == []
