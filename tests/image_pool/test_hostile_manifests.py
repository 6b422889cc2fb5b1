"""Hostile manifests and folder entries through the real ``source_records`` asset: one outcome per case, every
good row around a bad one kept, and a second run that does no work and adds no rows."""

import hashlib
import json
import os
from functools import partial

from assets.image_pool.logic.sources import file_reference
from tests.support.pool_harness import run_pool, snapshot, step_summaries, warehouse_for, write_config
from tests.support.hostile.manifests import KEPT, write_folder_cases, write_manifest_cases
from warehouse.ids import file_name


def _source_rejections(wh) -> dict[str, tuple[str, str]]:
    frame = wh.query("SELECT entity_id, reason_code, detail FROM rejection WHERE stage = 'source'")
    return {row.entity_id: (row.reason_code, row.detail) for row in frame.itertuples()}


def _records(wh):
    frame = wh.query("SELECT record_id, source_name, locator, source_url, extra FROM source_record")
    frame["line"] = [json.loads(extra).get("line") if extra else None for extra in frame.extra]
    return frame


def _outcomes_of(root, case, records, rejections) -> list[str]:
    """Every outcome the warehouse holds for one case: kept, or a reason code per rejection row. The warehouse names
    files relative to ``root`` (the config's folder); the cases know their absolute paths."""
    source = file_name(case.source, root)
    if case.entry is not None:
        mine = records[records.source_url == file_reference(file_name(case.entry, root))]
    elif case.line is None:
        sha = hashlib.sha256(case.source.read_bytes()).hexdigest()
        assert not (records.source_name == source).any(), case  # a rejected manifest lists no record
        return [rejections[f"input_file:{sha}"][0]] if f"input_file:{sha}" in rejections else []
    else:
        # the case names a usable file by its absolute path; a URL or an unusable locator is kept as the row says
        locator = file_name(case.locator, root) if os.path.isabs(case.locator) else case.locator
        mine = records[(records.source_name == source) & (records.locator == locator)]
        if case.expected != KEPT:
            mine = mine[mine.line == case.line]
        else:  # a kept row and a later exact repeat share a locator; the repeat carries its line
            mine = mine[mine.record_id.map(lambda rid: rid not in rejections)]
    outcomes = []
    for record in mine.itertuples():
        code, detail = rejections.get(record.record_id, (KEPT, None))
        outcomes.append(code)
        if code != KEPT and case.line is not None:
            assert detail.startswith(f"{source}: line {case.line}"), (case, detail)
    return outcomes


def test_every_hostile_source_gets_one_outcome_and_a_rerun_adds_nothing(tmp_path):
    manifests = write_manifest_cases(tmp_path / "manifests")
    folder = tmp_path / "folder"
    folder_cases = write_folder_cases(folder)
    manifest_files = sorted({str(case.source) for case in manifests})
    config = write_config(tmp_path / "cfg", {
        "manifests": manifest_files,
        "folders": [{"path": str(folder), "provider": "hostile folder", "license": "CC0-1.0", "domain": "virtual"}],
    })
    first = run_pool(config, select=["source_records"])
    assert first.success
    wh = warehouse_for(config)
    records, rejections = _records(wh), _source_rejections(wh)
    cases = manifests + folder_cases
    outcomes_of = partial(_outcomes_of, config.parent)
    got = {case.name: outcomes_of(case, records, rejections) for case in cases}
    assert all(not locator.startswith(str(tmp_path)) for locator in records.locator)  # names, not this machine's paths
    assert got == {case.name: [case.expected] for case in cases}
    # nothing beyond the cases: one record per row or entry, one rejection per rejected case
    row_cases = [case for case in cases if case.line is not None or case.entry is not None]
    assert len(records) == len(row_cases)
    assert len(rejections) == sum(case.expected != KEPT for case in cases)
    assert wh.scalar("SELECT count(*) FROM item_quarantine") == 0

    before = snapshot(wh)
    second = run_pool(config, select=["source_records"])
    assert second.success
    assert snapshot(wh) == before
    assert step_summaries(wh, second.run_id)["source_records"] == {
        "manifests_unchanged": len(manifest_files), "folder_files_unchanged": len(folder_cases)}
