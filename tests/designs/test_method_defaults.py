"""AesEval's readings as defaults, each with its option (issue 20, item 4), materialized for real on the generated
Crello sample: every perturbed design asked about all twelve indicators (``indicators: affected`` as before),
Crello's own split honoured (``source_splits: ignore`` deals by quota), benchmark labels from people only
(``benchmark_labels: labeller`` lets the labeller decide them), and reasoning paths for all three formats
(``reasoning_tasks: [judgment]`` as before)."""

import csv
import shutil
from pathlib import Path

from assets.designs.logic.indicators import INDICATORS
from tests.designs.test_assets import DESIGN_ASSETS, _run, _write_votes
from tests.support.pool_harness import write_config
from warehouse.db import Warehouse

UP_TO_QUESTIONS = DESIGN_ASSETS[:DESIGN_ASSETS.index("design_questions") + 1]


def _source(folder: Path, fixture: Path, splits: dict[str, list[str]]) -> dict[str, Path]:
    """Folders named as Crello's splits (or anything else), each holding the named sample designs, their layers and
    previews beside them as the records expect."""
    for name in ("layers", "previews"):
        shutil.copytree(fixture / name, folder / name, dirs_exist_ok=True)
    for split, designs in splits.items():
        (folder / split).mkdir(parents=True, exist_ok=True)
        for design in designs:
            shutil.copy(fixture / "v5" / f"{design}.json", folder / split / f"{design}.json")
    return {split: folder / split for split in splits}


def _designs(fixture: Path) -> list[str]:
    return sorted(p.stem for p in (fixture / "v5").glob("*.json"))


def _build(folder: Path, designs: dict, assets: list[str]) -> tuple[Path, Warehouse]:
    config = write_config(folder, {}, designs={"batch_size": 8, "perturb": {"variants_per_design": 1}, **designs})
    result = _run(config, assets)
    assert result.success, [e.message for e in result.all_events if e.is_failure]
    return config, Warehouse(folder / "warehouse.duckdb")


def test_every_perturbed_design_is_asked_about_all_twelve_indicators_unless_affected_only(tmp_path, fixture_dir):
    fixture, _ = fixture_dir
    folders = _source(tmp_path / "src", fixture, {"v5": _designs(fixture)[:3]})
    settings = {"folders": [str(folders["v5"])], "benchmark_labels": "labeller"}
    config, wh = _build(tmp_path / "run", settings, UP_TO_QUESTIONS)
    per_design = wh.query("SELECT design_id, count(*) AS n FROM design_review_item GROUP BY ALL")
    assert len(per_design) == 3 and set(per_design["n"]) == {len(INDICATORS)}
    asked = wh.query("SELECT design_id, count(DISTINCT indicator) AS n FROM design_question"
                     " WHERE format = 'aesthetic_judgment' GROUP BY ALL")
    assert set(asked["n"]) == {len(INDICATORS)}
    # An indicator no operation touched still points at a perturbed element.
    assert wh.scalar("SELECT count(*) FROM design_label l WHERE answer_element_id NOT IN"
                     " (SELECT element_id FROM design_perturbation_op o WHERE o.design_id = l.design_id)") == 0

    # The other reading, on the same warehouse: only the indicators the operations may touch; the rest go.
    config = write_config(tmp_path / "run", {}, designs={"batch_size": 8, "perturb": {"variants_per_design": 1},
                                                         "indicators": "affected", **settings})
    assert _run(config, UP_TO_QUESTIONS).success
    items = wh.scalar("SELECT count(*) FROM design_review_item")
    assert 3 <= items < 3 * len(INDICATORS)
    assert wh.scalar("SELECT count(*) FROM design_label") == items
    assert wh.scalar("SELECT count(DISTINCT (design_id, indicator)) FROM design_question") == items


def test_crellos_own_split_puts_test_designs_on_the_benchmark_up_to_its_size(tmp_path, fixture_dir):
    fixture, _ = fixture_dir
    names = _designs(fixture)
    folders = _source(tmp_path / "src", fixture, {"test": names[:5], "validation": names[5:6], "train": names[6:]})
    settings = {"folders": [str(f) for f in folders.values()], "benchmark_designs": 3, "benchmark_fraction": 0.5}
    _, wh = _build(tmp_path / "honour", settings, ["design_records", "design_splits", "perturbed_designs", "design_renders",
                                                   "design_review_sheet"])
    sides = dict(wh.query("SELECT d.source_design_id, s.split FROM design_split s JOIN design d ON d.design_id ="
                          " s.base_design_id").itertuples(index=False))
    assert {n for n, side in sides.items() if side == "benchmark"} < set(names[:5])
    assert sum(side == "benchmark" for side in sides.values()) == 3
    assert {n for n, side in sides.items() if side == "train"} == set(names[5:])
    # The two test designs past the size: on neither side, each with its reason naming the design.
    beyond = wh.query("SELECT d.source_design_id AS name, x.entity_id, x.detail FROM rejection x JOIN design d"
                      " ON d.design_id = x.entity_id WHERE x.stage = 'design_split' AND x.reason_code = 'beyond_benchmark_size'")
    assert len(beyond) == 2 and set(beyond["name"]) == set(names[:5]) - set(sides)
    assert all(entity in detail for entity, detail in beyond[["entity_id", "detail"]].itertuples(index=False))
    # Nobody is asked about them: only the variants of dealt designs get review items.
    reviewed = wh.query("SELECT DISTINCT d.base_design_id FROM design_review_item i JOIN design d USING (design_id)")
    assert set(reviewed["base_design_id"]) == set(wh.query("SELECT base_design_id FROM design_split")["base_design_id"])

    # source_splits: ignore deals every design by the quota, whatever its folder is called.
    _, wh = _build(tmp_path / "ignore", {**settings, "source_splits": "ignore"}, ["design_records", "design_splits"])
    quota = wh.query("SELECT split, count(*) AS n FROM design_split GROUP BY ALL")
    assert dict(quota.itertuples(index=False)) == {"benchmark": 4, "train": 4}
    assert wh.scalar("SELECT count(*) FROM rejection WHERE stage = 'design_split'") == 0


def _next_round(folder: Path) -> list[dict]:
    """The next round's sheet of unlabelled benchmark items ([] when there are none: no sheet is written)."""
    sheet = folder / "data" / "review" / "designs" / "design_review_round-2-unlabelled.csv"
    if not sheet.is_file():
        return []
    with sheet.open(encoding="utf-8") as stream:
        return list(csv.DictReader(stream))


def test_benchmark_items_without_a_resolving_vote_are_held_out_and_asked_again(tmp_path, fixture_dir):
    fixture, _ = fixture_dir
    folders = _source(tmp_path / "src", fixture, {"v5": _designs(fixture)[:4]})
    settings = {"folders": [str(folders["v5"])], "benchmark_fraction": 0.5, "indicators": "affected"}
    config, wh = _build(tmp_path / "run", settings, UP_TO_QUESTIONS)
    benchmark = ("SELECT i.item_id FROM design_review_item i JOIN design d USING (design_id)"
                 " JOIN design_split s ON s.base_design_id = d.base_design_id WHERE s.split = 'benchmark'")
    held = set(wh.query(benchmark)["item_id"])
    assert held
    # No benchmark label without people; training items have the heuristic judge's; benchmark questions: none.
    assert set(wh.query("SELECT DISTINCT source FROM design_label")["source"]) == {"heuristic"}
    assert wh.scalar("SELECT count(*) FROM design_question WHERE split = 'benchmark'") == 0
    unlabelled = wh.query("SELECT entity_id, detail FROM rejection WHERE stage = 'design_label' AND reason_code = 'unlabelled'")
    assert len(unlabelled) == len(held) and all(e.split("|")[0] in d for e, d in unlabelled.itertuples(index=False))
    sheet = _next_round(tmp_path / "run")
    assert {r["item_id"] for r in sheet} == held and {r["review_round"] for r in sheet} == {"2"}

    # People resolve one benchmark item: it is labelled, asked, and leaves the next round's sheet.
    rows = sorted(sheet, key=lambda r: r["item_id"])
    returned = tmp_path / "run" / "data" / "review" / "designs" / "returned"
    _write_votes(returned / "ana.csv", rows, "ana", {0: "flawed"})
    _write_votes(returned / "ben.csv", rows, "ben", {0: "yes", 1: "good"})
    _write_votes(returned / "cy.csv", rows, "cy", {1: "flawed"})  # row 1: a 1-1 tie stays unlabelled
    assert _run(config, UP_TO_QUESTIONS).success
    labelled = wh.query("SELECT i.item_id, l.source, l.flawed FROM design_label l JOIN design_review_item i"
                        " USING (design_id, indicator) WHERE i.item_id IN (SELECT item_id FROM (" + benchmark + "))")
    assert labelled.to_dict("records") == [{"item_id": rows[0]["item_id"], "source": "human", "flawed": True}]
    assert wh.scalar("SELECT count(*) FROM design_question WHERE split = 'benchmark'") >= 2
    assert {r["item_id"] for r in _next_round(tmp_path / "run")} == held - {rows[0]["item_id"]}

    # benchmark_labels: labeller lets the heuristic judge decide the rest of the benchmark, as before ...
    config = write_config(tmp_path / "run", {}, designs={"batch_size": 8, "perturb": {"variants_per_design": 1},
                                                         "benchmark_labels": "labeller", **settings})
    assert _run(config, UP_TO_QUESTIONS).success
    assert set(wh.query(f"SELECT l.source FROM design_label l JOIN design_review_item i USING (design_id, indicator)"
                        f" WHERE i.item_id IN ({benchmark})")["source"]) == {"human", "heuristic"}
    assert wh.scalar("SELECT count(*) FROM rejection WHERE stage = 'design_label' AND reason_code = 'unlabelled'") == 0
    assert _next_round(tmp_path / "run") == []
    # ... and going back to the default takes the machine's benchmark labels and their questions away again.
    config = write_config(tmp_path / "run", {}, designs={"batch_size": 8, "perturb": {"variants_per_design": 1}, **settings})
    assert _run(config, UP_TO_QUESTIONS).success
    assert wh.scalar(f"SELECT count(*) FROM design_label l JOIN design_review_item i USING (design_id, indicator)"
                     f" WHERE i.item_id IN ({benchmark})") == 1
    assert wh.scalar("SELECT count(*) FROM design_question WHERE split = 'benchmark' AND label_source <> 'human'") == 0


def test_reasoning_paths_cover_all_three_formats_unless_judgment_only(tmp_path, fixture_dir):
    fixture, _ = fixture_dir
    folders = _source(tmp_path / "src", fixture, {"v5": _designs(fixture)[:3]})
    settings = {"folders": [str(folders["v5"])], "benchmark_fraction": 0.0, "indicators": "affected"}
    _, wh = _build(tmp_path / "all", settings, DESIGN_ASSETS)
    tasks = set(wh.query("SELECT DISTINCT task FROM design_reasoning")["task"])
    assert tasks == {"judgment", "selection", "localisation"}
    # Each training question carries the path of its own format; a selection path cites its candidates.
    records = wh.query("SELECT format, reasoning FROM design_question_records WHERE reasoning IS NOT NULL")
    assert set(records["format"]) == {"aesthetic_judgment", "region_selection", "precise_localisation"}
    cited = wh.query("SELECT x.cited, q.choices FROM design_reasoning x JOIN design_question q ON q.design_id = x.design_id"
                     " AND q.indicator = x.indicator AND q.format = 'region_selection' WHERE x.task = 'selection'")
    assert len(cited) and all(len(c) >= 1 for c in cited["cited"])

    _, wh = _build(tmp_path / "judgment", {**settings, "reasoning_tasks": ["judgment"]}, DESIGN_ASSETS)
    assert set(wh.query("SELECT DISTINCT task FROM design_reasoning")["task"]) == {"judgment"}
    assert set(wh.query("SELECT format FROM design_question_records WHERE reasoning IS NOT NULL")["format"]) == {
        "aesthetic_judgment"}
