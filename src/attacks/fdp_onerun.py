"""f-DP one-run analysis for Gaussian hypotheses: a μ lower bound from one run's guesses or scores.

A Gaussian output-noise certificate is a Gaussian mechanism: if its sensitivity bound holds, the
release is μ-GDP (Dong, Roth & Su 2019) with μ = Δ/σ ≤ μ(ε, δ), the μ whose trade-off curve
G_μ(x) = Φ(Φ⁻¹(1 − x) − μ) passes through the certified (ε, δ) (:func:`gdp_mu`; the analytic
calibration meets it with equality, the classic one with room to spare). Testing the whole curve
instead of one (ε, δ) point is what makes f-DP auditing tighter (Mahloujifar, Melis & Chaudhuri
2025). Two analyses are offered; both return a μ lower bound at confidence 1 − α, reported as the
ε of that μ at the audit's δ (:func:`gdp_epsilon`; ε is increasing in μ, so "ε_LB > certified ε"
is "μ_LB > μ(ε, δ)").

**Guesses (Mahloujifar et al. 2025).** S ∈ {−1, +1}^m are fair coins, the mechanism is μ-GDP in
each coordinate of S, and an auditor makes k guesses from the output, v of them right. The paper
bounds the probability of v right guesses by a recursion over the trade-off curve; its code
checks the claim with the recursion it names ``audit_rh_with_cap``, which :func:`gdp_falsified`
follows (read from jax_privacy's ``_epsilon_one_run_fdp``, a behavioural reference: nothing is
vendored). With r₀ = α·v/m and h₀ = α·(k − v)/m, for i = v − 1, …, 0::

    h ← max(h, G⁻(r)),   G⁻(x) = Φ(Φ⁻¹(x) − μ)   (the inverse of the μ-GDP "blow-up")
    r ← min(1, r + i/(k − i) · (h_new − h_old))

and the claim "μ-GDP" is falsified at level α when r + h > k/m at the end. The paper's theorem and
algorithm numbers could not be read here (only its abstract was reachable from this machine), so
this module cites the procedure by the name its authors' code and jax_privacy give it, and its
validity is checked by simulation instead (:func:`gdp_canary_lower_bounds`, tests and
``bench/bench_onerun_whitebox.py``): on canaries that are exactly μ-GDP, μ_LB exceeded μ in at
most 5 % of repetitions. Steinke, Nasr & Jagielski's (ε, δ) bound (:mod:`attacks.onerun`) is the
cross-check. jax_privacy supports one-sided guesses only (all +1); in a paired game a −1 guess on
pair i is a +1 guess on the pair with its members swapped, a relabelling that keeps S uniform and
the mechanism μ-GDP in each coordinate, so k₊ + k₋ guesses count as k one-sided ones.

**One test against a common reference** (:func:`reference_test_mu`). When the hypothesis is
that the release P is μ-GDP *from one reference R the auditor can sample from in its head* (the
deletion game's A(D) + N(0, σ²I), :mod:`audit.onerun_whitebox`), any statistic whose distribution
under R is known gives a one-run test. If a statistic's p-value under R is p₀ (P_R[E] = p₀ for the
event E "at least as extreme"), then T(R, P) ≥ G_μ gives 1 − P[E] ≥ G_μ(p₀), i.e.

    P_P[E] ≤ 1 − G_μ(p₀) = Φ(Φ⁻¹(p₀) + μ),

so "μ-GDP" is rejected at level α when Φ⁻¹(p₀) + μ ≤ Φ⁻¹(α), and μ_LB = Φ⁻¹(α) − Φ⁻¹(p₀)
(clipped at 0) is a (1 − α)-confidence lower bound. (For a p-value whose level sets depend on
secrets S drawn independently of R, average over S and use that 1 − G_μ is concave: the bound
holds with p₀ the p-value's distribution under R × S.) It has no ceiling: a release far enough
from R, in units of σ, refutes any μ. :func:`max_alignment_log_p` is the statistic the white-box
game uses (the largest |z| over canary directions, each N(0, 1) under R; a union bound).

References
----------
.. [1] S. Mahloujifar, L. Melis and K. Chaudhuri, "Auditing f-Differential Privacy in One Run",
   ICML 2025 (arXiv:2410.22235).
.. [2] google-deepmind/jax_privacy ``auditing.py`` (``_epsilon_one_run_fdp``), read as a
   behavioural reference.
.. [3] J. Dong, A. Roth and W. Su, "Gaussian Differential Privacy", JRSS B 2022.
.. [4] T. Steinke, M. Nasr and M. Jagielski, "Privacy Auditing with One (1) Training Run",
   NeurIPS 2023 (the cross-check, :mod:`attacks.onerun`).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import log_ndtr, ndtr, ndtri, ndtri_exp

from certify.errors import PROBABILITY, Integer, InvalidInput, Real, require
from certify.mechanisms import epsilon_for, sigma_for

__all__ = [
    "fdp_one_run_ceiling",
    "fdp_one_run_mu",
    "gdp_canary_lower_bounds",
    "gdp_epsilon",
    "gdp_falsified",
    "gdp_mu",
    "max_alignment_log_p",
    "reference_test_mu",
]

#: The largest μ the scans look at: G_μ⁻ underflows to 0 in double precision long before.
_MU_MAX = 64.0
_SCAN_POINTS = 65
_MU = Real(ge=0)


def gdp_mu(epsilon: float, delta: float) -> float:
    """μ(ε, δ): the μ whose GDP curve passes through (ε, δ) (the analytic Gaussian mechanism's
    Δ/σ at this (ε, δ))."""
    return 1.0 / sigma_for(Real(gt=0).check("epsilon", epsilon), PROBABILITY.check("delta", delta), 1.0)


def gdp_epsilon(mu: float, delta: float) -> float:
    """The ε at δ of μ-GDP (0 for μ = 0; increasing in μ)."""
    mu = _MU.check("mu", mu)
    return 0.0 if mu == 0 else epsilon_for(1.0, PROBABILITY.check("delta", delta), mu)


def _counts(m: object, k: object, v: object) -> tuple[int, int, int]:
    m_i = Integer(1).check("m", m)
    k_i = require(Integer(1, m_i), "k", k, f"an integer in [1, m] (m = {m_i}): the number of guesses")
    v_i = require(Integer(0, k_i), "v", v, f"an integer in [0, k] (k = {k_i}): the number of correct guesses")
    return m_i, k_i, v_i


def _falsified(mu: float, m: int, k: int, v: int, alpha: float) -> bool:
    """The module docstring's recursion (no validation)."""
    if v == 0:
        return False
    r, h = alpha * v / m, alpha * (k - v) / m
    for i in range(v - 1, -1, -1):
        h_new = max(h, float(ndtr(ndtri(r) - mu)))
        if h_new == h:  # neither h nor r can change again
            break
        r, h = min(r + i / (k - i) * (h_new - h), 1.0), h_new
    return r + h > k / m


def gdp_falsified(mu: float, m: int, k: int, v: int, *, confidence: float = 0.95) -> bool:
    """Whether v right guesses out of k, with m canaries, reject "μ-GDP in each coordinate of S"
    at level 1 − ``confidence`` (Mahloujifar et al.'s recursion, module docstring)."""
    m_i, k_i, v_i = _counts(m, k, v)
    return _falsified(_MU.check("mu", mu), m_i, k_i, v_i, 1.0 - PROBABILITY.check("confidence", confidence))


def _first_crossing(m: int, k: int, v: int, alpha: float) -> float:
    """sup{μ : "μ'-GDP" is falsified for every μ' in (0, μ]}: a scan, then bisection in the first
    bracket (the "first crossing" of :mod:`attacks.onerun`, which needs no monotonicity)."""
    grid = np.linspace(0.0, _MU_MAX, _SCAN_POINTS)[1:]
    lo = 0.0
    for hi in grid:
        if not _falsified(float(hi), m, k, v, alpha):
            break
        lo = float(hi)
    else:
        return _MU_MAX
    if lo == 0.0 and not _falsified(1e-9, m, k, v, alpha):
        return 0.0
    hi = float(hi)
    while hi - lo > 1e-9 * max(1.0, hi):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if _falsified(mid, m, k, v, alpha) else (lo, mid)
    return lo


def fdp_one_run_mu(m: int, k: int, v: int, *, confidence: float = 0.95, chained: bool = False) -> float:
    """The (1 − α)-confidence lower bound on μ from v right guesses out of k with m canaries.

    ``chained=True`` tests "every output is μ-GDP from one common reference": by the triangle
    inequality for trade-off functions (T(P, Q) ≥ g(1 − f(x)) when T(P, R) ≥ f and T(R, Q) ≥ g),
    two outputs are then G_μ(1 − G_μ(x)) = G_{2μ}(x), exactly 2μ-GDP, so the pair bound is halved.
    """
    m_i, k_i, v_i = _counts(m, k, v)
    if not isinstance(chained, (bool, np.bool_)):
        raise InvalidInput("chained", "True or False", chained)
    mu = _first_crossing(m_i, k_i, v_i, 1.0 - PROBABILITY.check("confidence", confidence))
    return mu / 2.0 if chained else mu


def fdp_one_run_ceiling(m: int, k: int, *, confidence: float = 0.95, chained: bool = False) -> float:
    """The largest μ_LB k guesses can give (all right): known before the run."""
    return fdp_one_run_mu(m, k, Integer(1).check("k", k), confidence=confidence, chained=chained)


def reference_test_mu(log_p0: float, *, confidence: float = 0.95) -> float:
    """μ_LB = max(0, Φ⁻¹(α) − Φ⁻¹(p₀)) from a statistic's p-value p₀ under the reference (given as
    log p₀, so that p-values far below 1e-308 keep their value; module docstring)."""
    try:
        lp = float(log_p0)
    except (TypeError, ValueError):
        raise InvalidInput("log_p0", "a number <= 0 (the log of a p-value)", log_p0) from None
    if math.isnan(lp) or lp > 0:
        raise InvalidInput("log_p0", "a number <= 0 (the log of a p-value)", log_p0)
    alpha = 1.0 - PROBABILITY.check("confidence", confidence)
    if lp == -math.inf:
        return math.inf
    return max(0.0, float(ndtri(alpha)) - float(ndtri_exp(lp)))


def max_alignment_log_p(z: object) -> float:
    """log p₀ of T = max_j |z_j| for n statistics each N(0, 1) under the reference (dependent or
    not): P[T ≥ t] ≤ min(1, 2n·Φ(−t)) by the union bound."""
    arr = np.asarray(z, dtype=float)
    if arr.ndim != 1 or arr.size < 1 or not np.all(np.isfinite(arr)):
        raise InvalidInput("z", "a 1-D array of finite standardized scores", f"array of shape {arr.shape}")
    t = float(np.max(np.abs(arr)))
    return min(0.0, math.log(2.0 * arr.size) + float(log_ndtr(-t)))


def gdp_canary_lower_bounds(
    m: int,
    mu: float,
    k: int,
    *,
    repetitions: int,
    confidence: float = 0.95,
    seed: int = 0,
) -> np.ndarray:
    """μ_LB of ``repetitions`` one-run audits of m canaries that are exactly μ-GDP each.

    Canary i's score is μ·[S_i = +1] + N(0, 1) (a Gaussian mechanism with sensitivity μ and
    σ = 1 in each coordinate: exactly μ-GDP, and the score is the optimal test); the k highest
    scores are guessed +1. Repetition j draws S and the noise from
    ``SeedSequence(seed, spawn_key=(j,))``. The fraction of bounds above μ must be
    ≤ 1 − confidence up to sampling error.
    """
    m_i = Integer(1).check("m", m)
    mu = Real(gt=0).check("mu", mu)
    k_i = require(Integer(1, m_i), "k", k, f"an integer in [1, m] (m = {m_i})")
    reps = Integer(1).check("repetitions", repetitions)
    alpha = 1.0 - PROBABILITY.check("confidence", confidence)
    cache: dict[int, float] = {}
    out = np.empty(reps)
    for j in range(reps):
        rng = np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=(j,)))
        secrets = np.where(rng.random(m_i) < 0.5, 1, -1)
        scores = mu * (secrets == 1) + rng.standard_normal(m_i)
        top = np.argsort(scores, kind="stable")[m_i - k_i :]
        v = int(np.count_nonzero(secrets[top] == 1))
        if v not in cache:
            cache[v] = _first_crossing(m_i, k_i, v, alpha)
        out[j] = cache[v]
    return out
