"""The attack on consecutive releases of a ledger (attacks.consecutive)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch
from scipy.stats import norm

from attacks.consecutive import (
    consecutive_release_bounds,
    consecutive_scores,
    difference_mu,
    gdp_epsilon,
    pair_mu,
)
from attacks.epsilon import epsilon_ceiling
from audit.report.encoding import json_safe
from certify.errors import InvalidInput
from certify.mechanisms import epsilon_for

KEYS = {
    "step",
    "releases",
    "sigmas",
    "distances",
    "difference_distance",
    "mu_releases",
    "mu_pair",
    "realized_epsilon",
    "mu_difference",
    "difference_realized_epsilon",
    "epsilon_lower",
    "ceiling",
    "bound",
    "difference_epsilon_lower",
    "difference_bound",
    "exceeds_realized",
    "n_trials",
    "delta",
    "confidence",
    "seed",
    "draws",
    "test",
    "difference_test",
}


def _ledger(d=20, releases=3, scale=0.0, seed=0):
    """Noiseless models of both worlds: θ^R_k random, θ^U_k = θ^R_k + scale·(random unit vector)."""
    rng = np.random.default_rng(seed)
    retrained = [rng.normal(size=d) for _ in range(releases)]
    unlearned = []
    for r in retrained:
        u = rng.normal(size=d)
        unlearned.append(r + scale * u / np.linalg.norm(u))
    return unlearned, retrained


def test_keys_and_indices():
    u, r = _ledger(releases=4, scale=0.3)
    out = consecutive_release_bounds(
        [torch.tensor(x) for x in u], r, [0.5, 0.6, 0.7, 0.8], n_trials=50, delta=1e-5, first_index=3
    )
    assert [o["step"] for o in out] == [3, 4, 5] and [o["releases"] for o in out] == [[3, 4], [4, 5], [5, 6]]
    for o in out:
        assert set(o) == KEYS
        assert o["distances"] == pytest.approx([0.3, 0.3])
        assert o["bound"]["epsilon_lower"] == o["epsilon_lower"] and o["bound"]["n_trials"] == [50, 50]
        assert 0 <= o["epsilon_lower"] <= o["ceiling"]
    assert json.loads(json.dumps(json_safe(out))) == json_safe(out)


def test_zero_difference_gives_zero():
    u, r = _ledger(releases=3, scale=0.0)
    for o in consecutive_release_bounds(u, r, [0.5, 0.5, 0.5], n_trials=200, delta=1e-5):
        assert o["mu_pair"] == o["mu_difference"] == o["realized_epsilon"] == 0.0
        assert o["epsilon_lower"] == 0.0 and o["difference_epsilon_lower"] == 0.0


def test_nearly_null_steps_give_zero_most_of_the_time_and_never_beat_the_exact_epsilon():
    """μ_pair = 0.05: realized ε ≈ 0.2 at δ = 1e-5; a 95 % bound from 400 trials is (almost always) 0."""
    zeros, exceeded = 0, 0
    for rep in range(20):
        u, r = _ledger(d=10, releases=2, scale=0.025, seed=rep)
        (o,) = consecutive_release_bounds(u, r, [0.5, 0.5], n_trials=400, delta=1e-5, seed=rep)
        assert o["mu_pair"] == pytest.approx(math.hypot(0.05, 0.05))
        zeros += o["epsilon_lower"] == 0.0
        exceeded += o["exceeds_realized"]
    assert zeros >= 18 and exceeded <= 1


def test_a_planted_big_difference_reaches_the_ceiling():
    u, r = _ledger(releases=3, scale=20.0)
    for o in consecutive_release_bounds(u, r, [0.5, 1.0, 2.0], n_trials=400, delta=1e-5):
        assert o["mu_pair"] > 10
        # the calibration half thins its thresholds to 200 ranks, so the perfect gap may be missed by a score
        assert o["epsilon_lower"] >= 0.98 * o["ceiling"]
        assert o["ceiling"] == pytest.approx(epsilon_ceiling(200, 1e-5, 0.95))  # evaluated on half the trials
        assert o["realized_epsilon"] > o["epsilon_lower"] and not o["exceeds_realized"]


def test_exact_mu_matches_monte_carlo_with_unequal_noise():
    rng = np.random.default_rng(5)
    d = 30
    b0, b1 = rng.normal(size=d), rng.normal(size=d)
    delta0, delta1 = 0.4 * rng.normal(size=d) / math.sqrt(d), 0.9 * rng.normal(size=d) / math.sqrt(d)
    a0, a1 = b0 + delta0, b1 + delta1
    s0, s1 = 0.5, 1.5
    step = consecutive_scores(a0, a1, b0, b1, s0, s1, n_trials=6000, seed=11, index=2)
    mu = math.sqrt(np.sum(delta0**2) / s0**2 + np.sum(delta1**2) / s1**2)
    assert step.mu_pair == pytest.approx(mu, rel=1e-12)
    su, sr = step.pair_unlearned, step.pair_retrained
    # the log-likelihood ratio: N(+μ²/2, μ²) in world U, N(−μ²/2, μ²) in world R
    se = mu / math.sqrt(6000)
    assert su.mean() == pytest.approx(mu**2 / 2, abs=4 * se) and sr.mean() == pytest.approx(-(mu**2) / 2, abs=4 * se)
    assert su.std() == pytest.approx(mu, rel=0.05) and sr.std() == pytest.approx(mu, rel=0.05)
    mu_mc = (su.mean() - sr.mean()) / math.sqrt((su.var() + sr.var()) / 2)
    assert mu_mc == pytest.approx(mu, rel=0.05)
    # its ROC is the Gaussian trade-off: TPR at FPR 10 % is Φ(Φ⁻¹(0.1) + μ)
    t = np.quantile(sr, 0.9)
    assert np.mean(su > t) == pytest.approx(norm.cdf(norm.ppf(0.1) + mu), abs=0.03)
    # the difference alone: isotropic with variance σ_k² + σ_{k+1}²
    mu_d = np.linalg.norm(delta1 - delta0) / math.hypot(s0, s1)
    assert step.mu_difference == pytest.approx(mu_d, rel=1e-12)
    du, dr = step.difference_unlearned, step.difference_retrained
    assert (du.mean() - dr.mean()) / math.sqrt((du.var() + dr.var()) / 2) == pytest.approx(mu_d, rel=0.08)
    assert step.mu_difference < step.mu_pair
    # the precision weighting matters: the unweighted projection
    # ⟨Y_k − m_k, Δ_k⟩ + ⟨Y_{k+1} − m_{k+1}, Δ_{k+1}⟩ separates the worlds by
    # (‖Δ_k‖² + ‖Δ_{k+1}‖²)/√(σ_k²‖Δ_k‖² + σ_{k+1}²‖Δ_{k+1}‖²) < μ when σ_k ≠ σ_{k+1}
    n0, n1 = np.sum(delta0**2), np.sum(delta1**2)
    assert (n0 + n1) / math.sqrt(s0**2 * n0 + s1**2 * n1) < 0.95 * mu


def test_projected_draws_have_the_law_of_full_draws():
    rng = np.random.default_rng(8)
    b0, b1 = rng.normal(size=12), rng.normal(size=12)
    a0, a1 = b0 + 0.3 * rng.normal(size=12), b1 + 0.2 * rng.normal(size=12)
    full = consecutive_scores(a0, a1, b0, b1, 0.6, 0.9, n_trials=4000, seed=1, draws="full")
    proj = consecutive_scores(a0, a1, b0, b1, 0.6, 0.9, n_trials=4000, seed=1, draws="projected")
    for f, p in (
        (full.pair_unlearned, proj.pair_unlearned),
        (full.pair_retrained, proj.pair_retrained),
        (full.difference_unlearned, proj.difference_unlearned),
        (full.difference_retrained, proj.difference_retrained),
    ):
        assert p.mean() == pytest.approx(f.mean(), abs=0.1 * f.std()) and p.std() == pytest.approx(f.std(), rel=0.06)
    # the pair and difference scores of one trial are correlated exactly as in full draws
    cf = np.corrcoef(full.pair_unlearned, full.difference_unlearned)[0, 1]
    cp = np.corrcoef(proj.pair_unlearned, proj.difference_unlearned)[0, 1]
    assert cp == pytest.approx(cf, abs=0.05)
    out = consecutive_release_bounds([a0, a1], [b0, b1], [0.6, 0.9], n_trials=400, delta=1e-5, draws="projected")
    assert out[0]["draws"] == "projected" and out[0]["mu_pair"] == full.mu_pair


def test_the_difference_misses_a_constant_error_that_the_pair_sees():
    rng = np.random.default_rng(2)
    b0, b1, err = rng.normal(size=8), rng.normal(size=8), np.full(8, 0.5)  # Δ_k = Δ_{k+1}
    (o,) = consecutive_release_bounds([b0 + err, b1 + err], [b0, b1], [0.5, 0.5], n_trials=1000, delta=1e-5)
    assert o["mu_difference"] == pytest.approx(0.0, abs=1e-12) and o["difference_epsilon_lower"] == 0.0
    assert o["mu_pair"] == pytest.approx(math.sqrt(2) * np.linalg.norm(err) / 0.5)
    assert o["epsilon_lower"] > 1.0


def test_equality_case_of_the_difference():
    """μ_difference = μ_pair exactly when Δ_k/σ_k² = −Δ_{k+1}/σ_{k+1}²."""
    d0 = np.array([1.0, 0.0, 0.0])
    s0, s1 = 0.5, 2.0
    d1 = -d0 * s1**2 / s0**2
    assert difference_mu(np.linalg.norm(d1 - d0), s0, s1) == pytest.approx(
        pair_mu(np.linalg.norm(d0), np.linalg.norm(d1), s0, s1)
    )


def test_exact_epsilon_is_the_gaussian_mechanism():
    assert gdp_epsilon(1.0, 1e-5) == pytest.approx(epsilon_for(1.0, 1e-5, 1.0))
    assert gdp_epsilon(0.0, 1e-5) == 0.0 and gdp_epsilon(math.inf, 1e-5) == math.inf
    assert gdp_epsilon(0.3, 0.0) == math.inf


def test_noise_streams_are_per_step_trial_and_world():
    u, r = _ledger(d=6, releases=3, scale=0.5)
    s = [0.4, 0.7, 0.9]
    step = consecutive_scores(u[1], u[2], r[1], r[2], s[1], s[2], n_trials=5, seed=9, index=2)
    for world, means, scores in ((0, (u[1], u[2]), step.pair_unlearned), (1, (r[1], r[2]), step.pair_retrained)):
        for t in range(5):
            rng = np.random.default_rng(np.random.SeedSequence(9, spawn_key=(2, t, world)))
            y0 = means[0] + s[1] * rng.standard_normal(6)
            y1 = means[1] + s[2] * rng.standard_normal(6)
            expected = (y0 - (u[1] + r[1]) / 2) @ (u[1] - r[1]) / s[1] ** 2 + (y1 - (u[2] + r[2]) / 2) @ (
                u[2] - r[2]
            ) / s[2] ** 2
            assert scores[t] == pytest.approx(expected, rel=1e-12)
    a = consecutive_release_bounds(u, r, s, n_trials=40, delta=1e-5, seed=9)
    assert a == consecutive_release_bounds(u, r, s, n_trials=40, delta=1e-5, seed=9)
    assert (
        a[1]["bound"]
        == consecutive_release_bounds(u[1:], r[1:], s[1:], n_trials=40, delta=1e-5, seed=9, first_index=2)[0]["bound"]
    )  # streams follow ledger indices
    assert a != consecutive_release_bounds(u, r, s, n_trials=40, delta=1e-5, seed=10)


def test_degenerate_noise():
    u, r = _ledger(d=4, releases=2, scale=0.5)
    (o,) = consecutive_release_bounds(u, r, [0.0, 0.5], n_trials=100, delta=1e-5)  # a noiseless, different release
    assert o["mu_pair"] == math.inf and o["realized_epsilon"] == math.inf
    assert o["epsilon_lower"] == pytest.approx(o["ceiling"])
    (o,) = consecutive_release_bounds(u, r, [math.inf, 0.5], n_trials=100, delta=1e-5)  # release k: noise only
    assert o["mu_pair"] == pytest.approx(1.0) and o["mu_releases"] == [0.0, pytest.approx(1.0)]
    assert o["mu_difference"] == 0.0
    same = [x.copy() for x in r]
    (o,) = consecutive_release_bounds(same, r, [0.0, 0.0], n_trials=20, delta=1e-5)  # exact releases (retraining)
    assert o["mu_pair"] == 0.0 and o["epsilon_lower"] == 0.0


def test_validation():
    u, r = _ledger(releases=2)
    for kwargs in (
        {"sigmas": [0.5]},
        {"sigmas": [-1.0, 0.5]},
        {"sigmas": [math.nan, 0.5]},
        {"n_trials": 1},
        {"delta": 1.0},
        {"confidence": 1.0},
        {"split": "thirds"},
        {"draws": "some"},
    ):
        args = dict(sigmas=[0.5, 0.5], n_trials=10, delta=1e-5)
        args.update(kwargs)
        sig = args.pop("sigmas")
        with pytest.raises(InvalidInput):
            consecutive_release_bounds(u, r, sig, **args)
    with pytest.raises(InvalidInput):
        consecutive_release_bounds(u[:1], r[:1], [0.5], n_trials=10, delta=1e-5)
    with pytest.raises(InvalidInput):
        consecutive_release_bounds([u[0], u[1][:3]], r, [0.5, 0.5], n_trials=10, delta=1e-5)
    with pytest.raises(InvalidInput):
        consecutive_release_bounds([u[0], np.full(20, np.nan)], r, [0.5, 0.5], n_trials=10, delta=1e-5)
