"""Tiny randomly initialised models, saved the way real checkpoints are, for the learned metrics to load offline.

Random weights know nothing of meaning, but loading them exercises the real file formats, tokenisers and
forward passes that the metrics depend on; the tests check only what must hold whatever the weights.
"""

from __future__ import annotations

import json
import string
from pathlib import Path

import pytest

WORDS = "the a of and warm cold light colour composition sky cat dog image painting soft sharp".split()
HIDDEN = 32
MAX_LENGTH = 64


def _bert_tokenizer(directory: Path):
    from transformers import BertTokenizer

    letters = list(string.ascii_lowercase)
    pieces = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *string.punctuation, *letters, *(f"##{c}" for c in letters),
              *WORDS]  # letters and word pieces spell any lowercase ASCII word, so no text becomes all [UNK]
    vocab = list(dict.fromkeys(pieces))
    (directory / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    return BertTokenizer(str(directory / "vocab.txt"), model_max_length=MAX_LENGTH)


def _bert_config(vocab_size: int, **extra):
    from transformers import BertConfig

    return BertConfig(vocab_size=vocab_size, hidden_size=HIDDEN, num_hidden_layers=2, num_attention_heads=2,
                      intermediate_size=2 * HIDDEN, max_position_embeddings=MAX_LENGTH, **extra)


@pytest.fixture(scope="session")
def tiny_bert(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 2-layer BertModel with a WordPiece tokenizer, as ``save_pretrained`` writes it."""
    import torch
    from transformers import BertModel

    directory = tmp_path_factory.mktemp("tiny-bert")
    tokenizer = _bert_tokenizer(directory)
    torch.manual_seed(0)
    BertModel(_bert_config(len(tokenizer))).save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


@pytest.fixture(scope="session")
def tiny_roberta(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 2-layer RobertaModel with a byte-level BPE tokenizer: the kind of model and tokenizer roberta-large is."""
    import torch
    from tokenizers import ByteLevelBPETokenizer
    from transformers import RobertaConfig, RobertaModel, RobertaTokenizer

    directory = tmp_path_factory.mktemp("tiny-roberta")
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator([" ".join(WORDS)] * 3, vocab_size=400, min_frequency=1, show_progress=False,
                            special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
    bpe.save_model(str(directory))
    tokenizer = RobertaTokenizer(str(directory / "vocab.json"), str(directory / "merges.txt"),
                                 model_max_length=MAX_LENGTH)
    torch.manual_seed(0)
    config = RobertaConfig(vocab_size=len(tokenizer), hidden_size=HIDDEN, num_hidden_layers=2, num_attention_heads=2,
                           intermediate_size=2 * HIDDEN, max_position_embeddings=MAX_LENGTH + 2, pad_token_id=1)
    RobertaModel(config).save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


@pytest.fixture(scope="session")
def tiny_sbert(tiny_bert: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A sentence-transformers model (the tiny BERT, then mean pooling), as ``SentenceTransformer.save`` writes it."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Pooling, Transformer

    directory = tmp_path_factory.mktemp("tiny-sbert")
    SentenceTransformer(modules=[Transformer(str(tiny_bert)), Pooling(HIDDEN, pooling_mode="mean")],
                        device="cpu").save(str(directory))
    return directory


@pytest.fixture(scope="session")
def tiny_bleurt(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A BERT sequence regressor with one label: the shape of a transformers-format BLEURT checkpoint."""
    import torch
    from transformers import BertForSequenceClassification

    directory = tmp_path_factory.mktemp("tiny-bleurt")
    tokenizer = _bert_tokenizer(directory)
    torch.manual_seed(0)
    # wide initial weights, so that the untrained regressor's scores differ visibly from pair to pair
    config = _bert_config(len(tokenizer), num_labels=1, initializer_range=0.5)
    BertForSequenceClassification(config).save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


TINY_CLIP = {
    "embed_dim": 16,
    "vision_cfg": {"image_size": 32, "layers": 1, "width": 32, "head_width": 16, "patch_size": 16},
    "text_cfg": {"context_length": 16, "vocab_size": 49408, "width": 32, "heads": 2, "layers": 1},
}


@pytest.fixture(scope="session")
def tiny_clip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A one-layer open_clip model in a directory with open_clip_config.json, the form of open_clip's hub repos;
    its 16-token context also makes long texts be cut off."""
    import open_clip
    import torch

    directory = tmp_path_factory.mktemp("tiny-clip")
    (directory / "open_clip_config.json").write_text(json.dumps({"model_cfg": TINY_CLIP}), encoding="utf-8")
    torch.manual_seed(0)
    model = open_clip.create_model(f"local-dir:{directory}", pretrained_text=False)
    torch.save(model.state_dict(), directory / "open_clip_pytorch_model.bin")
    return directory
