"""CNS (Zhang et al. 2024): the bound of Eq. (11), its conditions, and the method on real runs."""

from __future__ import annotations

import math

import pytest
import torch

import unlearners.cns  # noqa: F401  (registers "cns" until base.available_methods imports it)
from audit.datasets import load_dataset
from certify.bounds.cns import (
    cns_depth_required,
    cns_exact_newton_bound,
    cns_forget_trick_term,
    cns_lissa_error,
    cns_sensitivity,
    logistic_hessian_lipschitz,
)
from certify.errors import InvalidInput
from certify.mechanisms import epsilon_for
from unlearners.cns import ConstrainedNewtonStep, project, solver_costs
from unlearners.models import build_model
from unlearners.objective import Objective, default_init
from unlearners.registry import get_method

from synthetic import synthetic

# -- the bound ------------------------------------------------------------------------------------

# Table 3 of the paper (AllCNN / CIFAR-10) is reproduced by the *pre-correction* Eq. (11) with
# C = 20, M = L = 1, lambda_min = 0.1, G = 15.289, sqrt(ln(d/rho)) = 3.0433 (digest §7.3).
TABLE3 = [(0, 35077.7545), (10, 390.3298), (1e2, 78.4548), (1e3, 46.9586), (1e4, 43.8059)]
S = 3.0433


@pytest.mark.parametrize(("lam", "bound"), TABLE3)
def test_original_eq11_reproduces_table_3(lam, bound):
    rho = math.exp(-S * S)  # d = 1, so sqrt(ln(d/rho)) = S
    got = cns_sensitivity(20.0, 1.0, 1.0, lam, 0.1, 15.289, 1, rho, version="original")
    assert math.isclose(got, bound, rel_tol=2e-4)


def test_corrected_eq11_is_the_printed_formula_and_never_below_the_original():
    C, M, L, lam, lmin, G, d, rho = 10.0, 2.0, 3.0, 5.0, -0.5, 0.1, 257, 1e-3
    k = lam + lmin
    root = math.sqrt(math.log(d / rho))
    expected = (2 * C * (M * C + lam) + G) / k + (16 * root * (lam + L) / k + 1 / 16) * (2 * L * C + G)
    assert math.isclose(cns_sensitivity(C, M, L, lam, lmin, G, d, rho), expected, rel_tol=1e-12)
    assert cns_sensitivity(C, M, L, lam, lmin, G, d, rho) >= cns_sensitivity(C, M, L, lam, lmin, G, d, rho, "original")
    assert math.isclose(cns_exact_newton_bound(C, M, lam, lmin), 2 * C * (M * C + lam) / k)  # Eq. (7)
    assert math.isclose(cns_lissa_error(L, lam, lmin, d, rho), 16 * root * (lam + L) / k + 1 / 16)
    # the 2C worst case never vanishes: Delta -> 2C as lambda -> infinity (Theorem 3.4 remark)
    assert cns_exact_newton_bound(C, M, 1e12, 0.0) == pytest.approx(2 * C, rel=1e-6)


def test_bound_is_infinite_without_positive_curvature_and_depth_condition():
    assert cns_sensitivity(1.0, 1.0, 1.0, 0.5, -0.5, 0.0, 10, 0.01) == math.inf
    assert cns_depth_required(1.0, 0.5, -0.5) == math.inf
    assert cns_depth_required(1.0, 1.0, 0.0) == pytest.approx(2 * 2 * math.log(2))  # k = 2
    assert cns_depth_required(0.0, 1.0, 0.5) == 0.0  # k <= 1
    assert cns_forget_trick_term(100, 10, 0.0, 1.0, 0.0) == 0.0
    assert cns_forget_trick_term(100, 10, 2.0, 1.0, 0.0, 3.0) == pytest.approx(100 / 90 * 4 * 2)
    for bad in ({"rho": 1.0}, {"rho": 0.0}, {"d": 0}, {"version": "new"}):
        args = {"L": 1.0, "lam": 1.0, "lambda_min": 0.0, "d": 10, "rho": 0.1, **bad}
        with pytest.raises(InvalidInput):
            cns_lissa_error(**args)


@pytest.mark.parametrize("classes", [2, 3])
def test_logistic_hessian_lipschitz_bounds_finite_differences(classes):
    g = torch.Generator().manual_seed(classes)
    obj = Objective(build_model("logreg", 4, classes).double())
    M = logistic_hessian_lipschitz(1.0, classes)
    worst = 0.0
    for _ in range(20):
        x = torch.randn(1, 4, generator=g, dtype=torch.float64)
        x = x / x.norm()
        t = torch.randint(classes, (1,), generator=g)
        a = 3 * torch.randn(obj.dim, generator=g, dtype=torch.float64)
        u = torch.randn(obj.dim, generator=g, dtype=torch.float64)
        b = a + 1e-4 * u / u.norm()
        hess = [torch.func.hessian(lambda th: obj.loss(th, x, t))(p) for p in (a, b)]
        worst = max(worst, float(torch.linalg.matrix_norm(hess[1] - hess[0], 2)) / 1e-4)
    assert 0 < worst <= M


# -- the method on logistic regression ----------------------------------------------------------------


def _relative(a: torch.Tensor, b: torch.Tensor) -> float:
    return float(torch.linalg.vector_norm(a - b) / torch.linalg.vector_norm(b))


@pytest.fixture(scope="module")
def adult_lr():
    data = load_dataset("adult", seed=0, max_train=5000, feature_map={"pca_components": 20})
    X = torch.as_tensor(data.X_train, dtype=torch.float64)
    y = torch.as_tensor(data.y_train)
    obj = Objective(build_model("logreg", X.shape[1], 2).double())
    theta0 = default_init(obj, torch.Generator().manual_seed(0))
    return obj, X, y, theta0


def _forget(n: int, seed: int, fraction: float = 0.01) -> torch.Tensor:
    return torch.randperm(n, generator=torch.Generator().manual_seed(seed))[: max(1, round(fraction * n))]


def test_lr_newton_step_lands_within_1e3_of_the_retrained_optimum_and_delta_bounds_it(adult_lr):
    """λ = 0 (H is already ≥ l2·I): an exact Newton step, 1 % deletions, three forget sets."""
    obj, X, y, theta0 = adult_lr
    cns = ConstrainedNewtonStep(obj, steps=500, eta=4.0, l2=1e-2, lam=0.0, solver="dense")
    theta = cns.fit(X, y, theta0)
    assert cns.residual_ < 1e-9  # A converged: the retrained optimum is exact
    for seed in range(3):
        forget = _forget(X.shape[0], seed)
        unlearned, retrained = cns.unlearn(forget), cns.retrain(forget)
        assert _relative(unlearned, retrained) <= 1e-3 < _relative(theta, retrained)
        cert = cns.certify(forget, 1.0, 1e-5)
        assert cert.sensitivity >= float(torch.linalg.vector_norm(unlearned - retrained))
        # ...but lambda = 0 is below ||H_w*||: the paper's condition fails, no certificate
        assert not cert.valid
        assert any("lambda = 0 is not above the Hessian norm" in w for w in cert.warnings)
    # the same step by the LiSSA recursion (deterministic, full-batch Hessian samples)
    lissa = ConstrainedNewtonStep(
        obj, steps=500, eta=4.0, l2=1e-2, lam=0.0, solver="lissa", hessian_batch=None, depth=8000
    )
    lissa.fit(X, y, theta0)
    forget = _forget(X.shape[0], 0)
    unlearned, retrained = lissa.unlearn(forget), lissa.retrain(forget)
    assert _relative(unlearned, retrained) <= 1e-3
    cert = lissa.certify(forget, 1.0, 1e-5)
    assert cert.sensitivity >= float(torch.linalg.vector_norm(unlearned - retrained))
    assert lissa.step_diagnostics(forget)[0]["relative_residual"] < 1e-8
    names = {c.name: c.provenance for c in cert.constants}
    assert names["L"] == names["M"] == names["lambda_min"] == "analytic"
    assert names["C"] == names["lambda"] == names["s"] == "enforced" and names["G"] == "estimated"


def test_lr_with_the_paper_condition_is_certified_but_only_damped(adult_lr):
    """λ = 1.25‖H‖ meets Theorem 3.4's condition: a valid certificate that bounds the distance,
    but (H + λI)⁻¹ with λ > ‖H‖ shrinks the Newton step by more than half in every direction."""
    obj, X, y, theta0 = adult_lr
    cns = ConstrainedNewtonStep(obj, steps=500, eta=4.0, l2=1e-2, solver="lissa")
    theta = cns.fit(X, y, theta0)
    forget = _forget(X.shape[0], 0)
    unlearned, retrained = cns.unlearn(forget), cns.retrain(forget)
    cert = cns.certify(forget, 1.0, 1e-5)
    assert cert.valid and cert.conditional  # G and ||H|| are estimated
    distance = float(torch.linalg.vector_norm(unlearned - retrained))
    assert distance <= cert.sensitivity
    assert epsilon_for(cert.sigma, 1e-5 - cert.constant("rho").value, distance) <= cert.epsilon
    assert cns.lam_ > cns.step_diagnostics(forget)[0]["hessian_norm"] == cert.constant("||H||").value
    assert _relative(unlearned, retrained) < _relative(theta, retrained)  # moves the right way
    assert _relative(unlearned, retrained) > 0.5 * _relative(theta, retrained)  # ...but not far


def test_synthetic_lr_several_seeds():
    X, y = synthetic(n=600, d=5, classes=2, seed=4)
    obj = Objective(build_model("logreg", 5, 2).double())
    for seed in range(3):
        cns = ConstrainedNewtonStep(obj, steps=300, l2=5e-2, lam=0.0, solver="dense", seed=seed)
        cns.fit(X, y, default_init(obj, torch.Generator().manual_seed(seed)))
        forget = _forget(600, 100 + seed)
        unlearned, retrained = cns.unlearn(forget), cns.retrain(forget)
        assert _relative(unlearned, retrained) <= 1e-3
        assert cns.certify(forget, 1.0, 1e-5).sensitivity >= float(torch.linalg.vector_norm(unlearned - retrained))


def test_conditions_that_fail_are_reported_and_not_issued():
    X, y = synthetic(n=400, d=5, classes=2, seed=1)
    obj = Objective(build_model("logreg", 5, 2).double())
    theta0 = default_init(obj, torch.Generator().manual_seed(0))
    forget = _forget(400, 1, 0.02)

    def cert(**kw):
        # the LiSSA conditions are under test: name the solver (auto would pick dense here)
        cns = ConstrainedNewtonStep(obj, steps=100, l2=1e-2, **{"hessian_batch": None, "solver": "lissa", **kw})
        cns.fit(X, y, theta0)
        return cns.certify(forget, 1.0, 1e-5)

    ok = cert()
    assert ok.valid
    shallow = cert(lam=0.0, depth=50, hessian_batch=None)  # k = L/l2 ~ 50: 2k ln k ~ 400 > 50
    assert not shallow.valid and any("LiSSA depth" in w for w in shallow.warnings)
    small_scale = cert(hessian_scale=0.5)  # above ||H + lambda I|| (converges) but below L + lambda
    assert not small_scale.valid and any("LiSSA scale" in w for w in small_scale.warnings)
    with pytest.raises(InvalidInput, match="hessian_scale"):
        cert(hessian_scale=0.01)  # overflows
    big_rho = cert(rho=0.5)
    assert not big_rho.valid and math.isinf(big_rho.sigma)
    tight_C = ConstrainedNewtonStep(obj, steps=100, l2=1e-2, C=0.05)  # projection active
    theta = tight_C.fit(X, y, theta0)
    assert float(theta.norm()) <= 0.05 * (1 + 1e-12)
    assert tight_C.certify(forget, 1.0, 1e-5).sensitivity < math.inf
    with pytest.raises(InvalidInput):
        ConstrainedNewtonStep(obj, solver="cholesky")
    with pytest.raises(InvalidInput):
        ConstrainedNewtonStep(obj, constants={"K": 1.0})


def test_forget_set_shortcut_matches_the_retained_gradient_at_a_stationary_point():
    X, y = synthetic(n=500, d=5, classes=3, seed=2)
    obj = Objective(build_model("logreg", 5, 3).double())
    theta0 = default_init(obj, torch.Generator().manual_seed(0))
    forget = _forget(500, 3, 0.02)
    out = {}
    for mode in ("retain", "forget"):
        cns = ConstrainedNewtonStep(obj, steps=600, l2=5e-2, lam=0.0, solver="dense", gradient=mode)
        cns.fit(X, y, theta0)
        out[mode] = (cns.unlearn(forget), cns.certify(forget, 1.0, 1e-5))
    assert torch.allclose(out["retain"][0], out["forget"][0], atol=1e-9)
    assert out["forget"][1].sensitivity >= out["retain"][1].sensitivity


def test_sequential_requests_follow_proposition_4_2_with_fresh_noise_per_release():
    X, y = synthetic(n=600, d=5, classes=2, seed=5)
    obj = Objective(build_model("logreg", 5, 2).double())
    cns = ConstrainedNewtonStep(obj, steps=300, l2=5e-2, solver="dense")
    cns.fit(X, y, default_init(obj, torch.Generator().manual_seed(0)))
    order = torch.randperm(600, generator=torch.Generator().manual_seed(9))
    requests = [order[:6], order[6:12], order[12:18]]
    estimates = cns.unlearn_sequence(requests)
    releases = cns.serve_requests(requests, 1.0, 1e-5)
    assert len(estimates) == 3 and all(torch.equal(e, r[0]) for e, r in zip(estimates, releases))
    for k, (est, (_, cert)) in enumerate(zip(estimates, releases), start=1):
        assert "Prop. 4.2" in cert.theorem and f"each of {k} releases" in cert.theorem
        assert sum(c.name.startswith("request") for c in cert.conditions) == k  # each step starts in the ball
        retrained = cns.retrain(torch.cat(requests[:k]))
        assert float(torch.linalg.vector_norm(est - retrained)) <= cert.sensitivity
        assert cert.constant("retrain_residual").value <= cert.constant("G").value
    released = cns.release_sequence(estimates, 0.1, torch.Generator().manual_seed(0))
    noise = [r - e for r, e in zip(released, estimates)]
    assert all(float(z.norm()) > 0 for z in noise) and not torch.allclose(noise[0], noise[1])


def test_projection_and_registry():
    v = torch.tensor([3.0, 4.0], dtype=torch.float64)
    assert torch.allclose(project(v, 1.0), v / 5) and torch.equal(project(v, 10.0), v)
    assert get_method("cns") is ConstrainedNewtonStep


# -- the default MLP, through the library's audit -------------------------------------------------------


@pytest.mark.slow
def test_audit_plugs_in_and_keeps_test_accuracy_within_a_point_of_retraining():
    import audit

    report = audit.run(
        audit.AuditConfig(
            method="cns",
            model="mlp",
            max_train=3000,
            forget_count=30,
            attacks=("whitebox",),
            trials=100,
            curve_points=2,
            noise_draws=2,
        )
    )
    d = report.to_dict()
    cert = d["certificate"]
    assert cert["valid"] and cert["conditional"]
    assert d["realized"]["distance_unlearned_retrained"] <= cert["sensitivity"]
    test_acc = {w: d["utility"][w]["test"]["accuracy"] for w in ("original", "unlearned", "retrained")}
    assert abs(test_acc["unlearned"] - test_acc["retrained"]) <= 0.01
    assert {c["name"] for c in cert["constants"]} >= {"L", "M", "lambda_min", "G", "C", "lambda", "s", "rho"}
    assert report.verdict == "consistent"
    hnorm = next(c["value"] for c in cert["constants"] if c["name"] == "||H||")
    assert d["method"]["hyperparameters"]["lam"] > hnorm


def test_minibatch_training_keeps_the_certificate_it_measures():
    # Prop. 4.1 is about the end points (inside the ball, residual gradients measured), not about
    # how A reached them: projected mini-batch SGD, as the paper trains, stays certifiable
    X, y = synthetic(n=400, d=5, classes=2, seed=2)
    obj = Objective(build_model("logreg", 5, 2).double())
    theta0 = default_init(obj, torch.Generator().manual_seed(0))
    cns = ConstrainedNewtonStep(obj, steps=300, l2=5e-2, solver="dense", batch_size=50)
    full = ConstrainedNewtonStep(obj, steps=300, l2=5e-2, solver="dense")
    w, w_full = cns.fit(X, y, theta0), full.fit(X, y, theta0)
    assert not torch.equal(w, w_full)
    forget = torch.tensor([1, 5, 9, 30])
    cert = cns.certify(forget, 1.0, 1e-5)
    assert cert.valid and "full-batch gradient descent" not in {c.name for c in cert.conditions}
    assert cert.sensitivity >= float(torch.linalg.vector_norm(cns.unlearn(forget) - cns.retrain(forget)))
    assert cns.report_hyperparameters()["batch_size"] == 50


# -- the solver: auto's choice, the downdated dense step, the Weyl spectrum ---------------------------


def _exact_step(obj, theta, X, y, l2, lam):
    """An independent Newton step: torch.func.hessian of the regularised retained loss, torch.linalg.solve."""

    def loss(t):
        return obj.loss(t, X, y) + 0.5 * l2 * torch.dot(t, t)

    H = torch.func.hessian(loss)(theta)
    g = torch.func.grad(loss)(theta)
    eye = torch.eye(H.shape[0], dtype=H.dtype)
    return theta - torch.linalg.solve(H + lam * eye, g), torch.linalg.eigvalsh(H)


def test_solver_costs_pick_dense_for_the_default_logistic_regression_and_lissa_for_the_default_mlp():
    common = dict(n=34190, depth=1000, repeats=1, hessian_batch=10)
    lr = solver_costs(d=3, linear=True, n_outputs=1, **common)
    mlp = solver_costs(d=257, linear=False, n_outputs=1, **common)
    assert lr["dense"] < lr["lissa"] and mlp["lissa"] < mlp["dense"]
    # more records make the dense Hessian dearer and leave the mini-batch recursion unchanged
    bigger = solver_costs(d=257, linear=False, n_outputs=1, **{**common, "n": 10 * 34190})
    assert bigger["dense"] > mlp["dense"] and bigger["lissa"] == mlp["lissa"]


@pytest.mark.parametrize("model,classes", [("logreg", 2), ("logreg", 3), ("mlp", 2)])
def test_dense_step_at_w_star_is_the_exact_newton_step_on_the_retained_records(model, classes):
    """The dense step downdates the Hessian formed after training by the deleted records' ones:
    the same step as an independent exact Newton step on D_r (torch.func.hessian + solve)."""
    X, y = synthetic(n=300, d=4, classes=classes, seed=7)
    opts = {"hidden": (5,)} if model == "mlp" else {}
    obj = Objective(build_model(model, 4, classes, **opts).double())
    theta0 = default_init(obj, torch.Generator().manual_seed(1))
    cns = ConstrainedNewtonStep(obj, steps=200, l2=5e-2, solver="dense")
    cns.fit(X, y, theta0)
    forget = _forget(300, 4, 0.03)
    keep = torch.ones(300, dtype=torch.bool)
    keep[forget] = False
    expected, eigs = _exact_step(obj, cns.theta_, X[keep], y[keep], cns.l2, cns.lam_)
    assert torch.allclose(cns.unlearn(forget), expected, atol=1e-10, rtol=0)
    diag = cns.step_diagnostics(forget)[0]
    assert "n H(D) - m H(Z)" in diag["spectrum_method"]
    assert diag["lambda_min"] == pytest.approx(float(eigs[0]), abs=1e-10)
    assert diag["hessian_norm"] == pytest.approx(float(eigs.abs().max()), abs=1e-10)
    cert = cns.certify(forget, 1.0, 1e-5)
    err = cert.constant("solve_error").value
    assert 0 <= err < 1e-9 and "Theorem 3.4" in cert.theorem
    assert cert.sensitivity == pytest.approx(
        cns_exact_newton_bound(
            cns.C, cert.constant("M").value, cns.lam_, cert.constant("lambda_min").value, cert.constant("G").value
        )
        + err,
        rel=1e-12,
    )


def test_lissa_spectrum_at_w_star_bounds_the_retained_hessian_by_weyl():
    X, y = synthetic(n=2000, d=5, classes=2, seed=8)
    obj = Objective(build_model("logreg", 5, 2).double())
    cns = ConstrainedNewtonStep(obj, steps=200, l2=5e-2, solver="lissa", depth=200)
    cns.fit(X, y, default_init(obj, torch.Generator().manual_seed(0)))
    forget = torch.tensor([3])
    diag = cns.step_diagnostics(forget)[0]
    assert "Weyl" in diag["spectrum_method"]
    keep = torch.ones(2000, dtype=torch.bool)
    keep[forget] = False
    _, eigs = _exact_step(obj, cns.theta_, X[keep], y[keep], cns.l2, cns.lam_)
    # bounds, not estimates: below the true smallest eigenvalue, above the true norm, and tight
    assert float(eigs[0]) - 1e-3 * cns.lam_ <= diag["lambda_min"] <= float(eigs[0])
    assert float(eigs.abs().max()) <= diag["hessian_norm"] <= float(eigs.abs().max()) + 1e-2 * cns.lam_
    # a large deletion moves the spectrum too far for Weyl: measured at the step instead
    big = _forget(2000, 1, 0.2)
    assert "Lanczos" in cns.step_diagnostics(big)[0]["spectrum_method"]


def test_auto_reports_the_solver_it_ran_and_why():
    X, y = synthetic(n=300, d=4, classes=2, seed=3)
    obj = Objective(build_model("logreg", 4, 2).double())
    theta0 = default_init(obj, torch.Generator().manual_seed(0))
    auto = ConstrainedNewtonStep(obj, steps=100, l2=5e-2)
    auto.fit(X, y, theta0)
    hp = auto.report_hyperparameters()
    assert (hp["solver"], hp["solver_requested"]) == ("dense", "auto") and "cost model" in hp["solver_reason"]
    forget = torch.tensor([0, 7])
    assert auto.step_diagnostics(forget)[0]["solver"].startswith("dense")
    cert = auto.certify(forget, 1.0, 1e-5)
    assert "rho" not in {c.name for c in cert.constants}  # no LiSSA term, no failure probability
    capped = ConstrainedNewtonStep(obj, steps=100, l2=5e-2, dense_max_dim=2)
    capped.fit(X, y, theta0)
    hp = capped.report_hyperparameters()
    assert hp["solver"] == "lissa" and "dense_max_dim" in hp["solver_reason"]
    assert capped.certify(forget, 1.0, 1e-5).constant("rho").value > 0
    asked = ConstrainedNewtonStep(obj, steps=100, l2=5e-2, solver="lissa")
    asked.fit(X, y, theta0)
    assert (asked.report_hyperparameters()["solver"], asked.report_hyperparameters()["solver_reason"]) == (
        "lissa",
        "requested",
    )
