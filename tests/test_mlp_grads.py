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


@pytest.fixture
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.mark.parametrize(
    "hidden,activation,records,rows",
    [
        ((16,), "softplus", 41, 2),  # 2 x 41 = 82 outputs: the logistic stage is padded to whole vectors
        ((4, 3), "tanh", 40, 2),  # two hidden layers: 2 x 40 x 4 and 2 x 40 x 3 whole
        ((2,), "softplus", GRAD_CHUNK + 9, 8),  # the 9-record chunk: 8 x 9 x 2 is the first whole sub-block
    ],
)
def test_sub_blocks_keep_the_bits_of_the_whole_block(monkeypatch, one_thread, hidden, activation, records, rows):
    """A block is computed a few rows at a time (for the cache); each row keeps the bits of the
    vmapped autograd gradient of the whole block, partial vectors and record chunks included."""
    from unlearners import mlp_grads as module

    objective, thetas, X, y = _problem(3, 2, hidden, activation, records, rows=16)
    layout = mlp_layout(objective)
    monkeypatch.setattr(module, "SUB_BLOCK_ELEMENTS", 1)  # the fewest rows the vectors allow
    assert module.sub_block_rows(objective, layout, 16, X) == rows
    reference = vmap(objective.grad, in_dims=(0, None, None))(thetas, X, y)
    assert torch.equal(mlp_grads(objective, layout, thetas, X, y), reference)


def test_blocks_are_split_only_where_the_bits_stay(one_thread):
    from unlearners.mlp_grads import sub_block_rows

    objective, _, X, _ = _problem(2, 2, (64,), "softplus", 1000, rows=1)
    layout = mlp_layout(objective)
    assert sub_block_rows(objective, layout, 16, X) == 4  # the default MLP on 1,000 records: 4 x 64,000 elements
    assert sub_block_rows(objective, layout, 3, X) == 3  # 3 x 1,000 outputs end in a partial vector: whole
    assert sub_block_rows(objective, layout, 16, X[:999]) == 4  # 999 records: only the padded output stage
    softmax, _, X3, _ = _problem(2, 3, (64,), "softplus", 1000, rows=1)
    assert sub_block_rows(softmax, mlp_layout(softmax), 16, X3) == 16  # the softmax's derivative is left whole
    torch.set_num_threads(2)  # threads split elementwise work by position: whole blocks
    assert sub_block_rows(objective, layout, 16, X) == 16
