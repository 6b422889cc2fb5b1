"""Every design (base and perturbed) rendered from its record alone (pure logic: assets/designs/logic/render.py).

The renderer's version is the content hash of its source (renderer and font mapping), so changing either
re-renders everything and a render always says which code drew it.
"""

import io
import json
from functools import lru_cache
from importlib import resources

from dagster import AssetExecutionContext, MaterializeResult, asset
from PIL import Image

from assets.designs.ingest import design_records
from assets.designs.perturbation import perturbed_designs
from assets.designs.settings import DesignSettings
from assets.designs.store import write_renders
from assets.core.item_loop import INTERNAL_ERROR, Done, Item, Kept, Rejected, run_items
from assets.designs.logic.design_model import Design
from assets.designs.logic.render import RenderError, preview_difference, render_design, to_png_bytes
from assets.designs.logic.fonts import FontResolver
from assets.core.materialization import writes
from assets.core.step import recorded_step
from resources.blob_store import BlobStore, BlobStoreResource
from resources.warehouse import WarehouseResource
from warehouse.ids import digest_of, entity_id, sha256_hex
from warehouse.lineage import ActivityLog, Entity

RENDER_STAGE = "design_render"


@lru_cache(maxsize=1)
def renderer_version() -> str:
    logic = resources.files("assets.designs.logic")
    source = b"".join((logic / name).read_bytes() for name in ("render.py", "fonts.py"))
    return "pillow-" + sha256_hex(source)[:16]


def layer_loader(store: BlobStore):
    """``blob:<sha256>`` → image, cached: backgrounds and replacement pictures repeat across designs."""

    @lru_cache(maxsize=256)
    def load(ref: str) -> Image.Image:
        if not ref.startswith("blob:"):
            raise RenderError("layer_unavailable", f"layer ref {ref!r} is not in the blob store")
        image = Image.open(io.BytesIO(store.get_bytes(ref[len("blob:"):])))
        image.load()
        return image

    return load


@asset(
    metadata=writes("design_render", images="png_uri"),
    code_version="1",
    deps=[design_records, perturbed_designs],
    description="A deterministic PNG of every design, base and perturbed, with the fonts each text element was"
    " mapped to and, where the dataset ships its own preview, the mean pixel difference to it.",
)
def design_renders(
    context: AssetExecutionContext, warehouse: WarehouseResource, blob_store: BlobStoreResource, designs: DesignSettings
) -> MaterializeResult:
    wh = warehouse.get_warehouse()
    store = blob_store.get_store()
    version = renderer_version()
    fonts = FontResolver(extra_dirs=designs.font_dirs)
    load = layer_loader(store)
    with recorded_step(context, wh, {"renderer_version": version, "font_dirs": designs.font_dirs}) as step:
        select = ("SELECT d.design_id, d.record FROM design d WHERE NOT EXISTS (SELECT 1 FROM design_render r"
                  " WHERE r.design_id = d.design_id AND r.renderer_version = ?)"
                  " AND d.design_id NOT IN (SELECT entity_id FROM rejection WHERE stage = ? AND reason_code <> ?)")
        pages = wh.pages(select, [version, RENDER_STAGE, INTERNAL_ERROR], key="d.design_id", block=designs.batch_size)
        items = (Item(design_id, design_id, digest_of([record, version]), record) for page in pages for design_id, record in page)

        def render(item: Item) -> Kept | Rejected:
            """One design drawn and its PNG stored in the blob store."""
            try:
                row = render_row(item.key, Design.from_dict(json.loads(item.payload)), store, version, fonts, load)
            except RenderError as exc:
                return Rejected(exc.reason_code, str(exc))
            return Kept(row, count="rendered")

        def write(log: ActivityLog, done: list[Done]) -> None:
            _write_renders(log, done)
            step.counts["with_warnings"] += sum(d.kept and d.outcome.value["warnings"] != "[]" for d in done)

        run_items(step, RENDER_STAGE, items, render, write, batch_size=designs.batch_size)
    return step.result(store)


def render_row(design_id: str, design: Design, store: BlobStore, version: str, fonts: FontResolver, load) -> dict:
    """``design`` (the entity ``design_id``) rendered, its PNG in the blob store, as its ``design_render`` row (RenderError: it cannot be
    drawn faithfully, or its preview cannot be loaded)."""
    result = render_design(design, load, fonts)
    difference = None
    if design.preview:
        try:
            preview = load(design.preview)
        except Exception as exc:  # noqa: BLE001 - a missing or broken preview blob is this design's problem
            raise RenderError("layer_unavailable", f"design {design.design_id}: preview {design.preview!r} could not be"
                                                   f" loaded ({type(exc).__name__}: {exc})") from exc
        difference = preview_difference(result.image, preview)
    stored = store.put_bytes(to_png_bytes(result.image))
    return {"design_id": design_id, "renderer_version": version, "png_sha256": stored.sha256, "png_uri": stored.uri,
            "render_id": entity_id("design_render", stored.sha256), "width": result.image.width, "height": result.image.height,
            "fonts": json.dumps({k: v.to_dict() for k, v in result.fonts_used.items()}, sort_keys=True),
            "warnings": json.dumps(result.warnings), "preview_mean_abs_diff": difference}


def _write_renders(log: ActivityLog, done: list[Done]) -> None:
    rows = [d.outcome.value for d in done if d.kept]
    log.used((d.item.key for d in done), "design")
    log.entities(Entity(r["render_id"], "design_render", r["png_sha256"],
                        {"design_id": r["design_id"], "renderer_version": r["renderer_version"]}) for r in rows)
    log.generated(r["render_id"] for r in rows)
    log.derived((r["render_id"], r["design_id"], "renders") for r in rows)
    write_renders(log.con, [{**r, "activity_id": log.activity_id} for r in rows])
