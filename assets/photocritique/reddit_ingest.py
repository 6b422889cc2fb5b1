"""Reddit ingestion: candidate posts and their comment threads from dumps, the archive API and PRAW.

Every copy a source returns is kept as an observation (where it was read, when it was retrieved);
the merged post or comment is the latest retrieval. Dump scans checkpoint their offset per file,
HTTP sources mark each answered post, so a crash or a rerun repeats no finished work.
"""

import json
from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from dagster import AssetExecutionContext, Failure, MaterializeResult, asset

from assets.core.item_loop import Done, Item, Kept, Outcome, Rejected, run_items
from assets.core.logic.iteration import batched
from assets.photocritique.logic.reddit_dumps import DumpLine, DumpSource, classify_dump, dump_file_lines, read_line
from assets.photocritique.logic.reddit_ids import (
    dump_line_key,
    file_fingerprint,
    id_list_line_key,
    observation_id,
    problem_digest,
    scan_key,
    source_entity_id,
)
from assets.photocritique.location_rekey import REKEY_SCOPE, location_renames
from assets.photocritique.logic.reddit_records import (
    UNSUPPORTED_FILE,
    Comment,
    Post,
    UsernameHasher,
    merge_observations,
    normalize_comment,
    normalize_submission,
    parse_id_list,
)
from assets.photocritique.store import (
    add_window_candidates,
    queue_merges,
    save_dump_scan,
    write_candidates,
    write_fetch_done,
    write_merged,
    write_observations,
    write_source_problems,
)
from assets.photocritique.settings import PhotocritiqueSettings
from assets.core.materialization import writes
from assets.core.step import Step, recorded_step
from assets.core.step_cluster import step_cluster
from resources.reddit_archive_api import RedditArchiveApiResource
from resources.reddit_live_api import RedditApiResource
from resources.reddit_sources import (
    CONNECTION_ERROR,
    HTTP_ERROR,
    Origin,
    RawItem,
    RedditSource,
    SourceProblem,
    SubredditWindow,
)
from resources.warehouse import WarehouseResource
from warehouse.db import registered
from warehouse.ids import canonical_json, digest_of, entity_id, sha256_hex
from warehouse.lineage import ActivityLog, Entity, utcnow

SUBMISSIONS = "submissions"
COMMENTS = "comments"
_RETRYABLE = frozenset({HTTP_ERROR, CONNECTION_ERROR})
THREADS_PER_COMMIT = 20
"""Comment trees fetched over HTTP per request batch."""
CANDIDATE_STAGE = "reddit_candidates"
DUMP_SCAN_TASK = "dump-scan"
"""Name prefix of the cluster tasks that scan one dump file each (``dump-scan:<file>:<scan key>:<offset>``)."""


def dump_files(locations: Iterable[str]) -> list[Path]:
    """Configured dump files, and the dump-named files inside configured folders (sorted)."""
    found: list[Path] = []
    for location in map(Path, locations):
        if location.is_dir():
            found.extend(sorted(p for p in location.rglob("*") if p.is_file() and classify_dump(p)))
        else:
            found.append(location)  # a missing or oddly named file is reported by the scan, not skipped
    return found


def configured_sources(
    settings: PhotocritiqueSettings, archive_api: RedditArchiveApiResource, reddit_api: RedditApiResource,
    name_of: Callable[[Path], str],
) -> list[RedditSource]:
    """The sources the user configured, dumps first (cheapest), then the archive API, then live Reddit; dump
    files named by ``name_of`` (the warehouse's names, relative to the project)."""
    sources: list[RedditSource] = []
    if settings.dumps:
        sources.append(DumpSource(dump_files(settings.dumps), name_of=name_of))
    for resource in (archive_api, reddit_api):
        source = resource.get_source()
        if source is not None:
            sources.append(source)
    return sources


def _parameters(
    settings: PhotocritiqueSettings, archive_api: RedditArchiveApiResource, reddit_api: RedditApiResource,
    name_of: Callable[[str], str],
) -> dict:
    """Provenance parameters: the settings without the salt; the API sections hold only env-var names."""
    return {"settings": settings.recorded_parameters(name_of), "archive_api": archive_api.model_dump(), "reddit_api": reddit_api.model_dump()}


def _require_sources(sources: list[RedditSource]) -> None:
    if not sources:
        raise Failure(
            description="photocritique has candidates but no source: configure photocritique.dumps,"
            " reddit_archive_api.base_url, or Reddit API credentials (reddit_api)"
        )


def _check_salt(step: Step, hasher: UsernameHasher) -> None:
    """Author hashes from different salts never match, so a changed salt must stop the run, not corrupt it."""
    fingerprint = hasher.salt_fingerprint()
    if step.settings_fingerprint("reddit_username_salt", fingerprint) != fingerprint:
        raise Failure(
            description="the username salt differs from the one this warehouse was built with; author hashes"
            " would no longer match (the submitter check needs them to). Restore the salt or use a new warehouse."
        )


def _source_entity(source_kind: str, locator: str) -> Entity:
    return Entity(source_entity_id(source_kind, locator), "reddit_source",
                  attributes={"source_kind": source_kind, "locator": locator})


def _problem_id(problem: SourceProblem, scope: str) -> str:
    o = problem.origin
    return problem_digest(o.source_kind, o.locator, o.line_no, o.byte_offset, scope, problem.reason_code, problem.item_id)


def _problem_row(log: ActivityLog, problem: SourceProblem, scope: str) -> dict:
    o = problem.origin
    return {
        "problem_id": _problem_id(problem, scope),
        "source_kind": o.source_kind,
        "locator": o.locator,
        "line_no": o.line_no,
        "byte_offset": o.byte_offset,
        "scope": scope,
        "reason_code": problem.reason_code,
        "detail": problem.detail[:2000],
        "item_id": problem.item_id,
        "activity_id": log.activity_id,
        "recorded_at": utcnow(),
    }


@dataclass(frozen=True)
class _Answered:
    """End of one HTTP request batch: these keys were answered, so a later run does not ask for them again."""

    source_kind: str
    keys: tuple[str, ...]


class ObservationWriter:
    """The item loop's parts for source records: one item per dump line, HTTP record or source problem; the
    per-item work parses and normalizes (problems keep their reason), the writer stores observations with
    lineage and problems in ``reddit_source_problem``."""

    def __init__(self, scope: str, hasher: UsernameHasher, bot_accounts: Collection[str]) -> None:
        self.scope = scope
        self.stage = f"reddit_{scope}"
        self.hasher = hasher
        self.bot_accounts = tuple(bot_accounts)

    def normalize(self, item: RawItem) -> Post | Comment | SourceProblem:
        if self.scope == SUBMISSIONS:
            return normalize_submission(item, self.hasher)
        return normalize_comment(item, self.hasher, self.bot_accounts)

    # -- items --------------------------------------------------------------------------------------------
    @staticmethod
    def item(payload: DumpLine | RawItem | SourceProblem | _Answered) -> Item:
        """The loop's item for what a source yielded: keyed by where it was read, fingerprinted by its bytes."""
        if isinstance(payload, DumpLine):
            key = dump_line_key(payload.locator, payload.byte_offset)
            return Item(key, f"{payload.locator}#line={payload.line_no}", sha256_hex(payload.data), payload)
        if isinstance(payload, _Answered):
            key = entity_id("reddit_fetch_batch", digest_of([payload.source_kind, payload.keys]))
            return Item(key, payload.source_kind, key, payload)
        origin = payload.origin
        if isinstance(payload, RawItem):
            record_id = repr(payload.data.get("id"))[:100]
            key = entity_id(f"reddit_{payload.kind}_copy", digest_of([origin.source_kind, origin.locator, record_id]))
            # json.dumps escapes to ASCII: a record may hold lone surrogates, which UTF-8 cannot encode
            return Item(key, origin.locator, sha256_hex(json.dumps(payload.data, sort_keys=True, default=str).encode()), payload)
        key = entity_id("reddit_source_problem", _problem_id(payload, "any"))
        return Item(key, origin.locator, digest_of([payload.reason_code, payload.detail]), payload)

    def process(self, item: Item) -> Outcome:
        payload = item.payload
        if isinstance(payload, _Answered):
            return Kept(payload, count=f"api_batches_answered:{payload.source_kind}:{self.scope}")
        result = read_line(payload) if isinstance(payload, DumpLine) else payload
        if result is None:
            return Kept(None, count=f"dump_lines_not_selected:{self.scope}")
        if isinstance(result, RawItem):
            result = self.normalize(result)
        if isinstance(result, SourceProblem):
            return Rejected(result.reason_code, result.detail, retryable=result.reason_code in _RETRYABLE, value=result)
        return Kept(result, count=f"observations:{self.scope}")

    def write(self, log: ActivityLog, done: list[Done]) -> None:
        records = [d.outcome.value for d in done if d.kept and isinstance(d.outcome.value, (Post, Comment))]
        problems = [d.outcome.value for d in done if not d.kept]
        answered = [d.outcome.value for d in done if d.kept and isinstance(d.outcome.value, _Answered)]
        self.store(log, records, problems)
        write_fetch_done(log.con, [
            {"source_kind": a.source_kind, "scope": self.scope, "post_id": key, "activity_id": log.activity_id}
            for a in answered for key in a.keys
        ])

    def store(self, log: ActivityLog, records: list[Post | Comment], problems: list[SourceProblem]) -> None:
        write_source_problems(log.con, [_problem_row(log, p, self.scope) for p in problems])
        if records:
            self._write_records(log, records)

    def _write_records(self, log: ActivityLog, records: list[Post | Comment]) -> None:
        kind = "reddit_post" if self.scope == SUBMISSIONS else "reddit_comment"
        table = "reddit_post_observation" if self.scope == SUBMISSIONS else "reddit_comment_observation"
        sources = {(r.origin.source_kind, r.origin.locator): _source_entity(r.origin.source_kind, r.origin.locator) for r in records}
        log.entities(sources.values())
        log.used((e.entity_id for e in sources.values()), "source")
        rows, entities, edges = [], {}, []
        for record in records:
            digest = record.content_digest()
            content_entity = entity_id(kind, digest)
            key = record.post_id if self.scope == SUBMISSIONS else record.comment_id
            entities[content_entity] = Entity(content_entity, kind, digest, {"id": key, "post_id": record.post_id})
            edges.append((content_entity, sources[(record.origin.source_kind, record.origin.locator)].entity_id, "read_from"))
            o = record.origin
            row = {
                "observation_id": observation_id(kind, o.source_kind, o.locator, o.line_no, o.byte_offset, digest,
                                                 o.retrieved_at),
                "post_id": record.post_id,
                "entity_id": content_entity,
                "source_kind": o.source_kind,
                "source_locator": o.locator,
                "line_no": o.line_no,
                "byte_offset": o.byte_offset,
                "retrieved_at": o.retrieved_at,
                "record": canonical_json(record.to_row()),
                "activity_id": log.activity_id,
            }
            if self.scope == COMMENTS:
                row["comment_id"] = record.comment_id
            rows.append(row)
        write_observations(log.con, table, rows)
        log.entities(entities.values())
        log.generated(entities)
        log.derived(edges)


def scan_dumps(
    step: Step,
    source: DumpSource,
    scope: str,
    target_digest: str,
    selection: dict[str, Any],
    writer: ObservationWriter,
    batch_size: int,
) -> None:
    """Scan every dump file of the scope once per target set (``selection``: ``DumpSource.scan_lines``'s
    keywords): each candidate line is one item of the loop, and the file's checkpoint moves with every committed
    batch. Each file is a shard of its own, keyed by its fingerprint and the targets: finished files are skipped,
    a changed file alone is rescanned. When the step runs on a Dask cluster, the pending files are scanned there
    at once (``_FileScans``) and committed here file by file, in the same order as in a plain process."""
    kind = "submission" if scope == SUBMISSIONS else "comment"
    pending: list[tuple[Path, str, str, tuple | None]] = []
    for path in source.files(kind):
        name = step.name_of(path)
        try:
            key = scan_key(file_fingerprint(name, path), scope, target_digest)
        except OSError:  # missing file: the scan reports it as unreadable_file
            key = scan_key(name, scope, target_digest)
        with step.batch() as log:
            state = log.con.execute("SELECT status, resume_offset FROM reddit_dump_scan WHERE scan_key = ?", [key]).fetchone()
        if state and state[0] == "complete":
            step.counts[f"dump_files_already_scanned:{scope}"] += 1
        else:
            pending.append((path, name, key, state))
    if not pending:
        return
    with step_cluster() as client:
        scans = _FileScans(source, kind, selection, client)
        started = [scans.start(path, name, key, state[1] if state else 0) for path, name, key, state in pending]
        for path, name, key, state in pending:
            progress = _ScanProgress(key, name, scope, target_digest)
            lines = started.pop(0)()  # a cluster task's result leaves the cluster's memory once taken
            if state:  # resuming: the line at the checkpoint was committed already, so it is read but not stored again
                step.counts[f"dump_files_resumed:{scope}"] += 1
                lines = (line for line in lines if _offset(line) is None or _offset(line) > state[1])

            def write(log: ActivityLog, done: list[Done], progress: _ScanProgress = progress) -> None:
                writer.write(log, done)
                progress.advance(log, done)

            run_items(step, writer.stage, map(writer.item, lines), writer.process, write, batch_size=batch_size,
                      record_rejections=False)
            with step.batch() as log:
                progress.finish(log)
            step.counts[f"dump_files_scanned:{scope}"] += 1
            if client is not None:
                step.counts[f"dump_files_scanned_on_the_cluster:{scope}"] += 1


@dataclass(frozen=True)
class _FileScans:
    """Where a step's dump files are scanned: in its own process, streamed (bounded memory, a checkpoint every
    batch), or, with a Dask ``client``, as one cluster task per file, all started at once. A task whose worker
    dies is run again by the cluster on another worker; it returns the file's candidate lines as data."""

    source: DumpSource
    kind: str
    selection: dict[str, Any]
    client: Any | None

    def start(self, path: Path, name: str, key: str, offset: int) -> Callable[[], Iterable[DumpLine | SourceProblem]]:
        """The file's lines from ``offset`` on, to be taken when its turn comes."""
        if self.client is None:
            return lambda: self.source.scan_lines(path, self.kind, start_offset=offset, **self.selection)
        scan = self.client.submit(dump_file_lines, path, self.kind, self.selection, name, self.source.chunk_size,
                                  offset, key=f"{DUMP_SCAN_TASK}:{name}:{key}:{offset}")
        return scan.result


def _offset(line: DumpLine | SourceProblem) -> int | None:
    return line.byte_offset if isinstance(line, DumpLine) else line.origin.byte_offset


@dataclass(frozen=True)
class _ScanProgress:
    """Where a dump scan stands, kept in the warehouse only: the start of the last committed line (which a
    resumed scan skips) and the counts, moved in the transaction of the batch they count."""

    scan_key: str
    locator: str
    scope: str
    target_digest: str

    def advance(self, log: ActivityLog, done: list[Done]) -> None:
        offsets = [d.item.payload.byte_offset for d in done if isinstance(d.item.payload, DumpLine)]
        matched = sum(1 for d in done if d.kept and d.outcome.value is not None)
        self._save(log, "running", max(offsets, default=0), matched, sum(1 for d in done if not d.kept))

    def finish(self, log: ActivityLog) -> None:
        self._save(log, "complete", 0, 0, 0)

    def _save(self, log: ActivityLog, status: str, offset: int, matched: int, problems: int) -> None:
        """Insert the file's row, or move it on, in the batch's transaction (so it rolls back with the batch)."""
        save_dump_scan(
            log.con, scan_key=self.scan_key, locator=self.locator, scope=self.scope, target_digest=self.target_digest,
            status=status, offset=offset, matched=matched, problems=problems, activity_id=log.activity_id,
        )


def _report_unsupported_files(step: Step, source: DumpSource, writer: ObservationWriter) -> None:
    odd = source.unsupported_files()
    if odd:
        with step.batch() as log:
            writer.store(
                log,
                [],
                [
                    SourceProblem(Origin("dump", source.name_of(p)), UNSUPPORTED_FILE, "name matches no dump pattern (RS_/RC_YYYY-MM, <sub>_submissions/_comments)")
                    for p in odd
                ],
            )
        step.counts["dump_files_unsupported"] += len(odd)


def fetch_from_api(
    step: Step,
    source: RedditSource,
    scope: str,
    keys: list[str],
    request: Callable[[list[str]], Iterator[RawItem | SourceProblem]],
    writer: ObservationWriter,
    batch_size: int,
    commit_size: int,
) -> None:
    """Ask an HTTP source for every key it has not answered yet, ``batch_size`` keys a request; each record
    returned is one item of the loop. Failed keys stay pending for the next run."""
    with step.batch() as log:
        done = {
            row[0]
            for row in log.con.execute(
                "SELECT post_id FROM reddit_fetch_done WHERE source_kind = ? AND scope = ?", [source.name, scope]
            ).fetchall()
        }
    pending = [k for k in keys if k not in done]
    step.counts[f"api_keys_already_answered:{source.name}:{scope}"] += len(keys) - len(pending)

    def answers() -> Iterator[Item]:
        for chunk in batched(pending, batch_size):
            items = list(request(chunk))
            failed_keys = {i.item_id for i in items if isinstance(i, SourceProblem) and i.reason_code in _RETRYABLE}
            answered = () if None in failed_keys else tuple(k for k in chunk if k not in failed_keys)
            step.counts[f"api_keys_failed:{source.name}:{scope}"] += len(chunk) - len(answered)
            yield from map(writer.item, items)
            if answered:  # after the chunk's records, so it is committed with or after them
                yield writer.item(_Answered(source.name, answered))

    run_items(step, writer.stage, answers(), writer.process, writer.write, batch_size=commit_size, record_rejections=False)


def merge_pending(step: Step, scope: str, batch_size: int) -> None:
    """Recompute the merged record of every post or comment whose observations changed since its last merge.

    Pending keys are those whose observation count differs from the merged row's (observations are only
    ever added), so observations committed by a run that crashed before merging are merged by the next one.
    They are queued in the warehouse first and taken off the queue batch by batch, in bounded memory; each
    post or comment is one item of the loop, fingerprinted by its observations.
    """
    key, obs_table, table = (
        ("post_id", "reddit_post_observation", "reddit_post")
        if scope == SUBMISSIONS
        else ("comment_id", "reddit_comment_observation", "reddit_comment")
    )
    with step.batch() as log:
        queue_merges(log.con, scope, key, obs_table, table)

    def pending() -> Iterator[Item]:
        pages = step.warehouse.pages("SELECT item_id FROM reddit_merge_queue WHERE scope = ?", [scope], key="item_id", block=batch_size)
        for page in pages:
            chunk = [row[0] for row in page]
            with step.batch() as log, registered(log.con, "_keys", pd.DataFrame({key: chunk})):
                rows = log.con.execute(
                    f"SELECT {key}, observation_id, record FROM {obs_table} WHERE {key} IN (SELECT {key} FROM _keys)"
                    f" ORDER BY {key}, observation_id"
                ).fetchall()
            grouped: dict[str, list[tuple[str, str]]] = {k: [] for k in chunk}
            for k, obs_id, record in rows:
                grouped[k].append((obs_id, record))
            for k, observations in grouped.items():
                yield Item(f"{table}_id:{k}", k, digest_of([o for o, _ in observations]), (k, observations))

    def merge(item: Item) -> Outcome:
        record_type = Post if scope == SUBMISSIONS else Comment
        _, observations = item.payload
        if not observations:  # queued, but its observations are gone: nothing to merge, off the queue
            return Kept(None, count=f"merged:{scope}")
        parsed = [(obs_id, record_type.from_row(json.loads(record))) for obs_id, record in observations]
        by_identity = {id(obj): obs_id for obs_id, obj in parsed}
        winner = merge_observations(obj for _, obj in parsed)
        return Kept(_merged_row(scope, winner, by_identity[id(winner)], len(parsed), step.activity_id), count=f"merged:{scope}")

    def write(log: ActivityLog, done: list[Done]) -> None:
        write_merged(log.con, scope, table, [d.outcome.value for d in done if d.outcome.value is not None],
                     [d.item.payload[0] for d in done])

    run_items(step, f"reddit_{scope}_merge", pending(), merge, write, batch_size=batch_size)


def _merged_row(scope: str, record: Post | Comment, observation_id: str, n_observations: int, activity_id: str) -> dict:
    kind = "reddit_post" if scope == SUBMISSIONS else "reddit_comment"
    common = {
        "entity_id": entity_id(kind, record.content_digest()),
        "observation_id": observation_id,
        "author_hash": record.author_hash,
        "score": record.score,
        "score_observed_at": record.origin.retrieved_at,
        "created_utc": record.created_utc,
        "removed_state": record.removed_state,
        "source_kind": record.origin.source_kind,
        "source_locator": record.origin.locator,
        "source_line_no": record.origin.line_no,
        "source_byte_offset": record.origin.byte_offset,
        "n_observations": n_observations,
        "record": canonical_json(record.to_row()),
        "activity_id": activity_id,
    }
    if scope == SUBMISSIONS:
        return {
            **common,
            "post_id": record.post_id,
            "subreddit": record.subreddit,
            "title": record.title,
            "body": record.body,
            "num_comments": record.num_comments,
            "permalink": record.permalink,
            "url": record.url,
            "crosspost_parent": record.crosspost_parent,
        }
    return {
        **common,
        "comment_id": record.comment_id,
        "post_id": record.post_id,
        "parent_id": record.parent_id,
        "author_is_bot": record.author_is_bot,
        "body": record.body,
        "distinguished": record.distinguished,
        "stickied": bool(record.stickied),
    }


def _read_candidates(step: Step, settings: PhotocritiqueSettings) -> None:
    """Store the ids of every configured list, one item per line; bad lines keep their reason, not silent gaps."""
    for list_file in map(Path, settings.id_lists):
        if not list_file.is_file():
            raise Failure(description=f"id list not found: {list_file}")
        name = step.name_of(list_file)
        lines = (
            Item(id_list_line_key(name, line), f"{name}#line={line}",
                 digest_of([pid, reason, detail]), (line, pid, reason, detail))
            for line, pid, reason, detail in parse_id_list(list_file)
        )
        run_items(step, CANDIDATE_STAGE, lines, lambda item, n=name: _candidate_line(n, item), _write_candidates,
                  batch_size=settings.batch_size, record_rejections=False)


def _candidate_line(list_name: str, item: Item) -> Outcome:
    line, pid, reason, detail = item.payload
    if pid is not None:
        return Kept({"post_id": pid, "list_file": list_name, "line_no": line}, count="candidate_lines")
    detail = f"{Path(list_name).name} {detail}"  # the detail starts "line N"
    return Rejected(reason, detail, value=SourceProblem(_list_origin(list_name, line), reason, detail, None))


def _write_candidates(log: ActivityLog, done: list[Done]) -> None:
    now = utcnow()
    write_candidates(log.con, [{**d.outcome.value, "activity_id": log.activity_id, "recorded_at": now}
                               for d in done if d.kept])
    write_source_problems(log.con, [_problem_row(log, d.outcome.value, "candidates") for d in done if not d.kept])


def _list_origin(list_name: str, line: int) -> Origin:
    return Origin(source_kind="id_list", locator=list_name, line_no=line)


def candidate_ids(step: Step) -> list[str]:
    with step.batch() as log:
        return [row[0] for row in log.con.execute("SELECT post_id FROM reddit_candidate ORDER BY post_id").fetchall()]


def _window_candidates(step: Step, window: SubredditWindow) -> None:
    """In window mode the candidates are the posts the sources found in the subreddit and range.

    Read from the observations (subreddit and creation time are the same in every copy of a post), so the
    candidates are known before the merge, which then runs once for the whole step.
    """
    with step.batch() as log:
        add_window_candidates(log.con, log.activity_id, window.subreddit, window.start_utc, window.end_utc)


def _ingest(
    context: AssetExecutionContext,
    scope: str,
    warehouse: WarehouseResource,
    settings: PhotocritiqueSettings,
    archive_api: RedditArchiveApiResource,
    reddit_api: RedditApiResource,
    read: Callable[[Step, ObservationWriter, list[RedditSource]], None],
) -> MaterializeResult:
    """What both ingestion assets share: the recorded step, the salt check, the sources, the final merge."""
    wh = warehouse.get_warehouse()
    with recorded_step(context, wh, _parameters(settings, archive_api, reddit_api, wh.name_of)) as step:
        step.rekey(REKEY_SCOPE, location_renames)  # a warehouse written before migration 0017, once
        if not settings.enabled():
            step.notes["skipped"] = "no id list or subreddit configured"
            return step.result()
        hasher = settings.hasher()
        _check_salt(step, hasher)
        sources = configured_sources(settings, archive_api, reddit_api, step.name_of)
        _require_sources(sources)
        writer = ObservationWriter(scope, hasher, settings.bot_accounts)
        read(step, writer, sources)
        merge_pending(step, scope, settings.batch_size)
        step.notes["sources"] = [s.name for s in sources]
    return step.result()


def _read_posts(step: Step, writer: ObservationWriter, sources: list[RedditSource], settings: PhotocritiqueSettings) -> None:
    window = settings.window()
    if window is None:
        _read_candidates(step, settings)
        ids = candidate_ids(step)
        target = {"ids": frozenset(ids)}
        target_digest = digest_of(["ids", ids])
    else:
        ids = []
        target = {"window": window}
        target_digest = digest_of(["window", window.subreddit.casefold(), window.start_utc, window.end_utc])
    for source in sources:
        if isinstance(source, DumpSource):
            _report_unsupported_files(step, source, writer)
            scan_dumps(
                step, source, SUBMISSIONS, target_digest,
                target,
                writer, settings.batch_size,
            )
        elif window is None:
            fetch_from_api(step, source, SUBMISSIONS, ids, lambda chunk, s=source: s.submissions(chunk, None), writer,
                           settings.batch_size, settings.batch_size)
        else:  # one key per window: answered once, asked again only after a failure
            fetch_from_api(step, source, SUBMISSIONS, [target_digest], lambda _, s=source: s.submissions(None, window), writer,
                           1, settings.batch_size)
    if window is not None:
        _window_candidates(step, window)


def _read_comments(step: Step, writer: ObservationWriter, sources: list[RedditSource], settings: PhotocritiqueSettings) -> None:
    with step.batch() as log:
        post_ids = [
            row[0]
            for row in log.con.execute(
                "SELECT c.post_id FROM reddit_candidate c JOIN reddit_post p USING (post_id) ORDER BY c.post_id"
            ).fetchall()
        ]
    target_digest = digest_of(["post_ids", post_ids])
    for source in sources:
        if isinstance(source, DumpSource):
            scan_dumps(
                step, source, COMMENTS, target_digest,
                {"post_ids": frozenset(post_ids)},
                writer, settings.batch_size,
            )
        else:
            fetch_from_api(step, source, COMMENTS, post_ids, lambda chunk, s=source: s.comments(chunk), writer,
                           THREADS_PER_COMMIT, settings.batch_size)
    step.notes["posts_with_threads"] = len(post_ids)


@asset(
    metadata=writes("reddit_post", "reddit_candidate", "reddit_post_observation"),
    code_version="1",
    description="Candidate r/photocritique submissions (id lists or a subreddit window) from every configured source;"
    " every copy kept as an observation, merged by latest retrieval; unusable lines kept with a reason.",
)
def reddit_posts(
    context: AssetExecutionContext,
    warehouse: WarehouseResource,
    photocritique: PhotocritiqueSettings,
    reddit_archive_api: RedditArchiveApiResource,
    reddit_api: RedditApiResource,
) -> MaterializeResult:
    return _ingest(
        context, SUBMISSIONS, warehouse, photocritique, reddit_archive_api, reddit_api,
        lambda step, writer, sources: _read_posts(step, writer, sources, photocritique),
    )


@asset(
    metadata=writes("reddit_comment", "reddit_comment_observation"),
    code_version="1",
    deps=[reddit_posts],
    description="Every comment (any depth) of the candidate posts found, from every configured source;"
    " comments in later monthly dumps than their post are found too.",
)
def reddit_comments(
    context: AssetExecutionContext,
    warehouse: WarehouseResource,
    photocritique: PhotocritiqueSettings,
    reddit_archive_api: RedditArchiveApiResource,
    reddit_api: RedditApiResource,
) -> MaterializeResult:
    return _ingest(
        context, COMMENTS, warehouse, photocritique, reddit_archive_api, reddit_api,
        lambda step, writer, sources: _read_comments(step, writer, sources, photocritique),
    )
