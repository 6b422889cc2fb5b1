"""Fixtures shared across test packages."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass

import json
from pathlib import Path

import pytest

from sample.reddit_fixture import write_fixture
from tests.support.critique_harness import GEMINI_KEY, OPENAI_KEY

# --- s3_server: moto's S3 in server mode on 127.0.0.1 (used by tests/resources) -------------


@dataclass(frozen=True)
class S3Server:
    """Where the test S3 listens; pass both to ``S3Resource`` or ``boto3.client``."""

    endpoint_url: str
    region_name: str


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    """A real HTTP S3 endpoint (moto), with dummy credentials so boto never finds real ones.

    Buckets are not created here: each test makes its own, so tests stay independent.
    """
    from moto.server import ThreadedMotoServer

    with pytest.MonkeyPatch.context() as env:
        env.setenv("AWS_ACCESS_KEY_ID", "testing")
        env.setenv("AWS_SECRET_ACCESS_KEY", "testing")
        env.setenv("AWS_DEFAULT_REGION", "us-east-1")
        env.setenv("AWS_CONFIG_FILE", os.devnull)
        env.setenv("AWS_SHARED_CREDENTIALS_FILE", os.devnull)
        for name in ("AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN", "AWS_PROFILE"):
            env.delenv(name, raising=False)
        server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        server.start()
        try:
            host, port = server.get_host_and_port()
            yield S3Server(endpoint_url=f"http://{host}:{port}", region_name="us-east-1")
        finally:
            server.stop()


# --- end s3_server ----------------------------------------------------------------------------


# --- the synthetic r/photocritique archive and its expected outcome; the loopback model server's keys ---------

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
