"""audit.trials: noise and retrain trials, batched through the method's declared capability, determinism."""

import copy

import pytest
import torch

from audit.trials import (
    TrialSet,
    make_trials,
    noise_draws,
    noise_trials,
    retrain_trials,
    trial_generator,
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
    assert torch.equal(prefix.unlearned[3], Unlearner.release(u, 0.5, trial_generator(11, 3, 1)))
    assert trials.describe()["mode"] == "noise"


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
        released_u = Unlearner.release(u, 0.05, trial_generator(3, i, 1))
        released_r = Unlearner.release(r, 0.05, trial_generator(3, i, 2))
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
    assert retrain.mode == "retrain" and retrain.describe()["path"] == "vmap"
    assert torch.equal(method.theta0_, snapshot)
    with pytest.raises(InvalidInput):
        make_trials("bogus", method, FORGET, 0.1, 5, seed=2)
    with pytest.raises(InvalidInput):
        make_trials("retrain", method, FORGET, 0.1, 5, seed=2)
