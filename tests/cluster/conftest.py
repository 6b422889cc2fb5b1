"""Fixtures of the distributed-execution tests: a real PostgreSQL server for the Dagster instance's storage."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.postgres_server import PostgresServer, binaries, postgres_server

DAGSTER_DB = "dagster"


@pytest.fixture(scope="module")
def postgres() -> Iterator[PostgresServer]:
    """A server with the empty database ``dagster``; skipped, saying why, only where no server binaries exist
    (``.ci/run`` installs Debian's ``postgresql`` first, so CI never skips)."""
    if binaries() is None:
        pytest.skip("no PostgreSQL server binaries (initdb, pg_ctl) on this machine: apt-get install postgresql")
    with postgres_server(databases=(DAGSTER_DB,)) as server:
        yield server
