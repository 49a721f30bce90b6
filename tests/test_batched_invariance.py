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
    module = {"binary": nn.Sequential(nn.Linear(6, 1)), "softmax": nn.Sequential(nn.Linear(6, 3)),
              "mlp": nn.Sequential(nn.Linear(6, 5), nn.Tanh(), nn.Linear(5, 1))}[model]
    objective = Objective(module.double())
    thetas = torch.stack([default_init(objective, torch.Generator().manual_seed(i)) for i in range(40)])
    full, kept = batched_gradient_descent(objective, thetas, X, y, eta=0.5, steps=15, keep={7})
    for n in (1, 3, 6, 16, 17, 33):
        part, part_kept = batched_gradient_descent(objective, thetas[:n], X, y, eta=0.5, steps=15, keep={7})
        assert torch.equal(part, full[:n]) and torch.equal(part_kept[7], kept[7][:n])
    # a shard starting at a block boundary equals the same rows of the whole run
    shard, _ = batched_gradient_descent(objective, thetas[16:40], X, y, eta=0.5, steps=15)
    assert torch.equal(shard, full[16:40])
