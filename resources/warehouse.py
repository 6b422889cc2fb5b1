"""The DuckDB warehouse as a Dagster resource."""

from __future__ import annotations

from dagster import ConfigurableResource

from resources.warehouse_settings import WarehouseSettings


class WarehouseResource(ConfigurableResource, WarehouseSettings):
    """Where lineage, provenance and every stage's rows live: one DuckDB file (the fields and ``get_warehouse`` are
    ``WarehouseSettings``', shared with the commands that read the section without Dagster)."""
