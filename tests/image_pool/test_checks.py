import pandas as pd

from quality.gx_suite import validate
from assets.image_pool.checks import kept_pool_expectations
from sample import synth
from tests.support.pool_harness import run_pool, warehouse_for, write_config


def _pool_frame(**changes):
    frame = pd.DataFrame(
        {
            "record_id": ["r1", "r2"], "image_id": ["i1", "i2"], "cluster_id": ["c1", "c2"], "domain": ["painting", "virtual"],
            "redistribution": ["allowed", "unknown"], "width": [300, 400], "height": [300, 200],
            "title": ["a", "b"], "creator": ["unknown", "x"], "provider": ["p", "p"], "source_url": ["u1", "u2"],
            "license": ["CC0-1.0", "CC0-1.0"],
        }
    )
    for column, values in changes.items():
        frame[column] = values
    return frame


def _failed(frame):
    return {o.name: o for o in validate(frame, "pool", kept_pool_expectations(128, 1000)) if not o.passed}


def test_a_clean_pool_passes_every_expectation():
    assert _failed(_pool_frame()) == {}


def test_each_broken_contract_fails_its_own_expectation():
    broken = _failed(
        _pool_frame(cluster_id=["c1", "c1"], license=["CC0-1.0", None], domain=["painting", "sculpture"], width=[300, 5000])
    )
    assert set(broken) == {"one_kept_per_duplicate_cluster", "license_not_null", "domain_allowed", "width_within_bounds"}
    assert broken["domain_allowed"].unexpected_sample == ["sculpture"]
    assert broken["one_kept_per_duplicate_cluster"].unexpected_count == 2


def test_blocking_check_fails_the_run_and_is_stored(tmp_path):
    folder = tmp_path / "images"
    folder.mkdir()
    for i in range(3):
        synth.render_photo(500 + i, (320, 240)).save(folder / f"p{i}.png")
    config = write_config(tmp_path / "cfg", {"folders": [{"path": str(folder), "provider": "t", "license": "CC0-1.0", "domain": "photography"}]})
    assert run_pool(config).success
    wh = warehouse_for(config)
    with wh.transaction() as con:  # a bug elsewhere that keeps two images of one cluster
        con.execute("UPDATE pool_member SET cluster_id = 'cluster:same'")
    result = run_pool(config)
    assert not result.success
    failed = [e for e in result.get_asset_check_evaluations() if not e.passed]
    assert [e.check_name for e in failed] == ["one_kept_per_duplicate_cluster"]
    stored = wh.query("SELECT passed, details FROM check_result WHERE check_name = 'one_kept_per_duplicate_cluster' AND run_id = ?", [result.run_id])
    assert stored.passed.tolist() == [False] and '"unexpected_count":3' in stored.details[0]
