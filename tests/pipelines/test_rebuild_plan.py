"""The rebuild plan: what a run builds, and why, from what each asset's last materialization recorded."""

from dagster import AssetKey

from pipelines.rebuild_plan import LastBuild, first_wave, rebuild_reasons

A, B, C = AssetKey("a"), AssetKey("b"), AssetKey("c")
ORDER = [A, B, C]
PARENTS = {A: set(), B: {A}, C: {B}}
CODE = {A: "1+x", B: "1+y", C: "1+z"}
INPUTS = {A: "fa", B: "fb", C: "fc"}


def built(**changes) -> dict:
    """Every asset built from the current code and inputs, each reading its parent's current data version."""
    last = {
        A: LastBuild("1+x", "va", {}, "fa"),
        B: LastBuild("1+y", "vb", {A: "va"}, "fb"),
        C: LastBuild("1+z", "vc", {B: "vb"}, "fc"),
    }
    for key, build in changes.items():
        last[AssetKey(key)] = build
    return last


def test_nothing_to_do_when_code_inputs_and_upstream_versions_are_unchanged():
    assert rebuild_reasons(ORDER, PARENTS, CODE, INPUTS, built()) == {}


def test_a_never_built_asset_and_everything_downstream_is_built():
    reasons = rebuild_reasons(ORDER, PARENTS, CODE, INPUTS, built(a=None))
    assert reasons == {A: "never built", B: "a is rebuilt first", C: "b is rebuilt first"}


def test_changed_input_files_rebuild_the_asset_and_its_descendants():
    reasons = rebuild_reasons(ORDER, PARENTS, CODE, {**INPUTS, B: "fb2"}, built())
    assert reasons == {B: "its settings or input files changed", C: "b is rebuilt first"}


def test_changed_code_is_named_with_both_versions():
    reasons = rebuild_reasons(ORDER, PARENTS, {**CODE, C: "1+w"}, INPUTS, built())
    assert reasons == {C: "its code changed (1+z -> 1+w)"}


def test_an_upstream_rebuilt_elsewhere_makes_the_reader_stale():
    # b was materialized again (by the UI, say) with new content after c read it
    last = built(b=LastBuild("1+y", "vb2", {A: "va"}, "fb"))
    assert rebuild_reasons(ORDER, PARENTS, CODE, INPUTS, last) == {C: "b changed since it was built"}


def test_unfinished_attempts_and_pending_items_are_built_again():
    last = built(a=LastBuild("1+x", "va", {}, "fa", left_pending=3), c=LastBuild("1+z", "vc", {B: "vb"}, "fc", unfinished=True))
    reasons = rebuild_reasons(ORDER, PARENTS, CODE, INPUTS, last)
    assert reasons[A] == "3 item(s) were left for a later run"
    assert reasons[B] == "a is rebuilt first"
    assert reasons[C] == "its last attempt did not finish"  # its own reason comes first


def test_a_build_without_an_inputs_record_is_rebuilt():
    last = built(a=LastBuild("1+x", "va", {}, None))
    assert rebuild_reasons([A], PARENTS, CODE, INPUTS, last) == {A: "no record of its inputs"}


def test_the_first_wave_holds_assets_with_reasons_of_their_own_and_nothing_waiting_above_them():
    D = AssetKey("d")
    order, parents = [A, B, C, D], {**PARENTS, D: {A}}
    code = {**CODE, D: "1+d"}
    last = {**built(), D: LastBuild("1+d-old", "vd", {A: "va"}, "fd")}
    # a's inputs changed (b, c wait to see whether a's content changes); d's code changed, so it is built in the
    # same run, after a
    reasons = rebuild_reasons(order, parents, code, {**INPUTS, A: "fa2", D: "fd"}, last)
    assert first_wave(order, parents, reasons) == [A, D]
    # everything forced (or never built): one wave, in dependency order
    assert first_wave(order, parents, dict.fromkeys(order, "forced")) == order
    # a was rebuilt with the same content: the plan made again finds b and c up to date, d still has its own reason
    assert rebuild_reasons([B, C, D], parents, code, {**INPUTS, D: "fd"}, last) == {D: "its code changed (1+d-old -> 1+d)"}
