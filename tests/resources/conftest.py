"""Fixtures shared by the resource tests."""

import io
import logging
from collections.abc import Callable, Iterator

import pytest


@pytest.fixture
def logs() -> Iterator[Callable[[], str]]:
    """Everything logged at any level while the test runs (SDK debug logs included; pytest's logging plugin may
    be off, so a handler of our own)."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setLevel(logging.DEBUG)
    root = logging.getLogger()
    old_level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    try:
        yield stream.getvalue
    finally:
        root.removeHandler(handler)
        root.setLevel(old_level)
