"""The ``warehouse`` config section's keys as a plain pydantic model, without Dagster.

``resources.warehouse.WarehouseResource`` is these fields as a Dagster resource; a command that only reads the
warehouse (``aesforge provenance``) reads the section with this model alone (``pipelines.config.warehouse_settings``)
and so answers without importing Dagster or the clients.
"""

from __future__ import annotations

from typing import Optional

from pydantic import BaseModel, Field

from resources.config_paths import ConfigPath
from warehouse.db import Warehouse


class WarehouseSettings(BaseModel):
    """Where lineage, provenance and every stage's rows live: one DuckDB file."""

    path: ConfigPath = Field(default="data/warehouse.duckdb", description="DuckDB file; created with its schema on first use")
    lock_timeout_s: float = Field(
        default=900.0, description="How long a step waits for another process to release the warehouse"
    )
    project_root: ConfigPath = Field(
        default=".",
        description="Folder local files are named relative to in ids and rows (default: the config file's folder), so"
        " a copy of the project in another folder gives the same ids",
    )
    blob_root: Optional[str] = Field(
        default=None,
        description="Folder of the local blob store, where the views' image paths point; not a key of the file: the"
        " config loader copies blob_store.root here (unset for an S3 store)",
    )

    def get_warehouse(self) -> Warehouse:
        return Warehouse(self.path, lock_timeout_s=self.lock_timeout_s, root=self.project_root, blob_root=self.blob_root)
