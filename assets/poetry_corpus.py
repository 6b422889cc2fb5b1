"""The poem corpus (TangPoetryBench section 3) into the warehouse; parsing lives in assets/lib/poems.py.

Each corpus file is read once per content hash. Every record becomes a ``poem`` or a rejection that keeps its
locator (``file#row=N`` / ``file#record=N``) and reason; a poem whose text changes under the same corpus id is
replaced, and its new content is a new entity.
"""

from dataclasses import replace
from pathlib import Path

from dagster import AssetExecutionContext, Failure, MaterializeResult, asset

from assets.lib.poems import Poem, PoemCorpusError, read_poems
from assets.poetry_settings import PoetrySettings
from assets.step import recorded_step
from resources.warehouse import WarehouseResource
from warehouse.db import insert_rows
from warehouse.ids import entity_id, sha256_file, sha256_hex
from warehouse.lineage import Entity

POEM_STAGE = "poem_corpus"


@asset(
    group_name="poetry_benchmark",
    code_version="1",
    description="Poems (id, title, author, original text, translation, themes, form) from JSON or CSV corpus files;"
    " every rejected record keeps its locator and reason.",
)
def poem_corpus(context: AssetExecutionContext, warehouse: WarehouseResource, poetry: PoetrySettings) -> MaterializeResult:
    wh = warehouse.get_warehouse()
    with recorded_step(context, wh, {"corpus": poetry.corpus}) as step:
        unreadable = []
        for path in map(Path, poetry.corpus):
            if not path.is_file():
                raise Failure(description=f"poem corpus file not found: {path}")
            sha = sha256_file(path)
            if step.read_before(path, sha):
                step.counts["files_unchanged"] += 1
                continue
            try:
                reads = list(read_poems(path))
            except PoemCorpusError as exc:
                step.reject_input(POEM_STAGE, "poem_source", path, sha, exc.reason_code, str(exc))
                unreadable.append(str(exc))
                continue
            source = entity_id("poem_source", sha)
            # Locators name the file's full path, so two corpora with one file name never overwrite each other's rows.
            reads = [replace(r, locator=f"{path}#{r.locator.split('#', 1)[-1]}") for r in reads]
            poems = [r for r in reads if isinstance(r, Poem)]
            rejected = [r for r in reads if not isinstance(r, Poem)]
            with step.batch() as log:
                log.entities([Entity(source, "poem_source", sha, {"path": str(path)})])
                log.used([source], "poem_source")
                log.entities(Entity(p.entity_id, "poem", p.content_sha256, {"poem_id": p.poem_id, "locator": p.locator})
                             for p in poems)
                log.generated(p.entity_id for p in poems)
                log.derived((p.entity_id, source, "read_from") for p in poems)
                insert_rows(log.con, "poem", [_row(p, log.activity_id) for p in poems], conflict="replace")
                reads_rows = [{"locator": p.locator, "file_sha256": sha, "poem_id": p.poem_id, "reason_code": None,
                               "detail": None, "activity_id": log.activity_id} for p in poems]
                reads_rows += [{"locator": r.locator, "file_sha256": sha, "poem_id": None, "reason_code": r.reason_code,
                                "detail": r.detail, "activity_id": log.activity_id} for r in rejected]
                insert_rows(log.con, "poem_source_read", reads_rows, conflict="replace")
                record_ids = {r.locator: entity_id("poem_record", sha256_hex(r.locator.encode())) for r in rejected}
                log.entities(Entity(record_ids[r.locator], "poem_record", attributes={"locator": r.locator}) for r in rejected)
                log.rejected(POEM_STAGE, [(record_ids[r.locator], r.reason_code, f"{r.locator}: {r.detail}") for r in rejected])
                step.remember_read(log, path, sha)
            step.counts["poems"] += len(poems)
            for r in rejected:
                step.counts[f"rejected:{r.reason_code}"] += 1
        if unreadable:
            raise Failure(description="unreadable poem corpus file(s); the others were read: " + " | ".join(unreadable))
    return MaterializeResult(metadata=step.summary())


def _row(poem: Poem, activity_id: str) -> dict:
    return {"poem_id": poem.poem_id, "entity_id": poem.entity_id, "content_sha256": poem.content_sha256, "title": poem.title,
            "author": poem.author, "text": poem.text, "translation": poem.translation, "themes": list(poem.themes),
            "form": poem.form, "source": poem.source, "locator": poem.locator, "activity_id": activity_id}


def load_poems(con) -> dict[str, Poem]:
    """The stored corpus as ``Poem`` objects, by poem id."""
    rows = con.execute("SELECT poem_id, title, author, text, translation, themes, form, source, locator FROM poem"
                       " ORDER BY poem_id").fetchall()
    return {r[0]: Poem(poem_id=r[0], title=r[1], author=r[2], text=r[3], translation=r[4], themes=tuple(r[5]), form=r[6],
                       source=r[7], locator=r[8]) for r in rows}
