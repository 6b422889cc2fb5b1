"""What a materialization shows a person: SQL for a content digest and a sample, Markdown tables, a thumbnail sheet.

Pure: the caller runs the SQL and fetches the images. The digest and the sample leave out the columns that change on
every run without the data changing (provenance of the run), so the same rows give the same data version and the
same preview on every run.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from PIL import Image, ImageOps

from warehouse.redaction import redact_text

# Columns that name the run, not the data: activity and run ids, the process, durations, clock times (``*_at``).
RUN_COLUMNS = frozenset({"activity_id", "run_id", "decided_in_run", "pid", "hostname", "duration_ms", "latency_ms",
                         "mtime_ns"})

PREVIEW_ROWS = 5
CELL_CHARS = 40


def is_run_column(name: str) -> bool:
    """Whether ``name`` changes on every run without the data changing (left out of digests and previews)."""
    return name in RUN_COLUMNS or name.endswith("_at")


def quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _from(relation: str, where: str | None) -> str:
    return f"FROM {quoted(relation)}" + (f" WHERE {where}" if where else "")


def digest_query(relation: str, columns: Sequence[str], where: str | None = None) -> str:
    """One aggregate over ``relation``: its row count and the sum of an md5 of each row's canonical JSON (``columns``
    only). A sum is independent of row order and, unlike XOR, counts a repeated row; md5 over JSON is the same in every
    DuckDB version, so a warehouse upgrade leaves the version alone."""
    if not columns:
        return f"SELECT count(*), 0 {_from(relation, where)}"
    row = "to_json(struct_pack(" + ", ".join(f"{quoted(c)} := {quoted(c)}" for c in columns) + "))"
    return f"SELECT count(*), coalesce(sum(md5_number_lower(CAST({row} AS VARCHAR))), 0) {_from(relation, where)}"


def sample_query(relation: str, columns: Sequence[str], where: str | None = None, n: int = PREVIEW_ROWS,
                 also: str | None = None) -> str:
    """The first ``n`` rows of ``relation`` ordered by every one of ``columns``: the same rows for the same data. ``also``
    (an SQL expression over the row, such as the blob of its image) comes last in each row."""
    listed = ", ".join(quoted(c) for c in columns)
    selected = listed + (f", {also}" if also else "")
    return f"SELECT {selected} {_from(relation, where)} ORDER BY {listed} LIMIT {n}"


def cell(value: Any, max_chars: int = CELL_CHARS) -> str:
    """One Markdown table cell: credentials in URLs redacted, on one line, pipes escaped, cut with an ellipsis."""
    text = "" if value is None else redact_text(str(value))
    text = re.sub(r"\s+", " ", text).strip()
    if len(text) > max_chars:
        text = text[: max_chars - 1] + "…"
    return text.replace("|", "\\|")


def markdown_table(header: Sequence[str], rows: Iterable[Sequence[Any]], max_chars: int = CELL_CHARS) -> str:
    lines = ["| " + " | ".join(cell(h, max_chars) for h in header) + " |", "|" + " --- |" * len(header)]
    lines += ["| " + " | ".join(cell(v, max_chars) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def count_label(key: str) -> str:
    """A counter's name as a person reads it. ``<thing>_pending`` is how many were waiting when the step began (not
    how many still wait: the outcomes beside it say what became of them); ``group:detail`` reads "group: detail"."""
    if key.endswith("_pending"):
        key = f"{key[: -len('_pending')]} waiting at start"
    return key.replace(":", ": ").replace("_", " ")


def counts_markdown(counts: Mapping[str, int]) -> str:
    """The step's counters as one two-column table, in name order."""
    return markdown_table(("count", "n"), [(count_label(k), n) for k, n in sorted(counts.items())], max_chars=120)


def _thumbnail(data: bytes, side: int) -> Image.Image:
    """The image fitted in a ``side`` square (aspect kept), centred on grey; an undecodable one is a grey square."""
    tile = Image.new("RGB", (side, side), (128, 128, 128))
    try:
        with Image.open(io.BytesIO(data)) as opened:
            image = ImageOps.exif_transpose(opened).convert("RGB")
    except Exception:  # noqa: BLE001 - a preview never fails a step; the grey tile shows the image did not decode
        return tile
    image.thumbnail((side, side), Image.Resampling.LANCZOS)
    tile.paste(image, ((side - image.width) // 2, (side - image.height) // 2))
    return tile


def thumbnail_sheet(images: Sequence[bytes], side: int, columns: int = 6, gap: int = 4) -> bytes:
    """PNG bytes of the images as a grid of ``side`` px tiles, left to right, top to bottom. Deterministic: fixed
    resampling and compression, no PNG metadata, so the same images give the same bytes."""
    if not images:
        raise ValueError("a thumbnail sheet needs at least one image")
    columns = min(columns, len(images))
    rows = -(-len(images) // columns)
    sheet = Image.new("RGB", (columns * side + (columns - 1) * gap, rows * side + (rows - 1) * gap), (255, 255, 255))
    for i, data in enumerate(images):
        sheet.paste(_thumbnail(data, side), ((i % columns) * (side + gap), (i // columns) * (side + gap)))
    out = io.BytesIO()
    sheet.save(out, format="PNG", compress_level=9)
    return out.getvalue()


def small_sheet(images: Sequence[bytes], max_bytes: int, side: int = 96) -> bytes:
    """A thumbnail sheet of at most ``max_bytes`` PNG bytes (for a data URI the UI shows inline): tiles shrink by a
    quarter until it fits (``ValueError`` if not even 16 px tiles do)."""
    while side >= 16:
        data = thumbnail_sheet(images, side)
        if len(data) <= max_bytes:
            return data
        side = side * 3 // 4
    raise ValueError(f"no thumbnail sheet of {len(images)} image(s) fits in {max_bytes} bytes")


_CREATE = re.compile(r"CREATE TABLE (?:IF NOT EXISTS )?(\w+)\s*\(", re.IGNORECASE)
_COLUMN = re.compile(r"^\s*(\w+)\s+[A-Za-z].*?--\s*(.+?)\s*$")
_ADDED = re.compile(r"ALTER TABLE (\w+) ADD COLUMN (?:IF NOT EXISTS )?(\w+)\b.*?--\s*(.+?)\s*$", re.IGNORECASE)


def column_comments(sql: str) -> dict[tuple[str, str], str]:
    """The trailing ``-- comment`` of each column line in ``CREATE TABLE`` and ``ALTER TABLE ... ADD COLUMN``
    statements, by (table, column): the migrations already say what most columns mean."""
    found: dict[tuple[str, str], str] = {}
    table = None
    for line in sql.splitlines():
        if (added := _ADDED.search(line)) is not None:
            found[(added[1], added[2])] = added[3]
        elif (created := _CREATE.search(line)) is not None:
            table = created[1]
        elif table is not None and line.lstrip().startswith(")"):
            table = None
        elif table is not None and (column := _COLUMN.match(line)) is not None and column[1].upper() not in {"PRIMARY", "UNIQUE", "FOREIGN", "CHECK"}:
            found[(table, column[1])] = column[2]
    return found
