"""What the Dagster catalog shows of each asset and check: every check says what it checks (the UI shows "No
description provided" otherwise); every asset carries its kinds, owners and pipeline tag."""

from dagster import AssetKey

from pipelines.definitions import defs


def test_every_asset_check_has_a_description():
    specs = [spec for checks in defs.asset_checks or [] for spec in checks.check_specs]
    assert len(specs) > 40
    assert [spec.name for spec in specs if not (spec.description or "").strip()] == []
    pool = {spec.name: spec.description for spec in specs if spec.asset_key.to_user_string() == "image_pool"}
    assert pool["width_within_bounds"].startswith("width between 128 and 16384 px (the configured value")


def test_every_asset_has_its_kinds_owners_and_pipeline_tag():
    graph = defs.resolve_asset_graph()
    for key in graph.get_all_asset_keys():
        node = graph.get(key)
        assert {"duckdb", "python"} <= set(node.kinds) and node.owners == ["team:aesforge"], key
        assert node.tags["aesforge/pipeline"] == node.group_name, key
    assert "pytorch" in graph.get(AssetKey("clip_duplicates")).kinds
    assert {"openai", "gemini"} <= set(graph.get(AssetKey("critique_pairs")).kinds)
    assert graph.get(AssetKey("clip_duplicates")).code_version.startswith("2+")  # declared version + source digest
