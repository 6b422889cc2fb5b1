"""Every design (base and perturbed) rendered from its record alone (pure logic: assets/lib/design_render.py).

The renderer's version is the content hash of its source (renderer and font mapping), so changing either
re-renders everything and a render always says which code drew it.
"""

import io
import json
from functools import lru_cache
from importlib import resources

from dagster import AssetExecutionContext, MaterializeResult, asset
from PIL import Image

from assets.design_ingest import design_records
from assets.design_perturbation import perturbed_designs
from assets.design_settings import DesignSettings
from assets.lib.design_model import Design
from assets.lib.design_render import RenderError, preview_difference, render_design, to_png_bytes
from assets.lib.fonts import FontResolver
from assets.step import Step, recorded_step
from resources.blob_store import BlobStore, BlobStoreResource
from resources.warehouse import WarehouseResource
from warehouse.db import insert_rows
from warehouse.ids import entity_id, sha256_hex
from warehouse.lineage import Entity

RENDER_STAGE = "design_render"


@lru_cache(maxsize=1)
def renderer_version() -> str:
    lib = resources.files("assets.lib")
    source = b"".join((lib / name).read_bytes() for name in ("design_render.py", "fonts.py"))
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
    group_name="design_aesthetics",
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
                  " AND d.design_id NOT IN (SELECT entity_id FROM rejection WHERE stage = 'design_render')")
        for page in wh.pages(select, [version], key="d.design_id", block=designs.batch_size):
            _render_page(step, store, page, version, fonts, load)
    return MaterializeResult(metadata=step.summary())


def _render_page(step: Step, store: BlobStore, page, version: str, fonts: FontResolver, load) -> None:
    rows, entities, edges, rejections = [], [], [], []
    for design_id, record in page:
        design = Design.from_dict(json.loads(record))
        try:
            result = render_design(design, load, fonts)
            difference = preview_difference(result.image, load(design.preview)) if design.preview else None
        except RenderError as exc:
            rejections.append((design_id, exc.reason_code, str(exc)))
            continue
        png = to_png_bytes(result.image)
        stored = store.put_bytes(png)
        sha = stored.sha256
        render_id = entity_id("design_render", sha)
        rows.append({"design_id": design_id, "renderer_version": version, "png_sha256": sha, "png_uri": stored.uri, "render_id": render_id,
                     "width": result.image.width, "height": result.image.height,
                     "fonts": json.dumps({k: v.to_dict() for k, v in result.fonts_used.items()}, sort_keys=True),
                     "warnings": json.dumps(result.warnings), "preview_mean_abs_diff": difference})
        entities.append(Entity(render_id, "design_render", sha, {"design_id": design_id, "renderer_version": version}))
        edges.append((render_id, design_id, "renders"))
        step.counts["rendered"] += 1
        step.counts["with_warnings"] += bool(result.warnings)
    with step.batch() as log:
        log.used((row[0] for row in page), "design")
        log.entities(entities)
        log.generated(e.entity_id for e in entities)
        log.derived(edges)
        insert_rows(log.con, "design_render", [{**r, "activity_id": log.activity_id} for r in rows], conflict="replace")
        log.rejected(RENDER_STAGE, rejections)
    step.counts["render_rejected"] += len(rejections)
