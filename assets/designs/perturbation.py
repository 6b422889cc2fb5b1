"""Seeded JSON-level perturbations of every base design (AesEval Algorithm 1; pure logic:
assets/designs/logic/perturb.py), each operation logged with the element's box before and after."""

import json

from dagster import AssetExecutionContext, MaterializeResult, asset

from assets.designs.ingest import design_entity_id, design_records
from assets.designs.settings import DesignSettings
from assets.designs.store import write_variants
from assets.core.item_loop import Done, Item, Kept, Rejected, run_items
from assets.designs.logic.design_model import Design
from assets.designs.logic.perturb import PerturbError, perturb_design
from assets.core.materialization import writes
from assets.core.step import recorded_step
from resources.warehouse import WarehouseResource
from warehouse.ids import digest_of, sha256_hex
from warehouse.lineage import ActivityLog, Entity

PERTURB_STAGE = "design_perturbation"


def variant_seed(run_seed: int, variant: int) -> int:
    """Per-variant seed; perturb_design mixes in the design id, so each (design, variant) has its own stream."""
    return int(digest_of([run_seed, variant])[:15], 16)


@asset(
    metadata=writes("design_variant"),
    code_version="1",
    deps=[design_records],
    description="Perturbed variants of every base design: one to three elements changed by a type-valid operation"
    " with sampled intensity, seeded; the full operation log is in design_perturbation_op.",
)
def perturbed_designs(context: AssetExecutionContext, warehouse: WarehouseResource, designs: DesignSettings) -> MaterializeResult:
    wh = warehouse.get_warehouse()
    config = designs.perturb
    settings = config.settings()
    settings_digest = digest_of([config.model_dump(), repr(settings)])
    params = {**config.model_dump(), "settings_digest": settings_digest}
    with recorded_step(context, wh, params) as step:
        with step.batch() as log:
            pool = [row[0] for row in log.con.execute(
                "SELECT DISTINCT json_extract_string(e, '$.layer') AS ref"
                " FROM design, unnest(CAST(json_extract(record, '$.elements[*]') AS JSON[])) AS t(e)"
                " WHERE NOT is_perturbed AND json_extract_string(e, '$.type') = 'image' AND ref IS NOT NULL"
                " ORDER BY ref LIMIT ?", [config.replacement_pool]).fetchall()]
        select = ("SELECT d.design_id || '|' || v.variant, d.design_id, d.record, v.variant FROM design d, range(?) AS v(variant)"
                  " WHERE NOT d.is_perturbed AND NOT EXISTS (SELECT 1 FROM design_variant x WHERE x.base_design_id = d.design_id"
                  " AND x.variant = v.variant AND x.settings_digest = ?)")
        pages = wh.pages(select, [config.variants_per_design, settings_digest], key="(d.design_id || '|' || v.variant)",
                         block=designs.batch_size)
        items = (Item(key, f"{base_id} variant {variant}", digest_of([record, variant, settings_digest]), (base_id, record, variant))
                 for page in pages for key, base_id, record, variant in page)

        def perturb(item: Item) -> Kept | Rejected:
            """One variant of one base design (pure: the design, its seed, the settings and the layer pool)."""
            base_id, record, variant = item.payload
            seed = variant_seed(config.seed, variant)
            try:
                result = perturb_design(Design.from_dict(json.loads(record)), seed, settings, pool)
            except PerturbError as exc:
                return Rejected(exc.reason_code, f"variant {variant}: {exc}", value=seed)
            return Kept((seed, result), count="variants")

        def write(log: ActivityLog, done: list[Done]) -> None:
            _write_variants(log, done, settings_digest)
            for op in (op for d in done if d.kept for op in d.outcome.value[1].operations):
                step.counts[f"op:{op.op}"] += 1

        run_items(step, PERTURB_STAGE, items, perturb, write, batch_size=designs.batch_size)
    return step.result()


def _write_variants(log: ActivityLog, done: list[Done], settings_digest: str) -> None:
    designs, variants, ops, entities, edges = [], [], [], [], []
    for d in done:
        base_id, _, variant = d.item.payload
        if isinstance(d.outcome, Rejected):
            variants.append({"base_design_id": base_id, "variant": variant, "settings_digest": settings_digest,
                             "seed": d.outcome.value, "design_id": None, "detail": f"{d.outcome.reason_code}: {d.outcome.detail}"})
            continue
        seed, result = d.outcome.value
        perturbed = result.design
        text = perturbed.to_json()
        design_id = design_entity_id(text)
        designs.append({"design_id": design_id, "source_design_id": perturbed.design_id, "base_design_id": base_id,
                        "is_perturbed": True, "source_format": perturbed.source_format,
                        "canvas_width": perturbed.canvas_width, "canvas_height": perturbed.canvas_height,
                        "n_elements": len(perturbed.elements), "record": text})
        variants.append({"base_design_id": base_id, "variant": variant, "settings_digest": settings_digest, "seed": seed,
                         "design_id": design_id, "detail": None})
        for n, op in enumerate(result.operations):
            ops.append({"design_id": design_id, "op_index": n, "element_index": op.element_index, "element_id": op.element_id,
                        "element_type": op.element_type, "op": op.op, "params": json.dumps(op.params, sort_keys=True),
                        "box_before": list(op.box_before), "box_after": list(op.box_after),
                        "before_values": json.dumps(op.before, sort_keys=True, default=list),
                        "after_values": json.dumps(op.after, sort_keys=True, default=list)})
        entities.append(Entity(design_id, "design", sha256_hex(text.encode()),
                               {"base": base_id, "variant": variant, "operations": [o.op for o in result.operations]}))
        edges.append((design_id, base_id, "perturbed_from"))
    log.used((d.item.payload[0] for d in done), "base_design")
    log.entities(entities)
    log.generated(e.entity_id for e in entities)
    log.derived(edges)
    write_variants(log.con, [{**d, "activity_id": log.activity_id} for d in designs], ops,
                   [{**v, "activity_id": log.activity_id} for v in variants])
