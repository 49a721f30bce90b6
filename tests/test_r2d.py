"""R2D: the algorithms, and the inequalities of Theorem 3.1 on real runs."""

import math

import pytest
import torch

from certify.errors import InvalidInput
from certify.mechanisms import epsilon_for, sigma_for
from unlearners.models import build_model
from unlearners.objective import Objective, default_init
from unlearners.r2d import RewindToDelete
from unlearners.registry import get_method

from synthetic import synthetic


def _fitted(model="logreg", steps=60, rewind=30, horizon=4.0, eta=None, n=600, **kw):
    X, y = synthetic(n=n, d=5, seed=7)
    opts = {"hidden": (8,)} if model == "mlp" else {}
    obj = Objective(build_model(model, 5, 2, **opts).double())
    r2d = RewindToDelete(obj, steps=steps, rewind=rewind, horizon=horizon, eta=eta, **kw)
    theta0 = default_init(obj, torch.Generator().manual_seed(0))
    theta_T = r2d.fit(X, y, theta0)
    return r2d, theta_T, X, y


FORGET = torch.tensor([3, 17, 40, 41, 200])


def test_rewind_T_reproduces_retraining_bit_for_bit():
    r2d, _, _, _ = _fitted()
    unlearned = r2d.unlearn(FORGET, rewind=r2d.steps)
    assert torch.equal(unlearned, r2d.retrain(FORGET))
    assert r2d.sensitivity(len(FORGET), rewind=r2d.steps) == 0.0
    assert r2d.certify(FORGET, 1.0, 1e-5, rewind=r2d.steps).sigma == 0.0


def test_rewind_zero_releases_the_original_model():
    r2d, theta_T, _, _ = _fitted()
    assert torch.equal(r2d.unlearn(FORGET, rewind=0), theta_T)


@pytest.mark.parametrize("K", [0, 10, 30, 50, 59])
def test_distance_never_exceeds_theorem_3_1_bound(K):
    r2d, _, _, _ = _fitted()
    distance = float(torch.linalg.vector_norm(r2d.unlearn(FORGET, rewind=K) - r2d.retrain(FORGET)))
    bound = r2d.sensitivity(len(FORGET), rewind=K)
    assert 0 < distance <= bound
    cert = r2d.certify(FORGET, 1.0, 1e-5, rewind=K)
    realized = epsilon_for(cert.sigma, 1e-5, distance)
    assert realized <= cert.epsilon


def test_bound_and_noise_decrease_with_rewind_and_grow_with_forget_size():
    r2d, _, _, _ = _fitted()
    sigmas = [r2d.certify(FORGET, 1.0, 1e-5, rewind=K).sigma for K in range(0, 61, 10)]
    assert all(a > b for a, b in zip(sigmas, sigmas[1:]))
    assert r2d.sensitivity(10, 30) > r2d.sensitivity(5, 30)


def test_certificate_lists_every_constant_with_provenance():
    r2d, _, _, _ = _fitted()
    cert = r2d.certify(FORGET, 1.0, 1e-5)
    names = {c.name: c.provenance for c in cert.constants}
    assert names["L"] == names["G"] == "analytic"
    assert {"eta", "T", "K", "n", "m"} <= set(names)
    assert cert.valid and not cert.conditional and "Theorem 3.1" in cert.theorem
    assert cert.sigma == pytest.approx(sigma_for(1.0, 1e-5, cert.sensitivity, "analytic"))
    classic = r2d.certify(FORGET, 1.0, 1e-5, mechanism="classic")
    assert classic.sigma > cert.sigma  # analytic is tighter at epsilon = 1


def test_step_size_above_theorem_limit_is_not_certified():
    r2d, _, _, _ = _fitted(eta=10.0)  # L = 0.5 here, so 1/L = 2 < 10
    cert = r2d.certify(FORGET, 1.0, 1e-5)
    assert not cert.valid and any("step size" in w for w in cert.warnings)


def test_sigma_budget_gives_smallest_sufficient_rewind():
    r2d, _, _, _ = _fitted()
    target = r2d.certify(FORGET, 1.0, 1e-5, rewind=40).sigma
    K = r2d.knob_for_sigma(target, FORGET, 1.0, 1e-5)
    assert K <= 40
    assert r2d.certify(FORGET, 1.0, 1e-5, rewind=K).sigma <= target
    if K > 0:
        assert r2d.certify(FORGET, 1.0, 1e-5, rewind=K - 1).sigma > target


def test_algorithm_3_recovers_the_checkpoint():
    r2d, theta_T, _, _ = _fitted()
    recovered, diag = r2d.recover_checkpoint(theta_T, 30)
    true = r2d.checkpoint(r2d.steps - 30)
    assert diag["converged"]
    assert float(torch.linalg.vector_norm(recovered - true)) < 1e-9 * (1 + float(true.norm()))


def test_algorithm_3_under_a_budget_recovers_a_prefix_and_says_so():
    r2d, theta_T, _, _ = _fitted()
    whole = r2d.checkpoint_recovery(theta_T)
    assert whole["steps"] == whole["rewind"] == r2d.rewind and whole["converged"]
    cut = r2d.checkpoint_recovery(theta_T, budget=0.5)  # at most T/2 gradients for K = 95 steps
    assert cut["rewind"] == r2d.rewind and 0 < cut["steps"] < r2d.rewind
    assert cut["gradients"] <= r2d.steps // 2 and cut["distance_to_checkpoint"] < 1e-9 * (1 + cut["checkpoint_norm"])
    # the extrapolated start saves gradients: fewer than one solve from y each step would take
    _, plain = r2d.recover_checkpoint(theta_T, 30)
    assert plain["gradients"] < 30 * plain["max_iterations"]


def test_mlp_certificate_is_conditional_on_estimated_constants():
    r2d, _, _, _ = _fitted("mlp", steps=20, rewind=10, n=200)
    cert = r2d.certify(FORGET[:2], 1.0, 1e-5)
    assert cert.conditional
    assert any("conditional" in w for w in cert.warnings)
    assert cert.constant("L").diagnostics["n_samples"] > 0


def test_overflowing_bound_is_reported_not_raised():
    r2d, _, _, _ = _fitted(horizon=2000.0, steps=1000, rewind=0)
    cert = r2d.certify(FORGET, 1.0, 1e-5)
    assert not cert.valid and math.isinf(cert.sigma)


def test_registry_and_validation():
    assert get_method("r2d") is RewindToDelete
    with pytest.raises(InvalidInput, match="method"):
        get_method("nope")
    obj = Objective(build_model("logreg", 2, 2))
    with pytest.raises(InvalidInput, match="rewind"):
        RewindToDelete(obj, steps=10, rewind=11)
    with pytest.raises(InvalidInput, match="eta"):
        RewindToDelete(obj, eta=-1.0)


# -- the mini-batch variant: measured, never certified ------------------------------------------
def test_minibatch_r2d_is_measured_not_certified():
    r2d, theta_T, X, y = _fitted(batch_size=64)
    full, theta_full, _, _ = _fitted()
    assert not torch.equal(theta_T, theta_full)  # a different algorithm ...
    again, theta_again, _, _ = _fitted(batch_size=64)
    assert torch.equal(theta_T, theta_again)  # ... and a pure function of its seed
    cert = r2d.certify(FORGET, 1.0, 1e-5)
    batch = next(c for c in cert.conditions if c.name == "full-batch gradient descent")
    assert not cert.valid and not batch.met and "batch_size = 64 < n = 600" in batch.detail
    assert full.certify(FORGET, 1.0, 1e-5).valid
    assert r2d.checkpoint_recovery(theta_T) == {
        "applicable": False,
        "reason": "Algorithm 3 inverts full-batch steps; this run is mini-batch SGD",
    }
    # U replays the last K of the retrain's draws over D': K = T is the retrain, bit for bit
    assert torch.equal(r2d.unlearn(FORGET, rewind=r2d.steps), r2d.retrain(FORGET))
    assert not torch.equal(r2d.unlearn(FORGET), r2d.retrain(FORGET))
    # retrain-mode trials: the batched path runs the mini-batch fits one by one, identically
    starts = torch.stack([default_init(r2d.objective, torch.Generator().manual_seed(s)) for s in (1, 2)])
    original, unlearned, retrained = r2d.train_many(starts, FORGET)
    twin = r2d.replica()
    assert torch.equal(original[1], twin.fit(X, y, starts[1]))
    assert torch.equal(unlearned[1], twin.unlearn(FORGET)) and torch.equal(retrained[1], twin.retrain(FORGET))


def test_constants_are_estimated_once_per_audit(monkeypatch):
    """The fit samples L at θ_0 once (η and the certificate share it) and G only along the
    trajectory; every replica (trial, shadow model) reuses the fit's L and G, with their
    provenance, instead of estimating them again (issue 14)."""
    from unlearners.smoothness import ConstantSampler

    counts = {"G": 0, "L": 0}
    for name, method in (("G", "_grad_norms"), ("L", "_hessian_norms")):
        original = getattr(ConstantSampler, method)

        def counted(self, theta, _name=name, _original=original):
            counts[_name] += 1
            return _original(self, theta)

        monkeypatch.setattr(ConstantSampler, method, counted)
    r2d, _, X, y = _fitted("mlp", steps=14, rewind=7, n=200)
    assert counts == {"G": 8, "L": 8}  # 8 sampled iterates, θ_0 included once (was 9 and 9)
    assert r2d.constants_["L"].diagnostics["n_samples"] == 8 * 200  # all 200 records at 8 iterates
    twin = r2d.replica()
    twin.fit(X, y, default_init(r2d.objective, torch.Generator().manual_seed(3)))
    assert counts == {"G": 8, "L": 8}  # nothing estimated again
    assert all(twin.constants_[c] is r2d.constants_[c] for c in ("G", "L")) and twin.eta_ == r2d.eta_
    assert twin.constants_["G"].provenance == "estimated"
    assert twin.sensitivity(5) == r2d.sensitivity(5)  # the same certificate for every trial
    # the user's overrides still win over what a replica inherits
    assumed = r2d.replica(constants={"L": 9.0})
    assumed.fit(X, y, default_init(r2d.objective, torch.Generator().manual_seed(3)))
    assert assumed.constants_["L"].provenance == "assumed" and assumed.constants_["G"] is r2d.constants_["G"]
