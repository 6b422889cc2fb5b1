"""The generated Crello-format sample every design asset test reads."""

from pathlib import Path

import pytest

from sample.design_fixture import build_design_fixture


@pytest.fixture(scope="module")
def fixture_dir(tmp_path_factory) -> tuple[Path, dict]:
    """The sample's designs (v4, v5, broken records, Parquet) and what they must ingest to."""
    out = tmp_path_factory.mktemp("designs")
    return out, build_design_fixture(out)
