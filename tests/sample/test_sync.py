"""Installing a rebuilt sample: only changed files are written, so their times (and the run's plan) are kept."""

from sample.sync import sync_tree


def test_sync_writes_changed_files_keeps_the_rest_and_removes_what_the_build_lacks(tmp_path):
    built, target = tmp_path / "built", tmp_path / "target"
    (built / "a").mkdir(parents=True)
    (built / "a" / "same.txt").write_text("same")
    (built / "a" / "new.txt").write_text("new content")
    (target / "a").mkdir(parents=True)
    (target / "gone").mkdir()
    (target / "a" / "same.txt").write_text("same")
    (target / "a" / "new.txt").write_text("old content")
    (target / "gone" / "stale.txt").write_text("stale")
    kept_time = (target / "a" / "same.txt").stat().st_mtime_ns

    counts = sync_tree(built, target)

    assert counts == {"written": 1, "kept": 1, "removed": 1}
    assert (target / "a" / "new.txt").read_text() == "new content"
    assert (target / "a" / "same.txt").stat().st_mtime_ns == kept_time
    assert not (target / "gone").exists()
