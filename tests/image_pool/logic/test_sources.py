"""Manifest and folder reading: every line and every image-named entry becomes exactly one row or one
manifest-level problem, whatever the bytes."""

import json
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assets.image_pool.logic import sources
from assets.image_pool.logic.sources import FolderDefaults, folder_row, read_manifest, scan_folder, source_row

HEADER = "locator,title,creator,provider,source_url,license,redistribution,domain\n"


def _write(path, text):
    path.write_text(text, encoding="utf-8")
    return path


def _root(path):
    """The root names are relative to: a config folder beside the files, as in the sample project."""
    return path.parent / "config"


def _rows(path):
    return [source_row(row, _root(path)) for row in read_manifest(path, _root(path))]


def test_csv_rows_resolve_paths_and_keep_provenance(tmp_path):
    manifest = _write(
        tmp_path / "m.csv",
        HEADER + "img/a.png,A,,Museum,https://m.invalid/a,CC0-1.0,allowed,Painting\n"
        "https://host.invalid/b.jpg,,Ann,Web,,CC-BY-4.0,,photography\n",
    )
    a, b = _rows(manifest)
    assert a.problem is None and a.locator == "../img/a.png" and a.source_name == "../m.csv"
    assert (a.creator, a.domain, a.redistribution) == ("unknown", "painting", "allowed")
    assert b.source_url == "https://host.invalid/b.jpg" and b.title == "b.jpg" and b.redistribution == "unknown"
    (bare,) = _rows(_write(tmp_path / "n.csv", "locator,license,domain\nimg/c.png,CC0-1.0,virtual\n"))
    assert (bare.provider, bare.creator) == ("unknown", "unknown")  # missing provenance is said, never inferred
    assert bare.source_url == "../img/c.png"  # the file's name as a relative reference
    assert a.record_id.startswith("source_record:") and a.record_id != b.record_id
    assert a.record_id == _rows(manifest)[0].record_id  # content-derived, stable


@pytest.mark.parametrize(
    ("row", "reason", "names"),
    [
        (",T,,P,,CC0-1.0,allowed,painting", sources.MISSING_FIELD, "'locator'"),
        ("x.png,T,,P,,CC0-1.0,allowed,", sources.MISSING_FIELD, "'domain'"),
        ("x.png,T,,P,,CC0-1.0,allowed,sculpture", sources.INVALID_DOMAIN, "sculpture"),
        ("x.png,T,,P,,,allowed,painting", sources.MISSING_FIELD, "'license'"),
        ("x.png,T,,P,,CC0-1.0,maybe,painting", sources.INVALID_REDISTRIBUTION, "maybe"),
        ("x.png,T,,P,,CC0-1.0,allowed,painting,surplus", "ragged_row", "9 fields"),
        ("x.png,Caf\xe9,,P,,CC0-1.0,allowed,painting", "bad_encoding", "e9"),
    ],
)
def test_bad_csv_rows_are_kept_with_a_reason_naming_the_file_and_line(tmp_path, row, reason, names):
    manifest = tmp_path / "m.csv"
    manifest.write_bytes((HEADER + "ok.png,T,,P,,CC0-1.0,allowed,painting\n" + row + "\n").encode("latin-1"))
    parsed = _rows(manifest)
    bad = parsed[-1]
    assert bad.problem[0] == reason and names in bad.problem[1]
    assert bad.problem[1].startswith(f"../m.csv: line {len(parsed) + 1}")
    assert bad.extra["line"] == len(parsed) + 1
    assert all(r.problem is None for r in parsed[:-1])


def test_header_vocabulary_is_locator_url_or_path_in_any_case_and_spacing(tmp_path):
    for column in ("locator", "url", "path", " Path ", "URL", "LoCaToR"):
        manifest = _write(tmp_path / "m.csv", f"{column},License , DOMAIN\nimg/a.png,CC0-1.0,virtual\n")
        (row,) = _rows(manifest)
        assert row.problem is None and row.locator.endswith("img/a.png"), column
    (jsonl,) = _rows(_write(tmp_path / "m.jsonl", json.dumps({" Path": "a.png", "LICENSE": "CC0-1.0", "Domain": "virtual"}) + "\n"))
    assert jsonl.problem is None and jsonl.license == "CC0-1.0"


@pytest.mark.parametrize(
    ("data", "reason", "says"),
    [
        (b"", "empty_file", "empty"),
        (b"locator,license,domain\n", "empty_file", "header but no rows"),
        (b"\n\n", "empty_file", "empty"),
        (b"title,license\nx,CC0-1.0\n", "bad_header", "no locator, url or path column"),
        (b"URL,url\nx,y\n", "bad_header", "twice"),
        (b"locator,,domain\nx,y,z\n", "bad_header", "blank column name"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00", "bad_encoding", "header line is unreadable"),
        (b"loc\xe9tor,license\nx,y\n", "bad_encoding", "header line is unreadable"),
    ],
)
def test_a_manifest_that_cannot_be_read_is_one_file_level_problem(tmp_path, data, reason, says):
    manifest = tmp_path / "m.csv"
    manifest.write_bytes(data)
    (row,) = read_manifest(manifest, _root(manifest))
    assert row.file_level and row.problem[0] == reason and says in row.problem[1]


def test_bom_crlf_and_blank_lines_are_accepted(tmp_path):
    manifest = tmp_path / "m.csv"
    manifest.write_bytes(b"\xef\xbb\xbflocator,license,domain\r\n\r\na.png,CC0-1.0,virtual\r\n\r\nb.png,CC0-1.0,virtual\r\n")
    rows = list(read_manifest(manifest, _root(manifest)))
    assert [(r.line, source_row(r, _root(manifest)).problem) for r in rows] == [(3, None), (5, None)]


def test_duplicate_ids_and_rows_keep_the_first_and_name_its_line(tmp_path):
    manifest = _write(tmp_path / "m.csv", "id,locator,license,domain\n"
                      "p1,a.png,CC0-1.0,virtual\np2,b.png,CC0-1.0,virtual\n p1 ,c.png,CC0-1.0,virtual\n"
                      ",d.png,CC0-1.0,virtual\n,d.png,CC0-1.0,virtual\n")
    rows = _rows(manifest)
    assert [r.problem[0] if r.problem else None for r in rows] == [None, None, "duplicate_id", None, "duplicate_row"]
    assert "line 4" in rows[2].problem[1] and "line 2's" in rows[2].problem[1]
    assert "repeats line 5" in rows[4].problem[1] and rows[4].record_id != rows[3].record_id
    assert rows[2].locator.endswith("c.png")  # the duplicate keeps what it said, for the user to find


def test_jsonl_bad_lines_do_not_stop_the_stream(tmp_path):
    good = {"locator": "a.png", "license": "CC0-1.0", "domain": "virtual"}
    manifest = tmp_path / "m.jsonl"
    manifest.write_bytes((json.dumps(good) + "\n{not json\n[1,2]\n\n").encode() + b'{"locator": "\xe9"}\n'
                         + (json.dumps(good | {"locator": "b.png"}) + "\n").encode())
    rows = _rows(manifest)
    assert [r.problem[0] if r.problem else None for r in rows] == [None, "invalid_json", sources.MALFORMED_ROW, "bad_encoding", None]
    assert [r.extra.get("line") for r in rows[1:4]] == [2, 3, 5]
    assert rows[1].locator == "../m.jsonl#line=2"  # a row with no readable locator points at its line
    assert len({r.record_id for r in rows}) == len(rows)


def test_an_unusable_locator_is_a_rejection_not_a_crash(tmp_path):
    manifest = _write(tmp_path / "m.jsonl", json.dumps({"locator": "a\u0000b.png", "license": "CC0-1.0", "domain": "virtual"}) + "\n"
                      + json.dumps({"url": "http://[::1", "license": "CC0-1.0", "domain": "virtual"}) + "\n")
    assert [r.problem[0] for r in _rows(manifest)] == [sources.INVALID_LOCATOR, sources.INVALID_LOCATOR]


def test_rejected_rows_of_two_manifests_are_two_records(tmp_path):
    one, two = (_write(tmp_path / name, HEADER + "x.png,T,,P,,,allowed,painting\n") for name in ("a.csv", "b.csv"))
    assert _rows(one)[0].record_id != _rows(two)[0].record_id


_DEFAULTS = FolderDefaults(provider="me", license="CC0-1.0", domain="photography")


def _folder(tmp_path, defaults=_DEFAULTS):
    return {entry.path.name: folder_row(tmp_path, entry, defaults, _root(tmp_path)) for entry in scan_folder(tmp_path)}


def test_folder_domain_from_subfolder_and_defaults(tmp_path):
    (tmp_path / "painting").mkdir()
    (tmp_path / "painting" / "p.png").write_bytes(b"x")
    (tmp_path / "loose.jpg").write_bytes(b"x")
    (tmp_path / "notes.txt").write_text("not an image name")  # listed: the decoder, not the suffix, says it is no image
    (tmp_path / ".DS_Store").write_bytes(b"\0")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "x.png").write_bytes(b"x")
    rows = _folder(tmp_path)
    assert set(rows) == {"p.png", "loose.jpg", "notes.txt"}
    assert rows["p.png"].domain == "painting" and rows["loose.jpg"].domain == "photography"
    assert rows["p.png"].source_type == "folder" and rows["p.png"].provider == "me"
    assert rows["p.png"].content_sha256 == "2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881"


def test_folder_without_domain_or_license_is_rejected_per_file(tmp_path):
    (tmp_path / "a.png").write_bytes(b"x")
    (row,) = _folder(tmp_path, FolderDefaults(provider="me", license=None)).values()
    assert row.problem[0] == sources.MISSING_FIELD and "'domain'" in row.problem[1] and "folder's config" in row.problem[1]
    (row,) = _folder(tmp_path, FolderDefaults(provider="me", license=None, domain="virtual")).values()
    assert row.problem[0] == sources.MISSING_FIELD and "'license'" in row.problem[1]


def test_odd_folder_entries_each_get_one_row(tmp_path):
    (tmp_path / "x.jpg").mkdir()  # a directory named like an image is walked, never taken for one
    (tmp_path / "x.jpg" / "inside.png").write_bytes(b"inside")
    (tmp_path / "été 東京 photo.png").write_bytes(b"spaces and non-Latin")
    (tmp_path / "dangling.png").symlink_to(tmp_path / "nowhere.png")
    (tmp_path / "loop.jpg").symlink_to(tmp_path / "loop.jpg")
    os.mkfifo(tmp_path / "pipe.jpg")
    rows = _folder(tmp_path)
    assert set(rows) == {"inside.png", "été 東京 photo.png", "dangling.png", "loop.jpg", "pipe.jpg"}
    assert rows["inside.png"].problem is None and rows["été 東京 photo.png"].problem is None
    assert rows["été 東京 photo.png"].locator == f"../{tmp_path.name}/été 東京 photo.png"
    assert rows["été 東京 photo.png"].source_url == f"../{tmp_path.name}/%C3%A9t%C3%A9%20%E6%9D%B1%E4%BA%AC%20photo.png"
    for name in ("dangling.png", "loop.jpg", "pipe.jpg"):
        assert rows[name].problem[0] == sources.UNREADABLE_FILE and name in rows[name].problem[1], name


def test_a_folder_that_cannot_be_listed_is_one_rejected_entry(tmp_path, monkeypatch):
    (tmp_path / "locked").mkdir()
    (tmp_path / "ok.png").write_bytes(b"x")
    real_scandir = os.scandir

    def scandir(path):
        if str(path).endswith("locked"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    rows = _folder(tmp_path)
    assert rows["ok.png"].problem is None
    assert rows["locked"].problem[0] == sources.UNREADABLE_FILE and "cannot be listed" in rows["locked"].problem[1]


# -- properties ------------------------------------------------------------------------------------------------
_VALID = (HEADER + "a.png,A,,P,,CC0-1.0,allowed,painting\nb.png,B,C,P,https://x.invalid/b,CC-BY-4.0,restricted,virtual\n").encode()


def _read_all(path):
    rows = list(read_manifest(path, _root(path)))
    assert sum(r.file_level for r in rows) <= 1 and (not rows[0].file_level or len(rows) == 1)
    return [source_row(r, _root(path)) for r in rows if not r.file_level]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.binary(max_size=400), suffix=st.sampled_from([".csv", ".jsonl"]))
def test_random_bytes_never_raise(tmp_path, data, suffix):
    path = tmp_path / f"m{suffix}"
    path.write_bytes(data)
    for row in _read_all(path):
        assert row.problem is None or row.problem[1].startswith(f"../{path.name}")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.integers(0, len(_VALID)), st.binary(max_size=3)), max_size=6))
def test_mutated_valid_manifests_never_raise(tmp_path, edits):
    data = bytearray(_VALID)
    for position, chunk in edits:
        data[position:position + 1] = chunk
    path = tmp_path / "m.csv"
    path.write_bytes(bytes(data))
    rows = _read_all(path)
    assert all(r.problem is None or r.problem[1].startswith("../m.csv") for r in rows)


_json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
                            lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
                            max_leaves=10)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.dictionaries(st.sampled_from(["locator", "URL", " path", "license", "domain", "id", "title", "x"]),
                                _json_values, max_size=6) | _json_values, max_size=5))
def test_random_jsonl_objects_become_rows_with_an_outcome(tmp_path, values):
    path = tmp_path / "m.jsonl"
    path.write_text("".join(json.dumps(v) + "\n" for v in values), encoding="utf-8")
    rows = _read_all(path)
    assert len(rows) == len(values) or (not values and rows == [])


def test_the_same_manifest_and_folder_in_two_places_give_the_same_records(tmp_path):
    records = []
    for project in (tmp_path / "one", tmp_path / "two" / "deeper"):
        data = project / "data"
        (data / "img").mkdir(parents=True)
        (data / "img" / "a.png").write_bytes(b"same bytes")
        manifest = _write(data / "m.csv", HEADER + "img/a.png,A,,P,,CC0-1.0,allowed,painting\n"
                          f"file://{data / 'img' / 'a.png'},A,,P,,CC0-1.0,allowed,painting\n"  # spelled absolutely
                          "img/b.png,B,,P,,,allowed,painting\n")  # rejected: its id names its manifest
        root = project / "config"
        rows = [source_row(row, root) for row in read_manifest(manifest, root)]
        folder = [folder_row(data / "img", entry, _DEFAULTS, root) for entry in scan_folder(data / "img")]
        records.append([(r.record_id, r.locator, r.source_name, r.source_url, r.problem) for r in rows + folder])
    assert records[0] == records[1]
    assert [locator for _, locator, *_ in records[0]] == ["../data/img/a.png", "../data/img/a.png", "../data/img/b.png",
                                                          "../data/img/a.png"]
