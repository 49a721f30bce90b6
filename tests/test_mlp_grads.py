"""The closed-form MLP gradients equal the vmapped autograd gradients bit for bit, so batched
training (and every trial and report built on it) is the same computation, only faster."""

import pytest
import torch
from torch import nn
from torch.func import vmap

from unlearners.mlp_grads import mlp_grads, mlp_layout, padded_rows
from unlearners.models import build_model
from unlearners.objective import GRAD_CHUNK, Objective, default_init


def _problem(shape, classes, hidden, activation, records, rows=3):
    gen = torch.Generator().manual_seed(7)
    width = shape if isinstance(shape, int) else tuple(shape)
    objective = Objective(build_model("mlp", width, classes, hidden=hidden, activation=activation).double())
    dims = (shape,) if isinstance(shape, int) else tuple(shape)
    X = torch.randn(records, *dims, generator=gen, dtype=torch.float64)
    y = torch.randint(0, classes, (records,), generator=gen)
    thetas = torch.stack([default_init(objective, torch.Generator().manual_seed(i)) for i in range(rows)])
    return objective, thetas, X, y


@pytest.mark.parametrize(
    "shape,classes,hidden,activation,records",
    [
        (6, 2, (5,), "softplus", 40),  # the default MLP's kind: binary, one softplus layer
        (6, 2, (4, 3), "tanh", 40),
        (6, 3, (4, 3), "softplus", 40),  # softmax outputs; a hidden-to-hidden bmm in backward
        ((2, 3), 2, (4,), "softplus", 40),  # Flatten first
        (3, 2, (2,), "softplus", GRAD_CHUNK + 9),  # summed over record chunks, as Objective.grad does
    ],
)
def test_closed_form_gradients_are_the_vmapped_autograd_bits(shape, classes, hidden, activation, records):
    objective, thetas, X, y = _problem(shape, classes, hidden, activation, records)
    layout = mlp_layout(objective)
    assert layout is not None
    reference = vmap(objective.grad, in_dims=(0, None, None))(thetas, X, y)
    assert torch.equal(mlp_grads(objective, layout, thetas, X, y), reference)


def test_models_outside_the_closed_form_keep_the_autograd_path():
    assert mlp_layout(Objective(build_model("mlp", 4, 2, hidden=(3,), activation="gelu"))) is None
    assert mlp_layout(Objective(build_model("logreg", 4, 2))) is None
    no_bias = nn.Sequential(nn.Linear(4, 3, bias=False), nn.Softplus(), nn.Linear(3, 1))
    assert mlp_layout(Objective(no_bias)) is None
    assert mlp_layout(Objective(build_model("mlp", 4, 2, hidden=(3,)))) is not None


def test_an_objective_with_its_own_gradient_keeps_it():
    """NegGrad's descent-ascent offers ``grad`` over an MLP's objective: the batched trainer must call
    it (the closed form would silently drop the ascent), and NegGrad's models must be its own."""
    from unlearners.neggrad import _DescentAscent
    from unlearners.training import batched_gradient_descent

    obj = Objective(build_model("mlp", 4, 2, hidden=(3,)).double())
    X, y = torch.randn(20, 4, dtype=torch.float64), torch.randint(0, 2, (20,))
    wrapped = _DescentAscent(obj, X[:5], y[:5], alpha=0.5)
    assert mlp_layout(wrapped) is None
    thetas = torch.stack([default_init(obj, torch.Generator().manual_seed(s)) for s in range(3)])
    got, _ = batched_gradient_descent(wrapped, thetas, X, y, eta=0.1, steps=3)
    want = thetas.clone()
    for _ in range(3):
        want = want - 0.1 * torch.stack([wrapped.grad(t, X, y) for t in want])
    assert torch.allclose(got, want, atol=1e-12)


def test_a_partial_last_block_is_padded_only_as_far_as_its_bits_need():
    X = torch.zeros(300, 2)  # 300 records: blocks of a multiple of 4 rows fill whole vector iterations
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        assert [padded_rows(n, 16, X) for n in (16, 17, 18, 21, 40, 47)] == [16, 20, 20, 24, 40, 48]
        assert padded_rows(5, 16, torch.zeros(1000, 2)) == 6  # two rows at least: bmm of one matrix rounds apart
        torch.set_num_threads(2)  # elementwise work is split between threads by position: a full block
        assert padded_rows(17, 16, X) == 32
    finally:
        torch.set_num_threads(threads)
