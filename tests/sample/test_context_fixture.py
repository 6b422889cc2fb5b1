import csv
import hashlib
import io
import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from assets.context_canvas.logic.contact_sheet import band_height, contact_sheet
from assets.context_canvas.logic.case_records import ContextCase, read_cases, resolve_image
from assets.context_canvas.logic.retention import parse_reviews, retentions
from assets.context_canvas.logic.shortcuts import shortcut_report, text_only_answers
from assets.counterfactual.logic.edit_pairs import check_decision, check_rows, counterfactual_id, planned_edit, spec_rows
from sample.context_fixture import EXPECTED_STATUS, main, write_context_sample
from sample.make_corpus import build_corpus


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("ctx") / "corpus"
    build_corpus(root)
    return root


@pytest.fixture(scope="module")
def written(corpus) -> tuple[Path, dict]:
    out = corpus.parent / "cases"
    return out, write_context_sample(out, corpus)


def _cases(out: Path) -> list[ContextCase]:
    results = list(read_cases(out / "cases.json"))
    assert all(isinstance(r, ContextCase) for r in results), [getattr(r, "message", "") for r in results]
    return results


def test_rerun_is_byte_identical(written, corpus, capsys):
    out, summary = written
    before = {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}
    assert set(before) == {"cases.json", "reviews.csv", "counterfactual/specs.csv", "counterfactual/checks.csv",
                           "counterfactual/edits/ctx-s01.jpg", "counterfactual/edits/ctx-s03.jpg"}
    assert write_context_sample(out, corpus) == summary
    main(["--out", str(out), "--corpus", str(corpus)])
    assert "wrote 8 cases, their review sheet and 2 counterfactual edits" in capsys.readouterr().out
    assert {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()} == before
    assert sum(len(data) for data in before.values()) < 400_000  # small: two edited renders and some text


def test_cases_parse_and_point_into_the_corpus(written, corpus):
    out, summary = written
    cases = _cases(out)
    assert [c.case_id for c in cases] == summary["case_ids"] and len(cases) == 8
    manifest = {row["locator"]: row for row in csv.DictReader((corpus / "manifest.csv").open(encoding="utf-8"))}
    for case in cases:
        for ref, rights in zip(case.images, case.rights, strict=True):
            assert ref.startswith("../corpus/images/") and ("/painting/" in ref or "/photography/" in ref)
            kind, path = resolve_image(ref, out)
            assert kind == "file" and Path(path).is_file()
            row = manifest[ref.removeprefix("../corpus/")]
            assert (rights.title, rights.creator, rights.url) == (row["title"], row["creator"], row["source_url"])
            assert rights.provider == "aesforge synthetic sample" and rights.redistribution == "allowed"
        assert case.source_basis.startswith("Synthetic sample:") and "abstract render" in case.source_basis
    assert any(r.creator == "unknown" for c in cases for r in c.rights)  # copied from the manifest, not filled in
    by_id = {c.case_id: c for c in cases}
    assert summary["multi_image"] == ["ctx-s04"] and len(by_id["ctx-s04"].images) == 2
    assert summary["three_option"] == ["ctx-s05"] and len(by_id["ctx-s05"].options) == 3
    assert summary["with_probe"] == ["ctx-s01"] and [c.case_id for c in cases if c.probe] == ["ctx-s01"]
    assert by_id["ctx-s03"].proposed_assessment
    assert {c.gold for c in cases} == {"A", "B"}
    assert all("probe" not in json.dumps(c.model_input()) for c in cases)


def test_review_sheet_gives_the_expected_statuses(written):
    out, summary = written
    cases = _cases(out)
    with (out / "reviews.csv").open(encoding="utf-8", newline="") as handle:
        reviews, blank = parse_reviews(handle, "reviews.csv", {c.case_id for c in cases})
    assert blank == 0 and len(reviews) == 2 * 8 + 1 == summary["counts"]["review_rows"]
    assert summary["counts"] == {"cases": 8, "images": 9, "review_rows": 17, "needs_adjudication": 1, "rejected": 1,
                                 "retained": 6}
    result = retentions([c.case_id for c in cases], reviews)
    assert {k: v.status for k, v in result.items()} == EXPECTED_STATUS == summary["expected_status"]
    assert result["ctx-s06"].failed_criteria == ("visual_necessity",)
    assert result["ctx-s06"].reasons == ["visual_necessity failed by every reviewer (ana, ben)"]
    assert result["ctx-s07"].reasons[0].startswith("panel adjudication by panel")
    assert result["ctx-s08"].failed_criteria == ("scenario_naturalness",)


def test_multi_image_case_makes_a_contact_sheet_and_the_report_runs(written):
    out, _ = written
    cases = {c.case_id: c for c in _cases(out)}
    paired = cases["ctx-s04"]
    data = [Path(resolve_image(ref, out)[1]).read_bytes() for ref in paired.images]
    sheet = contact_sheet(data, ["Image 1", "Image 2"], height=128, gap=8)
    with Image.open(io.BytesIO(sheet)) as image:
        assert image.height == band_height(128) + 128
    report = shortcut_report(list(cases.values()), text_only_answers(cases.values()))
    assert report["n_cases"] == 8 and report["n_binary"] == 7
    assert report["gold_yes_rate"] == pytest.approx(2 / 7)  # ctx-s02 and s07 of the seven binary cases


def test_every_case_has_a_neutral_and_an_evidence_description(written):
    out, _ = written
    for case in _cases(out):
        assert case.neutral_description and case.evidence_description
        assert case.evidence_description != case.neutral_description
        assert not any(word in case.neutral_description.lower() for word in ("suitable", "should", "fits"))
    by_id = {c.case_id: c for c in _cases(out)}
    assert "lit yellow windows" in by_id["ctx-s01"].evidence_description
    assert "cool palette" in by_id["ctx-s03"].evidence_description


def _pixels(data: bytes) -> np.ndarray:
    with Image.open(io.BytesIO(data)) as image:
        return np.asarray(image.convert("RGB")).astype(int)


def test_counterfactual_sheets_pair_retained_no_cases_with_their_edited_renders(written, corpus):
    out, summary = written
    cases = {c.case_id: c for c in _cases(out)}
    folder = out / "counterfactual"
    plans = [(row.line, planned_edit(row.cells)) for row in spec_rows(folder / "specs.csv")]
    assert [plan.spec.source_id for _, plan in plans] == ["ctx-s01", "ctx-s03"]
    record_ids = {}
    for _, plan in plans:
        case = cases[plan.source.case_id]
        # a retained case whose gold is No on a Yes/No question, edited towards Yes
        assert EXPECTED_STATUS[case.case_id] == "retained" and case.gold_text == "No"
        assert (plan.spec.original_label, plan.spec.intended_label) == ("No", "Yes")
        assert "Synthetic sample: made by a fixed pixel operation" in plan.spec.instruction
        source = Path(resolve_image(case.images[0], out)[1]).read_bytes()
        edited = (folder / plan.edited_image).read_bytes()
        before, after = _pixels(source), _pixels(edited)
        assert before.shape == after.shape and edited != source
        record_ids[case.case_id] = counterfactual_id(hashlib.sha256(source).hexdigest(), plan.spec, "file",
                                                     hashlib.sha256(edited).hexdigest())
        if case.case_id == "ctx-s01":  # the lit windows are gone; the sky above the towers is untouched
            def lit(pixels):
                return int(((pixels[..., 0] > 120) & (pixels[..., 0] - pixels[..., 2] > 50)).sum())
            assert lit(before) > 300 and lit(after) == 0
            assert np.abs(before[:100] - after[:100]).mean() < 2
        else:  # the palette turns from cool blue to warm
            assert before[..., 2].mean() > before[..., 0].mean() + 20
            assert after[..., 0].mean() > after[..., 2].mean() + 20
            assert np.abs(before.mean(axis=2) - after.mean(axis=2)).mean() < 25  # brightness and layout kept
    assert summary["counterfactual"]["record_ids"] == record_ids
    decisions = [check_decision(row.line, row.cells) for row in check_rows(folder / "checks.csv")]
    assert [(d.record_id, d.decision, d.reviewer) for d in decisions] == [
        (record_ids["ctx-s01"], "approved", "ana"), (record_ids["ctx-s03"], "approved", "ana")]


def test_the_corpus_builder_accepts_a_sample_folder_holding_the_case_fixture(tmp_path):
    root = tmp_path / "sample"
    build_corpus(root)
    write_context_sample(root / "context", root)
    build_corpus(root)  # a rebuild over the whole sample (the counterfactual sheets and edits included) is allowed
    assert (root / "context" / "counterfactual" / "specs.csv").is_file()


def test_missing_corpus_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="build the sample corpus first"):
        write_context_sample(tmp_path / "out", tmp_path / "nothing")
