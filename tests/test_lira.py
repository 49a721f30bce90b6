"""attacks.lira: logit-scaled confidence, per-example Gaussians, the variance model chosen on the
shadows, U-LiRA (online), offline LiRA, and the per-record exposure ranking."""

from __future__ import annotations

import functools
import json

import numpy as np
import pytest
import torch
from scipy.stats import norm

from attacks.base import AttackInputs
from attacks.exposure import per_record_exposure
from attacks.lira import (
    LiRAOffline,
    ULiRA,
    lira_offline_attack,
    lira_offline_example_scores,
    ulira_attack,
    ulira_example_scores,
    ulira_scores,
)
from attacks.lira_gaussians import GaussianFit, choose_variance, fit_gaussians, logit_confidence, phi_of_models
from attacks.registry import get_attack
from attacks.roc import auroc
from certify.errors import InvalidInput
from unlearners.models import build_model
from unlearners.objective import Objective, default_init
from unlearners.training import gradient_descent

from synthetic import synthetic

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


def test_ulira_keeps_per_example_scores_and_records_the_variance_model():
    rng = np.random.default_rng(10)
    phi_in, phi_out, phi_u, phi_r = _worlds(rng, m=4, shift=0.5, s_in=8, s_out=8, n_u=30, n_r=40)
    r = ulira_attack(phi_in, phi_out, phi_u, phi_r)
    assert r.example_scores_unlearned.shape == (30, 4) and r.example_scores_retrained.shape == (40, 4)
    np.testing.assert_allclose(r.example_scores_unlearned.sum(axis=1), r.scores_unlearned)
    assert r.variance.model == "global" and r.fit.fixed_variance  # equal variances, 8 shadows
    assert r.to_dict()["variance"]["model"] == "global"
    forced = ulira_attack(phi_in, phi_out, phi_u, phi_r, fixed_variance=False)
    assert forced.variance.model == "per-example" and forced.variance.reason == "set by the caller"
    with pytest.raises(InvalidInput) as err:
        ulira_attack(phi_in, phi_out, phi_u, phi_r, fixed_variance="yes")
    assert err.value.field == "fixed_variance"


# ----------------------------------------------------------------------------------------------
# the variance model, chosen on the shadows


def _brute_loo(sides, floor):
    """Leave-one-shadow-out mean log-density, refitting for every held-out shadow."""
    per, glob, count = 0.0, 0.0, 0
    for i, side in enumerate(sides):
        for s in range(side.shape[0]):
            rest = np.delete(side, s, axis=0)
            mu = rest.mean(axis=0)
            sd = np.maximum(rest.std(axis=0, ddof=1), floor)
            per += norm.logpdf(side[s], mu, sd).sum()
            others = [rest] + [o for j, o in enumerate(sides) if j != i]
            ss = sum(((o - o.mean(axis=0)) ** 2).sum() for o in others)
            dof = sum(o.shape[0] - 1 for o in others) * side.shape[1]
            glob += norm.logpdf(side[s], mu, max(np.sqrt(ss / dof), floor)).sum()
            count += side.shape[1]
    return per / count, glob / count


def test_choose_variance_matches_refitting_without_each_shadow():
    rng = np.random.default_rng(11)
    a, b = rng.normal(0.0, [0.5, 1.0, 2.0], (5, 3)), rng.normal(1.0, [1.0, 0.2, 3.0], (4, 3))
    choice = choose_variance(a, b, min_std=0.05)
    per, glob = _brute_loo([a, b], 0.05)
    assert choice.loglik_per_example == pytest.approx(per, rel=1e-10)
    assert choice.loglik_global == pytest.approx(glob, rel=1e-10)
    assert choice.model == ("per-example" if per > glob else "global") and choice.n_shadows == (5, 4)
    offline = choose_variance(None, b, min_std=0.05)
    per, glob = _brute_loo([b], 0.05)
    assert (offline.loglik_per_example, offline.loglik_global) == pytest.approx((per, glob), rel=1e-10)
    json.dumps(choice.to_dict())


def test_choose_variance_picks_global_with_few_shadows_and_equal_variances():
    for seed in range(5):
        rng = np.random.default_rng(100 + seed)
        base = rng.normal(0.0, 3.0, 20)
        choice = choose_variance(rng.normal(base + 0.5, 1.0, (8, 20)), rng.normal(base, 1.0, (8, 20)))
        assert choice.model == "global", choice


def test_choose_variance_picks_per_example_with_many_shadows_and_heterogeneous_variances():
    for seed in range(5):
        rng = np.random.default_rng(200 + seed)
        base, sd = rng.normal(0.0, 3.0, 20), np.exp(rng.normal(0.0, 0.8, 20))
        choice = choose_variance(rng.normal(base + 0.5, sd, (64, 20)), rng.normal(base, sd, (64, 20)))
        assert choice.model == "per-example", choice


def test_choose_variance_with_too_few_shadows_and_invalid_input():
    rng = np.random.default_rng(12)
    choice = choose_variance(rng.normal(size=(2, 3)), rng.normal(size=(2, 3)))
    assert choice.model == "global" and choice.loglik_per_example is None
    with pytest.raises(InvalidInput) as err:
        choose_variance(rng.normal(size=(4, 3)), rng.normal(size=(1, 3)))
    assert err.value.field == "phi_out"
    with pytest.raises(InvalidInput) as err:
        choose_variance(rng.normal(size=(4, 2)), rng.normal(size=(4, 3)))
    assert err.value.field == "phi_in"
    with pytest.raises(InvalidInput) as err:
        choose_variance(None, rng.normal(size=(4, 3)), min_std=-1.0)
    assert err.value.field == "min_std"


# ----------------------------------------------------------------------------------------------
# offline LiRA


def test_offline_example_scores_are_one_sided_tail_log_probabilities():
    mu, sd = np.array([0.0, 1.0]), np.array([1.0, 2.0])
    phi = np.array([[0.0, 1.0], [2.0, -3.0], [40.0, 1.0]])
    expected = -norm.logsf(phi, mu, sd)
    expected[2, 0] = 40.0**2 / 2 + np.log(40.0) + 0.5 * np.log(2 * np.pi)  # far tail, to O(1/φ²)
    np.testing.assert_allclose(lira_offline_example_scores(phi, mu, sd), expected, rtol=1e-3)
    assert lira_offline_example_scores(phi, mu, sd)[0, 0] == pytest.approx(np.log(2.0))
    with pytest.raises(InvalidInput, match="sigma_out"):
        lira_offline_example_scores(phi, mu, np.array([1.0, 0.0]))
    with pytest.raises(InvalidInput, match="phi_models"):
        lira_offline_example_scores(phi[:, :1], mu, sd)


def test_lira_offline_detects_a_shift_and_is_chance_on_equal_worlds():
    rng = np.random.default_rng(13)
    _, phi_out, phi_u, phi_r = _worlds(rng, m=10, shift=1.0, s_in=2, s_out=32)
    r = lira_offline_attack(phi_out, phi_u, phi_r)
    assert r.roc.auroc > 0.9 and r.n_shadow_out == 32 and r.n_targets == 10
    np.testing.assert_allclose(r.example_scores_unlearned.sum(axis=1), r.scores_unlearned)
    assert np.all(r.example_aurocs > 0.6)
    json.dumps(r.to_dict())
    _, phi_out, phi_u, phi_r = _worlds(rng, m=10, shift=0.0, s_in=2, s_out=32)
    assert abs(lira_offline_attack(phi_out, phi_u, phi_r).roc.auroc - 0.5) < 0.08
    with pytest.raises(InvalidInput) as err:
        lira_offline_attack(phi_out[:1], phi_u, phi_r)
    assert err.value.field == "phi_out"
    with pytest.raises(InvalidInput) as err:
        lira_offline_attack(phi_out, phi_u, phi_r[:, :3])
    assert err.value.field == "phi_retrained"


# ----------------------------------------------------------------------------------------------
# per-record exposure


def test_per_record_exposure_puts_the_planted_record_first():
    rng = np.random.default_rng(14)
    m = 30
    pos, neg = rng.normal(size=(300, m)), rng.normal(size=(300, m))
    pos[:, 17] += 2.0  # the one record the unlearning left exposed
    pos[:, 5] -= 1.0  # exposed the other way (AUROC < 1/2 is leakage too)
    e = per_record_exposure(pos, neg, delta=1e-5, top=5, seed=1)
    assert e["records"] == m and len(e["top"]) == 5
    assert [row["record"] for row in e["top"][:2]] == [17, 5]
    assert e["top"][0]["auroc"] > 0.9 and e["top"][0]["direction"] == "U>R"
    assert e["top"][1]["auroc"] < 0.3 and e["top"][1]["direction"] == "R>U"
    assert e["top"][0]["epsilon_lower"] > 1.0 and e["top"][0]["epsilon_lower"] <= e["epsilon"]["ceiling"]
    assert all(row["epsilon_lower"] == 0.0 for row in e["top"][2:])  # noise, at 1 - 0.05/30 each
    assert e["epsilon"]["confidence_per_record"] == pytest.approx(1 - 0.05 / m)
    q = e["auroc_quantiles"]
    assert q["min"] < 0.3 and q["max"] > 0.9 and abs(q["median"] - 0.5) < 0.05
    json.dumps(e)


def test_per_record_exposure_known_values_and_validation():
    pos = np.array([[3.0, 0.0], [4.0, 1.0]])
    neg = np.array([[1.0, 0.0], [2.0, 1.0]])
    e = per_record_exposure(pos, neg)
    assert [(r["record"], r["auroc"]) for r in e["top"]] == [(0, 1.0), (1, 0.5)]
    one = per_record_exposure(pos[:1], neg)
    assert "epsilon_lower" not in one["top"][0] and one["epsilon"]["ceiling"] is None
    for kwargs, field in [
        ({"top": 0}, "top"),
        ({"confidence": 1.0}, "confidence"),
        ({"confidence": 0.0}, "confidence"),
    ]:
        with pytest.raises(InvalidInput) as err:
            per_record_exposure(pos, neg, **kwargs)
        assert err.value.field == field
    with pytest.raises(InvalidInput) as err:
        per_record_exposure(pos, neg[:, :1])
    assert err.value.field == "example_retrained"


# ----------------------------------------------------------------------------------------------
# end to end through the Attack classes, on a real (tiny) model


@functools.cache
def _trained_pair():
    X, y = synthetic(n=60, d=5, classes=3, seed=3)
    forget = torch.arange(5)
    y = y.clone()
    y[forget] = (y[forget] + 1) % 3
    X_unseen, y_unseen = synthetic(n=100, d=5, classes=3, seed=4)
    objective = Objective(build_model("logreg", 5, 3).double())
    theta0 = default_init(objective, torch.Generator().manual_seed(0))
    keep = torch.ones(60, dtype=torch.bool)
    keep[forget] = False
    theta_d = gradient_descent(objective, theta0, X, y, eta=2.0, steps=300)[0]
    theta_r = gradient_descent(objective, theta0, X[keep], y[keep], eta=2.0, steps=300)[0]
    return objective, X, y, forget, X_unseen, y_unseen, theta_d, theta_r


def unlearning_game(no_op: bool, *, n=150, shadows=16, sigma=0.6, seed=0) -> AttackInputs:
    """AttackInputs of a softmax regression whose 5 forget records carry wrong labels.

    ``no_op``: the "unlearned" world releases A(D) unchanged (it still fits the wrong labels);
    otherwise it releases A(D \\ Z), the retrained model itself, so the worlds are identical.
    Releases, trials and shadows alike, are independent Gaussian noise draws of scale ``sigma``.
    """
    objective, X, y, forget, X_unseen, y_unseen, theta_d, theta_r = _trained_pair()
    theta_u = theta_d if no_op else theta_r
    gen = torch.Generator().manual_seed(seed)

    def release(theta, k):
        return theta + sigma * torch.randn(k, theta.numel(), generator=gen, dtype=theta.dtype)

    return AttackInputs(
        objective=objective,
        X=X,
        y=y,
        forget=forget,
        X_unseen=X_unseen,
        y_unseen=y_unseen,
        theta_original=theta_d,
        theta_unlearned=theta_u,
        theta_retrained=theta_r,
        released_unlearned=release(theta_u, n),
        released_retrained=release(theta_r, n),
        noiseless_unlearned=theta_u,
        noiseless_retrained=theta_r,
        sigma=sigma,
        delta=1e-5,
        seed=seed,
        shadows_in=release(theta_u, shadows),
        shadows_out=release(theta_r, shadows),
    )


def test_phi_of_models_matches_logit_confidence_in_chunks():
    inputs = unlearning_game(True, n=7)
    Xf, yf = inputs.forget_data
    phi = phi_of_models(inputs.objective, inputs.released_unlearned, Xf, yf, chunk=3)
    direct = [logit_confidence(inputs.objective.logits(t, Xf).numpy(), yf.numpy()) for t in inputs.released_unlearned]
    np.testing.assert_allclose(phi, np.stack(direct), rtol=1e-12)


@pytest.mark.parametrize("attack", [ULiRA, LiRAOffline])
def test_attacks_flag_a_no_op_unlearning_and_not_retraining(attack):
    assert get_attack(attack.name) is attack and attack.needs == {"shadows"}
    flagged = attack().run(unlearning_game(True))
    assert auroc(flagged.scores_unlearned, flagged.scores_retrained) > 0.95
    d = flagged.details
    assert d["targets"] == 5 and d["variance_model"] in ("global", "per-example")
    assert d["per_record"]["records"] == 5 and 0 <= d["most_exposed_record"] < 5
    assert d["most_exposed_auroc"] > 0.8 and d["most_exposed_epsilon_lower"] > 0
    json.dumps(d)
    honest = attack().run(unlearning_game(False, seed=1))
    assert abs(auroc(honest.scores_unlearned, honest.scores_retrained) - 0.5) < 0.12
    assert all(np.isfinite(honest.scores_unlearned)) and honest.scores_retrained.shape == (150,)


def test_attacks_name_the_missing_shadows():
    inputs = unlearning_game(True, n=4, shadows=1)
    with pytest.raises(InvalidInput) as err:
        ULiRA().run(inputs)
    assert err.value.field == "shadows_in"
    with pytest.raises(InvalidInput) as err:
        LiRAOffline().run(inputs)
    assert err.value.field == "shadows_out"
