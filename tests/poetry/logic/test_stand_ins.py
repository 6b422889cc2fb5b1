import pytest

from assets.poetry.logic.stand_ins import assign_stand_ins, stand_in_names

POEMS = [f"tang-{n:03d}" for n in range(1, 41)]


def test_names_are_the_configured_ones_or_numbered():
    assert stand_in_names([], 3) == ("stand-in-1", "stand-in-2", "stand-in-3")
    assert stand_in_names(["ink", "gongbi"], 3) == ("ink", "gongbi")  # the names decide how many
    for bad in (["ink", "ink"], ["ink", " "]):
        with pytest.raises(ValueError, match="distinct, non-empty"):
            stand_in_names(bad, 3)
    with pytest.raises(ValueError, match="stand_in_models"):
        stand_in_names([], 0)


@pytest.mark.parametrize("n_paintings", [3, 4, 7, 30])
def test_no_poem_shows_one_painting_under_two_generators(n_paintings):
    generators = ("g1", "g2", "g3")
    assignment = assign_stand_ins(POEMS, [f"sha{n}" for n in range(n_paintings)], generators, seed=5)
    assert set(assignment) == {(p, g) for p in POEMS for g in generators}
    for poem in POEMS:
        assert len({assignment[(poem, g)] for g in generators}) == 3
    uses = [list(assignment.values()).count(f"sha{n}") for n in range(n_paintings)]
    assert max(uses) - min(uses) <= 1  # every painting used about equally often


def test_the_assignment_is_seeded_and_independent_of_input_order():
    paintings = [f"sha{n}" for n in range(9)]
    one = assign_stand_ins(POEMS, paintings, ("a", "b"), seed=1)
    assert assign_stand_ins(POEMS[::-1], paintings[::-1], ("a", "b"), seed=1) == one
    assert assign_stand_ins(POEMS, paintings, ("a", "b"), seed=2) != one


def test_fewer_distinct_paintings_than_generators_is_refused():
    # three files but two distinct contents: one would be shown under two generators of a poem
    with pytest.raises(ValueError, match="at least as many distinct paintings"):
        assign_stand_ins(POEMS, ["sha1", "sha2", "sha1"], ("a", "b", "c"), seed=0)
