"""`aesforge`: run the pipeline headlessly against a config file, query the warehouse, make the sample.

    aesforge sample [--out data/sample]
    aesforge run [--config FILE] [--job NAME] [--select ASSET ...] [--force] [--partition SHARD]
                 [--executor auto|multiprocess|in_process]
    aesforge sql [--config FILE] "SELECT ..."
    aesforge provenance [--config FILE] [--json] ITEM_ID
    aesforge retry --reason gave_up|internal_error [--stage STAGE] [--config FILE]
    aesforge release NAME [--config FILE] [--out DIR]
    aesforge score --benchmark NAME --predictions FILE [--config FILE]
    aesforge evaluate --benchmark NAME --model ROLE_OR_BASELINE [--condition NAME] [--config FILE]
    aesforge demo
"""

# The command line is read here, with nothing but argparse imported: `aesforge --help` and a mistyped command answer
# at once, and the commands themselves (pipelines/cli.py: Dagster, DuckDB, pandas) are imported only to run.

from __future__ import annotations

import argparse
import sys

BENCHMARK_HELP = "photocritique, critique_canvas, context_canvas, counterfactual, aeseval or poem_benchmark"


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="aesforge", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    sample = commands.add_parser("sample", help="generate the deterministic sample corpus")
    sample.add_argument("--out", default="data/sample")
    run = commands.add_parser("run", help="build what is out of date: every asset (or a job's, or a selection)")
    run.add_argument("--config", help="config file (default: $AESFORGE_CONFIG, ./aesforge.yaml, or the sample config)")
    run.add_argument("--job", default="full_rebuild_job", help="the job to run (default: full_rebuild_job, every asset)")
    run.add_argument("--select", nargs="+", metavar="ASSET", help="only these assets of the job (e.g. source_records"
                     " fetched_files; +name adds its parents, *name everything upstream, name+ / name* downstream)")
    run.add_argument("--force", action="store_true", help="build the selection even where it is up to date")
    run.add_argument("--partition", metavar="SHARD", help="only the partitioned assets (the pool's per-item steps), for"
                     " one pool shard (0 .. f) or a range of them in one run (0..7)")
    run.add_argument("--executor", choices=["auto", "multiprocess", "in_process"], default="auto",
                     help="auto: a process per step when most of the selection is built, else one process (no start-up"
                     " cost per step)")
    run.add_argument(
        "--log-level", default="WARNING", choices=["DEBUG", "INFO", "WARNING", "ERROR"], help="Dagster's console log level"
    )
    sql = commands.add_parser("sql", help="run SQL against the warehouse and print the result")
    sql.add_argument("--config")
    sql.add_argument("query")
    provenance = commands.add_parser("provenance", help="where did this item come from")
    provenance.add_argument("--config")
    provenance.add_argument("item_id", help="an entity id, e.g. a pool_item_id from the pool_images view")
    provenance.add_argument("--json", action="store_true", help="every row of the provenance macro as JSON")
    retry = commands.add_parser("retry", help="make records rejected for a reason pending again (gave_up)")
    retry.add_argument("--config")
    retry.add_argument("--reason", required=True, help="the rejection to reset: gave_up or internal_error")
    retry.add_argument("--stage", help="with internal_error: only this stage's quarantined items (rejection.stage)")
    release = commands.add_parser("release", help="write one dataset's release folder from the warehouse")
    release.add_argument("name", help="the dataset: photocritique, critique_canvas, context_canvas, aeseval, poem_benchmark")
    release.add_argument("--config")
    release.add_argument("--out", help="the release folder (default: <releases.out_dir>/<name>)")
    release.add_argument("--executor", choices=["multiprocess", "in_process"], default="in_process")
    score = commands.add_parser("score", help="score a predictions file (JSON lines or Parquet) on a benchmark release")
    score.add_argument("--benchmark", required=True, help=BENCHMARK_HELP)
    score.add_argument("--predictions", required=True, help="the predictions file")
    score.add_argument("--config")
    evaluate = commands.add_parser("evaluate", help="ask a model for predictions on a benchmark release and score them")
    evaluate.add_argument("--benchmark", required=True, help=BENCHMARK_HELP)
    evaluate.add_argument("--model", required=True, help="a role of the models section or a named configuration"
                          " (models.configs), or a baseline (baseline:title, baseline:instruction, baseline:always_no,"
                          " baseline:first_option, baseline:calibration_mean)")
    evaluate.add_argument("--condition", help="the prompt condition (default: the benchmark's primary one)")
    evaluate.add_argument("--config")
    commands.add_parser("demo", help="generate the sample and run the whole pool on it")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    from pipelines.cli import dispatch

    return dispatch(args)


if __name__ == "__main__":
    sys.exit(main())
