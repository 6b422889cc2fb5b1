"""A step's inputs digest: its settings and the files they name, not the places it writes to."""

import os
from typing import Optional

from pydantic import BaseModel, Field

from assets.core.input_fingerprint import input_paths, inputs_fingerprint
from resources.config_paths import ConfigPath, OutputPath


class Source(BaseModel):
    path: ConfigPath


class Probe(BaseModel):
    manifests: list[ConfigPath] = Field(default_factory=list)
    sources: list[Source] = Field(default_factory=list)
    checks: Optional[ConfigPath] = None
    export_dir: OutputPath = "exports"
    threshold: int = 8


def probe(root) -> Probe:
    return Probe(manifests=[str(root / "in" / "m.csv")], sources=[Source(path=str(root / "in" / "folder"))],
                 checks=str(root / "in" / "checks.csv"), export_dir=str(root / "out"))


def layout(root) -> None:
    (root / "in" / "folder" / "sub").mkdir(parents=True)
    (root / "out").mkdir()
    (root / "in" / "m.csv").write_text("locator\na.png\n")
    (root / "in" / "folder" / "sub" / "x.png").write_bytes(b"x")


def test_marked_inputs_are_found_in_lists_nested_models_and_optionals_but_outputs_are_not(tmp_path):
    settings = probe(tmp_path)
    assert sorted(input_paths(settings)) == sorted(str(tmp_path / "in" / name) for name in ("m.csv", "folder", "checks.csv"))


def test_the_digest_follows_settings_and_input_files_and_ignores_outputs(tmp_path):
    layout(tmp_path)
    settings = probe(tmp_path)
    first = inputs_fingerprint({"probe": settings}, tmp_path)
    (tmp_path / "out" / "export.jsonl").write_text("{}\n")
    assert inputs_fingerprint({"probe": settings}, tmp_path) == first  # writing an export changes nothing
    assert inputs_fingerprint({"probe": settings, "warehouse": settings}, tmp_path) == first  # locations are not inputs
    assert inputs_fingerprint({"probe": settings.model_copy(update={"threshold": 9})}, tmp_path) != first
    (tmp_path / "in" / "folder" / "sub" / "y.png").write_bytes(b"y")  # a new file in a source folder
    second = inputs_fingerprint({"probe": settings}, tmp_path)
    assert second != first
    manifest = tmp_path / "in" / "m.csv"
    manifest.write_text("locator\nb.png\n")  # same size, new content and time
    os.utime(manifest, ns=(1, 1))
    assert inputs_fingerprint({"probe": settings}, tmp_path) != second
    (tmp_path / "in" / "checks.csv").write_text("record_id,decision\n")  # an optional input appearing
    assert inputs_fingerprint({"probe": settings}, tmp_path) not in (first, second)


def test_a_moved_project_keeps_its_digest(tmp_path):
    for name in ("one", "two"):
        layout(tmp_path / name)
        stamp = 1_700_000_000_000_000_000
        for folder, _, files in os.walk(tmp_path / name):
            for file in files:
                os.utime(os.path.join(folder, file), ns=(stamp, stamp))
    assert (inputs_fingerprint({"probe": probe(tmp_path / "one")}, tmp_path / "one")
            == inputs_fingerprint({"probe": probe(tmp_path / "two")}, tmp_path / "two"))
