"""The critique contract's suite passes a well-formed group and names every way a bad one breaks it."""

import json

from assets.critique_canvas.checks import GROUP_FACTS, critique_expectations
from quality.gx_suite import validate
from warehouse.db import Warehouse, insert_rows


def _group(con, group_id: str, plan: list[str], pairs: list[dict]) -> None:
    insert_rows(con, "critique_group", [{
        "group_id": group_id, "pool_item_id": f"pool_item:{group_id}", "image_id": "image:x", "domain": "painting",
        "chain_digest": "c", "status": "complete", "plan": json.dumps([{"dimension": d, "reason": "r"} for d in plan]),
        "activity_id": "a", "decided_at": "2026-11-30 00:00:00+00",
    }])
    insert_rows(con, "critique_pair", [{
        "pair_id": f"{group_id}:{i}", "group_id": group_id, "pool_item_id": f"pool_item:{group_id}", "domain": "painting",
        "pair_index": i, "dimension": None, "improvement": p.get("improvement", False), "question": p.get("question", "Why?"),
        "answer": p.get("answer", "Because the light falls from the left."), "instruction_consistency": True,
        "visual_grounding": True, "response_quality": True, "blocking_issues": "[]", "non_blocking_issues": "[]",
        "accepted": True, "activity_id": "a",
    } for i, p in enumerate(pairs, start=1)])


def test_good_group_passes_and_each_defect_fails_its_expectation(tmp_path):
    wh = Warehouse(tmp_path / "w.duckdb")
    with wh.transaction() as con:
        _group(con, "good", ["color", "lighting"], [{}] * 5 + [{"improvement": True}])
    outcomes = {o.name: o for o in validate(wh.query(GROUP_FACTS), "critique", critique_expectations())}
    assert all(o.passed for o in outcomes.values()), [o.name for o in outcomes.values() if not o.passed]
    with wh.transaction() as con:
        _group(con, "bad", ["color", "lighting", "style", "emotion", "technique", "colour_grading"],
               [{"improvement": True}, {"improvement": True}, {"answer": "  "}, {}, {}])
    outcomes = {o.name: o for o in validate(wh.query(GROUP_FACTS), "critique", critique_expectations())}
    failed = {name for name, o in outcomes.items() if not o.passed}
    assert failed == {"six_pairs_per_group", "one_improvement_pair_per_group", "questions_and_answers_non_empty",
                      "plan_dimension_count", "plan_dimensions_allowed"}
    assert outcomes["six_pairs_per_group"].unexpected_count == 1
