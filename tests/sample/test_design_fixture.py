import json
from pathlib import Path

import duckdb
import numpy as np
import pytest
from PIL import Image

from assets.designs.logic.crello_records import REASON_CODES, read_design_folder
from sample.design_fixture import SPECS, build_design_fixture, main

CRELLO_LIKE_FONTS = {"Montserrat", "Roboto", "Playfair Display", "Open Sans", "Lato", "Oswald", "Raleway"}


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("fixture_a")
    return out, build_design_fixture(out)


def test_fixture_is_byte_identical_between_runs(built, tmp_path):
    first, expected = built
    main(["--out", str(tmp_path)])  # the command-line entry point writes the same thing
    a, b = _files(first), _files(tmp_path)
    assert sorted(a) == sorted(b)
    assert [name for name in a if a[name] != b[name]] == []
    assert json.loads(a["expected.json"]) == expected


def test_fixture_rebuild_replaces_an_old_one(built, tmp_path):
    first, _ = built
    (tmp_path / "v5").mkdir()
    (tmp_path / "v5" / "stale.json").write_text("{}")
    build_design_fixture(tmp_path)
    assert _files(tmp_path) == _files(first)


def test_fixture_layout_and_expected_file(built):
    out, expected = built
    ids = [spec.design_id for spec in SPECS]
    assert len(ids) == 8 and sorted(expected["designs"]) == sorted(ids)
    for design_id, entry in expected["designs"].items():
        assert (out / "v5" / f"{design_id}.json").is_file() and (out / "v4" / f"{design_id}.json").is_file()
        w, h = entry["canvas"]
        assert 400 <= w <= 600 and 400 <= h <= 600
        types = entry["types"]
        assert types[0] == "background"
        assert 1 <= sum(t in ("image", "mask") for t in types) <= 2 and "svg" in types
        assert 2 <= types.count("text") <= 4
        assert set(entry["fonts"]) <= CRELLO_LIKE_FONTS and all(entry["texts"])
        with Image.open(out / "previews" / f"{design_id}.png") as preview:
            assert preview.size == (w, h)
    # every non-text element has a box-sized RGBA layer; text elements have none
    for design_id in ids:
        record = json.loads((out / "v5" / f"{design_id}.json").read_text())
        for i, kind in enumerate(record["type"]):
            if kind == "TextElement":
                assert record["image"][i] is None
                continue
            with Image.open(out / "v5" / record["image"][i]) as layer:
                assert layer.mode == "RGBA"
                assert layer.size == (round(record["width"][i]), round(record["height"][i]))
    # photo layers use transparency (rounded corners, circular masks, cut-out shapes)
    transparent = 0
    for spec in SPECS:
        for i, layer in enumerate(spec.layers):
            if layer.kind in ("image", "mask", "svg"):
                alpha = np.asarray(Image.open(out / "layers" / spec.design_id / f"{i}.png").getchannel("A"))
                transparent += int(alpha.min() < 255)
    assert transparent >= 12
    assert set(expected["broken"].values()) <= set(REASON_CODES)
    assert len(set(expected["broken"].values())) == len(expected["broken"]) >= 12  # one per kind of problem


def test_fixture_v4_is_normalised_and_v5_in_pixels(built):
    out, _ = built
    v5 = json.loads((out / "v5" / "fx-bakery-opening.json").read_text())
    v4 = json.loads((out / "v4" / "fx-bakery-opening.json").read_text())
    assert v5["canvas_width"] == 450 and v4["canvas_width"] == "450"
    assert v5["width"][0] == 450.0 and v4["width"][0] == 1.0
    assert v5["angle"][2] == 12.0 and v4["angle"][2] == pytest.approx(0.20944, abs=1e-5)  # 12 degrees in radians
    assert v5["type"][-1] == "TextElement" and v4["type"][-1] == "textElement"
    assert v5["color"][-1] == [] and v5["text_color"][-1][0] == "rgba(150, 100, 70, 1)"
    assert v4["color"][-1] == [150.0, 100.0, 70.0]


def test_fixture_parquet_is_a_hugging_face_style_export(built):
    out, expected = built
    path = str(out / "designs.parquet")
    con = duckdb.connect()
    rows = con.execute("SELECT id, type, image[1].bytes IS NOT NULL, preview.bytes IS NOT NULL "
                       "FROM read_parquet(?)", [path]).fetchall()
    keys = [bytes(k) for k, in con.execute("SELECT key FROM parquet_kv_metadata(?)", [path]).fetchall()]
    assert b"huggingface" in keys
    assert len(rows) == len(expected["parquet"]["rows"]) == 5
    good = [n for n in range(len(rows)) if n not in expected["parquet"]["broken_rows"]]
    assert [rows[n][0] for n in good] == [expected["parquet"]["rows"][str(n)] for n in good] == \
        [spec.design_id for spec in SPECS[:4]]
    assert all(isinstance(t, int) for r in rows for t in r[1])  # integer class labels, as datasets writes them
    assert all(r[2] and r[3] for r in rows)


def test_fixture_folders_read_cleanly(built):
    out, expected = built
    reads = list(read_design_folder(out / "v5")) + list(read_design_folder(out / "v4"))
    assert len(reads) == 16 and all(r.ok for r in reads)
    assert {r.design.design_id for r in reads} == set(expected["designs"])


def test_fixture_bold_headlines_survive_both_encodings_and_render_bold(built):
    from assets.designs.logic.render import render_design
    from assets.designs.logic.fonts import FontResolver

    out, expected = built
    bold = {design_id: entry["bold"] for design_id, entry in expected["designs"].items() if entry["bold"]}
    assert bold == {"fx-bakery-opening": [3], "fx-travel-story": [4]}  # the two headlines
    v5 = json.loads((out / "v5" / "fx-bakery-opening.json").read_text())
    v4 = json.loads((out / "v4" / "fx-bakery-opening.json").read_text())
    assert v5["font_bold"][3] == [True] * len("Grand Opening") and v5["font_bold"][4] == [False] * len("Fresh bread from 6am")
    assert v4["font_bold"] == [False, False, False, True, False, False]  # the documented per-element v4 extension
    plain = json.loads((out / "v4" / "fx-summer-sale.json").read_text())
    assert "font_bold" not in plain  # designs without bold text stay genuine v4
    resolver = FontResolver()
    if not resolver.family_faces("DejaVu Sans"):
        pytest.skip("DejaVu fonts (fonts-dejavu-core) are not installed")
    for reads in (read_design_folder(out / "v5", layer_refs="path"), read_design_folder(out / "v4", layer_refs="path")):
        for read in reads:
            if read.design.design_id not in bold:
                continue
            index = bold[read.design.design_id][0]
            assert [i for i, e in enumerate(read.design.elements) if e.bold] == [index]
            result = render_design(read.design, Image.open, fonts=resolver)
            element_id = read.design.elements[index].element_id
            assert "Bold" in result.fonts_used[element_id].style
            assert not any("overflows" in w for w in result.warnings), result.warnings
