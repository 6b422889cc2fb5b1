"""The partitions of the pool's per-item assets: one per shard of the source records (``logic/shards.py``).

``fetched_files``, ``normalized_images`` and ``pool_candidates`` iterate over items that each belong to one record's
shard, so they share this partitions definition (the identity mapping between them is right). ``source_records``
(which finds the records, and so their shards, by reading whole manifests and folders) and the cross-item steps
(duplicate clustering, model filters, the pool) stay unpartitioned and read every shard. A run for one shard key, or
for a range of keys in one run (``BackfillPolicy.single_run``), does only the pending items of those shards.

A run of the whole pool is a run of the whole key range: the jobs that hold these assets carry ``WHOLE_POOL`` as
their tags, which a run for a key or a narrower range overrides. (Dagster 1.13 cannot run a partitioned asset that
reads another partitioned asset in a run with no partition at all: it asks the run for its partition range to find
the parent's data versions.)
"""

import warnings
from collections.abc import Collection, Iterable

from dagster import AssetExecutionContext, BackfillPolicy, BetaWarning, StaticPartitionsDefinition

from assets.core.step import Step
from assets.image_pool.logic.shards import SHARD_KEYS, in_shards, shards_label

# a range of shards in one run is what a backfill of them should be; Dagster calls the parameter beta at every import
warnings.filterwarnings("ignore", message="Parameter `backfill_policy`", category=BetaWarning)
POOL_SHARDS = StaticPartitionsDefinition(list(SHARD_KEYS))
PER_SHARD = {"partitions_def": POOL_SHARDS, "backfill_policy": BackfillPolicy.single_run()}


def shard_range_tags(keys: tuple[str, ...]) -> dict[str, str]:
    """A run's tags (Dagster's own) for ``keys`` (contiguous, in order) as one single-run range."""
    return {"dagster/asset_partition_range_start": keys[0], "dagster/asset_partition_range_end": keys[-1]}


WHOLE_POOL = shard_range_tags(SHARD_KEYS)


def covered_shards(context: AssetExecutionContext, step: Step) -> Collection[str] | None:
    """The shards this materialization covers (``None``: all of them), also noted on the step."""
    partitioned = context.has_partition_key or context.has_partition_key_range
    shards = frozenset(context.partition_keys) if partitioned else None
    if shards is not None and len(shards) == len(SHARD_KEYS):
        shards = None
    step.notes["shards"] = "all" if shards is None else shards_label(shards)
    return shards


def covered_items(step: Step, shards: Collection[str] | None, record_ids: Iterable[str]) -> list[bool]:
    """Which pending items (each named by the record id whose shard it is in) this materialization covers. The others
    count as left for a later run, so ``aesforge run`` does not take an asset built for some shards as up to date."""
    covered = [in_shards(record_id, shards) for record_id in record_ids]
    step.left_pending += covered.count(False)
    return covered
