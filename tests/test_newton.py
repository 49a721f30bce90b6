"""Guo et al. 2020 certified removal (`newton`): the Newton update, Corollary 1, Theorem 3."""

import math

import pytest
import torch
from torch.func import hessian

from certify.bounds.guo import (
    GUO_GAMMA_LOGISTIC,
    guo_accumulated_residual,
    guo_budget,
    guo_c,
    guo_delta,
    guo_loss_noise,
    guo_parameter_sensitivity,
    guo_residual_bound,
    guo_worst_case_residual,
)
from certify.certificate import PROVENANCES, Certificate
from certify.errors import InvalidInput
from certify.mechanisms import _unit_sigma, sigma_for
from unlearners.linalg import explicit_hessian
from unlearners.models import build_model
from unlearners.newton import NewtonRemoval
from unlearners.objective import Objective, default_init
from unlearners.registry import get_method

from synthetic import synthetic


def _objective(d, classes=2, model="logreg"):
    opts = {"hidden": (4,)} if model == "mlp" else {}
    return Objective(build_model(model, d, classes, **opts).double())


def _fitted(X, y, seed=0, **kw):
    obj = _objective(X.shape[1])
    method = NewtonRemoval(obj, **kw)
    method.fit(X, y, default_init(obj, torch.Generator().manual_seed(seed)))
    return method


def _forget(n, m, seed):
    return torch.randperm(n, generator=torch.Generator().manual_seed(seed))[:m]


def _perturbed_loss(obj, X, y, lam, b):
    """L_b(θ; D) written with the objective's own loss (autograd reference)."""
    return lambda t: obj.per_sample_loss(t, X, y).sum() + 0.5 * lam * X.shape[0] * (t @ t) + b @ t


def _norm(t):
    return float(torch.linalg.vector_norm(t))


@pytest.fixture(scope="module")
def adult():
    from audit.datasets import load_dataset

    data = load_dataset("adult", seed=0, max_train=5000, feature_map={"pca_components": 20})
    return torch.as_tensor(data.X_train, dtype=torch.float64), torch.as_tensor(data.y_train)


# -- the algorithms ------------------------------------------------------------------------------
def test_gradient_hessian_and_newton_step_match_autograd():
    X, y = synthetic(n=300, d=4, seed=2)
    method = _fitted(X, y, l2=1e-2, loss_noise=1.0, output_noise=False)
    obj, lam, b = method.objective, method.l2, method.b_
    theta = method.theta_
    full = _perturbed_loss(obj, X, y, lam, b)
    assert torch.allclose(method.gradient(theta), torch.func.grad(full)(theta), atol=1e-12)
    assert _norm(torch.func.grad(full)(theta)) / len(X) <= method.tol  # A reached the optimum

    forget = torch.tensor([0, 5, 77])
    keep = torch.ones(len(X), dtype=torch.bool)
    keep[forget] = False
    retained = _perturbed_loss(obj, X[keep], y[keep], lam, b)
    H = hessian(retained)(theta)
    # the Hessian of the sum-scaled L_b is n' times the shared mean-loss Hessian plus λ
    assert torch.allclose(H, keep.sum() * explicit_hessian(obj, theta, X[keep], y[keep], l2=lam), atol=1e-10)
    # Δ = mλθ* + Σ_Z ∇ℓ = −∇L_b(θ*; D'), and θ⁻ = θ* + H⁻¹Δ.
    Delta = -torch.func.grad(retained)(theta)
    expected = theta + torch.linalg.solve(H, Delta)
    assert torch.allclose(method.unlearn(forget), expected, rtol=1e-10, atol=1e-12)


def test_fit_is_the_unique_optimum_whatever_the_start_and_b_follows_the_seed():
    X, y = synthetic(n=400, d=5, seed=4)
    obj = _objective(5)
    fits = []
    for init_seed in (0, 1):
        m = NewtonRemoval(obj, loss_noise=2.0, output_noise=False, seed=3)
        fits.append(m.fit(X, y, 5 * default_init(obj, torch.Generator().manual_seed(init_seed))))
        assert m.fit_info_["converged"]
    assert torch.allclose(fits[0], fits[1], rtol=0, atol=1e-10)
    other = NewtonRemoval(obj, loss_noise=2.0, output_noise=False, seed=4)
    other.fit(X, y, default_init(obj, torch.Generator().manual_seed(0)))
    assert not torch.allclose(other.b_, m.b_)
    assert NewtonRemoval(obj).loss_noise == 0.0
    assert NewtonRemoval(obj, output_noise=False).loss_noise == 10.0


# -- the claims: 1e-3 relative distance for 1 %, bound >= distance, residual bound -----
@pytest.mark.parametrize("loss_noise", [0.0, 1.0])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_synthetic_one_percent_deletion(seed, loss_noise):
    X, y = synthetic(n=2000, d=5, seed=10 + seed)
    method = _fitted(X, y, l2=1e-3, loss_noise=loss_noise, output_noise=loss_noise == 0.0)
    forget = _forget(len(X), 20, seed)
    theta_u, theta_r = method.unlearn(forget), method.retrain(forget)
    distance = _norm(theta_u - theta_r)
    cert = method.certify(forget, 1.0, 1e-5)
    assert cert.kind == ("output-noise" if loss_noise == 0.0 else "training-noise")
    assert distance / _norm(theta_r) <= 1e-3
    assert 0 < distance <= cert.sensitivity
    residual = _norm(method.gradient(theta_u, forget))  # b included (certified-removal issue #1)
    beta = cert.constant("beta").value
    assert residual <= beta
    assert distance <= residual / (method.l2 * (len(X) - 20)) * (1 + 1e-9)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_adult_one_percent_deletion(adult, seed):
    X, y = adult
    method = _fitted(X, y, seed=seed)
    m = len(X) // 100
    forget = _forget(len(X), m, 100 + seed)
    theta_u, theta_r = method.unlearn(forget), method.retrain(forget)
    distance = _norm(theta_u - theta_r)
    cert = method.certify(forget, 1.0, 1e-5)
    assert distance / _norm(theta_r) <= 1e-3
    assert distance <= cert.sensitivity
    assert _norm(method.gradient(theta_u, forget)) <= cert.constant("beta").value
    assert cert.valid and not cert.conditional
    assert cert.sigma == pytest.approx(sigma_for(1.0, 1e-5, cert.sensitivity))


@pytest.mark.parametrize(("lam", "scale", "fraction"), [(1e-4, 3.0, 0.1), (1e-2, 0.5, 0.2), (1e-3, 1.0, 0.05)])
def test_bounds_hold_off_the_papers_assumptions(lam, scale, fraction):
    """Rows of norm 3 (R > 1), tiny lambda, large deletions: the R-generalised bound still holds."""
    X, y = synthetic(n=800, d=6, seed=5)
    method = _fitted(scale * X, y, l2=lam, loss_noise=3.0, output_noise=False)
    m = int(fraction * len(X))
    forget = _forget(len(X), m, 9)
    theta_u = method.unlearn(forget)
    cert = method.certify(forget, 1.0, 1e-5)
    assert _norm(method.gradient(theta_u, forget)) <= cert.constant("beta").value
    assert _norm(theta_u - method.retrain(forget)) <= cert.sensitivity


def test_sequential_requests_accumulate():
    X, y = synthetic(n=1500, d=5, seed=6)
    method = _fitted(X, y, l2=1e-3, loss_noise=1.0, output_noise=False)
    order = _forget(len(X), 45, 3)
    requests = [order[:15], order[15:30], order[30:]]
    theta = method.unlearn_sequence(requests)
    ledger = method.ledger()
    assert [r["removed_total"] for r in ledger] == [15, 30, 45]
    betas = [method.train_residual_] + [r["beta"] for r in ledger]
    for prev, rec, beta in zip(betas, ledger, betas[1:]):
        assert beta == pytest.approx(prev + rec["solve_residual"] + rec["corollary_1"], rel=1e-14)
        assert rec["measured_residual"] <= beta
    assert betas[1] < betas[2] < betas[3]
    releases = method.serve_requests(requests, 1.0, 1e-5)  # each release certified over its prefix
    assert [r[1].constant("beta").value for r in releases] == betas[1:]
    assert torch.equal(releases[-1][0], theta)
    cert = releases[-1][1]
    assert len(cert.constant("beta").diagnostics["requests"]) == 3
    union = torch.cat(requests)
    assert _norm(method.gradient(theta, union)) <= betas[-1]
    assert _norm(theta - method.retrain(union)) <= cert.sensitivity
    # the sequence differs from one batch step, unlearn() starts again from A(D), and the
    # certificate of the batch removal of the same records is the batch's own
    batch = method.unlearn(union)
    assert not torch.equal(batch, theta) and len(method.ledger()) == 1
    assert method.certify(union, 1.0, 1e-5).constant("beta").value == method.ledger()[0]["beta"]
    with pytest.raises(InvalidInput) as exc:
        method.unlearn_sequence([order[:10], order[5:20]])
    assert exc.value.field == "requests"


# -- the certificate -----------------------------------------------------------------------------
def test_certificate_lists_every_constant_with_provenance():
    X, y = synthetic(n=1000, d=5, seed=8)
    method = _fitted(X, y)
    forget = _forget(len(X), 10, 0)
    cert = method.certify(forget, 1.0, 1e-5)
    names = {c.name for c in cert.constants}
    assert {
        "lambda",
        "n",
        "m",
        "gamma",
        "C",
        "L",
        "R",
        "||X'||_2",
        "train_residual",
        "beta",
        "Delta_theta",
        "sigma_b",
        "tol",
    } <= names
    assert all(c.provenance in PROVENANCES and c.provenance in ("analytic", "enforced") for c in cert.constants)
    assert cert.constant("gamma").value == GUO_GAMMA_LOGISTIC
    assert cert.constant("R").value == pytest.approx(math.sqrt(2))  # unit rows plus the bias
    assert cert.constant("Delta_theta").value == cert.sensitivity
    assert cert.sensitivity == pytest.approx(cert.constant("beta").value / (method.l2 * 990))
    assert Certificate.from_dict(cert.to_dict()).to_dict() == cert.to_dict()
    assert cert.valid and not cert.warnings and "Corollary 1" in cert.theorem


def test_loss_perturbation_mode_theorem_3_budget():
    X, y = synthetic(n=1000, d=5, seed=8)
    forget = _forget(len(X), 10, 0)
    method = _fitted(X, y, loss_noise=10.0, output_noise=False)
    cert = method.certify(forget, 1.0, 1e-5)
    beta, budget = cert.constant("beta").value, cert.constant("epsilon_prime").value
    assert cert.kind == "training-noise" and cert.sigma == 0.0 and cert.valid and beta <= budget
    assert cert.sensitivity == cert.constant("Delta_theta").value
    assert budget == pytest.approx(10.0 / _unit_sigma(1.0, 1e-5, "analytic"))
    assert "Theorem 3" in cert.theorem and any("objective perturbation" in w for w in cert.warnings)
    classic = method.certify(forget, 0.5, 1e-5, "classic")
    assert classic.constant("epsilon_prime").value == pytest.approx(10.0 * 0.5 / math.sqrt(2 * math.log(1.5e5)))
    assert classic.constant("c").value == pytest.approx(guo_c(1e-5))
    # a loss noise too small for the accumulated residual: Guo's protocol retrains, nothing issued
    weak = _fitted(X, y, loss_noise=1e-3, output_noise=False)
    refused = weak.certify(forget, 1.0, 1e-5)
    assert not refused.valid and any("exceeds the budget" in w for w in refused.warnings)


def test_theorem_1_worst_case_and_call_order():
    X, y = synthetic(n=1000, d=5, seed=8)
    method = _fitted(X, y)
    forget = _forget(len(X), 10, 0)
    data_dependent = method.certify(forget, 1.0, 1e-5)
    method.unlearn(_forget(len(X), 30, 1))  # another removal in between changes nothing
    assert method.certify(forget, 1.0, 1e-5).to_dict() == data_dependent.to_dict()
    worst = method.worst_case_certificate(10, 1.0, 1e-5)
    assert any("Theorem 1" in w for w in worst.warnings)
    assert worst.sensitivity > data_dependent.sensitivity
    with pytest.raises(InvalidInput):
        method.worst_case_certificate(1000, 1.0, 1e-5)
    with pytest.raises(InvalidInput):
        method.certify(torch.arange(1000), 1.0, 1e-5)


# -- refusals and registration -------------------------------------------------------------------
@pytest.mark.parametrize(("model", "classes"), [("mlp", 2), ("logreg", 3)])
def test_non_binary_logistic_models_are_refused(model, classes):
    with pytest.raises(InvalidInput) as exc:
        NewtonRemoval(_objective(5, classes, model))
    assert exc.value.field == "model"


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("l2", 0.0),
        ("l2", -1.0),
        ("loss_noise", -1.0),
        ("output_noise", "yes"),
        ("max_iter", 0),
        ("tol", 0.0),
        ("seed", -1),
    ],
)
def test_invalid_hyperparameters(option, value):
    with pytest.raises(InvalidInput) as exc:
        NewtonRemoval(_objective(3), **{option: value})
    assert exc.value.field == option


def test_invalid_forget_sets():
    X, y = synthetic(n=200, d=3, seed=1)
    method = _fitted(X, y)
    for bad in (
        torch.tensor([1, 1]),
        torch.tensor([200]),
        torch.tensor([], dtype=torch.long),
        torch.ones(200, dtype=torch.bool),
    ):
        with pytest.raises(InvalidInput):
            method.unlearn(bad)


def test_registered_and_runs_through_the_audit():
    import audit

    assert get_method("newton") is NewtonRemoval
    report = audit.run(
        audit.AuditConfig(
            method="newton",
            max_train=3000,
            forget_count=30,
            attacks=("whitebox",),
            trials=100,
            curve_points=2,
            noise_draws=2,
        )
    )
    assert report.method.name == "newton"
    assert report.certificate.valid and report.certificate.sigma > 0 and report.certificate.kind == "output-noise"
    assert not report.realized.bound_violated and not report.realized.exceeds_certified
    assert not [f for f in report.findings if f.severity == "error"]


# -- certify.bounds.guo --------------------------------------------------------------------------
def test_guo_bound_formulas():
    assert guo_delta(guo_c(1e-5)) == pytest.approx(1e-5, rel=1e-12)
    assert guo_budget(10.0, 0.5, 1e-5, "classic") == pytest.approx(10.0 * 0.5 / guo_c(1e-5))
    assert guo_loss_noise(0.5, 1e-5, guo_budget(10.0, 0.5, 1e-5, "classic"), "classic") == pytest.approx(10.0)
    assert guo_loss_noise(2.0, 1e-6, guo_budget(3.0, 2.0, 1e-6)) == pytest.approx(3.0)
    assert guo_budget(3.0, 2.0, 1e-6) * _unit_sigma(2.0, 1e-6, "analytic") == pytest.approx(3.0)
    assert guo_budget(0.0, 1.0, 1e-5) == 0.0
    assert guo_residual_bound(2.0, 3.0, 5.0) == pytest.approx(0.25 * 30)
    assert guo_residual_bound(2.0, 3.0, 5.0, max_row_norm=2.0, gamma=0.1) == pytest.approx(6.0)
    # Theorem 1 at R = 1, no perturbation: 4γm²C²/(λ²(n−m)); one record: 4γC²/(λ²(n−1))
    assert guo_worst_case_residual(100, 1, 1e-2, 1.0) == pytest.approx(4 * 0.25 / (1e-4 * 99))
    assert guo_worst_case_residual(100, 3, 1e-2, 2.0) == pytest.approx(4 * 0.25 * 9 * 4 / (1e-4 * 97))
    assert guo_accumulated_residual([0.1, 0.2, 0.3]) == pytest.approx(0.6)
    assert guo_parameter_sensitivity(2.0, 1e-2, 50) == pytest.approx(4.0)
    for call in (
        lambda: guo_budget(1.0, 2.0, 1e-5, "classic"),
        lambda: guo_c(1.5),
        lambda: guo_worst_case_residual(10, 10, 1.0, 1.0),
        lambda: guo_residual_bound(-1, 1, 1),
        lambda: guo_parameter_sensitivity(1.0, 0.0, 5),
        lambda: guo_budget(1.0, 1.0, 1e-5, "laplace"),
    ):
        with pytest.raises(InvalidInput):
            call()


def test_worst_case_dominates_the_data_dependent_bound_on_unit_rows():
    X, y = synthetic(n=600, d=4, seed=3)
    method = _fitted(X, y, l2=1e-2)
    for m in (1, 6, 30):
        forget = _forget(len(X), m, m)
        method.unlearn(forget)
        rec = method.ledger()[0]
        worst = guo_worst_case_residual(
            600, m, 1e-2, math.sqrt(2), max_row_norm=math.sqrt(2), perturbation_norm=method.train_residual_
        )
        assert rec["corollary_1"] <= worst
