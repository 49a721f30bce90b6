"""attacks.gdp.gdp_bound: the GDP bound, valid where the release is the Gaussian mechanism (noise
mode), and the attack stage's use of it to refute a certificate.

Exceedance tolerance as in ``tests/test_epsilon.py``: a valid 95 % bound exceeds the truth in at
most Binomial(R, 0.05) of R repetitions; we allow the count such a procedure reaches with
probability 99 %. The sizes here are small (the fast lane); ``bench/bench_gdp_bound.py`` repeats
them at 200 repetitions of 1,000 trials per world.
"""

from __future__ import annotations

import types

import numpy as np
import pytest
from scipy.optimize import brentq
from scipy.stats import binom

from attacks.epsilon import clopper_pearson_epsilon
from attacks.gdp import GAUSSIAN_HYPOTHESIS, GAUSSIAN_RELEASE, gdp_bound
from attacks.registry import get_attack
from audit.attacking import _comparison, _result
from audit.trials import GAUSSIAN_RELEASE_MODES, MODES
from certify.errors import InvalidInput
from certify.mechanisms import epsilon_for

DELTA = 1e-5
MU3 = brentq(lambda m: epsilon_for(1.0 / m, DELTA, 1.0) - 3.0, 0.05, 10.0)  # 0.719: realized ε = 3


def _exceedances(draw, truth: float, reps: int, gaussian: bool = True) -> int:
    return sum(
        gdp_bound(*draw(np.random.default_rng([rep, 28])), DELTA, gaussian_release=gaussian, seed=rep).epsilon_lower
        > truth
        for rep in range(reps)
    )


def test_gdp_bound_is_valid_on_a_gaussian_release_whatever_the_score_shape():
    """True ε = 3: Gaussian scores, and a randomised post-processing of the same Gaussian release
    whose scores are a two-component mixture in each world (the argument does not need Gaussian scores)."""
    n, reps = 300, 20
    allowed = int(binom.ppf(0.99, reps, 0.05))

    def gaussian(g):
        return g.normal(MU3, 1, n), g.normal(0, 1, n)

    def mixture(g):
        xu, xr = gaussian(g)
        return xu + 3.0 * g.integers(0, 2, n), xr + 3.0 * g.integers(0, 2, n)

    assert _exceedances(gaussian, 3.0, reps) <= allowed
    assert _exceedances(mixture, 3.0, reps) <= allowed


def test_gdp_bound_is_not_a_bound_on_laplace_scores():
    """The harness can fail: on a Laplace pair (true ε = 1) the same number exceeds the truth in
    most repetitions, which is why outside noise mode it is only an estimate."""
    n, reps = 300, 10
    exceed = _exceedances(lambda g: (g.laplace(1.0, 1.0, n), g.laplace(0.0, 1.0, n)), 1.0, reps, gaussian=False)
    assert exceed > binom.ppf(0.99, reps, 0.05)


def test_gdp_bound_labels_and_inputs():
    g = np.random.default_rng(0)
    su, sr = g.normal(MU3, 1, 500), g.normal(0, 1, 500)
    valid = gdp_bound(su, sr, DELTA, gaussian_release=True)
    estimate = gdp_bound(su, sr, DELTA, gaussian_release=False)
    assert (valid.kind, valid.basis) == ("bound", GAUSSIAN_RELEASE)
    assert (estimate.kind, estimate.basis) == ("estimate", GAUSSIAN_HYPOTHESIS)
    assert valid.epsilon_lower == estimate.epsilon_lower and 0 < valid.epsilon_lower < 3.0 < valid.ceiling
    with pytest.raises(InvalidInput, match="gaussian_release"):
        gdp_bound(su, sr, DELTA, gaussian_release="yes")  # type: ignore[arg-type]
    assert GAUSSIAN_RELEASE_MODES == {"noise"} and GAUSSIAN_RELEASE_MODES <= set(MODES)


def test_noise_mode_gdp_bound_refutes_a_certificate_the_cp_bound_cannot():
    """The planted realized-ε-3 release against a certificate of ε = 1 at 300 trials per world:
    the Clopper–Pearson bound stays below 1, the GDP bound (valid in noise mode) refutes it; in
    retrain mode the same scores refute nothing and no GDP bound is reported."""
    g = np.random.default_rng(3)
    su, sr = g.normal(MU3, 1, 300), g.normal(0, 1, 300)
    assert clopper_pearson_epsilon(su, sr, delta=DELTA).epsilon_lower < 1.0
    setup = types.SimpleNamespace(certified_epsilon=1.0, realized_epsilon=3.0)
    cls = get_attack("whitebox")
    for gaussian in (True, False):
        result = _result(cls, su, sr, {}, delta=DELTA, confidence=0.95, seed=0, target=1.0, gaussian_release=gaussian)
        cmp = _comparison(setup, {"whitebox": result}, gaussian)  # type: ignore[arg-type]
        if gaussian:
            assert result.bound.gdp_bound.kind == "bound" and result.bound.gdp_bound.epsilon_lower > 1.0
            assert cmp.certificate_violated and cmp.violated_by == "gdp-bound"
            assert cmp.best_gdp_bound_attack == "whitebox"
        else:
            assert result.bound.gdp_bound is None and cmp.gdp_bound_epsilon_lower is None
            assert not cmp.certificate_violated and cmp.violated_by is None


def test_direction_findings_count_the_gdp_bound_only_where_it_is_valid():
    from audit.findings import direction_findings

    est = types.SimpleNamespace(
        direction="under-unlearning", auroc=types.SimpleNamespace(point=0.8, lower=0.7, upper=0.9)
    )

    def attacks(kind: str):
        bound = types.SimpleNamespace(epsilon_lower=0.5, gdp_bound=types.SimpleNamespace(kind=kind, epsilon_lower=2.0))
        return types.SimpleNamespace(
            comparison=types.SimpleNamespace(certified_epsilon=1.0),
            attacks={"whitebox": types.SimpleNamespace(bound=bound, estimates=est)},
        )

    assert [f["code"] for f in direction_findings(attacks("bound"))] == ["under-unlearning"]
    assert direction_findings(attacks("estimate")) == []
