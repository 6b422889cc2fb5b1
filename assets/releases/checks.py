"""The leakage guard's blocking check: the training splits as they are now, less the exclusions on record, share no
image or duplicate cluster with any held-out image of another dataset.

It recomputes the overlap from the current tables (view ``release_overlap``) rather than trusting the guard's last
decision, so an overlap planted after the guard ran (a new near-copy in the pool, a new split) fails the check until
the guard runs again; as a blocking check it stops the release assets that depend on the guard.
"""

from dagster import AssetCheckExecutionContext, AssetCheckResult, AssetCheckSeverity, asset_check

from assets.releases.leakage import release_leakage_guard
from quality.gx_suite import Expectation, validate
from quality.results import store_and_report
from resources.warehouse import WarehouseResource

# One row per training image not excluded; `overlap` names it and every held-out image it collides with (NULL: none).
TRAINING_FACTS = """
SELECT t.dataset, t.split,
       CASE WHEN count(o.held_item_id) > 0 THEN
           t.dataset || '/' || t.split || ' image ' || t.image_sha256 || ' overlaps '
           || array_to_string(list_sort(list_distinct(list(o.held_dataset || '/' || o.held_split || ' '
                                                           || o.held_item_id || ' (image ' || o.held_image_sha256 || ')'))), ', ')
       END AS overlap
FROM (SELECT DISTINCT dataset, split, image_sha256 FROM release_split_images WHERE role = 'training') t
LEFT JOIN release_overlap o USING (dataset, split, image_sha256)
WHERE NOT EXISTS (SELECT 1 FROM release_exclusion x
                  WHERE x.dataset = t.dataset AND x.split = t.split AND x.image_sha256 = t.image_sha256)
GROUP BY t.dataset, t.split, t.image_sha256
"""

NO_LEAKAGE = Expectation(
    "no_benchmark_leakage",
    "no training image outside release_exclusion is, or duplicates, an image another dataset holds out",
    "ExpectColumnValuesToBeNull", {"column": "overlap"})


@asset_check(asset=release_leakage_guard, name=NO_LEAKAGE.name, blocking=True, description=NO_LEAKAGE.description)
def no_benchmark_leakage(context: AssetCheckExecutionContext, warehouse: WarehouseResource) -> AssetCheckResult:
    wh = warehouse.get_warehouse()
    outcomes = validate(wh.query(TRAINING_FACTS), "release_leakage", [NO_LEAKAGE])
    (result,) = store_and_report(wh, context.run.run_id, "release_leakage_guard", outcomes, AssetCheckSeverity.ERROR)
    return result
