"""One-run auditing (Steinke, Nasr & Jagielski 2023): an ε lower bound from one training run.

The multi-run audit (:mod:`attacks.epsilon`) needs one independently trained model per trial,
because Clopper–Pearson counts i.i.d. Bernoulli trials. Steinke, Nasr & Jagielski show that
*m canaries in one run* suffice when each canary's participation is an independent fair coin:

* draw secrets S ∈ {−1, +1}^m, i.i.d. uniform;
* run a mechanism M(S) once; from its output the auditor computes guesses
  T ∈ {−1, 0, +1}^m (0 = abstain) with exactly r = ‖T‖₁ non-zero entries;
* count the correct guesses W = #{i : T_i = S_i}.

**Theorem** (Steinke et al. 2023, Theorem 3.1 for δ = 0 and its δ > 0 extension, the
p-value implemented in jax_privacy ``auditing._one_run_p_value``). If M is (ε, δ)-DP with
respect to changing one coordinate of S, then for every v

    P[W ≥ v] ≤ p(ε, δ) = P[Bin(r, q) ≥ v] + 2mδ · max_{i=1..v} P[v−i ≤ Bin(r, q) < v] / i,

with q = e^ε / (1 + e^ε). So observing v correct guesses out of r rejects "M is (ε, δ)-DP"
at level α whenever p(ε, δ) ≤ α, and

    ε_LB = sup{ ε ≥ 0 : p(ε'', δ) ≤ α for every ε'' ∈ [0, ε] }

is a (1 − α)-confidence lower bound: if ε_LB > ε_true then p(ε_true, δ) ≤ α, an event of
probability ≤ α. (This "first crossing" definition needs no monotonicity of p in ε; p is
non-decreasing in ε for δ = 0, and numerically so for δ > 0 in every case the tests scan, where
it coincides with "the largest ε with p ≤ α" of the paper.) :func:`one_run_epsilon` finds it by
a scan of 129 points up to the first ε with p > α, then Brent's method inside the first
bracket.

The δ term grows with m, the number of *canaries* (coordinates of S), not with r: many
canaries cost ceiling at fixed δ (the ``anchors-auditing.md`` §2.5 table; at m = 100 000 and
δ = 1e-5 even 1 000 correct guesses out of 1 000 give only 3.49).

Guesses and the abstention rule. The auditor guesses +1 for the k₊ highest scores and −1 for
the k₋ lowest, and abstains on the rest (ties broken by a seeded random key, independent of S).
(k₊, k₋) must be fixed *before* the labels are seen (``anchors-auditing.md`` §2.12, pitfall 1:
picking the best pair on the same data inflates the bound, as ml_privacy_meter's
``compute_abstain_attack_results`` does). Two valid rules are offered:

``"pre-registered"``
    One pair (k₊, k₋), chosen in advance; the bound is at level α.
``"bonferroni"``
    A small grid of G pairs, chosen in advance; each pair's bound is computed at level α/G and
    the largest is reported (a union bound: the probability that *any* of the G bounds exceeds
    the truth is ≤ G · α/G = α).

``chained=True`` tests a different hypothesis, the one an unlearning certificate gives (see
:mod:`audit.onerun`): every output M(S) is (ε, δ)-indistinguishable from *one common reference*
R. By the triangle inequality any two outputs are then (2ε, (1 + e^ε)δ)-indistinguishable, so
the p-value is p(2ε, (1 + e^ε)δ) and ε_LB lower-bounds the ε of that claim.

References
----------
.. [1] T. Steinke, M. Nasr and M. Jagielski, "Privacy Auditing with One (1) Training Run",
   NeurIPS 2023 (arXiv:2305.08846).
.. [2] google-deepmind/jax_privacy ``auditing.py`` (``_one_run_p_value``, ``_epsilon_one_run``),
   read as a behavioural reference; nothing is vendored.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from scipy.optimize import brentq
from scipy.special import expit

from certify.errors import PROBABILITY, Integer, InvalidInput, Real, require
from certify.mechanisms import epsilon_for, sigma_for

__all__ = [
    "RULES",
    "OneRunBound",
    "gaussian_epsilon",
    "gaussian_mechanism_lower_bounds",
    "guess_rule",
    "one_run_bound",
    "one_run_ceiling",
    "one_run_epsilon",
    "one_run_guesses",
    "one_run_p_value",
]

RULES: tuple[str, ...] = ("pre-registered", "bonferroni")
"""How the abstention rule (k₊, k₋) was fixed before the labels were seen."""

#: Points of the first-crossing scan, and the largest ε it looks at (expit(64) is 1 in double
#: precision, so p = 1 > α there for every v ≤ r).
_SCAN_POINTS = 129
_EPS_MAX = 64.0

_DELTA = Real(ge=0, lt=1)
_EPSILON = Real(ge=0)
_COUNT = Integer(0)


# ----------------------------------------------------------------------------------------------
# validation


def _m_r_v(m: object, r: object, v: object) -> tuple[int, int, int]:
    m_i = Integer(1).check("m", m)
    r_i = require(Integer(1, m_i), "r", r, f"an integer in [1, m] (m = {m_i}): the number of guesses")
    v_i = require(Integer(0, r_i), "v", v, f"an integer in [0, r] (r = {r_i}): the number of correct guesses")
    return m_i, r_i, v_i


def _confidence(value: object) -> float:
    return PROBABILITY.check("confidence", value)


# ----------------------------------------------------------------------------------------------
# the p-value and the bound


def _p_value(m: int, r: int, v: int, eps: float, delta: float) -> float:
    """p(ε, δ) of the module docstring (no validation)."""
    if v <= 0:
        return 1.0
    q = float(expit(eps))
    from scipy.stats import binom  # scipy.stats costs 0.5 s to import: only when bounding

    beta = float(binom.sf(v - 1, r, q))  # P[Bin(r, q) >= v]
    if delta <= 0.0:
        return min(beta, 1.0)
    pmf = binom.pmf(np.arange(v - 1, -1, -1), r, q)  # P[Bin = v-1], P[Bin = v-2], ..., P[Bin = 0]
    window = np.cumsum(pmf)  # window[i-1] = P[v-i <= Bin < v]
    tail = float(np.max(window / np.arange(1, v + 1)))
    return min(beta + 2.0 * m * delta * tail, 1.0)


def _pair_p_value(m: int, r: int, v: int, eps: float, delta: float, chained: bool) -> float:
    if not chained:
        return _p_value(m, r, v, eps, delta)
    return _p_value(m, r, v, 2.0 * eps, min(1.0, (1.0 + math.exp(min(eps, 700.0))) * delta))


def _first_crossing(m: int, r: int, v: int, delta: float, alpha: float, chained: bool) -> float:
    """sup{ε : p(ε'') ≤ α on [0, ε]} (the module docstring's ε_LB)."""

    def f(eps: float) -> float:
        return _pair_p_value(m, r, v, eps, delta, chained) - alpha

    if f(0.0) > 0:
        return 0.0
    hi = 1.0
    while f(hi) <= 0:
        if hi >= _EPS_MAX:  # unreachable for v <= r (p = 1 there); kept as a guard
            return _EPS_MAX
        hi *= 2.0
    grid = np.linspace(0.0, hi, _SCAN_POINTS)
    prev = 0.0
    for eps in grid[1:]:
        if f(float(eps)) > 0:
            if f(prev) == 0:
                return prev
            return float(brentq(f, prev, float(eps), xtol=1e-12, rtol=1e-12))
        prev = float(eps)
    return float(hi)  # pragma: no cover - f(hi) > 0 ends the scan above


def one_run_p_value(m: int, r: int, v: int, epsilon: float, delta: float) -> float:
    """Steinke et al.'s p-value: an upper bound on P[W ≥ v] when M is (ε, δ)-DP in S.

    Parameters
    ----------
    m:
        Number of canaries (coordinates of S), ≥ 1: the 2mδ term counts them.
    r:
        Number of guesses (non-abstentions), in [1, m].
    v:
        Number of correct guesses, in [0, r].
    epsilon, delta:
        The hypothesis: ε ≥ 0, δ ∈ [0, 1).

    Returns
    -------
    float
        p(ε, δ) = P[Bin(r, q) ≥ v] + 2mδ · max_{i=1..v} P[v−i ≤ Bin(r, q) < v]/i, capped at 1,
        with q = e^ε/(1+e^ε).
    """
    m_i, r_i, v_i = _m_r_v(m, r, v)
    return _p_value(m_i, r_i, v_i, _EPSILON.check("epsilon", epsilon), _DELTA.check("delta", delta))


def one_run_epsilon(m: int, r: int, v: int, delta: float, *, confidence: float = 0.95, chained: bool = False) -> float:
    """The (1 − α)-confidence lower bound ε_LB on ε from v correct guesses out of r.

    Parameters
    ----------
    m, r, v:
        Canaries, guesses, correct guesses (as in :func:`one_run_p_value`).
    delta:
        The δ of the hypothesis, in [0, 1).
    confidence:
        1 − α, in (0, 1).
    chained:
        False: the hypothesis "M is (ε, δ)-DP in S". True: "every output is (ε, δ)-close to one
        common reference", tested through the pairs' (2ε, (1+e^ε)δ) (module docstring).

    Returns
    -------
    float
        ε_LB ≥ 0; 0 when even ε = 0 is not rejected.
    """
    m_i, r_i, v_i = _m_r_v(m, r, v)
    if not isinstance(chained, (bool, np.bool_)):
        raise InvalidInput("chained", "True or False", chained)
    return _first_crossing(m_i, r_i, v_i, _DELTA.check("delta", delta), 1.0 - _confidence(confidence), bool(chained))


def one_run_ceiling(m: int, r: int, delta: float, *, confidence: float = 0.95, chained: bool = False) -> float:
    """The largest ε_LB r guesses can give: all r correct (``anchors-auditing.md`` §2.5 table).
    Report it next to every bound: "ε_LB ≪ ε_theory" below the ceiling says little."""
    m_i = Integer(1).check("m", m)
    r_i = Integer(1).check("r", r)
    return one_run_epsilon(m_i, r_i, r_i, delta, confidence=confidence, chained=chained)


# ----------------------------------------------------------------------------------------------
# guesses


def _scores(value: object, field: str = "scores") -> np.ndarray:
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise InvalidInput(field, "a 1-D array of finite scores, one per canary", value) from None
    if arr.ndim != 1 or arr.size < 1:
        raise InvalidInput(field, "a 1-D array of finite scores, one per canary", f"array of shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        bad = int(np.count_nonzero(~np.isfinite(arr)))
        raise InvalidInput(field, "a 1-D array of finite scores, one per canary", f"{bad} NaN or infinite score(s)")
    return arr


def _guess_counts(k_plus: object, k_minus: object, m: int, field: str = "k_plus, k_minus") -> tuple[int, int]:
    kp = _COUNT.check("k_plus", k_plus)
    km = _COUNT.check("k_minus", k_minus)
    if kp + km < 1 or kp + km > m:
        raise InvalidInput(field, f"counts with 1 <= k_plus + k_minus <= m (m = {m})", (kp, km))
    return kp, km


def one_run_guesses(scores: object, k_plus: int, k_minus: int, *, tie_seed: int = 0) -> np.ndarray:
    """Guesses T ∈ {−1, 0, +1}^m: +1 for the k₊ highest scores, −1 for the k₋ lowest, 0 else.

    Ties are broken by a random key drawn from ``numpy.random.SeedSequence(tie_seed)``, a
    function of nothing the secrets depend on. Returns an int8 array.
    """
    s = _scores(scores)
    kp, km = _guess_counts(k_plus, k_minus, s.size)
    key = np.random.default_rng(np.random.SeedSequence(Integer(0).check("tie_seed", tie_seed))).random(s.size)
    order = np.lexsort((key, s))  # ascending score, ties by key
    guesses = np.zeros(s.size, dtype=np.int8)
    if km:
        guesses[order[:km]] = -1
    if kp:
        guesses[order[s.size - kp :]] = 1
    return guesses


def _secrets(value: object, m: int) -> np.ndarray:
    arr = np.asarray(value)
    allowed = f"a 1-D array of {m} values in {{-1, +1}} (one per score)"
    if arr.shape != (m,):
        raise InvalidInput("secrets", allowed, f"array of shape {arr.shape}")
    if not np.all(np.isin(arr, (-1, 1))):
        raise InvalidInput("secrets", allowed, sorted(set(np.unique(arr).tolist()))[:5])
    return arr.astype(np.int8)


# ----------------------------------------------------------------------------------------------
# the bound from scores


@dataclass(frozen=True)
class OneRunBound:
    """The one-run lower bound and everything needed to re-check it.

    Attributes
    ----------
    m:
        Canaries (coordinates of S).
    r, v:
        Guesses and correct guesses of the reported pair (k₊, k₋).
    k_plus, k_minus:
        The reported pair: +1 guesses on the highest scores, −1 on the lowest.
    epsilon_lower:
        ε_LB at the reported pair and the per-pair level (0 when nothing is rejected).
    ceiling:
        ε_LB had all r guesses been correct, at the same level.
    confidence:
        1 − α for the whole statement (after the Bonferroni split, if any).
    delta:
        δ of the hypothesis.
    chained:
        Whether the hypothesis is "(ε, δ)-close to one common reference" (pairs at
        (2ε, (1+e^ε)δ)) rather than "(ε, δ)-DP in S".
    rule:
        ``"pre-registered"`` or ``"bonferroni"`` (:data:`RULES`).
    grid:
        The candidate pairs (one pair for a pre-registered rule).
    level:
        The significance each candidate was tested at: α, or α/G with G candidates.
    candidates:
        (k₊, k₋, r, v, ε_LB) of every candidate, in grid order.
    """

    m: int
    r: int
    v: int
    k_plus: int
    k_minus: int
    epsilon_lower: float
    ceiling: float
    confidence: float
    delta: float
    chained: bool
    rule: str
    grid: tuple[tuple[int, int], ...]
    level: float
    candidates: tuple[tuple[int, int, int, int, float], ...]

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["grid"] = [list(p) for p in self.grid]
        d["candidates"] = [dict(zip(("k_plus", "k_minus", "r", "v", "epsilon_lower"), c)) for c in self.candidates]
        return d


def _grid(value: object, m: int) -> tuple[tuple[int, int], ...]:
    allowed = "a non-empty list of distinct (k_plus, k_minus) pairs fixed before the labels are seen"
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence) or len(value) == 0:
        raise InvalidInput("grid", allowed, value)
    pairs = []
    for item in value:
        if isinstance(item, (str, bytes)) or not isinstance(item, Sequence) or len(item) != 2:
            raise InvalidInput("grid", allowed, item)
        pairs.append(_guess_counts(item[0], item[1], m, field="grid"))
    if len(set(pairs)) != len(pairs):
        raise InvalidInput("grid", allowed, "repeated pairs")
    return tuple(pairs)


def guess_rule(
    m: int, *, k_plus: int | None = None, k_minus: int | None = None, grid: Sequence[tuple[int, int]] | None = None
) -> tuple[tuple[tuple[int, int], ...], str]:
    """The validated abstention rule for m canaries: ``((k_plus, k_minus),)`` and
    ``"pre-registered"``, or the grid's pairs and ``"bonferroni"``. Call it before the run, so
    that bad counts fail before any training."""
    m = Integer(1).check("m", m)
    if grid is None:
        if k_plus is None or k_minus is None:
            raise InvalidInput(
                "k_plus, k_minus", "two counts fixed before the labels are seen (or a grid)", (k_plus, k_minus)
            )
        return (_guess_counts(k_plus, k_minus, m),), "pre-registered"
    if k_plus is not None or k_minus is not None:
        raise InvalidInput("grid", "either a grid or one (k_plus, k_minus) pair, not both", grid)
    return _grid(grid, m), "bonferroni"


def one_run_bound(
    scores: object,
    secrets: object,
    *,
    k_plus: int | None = None,
    k_minus: int | None = None,
    grid: Sequence[tuple[int, int]] | None = None,
    delta: float,
    confidence: float = 0.95,
    chained: bool = False,
    tie_seed: int = 0,
    m: int | None = None,
) -> OneRunBound:
    """ε_LB from one score per canary (higher = "S_i = +1") and the true secrets.

    Parameters
    ----------
    scores:
        Shape (m,), computed from the mechanism's output without looking at ``secrets``.
    secrets:
        Shape (m,), values in {−1, +1}.
    k_plus, k_minus:
        A pre-registered pair (``rule = "pre-registered"``); give both, or neither with ``grid``.
    grid:
        Candidate pairs fixed in advance (``rule = "bonferroni"``, each at level α/G).
    delta, confidence, chained:
        As in :func:`one_run_epsilon`.
    tie_seed:
        Seed of the tie-breaking key (:func:`one_run_guesses`).
    m:
        The m of the 2mδ term, when more canaries were drawn than are scored here (default:
        the number of scores).
    """
    s = _scores(scores)
    sec = _secrets(secrets, s.size)
    m_total = s.size if m is None else Integer(s.size).check("m", m)
    delta = _DELTA.check("delta", delta)
    alpha = 1.0 - _confidence(confidence)
    if not isinstance(chained, (bool, np.bool_)):
        raise InvalidInput("chained", "True or False", chained)
    pairs, rule = guess_rule(s.size, k_plus=k_plus, k_minus=k_minus, grid=grid)
    level = alpha / len(pairs)
    candidates = []
    for kp, km in pairs:
        t = one_run_guesses(s, kp, km, tie_seed=tie_seed)
        r = kp + km
        v = int(np.count_nonzero(t.astype(np.int16) * sec == 1))
        candidates.append((kp, km, r, v, _first_crossing(m_total, r, v, delta, level, bool(chained))))
    best = max(range(len(candidates)), key=lambda j: (candidates[j][4], -j))
    kp, km, r, v, eps = candidates[best]
    return OneRunBound(
        m=m_total,
        r=r,
        v=v,
        k_plus=kp,
        k_minus=km,
        epsilon_lower=eps,
        ceiling=_first_crossing(m_total, r, r, delta, level, bool(chained)),
        confidence=1.0 - alpha,
        delta=delta,
        chained=bool(chained),
        rule=rule,
        grid=pairs,
        level=level,
        candidates=tuple(candidates),
    )


# ----------------------------------------------------------------------------------------------
# the self-test: a Gaussian mechanism whose ε is known


def gaussian_mechanism_lower_bounds(
    m: int,
    epsilon: float,
    delta: float,
    *,
    k_plus: int,
    k_minus: int,
    repetitions: int,
    confidence: float = 0.95,
    seed: int = 0,
) -> np.ndarray:
    """ε_LB of ``repetitions`` one-run audits of a Gaussian mechanism that is exactly (ε, δ)-DP in S.

    Canary i owns coordinate i: the output is Σ_i S_i·c·e_i + N(0, σ²I_m) with c = 1, so
    flipping one S_i moves the output by 2c in L2 and σ = ``sigma_for(epsilon, delta, 2)`` (the
    analytic Gaussian mechanism: exactly (ε, δ)-DP, no smaller ε holds at δ). The score of
    canary i is its coordinate (the optimal test), guesses are the pre-registered (k₊, k₋).
    Repetition j draws S and the noise from ``SeedSequence(seed, spawn_key=(j,))``.

    Returns
    -------
    numpy.ndarray
        Shape (repetitions,): the bounds, each valid at ``confidence``; the fraction above
        ``epsilon`` must be ≤ 1 − confidence up to sampling error.
    """
    m_i = Integer(1).check("m", m)
    eps = Real(gt=0).check("epsilon", epsilon)
    dlt = PROBABILITY.check("delta", delta)
    kp, km = _guess_counts(k_plus, k_minus, m_i)
    reps = Integer(1).check("repetitions", repetitions)
    alpha = 1.0 - _confidence(confidence)
    sigma = sigma_for(eps, dlt, 2.0)
    cache: dict[int, float] = {}
    out = np.empty(reps)
    for j in range(reps):
        rng = np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=(j,)))
        secrets = np.where(rng.random(m_i) < 0.5, 1, -1)
        output = secrets + sigma * rng.standard_normal(m_i)
        order = np.argsort(output, kind="stable")  # continuous scores: no ties
        v = int(np.count_nonzero(secrets[order[:km]] == -1)) + int(np.count_nonzero(secrets[order[m_i - kp :]] == 1))
        if v not in cache:
            cache[v] = _first_crossing(m_i, kp + km, v, dlt, alpha, False)
        out[j] = cache[v]
    return out


def gaussian_epsilon(epsilon: float, delta: float) -> float:
    """The true ε of :func:`gaussian_mechanism_lower_bounds`'s mechanism at δ (= ``epsilon``,
    recomputed from σ as a check of the calibration)."""
    return epsilon_for(sigma_for(epsilon, delta, 2.0), delta, 2.0)
