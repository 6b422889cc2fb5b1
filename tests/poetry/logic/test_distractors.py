import math
import random

import pytest

from assets.poetry.logic.distractors import (
    BAD_OPTIONS,
    CORPUS_TOO_SMALL,
    NOT_ENOUGH_CANDIDATES,
    Distractor,
    DistractorError,
    Phase1Options,
    distractors,
    phase1_options,
    poem_terms,
)
from assets.poetry.logic.poems import Poem
from warehouse.ids import digest_of


def poem(poem_id: str, text: str, translation: str | None = None) -> Poem:
    return Poem(poem_id, f"title {poem_id}", "author", text, translation, (), None, None, f"test#{poem_id}")


def test_terms_are_character_1_and_2_grams_within_runs_plus_translation_words():
    terms = poem_terms(poem("p", "床前，明月\n月", "Moon, moon-light"))
    assert terms == {"c:床": 1, "c:前": 1, "c:床前": 1, "c:明": 1, "c:月": 2, "c:明月": 1,  # no pair across "，" or "\n"
                     "w:moon": 2, "w:light": 1}


def test_similarity_is_tfidf_cosine_by_hand():
    # N = 5. "ab" has a, b, ab; "abc" has a, b, c, ab, bc. df(a) = df(b) = df(ab) = 2 -> idf = ln(6/3) + 1;
    # c and bc are only in "abc": idf = ln(6/2) + 1 (they count in its norm but match nothing). The three shared
    # terms give cos = 3 * idf2 * idf2 / (sqrt(3) * idf2 * sqrt(3 * idf2^2 + 2 * idf1^2)) = 0.702867...
    idf2, idf1 = math.log(2) + 1, math.log(3) + 1
    expected = 3 * idf2 / (math.sqrt(3) * math.sqrt(3 * idf2 ** 2 + 2 * idf1 ** 2))
    assert expected == pytest.approx(0.7028676, abs=1e-7)
    corpus = [poem("p1", "ab"), poem("p2", "abc"), poem("p3", "de"), poem("p4", "fg"), poem("p5", "hi")]
    result = distractors(corpus)
    assert result["p1"][0] == Distractor("p2", round(expected, 9))
    assert result["p2"][0] == Distractor("p1", round(expected, 9))
    # Nothing else shares a term with p1: the other two are seeded fillers with similarity 0.
    assert {d.poem_id for d in result["p1"][1:]} <= {"p3", "p4", "p5"}
    assert all(d.similarity == 0.0 for d in result["p1"][1:])
    assert all(len({d.poem_id for d in ds}) == 3 and poem_id not in {d.poem_id for d in ds}
               for poem_id, ds in result.items())
    assert distractors(corpus) == result  # deterministic


def test_ties_broken_by_poem_id_and_best_first():
    # "ab" shares only "a" with "ac" and with "ad", equally; "abz" shares a, b, ab. ("a" is in 4 of 9 poems,
    # under max_df.)
    corpus = [poem("p1", "ab"), poem("z2", "ac"), poem("b3", "ad"), poem("m4", "abz"), poem("q5", "xy"),
              poem("q6", "uv"), poem("q7", "st"), poem("q8", "mn"), poem("q9", "kl")]
    ds = distractors(corpus)["p1"]
    assert [d.poem_id for d in ds] == ["m4", "b3", "z2"]
    assert ds[1].similarity == ds[2].similarity > 0


def test_terms_in_more_than_max_df_of_poems_are_ignored():
    # "x" is in all four poems (> 0.5): dropped, so no two poems share a term and every distractor is a filler.
    corpus = [poem("p1", "xa"), poem("p2", "xb"), poem("p3", "xc"), poem("p4", "xd")]
    result = distractors(corpus)
    assert all(d.similarity == 0.0 for ds in result.values() for d in ds)
    # With max_df = 1 "x" counts (and "xa" etc. are unique): every pair is equally similar, so ties go by id.
    assert [d.poem_id for d in distractors(corpus, max_df=1.0)["p3"]] == ["p1", "p2", "p4"]


def test_fillers_follow_the_seed():
    corpus = [poem(f"p{i}", chr(0x4E00 + i)) for i in range(12)]  # twelve single distinct characters
    orders = {seed: tuple(d.poem_id for d in distractors(corpus, seed=seed)["p0"]) for seed in range(6)}
    assert all("p0" not in order and len(set(order)) == 3 for order in orders.values())
    assert len(set(orders.values())) > 1
    assert orders[3] == tuple(d.poem_id for d in distractors(corpus, seed=3)["p0"])


def test_identical_text_is_never_a_distractor():
    corpus = [poem("p1", "明月光"), poem("p2", "明月 光"), poem("p3", "明月光霜"), poem("p4", "山"), poem("p5", "水")]
    result = distractors(corpus)
    assert "p2" not in {d.poem_id for d in result["p1"]} and "p1" not in {d.poem_id for d in result["p2"]}
    assert result["p1"][0].poem_id == "p3"


def test_small_corpora_raise():
    with pytest.raises(DistractorError) as info:
        distractors([poem("a", "x"), poem("b", "y"), poem("c", "z")])
    assert info.value.reason_code == CORPUS_TOO_SMALL and "at least 4 poems" in str(info.value)
    with pytest.raises(DistractorError) as info:
        distractors([poem("a", "xy"), poem("b", "xy"), poem("c", "z"), poem("d", "w")])
    assert info.value.reason_code == NOT_ENOUGH_CANDIDATES and "poem a" in str(info.value)


def test_scale_uses_sparse_index():
    rng = random.Random(5)
    chars = [chr(0x4E00 + i) for i in range(400)]
    corpus = [poem(f"p{i:04d}", "".join(rng.choice(chars) for _ in range(20))) for i in range(1500)]
    result = distractors(corpus)
    assert len(result) == 1500
    assert all(len({d.poem_id for d in ds} - {pid}) == 3 for pid, ds in result.items())
    assert all(ds[0].similarity >= ds[1].similarity >= ds[2].similarity for ds in result.values())


def test_phase1_options_seeded_shuffle():
    options = phase1_options("tang-001@gpt", "tang-001", ["t2", "t3", "t4"], seed=0)
    expected = ["tang-001", "t2", "t3", "t4"]
    random.Random(int(digest_of([0, "tang-001@gpt"])[:16], 16)).shuffle(expected)
    assert options == Phase1Options("tang-001@gpt", tuple(expected), "ABCD"[expected.index("tang-001")])
    assert options.letter_of("tang-001") == options.correct_letter
    assert options.as_dict()["options"][options.correct_letter] == "tang-001"
    letters = {phase1_options(f"tang-001@m{i}", "tang-001", ["t2", "t3", "t4"], seed=0).correct_letter
               for i in range(20)}
    assert letters == {"A", "B", "C", "D"}  # the order differs between items
    assert phase1_options("tang-001@gpt", "tang-001", ["t2", "t3", "t4"], seed=0) == options


@pytest.mark.parametrize("given, message", [
    (["t2", "t3"], "2 distractors given, 3 needed"),
    (["t2", "t3", "tang-001"], "the true poem tang-001 is among the distractors"),
    (["t2", "t2", "t3"], "the distractors repeat a poem"),
])
def test_phase1_options_reject_bad_distractors(given, message):
    with pytest.raises(DistractorError, match=message) as info:
        phase1_options("tang-001@gpt", "tang-001", given, seed=0)
    assert info.value.reason_code == BAD_OPTIONS and "item tang-001@gpt" in str(info.value)
