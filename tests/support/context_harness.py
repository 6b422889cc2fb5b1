"""The bundled ContextCanvas sample over a pool of its own images, for tests that start from stored cases (the
release, counterfactual edits of case images): the sample corpus and the case fixture generated under a test's
folder, a pool of the cases' images only (nine, not sixty)."""

from __future__ import annotations

import csv
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sample.context_fixture import write_context_sample
from sample.make_corpus import build_corpus
from tests.support.pool_harness import run_pool, write_config


@dataclass
class ContextProject:
    root: Path
    config: Path
    corpus: Path
    context: Path  # cases.json, reviews.csv and the counterfactual sheets (sample/context_fixture.py)
    summary: dict  # write_context_sample's account


def cases_manifest(corpus: Path, cases_file: Path, document: dict) -> Path:
    """The corpus manifest cut to the cases' images, beside the original so its locators stay relative to it."""
    used = {(cases_file.parent / ref).resolve() for case in document["cases"] for ref in case["images"]}
    with (corpus / "manifest.csv").open(encoding="utf-8", newline="") as stream:
        rows = list(csv.DictReader(stream))
    manifest = corpus / "manifest_of_cases.csv"
    with manifest.open("w", encoding="utf-8", newline="") as stream:
        writer = csv.DictWriter(stream, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(r for r in rows if (corpus / r["locator"]).resolve() in used)
    return manifest


def context_project(root: Path, edit_cases: Callable[[dict], None] = lambda document: None,
                    **sections: Any) -> ContextProject:
    """The sample generated under ``root`` (its cases changed by ``edit_cases`` first), its config (the case file,
    the returned review sheet, ``sections``), and the pool built."""
    expected = build_corpus(root / "sample")
    summary = write_context_sample(root / "context", root / "sample")
    cases_file = root / "context" / "cases.json"
    document = json.loads(cases_file.read_text(encoding="utf-8"))
    edit_cases(document)
    cases_file.write_text(json.dumps(document, indent=2, ensure_ascii=False), encoding="utf-8")
    pool = {"manifests": [str(cases_manifest(root / "sample", cases_file, document))],
            "filters": {"license_allowlist": list(expected["allowed_licenses"])}}
    config = write_config(root, pool, context_canvas={"cases": [str(cases_file)], "returned_dir": str(root / "context")},
                          **sections)
    assert run_pool(config).success
    return ContextProject(root, config, root / "sample", root / "context", summary)
