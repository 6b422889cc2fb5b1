import pickle

import pytest

from assets.poetry.logic.raters import PSEUDONYM_PREFIX, RaterPseudonyms


def test_a_pseudonym_is_stable_under_one_key_and_changes_with_the_key():
    one, again, other = RaterPseudonyms("salt-a"), RaterPseudonyms("salt-a"), RaterPseudonyms("salt-b")
    assert one.of("maria.rossi@example.org") == again.of("maria.rossi@example.org")
    assert one.of("maria.rossi@example.org") != other.of("maria.rossi@example.org")
    assert one.of("c01") != one.of("c02") and one.of("c01") != one.of("C01")
    assert one.salt_fingerprint() == again.salt_fingerprint() != other.salt_fingerprint()


def test_a_pseudonym_shows_neither_the_id_nor_the_key():
    raters = RaterPseudonyms("a-secret-salt")
    name = raters.of("maria")
    assert name.startswith(PSEUDONYM_PREFIX) and len(name) == len(PSEUDONYM_PREFIX) + 32
    assert "maria" not in name and "a-secret-salt" not in repr(raters) + raters.salt_fingerprint()
    with pytest.raises(TypeError, match="secret"):
        pickle.dumps(raters)


@pytest.mark.parametrize("make", [lambda: RaterPseudonyms(""), lambda: RaterPseudonyms("salt").of("")])
def test_an_empty_salt_or_rater_id_is_refused(make):
    with pytest.raises(ValueError, match="empty"):
        make()
