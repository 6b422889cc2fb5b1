"""Score heads from local weight files: the three formats give the module's own scores, and every way a file can be
wrong is one clear HeadUnavailable naming it."""

import numpy as np
import pytest
import torch

from resources.score_heads import HeadUnavailable, fold_affine_chain, load_head

DIM = 16


@pytest.fixture(scope="module")
def mlp():
    """An MLP shaped like LAION's improved aesthetic predictor: affine layers with dropout between, no activation."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(DIM, 12), torch.nn.Dropout(0.2), torch.nn.Linear(12, 5),
                                torch.nn.Dropout(0.1), torch.nn.Linear(5, 1))
    return model.eval()


@pytest.fixture(scope="module")
def embeddings():
    x = np.random.default_rng(1).normal(size=(7, DIM)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _expected(model, x):
    with torch.no_grad():
        return model(torch.from_numpy(x)).numpy().ravel()


def test_every_format_scores_as_the_module_does(tmp_path, mlp, embeddings):
    torch.save(mlp.state_dict(), tmp_path / "head.pth")
    torch.jit.save(torch.jit.script(mlp), tmp_path / "head.pt")
    batch = torch.export.Dim("batch")
    torch.export.save(torch.export.export(mlp, (torch.zeros(2, DIM),), dynamic_shapes=({0: batch},)), tmp_path / "head.pt2")
    expected = _expected(mlp, embeddings)
    for name, fmt in [("head.pth", "linear_chain"), ("head.pt", "torchscript"), ("head.pt2", "exported_program")]:
        head = load_head(tmp_path / name, fmt, DIM)
        np.testing.assert_allclose(head.scores(embeddings), expected, rtol=1e-5, atol=1e-6)
        assert head.version == f"sha256:{head.weights_sha256[:16]}" and head.format == fmt


def test_a_linear_chain_folds_to_one_affine_map():
    rng = np.random.default_rng(2)
    w1, b1, w2, b2 = rng.normal(size=(3, 4)), rng.normal(size=3), rng.normal(size=(1, 3)), rng.normal(size=1)
    weight, bias = fold_affine_chain([("a", w1, b1), ("b", w2, b2)], 4)
    x = rng.normal(size=4)
    assert np.isclose(x @ weight + bias, (w2 @ (w1 @ x + b1) + b2)[0])
    weight, bias = fold_affine_chain([("only", w2, None)], 3)  # a layer without bias
    assert np.allclose(weight, w2[0]) and bias == 0


def test_a_head_for_other_embeddings_is_refused_with_both_sizes(tmp_path, mlp):
    torch.save(mlp.state_dict(), tmp_path / "head.pth")
    torch.jit.save(torch.jit.script(mlp), tmp_path / "head.pt")
    with pytest.raises(HeadUnavailable, match="layer 0 of shape \\(12, 16\\) does not take the 32 values"):
        load_head(tmp_path / "head.pth", "linear_chain", 32)
    with pytest.raises(HeadUnavailable) as raised:
        load_head(tmp_path / "head.pt", "torchscript", 32)
    assert "head.pt does not take embeddings of 32 values" in str(raised.value) and "\n" not in str(raised.value)


def test_a_head_that_does_not_give_one_score_per_image_is_refused(tmp_path):
    torch.save(torch.nn.Linear(DIM, 3).state_dict(), tmp_path / "three.pth")
    with pytest.raises(HeadUnavailable, match="the last layer gives 3 values"):
        load_head(tmp_path / "three.pth", "linear_chain", DIM)
    torch.jit.save(torch.jit.script(torch.nn.Linear(DIM, 3)), tmp_path / "three.pt")
    with pytest.raises(HeadUnavailable, match="output of shape \\(3, 3\\)"):
        load_head(tmp_path / "three.pt", "torchscript", DIM)


def test_missing_foreign_and_mismatched_files_are_one_line_each(tmp_path, mlp):
    with pytest.raises(HeadUnavailable, match="nope.pt does not exist"):
        load_head(tmp_path / "nope.pt", "torchscript", DIM)
    (tmp_path / "junk.pt").write_bytes(b"not a model at all")
    torch.save(mlp.state_dict(), tmp_path / "head.pth")
    torch.save({"note": "no tensors"}, tmp_path / "dict.pth")
    for name, fmt in [("junk.pt", "torchscript"), ("junk.pt", "linear_chain"), ("junk.pt", "exported_program"),
                      ("head.pth", "torchscript"), ("dict.pth", "linear_chain")]:
        with pytest.raises(HeadUnavailable) as raised:
            load_head(tmp_path / name, fmt, DIM)
        assert name in str(raised.value) or "no layer weights" in str(raised.value)
        assert "\n" not in str(raised.value)
    with pytest.raises(HeadUnavailable, match="unknown head format"):
        load_head(tmp_path / "head.pth", "onnx", DIM)
