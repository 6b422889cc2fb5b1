"""Word counts, length summaries, lexical diversity and within-post repetition, by hand."""

import pytest

from assets.evaluation.logic.text_stats import (lexical_diversity, length_stats, mean_repetition, moving_average_ttr,
                                                mtld, post_repetition, tokens, type_token_ratio, word_count)


def test_tokenisation_rule():
    assert tokens("Don’t crop the well-lit [left side](https://x.y/z) at https://example.com f/2.8!") == [
        "don't", "crop", "the", "well-lit", "left", "side", "at", "f", "2", "8"]
    assert word_count("") == 0
    assert word_count("  --  ") == 0


def test_length_stats_and_share_in_range():
    texts = ["one two three", "one two three four five", "one"]  # 3, 5, 1 words
    stats = length_stats(texts, word_range=(2, 5))
    assert stats.n == 3
    assert stats.mean == pytest.approx(3.0)
    assert stats.median == 3.0
    assert stats.share_in_range == pytest.approx(2 / 3)  # both ends inclusive: 3 and 5 are in, 1 is not
    assert length_stats(texts).share_in_range is None
    empty = length_stats([], word_range=(50, 150))
    assert (empty.n, empty.mean, empty.share_in_range) == (0, None, None)
    with pytest.raises(ValueError):
        length_stats(texts, word_range=(5, 2))


def test_type_token_ratio_and_moving_average():
    words = ["a", "b", "a", "c"]
    assert type_token_ratio(words) == pytest.approx(0.75)
    # Windows of 2: (a b) 1.0, (b a) 1.0, (a c) 1.0 -> 1.0; windows of 3: (a b a) 2/3, (b a c) 1 -> 5/6.
    assert moving_average_ttr(words, window=2) == pytest.approx(1.0)
    assert moving_average_ttr(words, window=3) == pytest.approx(5 / 6)
    assert moving_average_ttr(words, window=10) == pytest.approx(0.75)  # shorter than the window: its TTR
    assert type_token_ratio([]) is None and moving_average_ttr([]) is None


def test_mtld_by_hand():
    # Forward over "a b a b a b": TTRs 1, 1, 2/3 (<= 0.72: factor 1, reset), then b a b: 1, 1, 2/3 (factor 2).
    # No remainder, so forward = 6 / 2 = 3; backward is the same sequence shape, 3 -> MTLD 3.
    assert mtld(["a", "b"] * 3) == pytest.approx(3.0)
    # "a a": TTR 1 then 1/2 -> one factor -> 2 / 1 = 2 both ways.
    assert mtld(["a", "a"]) == pytest.approx(2.0)
    # "a a b": forward: a (1), a (1/2: factor, reset), b (1): remainder (1 - 1) / 0.28 = 0 -> 3 / 1 = 3.
    #          backward: b (1), a (1), a (2/3: factor), nothing left -> 3 / 1 = 3.
    assert mtld(["a", "a", "b"]) == pytest.approx(3.0)
    assert mtld(["a", "b", "c"]) is None  # no factor ever completes
    assert mtld([]) is None


def test_mtld_partial_factor():
    # "a b c a": TTRs 1, 1, 1, 3/4 = 0.75 > 0.72: no full factor; partial (1 - 0.75) / 0.28 -> 4 / 0.892857...
    # Backward "a c b a": the same TTRs -> the same value.
    assert mtld(["a", "b", "c", "a"]) == pytest.approx(4 / ((1 - 0.75) / 0.28))


def test_lexical_diversity_of_a_text():
    result = lexical_diversity("The light, the light!")
    assert result.n_tokens == 4
    assert result.ttr == pytest.approx(0.5)


def test_repetition_within_a_post():
    # Word sets {a, b, c}, {a, b, d}, {x, y}: Jaccard 2/4, 0, 0 -> mean 1/6.
    # Unigrams pooled: 8 tokens, 6 distinct (a b c d x y) -> 0.75. Bigrams within critiques:
    # (a b)(b c), (a b)(b d), (x y) -> 5, distinct 4 -> 0.8.
    result = post_repetition(["a b c", "a b d", "x y"])
    assert result.n == 3
    assert result.jaccard == pytest.approx(1 / 6)
    assert result.distinct_1 == pytest.approx(0.75)
    assert result.distinct_2 == pytest.approx(0.8)
    same = post_repetition(["Nice light here.", "nice LIGHT here"])
    assert same.jaccard == pytest.approx(1.0)
    assert post_repetition(["", ""]).distinct_1 is None


def test_repetition_needs_two_critiques_and_averages_over_posts():
    with pytest.raises(ValueError):
        post_repetition(["only one"])
    with pytest.raises(ValueError):
        post_repetition("a text, not a list")
    summary = mean_repetition([["a b", "a b"], ["a b", "c d"]])  # Jaccard 1 and 0
    assert summary.n == 2
    assert summary.jaccard == pytest.approx(0.5)
    assert summary.distinct_1 == pytest.approx((0.5 + 1.0) / 2)
    assert mean_repetition([]) is None
