"""The lexical metrics give what their reference packages give when called directly, and the obvious extremes."""

from __future__ import annotations

import pytest
import sacrebleu
from nltk.translate.meteor_score import single_meteor_score
from rouge_score import rouge_scorer

from assets.evaluation.logic.metrics.bleu import Bleu
from assets.evaluation.logic.metrics.meteor import Meteor, installed_wordnet
from assets.evaluation.logic.metrics.rouge_l import RougeL

CANDIDATES = [
    "The warm light falls softly across the left side of the portrait.",
    "Strong diagonal lines lead the eye to the lighthouse, though the horizon tilts.",
    "Colours feel muddy; more contrast would help the subject stand out.",
    "A quiet, balanced composition.",
]
REFERENCES = [
    "Soft warm light falls across the portrait from the left.",
    "The horizon is tilted, but the diagonals guide the viewer toward the lighthouse.",
    "The subject does not stand out because the colours lack contrast.",
    "Busy and unbalanced: the frame is cluttered.",
]


def test_rouge_l_is_rouge_scores_stemmed_f_measure():
    scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)
    expected = [scorer.score(ref, cand)["rougeL"].fmeasure for cand, ref in zip(CANDIDATES, REFERENCES)]
    assert RougeL().score(CANDIDATES, REFERENCES) == pytest.approx(expected)


def test_rouge_l_by_hand():
    # the cat sat on the mat / the cat lay on a mat: LCS "the cat on mat" = 4 of 6 tokens each way.
    assert RougeL().score(["the cat sat on the mat"], ["the cat lay on a mat"]) == pytest.approx([4 / 6])


def test_rouge_l_extremes_and_stemming():
    scores = RougeL().score(
        ["bold framing", "bold framing", "", "painted skies"], ["bold framing", "quiet colour", "", "painting sky"]
    )
    assert scores == [1.0, 0.0, 0.0, 1.0]  # stemming: painted/painting -> paint, skies/sky -> sky
    assert RougeL().parameters()["use_stemmer"] is True


def test_bleu_is_sacrebleus_sentence_bleu():
    expected = [sacrebleu.sentence_bleu(cand, [ref]).score for cand, ref in zip(CANDIDATES, REFERENCES)]
    assert Bleu().score(CANDIDATES, REFERENCES) == pytest.approx(expected)


def test_bleu_with_other_settings_matches_sacrebleu_with_them():
    expected = [sacrebleu.sentence_bleu(cand, [ref], smooth_method="floor", tokenize="intl").score
                for cand, ref in zip(CANDIDATES, REFERENCES)]
    bleu = Bleu(tokenize="intl", smooth_method="floor")
    assert bleu.score(CANDIDATES, REFERENCES) == pytest.approx(expected)
    assert "tok:intl" in bleu.parameters()["signature"] and "smooth:floor" in bleu.parameters()["signature"]


def test_bleu_extremes_and_scale():
    text = "the light falls softly across the portrait"
    assert Bleu().score([text, "red blue", ""], [text, "green yellow", ""]) == pytest.approx([100.0, 0.0, 0.0])
    parameters = Bleu().parameters()
    assert parameters["scale"] == "0-100" and parameters["level"] == "sentence"
    assert parameters["signature"] == f"nrefs:1|case:mixed|eff:yes|tok:13a|smooth:exp|version:{sacrebleu.__version__}"


def test_bleu_refuses_a_tokenizer_that_would_download():
    with pytest.raises(ValueError, match="offline"):
        Bleu(tokenize="flores200")


class _NoSynsets:
    def synsets(self, word):
        return []


def test_meteor_is_nltks_meteor_on_whitespace_tokens():
    wordnet = installed_wordnet() or _NoSynsets()
    expected = [single_meteor_score(ref.split(), cand.split(), wordnet=wordnet)
                for cand, ref in zip(CANDIDATES, REFERENCES)]
    assert Meteor().score(CANDIDATES, REFERENCES) == pytest.approx(expected)


def test_meteor_records_whether_it_had_synonyms():
    assert Meteor().parameters()["synonyms"] == ("none" if installed_wordnet() is None else "wordnet")


def test_meteor_extremes_and_stemmed_matches():
    scores = Meteor().score(["the cat sat", "red blue", "", "the cats sat"],
                            ["the cat sat", "green", "", "the cat sat"])
    # identical: 3 matches in one chunk, so only the fragmentation penalty 0.5 * (1/3)**3 is left.
    assert scores[:3] == pytest.approx([1 - 0.5 / 27, 0.0, 0.0])
    assert scores[3] == pytest.approx(scores[0])  # cats/cat match by their stem


@pytest.mark.parametrize("metric", [RougeL(), Bleu(), Meteor()], ids=lambda m: m.name)
def test_lexical_metrics_always_run_and_check_their_input(metric):
    assert metric.unavailable() is None
    assert metric.score([], []) == []
    with pytest.raises(ValueError, match="2 candidates but 1 references"):
        metric.score(["a", "b"], ["a"])
    with pytest.raises(TypeError, match="single str"):
        metric.score("a text", "a text")
