"""The built wheel, installed into a fresh virtualenv, runs on its own: an editable install finds every file in the
checkout, so only an installed wheel shows package data (prompts, SQL) that the packaging leaves out."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
ROOTS = ("pipelines", "assets", "resources", "quality", "warehouse", "sample")
# Top-level folders of the checkout that are not the source the wheel is built from.
NOT_SOURCE = {".git", ".venv", "data", "build", ".pytest_cache", ".dagster_home", "bench", "docs", "tests"}
POOL = ["source_records", "fetched_files", "normalized_images", "pool_candidates", "perceptual_duplicates",
        "clip_duplicates", "image_pool"]

# Run inside the installed venv: import every module of the installed packages, load every PromptFolder's
# templates, and report where each module came from.
PROBE = """
import importlib, json, pkgutil, sys
import assets, pipelines.definitions
from assets.core.templates import PromptFolder
from assets.poetry.logic.poems import illustration_template
def load(folder, name):
    if folder.package == "assets.poetry.prompts" and name.startswith("illustration_v"):  # its own header and loader
        return illustration_template(name.removeprefix("illustration_v"))
    return folder.load(name)
folders = {}
for info in pkgutil.walk_packages(assets.__path__, "assets."):
    for value in vars(importlib.import_module(info.name)).values():
        if isinstance(value, PromptFolder):
            folders[value.package] = {name: load(value, name).sha256 for name in value.names()}
roots = set(sys.argv[1].split(","))
files = {name: getattr(module, "__file__", None) for name, module in list(sys.modules.items())
         if name.partition(".")[0] in roots}
print(json.dumps({"folders": folders, "files": files}))
"""


@dataclass(frozen=True)
class Installed:
    bin: Path  # the venv's scripts: python, aesforge
    site: Path  # its site-packages, where the wheel's modules must come from
    work: Path  # the working directory: the sample corpus and aesforge.yaml, outside the checkout
    env: dict[str, str]


def _source_only(folder: str, names: list[str]) -> set[str]:
    skip = {name for name in names if name == "__pycache__" or name.endswith(".egg-info")}
    return skip | (set(names) & NOT_SOURCE if Path(folder) == REPO else set())


def _run(*command: str | Path, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    done = subprocess.run([str(c) for c in command], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{command} exited {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Installed:
    """A venv holding only the wheel, seeing the project venv's third-party packages through a path line in a .pth
    file (which, unlike the project venv's own site directory, does not run that directory's .pth files, so the
    editable install's finder stays out)."""
    tmp = tmp_path_factory.mktemp("wheel")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "AESFORGE_CONFIG")}
    env["DAGSTER_HOME"] = str(tmp / "dagster_home")
    (tmp / "dagster_home").mkdir()
    # A copy of the source, so that a stale build/ folder in the checkout cannot add files to the wheel
    # and the build writes nothing into the checkout.
    source = tmp / "source"
    shutil.copytree(REPO, source, ignore=_source_only)
    _run(sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", "-w", tmp / "dist",
         source, cwd=tmp, env=env)
    (wheel,) = (tmp / "dist").glob("aesforge-*.whl")
    venv = tmp / "venv"
    _run(sys.executable, "-m", "venv", "--without-pip", venv, cwd=tmp, env=env)
    python = venv / "bin" / "python"
    _run(sys.executable, "-m", "pip", "--python", python, "install", "--quiet", "--no-deps", "--no-index",
         "--disable-pip-version-check", wheel, cwd=tmp, env=env)
    site = Path(_run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])", cwd=tmp, env=env)
                .stdout.strip())
    project_site = dict.fromkeys(sysconfig.get_paths()[key] for key in ("purelib", "platlib"))
    (site / "aesforge_project_packages.pth").write_text("".join(f"{path}\n" for path in project_site), encoding="utf-8")
    work = tmp / "work"
    work.mkdir()
    _run(venv / "bin" / "aesforge", "sample", "--out", "sample", cwd=work, env=env)
    # The config is found as ./aesforge.yaml (the bundled sample config lives in the checkout, not the wheel).
    (work / "aesforge.yaml").write_text(yaml.safe_dump({
        "warehouse": {"path": "warehouse.duckdb"},
        "blob_store": {"root": "blobs"},
        "pool": {"folders": [{"path": "sample/inbox", "provider": "wheel test", "license": "CC0-1.0"}]},
    }), encoding="utf-8")
    return Installed(bin=venv / "bin", site=site, work=work, env=env)


def test_installed_modules_load_every_packaged_prompt(installed):
    probe = _run(installed.bin / "python", "-c", PROBE, ",".join(ROOTS), cwd=installed.work, env=installed.env)
    report = json.loads(probe.stdout.splitlines()[-1])
    outside = {name: path for name, path in report["files"].items()
               if path is not None and not Path(path).is_relative_to(installed.site)}
    assert report["files"] and not outside, f"modules not imported from the installed wheel: {outside}"
    expected: dict[str, dict[str, str]] = {}
    for path in sorted(REPO.glob("assets/*/prompts/*.txt")):
        expected.setdefault(f"assets.{path.parent.parent.name}.prompts", {})[path.stem] = \
            hashlib.sha256(path.read_bytes()).hexdigest()
    assert report["folders"] == expected


def test_sample_and_a_pool_job_run_from_the_wheel(installed):
    """The fixture ran ``aesforge sample``; a few pool assets run on its inbox."""
    _run(installed.bin / "aesforge", "run", "--config", installed.work / "aesforge.yaml", "--executor", "in_process",
         "--select", *POOL, cwd=installed.work, env=installed.env)
    con = duckdb.connect(str(installed.work / "warehouse.duckdb"), read_only=True)
    try:
        assert con.execute("SELECT DISTINCT status FROM activity").fetchall() == [("success",)]
        assert con.execute("SELECT count(*) FROM pool_images").fetchone()[0] > 0
    finally:
        con.close()
