"""The `aesforge` CLI end to end, in subprocesses, with Dagster's multiprocess executor."""

import os
import subprocess
import sys
from pathlib import Path

from pipelines.cli import print_summary
from pipelines.config import pipeline_modules
from pipelines.definitions import pipeline_definitions
from sample import synth
from tests.support.pool_harness import warehouse_for, write_config

AESFORGE = str(Path(sys.executable).parent / "aesforge")


def _aesforge(*args: str, home: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "DAGSTER_HOME": str(home)}
    env.pop("AESFORGE_CONFIG", None)
    return subprocess.run([AESFORGE, *args], capture_output=True, text=True, timeout=600, env=env)


def test_run_with_multiprocess_executor_then_sql_and_provenance(tmp_path):
    folder = tmp_path / "images" / "virtual"
    folder.mkdir(parents=True)
    for i in range(4):
        synth.render_virtual(300 + i, (400, 300)).save(folder / f"v{i}.png")
    (folder / "v0_copy.png").write_bytes((folder / "v0.png").read_bytes())
    (folder / "broken.png").write_bytes((folder / "v1.png").read_bytes()[:-200])  # cut off mid-file
    config = write_config(tmp_path / "cfg", {"folders": [{"path": str(tmp_path / "images"), "provider": "cli test", "license": "CC0-1.0"}]})
    home = tmp_path / "dagster_home"
    home.mkdir()

    # The pool's stages only: enough to show every step running in its own process through the warehouse lock
    # (the other stages have their own tests; a process per asset costs seconds each on a small machine).
    pool = ["source_records", "fetched_files", "normalized_images", "pool_candidates", "perceptual_duplicates",
            "clip_duplicates", "image_pool"]
    run = _aesforge("run", "--config", str(config), "--select", *pool, home=home)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "multiprocess executor" in run.stdout and "warehouse: " in run.stdout
    wh = warehouse_for(config)
    # every step ran in its own process and wrote through the warehouse lock
    assert wh.query("SELECT DISTINCT status FROM activity")["status"].tolist() == ["success"]
    assert wh.scalar("SELECT count(*) FROM pool_images") == 4 and wh.scalar("SELECT count(*) FROM duplicate_drops") == 1
    assert wh.scalar("SELECT reason_code FROM pool_exclusions WHERE stage = 'decode'") == "truncated"

    sql = _aesforge("sql", "--config", str(config), "SELECT match_method, match_distance FROM duplicate_drops", home=home)
    assert sql.returncode == 0 and "exact_bytes" in sql.stdout

    item = wh.scalar("SELECT pool_item_id FROM pool_images ORDER BY record_id LIMIT 1")
    chain = _aesforge("provenance", "--config", str(config), item, home=home)
    assert chain.returncode == 0 and "source_record" in chain.stdout and "image_pool" in chain.stdout

    bad = _aesforge("sql", "--config", str(config), "SELECT * FROM no_such_table", home=home)
    assert bad.returncode == 1 and "SQL error" in bad.stderr


def test_selection_and_config_errors_are_clear(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    missing = _aesforge("run", "--config", str(tmp_path / "nope.yaml"), home=home)
    assert missing.returncode == 2 and "config file not found" in missing.stderr
    bad_section = tmp_path / "bad.yaml"
    bad_section.write_text("pools: {}\n")
    wrong = _aesforge("run", "--config", str(bad_section), home=home)
    assert wrong.returncode == 2 and "unknown section" in wrong.stderr
    config = write_config(tmp_path / "cfg", {})
    unknown = _aesforge("run", "--config", str(config), "--select", "step3", home=home)
    assert unknown.returncode == 2 and "unknown asset(s): step3" in unknown.stderr


def test_the_summary_asks_each_pipeline_for_its_report_in_data_flow_order(tmp_path, capsys):
    reports = sorted(pipeline_modules("report"), key=lambda module: module.REPORT_ORDER)
    assert [module.__name__.split(".")[1] for module in reports] == [
        "image_pool", "photocritique", "critique_canvas", "designs", "counterfactual", "poetry", "context_canvas", "releases",
        "evaluation"]
    assert {module.__name__.split(".")[1] for module in reports} == set(pipeline_definitions())
    # every report's SQL runs against a fresh warehouse's schema
    print_summary({"warehouse": {"path": str(tmp_path / "warehouse.duckdb")}, "critique": {"audit": {"returned_dir": "r"}}}, "none")
    out = capsys.readouterr().out.splitlines()
    assert out[1] == "run none: what each stage did" and out[-1].startswith("query it:")


def test_help_answers_without_importing_the_pipeline():
    """`aesforge --help` reads the command line alone: no Dagster, DuckDB or pandas import (it took seconds)."""
    code = ("import sys\nfrom pipelines.command import main\n"
            "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in ('dagster', 'duckdb', 'pandas', 'torch') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "aesforge evaluate" in done.stdout and done.stdout.strip().endswith("[]")


def test_the_instance_kept_beside_the_warehouse_sends_no_telemetry(tmp_path, monkeypatch):
    from pipelines.cli import _instance

    monkeypatch.setenv("DAGSTER_HOME", "")  # recorded, so the value _instance sets is undone after the test
    monkeypatch.delenv("DAGSTER_HOME")
    with _instance(str(tmp_path / "warehouse.duckdb")) as instance:
        assert instance.telemetry_enabled is False
    settings = tmp_path / "dagster_home" / "dagster.yaml"
    settings.write_text("telemetry:\n  enabled: true\n")  # the user's own choice is kept
    monkeypatch.delenv("DAGSTER_HOME")
    with _instance(str(tmp_path / "warehouse.duckdb")):
        pass
    assert settings.read_text() == "telemetry:\n  enabled: true\n"


def test_an_under_selected_run_warns_and_plus_pulls_the_parents_in(tmp_path):
    """Selecting an asset whose upstream was never built here says so (its output would be empty); `+name`
    selects the parents too, in Dagster's selection syntax."""
    home = tmp_path / "home"
    home.mkdir()
    config = write_config(tmp_path / "cfg", {})
    alone = _aesforge("run", "--config", str(config), "--select", "context_case_review", "--executor", "in_process",
                      home=home)
    assert alone.returncode == 0, alone.stderr
    assert "warning: context_case_review reads context_cases, never materialized here" in alone.stderr
    assert "select +context_case_review" in alone.stderr
    pulled = _aesforge("run", "--config", str(config), "--select", "+context_case_review", "--executor", "in_process",
                       home=home)
    assert pulled.returncode == 0, pulled.stderr
    assert "context_case_review reads" not in pulled.stderr and "context_cases" in pulled.stdout
    assert "warning: context_cases reads image_pool" in pulled.stderr  # one level up: the pool was never built
