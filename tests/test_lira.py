"""attacks.lira: logit-scaled confidence, per-example Gaussians, U-LiRA."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy.stats import norm

from attacks.lira import (
    GaussianFit,
    fit_gaussians,
    logit_confidence,
    ulira_attack,
    ulira_example_scores,
    ulira_scores,
)
from attacks.roc import auroc
from certify.errors import InvalidInput

# ----------------------------------------------------------------------------------------------
# φ


def _direct_phi(p_y):
    return np.log(p_y) - np.log(1.0 - p_y)


def test_logit_confidence_binary_matches_direct_formula():
    z = np.array([-3.0, -0.2, 0.0, 1.5, 4.0])
    y = np.array([1, 0, 1, 0, 1])
    p1 = 1.0 / (1.0 + np.exp(-z))
    p_y = np.where(y == 1, p1, 1.0 - p1)
    np.testing.assert_allclose(logit_confidence(z, y), _direct_phi(p_y), rtol=1e-12, atol=1e-12)


def test_logit_confidence_multiclass_matches_direct_formula():
    rng = np.random.default_rng(0)
    z = rng.normal(0.0, 2.0, size=(7, 4))
    y = rng.integers(0, 4, 7)
    p = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    p_y = p[np.arange(7), y]
    expected = np.log(p_y) - np.log(p.sum(axis=1) - p_y)
    np.testing.assert_allclose(logit_confidence(z, y), expected, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(logit_confidence(z, y), _direct_phi(p_y), rtol=1e-8, atol=1e-8)


def test_logit_confidence_two_logits_equals_one_logit():
    rng = np.random.default_rng(1)
    z2 = rng.normal(size=(5, 2))
    y = np.array([0, 1, 1, 0, 1])
    np.testing.assert_allclose(logit_confidence(z2, y), logit_confidence(z2[:, 1] - z2[:, 0], y))


def test_logit_confidence_is_stable_for_confident_models():
    phi = logit_confidence(np.array([[900.0, 0.0, -5.0], [0.0, 800.0, 0.0]]), np.array([0, 0]))
    np.testing.assert_allclose(phi, [900.0 - np.log1p(np.exp(-5.0)), -800.0])
    assert np.all(np.isfinite(logit_confidence(np.array([1e4, -1e4]), np.array([1, 1]))))


def test_logit_confidence_stacked_models_shapes():
    rng = np.random.default_rng(2)
    y = rng.integers(0, 3, 6)
    z = rng.normal(size=(4, 6, 3))  # 4 models, 6 examples, 3 classes
    phi = logit_confidence(z, y)
    assert phi.shape == (4, 6)
    for s in range(4):
        np.testing.assert_allclose(phi[s], logit_confidence(z[s], y))
    zb = rng.normal(size=(2, 4, 6))  # (…, S, n) binary
    yb = rng.integers(0, 2, 6)
    assert logit_confidence(zb, yb).shape == (2, 4, 6)


def test_logit_confidence_ambiguous_layout_needs_flag():
    z = np.arange(9.0).reshape(3, 3)
    y = np.array([0, 1, 2])
    with pytest.raises(InvalidInput) as err:
        logit_confidence(z, y)
    assert err.value.field == "one_logit"
    assert logit_confidence(z, y, one_logit=False).shape == (3,)
    with pytest.raises(InvalidInput):  # labels 2 is not binary
        logit_confidence(z, y, one_logit=True)
    assert logit_confidence(z, np.array([0, 1, 1]), one_logit=True).shape == (3, 3)


@pytest.mark.parametrize(
    "logits, labels, field",
    [
        ([1.0, np.nan], [0, 1], "logits"),
        ([1.0, 2.0, 3.0], [0, 1], "logits"),
        ([1.0, 2.0], [0, 2], "labels"),
        ([[1.0, 2.0, 0.0], [0.0, 1.0, 0.0]], [0, 0.5], "labels"),
        ([1.0], [[0]], "labels"),
    ],
)
def test_logit_confidence_invalid(logits, labels, field):
    with pytest.raises(InvalidInput) as err:
        logit_confidence(logits, labels)
    assert err.value.field == field


# ----------------------------------------------------------------------------------------------
# Gaussian fits


def test_fit_gaussians_recovers_known_parameters():
    rng = np.random.default_rng(3)
    mu_in, mu_out = np.array([1.0, -2.0, 0.5]), np.array([0.0, 3.0, 0.5])
    sd_in, sd_out = np.array([0.5, 1.0, 2.0]), np.array([1.0, 0.3, 2.0])
    phi_in = rng.normal(mu_in, sd_in, size=(4000, 3))
    phi_out = rng.normal(mu_out, sd_out, size=(3000, 3))
    fit = fit_gaussians(phi_in, phi_out)
    np.testing.assert_allclose(fit.mu_in, mu_in, atol=0.07)
    np.testing.assert_allclose(fit.mu_out, mu_out, atol=0.07)
    np.testing.assert_allclose(fit.sigma_in, sd_in, rtol=0.05)
    np.testing.assert_allclose(fit.sigma_out, sd_out, rtol=0.05)
    assert (fit.n_in, fit.n_out, fit.n_targets) == (4000, 3000, 3)


def test_fit_gaussians_fixed_variance_pools_within_example_spread():
    rng = np.random.default_rng(4)
    means = rng.normal(0.0, 10.0, size=50)  # large spread between examples must not leak into σ
    phi_in = rng.normal(means + 1.0, 0.7, size=(3, 50))
    phi_out = rng.normal(means, 0.7, size=(2, 50))
    fit = fit_gaussians(phi_in, phi_out, fixed_variance=True)
    assert np.all(fit.sigma_in == fit.sigma_in[0]) and np.all(fit.sigma_out == fit.sigma_in)
    assert fit.sigma_in[0] == pytest.approx(0.7, rel=0.15)
    # one shadow on a side is enough with a global variance, not without
    fit_gaussians(phi_in, phi_out[:1], fixed_variance=True)
    with pytest.raises(InvalidInput) as err:
        fit_gaussians(phi_in, phi_out[:1])
    assert err.value.field == "phi_out"


def test_fit_gaussians_floor_and_validation():
    fit = fit_gaussians(np.ones((4, 2)), np.zeros((4, 2)), min_std=0.01)
    np.testing.assert_allclose(fit.sigma_in, 0.01)
    with pytest.raises(InvalidInput, match="phi_out"):
        fit_gaussians(np.zeros((4, 2)), np.zeros((4, 3)))
    with pytest.raises(InvalidInput, match="phi_in"):
        fit_gaussians(np.zeros(4), np.zeros((4, 1)))
    with pytest.raises(InvalidInput, match="phi_in"):
        fit_gaussians(np.array([[0.0], [np.nan]]), np.zeros((4, 1)))
    with pytest.raises(InvalidInput, match="min_std"):
        fit_gaussians(np.zeros((4, 1)), np.zeros((4, 1)), min_std=0.0)


# ----------------------------------------------------------------------------------------------
# scores and the attack


def test_example_scores_are_gaussian_log_likelihood_ratios():
    rng = np.random.default_rng(5)
    fit = fit_gaussians(rng.normal(1.0, 1.0, (20, 4)), rng.normal(0.0, 2.0, (30, 4)))
    phi = rng.normal(size=(6, 4))
    expected = norm.logpdf(phi, fit.mu_in, fit.sigma_in) - norm.logpdf(phi, fit.mu_out, fit.sigma_out)
    ex = ulira_example_scores(phi, fit)
    assert ex.shape == (6, 4)
    np.testing.assert_allclose(ex, expected, rtol=1e-12, atol=1e-12)
    s = ulira_scores(phi, fit)
    assert s.shape == (6,)
    np.testing.assert_allclose(s, expected.sum(axis=1))
    with pytest.raises(InvalidInput, match="phi_models"):
        ulira_scores(phi[:, :3], fit)
    with pytest.raises(InvalidInput, match="fit"):
        ulira_scores(phi, {"mu_in": 0})


def _worlds(rng, m, shift, s_in=16, s_out=16, n_u=200, n_r=200):
    """φ per example ~ N(base + shift, 1) in the unlearned world and N(base, 1) when retrained."""
    base = rng.normal(0.0, 3.0, size=m)
    unl = lambda n: rng.normal(base + shift, 1.0, size=(n, m))  # noqa: E731
    ret = lambda n: rng.normal(base, 1.0, size=(n, m))  # noqa: E731
    return unl(s_in), ret(s_out), unl(n_u), ret(n_r)


def test_ulira_detects_a_shift_of_one_sigma():
    rng = np.random.default_rng(6)
    phi_in, phi_out, phi_u, phi_r = _worlds(rng, m=10, shift=1.0, s_in=32, s_out=32)
    r = ulira_attack(phi_in, phi_out, phi_u, phi_r)
    # the optimal test on 10 examples has AUROC Φ(√10/√2) ≈ 0.987
    assert r.roc.auroc > 0.9
    assert r.roc.tpr_at_1pct_fpr > 0.3
    assert r.example_aurocs.shape == (10,)
    assert np.all(r.example_aurocs > 0.6)  # one example alone: Φ(1/√2) ≈ 0.76
    assert r.scores_unlearned.shape == (200,) and r.scores_retrained.shape == (200,)
    assert (r.n_shadow_in, r.n_shadow_out, r.n_targets) == (32, 32, 10)
    assert (r.n_unlearned, r.n_retrained) == (200, 200)
    assert r.roc.auroc == pytest.approx(auroc(r.scores_unlearned, r.scores_retrained))


def test_ulira_single_example_with_global_variance():
    rng = np.random.default_rng(7)
    phi_in, phi_out, phi_u, phi_r = _worlds(rng, m=1, shift=1.0, s_in=8, s_out=8, n_u=500, n_r=500)
    r = ulira_attack(phi_in, phi_out, phi_u, phi_r, fixed_variance=True)
    assert r.roc.auroc == pytest.approx(norm.cdf(1.0 / np.sqrt(2.0)), abs=0.06)


def test_ulira_equal_worlds_is_chance():
    rng = np.random.default_rng(8)
    phi_in, phi_out, phi_u, phi_r = _worlds(rng, m=10, shift=0.0)
    r = ulira_attack(phi_in, phi_out, phi_u, phi_r)
    assert abs(r.roc.auroc - 0.5) < 0.08
    assert abs(float(np.mean(r.example_aurocs)) - 0.5) < 0.05


def test_ulira_perfect_unlearning_of_a_deterministic_method():
    # Exact retraining: both worlds give identical φ; every score is 0 and the AUROC exactly 1/2.
    phi = np.tile(np.array([[0.3, -1.2]]), (5, 1))
    r = ulira_attack(phi, phi, phi, phi)
    assert np.all(r.scores_unlearned == 0.0) and r.roc.auroc == 0.5


def test_ulira_result_is_json_ready_and_validates():
    rng = np.random.default_rng(9)
    phi_in, phi_out, phi_u, phi_r = _worlds(rng, m=3, shift=0.5, n_u=20, n_r=30)
    r = ulira_attack(phi_in, phi_out, phi_u, phi_r)
    d = json.loads(json.dumps(r.to_dict(include_fit=True)))
    assert d["n_unlearned"] == 20 and d["n_retrained"] == 30 and len(d["fit"]["mu_in"]) == 3
    assert isinstance(r.fit, GaussianFit)
    with pytest.raises(InvalidInput) as err:
        ulira_attack(phi_in, phi_out, phi_u[:, :2], phi_r)
    assert err.value.field == "phi_unlearned"
    with pytest.raises(InvalidInput) as err:
        ulira_attack(phi_in, phi_out, phi_u, np.r_[phi_r, np.full((1, 3), np.nan)])
    assert err.value.field == "phi_retrained"
