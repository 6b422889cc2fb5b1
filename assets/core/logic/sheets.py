"""Reading filled-in CSV sheets (review, audit, spec and check sheets) with errors that point at spreadsheet rows.

People fill these sheets in spreadsheets, so every problem is reported by the row number a spreadsheet shows (the
header is row 1; an empty line is a row too, and a quoted cell spanning several lines is one row). A sheet is read
whole or not at all: the parser collects every problem and raises one error listing them, so a half-read sheet
never shifts a figure and one round trip fixes every bad row.

``SheetReader`` does the part all sheets share (header, blank rows, cells beyond the header, the problem list,
duplicate keys); each sheet's parser checks the meaning of its rows and raises its own ``SheetError`` subclass,
whose ``reason_code`` and message prefix say which kind of sheet failed.
"""

from __future__ import annotations

import csv
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import ClassVar, TextIO, TypeVar

from assets.core.logic.textfiles import read_lines

T = TypeVar("T")

MAX_SHOWN = 20  # problems spelled out in the message; the rest are counted (all stay in ``problems``)

Problem = tuple[int | None, str]  # (spreadsheet row, or None for the whole sheet; what is wrong)


class SheetError(ValueError):
    """A filled sheet that cannot be read; names the sheet and every offending row.

    Subclasses set ``reason_code`` (stored with the rejected sheet) and ``prefix`` (the kind of sheet, first word(s)
    of the message), e.g. ``audit sheet round1.csv: row 3: reviewer is empty; row 7: ...``.
    """

    reason_code: ClassVar[str] = "malformed_sheet"
    prefix: ClassVar[str] = "sheet"

    def __init__(self, sheet: str, problems: Sequence[Problem]) -> None:
        self.sheet = sheet
        self.problems = list(problems)
        shown = "; ".join(f"row {row}: {text}" if row else text for row, text in self.problems[:MAX_SHOWN])
        more = f" (and {len(self.problems) - MAX_SHOWN} more)" if len(self.problems) > MAX_SHOWN else ""
        super().__init__(f"{self.prefix} {sheet}: {shown}{more}")


class SheetReader:
    """The rows of a CSV sheet as ``(row_number, cells)``, cells keyed by the header and stripped.

    Construction reads the header and raises ``error`` at once when a ``required`` column is missing (reported on
    row 1: without the columns no row can be read). Iterating then yields every row worth checking and keeps
    the rest out of the parser's way:

    - a row with no text in any cell is blank: counted in ``blank``, not yielded;
    - a row with more cells than the header is a problem (an unquoted comma shifts every cell after it, so the
      row cannot be trusted), not yielded. With ``trailing_empty_cells_ok`` only extra cells holding text count,
      since spreadsheets often write empty trailing cells;
    - with ``is_blank``, a row it calls blank (say, the answer cell is still empty) is counted and not yielded;
    - a row shorter than the header reads the missing cells as empty.

    The parser adds its own findings with ``problem`` and calls ``finish`` at the end, which raises ``error``
    listing every problem. ``needs`` names the sheet in the missing-column message ("a returned sheet needs ...").
    """

    def __init__(
        self,
        stream: TextIO,
        sheet: str,
        required: Sequence[str],
        error: type[SheetError],
        *,
        needs: str = "a returned sheet",
        trailing_empty_cells_ok: bool = False,
        is_blank: Callable[[Mapping[str, str]], bool] | None = None,
    ) -> None:
        self.sheet = sheet
        self.error = error
        self.blank = 0
        self.problems: list[Problem] = []
        self._trailing_empty_cells_ok = trailing_empty_cells_ok
        self._is_blank = is_blank
        self._seen: dict[Hashable, int] = {}
        self._reader = csv.reader(stream)  # not DictReader: it skips empty lines, shifting every row number after them
        self.header = [name.strip().lstrip("\ufeff").strip() for name in next(self._reader, [])]
        missing = [column for column in required if column not in self.header]
        if missing:
            empty = "" if any(self.header) else "the sheet is empty; "
            needed = f"{needs} needs {', '.join(required)}"
            raise error(sheet, [(1, f"{empty}missing column(s) {', '.join(missing)}; {needed}")])

    def __iter__(self) -> Iterator[tuple[int, dict[str, str]]]:
        width = len(self.header)
        for row_number, values in enumerate(self._reader, start=2):
            if not any(value.strip() for value in values):
                self.blank += 1
                continue
            extra = values[width:]
            if self._trailing_empty_cells_ok and any(cell.strip() for cell in extra):
                self.problem(row_number, f"{len(extra)} more cell(s) than the header's {width} columns")
                continue
            if not self._trailing_empty_cells_ok and extra:
                self.problem(row_number, f"{len(extra)} more cell(s) than the header has columns")
                continue
            cells = {name: value.strip() for name, value in zip(self.header, values)}
            for name in self.header:
                cells.setdefault(name, "")
            if self._is_blank is not None and self._is_blank(cells):
                self.blank += 1
                continue
            yield row_number, cells

    def problem(self, row: int | None, text: str) -> None:
        """Record what is wrong with ``row`` (None: the sheet as a whole)."""
        self.problems.append((row, text))

    def earlier_row(self, key: Hashable, row: int) -> int | None:
        """The row that already gave ``key``, or None after taking ``row`` as its first (for "already ... on row N")."""
        earlier = self._seen.get(key)
        if earlier is None:
            self._seen[key] = row
        return earlier

    def finish(self) -> None:
        """Raise the sheet's error listing every problem, if there is any."""
        if self.problems:
            raise self.error(self.sheet, self.problems)


class _SheetLines:
    """The decodable lines of a sheet, for ``csv.reader``; a line that is not UTF-8 is replaced by an empty line (so
    every later row keeps its number) and remembered as ``(row, detail)`` in ``bad_lines``."""

    def __init__(self, path: Path) -> None:
        self._lines = read_lines(path)
        self.bad_lines: list[Problem] = []

    def __iter__(self) -> Iterator[str]:
        for line in self._lines:
            if line.problem:
                self.bad_lines.append((line.number, line.problem[1].split(": ", 1)[-1]))
                yield "\n"
            else:
                yield line.text + "\n"


def read_sheet_file(path: Path, parse: Callable[[TextIO, str], T], error: type[SheetError] = SheetError, *,
                    bad_line: Callable[[int, str], None] | None = None) -> T:
    """Read a filled sheet (CSV, UTF-8; a spreadsheet's byte-order mark and CRLF are fine) and ``parse`` it (given the
    rows' stream and the file's name, which its errors cite).

    Lines are decoded one at a time, so a line that is not UTF-8 (a latin-1 byte, binary garbage) is that row's
    problem and every other row is still read and checked. For a sheet read whole or not at all, bad lines join
    the sheet's problem list and ``error`` (the sheet kind's SheetError) is raised naming them with any others;
    a sheet whose rows stand alone (a survey export) passes ``bad_line(row, detail)`` to keep each as its own
    rejected row. A file that is not CSV at all raises ``error`` naming the file."""
    lines = _SheetLines(path)
    try:
        parsed = parse(lines, path.name)  # type: ignore[arg-type]
    except SheetError as exc:
        if lines.bad_lines and bad_line is None:
            raise error(path.name, sorted([*lines.bad_lines, *exc.problems], key=lambda p: p[0] or 0)) from exc
        _hand_over(lines.bad_lines, bad_line)
        raise
    except csv.Error as exc:
        raise error(path.name, [(None, f"not readable as CSV: {exc}")]) from exc
    if lines.bad_lines and bad_line is None:
        raise error(path.name, lines.bad_lines)
    _hand_over(lines.bad_lines, bad_line)
    return parsed


def _hand_over(bad_lines: list[Problem], bad_line: Callable[[int, str], None] | None) -> None:
    if bad_line is not None:
        for row, detail in bad_lines:
            bad_line(row, detail)
