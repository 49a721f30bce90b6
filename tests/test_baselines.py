"""Baselines users compare against: finetune and neggrad (uncertified), dpsgd (group privacy)."""

import math

import pytest
import torch

from audit import AuditConfig
from audit.pipeline import run
from certify.errors import InvalidInput
from unlearners.dpsgd import DPSGD
from unlearners.finetune import FineTune
from unlearners.models import build_model
from unlearners.neggrad import NegativeGradient
from unlearners.objective import Objective, default_init
from unlearners.registry import get_method

from synthetic import synthetic


def _distance(a, b):
    return float(torch.linalg.vector_norm(a - b))


@pytest.fixture(scope="module")
def noisy_problem():
    """Logistic regression with 20 % flipped labels: a finite optimum that gradient descent reaches."""
    X, y = synthetic(n=400, d=5, seed=1)
    flip = torch.rand(400, generator=torch.Generator().manual_seed(5)) < 0.2
    y = torch.where(flip, 1 - y, y)
    objective = Objective(build_model("logreg", 5, 2).double())
    theta0 = default_init(objective, torch.Generator().manual_seed(0))
    forget = torch.nonzero(y == 1).flatten()[:40]  # one class only: deleting it moves the optimum
    return objective, X, y, theta0, forget


def _dpsgd(objective, X, y, theta0, **options):
    method = DPSGD(objective, **{"epochs": 4, "batch_size": 50, "accountant": "rdp", **options})
    return method, method.fit(X, y, theta0)


@pytest.fixture(scope="module")
def dp_fitted(noisy_problem):
    objective, X, y, theta0, _ = noisy_problem
    return _dpsgd(objective, X, y, theta0)


# -- finetune and neggrad ------------------------------------------------------------------------
def test_registered_by_name():
    assert get_method("finetune") is FineTune and get_method("neggrad") is NegativeGradient
    assert get_method("dpsgd") is DPSGD
    assert not FineTune.certified and not NegativeGradient.certified and DPSGD.certified


def test_finetune_moves_toward_retraining(noisy_problem):
    objective, X, y, theta0, forget = noisy_problem
    method = FineTune(objective, steps=100, eta=4.0)
    original = method.fit(X, y, theta0)
    unlearned, retrained = method.unlearn(forget), method.retrain(forget)
    assert method.finetune_steps == 10  # 10 % of T by default
    assert _distance(unlearned, retrained) < 0.5 * _distance(original, retrained)
    assert method.report_hyperparameters()["finetune_eta"] == 4.0


def test_neggrad_raises_the_forget_loss(noisy_problem):
    objective, X, y, theta0, forget = noisy_problem
    method = NegativeGradient(objective, steps=100, eta=4.0, neggrad_eta=0.5)
    original = method.fit(X, y, theta0)
    unlearned = method.unlearn(forget)
    Xf, yf = X[forget], y[forget]
    assert objective.loss(unlearned, Xf, yf) > objective.loss(original, Xf, yf) + 0.05
    # α = 0 is fine-tuning at the same step size and step count
    plain = NegativeGradient(objective, steps=100, eta=4.0, neggrad_eta=0.5, ascent_weight=0.0)
    plain.fit(X, y, theta0)
    tuned = FineTune(objective, steps=100, eta=4.0, finetune_eta=0.5)
    tuned.fit(X, y, theta0)
    assert torch.equal(plain.unlearn(forget), tuned.unlearn(forget))


def test_neggrad_divergence_is_an_error_not_nan(noisy_problem):
    objective, X, y, theta0, forget = noisy_problem
    method = NegativeGradient(objective, steps=20, eta=4.0, neggrad_eta=1e300, ascent_weight=1e300)
    method.fit(X, y, theta0)
    with pytest.raises(InvalidInput) as err:
        method.unlearn(forget)
    assert err.value.field == "neggrad_steps" and "not finite" in str(err.value)


@pytest.mark.parametrize("cls", [FineTune, NegativeGradient])
def test_uncertified_baselines_issue_no_certificate(cls, noisy_problem):
    objective, X, y, theta0, forget = noisy_problem
    method = cls(objective, steps=20)
    method.fit(X, y, theta0)
    cert = method.certify(forget, 1.0, 1e-5, "analytic")
    assert cert.kind == "none" and not cert.valid and cert.epsilon is None and cert.sensitivity is None
    assert cert.sigma == 0.0 and cert.theorem.startswith("none:")
    assert "no certificate" in cert.warnings[-1] and "empirically" in cert.warnings[-1]


@pytest.mark.parametrize(
    "cls, field, value",
    [
        (FineTune, "finetune_steps", 0),
        (FineTune, "finetune_steps", 2.5),
        (FineTune, "finetune_eta", 0.0),
        (NegativeGradient, "neggrad_steps", -1),
        (NegativeGradient, "neggrad_eta", float("inf")),
        (NegativeGradient, "ascent_weight", -0.5),
        (NegativeGradient, "ascent_weight", float("nan")),
    ],
)
def test_bad_baseline_options_name_the_field(cls, field, value, noisy_problem):
    with pytest.raises(InvalidInput) as err:
        cls(noisy_problem[0], **{field: value})
    assert err.value.field == field


def test_unlearn_before_fit_is_an_error(noisy_problem):
    with pytest.raises(RuntimeError):
        FineTune(noisy_problem[0]).unlearn(torch.tensor([0]))
    with pytest.raises(RuntimeError):
        DPSGD(noisy_problem[0]).unlearn(torch.tensor([0]))


# -- dpsgd -------------------------------------------------------------------------------------
def test_dpsgd_accountant_epsilon_is_within_target(dp_fitted, noisy_problem):
    method, theta = dp_fitted
    assert 0.9 < method.epsilon_spent_ <= 1.0
    h = method.report_hyperparameters()
    assert h["steps"] == 4 * 8 and h["sample_rate"] == 1 / 8 and h["noise_multiplier"] > 1
    assert torch.isfinite(theta).all()
    objective, X, y, *_ = noisy_problem
    assert float(objective.accuracy(theta, X, y)) > 0.6  # learns despite the noise


@pytest.mark.slow  # fast-lane budget (README): 1.3 s
def test_dpsgd_prv_accountant_default(noisy_problem):
    objective, X, y, theta0, _ = noisy_problem
    method = DPSGD(objective, epochs=2, batch_size=100)
    assert method.accountant == "prv"
    method.fit(X, y, theta0)
    assert 0.9 < method.epsilon_spent_ <= 1.0
    cert = method.certify([0], 1.0, 1e-5)
    assert cert.constant("epsilon_one_record").diagnostics["accountant"] == "prv"
    assert cert.epsilon == cert.constant("epsilon_one_record").value == method.epsilon_spent_
    # PRV cannot resolve a tiny delta; the same run's RDP curve (also an upper bound) answers there
    eps, source = method.record_level(1e-20)
    assert source == "rdp" and math.isfinite(eps) and eps > method.epsilon_spent_


def test_dpsgd_is_deterministic_given_seed_and_unlearn_is_a_no_op(dp_fitted, noisy_problem):
    method, theta = dp_fitted
    objective, X, y, theta0, forget = noisy_problem
    assert torch.equal(_dpsgd(objective, X, y, theta0)[1], theta)
    assert not torch.equal(_dpsgd(objective, X, y, theta0, seed=1)[1], theta)
    assert torch.equal(method.unlearn(forget), theta)
    retrained = method.retrain(forget)
    assert torch.equal(method.retrain(forget), retrained) and not torch.equal(retrained, theta)


def test_dpsgd_group_certificate(dp_fitted):
    method, _ = dp_fitted
    one = method.certify([0], 1.0, 1e-5, "analytic")
    assert one.valid and one.kind == "training-noise" and one.sigma == 0.0 and one.sensitivity is None
    assert one.epsilon == one.constant("epsilon_one_record").value == method.epsilon_spent_ <= 1.0
    eps = [one.epsilon]
    for m in (2, 5, 20):
        cert = method.certify(torch.arange(m), 1.0, 1e-5, "analytic")
        assert cert.valid and cert.delta == 1e-5
        assert cert.epsilon == cert.constant("epsilon_group").value
        assert cert.constant("epsilon_one_record").value == one.epsilon
        assert any(f"epsilon_group = {cert.epsilon:.4g} > the requested epsilon = 1" in w for w in cert.warnings)
        eps.append(cert.epsilon)
    assert all(a < b for a, b in zip(eps, eps[1:])), eps
    assert any("calibrated for" in w for w in method.certify([0], 2.0, 1e-5).warnings)
    assert any("noise inside training" in w for w in one.warnings)


def test_dpsgd_handles_empty_poisson_batches_and_multiclass():
    X, y = synthetic(n=40, d=4, classes=3, seed=2)
    objective = Objective(build_model("mlp", 4, 3, hidden=(6,)).double())
    theta0 = default_init(objective, torch.Generator().manual_seed(0))
    method = DPSGD(objective, epochs=2, batch_size=1, accountant="rdp", target_epsilon=4.0)
    theta = method.fit(X, y, theta0)  # q = 1/40: most batches hold 0 or 1 record
    assert torch.isfinite(theta).all() and not torch.equal(theta, theta0)
    assert method.report_hyperparameters()["steps"] == 2 * 40  # empty batches are noisy steps too
    assert method.epsilon_spent_ <= 4.0


@pytest.mark.parametrize(
    "field, value",
    [
        ("accountant", "gdp"),
        ("epochs", 0),
        ("batch_size", 1.5),
        ("clip", -1.0),
        ("eta", 0.0),
        ("target_epsilon", 0.0),
        ("target_delta", 1.0),
        ("seed", -1),
        ("seed", "0"),
    ],
)
def test_bad_dpsgd_options_name_the_field(field, value, noisy_problem):
    with pytest.raises(InvalidInput) as err:
        DPSGD(noisy_problem[0], **{field: value})
    assert err.value.field == field


def test_dpsgd_bad_forget_set(dp_fitted):
    method, _ = dp_fitted
    for bad in ([], [400], [2.5], [1, 1], torch.ones(400, dtype=torch.bool)):
        with pytest.raises(InvalidInput) as err:
            method.certify(bad, 1.0, 1e-5)
        assert err.value.field == "forget"


# -- end to end through the library -----------------------------------------------------------
def test_dpsgd_audit_reports_the_group_guarantee():
    config = AuditConfig(
        method="dpsgd",
        epsilon=1.0,
        forget_count=3,
        max_train=1000,
        attacks=(),
        curve_points=2,
        noise_draws=2,
        method_options={"epochs": 20, "accountant": "rdp"},
    )  # target_epsilon: from --epsilon
    report = run(config)
    cert = report.certificate
    consts = {c.name: c for c in cert.constants}
    assert consts["epsilon_one_record"].value <= 1.0 and cert.kind == "training-noise"
    assert cert.epsilon == consts["epsilon_group"].value > 1.0 and cert.valid
    assert any("epsilon_group" in w and "m = 3" in w for w in cert.warnings)
    codes = {f.code for f in report.findings}
    # group privacy certifies the 3 records at an epsilon above the one asked for: not the request
    assert "not-comparable" in codes and "epsilon-above-request" in codes and report.verdict == "not-certified"
    above = next(f for f in report.findings if f.code == "epsilon-above-request")
    assert f"{cert.epsilon:.4g}" in above.message and "requested 1" in above.message
    assert report.method.hyperparameters["epsilon_one_record"] <= 1.0
    report.to_json()  # the report fits the schema


@pytest.mark.slow  # a full audit with retrain-mode trials (batched DP-SGD: 3.5 s on the loaded machine)
def test_dpsgd_attacked_in_retrain_mode_is_not_violated_by_a_realized_epsilon():
    """Training noise releases the model itself (sigma = 0): two trainings differ, so the realized
    epsilon at sigma = 0 is infinite and tests nothing; only the retrain-mode attacks test it."""
    report = run(
        AuditConfig(
            method="dpsgd",
            max_train=200,
            trials=10,
            shadow_models=2,
            attacks=("mia",),
            noise_draws=2,
            frontier=(),
            method_options={"epochs": 1},
        )
    )
    assert report.attacks.trials.mode == "retrain" and report.realized.epsilon == math.inf
    assert not report.realized.exceeds_certified and report.verdict == "consistent"
    assert "realized-exceeds-certified" not in {f.code for f in report.findings}


def test_neggrad_audit_is_reported_uncertified():
    report = run(AuditConfig(method="neggrad", max_train=1000, attacks=(), curve_points=2, noise_draws=2))
    assert report.verdict == "not-certified" and report.certificate.kind == "none"
    assert "no-theorem" in {f.code for f in report.findings}
    assert "certificate-not-issued" not in {f.code for f in report.findings}
    report.to_json()


@pytest.mark.parametrize("certified, flagged", [(1.0, False), (1.0 + 1e-12, False), (1.2, True), (None, False)])
def test_a_certificate_above_the_requested_epsilon_is_a_finding(certified, flagged):
    from types import SimpleNamespace as NS

    from audit.findings import certificate_findings, verdict_of

    cert = NS(kind="training-noise", valid=True, epsilon=certified, delta=1e-5, method="dpsgd")
    split = NS(test=NS(accuracy=0.9, noisy_accuracy_mean=None))
    utility = NS(
        unlearned=split,
        retrained=split,
        test_chance_accuracy=0.5,
        unlearned_vs_retrained=NS(accuracy_gap=0.0, p_value=1.0),
    )
    found = certificate_findings(cert, None, utility, requested_epsilon=1.0)
    assert ("epsilon-above-request" in {f["code"] for f in found}) is flagged
    assert verdict_of(found) == ("not-certified" if flagged else "consistent")
