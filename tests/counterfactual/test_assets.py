"""Counterfactual edits materialized for real: pool images edited through the real openai and google-genai SDKs
against a loopback server, stored as synthetic diagnostics derived from their source, never as pool images."""

import io

import numpy as np
import pytest
import yaml
from dagster import AssetKey, DagsterInstance
from PIL import Image

from pipelines.config import load_config
from pipelines.definitions import build_definitions
from tests.support.critique_harness import critique_config
from tests.support.pool_harness import run_pool
from tests.support.model_servers import InjectedFailure, ModelApiServer, invert_named_region
from warehouse.db import Warehouse

KEY = "sk-loopback-edit-never-stored"


def _edit(config):
    job = build_definitions(load_config(config)).resolve_job_def("full_rebuild_job")
    return job.execute_in_process(instance=DagsterInstance.ephemeral(), raise_on_error=False,
                                  asset_selection=[AssetKey("counterfactual_edits")])


def _configure(config, specs, server, provider: str) -> None:
    data = yaml.safe_load(config.read_text())
    data["image_editor"] = {"provider": provider, "model": "loop-edit-1", "api_key_env": "LOOP_EDIT_KEY",
                            "base_url": server.openai_base_url if provider == "openai" else server.gemini_base_url,
                            "max_retries": 2, "backoff_s": 0.01, "max_backoff_s": 0.1, "timeout_s": 5}
    data["counterfactual"] = {"specs": str(specs)}
    config.write_text(yaml.safe_dump(data))


@pytest.mark.parametrize("provider", ["openai", "gemini"])
def test_edits_are_synthetic_derived_and_done_once(tmp_path, monkeypatch, provider):
    monkeypatch.setenv("LOOP_EDIT_KEY", KEY)
    config = critique_config(tmp_path)
    assert run_pool(config).success
    wh = Warehouse(tmp_path / "warehouse.duckdb")
    items = wh.query("SELECT pool_item_id, file_sha256 FROM pool_images ORDER BY pool_item_id")
    specs = tmp_path / "specs.csv"
    specs.write_text(
        "source_id,decisive_cue,instruction,original_label,intended_label\n"
        f"{items.iloc[0, 0]},the dark sky,Replace the left half with a bright daytime sky,No,Yes\n"
        f"{items.iloc[1, 0]},the mood,Make the top half calmer,Yes,No\n"
        "pool_item:not-in-the-pool,a cue,Change it,No,Yes\n", encoding="utf-8")
    failures = [InjectedFailure(429, retry_after="0", times=1)]
    with ModelApiServer(failures=failures, openai_key=KEY, gemini_key=KEY) as server:
        _configure(config, specs, server, provider)
        assert _edit(config).success
        sent = len(server.requests)
        edits = wh.query("SELECT * FROM counterfactual_edit ORDER BY source_id")
        assert len(edits) == 2 and edits["synthetic"].all() and set(edits["kind"]) == {"counterfactual_edit"}
        assert set(edits["manual_check"]) == {"pending"} and set(edits["model"]) == {"loop-edit-1"}
        assert edits["attempts"].max() == 2  # the 429 was waited out and retried
        # The stored output is exactly the server's edit of the source bytes under the prompt we sent.
        first = edits[edits["source_id"] == items.iloc[0, 0]].iloc[0]
        source = (tmp_path / "blobs" / first["source_sha256"][:2] / first["source_sha256"][2:4] / first["source_sha256"]).read_bytes()
        output = (tmp_path / "blobs" / first["output_sha256"][:2] / first["output_sha256"][2:4] / first["output_sha256"]).read_bytes()
        expected = np.asarray(Image.open(io.BytesIO(invert_named_region(source, first["prompt"]))).convert("RGB"))
        assert (np.asarray(Image.open(io.BytesIO(output)).convert("RGB")) == expected).all()
        assert "left half" in first["prompt"] and "Yes" not in first["prompt"]  # labels stay out of the prompt
        # Lineage to the source; never a pool image; the unknown source is rejected with its reason.
        edges = wh.query("SELECT source_entity_id, relation FROM was_derived_from WHERE entity_id = ?", [first["record_id"]])
        assert edges.values.tolist() == [[items.iloc[0, 0], "counterfactual_of"]]
        assert not set(edits["output_sha256"]) & set(wh.query("SELECT file_sha256 FROM file_decode")["file_sha256"])
        assert wh.scalar("SELECT reason_code FROM rejection WHERE stage = 'counterfactual_edit'") == "unknown_source"
        # Done once: a re-run sends nothing.
        assert _edit(config).success
        assert len(server.requests) == sent
        # Manual checks: one approved, one rejected with a note; the history keeps who decided what.
        ids = list(edits["record_id"])
        checks = tmp_path / "checks.csv"
        checks.write_text(f"record_id,decision,reviewer,note\n{ids[0]},approved,rui,\n{ids[1]},rejected,rui,sky edge smeared\n",
                          encoding="utf-8")
        data = yaml.safe_load(config.read_text())
        data["counterfactual"]["checks"] = str(checks)
        config.write_text(yaml.safe_dump(data))
        assert _edit(config).success
        states = dict(wh.query("SELECT record_id, manual_check FROM counterfactual_edit").itertuples(index=False))
        assert states == {ids[0]: "approved", ids[1]: "rejected"}
        history = wh.scalar("SELECT history FROM counterfactual_edit WHERE record_id = ?", [ids[1]])
        assert '"sky edge smeared"' in history and '"pending"' in history
        # A rejected edit is final: asking to approve it is that row's rejection, naming the line, and changes nothing.
        checks.write_text(f"record_id,decision,reviewer,note\n{ids[1]},approved,rui,\n", encoding="utf-8")
        assert _edit(config).success
        code, detail = wh.query("SELECT reason_code, detail FROM rejection WHERE stage = 'counterfactual_check'").iloc[0]
        assert code == "invalid_manual_check_transition" and f"{checks}#line=2" in detail
        assert wh.scalar("SELECT manual_check FROM counterfactual_edit WHERE record_id = ?", [ids[1]]) == "rejected"
    with Warehouse(tmp_path / "warehouse.duckdb").transaction() as con:
        dumped = " ".join(str(r) for r in con.execute("SELECT * FROM counterfactual_edit").fetchall())
    assert KEY not in dumped


def test_each_bad_spec_row_is_rejected_naming_its_line_and_the_others_are_edited(tmp_path, monkeypatch):
    monkeypatch.setenv("LOOP_EDIT_KEY", KEY)
    config = critique_config(tmp_path)
    assert run_pool(config).success
    wh = Warehouse(tmp_path / "warehouse.duckdb")
    source = wh.scalar("SELECT pool_item_id FROM pool_images ORDER BY 1 LIMIT 1")
    specs = tmp_path / "specs.csv"
    specs.write_bytes(("source_id,decisive_cue,instruction,original_label,intended_label\n"
                       "pool_item:a,cue,Change it,No,No\n").encode()
                      + "pool_item:b,caf\xe9 sign,Change it,No,Yes\n".encode("latin-1")
                      + f"{source},the sky,Make the top half calmer,Yes,No\n{source},The sky,make the top half calmer,Yes,No\n".encode())
    with ModelApiServer(openai_key=KEY) as server:
        _configure(config, specs, server, "openai")
        assert _edit(config).success
        assert len(server.requests) == 1
    assert wh.scalar("SELECT count(*) FROM counterfactual_edit") == 1
    rejected = dict(wh.query("SELECT regexp_extract(detail, 'line=(\\d+)', 1), reason_code FROM rejection"
                             " WHERE stage = 'counterfactual_edit'").itertuples(index=False))
    assert rejected == {"2": "invalid_counterfactual_spec", "3": "bad_encoding", "5": "duplicate_id"}
    assert all(str(specs) in d for d in wh.query("SELECT detail FROM rejection WHERE stage = 'counterfactual_edit'")["detail"])
