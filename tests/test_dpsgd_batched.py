"""DP-SGD's streams and its batched trainer: Opacus is the reference and the accountant."""

import numpy as np
import pytest
import torch

from audit.trials import retrain_trials
from unlearners import dpsgd_batched
from unlearners.dpsgd import DPSGD, opacus_descent
from unlearners.dpsgd_batched import (
    Mechanism,
    dpsgd_step,
    gap_budget,
    per_sample_clipped_sum,
    run_keys,
    sampled_positions,
    step_normals,
)
from unlearners.models import build_model
from unlearners.objective import Objective, default_init

from synthetic import synthetic

FORGET = torch.arange(12)


@pytest.fixture(scope="module")
def problem():
    X, y = synthetic(n=300, d=5, seed=1)
    return X, y


def _objective(kind, classes=2):
    return Objective(build_model(kind, 5, classes, **({"hidden": (6,)} if kind == "mlp" else {})).double())


def _inits(objective, count):
    return torch.stack([default_init(objective, torch.Generator().manual_seed(s)) for s in range(count)])


@pytest.fixture(scope="module")
def fitted(problem):
    X, y = problem
    objective = _objective("logreg")
    method = DPSGD(objective, epochs=2, batch_size=50, accountant="rdp")
    method.fit(X, y, _inits(objective, 1)[0])
    return method


# -- the streams ---------------------------------------------------------------------------------
def test_streams_are_pure_functions_of_seed_and_initial_point():
    theta = torch.zeros(3, dtype=torch.float64)
    keys = run_keys(0, theta)
    assert all(np.array_equal(a, b) for a, b in zip(keys, run_keys(0, theta.clone())))
    assert not np.array_equal(run_keys(1, theta).sample, keys.sample)
    assert not np.array_equal(run_keys(0, theta + 1).noise, keys.noise)
    first = sampled_positions(keys.sample, 500, 0.1, 40, 0, 20)
    assert np.array_equal(first, sampled_positions(keys.sample, 500, 0.1, 40, 0, 20))
    assert not np.array_equal(first, sampled_positions(keys.sample, 500, 0.1, 40, 20, 40))
    assert first.shape == (20, gap_budget(500, 0.1)) and (np.diff(first, axis=1) > 0).all()
    normals = step_normals(keys.noise, 3, 0, 1000)
    assert normals.shape == (1000, 3) and abs(normals.mean()) < 0.15 and abs(normals.std() - 1) < 0.05


@pytest.mark.parametrize("budget_sd, budget_words", [(10, 16), (0, 0)])
def test_poisson_batches_have_the_right_size_even_past_the_word_budget(monkeypatch, budget_sd, budget_words):
    """Each record is in a batch with probability q: the mean batch size is q*n, also when every
    step's word budget runs out and the gap chain continues (budget = the mean, no margin)."""
    monkeypatch.setattr(dpsgd_batched, "MARGIN_SD", budget_sd)
    monkeypatch.setattr(dpsgd_batched, "MARGIN_WORDS", budget_words)
    n, q, steps = 1000, 0.1, 400
    positions = sampled_positions(run_keys(3, torch.zeros(2)).sample, n, q, steps, 0, steps)
    sizes = (positions < n).sum(axis=1)
    assert abs(sizes.mean() - q * n) < 3  # 6 standard errors of the mean (0.47)
    assert (positions[:, -1] >= n).all() and positions.shape[1] % gap_budget(n, q) == 0
    counts = np.bincount(positions[positions < n], minlength=n)
    assert counts.max() < 80 and counts.min() > 10  # every record sampled about q*steps = 40 times
    if budget_sd == 0:
        assert positions.shape[1] > gap_budget(n, q)  # the continuation was exercised


# -- Opacus, the reference -----------------------------------------------------------------------
@pytest.mark.parametrize("kind, classes", [("logreg", 2), ("logreg", 3), ("mlp", 2)])
def test_a_batched_step_equals_opacus_on_the_same_batch_and_noise(problem, kind, classes):
    """The closed form (logistic and softmax regression) and vmap(grad) (the MLP) against Opacus."""
    X, y = problem
    y = y if classes == 2 else torch.arange(X.shape[0]) % classes
    objective = _objective(kind, classes)
    theta0 = _inits(objective, 1)[0]
    spec = Mechanism(sample_rate=0.2, steps_per_epoch=5, epochs=1, clip=0.5, noise_multiplier=1.3, lr=0.01)
    idx = torch.tensor([0, 3, 7, 8, 20, 41, 299])
    xi = torch.randn(objective.dim, generator=torch.Generator().manual_seed(4), dtype=torch.float64)
    reference, history = opacus_descent(objective, theta0, X, y, spec, [(idx, xi)], accountant="rdp")
    padded = torch.cat([idx, torch.zeros(5, dtype=torch.long)]).unsqueeze(0)  # padding: any index, weight 0
    valid = torch.cat([torch.ones(7), torch.zeros(5)]).double().unsqueeze(0)
    ours = dpsgd_step(
        per_sample_clipped_sum(objective, X, y), theta0.unsqueeze(0), padded, valid, xi.unsqueeze(0), spec
    )[0]
    torch.testing.assert_close(ours, reference, rtol=0, atol=1e-15)
    assert not torch.equal(ours, theta0) and history == [(1.3, 0.2, 1)]


def test_a_batched_run_does_not_depend_on_the_runs_beside_it(fitted):
    """Prefix and shard: runs are computed in fixed blocks at fixed shapes, so a run is bit for bit
    the same in a larger or smaller set (the trial sets' shard identity rests on it)."""
    thetas0 = _inits(fitted.objective, 5)
    whole = fitted.train_many(thetas0, FORGET, chunk=2)
    prefix = fitted.train_many(thetas0[:3], FORGET, chunk=2)
    shard = fitted.train_many(thetas0[2:4], FORGET, chunk=2)
    for part, rows in ((prefix, slice(0, 3)), (shard, slice(2, 4))):
        assert torch.equal(part.original, whole.original[rows]) and torch.equal(part.retrained, whole.retrained[rows])


def test_dpsgd_trials_take_the_batched_path_and_opacus_replicas_agree(fitted):
    """The loop path is a replica's fit and retrain under Opacus, trial by trial: the batched
    trials equal them up to summation order (not bit for bit: Opacus sums the clipped gradients
    and computes the linear layer through BLAS, in another order)."""
    init = lambda g: default_init(fitted.objective, g)  # noqa: E731
    fast = retrain_trials(fitted, FORGET, 2, seed=5, init=init, sigma=0.0)
    slow = retrain_trials(fitted, FORGET, 2, seed=5, init=init, sigma=0.0, batched=False)
    assert (fast.path, slow.path) == ("vmap", "loop")
    torch.testing.assert_close(fast.retrained, slow.retrained, rtol=0, atol=1e-13)
    torch.testing.assert_close(fast.original, slow.original, rtol=0, atol=1e-13)
    assert torch.equal(fast.unlearned, fast.original) and not torch.equal(fast.original[0], fast.original[1])


def test_a_convolutional_model_trains_each_trial_through_opacus(fitted):
    """Per-sample gradients of convolutions under two nested vmaps cost more than Opacus's hooks:
    train_many runs Opacus per row there, bit for bit a replica's own fit and retrain."""
    X = torch.rand(60, 1, 4, 4, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    y = torch.arange(60) % 2  # q = 1/6 and T = 12, as the fixture's: its calibration is reused
    objective = Objective(
        torch.nn.Sequential(torch.nn.Conv2d(1, 2, 3), torch.nn.Flatten(), torch.nn.Linear(8, 1)).double()
    )
    thetas0 = _inits(objective, 2)
    method = DPSGD(objective, epochs=2, batch_size=10, accountant="rdp")
    method.fit(X, y, thetas0[0])
    worlds = method.train_many(thetas0, torch.arange(3))
    replica = method.replica()
    assert torch.equal(worlds.original[1], replica.fit(X, y, thetas0[1]))
    assert torch.equal(worlds.retrained[1], replica.retrain(torch.arange(3)))


# -- the accountant ------------------------------------------------------------------------------
def test_the_accountant_is_unchanged(fitted):
    """The values main (e4c0f7f) gave for this fit before the streams (and its group epsilon for 3
    records, 3.6914692172472545, unchanged too): z, q, T and epsilon are the accountant's, whatever
    draws the batches and the noise."""
    assert fitted.history_ == [(2.87109375, 1 / 6, 12)] and fitted.epsilon_spent_ == 0.9937657974190164
