"""Every write of the ``counterfactual_edit`` table (migrations 0008 and 0021): new edits and their manual checks, with the
stored edits read back the way the check needs them.

The asset builds the rows and records the lineage; here is what the table receives and how a check decision
changes a stored edit, in one place.
"""

import json

import duckdb

from assets.counterfactual.logic.edit_pairs import CheckEvent, CounterfactualRecord
from warehouse.db import insert_rows
from warehouse.ids import canonical_json


def edited_spec_keys(con: duckdb.DuckDBPyConnection) -> set[str]:
    """The spec keys (spec and model) already edited: each is edited once."""
    return {row[0] for row in con.execute("SELECT spec_key FROM counterfactual_edit").fetchall()}


def write_edit(con: duckdb.DuckDBPyConnection, row: dict) -> None:
    """One spec edited by one model: the synthetic output with its source and labels, pending its manual check."""
    insert_rows(con, "counterfactual_edit", [row])


def stored_edit(con: duckdb.DuckDBPyConnection, record_id: str) -> CounterfactualRecord | None:
    """The stored edit ``record_id`` as a record (None: there is none)."""
    row = con.execute("SELECT * FROM counterfactual_edit WHERE record_id = ?", [record_id]).fetchdf()
    if row.empty:
        return None
    return _record(row.iloc[0].to_dict())


def record_check(con: duckdb.DuckDBPyConnection, updated: CounterfactualRecord) -> None:
    """An edit's manual-check state after a decision, its history holding every decision so far."""
    con.execute(
        "UPDATE counterfactual_edit SET manual_check = ?, checked_by = ?, check_note = ?, history = ? WHERE record_id = ?",
        [updated.manual_check, updated.checked_by, updated.check_note,
         canonical_json([vars(e) for e in updated.history]), updated.record_id])


def _record(row: dict) -> CounterfactualRecord:
    fields = {name: row[name] for name in CounterfactualRecord.__dataclass_fields__ if name in row and name not in ("synthetic", "kind", "history")}
    for name in ("seed", "image_position"):  # a NULL integer reads back as NaN
        fields[name] = None if fields.get(name) is None or fields[name] != fields[name] else int(fields[name])
    return CounterfactualRecord(**fields, history=tuple(CheckEvent(**e) for e in json.loads(row["history"])))
