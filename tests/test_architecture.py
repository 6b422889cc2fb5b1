"""The dependency rules of pyproject.toml's [tool.importlinter] contracts hold (docs/architecture.md says them in
words): checked here so that the test command, and so CI, fails on an import that breaks them."""

import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_import_contracts_are_kept():
    lint = subprocess.run([str(Path(sys.executable).parent / "lint-imports"), "--no-cache", "--no-logo"],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    assert lint.returncode == 0, lint.stdout + lint.stderr


_WRITE = re.compile(r'insert_rows\(\s*[\w.]+,\s*"(\w+)"|(?:INSERT (?:OR \w+ )?INTO|UPDATE|DELETE FROM)\s+([a-z_][a-z0-9_]*)')
PIPELINES = sorted(p.parent.name for p in (REPO / "assets").glob("*/definitions.py"))


def _written_tables(path: Path) -> set[str]:
    return {a or b for a, b in _WRITE.findall(path.read_text(encoding="utf-8"))}


def _core_tables() -> set[str]:
    """Tables the core migration and the core's own later migrations create (written only by core code)."""
    text = "\n".join((REPO / "warehouse" / "migrations" / name).read_text(encoding="utf-8")
                     for name in ("0001_provenance_core.sql", "0004_model_calls.sql", "0010_item_loop.sql",
                                  "0012_model_call_lease.sql"))
    return set(re.findall(r"CREATE TABLE (\w+)", text))


def test_each_pipeline_writes_only_its_own_tables_and_only_from_its_store():
    """A pipeline's store.py is the one place that writes its tables; no two pipelines write the same table, and no
    pipeline writes a core table (those go through assets/core and warehouse/lineage.py)."""
    owner: dict[str, str] = {}
    for name in PIPELINES:
        for module in sorted((REPO / "assets" / name).glob("*.py")):
            if module.name != "store.py":
                assert not _written_tables(module), f"{module.relative_to(REPO)} writes tables; only store.py may"
        store = REPO / "assets" / name / "store.py"
        for table in _written_tables(store) if store.exists() else set():
            assert table not in _core_tables(), f"{name}'s store writes the core table {table}"
            assert owner.setdefault(table, name) == name, f"{table} is written by {owner[table]} and {name}"
    assert {"source_record", "reddit_candidate", "critique_pair", "design", "poem", "context_case", "counterfactual_edit"} <= set(owner)
