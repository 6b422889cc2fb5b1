"""`aesforge provenance ITEM`: the rows of the warehouse's ``provenance(item)`` macro as a tree a person can read,
from the sources down to the item (source -> transformations -> model calls or people -> the item), or as JSON.

Pure: rows in, text out, so the same rows give the same text and the wording is tested without a warehouse.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import date, datetime
from typing import Any

SOURCE_FIELDS = ("source_url", "license", "creator", "title", "provider", "redistribution", "locator")
_ID_SHOWN = 16  # hex characters of an id's digest shown in the tree (the JSON has them whole)


def _short(entity_id: str) -> str:
    kind, _, digest = entity_id.partition(":")
    return f"{kind}:{digest[:_ID_SHOWN]}" if digest and len(digest) > _ID_SHOWN else entity_id


def _activity(row: Mapping[str, Any]) -> str | None:
    if not row.get("asset_key"):
        return None
    version = (row.get("code_version") or "").split("; ")
    code = next((part.split(" v", 1)[1] for part in version if f"{row['asset_key']} v" in part), None)
    run = (row.get("run_id") or "")[:8]
    agents = sorted({str(a) for a in row.get("agents") or [] if not str(a).startswith("software:")})
    by = f"; by {', '.join(agents)}" if agents else ""
    status = "" if row.get("status") in (None, "success") else f" [{row['status']}]"
    return f"{row['link']} by {row['asset_key']} (run {run}{f', code v{code}' if code else ''}){by}{status}"


def provenance_tree(item: str, rows: Sequence[Mapping[str, Any]]) -> str:
    """Each ancestor once (deepest, the sources, first), indented by how far it is from the item, with how it was
    derived, the activities that made or used it, and a source record's origin and licence."""
    if not rows:
        return f"{item}: no such entity in the warehouse (or no lineage recorded for it)"
    entities: dict[str, dict[str, Any]] = {}
    for row in rows:
        entity = entities.setdefault(row["entity_id"], {"depth": row["depth"], "kind": row["entity_kind"],
                                                         "derived_as": row.get("derived_as"), "steps": [], "source": {}})
        step = _activity(row)
        if step and step not in entity["steps"]:
            entity["steps"].append(step)
        for name in SOURCE_FIELDS:
            if row.get(name) and name not in entity["source"]:
                entity["source"][name] = row[name]
    deepest = max(e["depth"] for e in entities.values())
    lines = [f"provenance of {item} ({len(entities)} entities, {deepest} step(s) from its sources; [how the entity"
             " below it was derived from it]):"]
    for entity_id, e in sorted(entities.items(), key=lambda kv: (-kv[1]["depth"], kv[1]["kind"], kv[0])):
        pad = "  " * (deepest - e["depth"])
        how = f"  [{e['derived_as']}]" if e["derived_as"] else ""
        lines.append(f"{pad}- {e['kind']} {_short(entity_id)}{how}")
        for step in e["steps"] or ["external input (no activity made it here)"]:
            lines.append(f"{pad}    {step}")
        if e["source"]:
            lines.append(f"{pad}    source: " + "; ".join(f"{k} {v}" for k, v in e["source"].items()))
    return "\n".join(lines)


def _jsonable(value: Any) -> Any:
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


def provenance_json(item: str, rows: Sequence[Mapping[str, Any]]) -> str:
    """The rows whole, as JSON ({"item", "rows"}), for tools."""
    return json.dumps({"item": item, "rows": [{k: _jsonable(v) for k, v in row.items()} for row in rows]},
                      indent=2, sort_keys=True, default=str)
