"""Gaussian-mechanism calibration: known values, properties, round trips, input errors."""

from __future__ import annotations

import math
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import erfinv

from certify import delta_for as pkg_delta_for
from certify import epsilon_for as pkg_epsilon_for
from certify import sigma_for as pkg_sigma_for
from certify.errors import InvalidInput
from certify.mechanisms import MECHANISMS, delta_for, epsilon_for, sigma_for

REL = 1e-6

# (epsilon, delta, sigma_classic or None, sigma_analytic) for Δ = 1.
# anchors-auditing.md §1.3 (mpmath-checked) and seed-003-r2d.md §3.4.
SIGMA_TABLE = [
    (0.1, 1e-5, 48.448053, 30.749566),
    (0.5, 1e-5, 9.689611, 7.031827),
    (1.0, 1e-3, 3.776480, 2.574657),
    (1.0, 1e-5, 4.8448053, 3.73063163482),
    (1.0, 1e-6, 5.298803, 4.224679),
    (1.0, 1e-9, 6.472466, 5.495266),
    (2.0, 1e-5, None, 1.993812),
    (4.0, 1e-5, None, 1.081162),
    (8.0, 1e-5, None, 0.600229),
    (8.0, 1e-3, None, 0.480014),
    (10.0, 1e-5, None, 0.499889),
    (30.0, 1e-6, None, 0.226816),
    (50.0, 1e-6, None, 0.156593),
    # seed-003 §3.4, δ = 0.1 and δ = 1e-5 columns
    (0.1, 0.1, 22.4754, 2.84692),
    (0.5, 0.1, 4.49509, 1.55629),
    (1.0, 0.1, 2.24754, 1.08588),
    (2.0, 0.1, None, 0.731955),
    (5.0, 0.1, None, 0.425042),
    (10.0, 0.1, None, 0.281812),
    (40.0, 0.1, None, 0.127297),
    (5.0, 1e-5, None, 0.891868),
    (40.0, 1e-5, None, 0.174854),
]


def _digits(x: float) -> int:
    """Significant digits printed in the reference value."""
    s = repr(x).replace(".", "").lstrip("0")
    return len(s.rstrip("0")) if "e" not in s else 6


def _close(got: float, want: float) -> bool:
    # Reference values are printed to 6-12 significant digits; require agreement to the printed
    # precision, and to 1e-6 relative wherever at least 7 digits are printed.
    tol = max(REL, 0.51 * 10.0 ** (1 - _digits(want)))
    return math.isclose(got, want, rel_tol=tol)


@pytest.mark.parametrize(("eps", "delta", "classic", "analytic"), SIGMA_TABLE)
def test_sigma_known_values(eps, delta, classic, analytic):
    assert _close(sigma_for(eps, delta, 1.0), analytic)
    if classic is not None:
        assert _close(sigma_for(eps, delta, 1.0, mechanism="classic"), classic)


def test_headline_values_to_1e6():
    assert math.isclose(sigma_for(1.0, 1e-5, 1.0), 3.73063163482, rel_tol=1e-10)
    assert math.isclose(sigma_for(1.0, 1e-5, 1.0, "classic"), 4.8448053, rel_tol=1e-7)
    assert math.isclose(sigma_for(1.0, 1e-9, 1.0), 5.495266, rel_tol=1e-6)
    assert math.isclose(sigma_for(0.1, 1e-5, 1.0), 30.749566, rel_tol=1e-6)
    assert math.isclose(sigma_for(8.0, 1e-5, 1.0), 0.600229, rel_tol=1e-6)
    assert math.isclose(sigma_for(10.0, 1e-5, 1.0), 0.499889, rel_tol=1e-6)
    assert math.isclose(sigma_for(1.0, 0.1, 1.0), 1.08588, rel_tol=1e-5)
    # printed to 6 digits (0.1272972693...), so compare to the printed precision
    assert math.isclose(sigma_for(40.0, 0.1, 1.0), 0.127297, rel_tol=5e-6)
    assert math.isclose(sigma_for(1.0, 1e-5, 2.5), 9.326579, rel_tol=1e-6)


@pytest.mark.parametrize(
    ("sigma", "eps"),
    [(1.0, 4.377178), (2.0, 1.993091), (5.0, 0.725522), (3.730632, 1.0)],
)
def test_epsilon_known_values(sigma, eps):
    assert math.isclose(epsilon_for(sigma, 1e-5, 1.0), eps, rel_tol=1e-6)


def test_package_reexports():
    assert pkg_sigma_for is sigma_for
    assert pkg_epsilon_for is epsilon_for
    assert pkg_delta_for is delta_for
    assert MECHANISMS == ("analytic", "classic")


def test_against_mpmath_at_extremes():
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = 50

    def delta_exact(s, e):
        s, e = mp.mpf(s), mp.mpf(e)
        return mp.ncdf(1 / (2 * s) - e * s) - mp.exp(e) * mp.ncdf(-1 / (2 * s) - e * s)

    for eps, delta in [(1.0, 1e-12), (50.0, 1e-12), (0.01, 1e-12), (50.0, 0.5), (30.0, 1e-6)]:
        s = sigma_for(eps, delta, 1.0)
        assert math.isclose(float(delta_exact(s, eps)), delta, rel_tol=1e-9)


# -- edge cases ------------------------------------------------------------------------------


def test_zero_sensitivity():
    assert sigma_for(1.0, 1e-5, 0.0) == 0.0
    assert sigma_for(0.5, 1e-5, 0.0, "classic") == 0.0
    assert epsilon_for(1.0, 1e-5, 0.0) == 0.0
    assert epsilon_for(0.0, 1e-5, 0.0) == 0.0
    assert delta_for(1.0, 1.0, 0.0) == 0.0


def test_zero_sigma():
    assert epsilon_for(0.0, 1e-5, 1.0) == math.inf
    assert epsilon_for(0.0, 1e-5, 1.0, "classic") == math.inf
    assert delta_for(0.0, 1.0, 1.0) == 1.0


def test_epsilon_zero_when_already_private():
    # Huge noise: total variation 2Φ(Δ/2σ) − 1 ≈ 4e-7 < δ = 1e-5, so ε = 0.
    assert epsilon_for(1e6, 1e-5, 1.0) == 0.0
    assert delta_for(1e6, 0.0, 1.0) < 1e-5


def test_large_epsilon_and_tiny_delta():
    s = sigma_for(50.0, 1e-12, 1.0)
    assert math.isfinite(s) and s > 0
    assert math.isclose(delta_for(s, 50.0, 1.0), 1e-12, rel_tol=1e-9)
    assert math.isclose(epsilon_for(s, 1e-12, 1.0), 50.0, rel_tol=1e-9)


def test_classic_more_noise_than_analytic_below_one():
    for eps in (0.01, 0.1, 0.5, 0.9, 1.0):
        for delta in (1e-12, 1e-9, 1e-5, 1e-2, 0.5):
            assert sigma_for(eps, delta, 1.0, "classic") > sigma_for(eps, delta, 1.0)


def test_classic_epsilon_for():
    s = sigma_for(0.7, 1e-5, 2.0, "classic")
    assert math.isclose(epsilon_for(s, 1e-5, 2.0, "classic"), 0.7, rel_tol=1e-12)


def test_classic_rejects_epsilon_above_one():
    with pytest.raises(InvalidInput) as err:
        sigma_for(1.5, 1e-5, 1.0, mechanism="classic")
    assert err.value.field == "epsilon"
    assert "analytic" in str(err.value)
    assert "1" in err.value.allowed
    with pytest.raises(InvalidInput) as err:
        epsilon_for(1.0, 1e-5, 1.0, mechanism="classic")  # would be 4.84 > 1
    # the user gave sigma, so the message names sigma and the smallest sigma that works
    assert err.value.field == "sigma"
    assert "at least 4.84481 " in err.value.allowed
    assert "analytic" in str(err.value)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"epsilon": 0.0}, "epsilon"),
        ({"epsilon": -1.0}, "epsilon"),
        ({"epsilon": math.nan}, "epsilon"),
        ({"epsilon": math.inf}, "epsilon"),
        ({"epsilon": "one"}, "epsilon"),
        ({"delta": 0.0}, "delta"),
        ({"delta": 1.0}, "delta"),
        ({"delta": math.nan}, "delta"),
        ({"sensitivity": -1.0}, "sensitivity"),
        ({"sensitivity": math.inf}, "sensitivity"),
        ({"mechanism": "laplace"}, "mechanism"),
        ({"mechanism": None}, "mechanism"),
    ],
)
def test_sigma_for_bad_inputs(kwargs, field):
    args = {"epsilon": 1.0, "delta": 1e-5, "sensitivity": 1.0, "mechanism": "analytic"}
    args.update(kwargs)
    with pytest.raises(InvalidInput) as err:
        sigma_for(**args)
    assert err.value.field == field
    assert str(err.value).startswith(field)
    if field == "mechanism":
        assert "'analytic', 'classic'" in str(err.value)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"sigma": -1.0}, "sigma"),
        ({"sigma": math.nan}, "sigma"),
        ({"sigma": math.inf}, "sigma"),
        ({"delta": 0.0}, "delta"),
        ({"delta": 1.0}, "delta"),
        ({"sensitivity": -0.5}, "sensitivity"),
        ({"mechanism": "Analytic"}, "mechanism"),
    ],
)
def test_epsilon_for_bad_inputs(kwargs, field):
    args = {"sigma": 1.0, "delta": 1e-5, "sensitivity": 1.0, "mechanism": "analytic"}
    args.update(kwargs)
    with pytest.raises(InvalidInput) as err:
        epsilon_for(**args)
    assert err.value.field == field


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"sigma": -1.0}, "sigma"),
        ({"epsilon": -1.0}, "epsilon"),
        ({"epsilon": math.nan}, "epsilon"),
        ({"sensitivity": math.nan}, "sensitivity"),
    ],
)
def test_delta_for_bad_inputs(kwargs, field):
    args = {"sigma": 1.0, "epsilon": 1.0, "sensitivity": 1.0}
    args.update(kwargs)
    with pytest.raises(InvalidInput) as err:
        delta_for(**args)
    assert err.value.field == field


# -- properties ------------------------------------------------------------------------------

epsilons = st.floats(min_value=1e-2, max_value=50.0)
log10_deltas = st.floats(min_value=-12.0, max_value=math.log10(0.5))
sensitivities = st.floats(min_value=1e-3, max_value=1e3)


@settings(max_examples=150, deadline=None)
@given(eps=epsilons, log10_delta=log10_deltas, sens=sensitivities)
def test_round_trips(eps, log10_delta, sens):
    delta = 10.0**log10_delta
    s = sigma_for(eps, delta, sens)
    assert s > 0
    assert math.isclose(epsilon_for(s, delta, sens), eps, rel_tol=REL)
    assert math.isclose(delta_for(s, eps, sens), delta, rel_tol=REL)


@settings(max_examples=60, deadline=None)
@given(eps=epsilons, log10_delta=log10_deltas, sens=sensitivities, c=st.floats(0.01, 100.0))
def test_sigma_linear_in_sensitivity(eps, log10_delta, sens, c):
    delta = 10.0**log10_delta
    scaled = sigma_for(eps, delta, c * sens)
    assert math.isclose(scaled, c * sigma_for(eps, delta, sens), rel_tol=1e-9)


@settings(max_examples=60, deadline=None)
@given(eps=epsilons, log10_delta=log10_deltas, f=st.floats(1.01, 10.0))
def test_sigma_decreasing_in_epsilon_and_delta(eps, log10_delta, f):
    delta = 10.0**log10_delta
    s = sigma_for(eps, delta, 1.0)
    assert sigma_for(eps * f, delta, 1.0) < s
    if delta * f < 1.0:
        assert sigma_for(eps, delta * f, 1.0) < s


@settings(max_examples=60, deadline=None)
@given(eps=st.floats(1e-2, 1.0), log10_delta=log10_deltas)
def test_classic_valid_where_defined(eps, log10_delta):
    # The classic σ is (ε, δ)-DP for ε ≤ 1: its exact δ is at most the target.
    delta = 10.0**log10_delta
    s = sigma_for(eps, delta, 1.0, "classic")
    assert delta_for(s, eps, 1.0) <= delta


# -- the float range (issue 13): every extreme input answers correctly or raises InvalidInput --

TINY, HUGE = 1e-300, 1e300


def test_epsilon_beyond_the_largest_float_is_inf():
    # Δ/σ = 1e300 gives ε ≈ μ²/2 = 5e599 > 1.8e308: inf is its rounding, as for σ = 0
    assert epsilon_for(TINY, 1e-5, 1.0) == math.inf
    assert epsilon_for(1.0, 1e-5, HUGE) == math.inf
    # just inside the range the answer is finite and matches ε ≈ μ²/2 + μ·z (z = Φ⁻¹ term)
    eps = epsilon_for(1e-150, 1e-5, 1.0)
    assert math.isfinite(eps) and math.isclose(eps, 0.5e300, rel_tol=1e-12)
    # the curve is a cliff here (ε 1e-14 too small has δ = 1): the ε returned is on the safe side
    assert delta_for(1e-150, eps, 1.0) <= 1e-5


def test_huge_sigma_gives_zero_epsilon():
    assert epsilon_for(HUGE, 1e-5, 1.0) == 0.0
    # classic: ε = Δ·√(2 ln(1.25/δ))/σ exactly
    assert math.isclose(epsilon_for(HUGE, 1e-5, 1.0, "classic"), 4.8448052626e-300, rel_tol=1e-9)


def test_tiny_epsilon_needs_the_total_variation_noise():
    # ε → 0: δ(0) = 2Φ(μ/2) − 1 = erf(μ/(2√2)), so σ → 1/(2√2·erfinv(δ)) for Δ = 1
    assert math.isclose(sigma_for(TINY, 1e-5, 1.0), 1 / (2 * math.sqrt(2) * erfinv(1e-5)), rel_tol=1e-9)
    assert math.isclose(sigma_for(TINY, 1e-5, 1.0, "classic"), 4.844805262605389e300, rel_tol=1e-12)


def test_tiny_epsilon_and_delta_are_not_cancelled_away():
    # The closed form Φ(a−b) − e^ε Φ(−a−b) cancels completely here and once gave σ = 3.6e15,
    # 1e284 times too little noise; ε = δ = 1e-300 needs σ ≈ 1/(√(2π)·1e-300)·(1 − ...) ≈ 2.76e299.
    s = sigma_for(TINY, TINY, 1.0)
    assert 2e299 < s < 4e299
    assert delta_for(s, TINY, 1.0) <= TINY
    assert math.isclose(delta_for(s, TINY, 1.0), TINY, rel_tol=1e-9)
    assert math.isclose(epsilon_for(s, TINY, 1.0), TINY, rel_tol=1e-6)


def test_against_mpmath_where_the_closed_form_cancels():
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = 400  # δ down to 1e-300 next to terms of size 1/2

    def delta_exact(s, e):
        s, e = mp.mpf(s), mp.mpf(e)
        return mp.ncdf(1 / (2 * s) - e * s) - mp.exp(e) * mp.ncdf(-1 / (2 * s) - e * s)

    for eps, delta in [(1e-12, 1e-30), (1e-8, 1e-300), (1e-30, 1e-100), (1e-3, 1e-100), (10.0, 1e-300)]:
        s = sigma_for(eps, delta, 1.0)
        assert math.isclose(float(delta_exact(s, eps)), delta, rel_tol=1e-9), (eps, delta)


def test_huge_epsilon():
    # large ε: μ ≈ √(2ε), so σ ≈ 1/√(2ε)
    assert math.isclose(sigma_for(HUGE, 1e-5, 1.0), 1 / math.sqrt(2 * HUGE), rel_tol=1e-9)
    with pytest.raises(InvalidInput) as err:
        sigma_for(HUGE, 1e-5, 1.0, "classic")
    assert err.value.field == "epsilon"


def test_huge_sensitivity():
    assert math.isclose(sigma_for(1.0, 1e-5, HUGE), 3.73063163482e300, rel_tol=1e-10)
    assert math.isclose(sigma_for(1.0, 1e-5, HUGE, "classic"), 4.8448052626e300, rel_tol=1e-9)
    for mechanism, largest in (("analytic", "4.81874e+307"), ("classic", "3.71056e+307")):
        with pytest.raises(InvalidInput) as err:  # σ = Δ·3.73 would overflow
            sigma_for(1.0, 1e-5, 1.7e308, mechanism)
        assert err.value.field == "sensitivity"
        assert f"at most {largest}" in err.value.allowed
    with pytest.raises(InvalidInput) as err:  # classic ε = 4.8e300 > 1: names σ, the input given
        epsilon_for(1.0, 1e-5, HUGE, "classic")
    assert err.value.field == "sigma" and "at least 4.84481e+300" in err.value.allowed


def test_tiny_sensitivity():
    assert math.isclose(sigma_for(1.0, 1e-5, TINY), 3.73063163482e-300, rel_tol=1e-10)
    # σ = 1e-300 · 7e-151 would underflow to 0 (no noise at all): refused, naming sensitivity
    with pytest.raises(InvalidInput) as err:
        sigma_for(HUGE, 1e-5, TINY)
    assert err.value.field == "sensitivity" and err.value.allowed.startswith("0 or at least")
    assert math.isclose(epsilon_for(1.0, 1e-5, TINY, "classic"), 4.8448052626e-300, rel_tol=1e-9)
    assert epsilon_for(1.0, 1e-5, TINY) == 0.0  # δ(0) = TV ≈ 4e-301 < δ


def test_tiny_delta():
    assert math.isclose(
        sigma_for(1.0, TINY, 1.0, "classic"), math.sqrt(2 * (math.log(1.25) + 300 * math.log(10))), rel_tol=1e-12
    )
    s = sigma_for(1.0, TINY, 1.0)
    assert 30 < s < sigma_for(1.0, TINY, 1.0, "classic")
    assert math.isclose(delta_for(s, 1.0, 1.0), TINY, rel_tol=1e-9)
    assert math.isclose(epsilon_for(1.0, TINY, 1.0), 37.44884791, rel_tol=1e-8)
    # a subnormal δ: 1.25/δ overflows, the log form does not
    assert math.isfinite(sigma_for(0.5, 5e-324, 1.0, "classic"))
    with pytest.raises(InvalidInput) as err:  # σ = 38.6/1e-310 exceeds the largest float
        sigma_for(1e-310, 5e-324, 1.0, "classic")
    assert err.value.field == "epsilon" and "at least 2.14674e-307" in err.value.allowed


@pytest.mark.parametrize("mechanism", MECHANISMS)
@pytest.mark.parametrize("sigma", [0.0, 5e-324, TINY, 1e-20, 1.0, 1e20, HUGE, 1.7e308])
@pytest.mark.parametrize("delta", [5e-324, TINY, 1e-5, 0.5, 1 - 1e-16])
@pytest.mark.parametrize("sensitivity", [5e-324, TINY, 1.0, HUGE, 1.7e308])
def test_epsilon_for_answers_or_refuses_at_every_extreme(mechanism, sigma, delta, sensitivity):
    try:
        eps = epsilon_for(sigma, delta, sensitivity, mechanism)
    except InvalidInput as err:  # only the classic mechanism refuses, when its ε > 1
        assert mechanism == "classic" and err.field in ("sigma", "sensitivity")
        return
    assert eps >= 0.0 and not math.isnan(eps)
    if sigma == 0.0:
        assert eps == math.inf
    elif mechanism == "analytic" and math.isfinite(eps):
        # the ε returned is on the safe side of the root: the curve at it is at most δ
        assert delta_for(sigma, eps, sensitivity) <= delta * (1 + 1e-9)


@pytest.mark.parametrize("mechanism", MECHANISMS)
@pytest.mark.parametrize("epsilon", [5e-324, TINY, 1e-20, 1.0, 1e20, HUGE, 1.7e308])
@pytest.mark.parametrize("delta", [5e-324, TINY, 1e-5, 0.5, 1 - 1e-16])
@pytest.mark.parametrize("sensitivity", [5e-324, TINY, 1.0, HUGE, 1.7e308])
def test_sigma_for_answers_or_refuses_at_every_extreme(mechanism, epsilon, delta, sensitivity):
    try:
        sigma = sigma_for(epsilon, delta, sensitivity, mechanism)
    except InvalidInput as err:
        assert err.field in ("epsilon", "sensitivity")
        return
    # a normal float: never inf, never 0 or a subnormal for a positive sensitivity
    assert sys.float_info.min <= sigma < math.inf
