import hashlib
import json
from importlib import resources

import pytest

from assets.core import templates as core_prompts
from assets.critique_canvas.logic import prompts as cp
from assets.critique_canvas.logic.answers import DIMENSION_IDS, DOMAINS, SchemaError, parse_dialogue, parse_plan
from tests.critique_canvas.logic.test_answers import PLAN, dialogue_obj

NAMES = ("annotator_painting", "annotator_paragraphs", "annotator_photography", "annotator_virtual", "planner", "repair",
         "verifier", "verifier_pair")
PLACEHOLDERS = {
    "planner": {"domain"},
    "annotator_photography": {"plan_json"},
    "annotator_painting": {"plan_json"},
    "annotator_virtual": {"plan_json"},
    "annotator_paragraphs": {"domain", "plan_json", "count"},
    "verifier": {"domain", "dialogue_json", "n_pairs"},
    "verifier_pair": {"domain", "instruction", "response"},
    "repair": {"schema_name", "schema_json", "invalid_answer", "error"},
}
ROLES = {"planner": "planner", "verifier": "verifier", "verifier_pair": "verifier", "repair": "repair"}
VERSIONS = {"verifier": "2"}  # v2: the pairs may include the paragraph instructions


def packaged_bytes(name):
    package = "assets.core.prompts" if name == "repair" else "assets.critique_canvas.prompts"
    return resources.files(package).joinpath(f"{name}.txt").read_bytes()


def sample_values(names):
    return {name: f"<<{name} value>>" for name in names}


def test_every_template_loads_from_the_package():
    assert cp.template_names() == NAMES
    for name in NAMES:
        template = cp.load_template(name)
        assert template.id == f"critique/{name}"
        assert template.version == VERSIONS.get(name, "1")
        assert template.role == ROLES.get(name, "annotator")
        assert template.placeholders == PLACEHOLDERS[name]
        on_disk = packaged_bytes(name)
        assert template.sha256 == hashlib.sha256(on_disk).hexdigest()
        assert "[system]" not in template.system and "[user]" not in template.user


def test_render_fills_every_placeholder_and_fails_clearly_without_one():
    for name in NAMES:
        template = cp.load_template(name)
        values = sample_values(template.placeholders)
        system, user = core_prompts.render(template, **values, unused="ignored")
        assert "$" not in system + user
        for value in values.values():
            assert value in system + user
        for missing in template.placeholders:
            partial = {k: v for k, v in values.items() if k != missing}
            with pytest.raises(core_prompts.TemplateError,
                               match=rf"critique/{name} v{template.version} needs values for: \${missing}"):
                core_prompts.render(template, **partial)
    with pytest.raises(core_prompts.TemplateError, match="must be text"):
        core_prompts.render(cp.load_template("planner"), domain=None)


def test_rendered_values_are_not_reinterpreted():
    system, user = core_prompts.render(cp.load_template("repair"), schema_name="plan", schema_json="{}", invalid_answer="costs $domain",
                             error="x")
    assert "costs $domain" in user


def test_templates_ask_for_the_structured_objects():
    planner = cp.load_template("planner")
    for dimension_id in DIMENSION_IDS:
        assert dimension_id in planner.system
        for domain in DOMAINS:
            assert dimension_id in cp.annotator_template(domain).system
    assert '{"dimensions": [{"dimension": ' in planner.system and "at most five" in planner.system
    for domain in DOMAINS:
        system = cp.annotator_template(domain).system
        assert '"question"' in system and '"answer"' in system and '"improvement": true' in system
        assert "exactly six" in system and "Exactly one pair asks how" in system
    verifier = cp.load_template("verifier").system
    for key in ("instruction_consistency", "visual_grounding", "response_quality", "blocking_issues", "non_blocking_issues"):
        assert key in verifier
    assert "one verdict for each pair number" in verifier
    one = cp.load_template("verifier_pair").system
    for key in ("instruction_consistency", "visual_grounding", "response_quality", '"decision"', '"reason"', "blocking",
                "non_blocking", "compliance"):
        assert key in one


def test_domain_annotators_differ_in_emphasis():
    emphasis = {
        "photography": ("exposure", "depth of field", "timing", "post-processing"),
        "painting": ("brushwork", "impasto", "genre", "art-historical", "iconographic"),
        "virtual": ("character design", "scene is constructed", "rendering stays consistent", "stylization"),
    }
    systems = {domain: cp.annotator_template(domain).system for domain in DOMAINS}
    assert len(set(systems.values())) == 3
    for domain, terms in emphasis.items():
        for term in terms:
            assert term in systems[domain], (domain, term)
            assert not any(term in systems[other] for other in DOMAINS if other != domain), (domain, term)
    with pytest.raises(ValueError, match="unknown domain"):
        cp.annotator_template("sculpture")


def test_sha_follows_file_content_even_without_a_version_bump(tmp_path):
    original = packaged_bytes("planner")
    copy = tmp_path / "planner.txt"
    copy.write_bytes(original)
    same = core_prompts.parse_template(copy.read_bytes(), str(copy))
    assert same == cp.load_template("planner")
    copy.write_bytes(original.replace(b"at most five", b"at most four"))
    edited = core_prompts.parse_template(copy.read_bytes(), str(copy))
    assert (edited.id, edited.version) == (same.id, same.version)
    assert edited.sha256 != same.sha256 and edited.sha256 == hashlib.sha256(copy.read_bytes()).hexdigest()


@pytest.mark.parametrize("text, message", [
    ("id: x\nversion: 1\nrole: planner\n[system]\na\n[user]\nb\n", "no '---'"),
    ("id: x\nversion: 1\n---\n[system]\na\n[user]\nb\n", "lacks role"),
    ("id: x\nversion: 1\nrole: critic\n---\n[system]\na\n[user]\nb\n", "role 'critic'"),
    ("id: x\nversion: 1\nrole: planner\nauthor: me\n---\n[system]\na\n[user]\nb\n", "header line"),
    ("id: x\nversion: 1\nrole: planner\n---\n[user]\nb\n[system]\na\n", "followed by a \\[user\\]"),
    ("id: x\nversion: 1\nrole: planner\n---\nstray\n[system]\na\n[user]\nb\n", "followed by a \\[user\\]"),
    ("id: x\nversion: 1\nrole: planner\n---\n[system]\n\n[user]\nb\n", "\\[system\\] section is empty"),
    ("id: x\nversion: 1\nrole: planner\n---\n[system]\ncosts $5\n[user]\nb\n", "not a placeholder"),
])
def test_malformed_templates_are_named(text, message):
    with pytest.raises(core_prompts.TemplateError, match=message):
        core_prompts.parse_template(text.encode(), "bad.txt")


def test_unknown_template_name():
    with pytest.raises(core_prompts.TemplateError, match="available: annotator_painting"):
        cp.load_template("../planner")


def test_role_prompts_embed_their_inputs_deterministically():
    plan = parse_plan(json.dumps(PLAN))
    dialogue = parse_dialogue(json.dumps(dialogue_obj()))

    planner = cp.planner_prompt("virtual")
    assert planner.template.id == "critique/planner" and "Domain of the attached image: virtual" in planner.user

    annotator = cp.annotator_prompt("painting", plan)
    assert annotator.template.id == "critique/annotator_painting"
    assert json.loads(annotator.user.split("selection:\n", 1)[1].rsplit("\nWrite", 1)[0]) == PLAN
    assert cp.annotator_prompt("painting", plan).hash == annotator.hash
    assert cp.annotator_prompt("photography", plan).hash != annotator.hash

    verifier = cp.verifier_prompt("photography", dialogue.as_dict()["pairs"])
    shown = json.loads(verifier.user.split("check:\n", 1)[1].rsplit("\nReturn", 1)[0])
    assert [p["pair"] for p in shown["pairs"]] == [1, 2, 3, 4, 5, 6]
    assert shown["pairs"][5]["improvement"] is True and "(photography)" in verifier.system
    assert "all 6 pairs" in verifier.user

    one = cp.pair_verifier_prompt("painting", "Describe the light.", "Soft light falls from the left.")
    assert one.template.id == "critique/verifier_pair" and "Instruction: Describe the light." in one.user
    assert "Candidate response: Soft light falls from the left." in one.user and "(painting)" in one.system
    paragraphs = cp.paragraphs_prompt("virtual", plan, 4)
    assert paragraphs.template.id == "critique/annotator_paragraphs" and "Write the 4 instructions" in paragraphs.user
    assert "exactly 4 instructions" in paragraphs.system and json.loads(
        paragraphs.user.split("selection:\n", 1)[1].rsplit("\nWrite", 1)[0]) == PLAN

    error = SchemaError("wrong_pair_count", "expected exactly 6 question-answer pairs, got 5")
    repair = cp.repair_prompt("dialogue", '{"pairs": []}', error)
    assert '"minItems": 6' in repair.user and "wrong_pair_count: expected exactly 6" in repair.user
    assert '{"pairs": []}' in repair.user and '"dialogue" object' in repair.user
    with pytest.raises(ValueError):
        cp.repair_prompt("critique", "", "x")
    with pytest.raises(ValueError):
        cp.planner_prompt("sculpture")


def test_prompt_hash_separates_system_from_user():
    assert core_prompts.prompt_hash("ab", "c") != core_prompts.prompt_hash("a", "bc")
    assert core_prompts.prompt_hash("a", "b") == core_prompts.prompt_hash("a", "b")
    assert len(core_prompts.prompt_hash("a", "b")) == 64
