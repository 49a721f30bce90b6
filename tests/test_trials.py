"""audit.trials: noise and retrain trials, batched through the method's declared capability, determinism."""

import copy
import math

import numpy as np
import pytest
import torch
from scipy import stats

import audit.trials as trials_module
from audit.trials import (
    SEED_SCHEME,
    TrialSet,
    make_trials,
    noise_draws,
    noise_trials,
    retrain_trials,
    trial_generator,
    trial_noise,
)
from certify.errors import InvalidInput
from unlearners.base import Unlearner
from unlearners.models import build_model
from unlearners.objective import Objective, default_init
from unlearners.r2d import RewindToDelete
from unlearners.retrain import Retrain

from synthetic import synthetic

FORGET = torch.tensor([1, 5, 9, 30, 77])


def _objective(model="mlp", classes=2, d=5):
    opts = {"hidden": (6,)} if model == "mlp" else {}
    return Objective(build_model(model, d, classes, **opts).double())


def _stack(obj, n, seed=0):
    return torch.stack([default_init(obj, torch.Generator().manual_seed(seed + i)) for i in range(n)])


def _init(obj):
    return lambda g: default_init(obj, g)


def _r2d(obj, X, y, steps=12, rewind=5, eta=0.5):
    method = RewindToDelete(obj, steps=steps, rewind=rewind, eta=eta)
    method.fit(X, y, default_init(obj, torch.Generator().manual_seed(123)))
    return method


@pytest.fixture
def data():
    return synthetic(n=120, d=5, seed=1)


# -- noise ---------------------------------------------------------------------------------
def test_noise_draws_match_release_and_statistics():
    theta = torch.linspace(-1, 1, 40, dtype=torch.float64)
    draws = noise_draws(theta, 0.3, 1, torch.Generator().manual_seed(5))
    assert torch.equal(draws[0], Unlearner.release(theta, 0.3, torch.Generator().manual_seed(5)))
    many = noise_draws(theta, 0.3, 4000, torch.Generator().manual_seed(6))
    assert many.shape == (4000, 40) and many.dtype == torch.float64
    assert float((many.mean(0) - theta).abs().max()) < 5 * 0.3 / 4000**0.5
    assert abs(float((many - theta).std()) - 0.3) < 0.01
    assert torch.equal(noise_draws(theta, 0.0, 3, torch.Generator()), theta.expand(3, -1))


def test_noise_trials_statistics_independence_and_determinism():
    u = torch.zeros(30, dtype=torch.float64)
    r = torch.ones(30, dtype=torch.float64)
    trials = noise_trials(u, r, 0.5, 2000, seed=11)
    assert isinstance(trials, TrialSet) and trials.mode == "noise" and trials.path == "noise"
    assert trials.unlearned.shape == trials.retrained.shape == (2000, 30)
    assert trials.theta_unlearned.shape == (30,) and trials.initial is None
    for released, theta in ((trials.unlearned, u), (trials.retrained, r)):
        assert float((released.mean(0) - theta).abs().max()) < 5 * 0.5 / 2000**0.5
        assert abs(float((released - theta).std()) - 0.5) < 0.02
    # The worlds' noises are independent streams, not the same draw shifted.
    noise_u, noise_r = trials.unlearned - u, trials.retrained - r
    assert abs(float(torch.corrcoef(torch.stack([noise_u.flatten(), noise_r.flatten()]))[0, 1])) < 0.02
    again = noise_trials(u, r, 0.5, 2000, seed=11)
    assert torch.equal(again.unlearned, trials.unlearned) and torch.equal(again.retrained, trials.retrained)
    other = noise_trials(u, r, 0.5, 2000, seed=12)
    assert not torch.equal(other.unlearned, trials.unlearned)
    # Trial i depends on (seed, i) only: a smaller run is a prefix of a larger one.
    prefix = noise_trials(u, r, 0.5, 10, seed=11)
    assert torch.equal(prefix.unlearned, trials.unlearned[:10])
    assert torch.equal(prefix.unlearned[3], u + 0.5 * trial_noise(11, 1, 3, 4, 30)[0])
    assert torch.equal(prefix.retrained[7], r + 0.5 * trial_noise(11, 2, 7, 8, 30)[0])
    assert torch.equal(prefix.original[0], u + 0.5 * trial_noise(11, 3, 0, 1, 30)[0])
    assert trials.mode == "noise"


# -- counter-based trial noise ---------------------------------------------------------------
def _reference_row(seed: int, stream: int, i: int, dim: int) -> torch.Tensor:
    """Row i of a stream, computed one value at a time from the scheme as the docstring and
    SEED_SCHEME state it (an independent reading of the description recorded in every report)."""
    key = np.random.SeedSequence(seed, spawn_key=(stream,)).generate_state(2, dtype=np.uint64)
    blocks = math.ceil(2 * math.ceil(dim / 2) / 4)
    words = np.random.Philox(key=key, counter=i * blocks).random_raw(4 * blocks)
    u = [int(w >> np.uint64(11)) * 2.0**-53 for w in words]
    z = []
    for j in range(math.ceil(dim / 2)):
        r = math.sqrt(-2.0 * math.log(1.0 - u[2 * j]))
        z += [r * math.cos(2 * math.pi * u[2 * j + 1]), r * math.sin(2 * math.pi * u[2 * j + 1])]
    return torch.tensor(z[:dim], dtype=torch.float64)


@pytest.mark.parametrize("dim", [1, 2, 3, 4, 5, 8, 37])
def test_trial_noise_is_the_documented_scheme(dim):
    block = trial_noise(5, 2, 0, 12, dim)
    assert block.shape == (12, dim) and block.dtype == torch.float64
    for i in (0, 1, 7, 11):
        # numpy's vectorised log/sin/cos against Python's math: equal up to rounding
        torch.testing.assert_close(block[i], _reference_row(5, 2, i, dim), rtol=1e-14, atol=1e-14)
    assert "Philox" in SEED_SCHEME and "Box-Muller" in SEED_SCHEME


@pytest.mark.parametrize("dim", [1, 2, 3, 7, 64])
def test_trial_noise_rows_are_independent_of_the_block(monkeypatch, dim):
    full = trial_noise(9, 1, 0, 1000, dim)
    # prefix: a smaller run is the start of a larger one
    assert torch.equal(trial_noise(9, 1, 0, 10, dim), full[:10])
    # row i alone, and row i inside other blocks, is the same row, bit for bit
    for i in (0, 1, 499, 998, 999):
        assert torch.equal(trial_noise(9, 1, i, i + 1, dim)[0], full[i])
    assert torch.equal(trial_noise(9, 1, 250, 1000, dim), full[250:])
    # two shards [0, a) and [a, N) equal one block
    for a in (1, 333, 999):
        assert torch.equal(torch.cat([trial_noise(9, 1, 0, a, dim), trial_noise(9, 1, a, 1000, dim)]), full)
    # the chunking that bounds memory does not change a row (chunks of a few rows here)
    monkeypatch.setattr(trials_module, "CHUNK_WORDS", 3 * 4 * trials_module._blocks_per_row(dim))
    assert torch.equal(trial_noise(9, 1, 0, 1000, dim), full)
    assert torch.equal(trial_noise(9, 1, 5, 17, dim), full[5:17])
    assert trial_noise(9, 1, 4, 4, dim).shape == (0, dim)


def test_trial_noise_streams_seeds_and_dtypes():
    base = trial_noise(1, 1, 0, 50, 6)
    assert not torch.equal(trial_noise(1, 2, 0, 50, 6), base)
    assert not torch.equal(trial_noise(2, 1, 0, 50, 6), base)
    assert len({tuple(row.tolist()) for row in base}) == 50  # no row repeats another
    single = trial_noise(1, 1, 0, 50, 6, torch.float32)
    assert single.dtype == torch.float32 and torch.equal(single, base.float())  # the float64 draw, cast
    with pytest.raises(InvalidInput):
        trial_noise(1, 1, 5, 4, 6)
    with pytest.raises(InvalidInput):
        trial_noise(1, 1, 0, 4, 0)


def test_trial_noise_is_standard_normal():
    """Fixed seeds, so these statistics are deterministic; the thresholds are those of fair tests."""
    z = trial_noise(2024, 1, 0, 40_000, 5)  # 200,000 draws, every coordinate of a 5-wide row
    flat = z.flatten().numpy()
    assert abs(flat.mean()) < 4 / flat.size**0.5
    assert abs(flat.var() - 1) < 4 * (2 / flat.size) ** 0.5
    assert stats.kstest(flat, "norm").pvalue > 0.01
    for column in z.T.numpy():  # the cos and sin halves of Box-Muller, and the odd last column
        assert stats.kstest(column, "norm").pvalue > 0.001
    # coordinates of a row (a Box-Muller pair among them) and consecutive rows are uncorrelated
    corr = np.corrcoef(z.T.numpy())
    assert np.abs(corr - np.eye(5)).max() < 4 / 40_000**0.5
    assert abs(np.corrcoef(flat[:-5], flat[5:])[0, 1]) < 4 / flat.size**0.5
    # squared norms of the rows: chi-square with 5 degrees of freedom
    assert stats.kstest((z**2).sum(1).numpy(), "chi2", args=(5,)).pvalue > 0.001


def test_zero_sigma_releases_copies():
    u, r = torch.linspace(0, 1, 4, dtype=torch.float64), torch.zeros(4, dtype=torch.float64)
    trials = noise_trials(u, r, 0.0, 5, seed=1)
    assert torch.equal(trials.unlearned, u.expand(5, -1)) and torch.equal(trials.retrained, r.expand(5, -1))


def test_noise_trials_validate():
    u = torch.zeros(3)
    for bad in ({"sigma": -1.0}, {"sigma": float("inf")}, {"n_trials": 0}, {"seed": -1}):
        kw = {"sigma": 0.1, "n_trials": 2, "seed": 0, **bad}
        with pytest.raises(InvalidInput):
            noise_trials(u, u, **kw)
    with pytest.raises(InvalidInput):
        noise_trials(u, torch.zeros(4), 0.1, 2, 0)


# -- retrain trials ------------------------------------------------------------------------
def test_retrain_trial_equals_a_single_r2d_run(data):
    X, y = data
    obj = _objective()
    method = _r2d(obj, X, y)
    trials = retrain_trials(method, FORGET, 2, seed=3, init=_init(obj), sigma=0.05)
    assert trials.mode == "retrain" and trials.path == "vmap" and trials.n_trials == 2
    assert trials.unlearned.shape == trials.retrained.shape == trials.initial.shape == (2, obj.dim)
    for i in range(2):
        theta0 = default_init(obj, trial_generator(3, i, 0))
        assert torch.equal(trials.initial[i], theta0)
        single = RewindToDelete(obj, steps=12, rewind=5, eta=0.5)
        single.fit(X, y, theta0)
        u, r = single.unlearn(FORGET), single.retrain(FORGET)
        torch.testing.assert_close(trials.theta_unlearned[i], u, rtol=0, atol=1e-10)
        torch.testing.assert_close(trials.theta_retrained[i], r, rtol=0, atol=1e-10)
        released_u = u + 0.05 * trial_noise(3, 1, i, i + 1, obj.dim)[0]
        released_r = r + 0.05 * trial_noise(3, 2, i, i + 1, obj.dim)[0]
        torch.testing.assert_close(trials.unlearned[i], released_u, rtol=0, atol=1e-10)
        torch.testing.assert_close(trials.retrained[i], released_r, rtol=0, atol=1e-10)
    # The method the audit fitted is untouched.
    assert torch.equal(method.theta0_, default_init(obj, torch.Generator().manual_seed(123)))


def test_retrain_trials_loop_path_matches_vmap_and_is_deterministic(data):
    X, y = data
    obj = _objective("logreg")
    method = _r2d(obj, X, y)
    fast = retrain_trials(method, FORGET, 3, seed=8, init=_init(obj), sigma=0.1)
    slow = retrain_trials(method, FORGET, 3, seed=8, init=_init(obj), sigma=0.1, batched=False)
    assert slow.path == "loop"
    torch.testing.assert_close(slow.unlearned, fast.unlearned, rtol=0, atol=1e-10)
    torch.testing.assert_close(slow.retrained, fast.retrained, rtol=0, atol=1e-10)
    again = retrain_trials(method, FORGET, 3, seed=8, init=_init(obj), sigma=0.1, chunk=2)
    torch.testing.assert_close(again.unlearned, fast.unlearned, rtol=0, atol=1e-12)
    prefix = retrain_trials(method, FORGET, 2, seed=8, init=_init(obj), sigma=0.1)
    torch.testing.assert_close(prefix.retrained, fast.retrained[:2], rtol=0, atol=1e-12)
    other = retrain_trials(method, FORGET, 3, seed=9, init=_init(obj), sigma=0.1)
    assert not torch.allclose(other.theta_retrained, fast.theta_retrained)


def test_retrain_method_trials_unlearn_equals_retrain(data):
    X, y = data
    obj = _objective("logreg")
    method = Retrain(obj, steps=10, eta=0.5)
    method.fit(X, y, default_init(obj, torch.Generator().manual_seed(0)))
    assert Retrain.capabilities.batched_training
    trials = retrain_trials(method, FORGET, 3, seed=1, init=_init(obj), sigma=0.0)
    assert torch.equal(trials.unlearned, trials.retrained)
    single = Retrain(obj, steps=10, eta=0.5)
    single.fit(X, y, default_init(obj, trial_generator(1, 2, 0)))
    torch.testing.assert_close(trials.retrained[2], single.retrain(FORGET), rtol=0, atol=1e-10)


class _Custom(RewindToDelete):
    """An R2D subclass with its own unlearning: must not inherit R2D's batched training."""

    def _unlearn(self, forget, rewind=None):
        return super()._unlearn(forget, rewind) * 0


def test_unknown_methods_fall_back_to_the_loop(data):
    X, y = data
    obj = _objective("logreg")
    method = _Custom(obj, steps=6, rewind=3, eta=0.5)
    method.fit(X, y, default_init(obj, torch.Generator().manual_seed(0)))
    assert RewindToDelete.capabilities.batched_training and not _Custom.capabilities.batched_training
    trials = retrain_trials(method, FORGET, 2, seed=0, init=_init(obj), sigma=0.0)
    assert trials.path == "loop" and torch.equal(trials.unlearned, torch.zeros(2, obj.dim, dtype=torch.float64))
    with pytest.raises(InvalidInput):
        retrain_trials(method, FORGET, 2, seed=0, init=_init(obj), sigma=0.0, batched=True)
    with pytest.raises(InvalidInput):
        retrain_trials(_Custom(obj, steps=6, rewind=3, eta=0.5), FORGET, 2, seed=0, init=_init(obj), sigma=0.0)


def test_make_trials_selects_the_mode(data):
    X, y = data
    obj = _objective("logreg")
    method = _r2d(obj, X, y)
    snapshot = copy.deepcopy(method.theta0_)
    noise = make_trials("noise", method, FORGET, 0.1, 5, seed=2)
    assert noise.mode == "noise"
    assert torch.equal(noise.theta_unlearned, method.unlearn(FORGET))
    retrain = make_trials("retrain", method, FORGET, 0.1, 5, seed=2, init=_init(obj))
    assert retrain.mode == "retrain" and retrain.path == "vmap"
    assert torch.equal(method.theta0_, snapshot)
    with pytest.raises(InvalidInput):
        make_trials("bogus", method, FORGET, 0.1, 5, seed=2)
    with pytest.raises(InvalidInput):
        make_trials("retrain", method, FORGET, 0.1, 5, seed=2)
