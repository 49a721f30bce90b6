"""Batched training gives every row the same bits whatever the number of rows stacked with it:
the prefix property of trials (the first N of a larger run are exactly the smaller run) and the
agreement of sharded runs rest on it."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from unlearners.objective import Objective, default_init
from unlearners.training import batched_gradient_descent


@pytest.mark.parametrize("model", ["binary", "softmax", "mlp"])
def test_rows_do_not_depend_on_how_many_are_stacked(model):
    gen = torch.Generator().manual_seed(0)
    X = torch.randn(300, 6, generator=gen, dtype=torch.float64)
    y = (X[:, 0] > 0).long() if model != "softmax" else torch.randint(0, 3, (300,), generator=gen)
    module = {
        "binary": nn.Sequential(nn.Linear(6, 1)),
        "softmax": nn.Sequential(nn.Linear(6, 3)),
        "mlp": nn.Sequential(nn.Linear(6, 5), nn.Tanh(), nn.Linear(5, 1)),
    }[model]
    objective = Objective(module.double())
    thetas = torch.stack([default_init(objective, torch.Generator().manual_seed(i)) for i in range(40)])
    full, kept = batched_gradient_descent(objective, thetas, X, y, eta=0.5, steps=15, keep={7})
    for n in (1, 2, 3, 4, 6, 8, 12, 16, 17, 20, 33):  # the MLP's partial blocks of 4, 8, 12 rows are not padded
        part, part_kept = batched_gradient_descent(objective, thetas[:n], X, y, eta=0.5, steps=15, keep={7})
        assert torch.equal(part, full[:n]) and torch.equal(part_kept[7], kept[7][:n])
    # a shard starting at a block boundary equals the same rows of the whole run
    shard, _ = batched_gradient_descent(objective, thetas[16:40], X, y, eta=0.5, steps=15)
    assert torch.equal(shard, full[16:40])


def test_retrain_trials_report_progress_per_group_without_changing_a_bit():
    """Progress comes after each group of batched trials (and each trial on the loop path); the
    grouping is invisible in the results: the same trials as one call without progress."""
    from audit.trials import make_trials, progress_group
    from unlearners.registry import get_method

    gen = torch.Generator().manual_seed(3)
    X = torch.randn(150, 4, generator=gen, dtype=torch.float64)
    y = (X[:, 0] > 0).long()
    objective = Objective(nn.Sequential(nn.Linear(4, 1)).double())
    method = get_method("r2d")(objective, steps=6, rewind=2)
    method.fit(X, y, torch.zeros(objective.dim, dtype=torch.float64))

    def init(g):
        return default_init(objective, g, torch.float64)

    group = progress_group(objective, X, None)
    n = 2 * group + 5
    seen = []
    grouped = make_trials(
        "retrain",
        method,
        torch.tensor([1, 2]),
        0.1,
        n,
        seed=9,
        init=init,
        progress=lambda done, total: seen.append((done, total)),
    )
    assert seen == [(group, n), (2 * group, n), (n, n)]
    whole = method.train_many(grouped.initial, torch.tensor([1, 2]))  # every trial in one call
    assert torch.equal(grouped.theta_unlearned, whole.unlearned)
    assert torch.equal(grouped.theta_retrained, whole.retrained)
    assert torch.equal(grouped.theta_original, whole.original)
    looped = []
    make_trials(
        "retrain",
        method,
        torch.tensor([1, 2]),
        0.1,
        3,
        seed=9,
        init=init,
        batched=False,
        progress=lambda done, total: looped.append(done),
    )
    assert looped == [1, 2, 3]


@pytest.mark.parametrize("mode", ["noise", "retrain"])
@pytest.mark.parametrize("hidden", [0, 5])
def test_shards_of_trials_are_the_whole_runs_rows(mode, hidden):
    """Trials computed as shards [0, a), [a, b), [b, N) (a, b on the row block) are, bit for bit,
    the rows of one run of N trials: the ground sharded and resumed trial sets stand on."""
    from audit.trials import make_trials, progress_group
    from certify.errors import InvalidInput
    from unlearners.registry import get_method

    gen = torch.Generator().manual_seed(4)
    X = torch.randn(120, 4, generator=gen, dtype=torch.float64)
    y = (X[:, 0] > 0).long()
    module = (
        nn.Sequential(nn.Linear(4, 1))
        if hidden == 0
        else nn.Sequential(nn.Linear(4, hidden), nn.Tanh(), nn.Linear(hidden, 1))
    )
    objective = Objective(module.double())
    method = get_method("r2d")(objective, steps=5, rewind=2)
    method.fit(X, y, default_init(objective, torch.Generator().manual_seed(0), torch.float64))
    forget = torch.tensor([3, 8])

    def init(g):
        return default_init(objective, g, torch.float64)

    block = progress_group(objective, X, None)
    n = 2 * block + 7
    whole = make_trials(mode, method, forget, 0.05, n, seed=11, init=init)
    cuts = [0, block, 2 * block, n]
    shards = [
        make_trials(mode, method, forget, 0.05, b - a, seed=11, init=init, first=a) for a, b in zip(cuts, cuts[1:])
    ]
    for name in ("unlearned", "retrained", "original"):
        assert torch.equal(torch.cat([getattr(s, name) for s in shards]), getattr(whole, name))
    if mode == "retrain":  # a shard off the row block would round its trials differently: refused
        with pytest.raises(InvalidInput, match="first"):
            make_trials(mode, method, forget, 0.05, 3, seed=11, init=init, first=1)
