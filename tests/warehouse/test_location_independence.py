"""The sample project built in two folders (the second one deeper, with its blob store outside the project) gives
the same ids and the same warehouse rows, apart from what belongs to a run: its ids, its clock, its process.

Each project is generated (``aesforge sample``) and run once (module-scoped), on a selection that reaches every
kind of id issue 14 is about: the pool's records, files, images and pool items (manifests, a folder, Reddit post
images), photocritique's post images, poems, context cases, designs, and model calls (the context shortcut probe).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pytest
import yaml
from dagster import AssetKey, AssetSelection, DagsterInstance, Definitions, define_asset_job

from assets.image_pool.shards import WHOLE_POOL
from pipelines.cli import make_sample
from pipelines.config import SAMPLE_CONFIG, load_config
from pipelines.definitions import build_definitions
from tests.support.pool_harness import warehouse_for
from warehouse.db import Warehouse

SELECTION = (
    "source_records", "fetched_files", "normalized_images", "pool_candidates", "perceptual_duplicates", "image_pool",
    "reddit_posts", "reddit_comments", "reddit_post_images", "poem_corpus", "context_cases", "design_records", "context_case_review",
    "context_shortcut_report",
)

# What belongs to a run, not to the data: masked in every table.
RUN_COLUMNS = {
    "activity_id": "the activity's id is drawn per run",
    "run_id": "Dagster's run id",
    "pid": "the process that ran the step",
    "process_start": "the process that ran the step",
    "duration_ms": "how long a fetch took",
    "latency_ms": "how long a model call took",
    "mtime_ns": "when `aesforge sample` wrote the file (input_file_state keeps it to skip unchanged files)",
}
# Timestamp columns (recorded_at, seen_at, called_at, ...) are masked by their type.
# Notes in an activity's summary that time the run, not count the data: masked inside the JSON, the rest compared.
RUN_NOTES = {
    "commit_seconds": "how long the step's item-loop transactions took (bench/scale.py's committer share)",
}

# A dump scan's key derives from the file's size and mtime (a changed dump is scanned again), and each project's
# sample was written at its own time.
MTIME_DERIVED = {("reddit_dump_scan", "scan_key")}


@dataclass(frozen=True)
class Project:
    folder: Path
    blobs: Path
    config: Path

    @property
    def wh(self) -> Warehouse:
        return warehouse_for(self.config)


def _write_config(path: Path, **warehouse: str) -> None:
    config = yaml.safe_load(SAMPLE_CONFIG.read_text(encoding="utf-8"))
    config["warehouse"].update(warehouse)
    path.write_text(yaml.safe_dump(config), encoding="utf-8")


def _run(config: Path) -> None:
    selection = AssetSelection.assets(*(AssetKey(name) for name in SELECTION)).without_checks()
    defs = Definitions.merge(build_definitions(load_config(config)),
                             Definitions(jobs=[define_asset_job("location_independence", selection, tags=WHOLE_POOL)]))
    result = defs.resolve_job_def("location_independence").execute_in_process(instance=DagsterInstance.ephemeral(),
                                                                              raise_on_error=False)
    assert result.success, [e.step_failure_data.error.message for e in result.all_events if e.is_step_failure]


def _build(folder: Path, blobs: str | None = None, **warehouse: str) -> Project:
    """The sample generated in ``folder`` and run with a copy of the bundled config (its blobs in ``blobs``)."""
    make_sample(str(folder / "data" / "sample"))
    config = folder / "config" / "sample.yaml"
    config.parent.mkdir(parents=True)
    _write_config(config, **warehouse)
    if blobs is not None:
        text = yaml.safe_load(config.read_text(encoding="utf-8"))
        text["blob_store"]["root"] = blobs
        config.write_text(yaml.safe_dump(text), encoding="utf-8")
    _run(config)
    return Project(folder, Path(load_config(config)["blob_store"]["root"]), config)


@pytest.fixture(scope="module")
def projects(tmp_path_factory) -> tuple[Project, Project]:
    base = tmp_path_factory.mktemp("location")
    return _build(base / "one"), _build(base / "two" / "copy", blobs=str(base / "elsewhere" / "blobs"))


@pytest.fixture(scope="module")
def rekeyed(tmp_path_factory) -> Project:
    """A warehouse as the code before migration 0015 wrote it, re-keyed by the next run. Naming every file against
    the root ``/`` gives exactly the old rows (absolute paths everywhere, ids derived from them); the scopes are then
    marked as the migration marks a warehouse that has rows, and the project is run again with its config's
    folder as the root."""
    project = _build(tmp_path_factory.mktemp("rekey") / "three", project_root="/")
    wh = project.wh
    assert wh.scalar("SELECT count(*) FROM source_record WHERE starts_with(locator, ?)", [str(project.folder)]) > 50
    with wh.transaction() as con:
        con.execute("INSERT INTO location_rekey (scope) VALUES ('image_pool'), ('poetry'), ('context_canvas'), ('designs'),"
                    " ('photocritique')")
    _write_config(project.config)
    _run(project.config)
    return project


def _tables(con: duckdb.DuckDBPyConnection) -> dict[str, list[tuple[str, str]]]:
    """Every table with its (column, type), schema_migration aside (when each migration ran)."""
    rows = con.execute("SELECT table_name, column_name, data_type FROM duckdb_columns() WHERE NOT internal"
                       " AND table_name IN (SELECT table_name FROM duckdb_tables()) AND table_name <> 'schema_migration'"
                       " ORDER BY table_name, column_index").fetchall()
    tables: dict[str, list[tuple[str, str]]] = {}
    for table, column, kind in rows:
        tables.setdefault(table, []).append((column, kind))
    return tables


def _comparable(table: str, columns: list[tuple[str, str]], rows: list[tuple]) -> list[str]:
    """The rows as sorted strings, with run columns masked."""
    out = []
    for row in rows:
        values = []
        for (column, kind), value in zip(columns, row):
            if column in RUN_COLUMNS or kind.startswith("TIMESTAMP") or (table, column) in MTIME_DERIVED:
                values.append("<masked>")
                continue
            if (table, column) == ("activity", "summary") and value is not None:
                value = json.dumps({k: "<masked>" if k in RUN_NOTES else v for k, v in json.loads(value).items()})
            values.append(repr(value))
        out.append(" | ".join(values))
    return sorted(out)


def _snapshot(project: Project) -> dict[str, list[str]]:
    with duckdb.connect(str(project.wh.path), read_only=True) as con:
        return {table: _comparable(table, columns, con.execute(f'SELECT * FROM "{table}"').fetchall())
                for table, columns in _tables(con).items()}


def test_both_folders_give_the_same_ids_and_rows(projects):
    one, two = (_snapshot(project) for project in projects)
    assert set(one) == set(two)
    for table in sorted(one):
        assert one[table] == two[table], table
    # the comparison is about something: every kind of id the issue names was made
    counts = {table: len(rows) for table, rows in one.items()}
    for table in ("source_record", "file_blob", "image", "pool_member", "reddit_post_image", "poem", "poem_source_read",
                  "context_case", "context_case_read", "design", "design_source_read", "model_call"):
        assert counts[table] > 0, table


def test_no_row_names_a_project_folder_or_the_blob_folder(projects):
    for project in projects:
        with duckdb.connect(str(project.wh.path), read_only=True) as con:
            for table, columns in _tables(con).items():
                for column, kind in columns:
                    if not kind.startswith(("VARCHAR", "JSON")):
                        continue
                    found = con.execute(f'SELECT count(*) FROM "{table}" WHERE contains(CAST("{column}" AS VARCHAR), ?)'
                                        f' OR contains(CAST("{column}" AS VARCHAR), ?)',
                                        [str(project.folder), str(project.blobs)]).fetchone()[0]
                    assert found == 0, (table, column)


def test_the_views_show_a_blob_as_its_file_in_the_configured_folder(projects):
    for project in projects:
        wh = project.wh
        ref, path = wh.query("SELECT blob_uri, local_path(blob_uri) AS path FROM file_blob LIMIT 1").iloc[0]
        assert ref.startswith("blob:") and Path(path).is_file() and Path(path).is_relative_to(project.blobs.resolve())
        # a handle that is not told where the blobs are shows the reference itself
        assert Warehouse(wh.path).scalar("SELECT local_path(?)", [ref]) == ref


def _data(project: Project) -> dict[str, set[str]]:
    """Each table's distinct rows, run columns masked: what a warehouse holds, whichever
    runs wrote it (a second run adds lineage rows only under its own activity)."""
    history = {"activity", "was_associated_with", "location_rekey"}
    with duckdb.connect(str(project.wh.path), read_only=True) as con:
        out = {}
        for table, columns in _tables(con).items():
            if table in history:
                continue
            out[table] = set(_comparable(table, columns, con.execute(f'SELECT * FROM "{table}"').fetchall()))
        return out


def test_a_warehouse_of_absolute_names_is_re_keyed_by_its_next_run_to_what_a_fresh_build_holds(projects, rekeyed):
    """Equal, but for what follows from the pool's tie-break (the smallest record id keeps a cluster's
    representative): re-keyed ids can make the pool keep another copy of an exact duplicate, as a fresh build
    does; the pool items of the first decision stay as history, and a case linked to one keeps that link until its
    file is read again."""
    fresh, old = _data(projects[0]), _data(rekeyed)
    history = {"entity", "was_generated_by", "was_derived_from", "context_case_image"}
    for table in sorted(set(fresh) - history):
        assert fresh[table] == old[table], table
    for table in ("entity", "was_generated_by", "was_derived_from"):
        assert {r for r in fresh[table] if "'shows'" not in r} <= old[table], table
    links = re.compile(r" \| 'pool_item:[0-9a-f]{64}' \| | \| None \| ")
    assert {links.sub(" | <link> | ", r) for r in fresh["context_case_image"]} == {
        links.sub(" | <link> | ", r) for r in old["context_case_image"]}
    scopes = rekeyed.wh.query("SELECT scope, activity_id, renamed FROM location_rekey ORDER BY scope")
    assert scopes["scope"].tolist() == ["context_canvas", "designs", "image_pool", "photocritique", "poetry"]
    # every scope is done; the pool renamed most (the paths under its manifests' folders, in every table, so a scope
    # re-keyed after it may find only its own ids left to rename, or none)
    assert scopes["activity_id"].notna().all() and scopes.set_index("scope")["renamed"]["image_pool"] > 1000
    notes = rekeyed.wh.query("SELECT asset_key, summary->>'rekeyed' AS rekeyed FROM activity WHERE activity_id IN"
                             " (SELECT activity_id FROM location_rekey)")
    assert set(notes["asset_key"]) <= {"source_records", "reddit_posts", "reddit_post_images", "poem_corpus", "context_cases",
                                       "design_records"}
    assert notes["rekeyed"].notna().all()  # each re-key is recorded in the activity that made it
