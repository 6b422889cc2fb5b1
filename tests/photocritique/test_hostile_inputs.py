"""Hostile Reddit inputs through the real photocritique job: every case gets exactly one outcome, the sound
archive around them comes out unchanged, and a second run adds nothing."""

from collections import Counter
from pathlib import Path

import pytest

from tests.support.pool_harness import write_config
from tests.photocritique.test_assets import _photocritique_section, _run, _snapshot, outcome
from tests.support.hostile.reddit import POST, SOURCE, write_reddit_cases
from warehouse.db import Warehouse


@pytest.fixture(scope="module")
def hostile(tmp_path_factory, archive: Path, expected: dict):
    folder = tmp_path_factory.mktemp("hostile_reddit")
    cases, dumps, id_list = write_reddit_cases(folder / "inputs", sorted(expected["kept"])[0])
    section = _photocritique_section(
        archive, expected,
        dumps=[str(archive / "dumps" / "monthly"), str(archive / "dumps" / "subreddit"), str(dumps)],
        id_lists=[str(archive / "ids" / "test_ids.txt"), str(id_list)],
    )
    config = write_config(folder, {"filters": {"license_allowlist": ["reddit-user-content"]}}, photocritique=section)
    first = _run(config)
    wh = Warehouse(folder / "warehouse.duckdb")
    after_first = _snapshot(wh)
    second = _run(config)
    return cases, first, second, wh, after_first, _snapshot(wh)


def _outcomes(wh: Warehouse, case) -> list[str]:
    if case.outcome == SOURCE:
        rows = wh.query("SELECT reason_code, detail FROM reddit_source_problem WHERE locator LIKE ?"
                        " AND line_no IS NOT DISTINCT FROM ?", [f"%/{case.file}", case.line])
        return [code if case.file in detail else f"{code} (detail does not name the file: {detail})"
                for code, detail in rows.itertuples(index=False)]
    table, key = (("photocritique_post_decision", "post_id") if case.outcome == POST
                  else ("photocritique_comment_decision", "comment_id"))
    return list(wh.query(f"SELECT coalesce(reason_code, status) AS r FROM {table} WHERE {key} = ?", [case.item_id])["r"])


def test_every_hostile_case_has_exactly_its_one_outcome(hostile) -> None:
    cases, first, _, wh, _, _ = hostile
    assert first.success, [e.message for e in first.all_events if e.is_failure]
    got = {case.name: _outcomes(wh, case) for case in cases}
    assert got == {case.name: [case.expected] for case in cases}
    print(f"\n{len(cases)} hostile Reddit cases:", dict(sorted(Counter(c.expected for c in cases).items())))


def test_a_rejected_record_leaves_its_candidate_not_found_and_names_the_problem(hostile) -> None:
    cases, _, _, wh, _, _ = hostile
    decisions = dict(wh.query("SELECT post_id, reason_code FROM photocritique_post_decision").itertuples(index=False))
    for case in cases:
        if case.outcome == SOURCE and case.item_id and case.file.startswith("RS_"):
            assert decisions[case.item_id] == "not_found", case.name
    detail = wh.scalar("SELECT detail FROM photocritique_post_decision WHERE post_id = 'hscore'")
    assert "dump/bad_field_type" in detail
    assert not wh.scalar("SELECT count(*) FROM rejection WHERE reason_code = 'internal_error'")


def test_the_sound_archive_around_the_cases_is_kept_unchanged(hostile, expected: dict) -> None:
    _, _, _, wh, _, _ = hostile
    got = outcome(wh)
    assert got["kept"] == expected["kept"]  # every kept post with its three references
    assert {c: got["comment_reasons"][c] for c in expected["comment_reasons"]} == expected["comment_reasons"]


def test_a_second_run_adds_no_rows(hostile) -> None:
    _, _, second, _, after_first, after_second = hostile
    assert second.success
    assert after_second == after_first
