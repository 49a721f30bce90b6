"""The tradeoff curve's batched R2D replays, and the audit's choice of CPU threads."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from audit.config import AuditConfig
from audit.threads import AUTO_PARALLEL_WORK, ThreadCount, available_cpus, choose
from certify.errors import InvalidInput
from unlearners.objective import Objective
from unlearners.registry import get_method


def _data(n: int = 600, seed: int = 0):
    gen = torch.Generator().manual_seed(seed)
    X = torch.randn(n, 4, generator=gen, dtype=torch.float64)
    y = (X[:, 0] + 0.5 * torch.randn(n, generator=gen, dtype=torch.float64) > 0).long()
    return X, y


@pytest.mark.parametrize("hidden", [0, 6])
@pytest.mark.parametrize("batch_size", [None, 100])
def test_r2d_sweep_equals_one_replay_per_rewind(hidden, batch_size):
    """Every row of the batched sweep is Algorithm 2 at that rewind (to rounding), full-batch and
    mini-batch (which replays one rewind at a time), linear and non-linear models."""
    torch.manual_seed(1)
    model = nn.Linear(4, 1) if hidden == 0 else nn.Sequential(nn.Linear(4, hidden), nn.Tanh(), nn.Linear(hidden, 1))
    objective = Objective(model.double())
    method = get_method("r2d")(objective, steps=30, rewind=6, batch_size=batch_size)
    X, y = _data()
    method.fit(X, y, torch.full((objective.dim,), 0.05, dtype=torch.float64))
    forget = torch.arange(0, 600, 37)
    values = method.knob_grid(7)
    swept = method.unlearn_sweep(forget, values)
    assert swept.shape == (len(values), objective.dim)
    for row, value in zip(swept, values):
        one = method.unlearn(forget, rewind=value)
        assert torch.allclose(row, one, rtol=0, atol=1e-12)
    # K = T replays the whole training on D': the retrain
    assert torch.allclose(method.unlearn_sweep(forget, [30])[0], method.retrain(forget), rtol=0, atol=1e-12)


def test_sweep_refuses_a_rewind_outside_the_trajectory():
    objective = Objective(nn.Linear(4, 1).double())
    method = get_method("r2d")(objective, steps=10, rewind=2)
    X, y = _data()
    method.fit(X, y, torch.zeros(objective.dim, dtype=torch.float64))
    with pytest.raises(InvalidInput, match="rewind"):
        method.unlearn_sweep(torch.arange(3), [11])


def test_auto_threads_one_for_small_problems_all_cpus_for_large():
    count, reason = choose("auto", 34_190, 3)
    assert count == 1 and "auto: 1 thread" in reason and "34,190 records" in reason
    count, reason = choose("auto", AUTO_PARALLEL_WORK, 1)
    assert count == available_cpus() and count >= 1 and "every CPU" in reason
    assert choose(3, 10, 10) == (3, "3 as configured (threads = 3)")


def test_thread_count_constraint():
    constraint = ThreadCount()
    assert constraint.check("threads", "auto") == "auto"
    assert constraint.check("threads", "2") == 2 and constraint.check("threads", 1) == 1
    for bad in constraint.invalid():
        with pytest.raises(InvalidInput, match="threads"):
            constraint.check("threads", bad)


def test_audit_records_and_restores_threads():
    """The report says how many threads ran and why; the caller's setting is restored after."""
    from threadpoolctl import threadpool_info

    from audit import pipeline

    before = torch.get_num_threads()
    blas_before = [pool["num_threads"] for pool in threadpool_info()]
    config = AuditConfig(method="r2d", epsilon=1.0, attacks=(), max_train=400, threads=1, curve_points=2)
    report = pipeline.run(config)
    assert report.environment.threads == 1
    assert report.environment.threads_reason == "1 as configured (threads = 1)"
    assert torch.get_num_threads() == before
    auto = pipeline.run(AuditConfig(method="r2d", epsilon=1.0, attacks=(), max_train=400, curve_points=2))
    assert auto.environment.threads == 1 and auto.environment.threads_reason.startswith("auto: 1 thread")
    assert torch.get_num_threads() == before
    assert [pool["num_threads"] for pool in threadpool_info()] == blas_before


def test_a_replica_reuses_the_fit_constants_only_on_the_same_records():
    """Trials and shadow models (the fit's own data) reuse its estimated L and G; a replica fitted
    on other records (the one-run audit's D plus canaries) estimates its own, which cover them."""
    torch.manual_seed(0)
    objective = Objective(nn.Sequential(nn.Linear(4, 5), nn.Tanh(), nn.Linear(5, 1)).double())
    method = get_method("r2d")(objective, steps=8, rewind=2)
    X, y = _data(200)
    theta0 = torch.full((objective.dim,), 0.05, dtype=torch.float64)
    method.fit(X, y, theta0)
    same = method.replica()
    same.fit(X, y, -3 * theta0)  # another trial's initial point: its own estimate would differ
    assert same.constants_ == method.constants_
    X_more = torch.cat([X, 25.0 * torch.ones(3, 4, dtype=torch.float64)])  # an outlying canary
    y_more = torch.cat([y, torch.ones(3, dtype=torch.long)])
    other = method.replica()
    other.fit(X_more, y_more, -3 * theta0)
    assert other.constants_ != method.constants_
    assert other.constants_["G"].value > method.constants_["G"].value  # the canaries' gradients count
