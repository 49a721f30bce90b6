"""The step size η as Hessian-free unlearning's tradeoff knob (Qiao et al. 2024, §4: Lemmas 1-2,
Theorem 2): the grid stays inside Lemma 2's stability limit, σ grows with η as the bound says, and
the audit's tradeoff section refits one replica per grid value."""

import math

import pytest
import torch

import audit
from audit.config import AuditConfig
from audit.measurements import tradeoff
from unlearners.hessian_free import KNOB_LOW_FRACTION, KNOB_STABLE_FRACTION, HessianFree
from unlearners.models import logistic_regression, mlp
from unlearners.objective import Objective, default_init

from synthetic import synthetic

FORGET = torch.tensor([3, 17, 40])


def _problem(model="logreg", n=200, seed=0):
    X, y = synthetic(n=n, d=4, seed=seed)
    net = logistic_regression(4, 2) if model == "logreg" else mlp(4, 2, hidden=(6,))
    obj = Objective(net.double())
    return obj, X, y, default_init(obj, torch.Generator().manual_seed(seed), torch.float64)


def _fitted(model="logreg", n=200, **options):
    obj, X, y, theta0 = _problem(model, n=n)
    method = HessianFree(obj, **{"epochs": 20, **options})
    method.fit(X, y, theta0)
    return method


def test_the_knob_is_the_step_size_and_refits():
    knob = HessianFree.capabilities.knob
    assert knob.option == "eta" and knob.symbol == "eta" and knob.refits and not knob.sigma_budget
    assert "eta^2" in knob.description and "Lemma 2" in knob.description


@pytest.mark.parametrize("points", [2, 5, 11])
def test_grid_spans_a_tenth_of_the_step_up_to_inside_the_stability_limit(points):
    method = _fitted()
    grid = method.knob_grid(points)
    limit = method.stable_eta_limit()
    # full batch, analytic curvature: Lemma 2's rho <= 1 iff eta (M + l2) <= 2 (Theorem 3's 2/(M + lambda))
    assert limit == pytest.approx(2.0 / (max(method.curvature_["M"]) + method.l2), rel=1e-12)
    assert len(grid) == points and all(isinstance(v, float) for v in grid)
    assert all(a < b for a, b in zip(grid, grid[1:]))
    assert all(0 < v < limit for v in grid)
    assert grid[0] == pytest.approx(KNOB_LOW_FRACTION * method.eta_, rel=1e-12)
    assert grid[-1] == pytest.approx(KNOB_STABLE_FRACTION * limit, rel=1e-12)
    assert grid[0] <= method.eta_ <= grid[-1]  # the default eta = 1/M lies inside the range
    ratios = [b / a for a, b in zip(grid, grid[1:])]
    assert max(ratios) == pytest.approx(min(ratios), rel=1e-9)  # geometric
    assert method.knob_grid(points) == grid  # deterministic
    option = next(p for p in HessianFree.hyperparameters if p.name == "eta")
    for value in grid:  # every value is an eta the option accepts
        option.check(value)


def test_a_configured_step_above_the_grid_top_is_its_last_value_and_the_limit_decays_with_q():
    probe = _fitted()
    limit = probe.stable_eta_limit()
    high = _fitted(eta=0.95 * limit)  # accepted by the fit (inside the limit), above 0.9 times it
    grid = high.knob_grid(4)
    assert len(grid) == 4 and grid[-1] == high.eta_ and grid[0] == pytest.approx(0.1 * high.eta_)
    # mini-batches: the limit is the smallest over steps of 2 / ((M_t + l2) q^t)
    batched = _fitted(batch_size=50, decay=0.9)
    expected = min(2.0 / ((M + batched.l2) * 0.9**t) for t, M in enumerate(batched.curvature_["M"]))
    assert batched.stable_eta_limit() == pytest.approx(expected, rel=1e-12)
    assert all(v < batched.stable_eta_limit() for v in batched.knob_grid(3))


def test_certified_sigma_grows_with_eta_like_eta_squared():
    """Theorem 2 (corrected): with the l2 contraction (1 - eta l2)^T ~ 1, the error bound is
    quadratic in eta (Lemma 1's divergence linear, times eta per step)."""
    method = _fitted()
    grid = method.knob_grid(4)
    sens, sigmas = [], []
    for value in grid:
        replica = method.replica(eta=value)
        replica.fit(method.X_, method.y_, method.theta0_)
        assert replica.eta_ == value and replica.options["eta"] == value
        cert = replica.certify(FORGET, 1.0, 1e-5)
        assert cert.certified and math.isfinite(cert.sigma)
        sens.append(cert.sensitivity)
        sigmas.append(cert.sigma)
    assert all(a < b for a, b in zip(sigmas, sigmas[1:]))
    for (v1, s1), (v2, s2) in zip(zip(grid, sens), zip(grid[1:], sens[1:])):
        assert s2 / s1 == pytest.approx((v2 / v1) ** 2, rel=0.05)


def test_the_tradeoff_section_refits_one_replica_per_grid_value():
    method = _fitted()
    X, y, theta0 = method.X_, method.y_, method.theta0_
    Xt, yt = synthetic(n=100, d=4, seed=5)

    def refit(m):
        m.declare_deletable(FORGET)
        m.fit(X, y, theta0)

    curve = tradeoff(
        method,
        FORGET,
        epsilon=1.0,
        delta=1e-5,
        mechanism="analytic",
        points=4,
        objective=method.objective,
        test=(Xt, yt),
        retrained=method.retrain(FORGET),
        refit=refit,
        gen=torch.Generator().manual_seed(0),
        tick=lambda *a: None,
    )
    grid = method.knob_grid(4)
    assert curve.knob.option == "eta" and curve.knob.refits and curve.chosen == method.eta_
    assert [row.value for row in curve.rows] == grid
    for row, value in zip(curve.rows, grid):
        replica = method.replica(eta=value)
        refit(replica)
        cert = replica.certify(FORGET, 1.0, 1e-5)
        assert row.sigma == cert.sigma and row.sensitivity == cert.sensitivity
        assert row.distance == pytest.approx(
            float(torch.linalg.vector_norm(replica.unlearn(FORGET) - replica.retrain(FORGET))), abs=1e-15
        )


def test_an_audit_of_hf_reports_the_eta_curve_within_its_budget():
    """Default diagnostic_budget = 1: the step used is the audit's own models (no refit) and one
    grid value is refitted, the farthest from it; the rest are listed and the cut is a finding."""
    config = AuditConfig(
        method="hf", max_train=300, attacks=(), curve_points=3, noise_draws=2, method_options={"epochs": 10}
    )
    report = audit.run(config).to_json_dict()
    curve, used = report["tradeoff"], report["method"]["hyperparameters"]
    assert curve["knob"]["option"] == "eta" and curve["knob"]["refits"]
    assert used["eta_requested"] is None and curve["chosen"] == used["eta"]  # the default 1/M
    values = [row["value"] for row in curve["rows"]]
    assert len(values) == 2 and used["eta"] in values and curve["work"] == 1.0
    assert len(curve["left_out"]) == 2 and not set(curve["left_out"]) & set(values)
    own = curve["rows"][values.index(used["eta"])]
    assert own["sigma"] == report["certificate"]["sigma"]  # the audit's certificate, reused
    assert own["distance"] == report["realized"]["distance_unlearned_retrained"]
    sigmas = [row["sigma"] for row in curve["rows"]]
    assert all(a < b for a, b in zip(sigmas, sigmas[1:]))
    cut = [f for f in report["findings"] if f["code"] == "diagnostic-cut"]
    assert len(cut) == 1 and "left out 2 of 4 values" in cut[0]["message"]
    assert report["timings"]["tradeoff_s"] >= 0


@pytest.mark.parametrize(
    ("budget", "taken", "left"),
    [(0.0, [3], [1, 2, 4, 5]), (1.0, [1, 3], [2, 4, 5]), (2.0, [1, 3, 5], [2, 4]), (9.0, [1, 2, 3, 4, 5], [])],
)
def test_the_budget_takes_grid_values_farthest_first_and_reuses_the_one_used(budget, taken, left):
    from audit.measurements import budgeted_values

    values, left_out, work = budgeted_values([1, 2, 4, 5], 3, lambda v: 1.0, budget, reuse=True)
    assert (values, left_out, work) == (taken, left, float(len(taken) - 1))
    # without reuse the value used is not added, and a cheap value still fits after a dear one is left out
    values, left_out, _ = budgeted_values([0, 50, 100], 50, lambda v: v / 100, 0.6, reuse=False)
    assert values == [0, 50] and left_out == [100]


def test_a_cut_diagnostic_is_a_warning_that_names_what_was_left_out():
    from types import SimpleNamespace

    from audit.findings import CODES, diagnostic_findings, verdict_of

    curve = SimpleNamespace(knob=SimpleNamespace(option="eta"), rows=[1, 2], left_out=[0.5])
    recovery = {"applicable": True, "steps": 10, "rewind": 95, "gradients": 100}
    found = diagnostic_findings(curve, recovery, 1.0)
    assert [f["code"] for f in found] == ["diagnostic-cut"] and CODES["diagnostic-cut"].short
    assert "left out 1 of 3 values (0.5)" in found[0]["message"] and "10 of K = 95" in found[0]["message"]
    assert verdict_of(found) == "consistent"
    whole = {**recovery, "steps": 95}
    assert diagnostic_findings(SimpleNamespace(knob=None, rows=[1], left_out=None), whole, 1.0) == []


def test_the_step_used_is_pinned_and_the_request_still_decides_the_next_fit():
    method = _fitted()
    assert method.options["eta"] is None and method.pinned_options()["eta"] == method.eta_
    assert method.eta_ == 1.0 / max(method.curvature_["M"])
    obj, X, y, theta0 = _problem(seed=1)
    method.fit(X * 2, y, theta0)  # other data: a new 1/M
    assert method.pinned_options()["eta"] == method.eta_ == 1.0 / max(method.curvature_["M"])
    assert method.report_hyperparameters()["eta_requested"] is None


@pytest.mark.slow  # fast-lane budget (README): 2.4 s
def test_a_replica_at_another_step_estimates_its_own_curvature(monkeypatch):
    """An MLP's curvature is estimated along the trajectory; another eta trains along another one."""
    method = _fitted(model="mlp", n=60, epochs=2, eta=0.05)
    calls = []
    original = HessianFree._curvature_constants
    monkeypatch.setattr(
        HessianFree, "_curvature_constants", lambda self, probed: calls.append(1) or original(self, probed)
    )
    same = method.replica()
    same.fit(method.X_, method.y_, method.theta0_)
    assert calls == [] and same.curvature_["M_constant"] is method.curvature_["M_constant"]
    other = method.replica(eta=0.02)
    other.fit(method.X_, method.y_, method.theta0_)
    assert calls == [1] and other.curvature_["M_constant"] is not method.curvature_["M_constant"]
    assert other.curvature_step_ == (0.02, method.decay)
    assert other.replica().pinned_["curvature_step_"] == (0.02, method.decay)
    grid = method.knob_grid(3)
    assert grid[-1] == pytest.approx(0.9 * 2.0 / method.curvature_["M_constant"].value)
