"""The photocritique evaluation asking a remote model end to end: the real ``openai`` SDK against the loopback
server (real wire protocol, images in the request, injected 429 / 500 / cut bodies / answers cut at the token
budget), the call log, the lineage and the leaderboard; and a real `aesforge run` process SIGKILLed mid-run and
resumed without asking a logged call again."""

import hashlib
import io
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from PIL import Image, ImageDraw

from assets.evaluation.logic.benchmark_items import LAYOUTS
from assets.evaluation.logic.run_identity import item_entity_id
from resources.blob_store import LocalBlobStore
from tests.core.test_model_call_shards import durable_answers
from tests.evaluation.test_benchmark_scores import POST
from tests.support.critique_harness import OPENAI_KEY, failures, materialize, remote_roles
from tests.support.model_servers import (OPENAI, OPENAI_PATH, TRUNCATED_BODY, InjectedFailure, ModelApiServer, wire_images,
                                         wire_user_text)
from warehouse.db import Warehouse

LAYOUT = LAYOUTS["photocritique"]
MODEL = "openai/loop-vision-1"  # remote_roles' annotator
SAMPLES = 3  # capped_plain, the primary condition: three single-pass calls per post, seeds 42, 43, 44
POSTS = {  # id: (title, photo size): each photo has its own size, so an answer tells which photo it was about
    "p1": ("Harbour at dusk with my new lens", (160, 120)),
    "p2": ("First portrait session with a friend", (120, 160)),
    "p3": ("Foggy morning by the river bridge", (200, 100)),
    "p4": ("Street corner in the evening rain", (96, 96)),
}
REFERENCES = ["the horizon is tilted and the sky is blown out", "lovely colours but the crop could be tighter",
              "too much empty foreground in the frame"]
CUT = ("p1", 43)  # (post, seed) whose answer stops at the token budget (finish_reason "length")
EMPTY = "p4"  # its seed-44 critique and the repair of it are empty: the (post, sample) is rejected


def _jpeg(size: tuple[int, int], n: int) -> bytes:
    image = Image.new("RGB", size, (40 + 50 * n, 110, 190 - 35 * n))
    ImageDraw.Draw(image).ellipse([size[0] // 4, size[1] // 4, size[0] // 2 + 10 * n, size[1] // 2 + 8], fill=(235, 220, 180))
    out = io.BytesIO()
    image.save(out, format="JPEG", quality=85)
    return out.getvalue()


PHOTOS = {pid: _jpeg(size, n) for n, (pid, (_, size)) in enumerate(POSTS.items())}


def _release(root: Path, blobs: bool = True) -> dict[str, str]:
    """A photocritique release folder under ``root/releases`` whose rows embed the JPEG bytes (as `aesforge
    release` writes them); with ``blobs`` the project's blob store has them too. Returns each post's image sha256."""
    shas = {pid: LocalBlobStore(root / "blobs").put_bytes(data).sha256 if blobs else hashlib.sha256(data).hexdigest() for pid, data in PHOTOS.items()}
    folder = root / "releases" / "photocritique"
    (folder / "data" / "posts").mkdir(parents=True)
    rows = [{"id": pid, "title": title, "body": "Any advice welcome.", "image_sha256": shas[pid],
             "image": {"bytes": PHOTOS[pid], "path": f"images/{shas[pid][:2]}/{shas[pid]}.jpg"},
             "critiques": [{"rank": r + 1, "body": body} for r, body in enumerate(REFERENCES)]}
            for pid, (title, _) in POSTS.items()]
    pq.write_table(pa.Table.from_pylist(rows, schema=POST), folder / "data/posts/test-00000-of-00001.parquet")
    (folder / "release.json").write_text(json.dumps({"dataset": "photocritique", "version": "0.1.0",
                                                     "files": {"data/posts/test-00000-of-00001.parquet": "x"}}))
    return shas


def _config(root: Path, server: ModelApiServer, max_concurrency: int = 4) -> Path:
    config = root / "config.yaml"
    config.write_text(yaml.safe_dump({
        "warehouse": {"path": "warehouse.duckdb"}, "blob_store": {"root": "blobs"}, "models": remote_roles(server),
        "evaluation": {"releases_dir": "releases", "bootstrap_resamples": 200,
                       "runs": [{"benchmark": "photocritique", "model": "annotator", "max_concurrency": max_concurrency}]}}))
    return config


def _post_of(body: dict) -> str:
    """Which post a request is about, from the size of the photo it carries."""
    ((_, data),) = wire_images(body)
    with Image.open(io.BytesIO(data)) as image:
        return next(pid for pid, (_, size) in POSTS.items() if size == image.size)


def critic(body: dict) -> str:
    """The model's critique, computed from what was sent: the photo's format and size, the title in the prompt,
    the seed and the token budget."""
    ((mime, data),) = wire_images(body)
    with Image.open(io.BytesIO(data)) as image:
        (width, height), kind = image.size, image.format
    if _post_of(body) == EMPTY and body.get("seed") in (44, None):  # the seed-44 call, and its repair (no seed)
        return json.dumps({"critique": "  "})
    title = re.search(r"^Title: (.*)$", wire_user_text(body), re.M)
    return (f"For '{title[1] if title else 'this photo'}' ({width}x{height} {kind}, {mime}) the horizon is tilted and"
            f" the crop could be tighter; lovely colours in the frame. Take {body.get('seed')} within"
            f" {body.get('max_tokens')} tokens.")


class BudgetServer(ModelApiServer):
    """The loopback server, except that the answer to the ``CUT`` request stops at its token budget, as a real
    model's does: the first half of the text, ``finish_reason: "length"``, all the budget's tokens used."""

    def _success(self, api, model, body, text):
        if api != OPENAI or (_post_of(body), body.get("seed")) != CUT:
            return super()._success(api, model, body, text)
        reply = super()._success(api, model, body, text[: len(text) // 2])
        payload = json.loads(reply.body)
        payload["choices"][0]["finish_reason"] = "length"
        payload["usage"]["completion_tokens"] = body["max_tokens"]
        return type(reply).json(payload)


def _sample_of(detail: str) -> tuple[str, int]:
    """(post, sample) a rejection of the predictions stage is about (its detail opens with the item's locator)."""
    found = re.match(r"photocritique/(\w+)#(?:sample|call)=(\d+)", detail)
    return found[1], int(found[2])


def _outcomes(wh: Warehouse) -> tuple[list[tuple[str, int]], dict[tuple[str, int], str]]:
    predicted = [tuple(r) for r in wh.query("SELECT item_id, sample FROM evaluation_prediction p JOIN evaluation_run r"
                                            " USING (run_key) WHERE r.source = 'model'").itertuples(index=False)]
    rejected = {_sample_of(detail): reason for reason, detail in wh.query(
        "SELECT reason_code, detail FROM rejection WHERE stage = 'photocritique_predictions'").itertuples(index=False)}
    return predicted, rejected


def _snapshot(wh: Warehouse) -> dict:
    """Every row the evaluation writes, without the columns that name the activity that last wrote it."""
    tables = {"evaluation_prediction": "run_key, item_id, sample", "evaluation_run": "run_key",
              "evaluation_summary": "run_key, metric", "evaluation_score": "run_key, item_id, metric",
              "rejection": "entity_id, stage", "model_call": "call_id", "entity": "entity_id",
              "was_derived_from": "entity_id, source_entity_id, relation"}
    return {table: wh.query(f"SELECT * FROM {table} ORDER BY {order}").drop(
        columns=["activity_id", "recorded_at"], errors="ignore").to_dict("records") for table, order in tables.items()}


def test_an_evaluation_through_the_openai_sdk_survives_429_500_and_cut_answers(tmp_path, keys):
    """Every (post, sample) ends as one prediction or one rejection with its reason; transport failures are
    retried and counted in the call log; an answer cut at the token budget is kept as the prediction; each
    prediction derives from its benchmark item and its model call; the run is on the leaderboard; and a second
    materialization sends nothing and changes no row."""
    shas = _release(tmp_path)
    injected = [InjectedFailure(429, path=OPENAI_PATH, match=POSTS["p1"][0], retry_after="0"),
                InjectedFailure(500, path=OPENAI_PATH, match=POSTS["p2"][0]),
                InjectedFailure(TRUNCATED_BODY, path=OPENAI_PATH, match=POSTS["p3"][0])]
    with BudgetServer(responder=critic, failures=injected, openai_key=OPENAI_KEY) as server:
        config = _config(tmp_path, server)
        result = materialize(config, "photocritique_evaluation")
        assert result.success, failures(result)
        sent = list(server.requests)
        wh = Warehouse(tmp_path / "warehouse.duckdb", root=tmp_path)

        # the wire: each request carries its post's photo as sent, with the prompt rendered from the post
        assert all(r.api == OPENAI and r.authorized for r in sent)
        for r in sent:
            ((mime, data),) = wire_images(r.body)
            assert mime == "image/jpeg" and data == PHOTOS[_post_of(r.body)]
        originals = [r for r in sent if r.body.get("seed") is not None and r.outcome == "ok"]
        assert sorted((_post_of(r.body), r.body["seed"]) for r in originals) == [
            (pid, 42 + k) for pid in POSTS for k in range(SAMPLES)]
        assert all(POSTS[_post_of(r.body)][0] in wire_user_text(r.body) for r in originals)
        # 12 calls + 1 repair answered; 429, 500 and the cut body each cost one more attempt
        assert Counter(r.outcome for r in sent) == {"ok": 13, "429": 1, "500": 1, "truncated_body": 1}

        # one outcome per (post, sample): 11 critiques, and the empty one rejected with its reason
        predicted, rejected = _outcomes(wh)
        assert len(predicted) == len(set(predicted)) == 11
        assert rejected == {(EMPTY, 2): "invalid_answer"}
        assert set(predicted) | set(rejected) == {(pid, k) for pid in POSTS for k in range(SAMPLES)}

        # the call log: one row per logical call, retried attempts counted, the repair pointing at what it repairs
        calls = wh.query("SELECT call_id, status, attempts, image_sha256, params, repair_of, output_tokens, response_text"
                         " FROM model_call WHERE role <> 'judge'")
        assert len(calls) == 13 and set(calls["status"]) == {"ok"}
        by_image = {sha: pid for pid, sha in shas.items()}
        retried = sorted(by_image[sha] for sha in calls[calls["attempts"] == 2]["image_sha256"])
        assert retried == ["p1", "p2", "p3"] and calls["attempts"].max() == 2
        repair = calls[calls["repair_of"].notna()]
        assert len(repair) == 1 and by_image[repair["image_sha256"].iloc[0]] == EMPTY

        # the answer cut at the budget (finish_reason "length") is kept as it came: half a critique, not rejected
        cut_body = next(r.body for r in originals if (_post_of(r.body), r.body["seed"]) == CUT)
        full = critic(cut_body)
        cut = wh.query("SELECT p.prediction, c.output_tokens, c.status FROM evaluation_prediction p JOIN model_call c"
                       " USING (call_id) WHERE p.item_id = ? AND p.sample = ?", [CUT[0], CUT[1] - 42]).iloc[0]
        assert cut["prediction"] == full[: len(full) // 2].strip() and cut["status"] == "ok"
        assert cut["output_tokens"] == cut_body["max_tokens"] == 400

        # lineage: each prediction an entity derived from its benchmark item and from the call that answered it
        rows = wh.query(
            "SELECT p.entity_id, p.item_id, p.sample, p.call_id, e.kind, c.image_sha256, c.params,"
            " (SELECT kind FROM entity WHERE entity_id = p.call_id) AS call_kind,"
            " (SELECT list(source_entity_id || ' ' || relation ORDER BY relation) FROM was_derived_from d"
            "   WHERE d.entity_id = p.entity_id) AS edges,"
            " (SELECT count(*) FROM was_generated_by g WHERE g.entity_id = p.entity_id) AS generated"
            " FROM evaluation_prediction p JOIN entity e USING (entity_id) JOIN model_call c USING (call_id)")
        assert len(rows) == 11
        for row in rows.itertuples(index=False):
            assert row.kind == "evaluation_prediction" and row.call_kind == "model_call" and row.generated == 1
            assert sorted(row.edges) == sorted([f"{item_entity_id(LAYOUT, row.item_id)} answers", f"{row.call_id} answered_by"])
            assert row.image_sha256 == shas[row.item_id] and json.loads(row.params)["seed"] == 42 + row.sample

        # the leaderboard: the run scored with ROUGE-L over all four posts, beside the human baseline
        board = wh.query("SELECT model, mean, ci_low, ci_high, n_items FROM evaluation_leaderboard WHERE metric = 'rouge_l'"
                         " AND status = 'ran'").set_index("model")
        assert set(board.index) == {MODEL, "human"}
        assert board.loc[MODEL, "n_items"] == 4 and board.loc[MODEL, "ci_low"] <= board.loc[MODEL, "mean"] <= board.loc[MODEL, "ci_high"]
        assert 0 < board.loc[MODEL, "mean"] < 1

        # again: every answer (the rejected one's too) comes from the call log; nothing is sent, no row changes
        before = _snapshot(wh)
        exported = {f: f.read_bytes() for f in (tmp_path / "evaluation" / "photocritique").glob("*.jsonl")}
        again = materialize(config, "photocritique_evaluation")
        assert again.success, failures(again)
        assert len(server.requests) == len(sent)
        assert _snapshot(wh) == before
        assert len(exported) == 1 and {f: f.read_bytes() for f in exported} == exported


def test_a_release_that_embeds_its_images_is_evaluated_without_the_blob_store(tmp_path, keys):
    """A downloaded release (image bytes in its rows, none in this project's blob store) is asked about its
    photos, not rejected as image_unavailable."""
    _release(tmp_path, blobs=False)
    with ModelApiServer(responder=critic, openai_key=OPENAI_KEY) as server:
        result = materialize(_config(tmp_path, server), "photocritique_evaluation")
        assert result.success, failures(result)
        predicted, rejected = _outcomes(Warehouse(tmp_path / "warehouse.duckdb", root=tmp_path))
    assert "image_unavailable" not in rejected.values()
    assert len(predicted) == 11 and len(server.requests) == 13


def test_a_call_that_failed_for_good_is_asked_again_and_its_rejection_withdrawn(tmp_path, keys):
    """A call whose retries all failed is logged as failed and its (post, sample) rejected with the status; the next
    run asks it again (a transport failure is never cached) and, answered, it is no longer rejected."""
    _release(tmp_path)
    # One call at a time: the first p2 request and its two retries all get the 500 (max_retries 2).
    injected = [InjectedFailure(500, path=OPENAI_PATH, match=POSTS["p2"][0], times=3)]
    with ModelApiServer(responder=critic, failures=injected, openai_key=OPENAI_KEY) as server:
        config = _config(tmp_path, server, max_concurrency=1)
        assert materialize(config, "photocritique_evaluation").success
        wh = Warehouse(tmp_path / "warehouse.duckdb", root=tmp_path)
        failed = wh.query("SELECT status, attempts, error FROM model_call WHERE role <> 'judge' AND status <> 'ok'")
        assert failed[["status", "attempts"]].values.tolist() == [["http_error", 3]] and "HTTP 500" in failed["error"][0]
        predicted, rejected = _outcomes(wh)
        assert len(predicted) == 10 and rejected == {("p2", 0): "http_error", (EMPTY, 2): "invalid_answer"}
        sent = len(server.requests)
        assert materialize(config, "photocritique_evaluation").success  # a transport failure is never cached
        assert len(server.requests) - sent == 1
        predicted, rejected = _outcomes(wh)
    assert len(predicted) == 11 and ("p2", 0) in predicted
    assert rejected == {(EMPTY, 2): "invalid_answer"}  # the answered (post, sample) is no longer rejected


def test_a_killed_evaluation_resumes_without_repeating_a_logged_call(tmp_path, keys):
    """SIGKILL a real `aesforge run` of the evaluation (one call at a time against a slow server) after a few
    requests, then resume: only the answers not logged before the kill (committed, or durable in the dead run's call
    shard, which the resumed run commits first) are asked, and no prediction doubles."""
    _release(tmp_path)
    with ModelApiServer(responder=critic, openai_key=OPENAI_KEY, latency_s=0.3) as server:
        config = _config(tmp_path, server, max_concurrency=1)
        (tmp_path / "dagster_home").mkdir()
        env = {**os.environ, "DAGSTER_HOME": str(tmp_path / "dagster_home")}
        env.pop("AESFORGE_CONFIG", None)
        command = [str(Path(sys.executable).parent / "aesforge"), "run", "--config", str(config),
                   "--select", "photocritique_evaluation", "--executor", "in_process"]
        output = (tmp_path / "run.log").open("w")
        worker = subprocess.Popen(command, env=env, stdout=output, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 120
        # Six requests seen: the fourth answer came back one request's latency ago, time enough for the run's
        # write-behind call log (fsynced to its shard before the asking thread goes on) to hold it.
        while len(server.requests) < 6 and worker.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert worker.poll() is None, (tmp_path / "run.log").read_text()[-3000:]
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait(timeout=30)
        assert worker.returncode == -signal.SIGKILL  # killed mid-run, not finished
        wh = Warehouse(tmp_path / "warehouse.duckdb", root=tmp_path)
        logged = sum(role != "judge" for role in durable_answers(wh).values())
        assert 4 <= logged < 12  # some answers were logged, some were still to come
        sent_before = len(server.requests)
        result = materialize(config, "photocritique_evaluation")
        assert result.success, failures(result)
        # 4 posts x 3 samples + the empty critique's repair = 13 answers; the resumed run asked only the unlogged ones
        assert len(server.requests) - sent_before == 13 - logged
    counts = wh.query(
        "SELECT (SELECT count(*) FROM model_call WHERE role <> 'judge' AND status = 'ok') AS calls,"
        " (SELECT count(DISTINCT cache_key) FROM model_call WHERE role <> 'judge') AS keys,"
        " (SELECT count(*) FROM evaluation_prediction) AS predictions,"
        " (SELECT count(DISTINCT (item_id, sample)) FROM evaluation_prediction) AS answered,"
        " (SELECT count(*) FROM model_call_lease) AS leases").iloc[0].to_dict()
    assert counts == {"calls": 13, "keys": 13, "predictions": 11, "answered": 11, "leases": 0}
    assert _outcomes(wh)[1] == {(EMPTY, 2): "invalid_answer"}
