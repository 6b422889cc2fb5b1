"""Phase-1 option sets supplied by the user: the four poems a study run elsewhere showed with each image, and the
true one, instead of the distractors this pipeline would choose (assets/poetry/logic/distractors.py).

Why: a survey already run on another platform asked its own questions; scoring its phase-1 answers against options
we generated would mark right answers wrong. The file is read whole or not at all, like a returned review sheet:
one bad row means the study's options for that item are unknown, so the step fails naming every bad row.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import TextIO

from assets.core.logic import sheets
from assets.poetry.logic.distractors import OPTION_LETTERS, Phase1Options

OPTION_COLUMNS = tuple(f"option_{letter}" for letter in OPTION_LETTERS)
ITEM_COLUMNS = ("item_id", *OPTION_COLUMNS, "true_poem")
SUPPLIED_METHOD = "supplied"


class Phase1ItemsError(sheets.SheetError):
    """A phase-1 items file that cannot be used; every offending row is named."""

    reason_code = "malformed_phase1_items"
    prefix = "phase-1 items file"


def parse_phase1_items(stream: TextIO, sheet: str, illustrated: Mapping[str, str],
                       poems: Collection[str]) -> dict[str, Phase1Options]:
    """Every row's options by item id (CSV: ``item_id``, ``option_A`` … ``option_D`` as poem ids, ``true_poem``);
    raises ``Phase1ItemsError`` naming every bad row.

    Checked per row: the item is one of ``illustrated`` (item id -> the poem its image illustrates) and appears once;
    the four options are distinct poem ids of the corpus (``poems``); ``true_poem`` is one of them and is the poem
    the item's image illustrates.
    """
    reader = sheets.SheetReader(stream, sheet, ITEM_COLUMNS, Phase1ItemsError, needs="a phase-1 items file",
                                trailing_empty_cells_ok=True)
    known = set(poems)
    items: dict[str, Phase1Options] = {}
    for row, cells in reader:
        problems: list[str] = []
        item_id, true_poem = cells["item_id"], cells["true_poem"]
        options = tuple(cells[column] for column in OPTION_COLUMNS)
        if not item_id:
            problems.append("item_id is empty")
        elif item_id not in illustrated:
            problems.append(f"unknown item {item_id!r} (no illustration has this id)")
        else:
            earlier = reader.earlier_row(item_id, row)
            if earlier is not None:
                problems.append(f"item {item_id!r} already has options on row {earlier}")
        empty = [column for column, poem in zip(OPTION_COLUMNS, options) if not poem]
        unknown = [poem for poem in options if poem and poem not in known]
        if empty:
            problems.append(f"{', '.join(empty)} empty")
        if unknown:
            problems.append(f"option(s) {', '.join(map(repr, unknown))} not poems of the corpus")
        if len(set(options)) != len(options):
            problems.append("the options repeat a poem")
        if true_poem not in options:
            problems.append(f"true_poem {true_poem!r} is not one of the options")
        elif item_id in illustrated and true_poem != illustrated[item_id]:
            problems.append(f"true_poem {true_poem!r} is not the illustrated poem {illustrated[item_id]!r}")
        if problems:
            reader.problem(row, "; ".join(problems))
            continue
        items[item_id] = Phase1Options(item_id, (options[0], options[1], options[2], options[3]),
                                       OPTION_LETTERS[options.index(true_poem)])
    reader.finish()
    return items
