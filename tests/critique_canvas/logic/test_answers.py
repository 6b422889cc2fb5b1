import copy
import json

import pytest

from assets.critique_canvas.logic import answers as cs
from assets.critique_canvas.logic.answers import SchemaError, group_pairs, parse_dialogue, parse_plan, parse_verdicts

PLAN = {"dimensions": [
    {"dimension": "lighting", "reason": "Low sun from the left rakes across the wall and leaves the right third in shadow."},
    {"dimension": "composition", "reason": "The cyclist sits on the lower-left thirds crossing, against an empty wall."},
    {"dimension": "color", "reason": "Warm orange plaster against a cold blue shadow."},
]}

QUESTIONS = [
    ("What is the subject of this photograph?", "A lone cyclist passing a long orange wall at sunset.", "content_and_narrative"),
    ("How is the frame arranged?", "The cyclist sits low on the left third, leaving the wall as negative space.", "composition"),
    ("What does the light do here?", "Raking sun from the left picks out the wall's texture and casts long shadows.", "lighting"),
    ("How do the colours interact?", "Orange plaster meets a blue-grey shadow, a warm-cool contrast.", "color"),
    ("What mood does it convey?", "Quiet solitude: one small figure against a large, still surface.", None),
    ("How could the photograph be improved?", "Lift the shadow on the right slightly and straighten the two-degree tilt.", None),
]


def dialogue_obj():
    return {"pairs": [{"question": q, "answer": a, "dimension": d, "improvement": i == 5}
                      for i, (q, a, d) in enumerate(QUESTIONS)]}


def verdicts_obj(n=6):
    return {"verdicts": [{"pair": i, "instruction_consistency": True, "visual_grounding": True, "response_quality": True,
                          "blocking_issues": [], "non_blocking_issues": []} for i in range(1, n + 1)]}


PARAGRAPHS = [
    ("Write a coherent paragraph appreciating this photograph from the perspective of visual art.", None,
     "A lone cyclist crosses a long orange wall at sunset, small on the lower left against the empty plaster."),
    ("Compose a paragraph that examines only the lighting of this photograph.", "lighting",
     "Raking sun from the left picks out the wall's texture and throws long shadows to the right."),
]


def paragraphs_obj():
    return {"paragraphs": [{"instruction": i, "dimension": d, "response": r} for i, d, r in PARAGRAPHS]}


def pair_verdict_obj(**changes):
    verdict = {name: {"pass": True, "reason": f"{name} holds: the answer names the orange wall."} for name in cs.CRITERIA}
    return {**verdict, "issues": [{"criterion": "response_quality", "severity": "non_blocking",
                                   "description": "One sentence is a little long."}],
            "decision": "accept", "reason": "All three criteria pass and nothing blocks.", **changes}


def reason_of(parse, text, **kwargs):
    with pytest.raises(SchemaError) as caught:
        parse(text, **kwargs)
    assert str(caught.value).startswith(caught.value.reason_code + ": ")
    return caught.value.reason_code


def test_dimension_vocabulary():
    assert cs.DIMENSION_IDS == ("content_and_narrative", "composition", "color", "lighting", "lines_and_brushstrokes", "style",
                                "emotion", "technique", "symbolism", "visual_appeal")
    assert cs.DOMAINS == ("photography", "painting", "virtual")
    assert all(d.name and d.description.endswith(".") for d in cs.DIMENSIONS)


# --- plan -----------------------------------------------------------------------------------------------------

def test_plan_accepts_plain_fenced_and_prose_wrapped_json():
    plain = json.dumps(PLAN)
    for text in (plain, f"```json\n{plain}\n```", f"Here is my selection {{as asked}}:\n{plain}\nHope it helps."):
        plan = parse_plan(text)
        assert plan.dimension_ids == ("lighting", "composition", "color")
        assert plan.items[0].reason.startswith("Low sun")
        assert plan.as_dict() == PLAN


def test_plan_normalizes_display_names_and_trims():
    obj = {"dimensions": [{"dimension": " Visual Appeal ", "reason": "  Strong colour block.  "},
                          {"dimension": "lines-and-brushstrokes", "reason": "Visible strokes."}]}
    plan = parse_plan(json.dumps(obj))
    assert plan.dimension_ids == ("visual_appeal", "lines_and_brushstrokes")
    assert plan.items[0].reason == "Strong colour block."


def test_plan_rejections():
    good = json.dumps(PLAN)
    assert reason_of(parse_plan, good[:-20]) == cs.INVALID_JSON  # truncated: an inner object must not be taken instead
    assert reason_of(parse_plan, "") == cs.INVALID_JSON
    assert reason_of(parse_plan, "I cannot help with that.") == cs.INVALID_JSON
    assert reason_of(parse_plan, '{"dims": []}') == cs.WRONG_SHAPE
    assert reason_of(parse_plan, '{"dimensions": "lighting"}') == cs.WRONG_SHAPE
    assert reason_of(parse_plan, '{"dimensions": [{"dimension": "lighting"}]}') == cs.WRONG_SHAPE
    assert reason_of(parse_plan, '{"dimensions": [{"dimension": 3, "reason": "x"}]}') == cs.WRONG_SHAPE
    assert reason_of(parse_plan, '{"dimensions": []}') == cs.WRONG_SHAPE
    six = {"dimensions": [{"dimension": d, "reason": "seen"} for d in cs.DIMENSION_IDS[:6]]}
    assert reason_of(parse_plan, json.dumps(six)) == cs.TOO_MANY_DIMENSIONS
    unknown = {"dimensions": [{"dimension": "sharpness", "reason": "crisp"}]}
    assert reason_of(parse_plan, json.dumps(unknown)) == cs.UNKNOWN_DIMENSION
    dup = {"dimensions": [{"dimension": "color", "reason": "a"}, {"dimension": "Color", "reason": "b"}]}
    assert reason_of(parse_plan, json.dumps(dup)) == cs.DUPLICATE_DIMENSION
    empty = {"dimensions": [{"dimension": "color", "reason": "   "}]}
    assert reason_of(parse_plan, json.dumps(empty)) == cs.EMPTY_TEXT


# --- dialogue -------------------------------------------------------------------------------------------------

def test_dialogue_accepts_good_and_fenced():
    for text in (json.dumps(dialogue_obj()), "Sure!\n```json\n" + json.dumps(dialogue_obj(), indent=2) + "\n```"):
        dialogue = parse_dialogue(text)
        assert len(dialogue.pairs) == 6
        assert [p.improvement for p in dialogue.pairs] == [False] * 5 + [True]
        assert dialogue.pairs[0].dimension == "content_and_narrative" and dialogue.pairs[4].dimension is None
        assert dialogue.as_dict() == dialogue_obj()


def test_dialogue_rejections():
    good = json.dumps(dialogue_obj())
    assert reason_of(parse_dialogue, good[: len(good) // 2]) == cs.INVALID_JSON
    for n in (5, 7):
        obj = dialogue_obj()
        obj["pairs"] = (obj["pairs"] * 2)[:n]
        for p in obj["pairs"]:
            p["improvement"] = False
        obj["pairs"][0]["improvement"] = True
        assert reason_of(parse_dialogue, json.dumps(obj)) == cs.WRONG_PAIR_COUNT
    for flags in ([False] * 6, [True, False, False, False, False, True]):
        obj = dialogue_obj()
        for p, flag in zip(obj["pairs"], flags):
            p["improvement"] = flag
        assert reason_of(parse_dialogue, json.dumps(obj)) == cs.IMPROVEMENT_COUNT
    for key in ("question", "answer"):
        obj = dialogue_obj()
        obj["pairs"][2][key] = " \n"
        assert reason_of(parse_dialogue, json.dumps(obj)) == cs.EMPTY_TEXT
    obj = dialogue_obj()
    obj["pairs"][1]["dimension"] = "framing"
    assert reason_of(parse_dialogue, json.dumps(obj)) == cs.UNKNOWN_DIMENSION
    for key, value in (("improvement", "yes"), ("improvement", 1), ("dimension", 4), ("question", None)):
        obj = dialogue_obj()
        obj["pairs"][3][key] = value
        assert reason_of(parse_dialogue, json.dumps(obj)) == cs.WRONG_SHAPE, (key, value)
    obj = dialogue_obj()
    del obj["pairs"][0]["dimension"]
    assert reason_of(parse_dialogue, json.dumps(obj)) == cs.WRONG_SHAPE
    assert reason_of(parse_dialogue, json.dumps({"pairs": [1, 2, 3, 4, 5, 6]})) == cs.WRONG_SHAPE


# --- verdicts -------------------------------------------------------------------------------------------------

def test_verdicts_accept_and_compute_acceptance():
    obj = verdicts_obj()
    obj["verdicts"].reverse()  # order in the answer does not matter
    obj["verdicts"][0]["visual_grounding"] = False  # pair 6
    obj["verdicts"][0]["blocking_issues"] = ["Claims a second cyclist; only one is visible."]
    obj["verdicts"][1]["blocking_issues"] = ["Answer ignores the question."]  # pair 5: checks pass, still blocked
    obj["verdicts"][2]["non_blocking_issues"] = ["Slightly repetitive wording.", ""]  # pair 4: accepted
    obj["verdicts"][3]["response_quality"] = False  # pair 3: failed check without an issue is still rejected
    verdicts = parse_verdicts("```json\n" + json.dumps(obj) + "\n```")
    assert [v.pair for v in verdicts] == [1, 2, 3, 4, 5, 6]
    assert [v.accepted for v in verdicts] == [True, True, False, True, False, False]
    assert verdicts[3].non_blocking_issues == ("Slightly repetitive wording.",)
    assert verdicts[5].as_dict()["accepted"] is False


def test_verdicts_ignore_a_model_supplied_decision():
    obj = verdicts_obj()
    obj["verdicts"][0].update(decision="accept", visual_grounding=False)
    assert parse_verdicts(json.dumps(obj))[0].accepted is False


def test_verdict_rejections():
    good = json.dumps(verdicts_obj())
    assert reason_of(parse_verdicts, good[:-3]) == cs.INVALID_JSON
    assert reason_of(parse_verdicts, json.dumps(verdicts_obj(5))) == cs.VERDICT_COUNT  # a missing verdict
    assert reason_of(parse_verdicts, json.dumps(verdicts_obj(7))) == cs.VERDICT_COUNT
    seven = verdicts_obj()
    seven["verdicts"][5]["pair"] = 7  # pairs 1..5 and 7
    assert reason_of(parse_verdicts, json.dumps(seven)) == cs.VERDICT_PAIRS
    twice = verdicts_obj()
    twice["verdicts"][5]["pair"] = 2
    assert reason_of(parse_verdicts, json.dumps(twice)) == cs.VERDICT_PAIRS
    for key, value in (("pair", "1"), ("pair", True), ("visual_grounding", "pass"), ("blocking_issues", "none"),
                       ("non_blocking_issues", [3])):
        obj = verdicts_obj()
        obj["verdicts"][0][key] = value
        assert reason_of(parse_verdicts, json.dumps(obj)) == cs.WRONG_SHAPE, (key, value)
    assert parse_verdicts(json.dumps(verdicts_obj(3)), n_pairs=3)[-1].pair == 3


def test_parse_answer_dispatches_by_schema_name():
    assert isinstance(cs.parse_answer("plan", json.dumps(PLAN)), cs.Plan)
    assert len(cs.parse_answer("verdicts", json.dumps(verdicts_obj()))) == 6
    with pytest.raises(ValueError):
        cs.parse_answer("critique", "{}")


# --- pair records ---------------------------------------------------------------------------------------------

def test_group_pairs_share_a_stable_content_derived_group():
    dialogue = parse_dialogue(json.dumps(dialogue_obj()))
    records = group_pairs("image:abc", dialogue)
    assert [r.index for r in records] == [1, 2, 3, 4, 5, 6]
    assert len({r.group_id for r in records}) == 1 and records[0].group_id.startswith("critique_group:")
    assert len({r.pair_id for r in records}) == 6
    assert [r.improvement for r in records] == [False] * 5 + [True]
    assert records[1].dimension == "composition" and records[1].question == QUESTIONS[1][0]

    again = group_pairs("image:abc", parse_dialogue(json.dumps(dialogue_obj(), indent=4)))
    assert again == records  # same image and dialogue: same ids, whatever the JSON formatting
    other_image = group_pairs("image:def", dialogue)
    assert other_image[0].group_id != records[0].group_id
    assert {r.pair_id for r in other_image}.isdisjoint(r.pair_id for r in records)
    edited = dialogue_obj()
    edited["pairs"][0]["answer"] += " The wall fills two thirds of the frame."
    assert group_pairs("image:abc", parse_dialogue(json.dumps(edited)))[0].group_id != records[0].group_id


# --- JSON Schemas ---------------------------------------------------------------------------------------------

def _walk(node, path="$"):
    yield path, node
    for key in ("properties",):
        for name, child in node.get(key, {}).items():
            yield from _walk(child, f"{path}.{name}")
    if "items" in node:
        yield from _walk(node["items"], f"{path}[]")
    for index, child in enumerate(node.get("anyOf", [])):
        yield from _walk(child, f"{path}|{index}")


def test_schemas_fit_strict_structured_output():
    allowed = {"type", "description", "properties", "required", "additionalProperties", "items", "minItems", "maxItems",
               "enum", "anyOf", "minimum", "maximum"}
    for name, schema in cs.SCHEMAS.items():
        assert schema["type"] == "object"
        json.dumps(schema)  # plain JSON, nothing Python-specific
        for path, node in _walk(schema):
            assert set(node) <= allowed, (name, path)
            assert "type" in node or "anyOf" in node, (name, path)
            if node.get("type") == "object":
                assert node["additionalProperties"] is False and node["required"] == list(node["properties"]), (name, path)
            if node.get("type") == "array":
                assert "items" in node, (name, path)
            if "enum" in node:
                assert node["enum"] in (list(cs.DIMENSION_IDS), list(cs.ISSUE_CRITERIA), list(cs.SEVERITIES),
                                        list(cs.DECISIONS)), (name, path)
    assert cs.PLAN_SCHEMA["properties"]["dimensions"]["maxItems"] == 5
    assert cs.DIALOGUE_SCHEMA["properties"]["pairs"]["minItems"] == cs.DIALOGUE_SCHEMA["properties"]["pairs"]["maxItems"] == 6


def test_schemas_are_valid_json_schema_and_agree_with_the_validators():
    jsonschema = pytest.importorskip("jsonschema")
    examples = {"plan": PLAN, "dialogue": dialogue_obj(), "verdicts": verdicts_obj(), "paragraphs": paragraphs_obj(),
                "pair_verdict": pair_verdict_obj()}
    for name, schema in cs.SCHEMAS.items():
        validator = jsonschema.Draft202012Validator
        validator.check_schema(schema)
        validator(schema).validate(examples[name])
    bad = copy.deepcopy(dialogue_obj())
    bad["pairs"].pop()
    assert not jsonschema.Draft202012Validator(cs.DIALOGUE_SCHEMA).is_valid(bad)
    six = {"dimensions": [{"dimension": d, "reason": "seen"} for d in cs.DIMENSION_IDS[:6]]}
    assert not jsonschema.Draft202012Validator(cs.PLAN_SCHEMA).is_valid(six)


# --- paragraphs and the per-pair verdict --------------------------------------------------------------------

def test_paragraphs_need_the_asked_count_distinct_instructions_and_known_dimensions():
    parsed = cs.parse_paragraphs(json.dumps(paragraphs_obj()), 2)
    assert [p.dimension for p in parsed.items] == [None, "lighting"] and parsed.as_dict() == paragraphs_obj()
    assert reason_of(cs.parse_paragraphs, json.dumps(paragraphs_obj()), count=3) == cs.WRONG_PARAGRAPH_COUNT
    twice = paragraphs_obj()
    twice["paragraphs"][1]["instruction"] = twice["paragraphs"][0]["instruction"].upper()
    assert reason_of(cs.parse_paragraphs, json.dumps(twice), count=2) == cs.REPEATED_INSTRUCTION
    unknown = paragraphs_obj()
    unknown["paragraphs"][1]["dimension"] = "texture"
    assert reason_of(cs.parse_paragraphs, json.dumps(unknown), count=2) == cs.UNKNOWN_DIMENSION
    empty = paragraphs_obj()
    empty["paragraphs"][0]["response"] = " "
    assert reason_of(cs.parse_paragraphs, json.dumps(empty), count=2) == cs.EMPTY_TEXT


def test_a_pair_verdict_carries_a_reason_per_criterion_and_its_decision():
    verdict = cs.parse_pair_verdict(json.dumps(pair_verdict_obj()), 7)
    assert verdict.pair == 7 and verdict.accepted and verdict.reason.startswith("All three")
    assert dict(verdict.reasons) == {n: f"{n} holds: the answer names the orange wall." for n in cs.CRITERIA}
    assert verdict.non_blocking_issues == ("response_quality: One sentence is a little long.",)
    failed = pair_verdict_obj(visual_grounding={"pass": False, "reason": "There is no blue sky."},
                              issues=[{"criterion": "visual_grounding", "severity": "blocking",
                                       "description": "The answer invents a blue sky."}],
                              decision="reject", reason="The answer invents a blue sky.")
    rejected = cs.parse_pair_verdict(json.dumps(failed), 2)
    assert not rejected.accepted and rejected.blocking_issues == ("visual_grounding: The answer invents a blue sky.",)
    assert rejected.as_dict()["reasons"]["visual_grounding"] == "There is no blue sky."


@pytest.mark.parametrize(("changes", "reason"), [
    ({"decision": "reject"}, cs.INCONSISTENT_DECISION),                     # all pass, nothing blocks: must accept
    ({"issues": [{"criterion": "compliance", "severity": "blocking", "description": "A visible logo."}]},
     cs.INCONSISTENT_DECISION),                                             # a blocking issue: must reject
    ({"response_quality": {"pass": False, "reason": "Generic."}, "decision": "reject"}, cs.UNEXPLAINED_FAILURE),
    ({"visual_grounding": None}, cs.WRONG_SHAPE),                          # a criterion left out
    ({"issues": [{"criterion": "taste", "severity": "blocking", "description": "x"}], "decision": "reject"}, cs.WRONG_SHAPE),
    ({"visual_grounding": {"pass": True, "reason": " "}}, cs.EMPTY_TEXT),
    ({"decision": "maybe"}, cs.WRONG_SHAPE),
])
def test_a_pair_verdict_that_contradicts_itself_is_invalid(changes, reason):
    obj = {k: v for k, v in pair_verdict_obj(**changes).items() if v is not None}
    assert reason_of(cs.parse_pair_verdict, json.dumps(obj), pair=1) == reason


def test_paragraphs_follow_the_dialogue_in_its_group_and_change_its_id():
    dialogue = parse_dialogue(json.dumps(dialogue_obj()))
    paragraphs = cs.parse_paragraphs(json.dumps(paragraphs_obj()), 2)
    records = group_pairs("image:abc", dialogue, paragraphs)
    assert [r.index for r in records] == list(range(1, 9)) and len({r.group_id for r in records}) == 1
    assert records[6].question == PARAGRAPHS[0][0] and records[7].dimension == "lighting" and not records[7].improvement
    alone = group_pairs("image:abc", dialogue)
    assert alone[0].group_id != records[0].group_id                  # the group's content includes its paragraphs
    assert group_pairs("image:abc", dialogue, cs.Paragraphs(()))[0].group_id == alone[0].group_id
