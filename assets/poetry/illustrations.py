"""One illustration per poem and generator (TangPoetryBench section 3, appendix B).

With text-to-image models configured (``image_generators``), every poem is sent to every model with the one
fixed prompt template; each image is stored content-addressed, recorded as an entity derived from its poem and
associated with the model, and handed to the shared pool as a ``generated`` source record (synthetic, with the
generator, model, version, template and poem in its provenance), where it is filtered and de-duplicated like any
other image at the pool's next run (the pool stages do not depend on this asset, so no pool rebuild ever triggers
image generation and its cost). Each request (poem x generator) is one item of the item loop: a failed call keeps
a retryable rejection and the next run asks again only for what is missing; an unexpected error on one request
(an answer that is not an image) is its ``internal_error`` and the other requests go on.

With no model configured the stage says so and, if ``poetry.stand_in_folder`` is set, takes stand-in
illustrations from that folder (the sample corpus's paintings): one seeded assignment of a painting per poem and
stand-in generator (``stand_in_generators``, or ``stand-in-1 … stand-in-<stand_in_models>``; no two generators of
a poem show the same painting: assets/poetry/logic/stand_ins.py), recorded with ``kind = 'stand_in'``. Stand-ins are never entered into the pool as generated
images (they are already pool images from their own source), so nothing downstream can mistake them for output of a
model.
"""

import io
from pathlib import Path

from dagster import AssetExecutionContext, Failure, MaterializeResult, asset
from PIL import Image, UnidentifiedImageError

from assets.image_pool.store import SourceRow, write_source_records, write_stored_file
from assets.core.item_loop import Done, Item, Kept, Outcome, Rejected, run_items
from assets.poetry.logic.poems import Poem, illustration_prompt, illustration_template
from assets.poetry.logic.stand_ins import assign_stand_ins, stand_in_names
from assets.poetry.corpus import poem_corpus
from assets.poetry.settings import PoetrySettings
from assets.poetry.store import load_poems, write_illustrations
from assets.core.materialization import writes
from assets.core.step import Step, recorded_step
from resources.blob_store import BlobStore, BlobStoreResource
from resources.image_editing import ImageGeneratorsResource
from resources.warehouse import WarehouseResource
from warehouse.ids import digest_of, entity_id, sha256_file, sha256_hex
from warehouse.lineage import ActivityLog, Agent, Entity

GENERATION_STAGE = "poem_illustration"
STAND_IN = "stand_in"
GENERATED = "generated"
_IMAGE_SUFFIXES = {".png", ".jpg", ".jpeg", ".webp"}


def item_id_for(poem_id: str, generator: str) -> str:
    return f"{poem_id}@{generator}"


@asset(
    metadata=writes("poem_illustration", images="image_uri"),
    code_version="1",
    deps=[poem_corpus],
    description="Each poem illustrated by each configured text-to-image model with one fixed prompt (or, with none"
    " configured, stand-in paintings labelled as such); generated images enter the pool as synthetic sources.",
)
def poem_illustrations(
    context: AssetExecutionContext,
    warehouse: WarehouseResource,
    blob_store: BlobStoreResource,
    image_generators: ImageGeneratorsResource,
    poetry: PoetrySettings,
) -> MaterializeResult:
    wh = warehouse.get_warehouse()
    store = blob_store.get_store()
    template = illustration_template()
    params = {"generators": [g.model_dump(exclude={"api_key_env"}) for g in image_generators.generators],
              "prompt_template": f"{template.id}@{template.version}", "stand_in_folder": poetry.stand_in_folder,
              "stand_in_models": poetry.stand_in_models, "stand_in_generators": poetry.stand_in_generators,
              "seed": poetry.seed}
    with recorded_step(context, wh, params) as step:
        with step.batch() as log:
            poems = load_poems(log.con)
            done = dict(log.con.execute("SELECT item_id, settings_digest FROM poem_illustration").fetchall())
        if image_generators.generators:
            _generate(step, store, image_generators, poetry, poems, done)
        else:
            step.notes["generators"] = "no text-to-image model configured (image_generators.generators is empty)"
            context.log.warning(step.notes["generators"])
            if poetry.stand_in_folder:
                generators = _stand_ins(step, store, poetry, poems, done)
                step.notes["stand_ins"] = (f"stand-in paintings from {poetry.stand_in_folder} used as illustrations"
                                           f" (stand-in generators {', '.join(generators)}); they are not model output")
    return step.result(store)


def _generate(step: Step, store: BlobStore, resource: ImageGeneratorsResource, poetry: PoetrySettings,
              poems: dict[str, Poem], done: dict[str, str]) -> None:
    template = illustration_template()
    for generator in resource.generators:
        settings = digest_of([generator.provider, generator.model, generator.size, poetry.generation_seed,
                              template.id, template.version])
        todo = [p for p in poems.values() if done.get(item_id_for(p.poem_id, generator.name)) != _item_digest(settings, p)]
        if not todo:
            step.counts[f"{generator.name}:already_generated"] += len(poems)
            continue
        _, client = resource.client(generator.name)
        agent = Agent(f"model:{generator.provider}/{generator.model}", "model", generator.model, None,
                      {"provider": generator.provider, "task": "text-to-image"})

        def draw(item: Item[Poem]) -> Outcome:
            """One request; the image is stored (content-addressed) and described for the pool."""
            poem = item.payload
            prompt = illustration_prompt(poem)
            response = client.generate(generator.request(prompt, seed=poetry.generation_seed))
            if not response.ok:
                return Rejected(response.status, f"{item.locator}: {response.error}", retryable=response.status != "no_image")
            width, height = Image.open(io.BytesIO(response.image)).size
            stored = store.put_bytes(response.image)
            source_row = SourceRow(
                source_type=GENERATED, source_name="poem_illustrations", locator=stored.uri,
                title=f"{poem.title} ({generator.name})", creator=f"{generator.provider}/{generator.model}",
                provider=generator.provider, source_url=None, license=poetry.generated_license,
                redistribution=poetry.generated_redistribution, domain=poetry.generated_domain,
                extra={"synthetic": True, "poem_id": poem.poem_id, "generator": generator.name, "model": generator.model,
                       "provider_model": response.provider_model, "prompt_template": f"{template.id}@{template.version}"},
                content_sha256=stored.sha256)
            return Kept((prompt, response, stored, width, height, source_row), count=f"{generator.name}:generated")

        def write(log: ActivityLog, done: list[Done[Poem]]) -> None:
            log.entities(Entity(d.item.key, "illustration_request", attributes={"item_id": d.item.locator})
                         for d in done if not d.kept)
            for d in (d for d in done if d.kept):
                poem, item_id = d.item.payload, d.item.locator
                prompt, response, stored, width, height, source_row = d.outcome.value
                illustration = entity_id("illustration", stored.sha256)
                log.associate(agent, "generator")
                log.entities([Entity(illustration, "illustration", stored.sha256,
                                     {"item_id": item_id, "synthetic": True, "model": generator.model})])
                log.generated([illustration])
                log.used([poem.entity_id], "poem")
                log.derived([(illustration, poem.entity_id, "illustrates")])
                log.unrejected(GENERATION_STAGE, [d.item.key])
                write_source_records(log, [source_row], illustration, relation="generated_image")
                write_stored_file(log, source_row.record_id, stored, response.mime)
                write_illustrations(log.con, [{
                    "item_id": item_id, "poem_id": poem.poem_id, "generator": generator.name, "kind": GENERATED,
                    "provider": generator.provider, "model": generator.model, "provider_model": response.provider_model,
                    "settings_digest": d.item.digest, "prompt_template": f"{template.id}@{template.version}",
                    "prompt_sha256": sha256_hex(prompt.encode()), "seed": poetry.generation_seed, "stand_in_source": None,
                    "entity_id": illustration, "image_sha256": stored.sha256, "image_uri": stored.uri, "mime": response.mime,
                    "width": width, "height": height, "pool_record_id": source_row.record_id,
                    "attempts": response.attempts, "latency_ms": response.latency_ms, "activity_id": log.activity_id}])

        requests = (Item(entity_id("illustration_request", digest_of([item_id_for(p.poem_id, generator.name), _item_digest(settings, p)])),
                         item_id_for(p.poem_id, generator.name), _item_digest(settings, p), p) for p in todo)
        run_items(step, GENERATION_STAGE, requests, draw, write, batch_size=poetry.batch_size)


def _item_digest(settings: str, poem: Poem) -> str:
    """What one image was made from: the generator settings and the poem's content (an edited poem is drawn again)."""
    return digest_of([settings, poem.content_sha256])


def _stand_ins(step: Step, store: BlobStore, poetry: PoetrySettings, poems: dict[str, Poem],
               done: dict[str, str]) -> tuple[str, ...]:
    """Assign and store the stand-in paintings; the stand-in generators' names come back."""
    folder = Path(poetry.stand_in_folder or "")
    if not folder.is_dir():
        raise Failure(description=f"poetry.stand_in_folder not found: {folder}")
    paintings = []
    for path in sorted(p for p in folder.iterdir() if p.suffix.lower() in _IMAGE_SUFFIXES):
        try:
            with Image.open(path) as image:
                low, high = image.convert("L").getextrema()
            if high - low < 8:  # a blank canvas illustrates nothing
                step.counts["stand_in_skipped:blank"] += 1
                continue
        except (UnidentifiedImageError, OSError):
            step.counts["stand_in_skipped:unreadable"] += 1
            continue
        paintings.append(path)
    if not paintings:
        raise Failure(description=f"poetry.stand_in_folder {folder} holds no readable painting")
    try:
        generators = stand_in_names(poetry.stand_in_generators, poetry.stand_in_models)
        by_content = {}
        for path in paintings:  # sorted: a painting's first file by name stands for its bytes
            by_content.setdefault(sha256_file(path), path)
        assignment = assign_stand_ins(sorted(poems), list(by_content), generators, poetry.seed)
    except ValueError as exc:
        raise Failure(description=f"poetry stand-ins: {exc}") from exc
    settings = digest_of([STAND_IN, str(folder), poetry.seed, [p.name for p in paintings], generators])
    for generator in generators:
        rows, entities, edges = [], [], []
        for poem_id in sorted(poems):
            item_id = item_id_for(poem_id, generator)
            if done.get(item_id) == settings:
                step.counts["stand_in:already_assigned"] += 1
                continue
            path = by_content[assignment[(poem_id, generator)]]
            stored = store.put_file(path)
            with Image.open(path) as image:
                width, height = image.size
                mime = Image.MIME.get(image.format or "", "application/octet-stream")
            illustration = entity_id("illustration", stored.sha256)
            entities.append(Entity(illustration, "illustration", stored.sha256, {"stand_in": True, "source": str(path)}))
            edges.append((illustration, poems[poem_id].entity_id))
            rows.append({"item_id": item_id, "poem_id": poem_id, "generator": generator, "kind": STAND_IN, "provider": None,
                         "model": None, "provider_model": None, "settings_digest": settings, "prompt_template": None,
                         "prompt_sha256": None, "seed": poetry.seed, "stand_in_source": str(path), "entity_id": illustration,
                         "image_sha256": stored.sha256, "image_uri": stored.uri, "mime": mime, "width": width,
                         "height": height, "pool_record_id": None, "attempts": None, "latency_ms": None})
        with step.batch() as log:
            log.entities(entities)
            log.generated(e.entity_id for e in entities)
            log.derived((e, poem, "stands_in_for") for e, poem in edges)
            write_illustrations(log.con, [{**r, "activity_id": log.activity_id} for r in rows])
        step.counts[f"{generator}:assigned"] += len(rows)
    return generators
