import json

import pytest

from assets.lib import sources
from assets.lib.sources import FolderDefaults, read_manifest, scan_folder


def _write(path, text):
    path.write_text(text, encoding="utf-8")
    return path


def test_csv_rows_resolve_paths_and_keep_provenance(tmp_path):
    manifest = _write(
        tmp_path / "m.csv",
        "locator,title,creator,provider,source_url,license,redistribution,domain\n"
        "img/a.png,A,,Museum,https://m.invalid/a,CC0-1.0,allowed,Painting\n"
        "https://host.invalid/b.jpg,,Ann,Web,,CC-BY-4.0,,photography\n",
    )
    a, b = list(read_manifest(manifest))
    assert a.problem is None and a.locator == str((tmp_path / "img/a.png").resolve())
    assert (a.creator, a.domain, a.redistribution) == ("unknown", "painting", "allowed")
    assert b.source_url == "https://host.invalid/b.jpg" and b.title == "b.jpg" and b.redistribution == "unknown"
    bare = next(read_manifest(_write(tmp_path / "n.csv", "locator,license,domain\nimg/c.png,CC0-1.0,virtual\n")))
    assert (bare.provider, bare.creator) == ("unknown", "unknown")  # missing provenance is said, never inferred
    assert bare.source_url == (tmp_path / "img/c.png").resolve().as_uri()
    assert a.record_id.startswith("source_record:") and a.record_id != b.record_id
    assert a.record_id == next(read_manifest(manifest)).record_id  # content-derived, stable


@pytest.mark.parametrize(
    ("row", "reason"),
    [
        (",T,,P,,CC0-1.0,allowed,painting", sources.MISSING_LOCATOR),
        ("x.png,T,,P,,CC0-1.0,allowed,sculpture", sources.INVALID_DOMAIN),
        ("x.png,T,,P,,,allowed,painting", sources.MISSING_LICENSE),
        ("x.png,T,,P,,CC0-1.0,maybe,painting", sources.INVALID_REDISTRIBUTION),
        ("x.png,T,,P,,CC0-1.0,allowed,painting,surplus", sources.MALFORMED_ROW),
    ],
)
def test_bad_csv_rows_are_kept_with_a_reason(tmp_path, row, reason):
    manifest = _write(tmp_path / "m.csv", "locator,title,creator,provider,source_url,license,redistribution,domain\n" + row + "\n")
    (parsed,) = list(read_manifest(manifest))
    assert parsed.problem[0] == reason
    assert parsed.extra["line"] == 2


def test_jsonl_bad_lines_do_not_stop_the_stream(tmp_path):
    good = {"locator": "a.png", "license": "CC0-1.0", "domain": "virtual"}
    manifest = _write(tmp_path / "m.jsonl", json.dumps(good) + "\n{not json\n[1,2]\n\n" + json.dumps(good | {"locator": "b.png"}) + "\n")
    rows = list(read_manifest(manifest))
    assert [r.problem[0] if r.problem else None for r in rows] == [None, sources.MALFORMED_ROW, sources.MALFORMED_ROW, None]
    assert rows[1].extra["raw"].startswith("{not json")


def test_csv_without_locator_column_is_a_clear_error(tmp_path):
    manifest = _write(tmp_path / "m.csv", "title,license\nx,CC0-1.0\n")
    with pytest.raises(ValueError, match="locator"):
        list(read_manifest(manifest))


def test_folder_domain_from_subfolder_and_defaults(tmp_path):
    (tmp_path / "painting").mkdir()
    (tmp_path / "painting" / "p.png").write_bytes(b"x")
    (tmp_path / "loose.jpg").write_bytes(b"x")
    (tmp_path / "notes.txt").write_text("not an image name")
    rows = dict(scan_folder(tmp_path, FolderDefaults(provider="me", license="CC0-1.0", domain="photography")))
    by_name = {p.name: r for p, r in rows.items()}
    assert set(by_name) == {"p.png", "loose.jpg"}
    assert by_name["p.png"].domain == "painting" and by_name["loose.jpg"].domain == "photography"
    assert by_name["p.png"].source_type == "folder" and by_name["p.png"].provider == "me"


def test_folder_without_domain_or_license_is_rejected_per_file(tmp_path):
    (tmp_path / "a.png").write_bytes(b"x")
    ((_, row),) = list(scan_folder(tmp_path, FolderDefaults(provider="me", license=None)))
    assert row.problem[0] == sources.INVALID_DOMAIN
