"""attacks.epsilon: Clopper–Pearson ε lower bound, ceiling, GDP estimate; validity by simulation.

Every simulation is seeded, so the file is deterministic. Validity claims are checked the only
way they can be: draw scores from mechanisms whose true ε is known exactly, run the estimator
many times, and count how often the "lower bound" exceeds the truth.

Tolerance for those counts. A valid 95 % bound exceeds the true ε with probability p ≤ 0.05 in
each repetition, so over R independent repetitions the number of exceedances is stochastically
at most Binomial(R, 0.05). We allow up to ``binom.ppf(0.99, R, 0.05)`` exceedances (11 of 100,
18 of 200): a procedure whose exceedance rate is exactly 5 % goes over that with probability
below 1 %, so a failure means p > 0.05 at 99 % confidence, not bad luck. (Observed rates are
far lower, see the assertions that print them.) A negative control checks the harness can tell:
the raw point estimate, which is *not* a bound, fails the same check by a wide margin.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from scipy.stats import binom, binomtest

from attacks.epsilon import EpsilonBound, clopper_pearson_epsilon, epsilon_ceiling
from attacks.gdp import GDPEstimate, gdp_epsilon_estimate
from attacks.protocol import Counts
from attacks.rates import clopper_pearson_interval, epsilon_from_rates
from certify.errors import InvalidInput
from certify.mechanisms import delta_for, epsilon_for, sigma_for

SPLITS = ("half", "bonferroni", "pareto-bonferroni")


def allowed_exceedances(reps: int, alpha: float = 0.05) -> int:
    """Largest count a level-alpha procedure reaches with probability ≥ 99 % (see docstring)."""
    return int(binom.ppf(0.99, reps, alpha))


# ----------------------------------------------------------------------------------------------
# Clopper–Pearson interval


@pytest.mark.parametrize("alternative", ["two-sided", "less", "greater"])
@pytest.mark.parametrize(
    ("k", "n", "confidence"),
    [(0, 10, 0.95), (5, 10, 0.95), (10, 10, 0.95), (3, 1000, 0.99), (997, 1000, 0.9), (1, 1, 0.5)],
)
def test_cp_matches_scipy_binomtest(k, n, confidence, alternative):
    lo, hi = clopper_pearson_interval(k, n, confidence, alternative=alternative)
    ref = binomtest(k, n, alternative=alternative).proportion_ci(confidence, method="exact")
    assert lo == pytest.approx(ref.low, rel=1e-9, abs=1e-15)
    assert hi == pytest.approx(ref.high, rel=1e-9, abs=1e-15)
    assert isinstance(lo, float) and isinstance(hi, float)


def test_cp_known_values():
    # One-sided upper bound at zero successes has the closed form 1 - alpha ** (1 / n).
    _, hi = clopper_pearson_interval(0, 10, 0.95, alternative="less")
    assert hi == pytest.approx(1.0 - 0.05 ** (1 / 10), rel=1e-12)
    assert hi == pytest.approx(0.258866, abs=1e-6)
    lo, hi = clopper_pearson_interval(5, 10, 0.95)
    assert (lo, hi) == (pytest.approx(0.187086, abs=1e-6), pytest.approx(0.812914, abs=1e-6))
    assert clopper_pearson_interval(10, 10, 0.95)[1] == 1.0
    assert clopper_pearson_interval(0, 10, 0.95)[0] == 0.0


def test_cp_vectorised():
    k = np.array([0, 1, 5, 10])
    lo, hi = clopper_pearson_interval(k, 10, 0.9, alternative="less")
    assert lo.shape == hi.shape == (4,)
    assert np.all(np.diff(hi) > 0)
    for ki, h in zip(k, hi):
        assert h == pytest.approx(clopper_pearson_interval(int(ki), 10, 0.9, alternative="less")[1])


def test_cp_upper_bound_coverage_by_simulation():
    # The one-sided 95 % upper bound falls below the true p in at most ~5 % of draws.
    rng = np.random.default_rng(7)
    for p in (0.01, 0.2, 0.5):
        k = rng.binomial(400, p, size=4000)
        _, hi = clopper_pearson_interval(k, 400, 0.95, alternative="less")
        miss = float(np.mean(hi < p))
        assert miss <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / 4000)
        assert miss > 0.01  # and not absurdly loose (CP is conservative only by discreteness)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"k": 11, "n": 10}, "k"),
        ({"k": -1, "n": 10}, "k"),
        ({"k": 1.5, "n": 10}, "k"),
        ({"k": 0, "n": 0}, "n"),
        ({"k": 0, "n": 10, "confidence": 1.0}, "confidence"),
        ({"k": 0, "n": 10, "confidence": 0.0}, "confidence"),
        ({"k": 0, "n": 10, "confidence": float("nan")}, "confidence"),
        ({"k": 0, "n": 10, "alternative": "upper"}, "alternative"),
    ],
)
def test_cp_bad_inputs(kwargs, field):
    with pytest.raises(InvalidInput) as err:
        clopper_pearson_interval(**kwargs)
    assert err.value.field == field


# ----------------------------------------------------------------------------------------------
# Eq. (1): ε from rates


def test_epsilon_from_rates_values():
    assert epsilon_from_rates(0.01, 0.5) == pytest.approx(math.log(0.5 / 0.01))
    assert epsilon_from_rates(0.5, 0.01) == pytest.approx(math.log(0.5 / 0.01))  # two-sided
    assert epsilon_from_rates(0.01, 0.5, delta=0.1) == pytest.approx(math.log(0.4 / 0.01))
    assert epsilon_from_rates(0.5, 0.5) == 0.0  # chance
    assert epsilon_from_rates(0.9, 0.9) == 0.0  # worse than chance in both rates: nothing
    assert epsilon_from_rates(0.3, 0.6, delta=0.2) == 0.0  # FPR + FNR >= 1 - delta
    assert epsilon_from_rates(0.0, 0.5) == math.inf


def test_epsilon_monotone_in_rates_and_delta():
    grid = np.linspace(0.001, 0.999, 60)
    fpr, fnr = np.meshgrid(grid, grid, indexing="ij")
    for delta in (0.0, 1e-5, 0.05):
        eps = epsilon_from_rates(fpr, fnr, delta)
        assert eps.shape == fpr.shape and np.all(eps >= 0)
        assert np.all(np.diff(eps, axis=0) <= 1e-12)  # non-increasing in FPR
        assert np.all(np.diff(eps, axis=1) <= 1e-12)  # non-increasing in FNR
    assert np.all(epsilon_from_rates(fpr, fnr, 0.05) <= epsilon_from_rates(fpr, fnr, 0.0))


@pytest.mark.parametrize(
    ("args", "field"),
    [
        ((-0.1, 0.5), "fpr_upper"),
        ((0.1, 1.5), "fnr_upper"),
        ((float("nan"), 0.5), "fpr_upper"),
        ((0.1, 0.5, 1.0), "delta"),
        ((0.1, 0.5, -1e-9), "delta"),
    ],
)
def test_epsilon_from_rates_bad_inputs(args, field):
    with pytest.raises(InvalidInput) as err:
        epsilon_from_rates(*args)
    assert err.value.field == field


# ----------------------------------------------------------------------------------------------
# Ceiling


@pytest.mark.parametrize(
    ("total", "expected"),
    # anchors-auditing.md §2.1 (alpha = 0.05, delta = 1e-5; the header counts both sides).
    [(100, 2.57), (200, 3.28), (500, 4.21), (1000, 4.91), (2000, 5.60), (10_000, 7.21), (100_000, 9.51)],
)
def test_ceiling_anchor_table(total, expected):
    value = epsilon_ceiling(total // 2, delta=1e-5, confidence=0.95)
    assert value == pytest.approx(expected, abs=0.005)


def test_ceiling_closed_form_and_monotone():
    for n in (10, 333, 10_000):
        p = 1.0 - 0.025 ** (1.0 / n)
        assert epsilon_ceiling(n, 1e-5) == pytest.approx(math.log((1 - 1e-5 - p) / p), rel=1e-10)
    values = [epsilon_ceiling(n) for n in (10, 100, 1000, 10_000)]
    assert values == sorted(values)
    assert epsilon_ceiling(1000, n_comparisons=800) < epsilon_ceiling(1000)
    assert epsilon_ceiling((1000, 1000)) == epsilon_ceiling(1000)
    assert epsilon_ceiling((100, 1000)) < epsilon_ceiling(1000)
    for bad, field in [(0, "n_trials"), ((10,), "n_trials"), (2.5, "n_trials")]:
        with pytest.raises(InvalidInput) as err:
            epsilon_ceiling(bad)
        assert err.value.field == field
    with pytest.raises(InvalidInput) as err:
        epsilon_ceiling(10, n_comparisons=0)
    assert err.value.field == "n_comparisons"


# ----------------------------------------------------------------------------------------------
# The bound: structure and exact cases


@pytest.mark.parametrize("split", SPLITS)
@pytest.mark.parametrize("flip", [False, True])
def test_perfect_separation_gives_exactly_the_ceiling(split, flip):
    rng = np.random.default_rng(3)
    high, low = rng.uniform(2.0, 3.0, 101), rng.uniform(0.0, 1.0, 100)
    u, r = (low, high) if flip else (high, low)
    b = clopper_pearson_epsilon(u, r, delta=1e-5, split=split)
    assert b.direction == ("R>U" if flip else "U>R")
    assert b.epsilon_lower == b.ceiling
    n_eval = b.n_evaluated
    if split == "half":
        assert n_eval == (u.size - u.size // 2, r.size - r.size // 2)
        assert b.ceiling == epsilon_ceiling(n_eval, 1e-5, 0.95)
    elif split == "bonferroni":
        assert n_eval == (u.size, r.size)
        assert b.ceiling == epsilon_ceiling(n_eval, 1e-5, 0.95, n_comparisons=2 * b.n_thresholds)
    else:  # a perfect separation leaves a single test on the Pareto frontier
        assert n_eval == (u.size, r.size) and b.n_tests == 1
        assert b.ceiling == epsilon_ceiling(n_eval, 1e-5, 0.95)
    assert b.counts.fp == b.counts.fn == 0
    assert 1.0 < b.threshold < 2.0


@pytest.mark.parametrize("split", SPLITS)
def test_bound_fields_are_consistent(split):
    rng = np.random.default_rng(11)
    u, r = rng.normal(1.0, 1.0, 3001), rng.normal(0.0, 1.0, 2000)
    b = clopper_pearson_epsilon(u, r, delta=1e-5, confidence=0.9, split=split, seed=5)
    assert isinstance(b, EpsilonBound) and isinstance(b.counts, Counts)
    assert b.kind == "bound" and b.method == f"clopper-pearson/{split}"
    assert b.n_trials == (3001, 2000)
    tp, fp, tn, fn = b.counts
    assert (tp + fn, fp + tn) == b.n_evaluated
    if split == "half":
        assert b.n_evaluated == (1501, 1000) and b.seed == 5 and b.n_tests == 1
        assert b.rate_confidence == pytest.approx(1 - 0.1 / 2)
    elif split == "bonferroni":
        assert b.n_evaluated == b.n_trials and b.seed is None
        assert b.n_thresholds == 200 and b.n_tests == 400
        assert b.rate_confidence == pytest.approx(1 - 0.1 / (4 * b.n_thresholds))
    else:
        assert b.n_evaluated == b.n_trials and b.seed is None
        assert 1 <= b.n_thresholds <= b.n_tests < 100
        assert b.rate_confidence == pytest.approx(1 - 0.1 / (2 * b.n_tests))
    # The reported numbers reproduce the bound from the public pieces.
    _, fpr_u = clopper_pearson_interval(fp, fp + tn, b.rate_confidence, alternative="less")
    _, fnr_u = clopper_pearson_interval(fn, fn + tp, b.rate_confidence, alternative="less")
    assert (b.fpr_upper, b.fnr_upper) == (pytest.approx(fpr_u), pytest.approx(fnr_u))
    assert b.epsilon_lower == pytest.approx(epsilon_from_rates(fpr_u, fnr_u, 1e-5))
    assert 0.0 < b.epsilon_lower < b.ceiling
    assert b.direction == "U>R"
    assert b.confidence == 0.9 and b.delta == 1e-5
    with pytest.raises(dataclasses.FrozenInstanceError):
        b.epsilon_lower = 99.0  # type: ignore[misc]
    # Deterministic given the seed.
    again = clopper_pearson_epsilon(u, r, delta=1e-5, confidence=0.9, split=split, seed=5)
    assert again == b


@pytest.mark.parametrize("split", SPLITS)
def test_direction_r_greater_than_u_is_detected(split):
    # "Over-unlearning": U scores far *below* R (AUC << 0.5) is leakage too.
    rng = np.random.default_rng(12)
    b = clopper_pearson_epsilon(rng.normal(-1.5, 1, 2000), rng.normal(0, 1, 2000), delta=1e-5, split=split)
    assert b.direction == "R>U" and b.epsilon_lower > 0.5


def test_delta_is_carried_through():
    rng = np.random.default_rng(13)
    u, r = rng.normal(2.0, 1.0, 2000), rng.normal(0.0, 1.0, 2000)
    b0 = clopper_pearson_epsilon(u, r, delta=0.0, split="bonferroni")
    b1 = clopper_pearson_epsilon(u, r, delta=0.05, split="bonferroni")
    assert b1.epsilon_lower < b0.epsilon_lower
    assert b1.ceiling < b0.ceiling


def test_pre_registered_threshold():
    rng = np.random.default_rng(14)
    u, r = rng.normal(2.0, 1.0, 1000), rng.normal(0.0, 1.0, 1000)
    b = clopper_pearson_epsilon(u, r, split="bonferroni", thresholds=[1.0])
    assert b.threshold == 1.0 and b.n_thresholds == 1
    assert b.rate_confidence == pytest.approx(1 - 0.05 / 4)  # two directions, two rates
    assert b.counts == Counts(
        tp=int(np.sum(u > 1)), fp=int(np.sum(r > 1)), tn=int(np.sum(r <= 1)), fn=int(np.sum(u <= 1))
    )


def test_all_scores_tied_gives_zero():
    b = clopper_pearson_epsilon(np.zeros(50), np.zeros(50))
    assert b.epsilon_lower == 0.0 and np.isfinite(b.threshold)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"scores_u": [0.1, float("nan"), 0.3]}, "scores_u"),
        ({"scores_r": [0.1, float("inf")]}, "scores_r"),
        ({"scores_u": []}, "scores_u"),
        ({"scores_r": np.zeros((3, 2))}, "scores_r"),
        ({"scores_u": [1.0], "split": "half"}, "scores_u"),  # a split needs two per world
        ({"confidence": 0.0}, "confidence"),
        ({"confidence": 1.0}, "confidence"),
        ({"confidence": 95}, "confidence"),
        ({"delta": 1.0}, "delta"),
        ({"delta": -0.01}, "delta"),
        ({"delta": float("nan")}, "delta"),
        ({"split": "thirds"}, "split"),
        ({"n_thresholds": 0}, "n_thresholds"),
        ({"thresholds": []}, "thresholds"),
        ({"thresholds": [float("nan")]}, "thresholds"),
        ({"seed": 1.5}, "seed"),
        ({"seed": -1}, "seed"),
    ],
)
def test_bound_bad_inputs(kwargs, field):
    args = {"scores_u": np.arange(10.0), "scores_r": np.arange(10.0) - 3}
    args.update(kwargs)
    u, r = args.pop("scores_u"), args.pop("scores_r")
    with pytest.raises(InvalidInput) as err:
        clopper_pearson_epsilon(u, r, **args)
    assert err.value.field == field


# ----------------------------------------------------------------------------------------------
# Validity by simulation


def gaussian_mechanism(epsilon: float, delta: float):
    """Scores of the bare Gaussian mechanism, exactly (epsilon, delta)-DP: N(mu, 1) vs N(0, 1).

    mu = Δ/σ with σ from the exact analytic-Gaussian calibration (Balle & Wang 2018, Thm 8).
    """
    mu = 1.0 / sigma_for(epsilon, delta, 1.0)
    return lambda rng, n: (rng.normal(mu, 1.0, n), rng.normal(0.0, 1.0, n))


def laplace_mechanism(b: float):
    """Laplace(1, b) vs Laplace(0, b): sensitivity 1, exactly (1/b, 0)-DP."""
    return lambda rng, n: (rng.laplace(1.0, b, n), rng.laplace(0.0, b, n))


def randomized_response(epsilon: float):
    """Binary randomized response: the DP inequalities are *tight* at its one threshold."""
    p = math.exp(epsilon) / (1.0 + math.exp(epsilon))
    return lambda rng, n: ((rng.random(n) < p).astype(float), (rng.random(n) < 1 - p).astype(float))


VALIDITY_CASES = [
    # (name, sampler, true epsilon, delta)
    ("gaussian-eps1-delta1e-5", gaussian_mechanism(1.0, 1e-5), 1.0, 1e-5),
    ("gaussian-eps2-delta1e-2", gaussian_mechanism(2.0, 1e-2), 2.0, 1e-2),
    ("laplace-eps1", laplace_mechanism(1.0), 1.0, 0.0),
    ("laplace-eps2", laplace_mechanism(0.5), 2.0, 0.0),
    ("randomized-response-eps2", randomized_response(2.0), 2.0, 0.0),
]
REPS = 200
N_TRIALS = 2000


#: Every case under every strategy. Pareto-Bonferroni on the continuous mechanisms (about a second
#: each: ~20 thresholds per repetition) is marked slow; the fast lane keeps its randomized-response
#: case here and its Laplace and identical-distribution cases in test_thresholds.py.
VALIDITY_PARAMS = [
    pytest.param(
        *c,
        split,
        id=f"{c[0]}-{split}",
        marks=[pytest.mark.slow] if split == "pareto-bonferroni" and c[0] != "randomized-response-eps2" else [],
    )
    for c in VALIDITY_CASES
    for split in SPLITS
]


@pytest.mark.parametrize(("name", "sample", "true_eps", "delta", "split"), VALIDITY_PARAMS)
def test_bound_exceeds_true_epsilon_at_most_5_percent(name, sample, true_eps, delta, split):
    values = np.empty(REPS)
    for i in range(REPS):
        rng = np.random.default_rng([17, i])
        u, r = sample(rng, N_TRIALS)
        values[i] = clopper_pearson_epsilon(u, r, delta=delta, split=split, seed=i).epsilon_lower
    exceed = int(np.sum(values > true_eps))
    print(f"{name} [{split}]: {exceed}/{REPS} exceed, mean bound {values.mean():.3f}")
    assert exceed <= allowed_exceedances(REPS)
    assert values.mean() > 0.05 * true_eps  # the simulation is not vacuous: the bound has power


def test_negative_control_point_estimate_is_not_a_bound():
    # The same harness on the raw point estimate (max over thresholds of Eq. (1) with the
    # observed rates, as uncorrected tools report it) fails by a wide margin: the check has
    # teeth. anchors-auditing.md §2.12 measured ~95 % exceedance on Laplace.
    sample = laplace_mechanism(1.0)
    exceed = 0
    for i in range(100):
        u, r = sample(np.random.default_rng([18, i]), N_TRIALS)
        t = np.quantile(np.concatenate([u, r]), np.linspace(0.005, 0.995, 200))
        fpr = (r[:, None] > t).mean(axis=0)
        fnr = (u[:, None] <= t).mean(axis=0)
        exceed += bool(np.max(epsilon_from_rates(fpr, fnr)) > 1.0)
    assert exceed > allowed_exceedances(100)
    assert exceed >= 50


@pytest.mark.parametrize("split", SPLITS)
def test_identical_distributions_give_zero(split):
    # True epsilon is 0: any positive bound is an exceedance.
    zeros = 0
    for i in range(REPS):
        rng = np.random.default_rng([19, i])
        u, r = rng.normal(size=1000), rng.normal(size=1000)
        b = clopper_pearson_epsilon(u, r, split=split, seed=i)
        zeros += b.epsilon_lower == 0.0
    assert zeros >= 0.95 * REPS


# ----------------------------------------------------------------------------------------------
# Power


@pytest.fixture(scope="module")
def gaussian_1e5():
    """Bare Gaussian mechanism, true ε = 1 at δ = 1e-5, 10⁵ trials per world.

    δ = 1e-5 rather than 0: a Gaussian mechanism is not (ε, 0)-DP for any finite ε, so "true
    ε = 1" only has a meaning at some δ > 0, and the bound must be computed at that same δ.
    """
    rng = np.random.default_rng(2024)
    return gaussian_mechanism(1.0, 1e-5)(rng, 100_000)


@pytest.mark.parametrize("split", SPLITS)
def test_power_gaussian_eps1_1e5_trials(gaussian_1e5, split):
    u, r = gaussian_1e5
    b = clopper_pearson_epsilon(u, r, delta=1e-5, split=split, seed=0)
    print(f"power [{split}]: {b.epsilon_lower:.3f} (ceiling {b.ceiling:.2f})")
    # anchors-auditing.md §2.12: 0.49 ± 0.02 (Bonferroni), 0.53 ± 0.06 (split) at 10⁵.
    assert 0.4 <= b.epsilon_lower <= 1.0


# ----------------------------------------------------------------------------------------------
# GDP estimate


def test_gdp_estimate_recovers_mu():
    # This checks the point fit. The shape test in front of it refuses about one Gaussian draw
    # in twenty at its default 5 % level (its rates are checked in tests/test_thresholds.py);
    # at 1 % none of these three draws is refused.
    rng = np.random.default_rng(21)
    for mu in (0.5, 1.0, 2.0):
        g = gdp_epsilon_estimate(rng.normal(mu, 1, 20_000), rng.normal(0, 1, 20_000), 1e-5, gof_level=0.01)
        assert isinstance(g, GDPEstimate) and g.kind == "estimate" and g.gof == "accepted"
        assert g.mu == pytest.approx(mu, abs=0.05)
        assert g.direction == "U>R" and g.n_points > 100
        assert g.epsilon_estimate == pytest.approx(epsilon_for(1.0 / g.mu, 1e-5, 1.0))
        assert delta_for(1.0 / g.mu, g.epsilon_estimate, 1.0) == pytest.approx(1e-5, rel=1e-6)


def test_gdp_estimate_close_to_true_epsilon_where_bound_is_loose(gaussian_1e5):
    u, r = gaussian_1e5
    g = gdp_epsilon_estimate(u, r, 1e-5)
    assert g.mu == pytest.approx(1.0 / sigma_for(1.0, 1e-5, 1.0), rel=0.05)
    assert g.epsilon_estimate == pytest.approx(1.0, abs=0.1)
    assert "not a bound" in g.method


def test_gdp_estimate_direction_delta_zero_and_errors():
    rng = np.random.default_rng(22)
    u, r = rng.normal(0, 1, 5000), rng.normal(1, 1, 5000)
    g = gdp_epsilon_estimate(u, r, 1e-5)
    assert g.direction == "R>U" and g.mu == pytest.approx(1.0, abs=0.08)
    assert gdp_epsilon_estimate(u, r, 0.0).epsilon_estimate == math.inf
    same = gdp_epsilon_estimate(rng.normal(size=5000), rng.normal(size=5000), 1e-5)
    assert same.mu < 0.1
    with pytest.raises(InvalidInput) as err:
        gdp_epsilon_estimate(u, r, 1e-5, min_count=0)
    assert err.value.field == "min_count"
    with pytest.raises(InvalidInput) as err:
        gdp_epsilon_estimate(u, np.append(r, np.nan), 1e-5)
    assert err.value.field == "scores_r"
    with pytest.raises(InvalidInput) as err:
        gdp_epsilon_estimate(u, r, 1.0)
    assert err.value.field == "delta"


def test_gdp_estimate_small_and_separated_samples():
    rng = np.random.default_rng(23)
    # Small audits get an automatic min_count (5 % of the smaller world) rather than an error,
    # but below 500 trials per world the Gaussian shape cannot be tested: the fit is formed and
    # the reading refused.
    g = gdp_epsilon_estimate(rng.normal(1, 1, 200), rng.normal(0, 1, 200), 1e-5)
    assert g.min_count == 10 and g.n_points > 0 and g.gof == "untestable"
    assert math.isnan(g.mu) and math.isnan(g.mu_lower) and "too few trials" in g.note
    g = gdp_epsilon_estimate(rng.normal(1, 1, 600), rng.normal(0, 1, 600), 1e-5)
    assert g.min_count == 30 and g.n_points > 0 and 0.5 < g.mu < 1.5
    g = gdp_epsilon_estimate(rng.normal(1, 1, 5000), rng.normal(0, 1, 5000), 1e-5)
    assert g.min_count == 50
    # Perfect separation: every threshold has an empty cell, the fit is undefined -> NaN + note.
    g = gdp_epsilon_estimate(rng.uniform(2, 3, 500), rng.uniform(0, 1, 500), 1e-5)
    assert g.n_points == 0 and math.isnan(g.mu) and math.isnan(g.epsilon_estimate)
    assert "undefined" in g.note


def test_to_dict_is_json_ready():
    import json

    rng = np.random.default_rng(24)
    u, r = rng.normal(1, 1, 500), rng.normal(0, 1, 500)
    d = clopper_pearson_epsilon(u, r, delta=1e-5).to_dict()
    assert d["counts"] == clopper_pearson_epsilon(u, r, delta=1e-5).counts._asdict()
    assert d["kind"] == "bound" and d["n_trials"] == [500, 500]
    json.dumps(d)
    g = gdp_epsilon_estimate(u, r, 1e-5).to_dict()
    assert g["kind"] == "estimate"
    json.dumps(g)


def test_every_gap_as_candidate():
    rng = np.random.default_rng(25)
    u, r = rng.normal(1, 1, 300), rng.normal(0, 1, 300)
    b = clopper_pearson_epsilon(u, r, split="bonferroni", n_thresholds=None)
    assert b.n_thresholds == 599  # 600 distinct scores
    assert b.rate_confidence == pytest.approx(1 - 0.05 / (4 * 599))
    assert clopper_pearson_epsilon(u, r, split="bonferroni", n_thresholds=50).n_thresholds == 50
