"""`aesforge --help` and `aesforge provenance` stay light: the command line, the warehouse section of the config, the
warehouse and the provenance tree import neither dagster-aws (boto3) nor torch nor pandas. Not timed: what is
imported is what costs the time (bench/cli_latency.py times it)."""

import json
import subprocess
import sys

import pytest

from pipelines.config import ConfigError, SAMPLE_CONFIG, load_config, warehouse_settings

HEAVY = ("dagster_aws", "boto3", "torch", "pandas")

PROVENANCE_PATH = """
import json, sys
import pipelines.command
from pipelines.command import parser
from pipelines.config import warehouse_settings
from pipelines.provenance_tree import provenance_json, provenance_tree
from warehouse.provenance_walk import provenance_rows
parser().parse_args(["provenance", "pool_item:x"])
settings = warehouse_settings(__import__("pathlib").Path(sys.argv[1]))
with settings.get_warehouse().transaction() as con:
    rows = provenance_rows(con, "pool_item:x")
provenance_tree("pool_item:x", rows), provenance_json("pool_item:x", rows)
print(json.dumps(sorted(sys.modules)))
"""


def test_the_provenance_path_imports_nothing_heavy(tmp_path):
    config = tmp_path / "aesforge.yaml"
    config.write_text("warehouse:\n  path: w.duckdb\n", encoding="utf-8")
    done = subprocess.run([sys.executable, "-c", PROVENANCE_PATH, str(config)], capture_output=True, text=True,
                          cwd=tmp_path, check=True)
    imported = set(json.loads(done.stdout))
    assert not {name for name in imported if name.split(".")[0] in HEAVY}


def test_the_warehouse_section_alone_reads_as_the_whole_config_does():
    whole = load_config(SAMPLE_CONFIG)["warehouse"]
    alone = warehouse_settings(SAMPLE_CONFIG)
    assert (alone.path, alone.project_root) == (whole["path"], whole["project_root"])


def test_the_warehouse_section_alone_is_still_checked(tmp_path):
    config = tmp_path / "aesforge.yaml"
    config.write_text("warehouse:\n  pth: w.duckdb\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="2:3: warehouse: unknown key 'pth'; did you mean 'path'"):
        warehouse_settings(config)
