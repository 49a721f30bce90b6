"""The privacy ledger: exact composition of Gaussian releases, the RDP cross-check, budget, edge cases.

The expected values are computed here independently of certify and Opacus: the exact ε of a
μ-GDP composition from the normal cdf with a root-finder (Dong, Roth & Su 2022, Cor. 2.13),
the Gaussian RDP in closed form (Mironov 2017, Prop. 7) and the RDP-to-(ε, δ) conversion of
Balle et al. 2020 (Thm 21), the formula Opacus's ``get_privacy_spent`` implements.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import brentq
from scipy.stats import norm

from certify.certificate import Certificate
from certify.errors import InvalidInput
from certify.ledger import COMPOSITION_METHOD, PrivacyLedger, Release
from certify.mechanisms import epsilon_for, sigma_for
from certify.rdp import DEFAULT_ORDERS, basic_composition_epsilon, gaussian_release_rdp, rdp_to_epsilon

DELTA = 1e-5
Z_EPS1 = 3.73063163482  # σ/Δ of the analytic Gaussian mechanism at ε = 1, δ = 1e-5


# -- independent reference computations (no Opacus) ------------------------------------------


def closed_form_rdp(sigma: float, sensitivity: float, orders=DEFAULT_ORDERS) -> np.ndarray:
    """α Δ²/(2σ²) at each order (Mironov 2017, Prop. 7)."""
    return np.array([a * sensitivity**2 / (2.0 * sigma**2) for a in orders])


def balle_epsilon(rdp, orders, delta) -> tuple[float, float]:
    """min_α rdp − (log δ + log α)/(α − 1) + log((α − 1)/α)  (Balle et al. 2020, Thm 21)."""
    best = min((r - (math.log(delta) + math.log(a)) / (a - 1) + math.log((a - 1) / a), a) for r, a in zip(rdp, orders))
    return best


def exact_gdp_epsilon(mu: float, delta: float) -> float:
    """The ε at which δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2) equals δ (plain scipy, no log space)."""
    curve = lambda eps: norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * norm.cdf(-eps / mu - mu / 2) - delta  # noqa: E731
    return 0.0 if curve(0.0) <= 0 else brentq(curve, 0.0, 100.0, xtol=1e-14, rtol=1e-13)


def mironov_epsilon(rdp, orders, delta) -> float:
    """min_α rdp + log(1/δ)/(α − 1)  (Mironov 2017, Prop. 3)."""
    return min(r + math.log(1 / delta) / (a - 1) for r, a in zip(rdp, orders))


def record(ledger: PrivacyLedger, sigma=Z_EPS1, sensitivity=1.0, **kwargs) -> Release:
    args = {"epsilon": 1.0, "delta": DELTA, "forget_total": len(ledger.releases) + 1}
    args.update(kwargs)
    return ledger.record(sigma=sigma, sensitivity=sensitivity, **args)


# -- composition -----------------------------------------------------------------------------


def test_cumulative_matches_independent_computation():
    # Heterogeneous releases: Δ grows with the deleted set, σ is recalibrated now and then.
    sigmas = [4.0, 4.0, 5.5, 5.5, 5.5, 9.0, 9.0, 12.0, 12.0, 12.0]
    sens = [0.5, 0.8, 1.1, 1.3, 1.6, 1.9, 2.3, 2.6, 3.0, 3.4]
    ledger = PrivacyLedger(delta=DELTA)
    total = np.zeros(len(DEFAULT_ORDERS))
    for k, (s, d) in enumerate(zip(sigmas, sens), start=1):
        r = record(ledger, sigma=s, sensitivity=d, forget_total=3 * k)
        total = total + closed_form_rdp(s, d)
        want_eps, want_order = balle_epsilon(total, DEFAULT_ORDERS, DELTA)
        assert r.index == k
        assert math.isclose(r.rdp_epsilon, want_eps, rel_tol=1e-9)
        assert r.cumulative_order == want_order
        assert r.rdp_epsilon <= mironov_epsilon(total, DEFAULT_ORDERS, DELTA)
        # the exact composition: independent of certify (scipy's normal cdf and a root-finder)
        mu = math.sqrt(sum((dd / ss) ** 2 for ss, dd in zip(sigmas[:k], sens[:k])))
        assert math.isclose(r.cumulative_mu, mu, rel_tol=1e-12)
        assert math.isclose(r.cumulative_epsilon, exact_gdp_epsilon(mu, DELTA), rel_tol=1e-7)
        assert r.cumulative_epsilon <= r.rdp_epsilon
        assert math.isclose(r.noise_multiplier, s / d, rel_tol=1e-15)
        np.testing.assert_allclose(ledger.cumulative_rdp(), total, rtol=1e-12)
    assert ledger.cumulative_epsilon() == ledger.releases[-1].cumulative_epsilon


def test_ten_equal_releases_are_one_gaussian():
    z = sigma_for(1.0, DELTA, 1.0)
    assert math.isclose(z, Z_EPS1, rel_tol=1e-10)
    ledger = PrivacyLedger(delta=DELTA)
    previous = 0.0
    for k in range(1, 11):
        r = record(ledger, sigma=z)
        assert r.cumulative_epsilon > previous
        previous = r.cumulative_epsilon
        # k releases at σ cost exactly one release at σ/√k: the certificate's own analytic ε
        assert math.isclose(r.cumulative_epsilon, epsilon_for(z / math.sqrt(k), DELTA, 1.0), rel_tol=1e-9)
        assert math.isclose(r.cumulative_epsilon, exact_gdp_epsilon(math.sqrt(k) / z, DELTA), rel_tol=1e-7)
        single = rdp_to_epsilon(gaussian_release_rdp(z / math.sqrt(k), 1.0), DEFAULT_ORDERS, DELTA)
        assert math.isclose(r.rdp_epsilon, single[0], rel_tol=1e-9)
    eps = [r.cumulative_epsilon for r in ledger.releases]
    rdp = [r.rdp_epsilon for r in ledger.releases]
    assert abs(eps[0] - 1.0) <= 1e-6  # after one release: the single-release epsilon
    # measured values, also quoted in the module docstring and basic_composition_epsilon
    for k, want in [(2, 1.46516996), (5, 2.44208441), (10, 3.61859157)]:
        assert math.isclose(eps[k - 1], want, rel_tol=1e-7)
    for k, want in [(1, 1.0925943253), (2, 1.5959344621), (5, 2.6496772381), (10, 3.9146521419)]:
        assert math.isclose(rdp[k - 1], want, rel_tol=1e-9)


def test_rdp_beats_basic_composition_from_two_releases():
    # Per-release ε = 1, δ = 1e-5 (analytic calibration): RDP's ε at δ = 1e-5 is below the
    # basic sum k·ε for k ≥ 2 (checked to k = 50). For k = 1 it is above (RDP's slack), and at
    # very small per-release ε the default orders (max 63) are too few to win at k = 2.
    ledger = PrivacyLedger(delta=DELTA)
    for k in range(1, 51):
        r = record(ledger)
        basic_eps, basic_delta = basic_composition_epsilon(
            [x.epsilon for x in ledger.releases], [x.delta for x in ledger.releases]
        )
        assert math.isclose(basic_eps, k) and math.isclose(basic_delta, k * DELTA)
        if k == 1:
            assert r.rdp_epsilon > basic_eps and math.isclose(r.cumulative_epsilon, basic_eps, rel_tol=1e-9)
        else:
            assert r.cumulative_epsilon < r.rdp_epsilon < basic_eps


# -- budget ----------------------------------------------------------------------------------


def _cumulative_after(k: int) -> float:
    ledger = PrivacyLedger(delta=DELTA)
    for _ in range(k):
        record(ledger)
    return ledger.cumulative_epsilon()


def test_budget_spent_exactly_at_release_seven():
    eps6, eps7 = _cumulative_after(6), _cumulative_after(7)
    budget = 0.5 * (eps6 + eps7)
    ledger = PrivacyLedger(delta=DELTA, budget_epsilon=budget)
    for k in range(1, 7):
        assert not ledger.would_exceed(Z_EPS1, 1.0)
        r = record(ledger, label=f"request {k}")
        assert not r.budget_spent and not ledger.budget_spent and not ledger.retrain_due
        assert ledger.first_release_over_budget is None
        assert ledger.warnings() == []
    assert ledger.would_exceed(Z_EPS1, 1.0)
    assert math.isclose(ledger.epsilon_after(Z_EPS1, 1.0), eps7, rel_tol=1e-12)
    assert not ledger.would_exceed(10 * Z_EPS1, 1.0)  # more noise would still fit
    assert len(ledger.releases) == 6  # looking ahead records nothing

    r7 = record(ledger)
    assert r7.index == 7 and r7.budget_spent
    assert ledger.budget_spent and ledger.retrain_due
    assert ledger.first_release_over_budget == 7
    (msg,) = ledger.warnings()
    assert f"cumulative epsilon {eps7:.4g} after release 7 exceeds the budget" in msg
    assert "delta=1e-05" in msg and "retrain from scratch" in msg
    assert ledger.would_exceed(math.inf, 0.0)  # already spent: any further release is over

    record(ledger)
    assert ledger.first_release_over_budget == 7
    assert "1 further release(s)" in ledger.warnings()[0]

    d = ledger.to_dict()
    assert d["retrain_due"] is True and d["budget_spent"] is True
    assert d["first_release_over_budget"] == 7
    assert d["budget_epsilon"] == budget
    assert [row["budget_spent"] for row in d["releases"]] == [False] * 6 + [True] * 2
    assert d["releases"][0]["label"] == "request 1"


def test_no_budget_never_spent():
    ledger = PrivacyLedger(delta=DELTA)
    for _ in range(5):
        record(ledger)
    record(ledger, sigma=0.0)
    assert ledger.cumulative_epsilon() == math.inf
    assert not ledger.budget_spent and not ledger.retrain_due
    assert not ledger.would_exceed(0.0, 1.0)


def test_to_dict_is_json_ready():
    ledger = PrivacyLedger(delta=DELTA, budget_epsilon=3.0)
    assert ledger.to_dict()["cumulative_epsilon"] == 0.0
    for k in range(3):
        record(ledger, distance=0.1 * k, realized_epsilon=0.05 * k)
    d = ledger.to_dict()
    assert json.loads(json.dumps(d)) == d
    assert d["composition"] == COMPOSITION_METHOD
    assert d["orders"] == {"min": 1.1, "max": 63.0, "count": 151}
    assert d["delta"] == DELTA
    assert d["basic_composition"] == {"epsilon": 3.0, "delta": pytest.approx(3e-5)}
    assert d["cumulative_epsilon"] == ledger.cumulative_epsilon()
    assert d["cumulative_order"] == ledger.releases[-1].cumulative_order
    assert d["rdp_epsilon"] == ledger.releases[-1].rdp_epsilon > d["cumulative_epsilon"]
    assert d["cumulative_mu"] == pytest.approx(math.sqrt(3) / Z_EPS1)
    assert d["retrain_due"] is False and d["warnings"] == []
    row = d["releases"][2]
    assert row["index"] == 3 and row["distance"] == pytest.approx(0.2)
    assert row["realized_epsilon"] == pytest.approx(0.1) and row["forget_total"] == 3
    assert set(row) == {
        "index",
        "epsilon",
        "delta",
        "sigma",
        "sensitivity",
        "noise_multiplier",
        "forget_total",
        "certificate_valid",
        "cumulative_epsilon",
        "cumulative_mu",
        "rdp_epsilon",
        "cumulative_order",
        "budget_spent",
        "distance",
        "realized_epsilon",
        "label",
        "kind",
    }
    assert row["kind"] == "output-noise"


def test_record_certificate():
    cert = Certificate(
        method="r2d",
        kind="output-noise",
        epsilon=1.0,
        delta=DELTA,
        sigma=2 * Z_EPS1,
        sensitivity=2.0,
        mechanism="analytic",
        theorem="R2D Thm 1",
    )
    ledger = PrivacyLedger(delta=DELTA)
    r = ledger.record_certificate(cert, forget_total=10, label="first")
    assert (r.sigma, r.sensitivity, r.epsilon, r.delta) == (2 * Z_EPS1, 2.0, 1.0, DELTA)
    assert abs(r.cumulative_epsilon - 1.0) <= 1e-6 and math.isclose(r.rdp_epsilon, 1.0925943253, rel_tol=1e-9)
    cert.valid = False
    assert ledger.record_certificate(cert, forget_total=20).cumulative_epsilon == math.inf


# -- edge cases ------------------------------------------------------------------------------


def test_zero_sensitivity_costs_nothing():
    ledger = PrivacyLedger(delta=DELTA, budget_epsilon=0.5)
    r = record(ledger, sigma=1.0, sensitivity=0.0, epsilon=0.0, delta=0.0)
    assert r.cumulative_epsilon == 0.0 and r.cumulative_order is None and r.cumulative_mu == 0.0
    assert r.noise_multiplier == math.inf
    assert not ledger.budget_spent and ledger.warnings() == []


def test_zero_sigma_is_infinite():
    ledger = PrivacyLedger(delta=DELTA, budget_epsilon=5.0)
    record(ledger)
    r = record(ledger, sigma=0.0, epsilon=math.inf)
    assert r.cumulative_epsilon == math.inf and r.noise_multiplier == 0.0
    assert ledger.retrain_due and ledger.first_release_over_budget == 2
    assert any("without noise (sigma = 0)" in w and "release 2" in w for w in ledger.warnings())


def test_invalid_certificate_voids_the_guarantee():
    ledger = PrivacyLedger(delta=DELTA)
    record(ledger)
    assert ledger.epsilon_after(Z_EPS1, 1.0, certificate_valid=False) == math.inf
    r = record(ledger, certificate_valid=False)
    assert not r.certificate_valid and r.cumulative_epsilon == math.inf
    r = record(ledger, sigma=100.0)  # a valid release later does not restore it
    assert r.cumulative_epsilon == math.inf and r.cumulative_order is None
    assert r.rdp_epsilon == r.cumulative_mu == math.inf
    assert np.all(np.isinf(ledger.cumulative_rdp()))
    (msg,) = ledger.warnings()
    assert "release 2" in msg and "not valid" in msg and "void" in msg


def test_distance_above_sensitivity_is_flagged():
    ledger = PrivacyLedger(delta=DELTA)
    record(ledger, distance=0.5)
    record(ledger, distance=1.5)
    (msg,) = ledger.warnings()
    assert msg.startswith("release 2: the measured distance 1.5")


def test_best_order_at_grid_edge_is_flagged():
    ledger = PrivacyLedger(delta=DELTA)
    record(ledger, sigma=100.0, epsilon=0.03)
    (msg,) = ledger.warnings()
    assert "largest order used (1.1 to 63)" in msg
    wide = PrivacyLedger(delta=DELTA, orders=list(DEFAULT_ORDERS) + [128.0, 256.0, 512.0, 1024.0])
    record(wide, sigma=100.0, epsilon=0.03)
    assert wide.warnings() == []
    assert wide.releases[-1].rdp_epsilon < ledger.releases[-1].rdp_epsilon
    assert wide.cumulative_epsilon() == ledger.cumulative_epsilon()  # the exact composition needs no orders


# -- bad input -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"delta": 0.0}, "delta"),
        ({"delta": 1.0}, "delta"),
        ({"delta": -1e-5}, "delta"),
        ({"delta": math.nan}, "delta"),
        ({"budget_epsilon": 0.0}, "budget_epsilon"),
        ({"budget_epsilon": -1.0}, "budget_epsilon"),
        ({"budget_epsilon": math.nan}, "budget_epsilon"),
        ({"budget_epsilon": math.inf}, "budget_epsilon"),
        ({"orders": []}, "orders"),
        ({"orders": [1.0, 2.0]}, "orders"),
        ({"orders": [2.0, math.inf]}, "orders"),
    ],
)
def test_ledger_bad_inputs(kwargs, field):
    args = {"delta": DELTA, "budget_epsilon": 3.0}
    args.update(kwargs)
    with pytest.raises(InvalidInput) as err:
        PrivacyLedger(**args)
    assert err.value.field == field
    assert str(err.value).startswith(field)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"sigma": -1.0}, "sigma"),
        ({"sigma": math.nan}, "sigma"),
        ({"sigma": "big"}, "sigma"),
        ({"sensitivity": -0.1}, "sensitivity"),
        ({"sensitivity": math.nan}, "sensitivity"),
        ({"epsilon": -1.0}, "epsilon"),
        ({"epsilon": math.nan}, "epsilon"),
        ({"delta": 1.5}, "delta"),
        ({"delta": math.nan}, "delta"),
        ({"forget_total": -1}, "forget_total"),
        ({"forget_total": 2.5}, "forget_total"),
        ({"forget_total": 0}, "forget_total"),  # below the previous release's 1
        ({"certificate_valid": "yes"}, "certificate_valid"),
        ({"distance": -1.0}, "distance"),
        ({"distance": math.inf}, "distance"),
        ({"realized_epsilon": math.nan}, "realized_epsilon"),
        ({"label": 3}, "label"),
        ({"kind": "gaussian"}, "kind"),
    ],
)
def test_record_bad_inputs(kwargs, field):
    ledger = PrivacyLedger(delta=DELTA)
    record(ledger, forget_total=1)
    before = ledger.cumulative_rdp()
    with pytest.raises(InvalidInput) as err:
        record(ledger, **{"forget_total": 2, **kwargs})
    assert err.value.field == field
    assert len(ledger.releases) == 1  # nothing half-recorded
    np.testing.assert_array_equal(ledger.cumulative_rdp(), before)


def test_rdp_names_are_re_exported():
    import certify.ledger as ledger_module
    import certify.rdp as rdp_module

    for name in ("DEFAULT_ORDERS", "basic_composition_epsilon", "gaussian_release_rdp", "rdp_to_epsilon"):
        assert name in ledger_module.__all__
        assert getattr(ledger_module, name) is getattr(rdp_module, name)


def test_import_does_not_load_torch():
    code = "import sys, certify.ledger; assert 'torch' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


# -- properties ------------------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(
    z=st.floats(0.3, 60.0),
    f=st.floats(1.01, 5.0),
    k=st.integers(1, 12),
    log10_delta=st.floats(-12.0, -2.0),
)
def test_cumulative_monotone_in_releases_and_sigma(z, f, k, log10_delta):
    delta = 10.0**log10_delta
    less_noise, more_noise = PrivacyLedger(delta=delta), PrivacyLedger(delta=delta)
    previous = 0.0
    for _ in range(k):
        r = record(less_noise, sigma=z)
        assert r.cumulative_epsilon >= previous
        previous = r.cumulative_epsilon
        record(more_noise, sigma=z * f)
        if less_noise.cumulative_epsilon() > 0:
            assert more_noise.cumulative_epsilon() < less_noise.cumulative_epsilon()
        else:
            assert more_noise.cumulative_epsilon() == 0.0


def test_unbounded_release_makes_the_cumulative_epsilon_infinite():
    # an uncertified method, or DP-SGD's privacy inside training: no Gaussian output release
    ledger = PrivacyLedger(delta=DELTA)
    ledger.record(sigma=0.0, sensitivity=math.inf, epsilon=1.0, delta=DELTA, forget_total=1)
    assert math.isinf(ledger.cumulative_epsilon())
    assert any("no sensitivity bound" in w for w in ledger.warnings())


@pytest.mark.parametrize(
    "kind, epsilon, sensitivity", [("training-noise", 7.0, None), ("training-noise", 1.0, 0.3), ("none", None, None)]
)
def test_certificates_without_gaussian_output_noise_make_the_cumulative_epsilon_infinite(kind, epsilon, sensitivity):
    ledger = PrivacyLedger(delta=DELTA)
    ledger.record_certificate(
        Certificate(
            method="r2d",
            kind="output-noise",
            epsilon=1.0,
            delta=DELTA,
            sigma=Z_EPS1,
            sensitivity=1.0,
            mechanism="analytic",
            theorem="t",
        ),
        forget_total=1,
    )
    assert math.isfinite(ledger.cumulative_epsilon())
    cert = Certificate(
        method="m",
        kind=kind,
        epsilon=epsilon,
        delta=DELTA,
        sigma=0.0,
        sensitivity=sensitivity,
        mechanism="analytic",
        theorem="t",
        valid=kind != "none",
    )
    r = ledger.record_certificate(cert, forget_total=2)
    assert r.kind == kind and math.isinf(r.sensitivity) and math.isinf(ledger.cumulative_epsilon())
    assert r.epsilon == (math.inf if epsilon is None else epsilon)
    assert any(f"release 2 ({kind} certificate) has no sensitivity bound" in w for w in ledger.warnings())
    why = "inside training" if kind == "training-noise" else "no theorem"
    assert any("release 2" in w and why in w for w in ledger.warnings())
    assert not any("published without noise" in w for w in ledger.warnings())  # not mistaken for one


@pytest.mark.parametrize("kind", ["none", "training-noise"])
def test_a_none_or_training_noise_certificate_records_with_infinite_cumulative_epsilon(kind):
    # As :func:`certify.certificate.issue` writes them: no sensitivity (None), σ = 0, and for
    # ``none`` no ε either.
    cert = Certificate(
        method="m",
        kind=kind,
        epsilon=None if kind == "none" else 2.0,
        delta=DELTA,
        sigma=0.0,
        sensitivity=None,
        mechanism="analytic",
        theorem="t",
        valid=kind != "none",
    )
    ledger = PrivacyLedger(delta=DELTA, budget_epsilon=10.0)
    r = ledger.record_certificate(cert, forget_total=4, label="ticket-7")
    assert r.index == 1 and r.kind == kind and r.label == "ticket-7"
    assert math.isinf(r.cumulative_epsilon) and math.isinf(ledger.cumulative_epsilon())
    assert ledger.retrain_due and ledger.first_release_over_budget == 1
    assert any("release 1" in w and f"{kind} certificate" in w and "not finite" in w for w in ledger.warnings())
    json.dumps(ledger.to_dict())  # still reportable (inf is a float)


def test_an_output_noise_certificate_without_sensitivity_is_unbounded():
    cert = Certificate(
        method="m",
        kind="output-noise",
        epsilon=1.0,
        delta=DELTA,
        sigma=Z_EPS1,
        sensitivity=None,
        mechanism="analytic",
        theorem="t",
    )
    ledger = PrivacyLedger(delta=DELTA)
    r = ledger.record_certificate(cert, forget_total=1)
    assert math.isinf(r.sensitivity) and math.isinf(r.cumulative_epsilon)
    assert any("release 1 (output-noise certificate) has no sensitivity bound" in w for w in ledger.warnings())


def test_a_noiseless_release_after_an_unbounded_one_is_still_reported():
    ledger = PrivacyLedger(delta=DELTA)
    ledger.record_certificate(
        Certificate(
            method="dpsgd",
            kind="training-noise",
            epsilon=1.0,
            delta=DELTA,
            sigma=0.0,
            sensitivity=None,
            mechanism="analytic",
            theorem="t",
        ),
        forget_total=1,
    )
    record(ledger, sigma=0.0, epsilon=math.inf)
    found = ledger.warnings()
    assert any("release 1 (training-noise certificate)" in w for w in found)
    assert any("release 2 was published without noise" in w for w in found)


def test_an_exact_release_costs_nothing():
    ledger = PrivacyLedger(delta=DELTA)
    cert = Certificate(
        method="retrain",
        kind="exact",
        epsilon=1.0,
        delta=DELTA,
        sigma=0.0,
        sensitivity=0.0,
        mechanism="analytic",
        theorem="exact",
    )
    assert ledger.record_certificate(cert, forget_total=3).cumulative_epsilon == 0.0
