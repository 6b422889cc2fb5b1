"""How evaluation runs, benchmark items and predictions are named: by what they are, never by when or where they
were made, so a resumed or repeated evaluation finds its own rows again."""

import json

from assets.evaluation.logic.benchmark_items import BenchmarkLayout, Release
from warehouse.ids import digest_of, entity_id


def run_key(benchmark: str, release: Release, source: str, model: str, condition: str, decoding: dict, seed: int,
            predictions_sha256: str | None) -> str:
    """A run is what it evaluates: the same release, source, model, condition, decoding and seed are one run."""
    return entity_id("evaluation_run", digest_of({"benchmark": benchmark, "release": release.digest, "source": source,
                                                  "model": model, "condition": condition, "decoding": decoding,
                                                  "seed": seed, "predictions": predictions_sha256}))


def item_entity_id(layout: BenchmarkLayout, item_id: str) -> str:
    """The benchmark item as an entity of the evaluation (named by its dataset, split and id in the release)."""
    return entity_id("benchmark_item", digest_of([layout.dataset, layout.split, item_id]))


def prediction_entity_id(run: str, item_id: str, sample: int, prediction: str) -> str:
    return entity_id("evaluation_prediction", digest_of([run, item_id, sample, prediction]))


def run_row(layout: BenchmarkLayout, release: Release, key: str, source: str, model: str, condition: str,
            decoding: dict, seed: int, file_name: str | None, file_sha: str | None, activity_id: str) -> dict:
    """The ``evaluation_run`` row of a run."""
    return {"run_key": key, "benchmark": layout.name, "release_digest": release.digest, "release_version": release.version,
            "source": source, "model": model, "condition": condition, "decoding": json.dumps(decoding, sort_keys=True),
            "seed": seed, "predictions_file": file_name, "predictions_sha256": file_sha, "activity_id": activity_id}
