import json
from pathlib import Path

import pytest

from assets.poetry.logic import poems as poems_module
from assets.poetry.logic.poems import (
    BAD_POEM_ID,
    BAD_THEMES,
    DUPLICATE_POEM_ID,
    EMPTY_FIELD,
    MISSING_FIELD,
    NOT_AN_OBJECT,
    WRONG_TYPE,
    Poem,
    PoemCorpusError,
    PoemRejection,
    illustration_prompt,
    illustration_template,
    read_poems,
)
from assets.core.logic.textfiles import RAGGED_ROW
from warehouse.ids import digest_of

GOOD = {"poem_id": "tang-001", "title": "静夜思", "author": "李白", "text": "床前明月光，\n疑是地上霜。",
        "translation": "Moonlight at my bed.", "themes": ["night", "moon"], "form": "quatrain", "source": "test"}


def _write(tmp_path: Path, name: str, content: str | bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
    return path


def _reasons(results: list) -> list[tuple[str, str]]:
    return [(r.locator, r.reason_code) for r in results if isinstance(r, PoemRejection)]


def test_json_list_reads_poem_with_locator_digest_and_entity_id(tmp_path):
    path = _write(tmp_path, "poems.json", json.dumps([GOOD, {**GOOD, "poem_id": "tang-002", "extra": 1}]))
    first, second = read_poems(path)
    assert first == Poem("tang-001", "静夜思", "李白", "床前明月光，\n疑是地上霜。", "Moonlight at my bed.",
                         ("night", "moon"), "quatrain", "test", "poems.json#record=0")
    assert second.locator == "poems.json#record=1"  # unknown "extra" field ignored
    expected = digest_of({"title": "静夜思", "author": "李白", "text": "床前明月光，\n疑是地上霜。",
                          "translation": "Moonlight at my bed."})
    assert first.content_sha256 == expected == second.content_sha256  # the id is not part of the content
    assert first.entity_id == f"poem:{expected}"
    assert first.as_dict()["themes"] == ["night", "moon"]


def test_json_object_with_poems_key_skips_other_keys_and_normalises_text(tmp_path):
    record = {"poem_id": "p.1", "title": " T ", "author": "A", "text": "line one  \r\nline two\r\n\r\n"}
    path = _write(tmp_path, "c.json", json.dumps({"about": {"nested": [1, {"x": "]"}]}, "poems": [record]}))
    (poem,) = read_poems(path)
    assert (poem.title, poem.text, poem.translation, poem.themes, poem.form) == ("T", "line one\nline two", None, (), None)


def test_json_rejections_each_reason_and_reading_continues(tmp_path):
    records = [
        GOOD,
        {**GOOD, "poem_id": "tang-001"},                  # 1 duplicate, names record 0
        {k: v for k, v in GOOD.items() if k != "author"},   # 2 missing
        {**GOOD, "poem_id": "x", "title": "   "},          # 3 empty
        {**GOOD, "poem_id": "bad id/1"},                  # 4 bad characters
        {**GOOD, "poem_id": "y", "themes": "night"},        # 5 themes not a list
        {**GOOD, "poem_id": "z", "themes": ["ok", 3]},      # 6 a non-string theme
        {**GOOD, "poem_id": 7},                            # 7 a number for the id
        {**GOOD, "poem_id": "w", "translation": ["x"]},     # 8 optional field of the wrong type
        "not a poem",                                      # 9
        {**GOOD, "poem_id": "tang-009"},                   # 10 fine
    ]
    results = list(read_poems(_write(tmp_path, "poems.json", json.dumps(records))))
    assert len(results) == 11
    assert _reasons(results) == [(f"poems.json#record={i}", code) for i, code in [
        (1, DUPLICATE_POEM_ID), (2, MISSING_FIELD), (3, EMPTY_FIELD), (4, BAD_POEM_ID), (5, BAD_THEMES),
        (6, BAD_THEMES), (7, WRONG_TYPE), (8, WRONG_TYPE), (9, NOT_AN_OBJECT)]]
    assert "already read at poems.json#record=0" in results[1].detail
    assert results[6].detail == "themes[1] is a number, not text"
    assert [r.poem_id for r in results if isinstance(r, Poem)] == ["tang-001", "tang-009"]


def test_json_streams_records_across_buffer_boundaries(tmp_path, monkeypatch):
    monkeypatch.setattr(poems_module, "_CHUNK_CHARS", 7)  # every record and number spans several reads
    records = [{**GOOD, "poem_id": f"p{i}", "form": None, "themes": [], "n": 123456789} for i in range(5)]
    results = list(read_poems(_write(tmp_path, "p.json", json.dumps({"n": 12345678901, "poems": records}))))
    assert [r.poem_id for r in results] == ["p0", "p1", "p2", "p3", "p4"]


def test_json_broken_part_way_keeps_earlier_records_and_rejects_the_rest_at_the_break(tmp_path):
    text = json.dumps([GOOD])[:-1] + ', {"poem_id": "b", "title": }, ' + json.dumps(GOOD) + "]"
    first, rest = list(read_poems(_write(tmp_path, "broken.json", text)))
    assert first.poem_id == "tang-001"
    assert (rest.locator, rest.reason_code) == ("broken.json#record=1", "invalid_json")
    assert "record 1 is not valid JSON" in rest.detail and "everything after it is not read" in rest.detail


def test_json_broken_after_the_last_record_rejects_the_tail(tmp_path):
    results = list(read_poems(_write(tmp_path, "c.json", json.dumps([GOOD])[:-1])))
    assert results[0].poem_id == "tang-001" and results[1].reason_code == "invalid_json"
    assert "expected ','" in results[1].detail


def test_json_not_utf8_part_way_keeps_earlier_records(tmp_path):
    text = json.dumps([GOOD, {**GOOD, "poem_id": "b"}]).encode()
    cut = text.index(b'"b"')
    results = list(read_poems(_write(tmp_path, "latin.json", text[:cut] + b'"\xe9"' + text[cut + 3:])))
    assert [type(r).__name__ for r in results] == ["Poem", "PoemRejection"]
    assert results[1].reason_code == "bad_encoding"


@pytest.mark.parametrize("content, message", [
    ('{"other": []}', 'no "poems" list'),
    ('"just text"', "expected a JSON list"),
    ("", "expected a JSON list"),
])
def test_json_whole_file_problems_raise(tmp_path, content, message):
    with pytest.raises(PoemCorpusError, match=message):
        list(read_poems(_write(tmp_path, "c.json", content)))


def test_a_csv_line_that_is_not_utf8_is_that_rows_rejection(tmp_path):
    results = list(read_poems(_write(tmp_path, "c.csv", b"poem_id,title,author,text\nx,\xff\xfe,a,b\ny,t,a,b\n")))
    assert _reasons(results) == [("c.csv#line=2", "bad_encoding")] and results[1].poem_id == "y"


def test_undecodable_missing_and_unsupported_files_raise(tmp_path):
    with pytest.raises(PoemCorpusError, match="c.csv: no usable row") as info:
        list(read_poems(_write(tmp_path, "c.csv", b"\x00\xff\xfe\n\x89PNG\x00\n")))
    assert info.value.reason_code == "bad_encoding"
    with pytest.raises(PoemCorpusError, match="e.csv: the file is empty") as info:
        list(read_poems(_write(tmp_path, "e.csv", b"")))
    with pytest.raises(PoemCorpusError, match="nope.json: cannot be opened"):
        list(read_poems(tmp_path / "nope.json"))
    with pytest.raises(PoemCorpusError, match="unsupported file type '.txt'"):
        list(read_poems(_write(tmp_path, "c.txt", "x")))


def test_csv_rows_located_by_their_first_line_with_themes_and_rejections(tmp_path):
    csv_text = (
        "\ufeffpoem_id,title,author,text,themes,form,unused\n"   # line 1 (BOM dropped)
        'tang-001,静夜思,李白,"床前明月光，\n疑是地上霜。",night; moon ;,quatrain,z\n'  # lines 2-3
        "\n"                                                       # line 4 blank
        'tang-002,T,A,X,"[""a"", ""b""]",,\n'                       # line 5 JSON list in the cell
        "tang-003,T,,X,,,\n"                                       # line 6 empty author
        "tang-004,T,A,X,,,,oops\n"                                 # line 7 extra cell with text
        "tang-005,T,A,X,,,\n"                                      # line 8
        'tang-006,T,A,X,"[""a"",",,\n'                             # line 9 broken JSON list
        "tang-002,T,A,Y,,,\n"                                      # line 10 duplicate of line 5
    )
    results = list(read_poems(_write(tmp_path, "poems.csv", csv_text)))
    poems = [r for r in results if isinstance(r, Poem)]
    assert [(p.poem_id, p.locator, p.themes) for p in poems] == [
        ("tang-001", "poems.csv#line=2", ("night", "moon")), ("tang-002", "poems.csv#line=5", ("a", "b")),
        ("tang-005", "poems.csv#line=8", ())]
    assert poems[0].text == "床前明月光，\n疑是地上霜。" and poems[0].form == "quatrain" and poems[1].form is None
    assert _reasons(results) == [("poems.csv#line=6", EMPTY_FIELD), ("poems.csv#line=7", RAGGED_ROW),
                                 ("poems.csv#line=9", BAD_THEMES), ("poems.csv#line=10", DUPLICATE_POEM_ID)]


def test_csv_missing_required_column_raises_on_row_1(tmp_path):
    with pytest.raises(PoemCorpusError, match=r"poems.csv: line 1: missing column\(s\) author"):
        list(read_poems(_write(tmp_path, "poems.csv", "poem_id,title,text\nx,t,y\n")))


def test_illustration_prompt_fills_template_and_forbids_text():
    template = illustration_template()
    assert (template.id, template.version) == ("poetry/illustration_v1", "1") and len(template.sha256) == 64
    poem = Poem("tang-001", "静夜思", "李白", "床前明月光，\n疑是地上霜。", "Moonlight", (), None, None, "x#record=0")
    prompt = illustration_prompt(poem)
    assert '"静夜思" by 李白' in prompt and "床前明月光，\n疑是地上霜。" in prompt
    assert "Moonlight" not in prompt and "$" not in prompt
    for technique in ("Gongbi", "Shuimo", "Xieyi", "Mogu", "Baimiao", "mineral or plant pigments"):
        assert technique in prompt
    assert "no writing of any kind" in prompt and "calligraphy" in prompt and "period" in prompt
    with pytest.raises(ValueError, match="no illustration prompt template version '9'"):
        illustration_template("9")
