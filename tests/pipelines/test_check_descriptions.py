"""Every asset check says what it checks (the Dagster UI shows "No description provided" otherwise)."""

from pipelines.definitions import defs


def test_every_asset_check_has_a_description():
    specs = [spec for checks in defs.asset_checks or [] for spec in checks.check_specs]
    assert len(specs) > 40
    assert [spec.name for spec in specs if not (spec.description or "").strip()] == []
    pool = {spec.name: spec.description for spec in specs if spec.asset_key.to_user_string() == "image_pool"}
    assert pool["width_within_bounds"].startswith("width between 128 and 16384 px (the configured value")
