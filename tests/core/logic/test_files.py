"""Derived files are rewritten only when their content changes, and never seen half-written."""

import os

from assets.core.logic.files import write_if_changed


def test_an_unchanged_file_keeps_its_time_and_a_changed_one_is_swapped_in(tmp_path):
    path = tmp_path / "reports" / "report.md"
    assert write_if_changed(path, b"first") is True  # its folder is made
    os.utime(path, ns=(1, 1))
    assert write_if_changed(path, b"first") is False and path.stat().st_mtime_ns == 1
    assert write_if_changed(path, b"second") is True and path.read_bytes() == b"second"
    assert sorted(p.name for p in path.parent.iterdir()) == ["report.md"]  # no partial file left beside it
