"""Eight classical Tang poems and an invented survey of their stand-in illustrations, for the poem benchmark.

Why: the poem chain (recognizability items, survey ingestion, quality control, scoring, statistics) needs a corpus
and a survey export that anyone can regenerate byte-for-byte, with no network and no real annotators. The poems'
original texts are public domain (as commonly printed in *Three Hundred Tang Poems*); every English translation
here was written for this fixture. The survey is made up: its answers are drawn by seeded generators around a
quality level per stand-in illustration, so the per-model table separates (stand-in-1 best, stand-in-3 worst).

Usage: ``python -m sample.poem_fixture --out data/poem_sample``, or ``write_poem_sample(out_dir)``.

Layout written under ``out_dir``::

    poems.json    {"about": ..., "poems": [...]} in the shared corpus format
    survey.csv    one row per annotator x item for items ``<poem_id>@stand-in-1|2|3`` (shared survey format)

The survey, by construction (the summary's ``qc_cases`` lists each case):

- 8 annotators, 2 of them experts (``e01``, ``e02``); each item gets 2 or 3 of them (the least-loaded first, so
  every annotator has 7 or 8 responses) and at most one of the two bad annotators below;
- phase-1 choices are the correct letter (from ``distractors`` + ``phase1_options`` at seed 0) with probability
  0.95 for experts and 0.9 / 0.8 / 0.65 for crowd workers on stand-in 1 / 2 / 3, otherwise another letter;
- dimension answers: the graded option nearest to the stand-in's level plus a per-poem offset and rater noise;
  where a poem sets no scene (tang-008), names no period detail (tang-002, tang-003) or expects no emotion
  (tang-002), raters often give the not-applicable letter; the holistic answer follows the mean of the others;
- one too-fast response (``c02``'s first item, 6 s); one constant-answer annotator (``c05``: every answer "a",
  phase-1 always right); one low-accuracy annotator (``c06``: only its first phase-1 choice correct); and one
  response whose holistic answer contradicts the rest (``c03``'s first stand-in-1 item: all "a", overall "e").
No row is malformed.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from assets.poetry.logic.distractors import OPTION_LETTERS, distractors, phase1_options
from assets.poetry.logic.rubric import DIMENSION_KEYS, HOLISTIC, TEXT_INTEGRITY, Dimension, dimension
from assets.poetry.logic.poems import Poem, PoemRejection, read_poems
from warehouse.ids import digest_of, sha256_hex

SEED = 0
GENERATORS = ("stand-in-1", "stand-in-2", "stand-in-3")
LEVEL = {"stand-in-1": 0.88, "stand-in-2": 0.68, "stand-in-3": 0.42}
TEXT_ISSUE_RATE = {"stand-in-1": 0.0, "stand-in-2": 0.1, "stand-in-3": 0.35}
CROWD_CORRECT = {"stand-in-1": 0.9, "stand-in-2": 0.8, "stand-in-3": 0.65}
EXPERT_CORRECT = 0.95
EXPERTS = ("e01", "e02")
CROWD = ("c01", "c02", "c03", "c04", "c05", "c06")
CONSTANT_ANNOTATOR = "c05"
LOW_ACCURACY_ANNOTATOR = "c06"
FAST_ANNOTATOR = "c02"
FAST_SECONDS = 6.0
INCONSISTENT_ANNOTATOR = "c03"
SURVEY_COLUMNS = ("annotator_id", "item_id", "phase1_choice", *DIMENSION_KEYS, "seconds", "annotator_group")
# Dimensions that sit near the ceiling for every model in the paper get a lift; meaning-bearing ones a dip.
_DIMENSION_OFFSET = {"safety": 0.3, "cultural_coherence": 0.08, "artistic_style": 0.05, "core_imagery": -0.06,
                     "emotional_resonance": -0.1}
_RATER_NOISE = 0.15
_HOLISTIC_NOISE = 0.08
# Poem -> {dimension: probability a rater answers its not-applicable option}.
_NOT_APPLICABLE = {
    "tang-002": {"emotional_resonance": 0.8, "cultural_coherence": 0.7},
    "tang-003": {"cultural_coherence": 0.8},
    "tang-008": {"scene_consistency": 0.6},
}
_POEM_OFFSET = {"tang-008": -0.1, "tang-007": -0.05, "tang-004": 0.04, "tang-005": 0.05}

_SOURCE = ("Original text as commonly printed in Three Hundred Tang Poems (public domain); English translation "
           "written for the aesforge sample.")

POEMS: tuple[dict[str, Any], ...] = (
    {"poem_id": "tang-001", "title": "静夜思 (Quiet Night Thoughts)", "author": "李白 (Li Bai)",
     "text": "床前明月光，\n疑是地上霜。\n举头望明月，\n低头思故乡。",
     "translation": "Moonlight lies pale at the foot of my bed,\nso pale I half believe the ground is frosted.\n"
                    "I raise my eyes to the bright moon above,\nthen bow my head, and my thoughts go home.",
     "themes": ["homesickness", "night", "moon"], "form": "five-character quatrain"},
    {"poem_id": "tang-002", "title": "鹿柴 (Deer Enclosure)", "author": "王维 (Wang Wei)",
     "text": "空山不见人，\n但闻人语响。\n返景入深林，\n复照青苔上。",
     "translation": "On the empty mountain there is no one to be seen,\nyet somewhere a voice carries.\n"
                    "Evening light slips back into the deep wood\nand comes to rest again on the green moss.",
     "themes": ["landscape", "stillness"], "form": "five-character quatrain"},
    {"poem_id": "tang-003", "title": "春晓 (Spring Dawn)", "author": "孟浩然 (Meng Haoran)",
     "text": "春眠不觉晓，\n处处闻啼鸟。\n夜来风雨声，\n花落知多少。",
     "translation": "Sleeping deep in spring, I miss the break of day;\nall around me birds are calling.\n"
                    "All night there was the sound of wind and rain:\nI wonder how many petals came down.",
     "themes": ["spring", "transience"], "form": "five-character quatrain"},
    {"poem_id": "tang-004", "title": "登鹳雀楼 (Climbing Stork Tower)", "author": "王之涣 (Wang Zhihuan)",
     "text": "白日依山尽，\n黄河入海流。\n欲穷千里目，\n更上一层楼。",
     "translation": "The white sun leans on the hills and is gone;\nthe Yellow River runs on into the sea.\n"
                    "If you would take in a thousand li more,\ngo up one more floor of the tower.",
     "themes": ["landscape", "aspiration"], "form": "five-character quatrain"},
    {"poem_id": "tang-005", "title": "江雪 (River Snow)", "author": "柳宗元 (Liu Zongyuan)",
     "text": "千山鸟飞绝，\n万径人踪灭。\n孤舟蓑笠翁，\n独钓寒江雪。",
     "translation": "Over a thousand hills no bird is flying;\non ten thousand paths there is no footprint.\n"
                    "In a lone boat, an old man in straw cape and hat\nfishes by himself in the snow of the cold river.",
     "themes": ["winter", "solitude"], "form": "five-character quatrain"},
    {"poem_id": "tang-006", "title": "山行 (Mountain Walk)", "author": "杜牧 (Du Mu)",
     "text": "远上寒山石径斜，\n白云生处有人家。\n停车坐爱枫林晚，\n霜叶红于二月花。",
     "translation": "A stone path climbs aslant far up the cold mountain;\nwhere the white clouds are born, "
                    "a few families live.\nI halt my carriage for love of the maple wood at dusk:\n"
                    "its frosted leaves are redder than the flowers of early spring.",
     "themes": ["autumn", "landscape"], "form": "seven-character quatrain"},
    {"poem_id": "tang-007", "title": "登乐游原 (Leyou Plateau)", "author": "李商隐 (Li Shangyin)",
     "text": "向晚意不适，\n驱车登古原。\n夕阳无限好，\n只是近黄昏。",
     "translation": "Toward evening a restlessness comes over me;\nI drive my carriage up the old plateau.\n"
                    "The sinking sun is beautiful beyond all measure,\nif only night were not so close behind it.",
     "themes": ["dusk", "melancholy", "transience"], "form": "five-character quatrain"},
    {"poem_id": "tang-008", "title": "出塞 (Over the Border)", "author": "王昌龄 (Wang Changling)",
     "text": "秦时明月汉时关，\n万里长征人未还。\n但使龙城飞将在，\n不教胡马度阴山。",
     "translation": "The moon is the moon of Qin, the pass the pass of Han;\nthe men sent ten thousand li to war "
                    "have not come home.\nIf the Flying General of Dragon City were still alive,\n"
                    "no Hu horseman would ride across the Yin Mountains.",
     "themes": ["frontier", "war", "longing"], "form": "seven-character quatrain"},
)


def _rng(*parts: Any) -> random.Random:
    return random.Random(int(digest_of([SEED, *parts])[:16], 16))


def _poems_json() -> str:
    records = [{**record, "source": _SOURCE} for record in POEMS]
    document = {"about": "aesforge poem sample: eight Tang poems for the poem-illustration benchmark", "poems": records}
    return json.dumps(document, ensure_ascii=False, indent=2) + "\n"


def answer_key(poems: Sequence[Poem], generators: Sequence[str] = GENERATORS, seed: int = SEED) -> dict[str, str]:
    """{item_id: correct phase-1 letter} for every poem x generator, as the pipeline computes it."""
    chosen = distractors(poems, k=3, seed=seed)
    key = {}
    for poem in poems:
        for generator in generators:
            item_id = f"{poem.poem_id}@{generator}"
            key[item_id] = phase1_options(item_id, poem.poem_id, [d.poem_id for d in chosen[poem.poem_id]],
                                          seed).correct_letter
    return key


def _assign(items: Sequence[str]) -> dict[str, list[str]]:
    """item -> its raters: 2 or 3 per item (seeded), least-loaded annotators first (ties by a seeded digest), never
    both of the bad annotators on one item, so every item keeps a rating after quality control."""
    annotators = EXPERTS + CROWD
    load = dict.fromkeys(annotators, 0)
    bad = {CONSTANT_ANNOTATOR, LOW_ACCURACY_ANNOTATOR}
    raters: dict[str, list[str]] = {}
    for item in items:
        wanted = 3 if _rng("raters", item).random() < 0.45 else 2
        chosen: list[str] = []
        for annotator in sorted(annotators, key=lambda a: (load[a], digest_of([SEED, "order", item, a]))):
            if annotator in bad and bad & set(chosen):
                continue
            chosen.append(annotator)
            if len(chosen) == wanted:
                break
        for annotator in chosen:
            load[annotator] += 1
        raters[item] = sorted(chosen)
    return raters


def _nearest(d: Dimension, target: float) -> str:
    graded = [o for o in d.options if o.score is not None]
    return min(graded, key=lambda o: (abs(o.score - target), -o.score)).letter  # type: ignore[operator]


def _answers(poem_id: str, generator: str, rng: random.Random) -> dict[str, str]:
    level = LEVEL[generator] + _POEM_OFFSET.get(poem_id, 0.0)
    answers: dict[str, str] = {}
    for key in DIMENSION_KEYS:
        if key == HOLISTIC:
            continue
        d = dimension(key)
        if key == TEXT_INTEGRITY:
            answers[key] = "b" if rng.random() < TEXT_ISSUE_RATE[generator] else "a"
            continue
        not_applicable = _NOT_APPLICABLE.get(poem_id, {}).get(key)
        if not_applicable is not None:
            if rng.random() < not_applicable:
                answers[key] = next(o.letter for o in d.options if o.score is None)
                continue
            if key == "emotional_resonance" and generator == "stand-in-3":
                answers[key] = "f"  # no emotion expected, a jarring one added
                continue
        target = min(1.0, max(0.0, level + _DIMENSION_OFFSET.get(key, 0.0) + rng.gauss(0.0, _RATER_NOISE)))
        answers[key] = _nearest(d, target)
    applicable = [s for key, letter in answers.items() if (s := dimension(key).score(letter)) is not None]
    holistic = sum(applicable) / len(applicable) + rng.gauss(0.0, _HOLISTIC_NOISE)
    answers[HOLISTIC] = _nearest(dimension(HOLISTIC), min(1.0, max(0.0, holistic)))
    return {key: answers[key] for key in DIMENSION_KEYS}


def _survey_rows(poems: Sequence[Poem], key: dict[str, str]) -> tuple[list[dict[str, str]], dict[str, Any]]:
    items = [f"{poem.poem_id}@{generator}" for poem in poems for generator in GENERATORS]
    raters = _assign(items)
    by_annotator: dict[str, list[str]] = {}
    for item in items:
        for annotator in raters[item]:
            by_annotator.setdefault(annotator, []).append(item)
    rows: list[dict[str, str]] = []
    cases: dict[str, Any] = {"too_fast": [], "constant_answers": [CONSTANT_ANNOTATOR],
                             "low_phase1_accuracy": [LOW_ACCURACY_ANNOTATOR], "holistic_inconsistent": []}
    for annotator in sorted(by_annotator):
        expert = annotator in EXPERTS
        inconsistent_item = next((i for i in by_annotator[annotator] if i.endswith("@stand-in-1")), None) \
            if annotator == INCONSISTENT_ANNOTATOR else None
        for position, item in enumerate(by_annotator[annotator]):
            poem_id, generator = item.split("@")
            rng = _rng("response", annotator, item)
            correct = key[item]
            if annotator == LOW_ACCURACY_ANNOTATOR:
                right = position == 0
            elif annotator == CONSTANT_ANNOTATOR:
                right = True  # so constant answers are its only fault
            else:
                right = rng.random() < (EXPERT_CORRECT if expert else CROWD_CORRECT[generator])
            choice = correct if right else rng.choice([letter for letter in OPTION_LETTERS if letter != correct])
            if annotator == CONSTANT_ANNOTATOR:
                answers = dict.fromkeys(DIMENSION_KEYS, "a")
            elif item == inconsistent_item:
                answers = {**dict.fromkeys(DIMENSION_KEYS, "a"), HOLISTIC: "e"}
                cases["holistic_inconsistent"].append({"annotator_id": annotator, "item_id": item})
            else:
                answers = _answers(poem_id, generator, rng)
            seconds = round(rng.uniform(60.0, 240.0) if expert else rng.uniform(30.0, 180.0), 1)
            if annotator == FAST_ANNOTATOR and position == 0:
                seconds = FAST_SECONDS
                cases["too_fast"].append({"annotator_id": annotator, "item_id": item, "seconds": seconds})
            rows.append({"annotator_id": annotator, "item_id": item, "phase1_choice": choice, **answers,
                         "seconds": f"{seconds:.1f}", "annotator_group": "expert" if expert else "crowd"})
    counts = {item: len(raters[item]) for item in items}
    return rows, {"cases": cases, "raters_per_item": counts}


def _survey_csv(rows: Sequence[dict[str, str]]) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=SURVEY_COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()


def write_poem_sample(out_dir: Path) -> dict[str, Any]:
    """Write ``poems.json`` and ``survey.csv`` under ``out_dir`` (created if needed; the two files are
    overwritten) and return a summary: files with their sha256, ``counts`` (poems, items, responses, annotators,
    experts, multi-rated items), the generators, the answer key (item -> correct phase-1 letter at seed 0) and
    the planted QC cases."""
    out_dir.mkdir(parents=True, exist_ok=True)
    poems_text = _poems_json()
    (out_dir / "poems.json").write_bytes(poems_text.encode("utf-8"))
    read = list(read_poems(out_dir / "poems.json"))
    rejected = [r for r in read if isinstance(r, PoemRejection)]
    if rejected:  # the bundled corpus is ours: a rejection is a bug here, not bad input
        raise AssertionError(f"the bundled poems do not read back: {rejected}")
    poems = [p for p in read if isinstance(p, Poem)]
    key = answer_key(poems)
    rows, extra = _survey_rows(poems, key)
    survey_text = _survey_csv(rows)
    (out_dir / "survey.csv").write_bytes(survey_text.encode("utf-8"))
    raters_per_item = extra["raters_per_item"]
    return {
        "files": {"poems.json": sha256_hex(poems_text.encode("utf-8")),
                  "survey.csv": sha256_hex(survey_text.encode("utf-8"))},
        "counts": {
            "poems": len(poems),
            "items": len(key),
            "responses": len(rows),
            "annotators": len({row["annotator_id"] for row in rows}),
            "experts": len(EXPERTS),
            "multi_rated_items": sum(1 for n in raters_per_item.values() if n >= 2),
        },
        "generators": list(GENERATORS),
        "answer_key": key,
        "qc_cases": extra["cases"],
    }

def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="folder to write the sample into")
    args = parser.parse_args(argv)
    summary = write_poem_sample(args.out)
    counts = summary["counts"]
    print(f"wrote {counts['poems']} poems and {counts['responses']} survey responses for {counts['items']} items "
          f"to {args.out}")


if __name__ == "__main__":
    main()
