"""The manifest-change sensor: starts the pool job when the content of a configured manifest changes."""

import json
from pathlib import Path

from dagster import RunRequest, SensorEvaluationContext, SkipReason, sensor

from assets.image_pool.settings import PoolSettings
from warehouse.ids import digest_of, sha256_file


def manifest_fingerprints(paths: list[str], previous: dict[str, list]) -> dict[str, list]:
    """{path: [size, mtime_ns, sha256]}; a file whose size and mtime are unchanged is not re-hashed."""
    current: dict[str, list] = {}
    for name in paths:
        path = Path(name)
        if not path.is_file():
            continue
        stat = path.stat()
        known = previous.get(name)
        if known and known[:2] == [stat.st_size, stat.st_mtime_ns]:
            current[name] = known
        else:
            current[name] = [stat.st_size, stat.st_mtime_ns, sha256_file(path)]
    return current


@sensor(job_name="image_pool_job", minimum_interval_seconds=60, description="Starts the pool job when a configured manifest's content changes.")
def manifest_change_sensor(context: SensorEvaluationContext, pool: PoolSettings):
    previous = json.loads(context.cursor) if context.cursor else {}
    current = manifest_fingerprints(pool.manifests, previous)
    context.update_cursor(json.dumps(current, sort_keys=True))
    contents = {path: entry[2] for path, entry in current.items()}
    if contents == {path: entry[2] for path, entry in previous.items()}:
        return SkipReason("no configured manifest changed")
    changed = sorted(p for p in contents if (previous.get(p) or [None] * 3)[2] != contents[p])
    return RunRequest(run_key=digest_of(contents), tags={"aesforge/changed_manifests": ",".join(changed)[:200]})
