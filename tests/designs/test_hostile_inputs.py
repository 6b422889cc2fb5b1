"""Hostile design files through the real design assets (``design_records``, ``perturbed_designs``,
``design_renders`` of ``design_aesthetics_job``): one outcome per case, the good designs rendered, a re-run that
does no work and adds no rows; and an exception injected into the per-record function of ``design_records``,
which costs that record only and is retried once its file changes."""

import json

from dagster import AssetKey, DagsterInstance

import assets.designs.ingest as design_ingest
from assets.designs.ingest import record_entity_id
from pipelines.config import load_config
from pipelines.definitions import build_definitions
from tests.support.pool_harness import DATA_TABLES, write_config
from tests.support.hostile.designs import RECORDS, RENDER, RENDERED, good_record, write_design_cases
from warehouse.db import Warehouse

ASSETS = ["design_records", "perturbed_designs", "design_renders"]
DESIGN_TABLES = ("design_source_read", "design", "design_variant", "design_perturbation_op", "design_render", "item_quarantine")


def _run(config, assets=ASSETS):
    job = build_definitions(load_config(config)).resolve_job_def("design_aesthetics_job")
    return job.execute_in_process(instance=DagsterInstance.ephemeral(), raise_on_error=False,
                                  asset_selection=[AssetKey(a) for a in assets])


def _snapshot(wh: Warehouse) -> dict[str, list[tuple]]:
    with wh.transaction() as con:
        return {t: sorted(con.execute(f"SELECT * FROM {t}").fetchall(), key=repr) for t in DATA_TABLES + DESIGN_TABLES}


def _outcomes(wh: Warehouse, folder, case) -> list[str]:
    """Every outcome the warehouse holds for one case's file: a reason code per rejection row, or rendered. The
    warehouse names the folder relative to its root (the config's folder)."""
    locator = f"{wh.name_of(folder)}/{case.file}"
    reads = wh.query("SELECT design_id, reason_code, detail FROM design_source_read WHERE locator = ?", [locator])
    rejected = wh.query("SELECT reason_code, detail FROM rejection WHERE stage = ? AND entity_id = ?",
                        [RECORDS, record_entity_id(locator)])
    outcomes = list(rejected["reason_code"])
    assert all(detail.startswith(f"{locator}: ") for detail in rejected["detail"]), rejected
    for design_id, code, _ in reads.itertuples(index=False):
        if code is not None:
            assert code in outcomes  # the read row and the rejection row tell the same outcome
            continue
        rendered = wh.scalar("SELECT count(*) FROM design_render WHERE design_id = ?", [design_id])
        render_rejections = wh.query("SELECT reason_code, detail FROM rejection WHERE stage = ? AND entity_id = ?",
                                     [RENDER, design_id])
        outcomes += [RENDERED] * rendered + list(render_rejections["reason_code"])
    return outcomes


def test_every_hostile_design_gets_one_outcome_and_a_rerun_adds_nothing(tmp_path):
    folder, cases = write_design_cases(tmp_path / "input")
    config = write_config(tmp_path / "cfg", {}, designs={"folders": [str(folder)], "batch_size": 8,
                                                          "perturb": {"variants_per_design": 1}})
    first = _run(config)
    assert first.success, [e.message for e in first.all_events if e.is_failure]
    wh = Warehouse(tmp_path / "cfg" / "warehouse.duckdb")
    got = {case.name: _outcomes(wh, folder, case) for case in cases}
    assert got == {case.name: [case.expected] for case in cases}
    assert {c.stage for c in cases if c.expected != RENDERED} == {RECORDS, RENDER}
    # Each good design also got its perturbed variant, rendered like its base.
    good = [c for c in cases if c.expected == RENDERED]
    assert wh.scalar("SELECT count(*) FROM design WHERE is_perturbed") >= len(good)
    assert wh.scalar("SELECT count(*) FROM item_quarantine") == 0

    before = _snapshot(wh)
    again = _run(config)
    assert again.success
    assert _snapshot(wh) == before


def test_an_exception_in_one_records_function_is_that_records_internal_error(tmp_path, monkeypatch):
    folder = tmp_path / "designs"
    (tmp_path / "layers").mkdir(parents=True)
    write_design_cases(tmp_path / "scratch")  # for its layer files
    for name in ("background.png", "picture.png"):
        (tmp_path / "layers" / name).write_bytes((tmp_path / "scratch" / "layers" / name).read_bytes())
    folder.mkdir()
    for name in ("alpha", "bravo", "charlie"):
        (folder / f"{name}.json").write_text(json.dumps(good_record(name)), encoding="utf-8")
    real = design_ingest.read_design_file
    calls: list[str] = []

    def flaky(file, **options):
        calls.append(file.name)
        if file.name == "bravo.json":
            raise RuntimeError("layer cache went away")
        return real(file, **options)

    monkeypatch.setattr(design_ingest, "read_design_file", flaky)
    config = write_config(tmp_path / "cfg", {}, designs={"folders": [str(folder)]})
    first = _run(config, ["design_records"])
    assert first.success, [e.message for e in first.all_events if e.is_failure]
    wh = Warehouse(tmp_path / "cfg" / "warehouse.duckdb")
    entity = record_entity_id("../designs/bravo.json")  # named from the config's folder
    code, detail = wh.query("SELECT reason_code, detail FROM rejection WHERE entity_id = ?", [entity]).iloc[0]
    assert code == "internal_error"
    assert "../designs/bravo.json" in detail and "RuntimeError: layer cache went away" in detail and "flaky" in detail
    assert sorted(wh.query("SELECT source_design_id FROM design")["source_design_id"]) == ["alpha", "charlie"]
    assert wh.scalar("SELECT count(*) FROM item_quarantine WHERE stage = 'design_records'") == 1

    # The folder changes elsewhere (a new design): it is read again, but the quarantined record is not retried.
    (folder / "delta.json").write_text(json.dumps(good_record("delta")), encoding="utf-8")
    calls.clear()
    assert _run(config, ["design_records"]).success
    assert "bravo.json" not in calls and "delta.json" in calls
    summary = json.loads(wh.scalar("SELECT summary FROM activity WHERE asset_key = 'design_records' ORDER BY started_at DESC LIMIT 1"))
    assert summary["quarantined"] == 1

    # Its own file changes: it is tried again, read, and its internal_error and quarantine go.
    (folder / "bravo.json").write_text(json.dumps(good_record("bravo", text="Fixed")), encoding="utf-8")
    monkeypatch.setattr(design_ingest, "read_design_file", real)
    assert _run(config, ["design_records"]).success
    assert sorted(wh.query("SELECT source_design_id FROM design")["source_design_id"]) == ["alpha", "bravo", "charlie", "delta"]
    assert wh.scalar("SELECT count(*) FROM rejection WHERE entity_id = ?", [entity]) == 0
    assert wh.scalar("SELECT count(*) FROM item_quarantine") == 0
