"""The poem corpus (TangPoetryBench section 3) into the warehouse; parsing lives in assets/poetry/logic/poems.py.

Each corpus file is read once per content hash, record by record through the item loop: every record becomes a
``poem`` or a rejection that keeps its locator (``file#row=N`` / ``file#record=N``, the file by its name relative to
the warehouse's root) and reason, and an unexpected
error on one record is that record's ``internal_error`` while the others are read. A poem whose text changes
under the same corpus id is replaced, and its new content is a new entity. A file that cannot be read at all is
kept as a rejected ``poem_source`` and the other files are still read; the step warns and goes on.
"""

import itertools
from dataclasses import replace
from pathlib import Path
from typing import Any

import duckdb
from dagster import AssetExecutionContext, Failure, MaterializeResult, asset

from assets.core.item_loop import Done, Item, Kept, Outcome, Rejected, run_items
from assets.poetry.logic.poems import Poem, PoemCorpusError, PoemRejection, parse_poem, poem_records
from assets.poetry.settings import PoetrySettings
from assets.poetry.store import write_poems, write_source_reads
from assets.core.materialization import writes
from assets.core.step import Step, recorded_step
from resources.warehouse import WarehouseResource
from warehouse.ids import digest_of, entity_id, sha256_file, sha256_hex
from warehouse.lineage import ActivityLog, Entity
from warehouse.rekey import located_renames, renamed_path

POEM_STAGE = "poem_corpus"
REKEY_SCOPE = "poetry"


@asset(
    metadata=writes("poem", "poem_source_read"),
    code_version="1",
    description="Poems (id, title, author, original text, translation, themes, form) from JSON or CSV corpus files;"
    " every rejected record keeps its locator and reason.",
)
def poem_corpus(context: AssetExecutionContext, warehouse: WarehouseResource, poetry: PoetrySettings) -> MaterializeResult:
    wh = warehouse.get_warehouse()
    with recorded_step(context, wh, {"corpus": [wh.name_of(path) for path in poetry.corpus]}) as step:
        step.rekey(REKEY_SCOPE, _location_renames)  # a warehouse written before migration 0015, once
        for path in map(Path, poetry.corpus):
            if not path.is_file():
                raise Failure(description=f"poem corpus file not found: {path}")
            sha = sha256_file(path)
            if step.read_before(path, sha):
                step.counts["files_unchanged"] += 1
                continue
            records = poem_records(path)
            try:
                first = list(itertools.islice(records, 1))  # a whole-file problem shows before the first record
            except PoemCorpusError as exc:
                step.reject_input(POEM_STAGE, "poem_source", path, sha, exc.reason_code, str(exc))
                with step.batch() as log:
                    step.remember_read(log, path, sha)
                step.notes.setdefault("unreadable_files", []).append(str(exc))
                context.log.warning(f"{exc}; the file is rejected and the other corpus files are read")
                continue
            _read_file(step, path, sha, itertools.chain(first, records), poetry.batch_size)
    return step.result()


def _read_file(step: Step, path: Path, sha: str, records, batch_size: int) -> None:
    source = entity_id("poem_source", sha)
    name = step.name_of(path)
    with step.batch() as log:
        log.entities([Entity(source, "poem_source", sha, {"path": name})])
        log.used([source], "poem_source")
    seen: dict[str, str] = {}
    from_csv = path.suffix.lower() == ".csv"

    def parse(item: Item[Any]) -> Outcome:
        if isinstance(item.payload, PoemRejection):
            read = replace(item.payload, locator=item.locator)
        else:
            read = parse_poem(item.payload, item.locator, seen, from_csv)
        if isinstance(read, Poem):
            return Kept(read, count="poems")
        return Rejected(read.reason_code, f"{item.locator}: {read.detail}", value=read)

    def write(log: ActivityLog, done: list[Done[Any]]) -> None:
        poems = [d.outcome.value for d in done if d.kept]
        rejected = [(d.item.key, d.outcome.value) for d in done if not d.kept]
        log.entities(Entity(p.entity_id, "poem", p.content_sha256, {"poem_id": p.poem_id, "locator": p.locator}) for p in poems)
        log.generated(p.entity_id for p in poems)
        log.derived((p.entity_id, source, "read_from") for p in poems)
        write_poems(log.con, [_row(p, log.activity_id) for p in poems])
        log.entities(Entity(key, "poem_record", attributes={"locator": r.locator}) for key, r in rejected)
        write_source_reads(log.con, [
            {"locator": p.locator, "file_sha256": sha, "poem_id": p.poem_id, "reason_code": None, "detail": None,
             "activity_id": log.activity_id} for p in poems] + [
            {"locator": r.locator, "file_sha256": sha, "poem_id": None, "reason_code": r.reason_code, "detail": r.detail,
             "activity_id": log.activity_id} for _, r in rejected])

    # Locators name the file by its name from the root, so two corpora with one file name never overwrite each
    # other's rows, and a copy of the project elsewhere gives the same record ids.
    items = (Item(_record_id(locator), locator, digest_of([locator, _content(raw)]), raw)
             for locator, raw in ((f"{name}#{loc.split('#', 1)[-1]}", raw) for loc, raw in records))
    run_items(step, POEM_STAGE, items, parse, write, batch_size=batch_size)
    with step.batch() as log:
        step.remember_read(log, path, sha)


def _record_id(locator: str) -> str:
    return entity_id("poem_record", sha256_hex(locator.encode()))


def _location_renames(con: duckdb.DuckDBPyConnection, root: Path) -> dict[str, str]:
    """What this asset's rows written before migration 0015 become (``Step.rekey``): corpus files by their names,
    and the record ids derived from the locators."""
    locators = [row[0] for row in con.execute("SELECT locator FROM poem_source_read UNION SELECT locator FROM poem").fetchall()]
    files = [row[0] for row in con.execute("SELECT attributes->>'path' FROM entity WHERE kind = 'poem_source'").fetchall()]
    return {**{path: renamed_path(path, root) for path in files if path}, **located_renames(locators, root, _record_id)}


def _content(raw: Any) -> Any:
    """What a record's parse reads (the reader's own rejection stands for the unreadable record)."""
    return [raw.reason_code, raw.detail] if isinstance(raw, PoemRejection) else raw


def _row(poem: Poem, activity_id: str) -> dict:
    return {"poem_id": poem.poem_id, "entity_id": poem.entity_id, "content_sha256": poem.content_sha256, "title": poem.title,
            "author": poem.author, "text": poem.text, "translation": poem.translation, "themes": list(poem.themes),
            "form": poem.form, "source": poem.source, "locator": poem.locator, "activity_id": activity_id}
