import io

import pytest

from assets.core.logic import sheets
from assets.critique_canvas.logic.audit_sample import SheetError as AuditSheetError
from assets.designs.logic.review_votes import ReviewSheetError
from assets.core.logic.sheets import SheetError, SheetReader


class ToySheetError(SheetError):
    reason_code = "malformed_toy_sheet"
    prefix = "toy sheet"


def _reader(text: str, **options) -> SheetReader:
    return SheetReader(io.StringIO(text), "toy.csv", ("name", "answer"), ToySheetError, **options)


def _rows(reader: SheetReader) -> list[tuple[int, dict[str, str]]]:
    return list(reader)


# --- the error --------------------------------------------------------------------------------------------


def test_error_message_names_sheet_rows_and_whole_sheet_problems():
    error = ToySheetError("toy.csv", [(3, "answer is empty"), (None, "not UTF-8 text"), (7, "name is empty")])
    assert str(error) == "toy sheet toy.csv: row 3: answer is empty; not UTF-8 text; row 7: name is empty"
    assert error.sheet == "toy.csv" and error.reason_code == "malformed_toy_sheet" and isinstance(error, ValueError)
    assert error.problems == [(3, "answer is empty"), (None, "not UTF-8 text"), (7, "name is empty")]


def test_error_message_shows_twenty_then_counts_the_rest_but_keeps_all():
    error = ToySheetError("toy.csv", [(row, "bad") for row in range(2, 32)])   # 30 problems, rows 2..31
    message = str(error)
    assert "row 21: bad" in message and "row 22:" not in message
    assert message.endswith("row 21: bad (and 10 more)")
    assert len(error.problems) == 30
    assert str(ToySheetError("toy.csv", [(row, "bad") for row in range(2, 22)])).endswith("row 21: bad")  # exactly 20


def test_the_sheet_errors_keep_their_codes_and_prefixes():
    for cls, code, prefix in [
        (AuditSheetError, "malformed_audit_sheet", "audit sheet"),
        (ReviewSheetError, "malformed_review_sheet", "review sheet"),
    ]:
        error = cls("s.csv", [(2, "bad")])
        assert isinstance(error, sheets.SheetError) and isinstance(error, ValueError)
        assert error.reason_code == code and str(error) == f"{prefix} s.csv: row 2: bad"
    assert AuditSheetError.__name__ == "SheetError" and AuditSheetError is not sheets.SheetError


# --- the header -------------------------------------------------------------------------------------------


def test_header_bom_and_spaces_are_stripped_extra_columns_kept():
    reader = _reader("\ufeff name , answer,comment\nana,yes,fine\n")
    assert reader.header == ["name", "answer", "comment"]
    assert _rows(reader) == [(2, {"name": "ana", "answer": "yes", "comment": "fine"})]


def test_missing_columns_raise_at_once_on_row_1():
    with pytest.raises(ToySheetError) as caught:
        _reader("name,verdict\nana,yes\n")
    assert caught.value.problems == [(1, "missing column(s) answer; a returned sheet needs name, answer")]
    with pytest.raises(ToySheetError) as caught:
        _reader("verdict\n", needs="a toy sheet")
    assert str(caught.value) == "toy sheet toy.csv: row 1: missing column(s) name, answer; a toy sheet needs name, answer"


@pytest.mark.parametrize("text", ["", "\n", ",,\n", "\n\nname,answer\n"])
def test_an_empty_sheet_or_first_row_says_so(text):
    with pytest.raises(ToySheetError) as caught:
        _reader(text)
    assert caught.value.problems == [
        (1, "the sheet is empty; missing column(s) name, answer; a returned sheet needs name, answer")
    ]


# --- rows -------------------------------------------------------------------------------------------------


def test_row_numbers_follow_the_spreadsheet_blank_rows_are_counted():
    reader = _reader(
        "name,answer\n"
        "ana,yes\n"               # row 2
        "\n"                      # row 3: empty line, still a spreadsheet row
        ' , \n'                   # row 4: only spaces
        'bo,"two\nlines"\n'       # row 5, over two physical lines
        "cy,no\n"                 # row 6
    )
    assert _rows(reader) == [
        (2, {"name": "ana", "answer": "yes"}),
        (5, {"name": "bo", "answer": "two\nlines"}),
        (6, {"name": "cy", "answer": "no"}),
    ]
    assert reader.blank == 2 and reader.problems == []
    reader.finish()   # nothing wrong: no error


def test_short_rows_read_missing_cells_as_empty_and_cells_are_stripped():
    assert _rows(_reader("name,answer,comment\n  ana  \n")) == [(2, {"name": "ana", "answer": "", "comment": ""})]


def test_extra_cells_strict_any_extra_cell_is_a_problem():
    reader = _reader("name,answer\nana,yes,\nbo,no,x,y\ncy,no\n,,,\n")
    assert _rows(reader) == [(4, {"name": "cy", "answer": "no"})]
    assert reader.problems == [(2, "1 more cell(s) than the header has columns"), (3, "2 more cell(s) than the header has columns")]
    assert reader.blank == 1   # row 5 holds no text at all: blank, however many commas
    with pytest.raises(ToySheetError, match="^toy sheet toy.csv: row 2: 1 more cell"):
        reader.finish()


def test_extra_cells_lenient_only_text_beyond_the_header_is_a_problem():
    reader = _reader("name,answer\nana,yes,,\nbo,no,x,\n", trailing_empty_cells_ok=True)
    assert _rows(reader) == [(2, {"name": "ana", "answer": "yes"})]
    assert reader.problems == [(3, "2 more cell(s) than the header's 2 columns")]


def test_is_blank_counts_unanswered_rows_after_the_extra_cell_check():
    reader = _reader("name,answer\nana,\nbo,yes\ncy,,x\n", is_blank=lambda cells: not cells["answer"])
    assert _rows(reader) == [(3, {"name": "bo", "answer": "yes"})]
    assert reader.blank == 1                                                     # row 2: named, not answered
    assert reader.problems == [(4, "1 more cell(s) than the header has columns")]  # row 4: extra text wins


def test_earlier_row_and_parser_problems_end_in_one_error():
    reader = _reader("name,answer\nana,yes\nbo,no\nana,no\n")
    for row, cells in reader:
        earlier = reader.earlier_row(cells["name"], row)
        if earlier is not None:
            reader.problem(row, f"{cells['name']} already answered on row {earlier}")
    assert reader.earlier_row("bo", 99) == 3   # the first row stays the one named
    with pytest.raises(ToySheetError) as caught:
        reader.finish()
    assert caught.value.problems == [(4, "ana already answered on row 2")]


# --- opening a sheet file -----------------------------------------------------------------------------------


def _parse_rows(stream, name: str) -> list[tuple[int, dict[str, str]]]:
    return list(SheetReader(stream, name, ("name", "answer"), ToySheetError))


def test_read_sheet_file_parses_utf8_with_a_byte_order_mark(tmp_path):
    path = tmp_path / "toy.csv"
    path.write_bytes("\ufeffname,answer\nZoë,yes\n".encode("utf-8"))
    assert sheets.read_sheet_file(path, _parse_rows, ToySheetError) == [(2, {"name": "Zoë", "answer": "yes"})]


def test_read_sheet_file_names_each_line_that_is_not_utf8_and_reads_the_others(tmp_path):
    latin = tmp_path / "latin.csv"
    latin.write_bytes("name,answer\nZo\xeb,yes\nAda,no\nB\xf6rk,yes\nCy,maybe\n".encode("latin-1"))
    with pytest.raises(ToySheetError) as info:
        sheets.read_sheet_file(latin, _parse_rows, ToySheetError)
    assert [row for row, _ in info.value.problems] == [2, 4]
    assert "row 2: byte eb at column 3 is not valid UTF-8" in str(info.value)

    def strict(stream, name):  # the sheet's own check fails too: every problem is listed, in row order
        rows = _parse_rows(stream, name)
        raise ToySheetError(name, [(row, "answer must be yes or no") for row, cells in rows if cells["answer"] == "maybe"])

    with pytest.raises(ToySheetError) as info:
        sheets.read_sheet_file(latin, strict, ToySheetError)
    assert [row for row, _ in info.value.problems] == [2, 4, 5]
    kept_apart = []
    rows = sheets.read_sheet_file(latin, _parse_rows, ToySheetError, bad_line=lambda row, detail: kept_apart.append(row))
    assert [row for row, _ in rows] == [3, 5] and kept_apart == [2, 4]
    broken = tmp_path / "broken.csv"
    broken.write_text("name,answer\n" + "x" * 200_000 + ",yes\n", encoding="utf-8")  # beyond csv's field size limit
    with pytest.raises(ToySheetError, match="toy sheet broken.csv: not readable as CSV"):
        sheets.read_sheet_file(broken, _parse_rows, ToySheetError)
