"""Code versions follow the source: an asset's module and the logic it imports, not other assets' modules."""

import sys

from assets.core import code_versions
from assets.core.code_versions import covered, module_closure, source_digest


def test_the_closure_follows_logic_imports_and_stops_at_other_assets():
    closure = module_closure("assets.image_pool.pool")
    assert "assets.image_pool.pool" in closure and "assets.image_pool.logic.clusters" in closure
    # pool.py imports the upstream asset modules to name its deps: their changes arrive as data versions
    assert not {"assets.image_pool.clip_dedup", "assets.image_pool.perceptual_dedup"} & set(closure)
    assert not any(name.startswith(("assets.core.step", "warehouse", "resources")) for name in closure)


def test_plumbing_is_not_covered_but_shared_logic_is():
    assert covered("assets.core.logic.iteration") and covered("assets.designs.logic.perturb")
    assert not covered("assets.core.item_loop") and not covered("warehouse.db") and not covered("dagster")


def test_the_digest_changes_with_a_module_source_and_a_prompt(tmp_path, monkeypatch):
    package = tmp_path / "assets_probe"
    (package / "prompts").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "step.py").write_text("X = 1\n")
    (package / "prompts" / "ask.txt").write_text("Rate it.\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(code_versions, "ASSET_PACKAGES", "assets_probe.")

    def digest() -> str:
        code_versions._source.cache_clear()
        code_versions._prompts.cache_clear()
        return source_digest(["assets_probe.step"])

    first = digest()
    assert digest() == first  # same source, same version
    (package / "prompts" / "ask.txt").write_text("Rate it from 1 to 10.\n")
    second = digest()
    (package / "step.py").write_text("X = 2\n")
    third = digest()
    assert len({first, second, third}) == 3
    sys.modules.pop("assets_probe", None)
