"""Fixtures shared by the pipeline tests: the synthetic r/photocritique archive and its expected outcome; the
loopback model server's keys."""

import json
from pathlib import Path

import pytest

from sample.reddit_fixture import write_fixture
from tests.pipelines.critique_harness import GEMINI_KEY, OPENAI_KEY


@pytest.fixture(scope="module")
def archive(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("reddit_fixture")
    write_fixture(out)
    return out


@pytest.fixture(scope="module")
def expected(archive: Path) -> dict:
    return json.loads((archive / "expected.json").read_text(encoding="utf-8"))


@pytest.fixture
def keys(monkeypatch):
    """The loopback model server's API keys, in the variables the critique configs name."""
    monkeypatch.setenv("LOOP_OPENAI_KEY", OPENAI_KEY)
    monkeypatch.setenv("LOOP_GEMINI_KEY", GEMINI_KEY)
