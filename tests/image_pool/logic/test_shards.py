"""The pool's shard function and the shard names the CLI and the steps' notes use."""

import hashlib
from collections import Counter

import pytest

from assets.image_pool.logic.shards import SHARD_KEYS, in_shards, shard_keys, shard_of, shards_label


def test_a_record_shard_is_the_first_hex_digit_of_its_ids_sha256():
    record_id = "source_file:" + "ab" * 32
    assert shard_of(record_id) == hashlib.sha256(record_id.encode()).hexdigest()[0]
    assert shard_of(record_id) == shard_of(str(record_id))  # stable: a function of the id alone


def test_there_are_16_shards_and_records_spread_evenly_over_them():
    assert SHARD_KEYS == tuple("0123456789abcdef")
    counts = Counter(shard_of(f"source_row:{i}") for i in range(16_000))
    assert set(counts) == set(SHARD_KEYS)
    assert max(counts.values()) < 1.2 * min(counts.values())  # about 1000 each


def test_a_key_or_an_inclusive_range_names_shards():
    assert shard_keys("3") == ("3",)
    assert shard_keys("A") == ("a",)
    assert shard_keys("0..3") == ("0", "1", "2", "3")
    assert shard_keys("0..f") == SHARD_KEYS
    assert shard_keys("7..7") == ("7",)


@pytest.mark.parametrize("text, says", [
    ("g", "unknown pool shard 'g'"), ("3a", "unknown pool shard '3a'"), ("", "unknown pool shard ''"),
    ("0..z", "unknown pool shard 'z'"), ("..3", "unknown pool shard ''"), ("b..a", "empty shard range 'b..a'"),
])
def test_a_wrong_shard_name_says_what_is_wrong(text, says):
    with pytest.raises(ValueError, match=says):
        shard_keys(text)


def test_shards_are_labelled_as_a_key_a_range_or_a_list():
    assert shards_label(["3"]) == "3"
    assert shards_label(["2", "0", "1"]) == "0..2"
    assert shards_label(["0", "2"]) == "0,2"


def test_no_shards_means_every_record():
    record_id = "source_row:1"
    assert in_shards(record_id, None)
    assert in_shards(record_id, {shard_of(record_id)})
    assert not in_shards(record_id, set(SHARD_KEYS) - {shard_of(record_id)})
