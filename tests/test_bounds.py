"""Rewind-to-Delete bounds (Mu & Klabjan, Theorem 3.1, Eq. 3, Corollary 3.2)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from certify.bounds import (
    r2d_corollary_rewind_bound,
    r2d_h,
    r2d_rewind_for_sigma,
    r2d_sensitivity,
    r2d_step_size_limit,
    r2d_step_size_ok,
)
from certify.errors import InvalidInput
from certify.mechanisms import sigma_for

# Test vector TV1 of seed-003-r2d.md §3.4.
TV1 = {"T": 1000, "eta": 1e-3, "L": 1.0, "n": 1000, "m": 10}
TV1_ROWS = [
    # K, h(K), Δ, σ classic, σ analytic (ε = 1, δ = 1e-5)
    (0, 1.744478846, 0.03488957693, 0.1690332059, 0.1301601594),
    (250, 1.453698998, 0.02907397996, 0.1408577711, 0.1084643094),
    (500, 1.082357216, 0.02164714433, 0.1048761988, 0.08075752143),
    (750, 0.6075797962, 0.01215159592, 0.05887211588, 0.04533312817),
]

# Paper-like settings (seed-003 §3.5, Table 4 constants, T and K in SGD iterations).
EICU = {"T": 51 * 185, "eta": 4.638e-4, "L": 0.14394, "G": 1.70994, "n": 94449, "m": 944}
LACUNA = {"T": 81 * 125, "eta": 1.966e-5, "L": 5.6530, "G": 9.481617, "n": 32000, "m": 640}


@pytest.mark.parametrize(("K", "h", "sens", "s_classic", "s_analytic"), TV1_ROWS)
def test_tv1(K, h, sens, s_classic, s_analytic):
    assert math.isclose(r2d_h(K, **TV1), h, rel_tol=1e-8)
    assert math.isclose(r2d_sensitivity(K, G=1.0, **TV1), sens, rel_tol=1e-8)
    d = r2d_sensitivity(K, G=1.0, **TV1)
    assert math.isclose(sigma_for(1.0, 1e-5, d, "classic"), s_classic, rel_tol=1e-8)
    assert math.isclose(sigma_for(1.0, 1e-5, d, "analytic"), s_analytic, rel_tol=1e-8)


def test_full_retrain_is_exactly_zero():
    assert r2d_h(1000, **TV1) == 0.0
    assert r2d_sensitivity(1000, G=1.0, **TV1) == 0.0
    assert r2d_h(0, 0, 1e-3, 1.0, 1000, 10) == 0.0


def test_h_strictly_decreasing_in_K():
    hs = [r2d_h(k, **TV1) for k in range(TV1["T"] + 1)]
    assert all(a > b for a, b in zip(hs, hs[1:]))
    eicu_no_g = {k: v for k, v in EICU.items() if k != "G"}
    hs = [r2d_h(k, **eicu_no_g) for k in range(0, EICU["T"] + 1, 37)]
    assert all(a > b for a, b in zip(hs, hs[1:]))


def test_h_matches_direct_formula():
    for K in (0, 1, 17, 999):
        q = 1 + 1e-3 * 1.0 * 1000 / 990
        direct = (q ** (1000 - K) - 1) * (1 + 1e-3) ** K
        assert math.isclose(r2d_h(K, **TV1), direct, rel_tol=1e-12)


def test_overflow_returns_inf():
    big = {"T": 10**6, "eta": 1.0, "L": 1.0, "n": 1000, "m": 10}
    assert r2d_h(0, **big) == math.inf
    assert r2d_h(10**6 - 1, **big) == math.inf  # (1+ηL)^K overflows alone
    assert r2d_sensitivity(0, G=1.0, **big) == math.inf
    assert r2d_h(10**6, **big) == 0.0
    # Just below the overflow threshold: finite and equal to the log-space value.
    h = r2d_h(0, 700, 1.0, 1.0, 1000, 500)  # q = 3, 3**700 ~ 1e334 -> inf
    assert h == math.inf
    h = r2d_h(0, 640, 1.0, 1.0, 1000, 500)  # 3**640 ~ 1.3e305 finite
    assert math.isfinite(h) and math.isclose(h, 3.0**640 - 1.0, rel_tol=1e-12)


@settings(max_examples=50, deadline=None)
@given(
    K=st.integers(0, 500),
    G=st.floats(1e-3, 1e3),
    c=st.floats(1e-2, 1e2),
    m=st.integers(1, 999),
)
def test_sensitivity_linear_in_G_and_scaling(K, G, c, m):
    kw = {"T": 500, "eta": 1e-3, "L": 2.0, "n": 1000, "m": m}
    d = r2d_sensitivity(K, G=G, **kw)
    assert math.isclose(r2d_sensitivity(K, G=c * G, **kw), c * d, rel_tol=1e-12)
    # Δ = 2 m G h(K) / (L n), with h depending on m only through q.
    assert math.isclose(d, 2 * m * G * r2d_h(K, **kw) / (2.0 * 1000), rel_tol=1e-12)


def test_sensitivity_grows_with_m():
    ds = [r2d_sensitivity(0, G=1.0, **{**TV1, "m": m}) for m in (1, 10, 100, 500)]
    assert all(a < b for a, b in zip(ds, ds[1:]))


def test_step_size_limit():
    assert r2d_step_size_limit(1.0, 1000, 10) == pytest.approx(1000 / (2 * 990))
    assert r2d_step_size_limit(2.0, 1000, 600) == pytest.approx(0.5)  # 1/L is the smaller
    assert r2d_step_size_ok(1e-3, 1.0, 1000, 10)
    assert r2d_step_size_ok(1000 / 1980, 1.0, 1000, 10)
    assert not r2d_step_size_ok(0.6, 1.0, 1000, 10)


def test_rewind_for_sigma_is_smallest_valid_K():
    for mech in ("classic", "analytic"):
        for sigma in (1e-4, 0.01, 0.05, 0.1, 0.15, 1.0):
            K = r2d_rewind_for_sigma(sigma, 1.0, 1e-5, G=1.0, mechanism=mech, **TV1)
            assert 0 <= K <= TV1["T"]
            assert sigma_for(1.0, 1e-5, r2d_sensitivity(K, G=1.0, **TV1), mech) <= sigma
            if K > 0:
                assert sigma_for(1.0, 1e-5, r2d_sensitivity(K - 1, G=1.0, **TV1), mech) > sigma
    # σ above the K = 0 noise: no rewind needed; σ = 0: full retrain.
    assert r2d_rewind_for_sigma(0.2, 1.0, 1e-5, G=1.0, mechanism="classic", **TV1) == 0
    assert r2d_rewind_for_sigma(0.0, 1.0, 1e-5, G=1.0, **TV1) == TV1["T"]
    # analytic needs less rewind than classic at ε = 1
    kc = r2d_rewind_for_sigma(0.05, 1.0, 1e-5, G=1.0, mechanism="classic", **TV1)
    ka = r2d_rewind_for_sigma(0.05, 1.0, 1e-5, G=1.0, mechanism="analytic", **TV1)
    assert ka < kc


def test_rewind_for_sigma_large_epsilon_analytic_only():
    K = r2d_rewind_for_sigma(0.01, 40.0, 0.1, **EICU)
    assert 0 < K < EICU["T"]
    with pytest.raises(InvalidInput) as err:
        r2d_rewind_for_sigma(0.01, 40.0, 0.1, mechanism="classic", **EICU)
    assert err.value.field == "epsilon" and "analytic" in str(err.value)


def test_rewind_for_sigma_overflowing_h():
    # ηLT = 500 and m = n/2: Δ(K) overflows to inf for small K but is finite near T; the
    # integer search must step over the inf region without raising.
    big = {"T": 50000, "eta": 0.01, "L": 1.0, "G": 1.0, "n": 1000, "m": 500}
    assert r2d_sensitivity(0, **big) == math.inf
    K = r2d_rewind_for_sigma(1e220, 1.0, 1e-5, **big)
    assert 0 < K < big["T"]
    unit = sigma_for(1.0, 1e-5, 1.0)
    assert r2d_sensitivity(K, **big) * unit <= 1e220 < r2d_sensitivity(K - 1, **big) * unit
    # Corollary 3.2 stays an upper bound (here a loose one: n/(n−m) = 2, so q^K ≫ (1+ηL)^K).
    assert r2d_corollary_rewind_bound(1e220, 1.0, 1e-5, **big) >= K
    # Everything overflows except the full retrain.
    huge = {"T": 10**6, "eta": 1.0, "L": 1.0, "G": 1.0, "n": 1000, "m": 10}
    assert r2d_rewind_for_sigma(1.0, 1.0, 1e-5, **huge) == 10**6


GRID = [
    (sigma, eps, delta, params)
    for params in (
        {**TV1, "G": 1.0},
        {"T": 300, "eta": 0.01, "L": 0.5, "G": 3.0, "n": 200, "m": 5},
        {"T": 5000, "eta": 1e-4, "L": 2.0, "G": 0.5, "n": 50000, "m": 2000},
        EICU,
        LACUNA,
    )
    for sigma in (1e-4, 1e-3, 0.01, 0.1)
    for eps in (0.1, 0.5, 1.0)
    for delta in (1e-5, 0.1)
]


@pytest.mark.parametrize(("sigma", "eps", "delta", "params"), GRID)
def test_corollary_bounds_exact_rewind(sigma, eps, delta, params):
    bound = r2d_corollary_rewind_bound(sigma, eps, delta, **params)
    exact = r2d_rewind_for_sigma(sigma, eps, delta, mechanism="classic", **params)
    assert 0.0 <= bound <= params["T"]
    # The bound is a real upper bound on the exact real root; the exact *integer* K is that
    # root rounded up, so it can exceed the unrounded bound by less than one step.
    assert exact <= math.ceil(bound)
    assert exact < bound + 1.0
    # ceil(bound) is itself a valid rewind
    kb = min(params["T"], math.ceil(bound))
    assert sigma_for(eps, delta, r2d_sensitivity(kb, **params), "classic") <= sigma * (1 + 1e-12)


@pytest.mark.parametrize("params", [EICU, LACUNA], ids=["eICU", "Lacuna"])
@pytest.mark.parametrize("eps", [0.1, 0.5, 1.0])
def test_corollary_tight_on_paper_settings(params, eps):
    bound = r2d_corollary_rewind_bound(0.01, eps, 0.1, **params)
    exact = r2d_rewind_for_sigma(0.01, eps, 0.1, mechanism="classic", **params)
    assert abs(bound - exact) <= 0.01 * params["T"]


def test_corollary_paper_numbers():
    # seed-003 §3.3/§3.5: eICU bound 9287.2 at ε = 1 (exact root 9286.3); K/T ≈ 98.4/99.2/99.8 %.
    b = r2d_corollary_rewind_bound(0.01, 1.0, 0.1, **EICU)
    assert b == pytest.approx(9287.2, abs=0.05)
    assert r2d_rewind_for_sigma(0.01, 1.0, 0.1, mechanism="classic", **EICU) == 9287
    for eps, pct in ((1.0, 98.4), (0.5, 99.2), (0.1, 99.8)):
        b = r2d_corollary_rewind_bound(0.01, eps, 0.1, **EICU)
        assert 100 * b / EICU["T"] == pytest.approx(pct, abs=0.05)
    for eps, pct in ((1.0, 98.1), (0.5, 99.1), (0.1, 99.8)):
        b = r2d_corollary_rewind_bound(0.01, eps, 0.1, **LACUNA)
        assert 100 * b / LACUNA["T"] == pytest.approx(pct, abs=0.05)


def test_corollary_edges():
    # Large σ: q^T − c ≤ 0, K = 0 suffices.
    assert r2d_corollary_rewind_bound(10.0, 1.0, 1e-5, G=1.0, **TV1) == 0.0
    # σ = 0: full retrain.
    assert r2d_corollary_rewind_bound(0.0, 1.0, 1e-5, G=1.0, **TV1) == float(TV1["T"])
    # Huge q^T does not overflow.
    big = {"T": 10**6, "eta": 1.0, "L": 1.0, "G": 1.0, "n": 1000, "m": 10}
    b = r2d_corollary_rewind_bound(1.0, 1.0, 1e-5, **big)
    assert 0.0 < b <= 10**6 and b > 10**6 - 50
    with pytest.raises(InvalidInput) as err:
        r2d_corollary_rewind_bound(0.01, 2.0, 1e-5, G=1.0, **TV1)
    assert err.value.field == "epsilon" and "analytic" in str(err.value)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"K": -1}, "K"),
        ({"K": 1001}, "K"),
        ({"K": 2.5}, "K"),
        ({"K": True}, "K"),
        ({"T": -5}, "T"),
        ({"T": 10.5}, "T"),
        ({"eta": 0.0}, "eta"),
        ({"eta": math.nan}, "eta"),
        ({"L": -1.0}, "L"),
        ({"G": 0.0}, "G"),
        ({"G": math.inf}, "G"),
        ({"m": 0}, "m"),
        ({"m": 1000}, "m"),
        ({"m": 2000}, "m"),
        ({"n": 1}, "n"),
        ({"n": 99.5}, "n"),
    ],
)
def test_bad_inputs(kwargs, field):
    args = {"K": 0, "G": 1.0, **TV1}
    args.update(kwargs)
    with pytest.raises(InvalidInput) as err:
        r2d_sensitivity(**args)
    assert err.value.field == field
    assert str(err.value).startswith(field)


def test_bad_inputs_other_functions():
    with pytest.raises(InvalidInput) as err:
        r2d_step_size_limit(0.0, 1000, 10)
    assert err.value.field == "L"
    with pytest.raises(InvalidInput) as err:
        r2d_step_size_ok(-1.0, 1.0, 1000, 10)
    assert err.value.field == "eta"
    with pytest.raises(InvalidInput) as err:
        r2d_rewind_for_sigma(-0.1, 1.0, 1e-5, G=1.0, **TV1)
    assert err.value.field == "sigma"
    with pytest.raises(InvalidInput) as err:
        r2d_rewind_for_sigma(0.1, 1.0, 1e-5, G=1.0, mechanism="laplace", **TV1)
    assert err.value.field == "mechanism"
    with pytest.raises(InvalidInput) as err:
        r2d_corollary_rewind_bound(0.1, 1.0, 0.0, G=1.0, **TV1)
    assert err.value.field == "delta"


def test_integral_floats_and_numpy_ints_accepted():
    np = pytest.importorskip("numpy")
    a = r2d_h(np.int64(250), np.int64(1000), 1e-3, 1.0, np.int64(1000), np.int64(10))
    b = r2d_h(250.0, 1000.0, 1e-3, 1.0, 1000.0, 10.0)
    assert a == b == r2d_h(250, **TV1)
