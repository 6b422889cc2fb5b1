"""The closed-answer benchmarks' report sections, read from the warehouse after scoring (the leaderboard, the answers
as read) and from the release (the poem benchmark's people): the figures the papers' tables show, rebuilt from
exactly what the views hold, so the same rows give the same bytes."""

from __future__ import annotations

from collections.abc import Mapping

from assets.counterfactual.logic.edit_pairs import CORRECT, REVERSE, CounterfactualSpec, directional_update, pair_figures
from assets.evaluation.evaluation_report import rows_of
from assets.evaluation.logic.benchmark_items import BenchmarkItem, BenchmarkLayout, Release, side_rows
from assets.evaluation.logic.choice_report_markdown import (PairCounts, RunFigures, aeseval_sections, context_sections,
                                                            counterfactual_section, poem_judges_section,
                                                            poem_people_section, unreadable_section)
from assets.evaluation.logic.choice_scoring import BINARY_CLASSES
from assets.evaluation.logic.poem_judging import PHASE1_CHANCE, dimension_spearman, phase1_accuracy
from warehouse.db import Warehouse

OVERALL = "overall_impression"


def _run_figures(wh: Warehouse, benchmark: str) -> dict[str, RunFigures]:
    figures: dict[str, dict] = {}
    for key, model, condition, metric, mean, low, high, n in rows_of(
            wh, "SELECT run_key, model, condition, metric, mean, ci_low, ci_high, n_items FROM evaluation_leaderboard"
                " WHERE benchmark = ? AND status = 'ran' ORDER BY run_key, metric", [benchmark]):
        run = figures.setdefault(key, {"model": model, "condition": condition, "figures": {}, "n": {}})
        run["figures"][metric] = (mean, low, high)
        run["n"][metric] = n or 0
    return {key: RunFigures(r["model"], r["condition"], r["figures"], r["n"]) for key, r in figures.items()}


def _unreadable(wh: Warehouse, benchmark: str) -> tuple[str, str] | None:
    rows = rows_of(wh, "SELECT model || ' / ' || condition, item_id, sample, problem, detail FROM evaluation_answers"
                     " WHERE benchmark = ? AND problem IS NOT NULL ORDER BY ALL", [benchmark])
    return unreadable_section(rows)


def _pair_counts(wh: Warehouse, runs: Mapping[str, RunFigures], items: Mapping[str, BenchmarkItem]) -> list[PairCounts]:
    """Per run, ``pair_figures`` over its read answers (the counterfactual library's own arithmetic), with the
    unchanged split and the NCU interval from the leaderboard, and the model's full ContextCanvas accuracy."""
    full = {model: mean for model, mean in rows_of(
        wh, "SELECT model, mean FROM evaluation_leaderboard WHERE benchmark = 'context_canvas' AND condition = 'image'"
            " AND metric = 'accuracy' AND status = 'ran'", [])}
    out = []
    for key, run in sorted(runs.items()):
        answers: dict[str, dict[int, str | None]] = {}
        for item_id, sample, answer in rows_of(wh, "SELECT item_id, sample, answer FROM evaluation_answer WHERE run_key = ?",
                                             [key]):
            answers.setdefault(item_id, {})[int(sample)] = answer
        triples = []
        for item_id, sides in sorted(answers.items()):
            item = items.get(item_id)
            if item is None:
                continue
            original, edited = item.fields["golds"]
            triples.append((CounterfactualSpec(item_id, item.fields.get("decisive_cue") or "", "", original, edited),
                            sides.get(0) or "", sides.get(1) or ""))
        if not triples:
            continue
        unchanged = [(spec, original) for spec, original, edited in triples
                     if directional_update(spec, original, edited) not in (CORRECT, REVERSE)]
        right = sum(original == spec.original_label for spec, original in unchanged)
        out.append(PairCounts(run.label, pair_figures(triples), right, len(unchanged) - right,
                              (run.figures.get("ncu") or (None, None, None))[1:], full.get(run.model)))
    return out


def closed_sections(wh: Warehouse, layout: BenchmarkLayout, items: Mapping[str, BenchmarkItem],
                    calibration: Mapping[str, BenchmarkItem], release: Release) -> list[tuple[str, str]]:
    """The benchmark's own sections (title, Markdown), after its scores are stored."""
    runs = _run_figures(wh, layout.name)
    sections: list[tuple[str, str]] = []
    if layout.name == "context_canvas":
        binary = [item for item in items.values() if len(item.fields["options"]) == 2 and item.references]
        yes = sum(item.references[0] == BINARY_CLASSES[0] for item in binary) / len(binary) if binary else None
        sections += context_sections(list(runs.values()), yes, len(binary), len(items))
    elif layout.name == "counterfactual":
        sections.append(counterfactual_section(_pair_counts(wh, runs, items)))
    elif layout.name == "aeseval":
        sections += aeseval_sections(list(runs.values()), sorted({item.fields["indicator"] for item in items.values()}))
    elif layout.name == "poem_benchmark":
        sections.append(poem_judges_section(list(runs.values()), len({i.fields["poem_id"] for i in items.values()}), len(items)))
        everyone = [{**item.fields["human"], "quality": item.fields.get("quality"),
                     "recognizability": item.fields.get("recognizability")}
                    for item in (*items.values(), *calibration.values())]
        spearman = {d: found for d, found in dimension_spearman(everyone, OVERALL).items() if found[1]}
        sections.append(poem_people_section(spearman,
                                            phase1_accuracy(side_rows(release, layout, "annotations")), OVERALL,
                                            PHASE1_CHANCE))
    unreadable = _unreadable(wh, layout.name)
    return sections + ([unreadable] if unreadable else [])
