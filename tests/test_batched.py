"""Many models at once: batched gradient descent (unlearners.training) and batched evaluation
(unlearners.batched) equal their one-model counterparts."""

import pytest
import torch

from certify.errors import InvalidInput
from unlearners.batched import batched_accuracy, batched_logits, batched_loss, batched_per_sample_loss, chunk_size
from unlearners.models import build_model
from unlearners.objective import Objective, default_init
from unlearners.training import batched_gradient_descent, gradient_descent

from synthetic import synthetic


def _objective(model="mlp", classes=2, d=5):
    opts = {"hidden": (6,)} if model == "mlp" else {}
    return Objective(build_model(model, d, classes, **opts).double())


def _stack(obj, n, seed=0):
    return torch.stack([default_init(obj, torch.Generator().manual_seed(seed + i)) for i in range(n)])


@pytest.fixture
def data():
    return synthetic(n=120, d=5, seed=1)


# -- batched gradient descent -----------------------------------------------------------
@pytest.mark.parametrize("model,classes", [("mlp", 2), ("logreg", 3)])
def test_batched_gradient_descent_equals_looped(data, model, classes):
    X, _ = data
    y = synthetic(n=120, d=5, classes=classes, seed=1)[1]
    obj = _objective(model, classes)
    thetas0 = _stack(obj, 5)
    final, kept = batched_gradient_descent(obj, thetas0, X, y, eta=0.4, steps=15, keep={0, 7, 15})
    assert final.shape == thetas0.shape and sorted(kept) == [0, 7, 15]
    for i in range(5):
        ref, ref_kept = gradient_descent(obj, thetas0[i], X, y, eta=0.4, steps=15, keep={0, 7, 15})
        torch.testing.assert_close(final[i], ref, rtol=0, atol=1e-12)
        for t in (0, 7, 15):
            torch.testing.assert_close(kept[t][i], ref_kept[t], rtol=0, atol=1e-12)
    assert torch.equal(kept[15], final)
    chunked, _ = batched_gradient_descent(obj, thetas0, X, y, eta=0.4, steps=15, chunk=2)
    torch.testing.assert_close(chunked, final, rtol=0, atol=1e-12)


def test_batched_gradient_descent_does_not_modify_its_input(data):
    X, y = data
    obj = _objective()
    thetas0 = _stack(obj, 3)
    before = thetas0.clone()
    batched_gradient_descent(obj, thetas0, X, y, eta=0.4, steps=3)
    assert torch.equal(thetas0, before)
    with pytest.raises(InvalidInput):
        batched_gradient_descent(obj, thetas0[0], X, y, eta=0.4, steps=3)


# -- batched evaluation ------------------------------------------------------------------
@pytest.mark.parametrize("classes", [2, 3])
def test_batched_evaluation_shapes_values_and_chunking(data, classes):
    X, _ = data
    y = synthetic(n=120, d=5, classes=classes, seed=1)[1]
    obj = _objective("mlp", classes)
    thetas = _stack(obj, 7)
    logits = batched_logits(obj, thetas, X)
    losses = batched_per_sample_loss(obj, thetas, X, y)
    mean = batched_loss(obj, thetas, X, y)
    acc = batched_accuracy(obj, thetas, X, y)
    assert logits.shape == ((7, 120) if classes == 2 else (7, 120, classes))
    assert losses.shape == (7, 120) and mean.shape == (7,) and acc.shape == (7,)
    for i in range(7):
        torch.testing.assert_close(logits[i], obj.logits(thetas[i], X), rtol=0, atol=1e-12)
        torch.testing.assert_close(losses[i], obj.per_sample_loss(thetas[i], X, y), rtol=0, atol=1e-12)
        torch.testing.assert_close(mean[i], obj.loss(thetas[i], X, y), rtol=0, atol=1e-12)
        assert acc[i] == obj.accuracy(thetas[i], X, y)
    # Chunks only change the batch size of the vmapped kernels: equal up to the last bit or two.
    for chunk in (1, 3, 7, 100):
        torch.testing.assert_close(batched_logits(obj, thetas, X, chunk=chunk), logits, rtol=0, atol=1e-14)
        torch.testing.assert_close(batched_per_sample_loss(obj, thetas, X, y, chunk=chunk), losses, rtol=0, atol=1e-14)
        assert torch.equal(batched_accuracy(obj, thetas, X, y, chunk=chunk), acc)
    with pytest.raises(InvalidInput):
        batched_logits(obj, thetas, X, chunk=0)


def test_default_chunk_keeps_cpu_activations_near_a_million_elements():
    obj = Objective(build_model("mlp", 20, 2, hidden=(32,)))
    X = torch.zeros(2000, 20)
    assert chunk_size(obj, X, 64) == 16  # 16 models x 2000 records x 32 units = 2**20 elements
    assert chunk_size(obj, X[:10], 64) == 64
    assert chunk_size(obj, X, 64, 5) == 5
