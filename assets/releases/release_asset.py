"""The one asset shape every release shares: read the spec's rows from the warehouse, write the folder."""

from collections.abc import Mapping, Sequence
from pathlib import Path

from dagster import AssetExecutionContext, AssetKey, AssetsDefinition, MaterializeResult, asset

from assets.core.materialization import writes
from assets.core.step import aesforge_version, recorded_step
from assets.releases.settings import ReleaseSettings
from assets.releases.writer import ReleaseSpec, write_release
from resources.blob_store import BlobStoreResource
from resources.warehouse import WarehouseResource

RELEASE_CODE_VERSION = "1"


RELEASE_FOLDER_TAG = "aesforge/release_folder"
"""A run tag that names this run's release folder (``aesforge release --out``) instead of ``releases.out_dir``."""


def release_folder(settings: ReleaseSettings, dataset: str, tags: Mapping[str, str]) -> Path:
    return Path(tags[RELEASE_FOLDER_TAG]) if RELEASE_FOLDER_TAG in tags else Path(settings.out_dir) / dataset


def release_asset(spec: ReleaseSpec, deps: Sequence[str]) -> AssetsDefinition:
    """The ``<dataset>_release`` asset of ``spec``, downstream of the assets (by key) its rows come from."""

    @asset(
        name=f"{spec.dataset}_release",
        metadata=writes("export_file", where=f"dataset = '{spec.dataset}_release'"),
        code_version=RELEASE_CODE_VERSION,
        deps=[AssetKey(key) for key in deps],
        description=f"{spec.pretty_name} as a self-contained release folder: Parquet shards per config and split with"
        " images embedded, dataset card, croissant.json, ATTRIBUTION.csv, provenance.parquet.",
    )
    def _release(context: AssetExecutionContext, warehouse: WarehouseResource, blob_store: BlobStoreResource,
                 releases: ReleaseSettings) -> MaterializeResult:
        folder = release_folder(releases, spec.dataset, context.run.tags)
        withheld = releases.withheld(spec.dataset)
        params = {"folder": str(folder), "withhold_images": withheld, "images": releases.images,
                  "shard_max_bytes": releases.shard_max_bytes}
        with recorded_step(context, warehouse.get_warehouse(), params) as step:
            summary = write_release(step, blob_store.get_store(), spec, folder, withheld_values=withheld,
                                    images=releases.images, shard_max_bytes=releases.shard_max_bytes,
                                    version=aesforge_version())
            step.counts["withheld_images"] = summary.withheld_images
        return step.result()

    return _release
