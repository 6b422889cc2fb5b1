"""Fixtures shared by the pipeline tests: the synthetic r/photocritique archive and its expected outcome."""

import json
from pathlib import Path

import pytest

from sample.reddit_fixture import write_fixture


@pytest.fixture(scope="module")
def archive(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("reddit_fixture")
    write_fixture(out)
    return out


@pytest.fixture(scope="module")
def expected(archive: Path) -> dict:
    return json.loads((archive / "expected.json").read_text(encoding="utf-8"))
