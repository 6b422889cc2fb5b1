"""The dataset card (``README.md``) of a release: YAML front matter the Hugging Face Hub and ``datasets`` read, and
prose generated from the warehouse's facts about the build, so the card cannot drift from the data.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

SIZE_CATEGORIES = ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M"),
                   (10_000_000, "1M<n<10M"))


@dataclass(frozen=True)
class ConfigCard:
    """One config's part of the front matter: its features (``features.card_features``) and split sizes."""

    config: str
    description: str
    features: list[dict[str, Any]]
    splits: Mapping[str, tuple[int, int, int]]  # split -> (rows, bytes of its shards, shards)
    default: bool = False


@dataclass(frozen=True)
class CardFacts:
    """Everything the card says, read from the warehouse by the release asset."""

    dataset: str
    pretty_name: str
    summary: str
    license: str
    task_categories: Sequence[str]
    configs: Sequence[ConfigCard]
    stages: Sequence[tuple[str, str, str]]  # (asset, code version, parameters as canonical JSON)
    selection: Sequence[tuple[str, str, int]]  # (stage, outcome or reason code, count)
    composition: Sequence[tuple[str, str, int]]  # (split, domain or kind, rows)
    licences: Sequence[tuple[str, str, int, int]]  # (licence, redistribution, images, images without bytes)
    withheld: Sequence[str]
    excluded: Sequence[tuple[str, str, int]]  # (split, reason, images) removed by the leakage guard
    limitations: Sequence[str]
    citations: Sequence[str]  # BibTeX entries
    languages: Sequence[str] = ("en",)
    extra_sections: Sequence[tuple[str, str]] = field(default_factory=tuple)


def size_category(n_rows: int) -> str:
    return next((name for bound, name in SIZE_CATEGORIES if n_rows < bound), "n>10M")


def front_matter(facts: CardFacts) -> dict[str, Any]:
    total = sum(rows for c in facts.configs for rows, _, _ in c.splits.values())
    configs = []
    for c in facts.configs:
        entry: dict[str, Any] = {"config_name": c.config}
        if c.default:
            entry["default"] = True
        entry["data_files"] = [{"split": split, "path": f"data/{c.config}/{split}-*.parquet"} for split in c.splits]
        configs.append(entry)
    info = [{
        "config_name": c.config,
        "features": c.features,
        "splits": [{"name": split, "num_bytes": size, "num_examples": rows} for split, (rows, size, _) in c.splits.items()],
        "download_size": sum(size for _, size, _ in c.splits.values()),
        "dataset_size": sum(size for _, size, _ in c.splits.values()),
    } for c in facts.configs]
    matter: dict[str, Any] = {"pretty_name": facts.pretty_name, "language": list(facts.languages)}
    matter["license"] = facts.license
    if facts.license == "other":
        matter["license_name"] = "mixed"
        matter["license_details"] = "Each image keeps its source's licence: see ATTRIBUTION.csv and the card's Licences section."
    matter.update({"task_categories": list(facts.task_categories), "size_categories": [size_category(total)],
                   "configs": configs, "dataset_info": info})
    return matter


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    if not rows:
        return "_none_\n"
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(v).replace("|", "\\|") for v in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def render_card(facts: CardFacts) -> str:
    """The whole ``README.md``: front matter, then the prose sections in a fixed order."""
    matter = yaml.safe_dump(front_matter(facts), sort_keys=False, allow_unicode=True, width=1000)
    total = sum(rows for c in facts.configs for rows, _, _ in c.splits.values())
    parts = [f"---\n{matter}---\n", f"# {facts.pretty_name}\n", f"{facts.summary}\n",
             f"Built with aesforge. {total} rows in {len(facts.configs)} config(s); every file listed below is "
             "reproducible byte for byte from the same inputs and model-call cache.\n"]
    parts.append("## Files\n")
    parts.append(_table(["config", "split", "rows", "shards", "bytes", "what a row is"], [
        (c.config, split, rows, shards, size, c.description) for c in facts.configs for split, (rows, size, shards) in c.splits.items()]))
    parts.append("\n`ATTRIBUTION.csv`: one row per image (source URL, creator, licence, provider, redistribution, whether "
                 "its bytes are included). `provenance.parquet`: per released row, every step of its lineage (source "
                 "records, transformations with their code versions and parameters, model calls with their prompt "
                 "templates, people as pseudonyms). `croissant.json`: the same schema as MLCommons Croissant 1.0 "
                 "with Responsible-AI fields.\n")
    parts.append("## How it was built\n")
    parts.append(_table(["asset", "code version", "parameters"], [(a, v, f"`{p}`") for a, v, p in facts.stages]))
    parts.append("\n## Selection\n\nEvery input got exactly one outcome; rejected ones keep their reason code in the "
                 "warehouse (`rejection` table).\n\n")
    parts.append(_table(["stage", "outcome", "count"], facts.selection))
    parts.append("\n## Composition\n")
    parts.append(_table(["split", "domain or kind", "rows"], facts.composition))
    parts.append("\n## Licences and redistribution\n\n")
    withheld = ", ".join(facts.withheld) or "none"
    n_withheld = sum(w for _, _, _, w in facts.licences)
    parts.append(f"Images whose redistribution is {withheld} ship without their bytes: the row keeps the image's id, "
                 f"source URL and sha256 so it can be fetched from its source. {n_withheld} image(s) of this release "
                 "are withheld that way.\n\n")
    parts.append(_table(["licence", "redistribution", "images", "without bytes"], facts.licences))
    parts.append("\n## Held out for other benchmarks\n\nTraining rows whose image (or any duplicate of it: exact, "
                 "perceptual or CLIP) is used by another benchmark's test or evaluation split are left out.\n\n")
    parts.append(_table(["split", "reason", "images removed"], facts.excluded))
    for title, text in facts.extra_sections:
        parts.append(f"\n## {title}\n\n{text}\n")
    parts.append("\n## Known limitations\n\n")
    parts.append("".join(f"- {line}\n" for line in facts.limitations) or "_none recorded_\n")
    parts.append("\n## Citation\n\nThe method this dataset follows:\n\n```bibtex\n" + "\n\n".join(facts.citations) + "\n```\n")
    return "\n".join(parts)
