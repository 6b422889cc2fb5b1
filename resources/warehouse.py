"""The DuckDB warehouse as a Dagster resource."""

from __future__ import annotations

from dagster import ConfigurableResource
from pydantic import Field

from resources.config_paths import ConfigPath
from warehouse.db import Warehouse


class WarehouseResource(ConfigurableResource):
    """Where lineage, provenance and every stage's rows live: one DuckDB file."""

    path: ConfigPath = Field(default="data/warehouse.duckdb", description="DuckDB file; created with its schema on first use")
    lock_timeout_s: float = Field(
        default=900.0, description="How long a step waits for another process to release the warehouse"
    )

    def get_warehouse(self) -> Warehouse:
        return Warehouse(self.path, lock_timeout_s=self.lock_timeout_s)
