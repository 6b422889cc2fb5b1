"""Pure evaluation logic: metrics, aggregation, statistics, protocol arithmetic (no Dagster, no DuckDB)."""
