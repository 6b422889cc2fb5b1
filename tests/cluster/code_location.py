"""The code location rebuilt from ``$AESFORGE_CONFIG`` each time it is loaded, for the tests' out-of-process runs.

``pipelines.definitions`` reads its config once per process, at import; a test process runs several configs, so the
runs it launches point here instead, and the run process and every worker build the definitions of the config the
test has set in the environment they started with.
"""

from __future__ import annotations

from pathlib import Path

from dagster import Definitions
from dagster._core.definitions.reconstruct import ReconstructableJob, ReconstructableRepository

from pipelines.config import config_path, load_config
from pipelines.definitions import build_definitions


def definitions() -> Definitions:
    return build_definitions(load_config(config_path()))


def reconstructable_job(name: str) -> ReconstructableJob:
    """Job ``name`` of the config at ``$AESFORGE_CONFIG``. Dagster keeps the last job it loaded per process, keyed by
    this pointer, so the pointer names the config's folder (as its working directory): a run of one config never
    gets the job loaded for another."""
    folder = Path(config_path()).parent
    return ReconstructableRepository.for_module(__name__, "definitions", working_directory=str(folder)) \
        .get_reconstructable_job(name)
