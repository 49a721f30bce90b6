"""Empirical ε from attack scores: a Clopper–Pearson lower bound and a GDP estimate.

The audit plays a distinguishing game between two worlds and records one attack score per
independent trial in each:

* world **U**: the model is trained, the forget set is unlearned, and the result is released;
* world **R**: the model is retrained without the forget set and released.

If releasing is (ε, δ)-indistinguishable between the worlds (the certificate's claim), every test
of U against R satisfies both hypothesis-testing inequalities of differential privacy
(Wasserman & Zhou 2010; Kairouz, Oh & Viswanath 2015, Theorem 2.1)::

    FPR + e^ε · FNR ≥ 1 − δ      and      FNR + e^ε · FPR ≥ 1 − δ,

where a *positive* is "world U", FPR = P(test says U | world R) and FNR = P(test says R | world
U). Hence (Eq. (1) of ``anchors-auditing.md`` §2.1)::

    ε ≥ max{ ln((1 − δ − FPR)/FNR),  ln((1 − δ − FNR)/FPR) }.

Replacing FPR and FNR by one-sided Clopper–Pearson *upper* confidence bounds, each at level
1 − α/2, gives a statement that holds with probability ≥ 1 − α (one union bound over the two
rates; both terms decrease in both rates, so one pair of upper bounds covers the maximum). This
is :func:`clopper_pearson_epsilon`, the only value in this module called a *bound*.

Choosing the threshold (and the direction of the test) on the data that are then counted
inflates the bound. Two valid protocols are offered (``split``):

``"half"``
    Each world's trials are split at random (seeded) into a calibration and an evaluation half.
    The direction and threshold that maximise the Clopper–Pearson bound on the calibration half
    are then evaluated once on the evaluation half (Jagielski et al. 2020, ``fmnist_audit.py``;
    jax_privacy ``Split(threshold_estimation_frac=0.5)``).
``"bonferroni"``
    Every candidate threshold in both directions is evaluated on all trials, with the overall
    error α shared equally among the 2·m (threshold, direction) tests, so each rate is bounded
    at level 1 − α/(4m) (jax_privacy ``Bonferroni()``; Nasr et al. 2023).

Two directions are always considered: "U>R" (say U when the score is above the threshold) and
"R>U" (say U when the score is at or below it). An attack whose AUC is far below ½ leaks just as
much as one far above it (``anchors-auditing.md`` §2.12, pitfall 6).

With n trials per world even a perfect attack cannot certify more than about ln n; that
*ceiling* (:func:`epsilon_ceiling`) is returned with every bound and must be reported next to it.

:func:`gdp_epsilon_estimate` fits the μ of a Gaussian trade-off curve (μ-GDP, Dong, Roth & Su
2022) to the empirical ROC curve and converts it to ε at δ, as in Nasr et al. 2023. It is
usually much closer to the truth than the (ε, δ) bound, but it is an **estimate** valid only under
the hypothesis that the trade-off curve is Gaussian; it is never a bound.

References
----------
.. [1] C. J. Clopper and E. S. Pearson, "The use of confidence or fiducial limits illustrated in
   the case of the binomial", Biometrika 26(4), 1934.
.. [2] L. Wasserman and S. Zhou, "A statistical framework for differential privacy", JASA
   105(489), 2010.
.. [3] P. Kairouz, S. Oh and P. Viswanath, "The composition theorem for differential privacy",
   ICML 2015, Theorem 2.1.
.. [4] M. Jagielski, J. Ullman and A. Oprea, "Auditing Differentially Private Machine Learning:
   How Private is Private SGD?", NeurIPS 2020.
.. [5] M. Nasr, S. Song, A. Thakurta, N. Papernot and N. Carlini, "Adversary Instantiation:
   Lower Bounds for Differentially Private Machine Learning", IEEE S&P 2021.
.. [6] M. Nasr, J. Hayes, T. Steinke, B. Balle, F. Tramèr, M. Jagielski, N. Carlini and
   A. Terzis, "Tight Auditing of Differentially Private Machine Learning", USENIX Security 2023.
.. [7] J. Dong, A. Roth and W. Su, "Gaussian Differential Privacy", JRSS-B 84(1), 2022.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from scipy.special import betaincinv, ndtri

from certify.errors import PROBABILITY, Integer, InvalidInput, Optional, Real
from certify.mechanisms import epsilon_for

__all__ = [
    "ALTERNATIVES",
    "DIRECTIONS",
    "SPLITS",
    "Counts",
    "EpsilonBound",
    "GDPEstimate",
    "clopper_pearson_epsilon",
    "clopper_pearson_interval",
    "epsilon_ceiling",
    "epsilon_from_rates",
    "gdp_epsilon_estimate",
]

SPLITS: tuple[str, ...] = ("half", "bonferroni")
"""Threshold-selection protocols accepted by :func:`clopper_pearson_epsilon`."""

DIRECTIONS: tuple[str, ...] = ("U>R", "R>U")
"""Test directions: "U>R" says U when ``score > threshold``, "R>U" when ``score <= threshold``."""

ALTERNATIVES: tuple[str, ...] = ("two-sided", "less", "greater")
"""Sides of :func:`clopper_pearson_interval`, named as in :func:`scipy.stats.binomtest`."""

DEFAULT_N_THRESHOLDS = 200
"""Default number of candidate thresholds (as in the ``anchors-auditing.md`` §2.12 tables)."""


# ----------------------------------------------------------------------------------------------
# validation helpers


_DELTA = Real(ge=0, lt=1)


def _confidence(value: object, field: str = "confidence") -> float:
    return PROBABILITY.check(field, value)


def _delta(value: object) -> float:
    return _DELTA.check("delta", value)


def _scores(value: object, field: str, minimum: int = 1) -> np.ndarray:
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise InvalidInput(field, "a 1-D array of finite real numbers", value) from None
    if arr.ndim != 1:
        raise InvalidInput(
            field, "a 1-D array of finite real numbers", f"array of shape {arr.shape}"
        )
    if arr.size < minimum:
        raise InvalidInput(
            field,
            f"a 1-D array with at least {minimum} score(s)",
            f"{arr.size} score(s)",
            hint="Each trial (one independently trained release) contributes one score.",
        )
    if not np.all(np.isfinite(arr)):
        bad = int(np.count_nonzero(~np.isfinite(arr)))
        raise InvalidInput(
            field,
            "a 1-D array of finite real numbers",
            f"{bad} NaN or infinite score(s)",
            hint="Drop or clip failed trials explicitly before auditing.",
        )
    return arr


def _int_array(value: object, field: str, minimum: int) -> np.ndarray:
    arr = np.asarray(value)
    integral_float = (
        np.issubdtype(arr.dtype, np.floating)
        and bool(np.all(np.isfinite(arr)))
        and bool(np.all(arr == np.round(arr)))
    )
    if arr.dtype == bool or not (np.issubdtype(arr.dtype, np.integer) or integral_float):
        raise InvalidInput(field, f"an integer >= {minimum} (or an array of them)", value)
    arr = arr.astype(np.int64)
    if np.any(arr < minimum):
        raise InvalidInput(field, f"an integer >= {minimum} (or an array of them)", value)
    return arr


def _rates(value: object, field: str) -> np.ndarray:
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise InvalidInput(field, "a rate in [0, 1] (or an array of them)", value) from None
    if not np.all((arr >= 0.0) & (arr <= 1.0)):  # also rejects NaN
        raise InvalidInput(field, "a rate in [0, 1] (or an array of them)", value)
    return arr


def _scalar_or_array(arr: np.ndarray) -> float | np.ndarray:
    return float(arr) if arr.ndim == 0 else arr


# ----------------------------------------------------------------------------------------------
# Clopper–Pearson


def _cp_upper(k: np.ndarray, n: np.ndarray | int, level: float) -> np.ndarray:
    """One-sided CP upper bound at ``level`` (no validation): Beta⁻¹(level; k+1, n−k), 1 at k=n."""
    k = np.asarray(k, dtype=float)
    n = np.asarray(n, dtype=float)
    full = k >= n
    with np.errstate(invalid="ignore"):
        upper = betaincinv(k + 1.0, np.where(full, 1.0, n - k), level)
    return np.where(full, 1.0, upper)


def _cp_lower(k: np.ndarray, n: np.ndarray | int, level: float) -> np.ndarray:
    """One-sided CP lower bound at ``level`` (no validation): Beta⁻¹(1−level; k, n−k+1), 0 at 0."""
    k = np.asarray(k, dtype=float)
    n = np.asarray(n, dtype=float)
    empty = k <= 0
    with np.errstate(invalid="ignore"):
        lower = betaincinv(np.where(empty, 1.0, k), n - k + 1.0, 1.0 - level)
    return np.where(empty, 0.0, lower)


def clopper_pearson_interval(
    k: int | np.ndarray,
    n: int | np.ndarray,
    confidence: float = 0.95,
    *,
    alternative: str = "two-sided",
) -> tuple[float | np.ndarray, float | np.ndarray]:
    """Exact (Clopper–Pearson) confidence interval for a binomial proportion.

    Parameters
    ----------
    k : int or array of int
        Number of successes, ``0 <= k <= n``. Broadcasts against ``n``.
    n : int or array of int
        Number of independent Bernoulli trials, ``n >= 1``.
    confidence : float, default 0.95
        Confidence level 1 − α of the returned interval, in (0, 1).
    alternative : {"two-sided", "less", "greater"}, default "two-sided"
        Named as in :func:`scipy.stats.binomtest` (``proportion_ci(method="exact")``):

        * ``"two-sided"``: ``[Beta⁻¹(α/2; k, n−k+1), Beta⁻¹(1−α/2; k+1, n−k)]``, each end a
          one-sided bound at level 1 − α/2 (the same as statsmodels
          ``proportion_confint(k, n, α, method="beta")``);
        * ``"less"``: the one-sided upper bound ``[0, Beta⁻¹(1−α; k+1, n−k)]``;
        * ``"greater"``: the one-sided lower bound ``[Beta⁻¹(α; k, n−k+1), 1]``.

        By convention the lower end is 0 when k = 0 and the upper end is 1 when k = n.

    Returns
    -------
    (lower, upper) : tuple of float or of numpy arrays
        Floats when ``k`` and ``n`` are scalars, otherwise arrays of the broadcast shape. The
        true proportion p lies in the interval with probability ≥ ``confidence`` for every p.

    Raises
    ------
    InvalidInput
        If ``n`` is not an integer ≥ 1, ``k`` is not an integer in [0, n], ``confidence`` is not
        in (0, 1), or ``alternative`` is unknown.

    References
    ----------
    .. [1] C. J. Clopper and E. S. Pearson, Biometrika 26(4), 1934.

    Examples
    --------
    >>> lo, hi = clopper_pearson_interval(0, 10, 0.95, alternative="less")
    >>> lo, round(hi, 6)  # 1 - 0.05 ** (1 / 10)
    (0.0, 0.258866)
    """
    conf = _confidence(confidence)
    if not isinstance(alternative, str) or alternative not in ALTERNATIVES:
        raise InvalidInput("alternative", f"one of {ALTERNATIVES}", alternative)
    n_arr = _int_array(n, "n", 1)
    k_arr = _int_array(k, "k", 0)
    try:
        k_arr, n_arr = np.broadcast_arrays(k_arr, n_arr)
    except ValueError:
        raise InvalidInput("k", "broadcastable against n", np.shape(k)) from None
    if np.any(k_arr > n_arr):
        raise InvalidInput("k", "an integer in [0, n]", k)
    alpha = 1.0 - conf
    if alternative == "two-sided":
        lower = _cp_lower(k_arr, n_arr, 1.0 - alpha / 2.0)
        upper = _cp_upper(k_arr, n_arr, 1.0 - alpha / 2.0)
    elif alternative == "less":
        lower = np.zeros(k_arr.shape)
        upper = _cp_upper(k_arr, n_arr, conf)
    else:
        lower = _cp_lower(k_arr, n_arr, conf)
        upper = np.ones(k_arr.shape)
    return _scalar_or_array(np.asarray(lower)), _scalar_or_array(np.asarray(upper))


# ----------------------------------------------------------------------------------------------
# From error rates to ε


def _eps_from_rates(fpr: np.ndarray, fnr: np.ndarray, delta: float) -> np.ndarray:
    """Eq. (1) without validation; ``max(0, ·)``, +inf when a rate is 0 and the other side > 0."""
    fpr = np.asarray(fpr, dtype=float)
    fnr = np.asarray(fnr, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        num1 = 1.0 - delta - fpr
        num2 = 1.0 - delta - fnr
        t1 = np.where(num1 > 0.0, np.log(np.where(num1 > 0.0, num1, 1.0)) - np.log(fnr), -np.inf)
        t2 = np.where(num2 > 0.0, np.log(np.where(num2 > 0.0, num2, 1.0)) - np.log(fpr), -np.inf)
    return np.maximum(0.0, np.maximum(t1, t2))


def epsilon_from_rates(
    fpr_upper: float | np.ndarray, fnr_upper: float | np.ndarray, delta: float = 0.0
) -> float | np.ndarray:
    """Smallest ε compatible with (ε, δ)-DP given error rates of one test (Eq. (1)).

    ε_LB = max{0, ln((1 − δ − FPR)/FNR), ln((1 − δ − FNR)/FPR)}.

    With *upper* confidence bounds on both rates that hold jointly with probability ≥ 1 − α,
    the result is a lower bound on the true ε that holds with probability ≥ 1 − α: both terms
    are non-increasing in both rates.

    Parameters
    ----------
    fpr_upper : float or array
        (Upper bound on the) false-positive rate P(say U | world R), in [0, 1].
    fnr_upper : float or array
        (Upper bound on the) false-negative rate P(say R | world U), in [0, 1]. Broadcasts
        against ``fpr_upper``.
    delta : float, default 0.0
        The δ of the claim being audited, in [0, 1). Carry the certificate's δ through: a bound
        computed at δ = 0 refutes (ε, 0)-DP, a different claim from (ε, δ)-DP.

    Returns
    -------
    float or numpy array
        ε_LB ≥ 0. It is ``0.0`` when nothing is certifiable (``FPR + FNR ≥ 1 − δ``, which
        includes every test no better than chance) and ``inf`` when a rate is exactly 0 while
        the opposite numerator is positive (possible with raw rates, never with
        Clopper–Pearson upper bounds).

    Raises
    ------
    InvalidInput
        If a rate is outside [0, 1] (or NaN) or ``delta`` is outside [0, 1).

    References
    ----------
    .. [1] L. Wasserman and S. Zhou, JASA 2010; P. Kairouz, S. Oh and P. Viswanath, ICML 2015,
       Theorem 2.1 (the two hypothesis-testing inequalities).
    .. [2] M. Nasr et al., IEEE S&P 2021 (the two-sided use of both inequalities).

    Examples
    --------
    >>> round(epsilon_from_rates(0.01, 0.5), 6)  # ln(0.5 / 0.01)
    3.912023
    >>> epsilon_from_rates(0.5, 0.5)
    0.0
    """
    fpr = _rates(fpr_upper, "fpr_upper")
    fnr = _rates(fnr_upper, "fnr_upper")
    dlt = _delta(delta)
    try:
        fpr, fnr = np.broadcast_arrays(fpr, fnr)
    except ValueError:
        raise InvalidInput(
            "fnr_upper", "broadcastable against fpr_upper", np.shape(fnr_upper)
        ) from None
    return _scalar_or_array(_eps_from_rates(fpr, fnr, dlt))


def _trial_counts(n_trials: object) -> tuple[int, int]:
    if isinstance(n_trials, (tuple, list, np.ndarray)):
        if len(n_trials) != 2:
            raise InvalidInput("n_trials", "an integer >= 1 or a pair (n_u, n_r) of them", n_trials)
        pair = tuple(n_trials)
    else:
        pair = (n_trials, n_trials)
    try:
        n_u, n_r = (Integer(1).check("n_trials", v) for v in pair)
    except InvalidInput:
        raise InvalidInput("n_trials", "an integer >= 1 or a pair (n_u, n_r) of them", n_trials) from None
    return n_u, n_r


def epsilon_ceiling(
    n_trials: int | tuple[int, int],
    delta: float = 0.0,
    confidence: float = 0.95,
    *,
    n_comparisons: int = 1,
) -> float:
    """Largest ε lower bound that ``n_trials`` per world can ever certify.

    It is the Clopper–Pearson bound of a perfect attack (FP = FN = 0). With the per-rate level
    1 − α' where α' = α/(2·``n_comparisons``), the CP upper bound at zero errors is
    p = 1 − α'^(1/n), so with n trials in both worlds

        ε_max = ln((1 − δ − p)/p) ≈ ln(n / ln(1/α')).

    Parameters
    ----------
    n_trials : int or (int, int)
        Trials per world, or the pair ``(n_u, n_r)`` when the worlds differ. For
        ``split="half"`` this is the size of the *evaluation* half.
    delta : float, default 0.0
        δ of the audited claim, in [0, 1).
    confidence : float, default 0.95
        Joint confidence 1 − α of the bound, in (0, 1).
    n_comparisons : int, default 1
        Number of (threshold, direction) tests the error α is shared among: 1 for a single
        pre-chosen test, 2·m for ``split="bonferroni"`` with m thresholds.

    Returns
    -------
    float
        ε_max ≥ 0. Report it next to every ε lower bound: "ε_LB = 4.9 vs ε = 8" with 1 000
        trials per world is the sample size talking, not a loose attack.

    Raises
    ------
    InvalidInput
        If ``n_trials`` or ``n_comparisons`` is not an integer ≥ 1, ``delta`` is outside
        [0, 1), or ``confidence`` is outside (0, 1).

    References
    ----------
    ``anchors-auditing.md`` §2.1 (ceiling table: 50 trials per side give 2.57 at α = 0.05,
    δ = 1e-5; 50 000 per side give 9.51).

    Examples
    --------
    >>> round(epsilon_ceiling(500, delta=1e-5), 2)
    4.91
    """
    n_u, n_r = _trial_counts(n_trials)
    dlt = _delta(delta)
    conf = _confidence(confidence)
    n_comparisons = Integer(1).check("n_comparisons", n_comparisons)
    level = 1.0 - (1.0 - conf) / (2.0 * n_comparisons)
    return _ceiling(n_u, n_r, dlt, level)


def _ceiling(n_u: int, n_r: int, delta: float, level: float) -> float:
    fpr = _cp_upper(np.zeros(()), n_r, level)
    fnr = _cp_upper(np.zeros(()), n_u, level)
    return float(_eps_from_rates(fpr, fnr, delta))


# ----------------------------------------------------------------------------------------------
# Thresholds and counts


class Counts(NamedTuple):
    """Confusion counts of one test; a positive is "world U".

    ``tp``: U trials said U; ``fp``: R trials said U; ``tn``: R trials said R; ``fn``: U trials
    said R. So FPR = fp/(fp+tn) and FNR = fn/(fn+tp).
    """

    tp: int
    fp: int
    tn: int
    fn: int


def _candidate_thresholds(pooled: np.ndarray, n_thresholds: int | None) -> np.ndarray:
    """Midpoints between consecutive distinct pooled scores, at most ``n_thresholds`` of them.

    With more gaps than ``n_thresholds`` the gaps are taken evenly spaced in rank, so the
    thresholds sit at (approximately) evenly spaced quantiles of the pooled scores.
    """
    values = np.unique(pooled)
    if values.size < 2:
        return np.empty(0)
    lo, hi = values[:-1], values[1:]
    mids = lo + (hi - lo) / 2.0
    mids = np.where(mids >= hi, lo, mids)  # guard against rounding up onto the next score
    if n_thresholds is not None and mids.size > n_thresholds:
        idx = np.unique(np.round(np.linspace(0, mids.size - 1, n_thresholds)).astype(np.int64))
        mids = mids[idx]
    return mids


def _above(sorted_scores: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    """Number of scores strictly above each threshold."""
    return sorted_scores.size - np.searchsorted(sorted_scores, thresholds, side="right")


def _errors(
    su: np.ndarray, sr: np.ndarray, thresholds: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(fp, fn) counts, shape (2, m): row 0 direction "U>R", row 1 direction "R>U"."""
    above_u = _above(su, thresholds)
    above_r = _above(sr, thresholds)
    fp = np.stack([above_r, sr.size - above_r])
    fn = np.stack([su.size - above_u, above_u])
    return fp, fn


def _counts_at(u: np.ndarray, r: np.ndarray, threshold: float, direction: str) -> Counts:
    said_u_u = int(np.count_nonzero(u > threshold))
    said_u_r = int(np.count_nonzero(r > threshold))
    if direction == "R>U":
        said_u_u, said_u_r = u.size - said_u_u, r.size - said_u_r
    return Counts(tp=said_u_u, fp=said_u_r, tn=r.size - said_u_r, fn=u.size - said_u_u)


def _cp_epsilon_grid(
    su: np.ndarray, sr: np.ndarray, thresholds: np.ndarray, level: float, delta: float
) -> np.ndarray:
    """CP ε lower bound of every (direction, threshold), shape (2, m), each rate at ``level``.

    The CP upper bounds are evaluated once per distinct count, so the cost is one sort, a
    binary search per threshold and at most 4m special-function evaluations.
    """
    fp, fn = _errors(su, sr, thresholds)
    fpr_upper = _cp_upper_unique(fp, sr.size, level)
    fnr_upper = _cp_upper_unique(fn, su.size, level)
    return _eps_from_rates(fpr_upper, fnr_upper, delta)


def _cp_upper_unique(k: np.ndarray, n: int, level: float) -> np.ndarray:
    """:func:`_cp_upper` evaluated once per distinct count (special functions are the cost)."""
    values, inverse = np.unique(k, return_inverse=True)
    return _cp_upper(values, n, level)[inverse].reshape(k.shape)


# ----------------------------------------------------------------------------------------------
# The bound


@dataclass(frozen=True)
class EpsilonBound:
    """A Clopper–Pearson lower bound on ε and everything needed to report it.

    Attributes
    ----------
    epsilon_lower : float
        ε_LB ≥ 0: with probability ≥ ``confidence`` over the trials, the true ε (at ``delta``)
        of the U-versus-R release is at least this large.
    threshold : float
        The score threshold of the evaluated test.
    direction : {"U>R", "R>U"}
        "U>R": the test says U when ``score > threshold``; "R>U": when ``score <= threshold``.
    counts : Counts
        (tp, fp, tn, fn) of that test on the evaluated trials (the evaluation half for
        ``split="half"``, all trials for ``split="bonferroni"``).
    fpr_upper, fnr_upper : float
        The Clopper–Pearson upper bounds on FPR and FNR that enter Eq. (1).
    rate_confidence : float
        One-sided level of each of those two bounds: 1 − α/2 (half), 1 − α/(4m) (Bonferroni).
    n_trials : (int, int)
        Trials supplied per world, (n_u, n_r).
    n_evaluated : (int, int)
        Trials per world that ``counts`` are taken on.
    n_thresholds : int
        Candidate thresholds considered (per direction).
    confidence : float
        Joint confidence 1 − α of the bound.
    delta : float
        δ carried through Eq. (1).
    method : str
        ``"clopper-pearson/half"`` or ``"clopper-pearson/bonferroni"``.
    ceiling : float
        The largest ε_LB the evaluated trial counts could give (perfect separation), with the
        same per-rate level; see :func:`epsilon_ceiling`.
    seed : int or None
        Seed of the calibration/evaluation split (None for Bonferroni, which does not split).
    kind : str
        Always ``"bound"``, as opposed to :class:`GDPEstimate`'s ``"estimate"``.
    """

    epsilon_lower: float
    threshold: float
    direction: str
    counts: Counts
    fpr_upper: float
    fnr_upper: float
    rate_confidence: float
    n_trials: tuple[int, int]
    n_evaluated: tuple[int, int]
    n_thresholds: int
    confidence: float
    delta: float
    method: str
    ceiling: float
    seed: int | None
    kind: str = "bound"

    def to_dict(self) -> dict:
        """Plain-Python (JSON-ready) dictionary of the fields; ``counts`` keeps its names."""
        d = dataclasses.asdict(self)
        d["counts"] = self.counts._asdict()
        d["n_trials"] = list(self.n_trials)
        d["n_evaluated"] = list(self.n_evaluated)
        return d


def _n_thresholds(value: object) -> int | None:
    return Optional(Integer(1), "(every gap)").check("n_thresholds", value)


def _explicit_thresholds(value: object) -> np.ndarray:
    try:
        arr = np.asarray(value, dtype=float).ravel()
    except (TypeError, ValueError):
        raise InvalidInput("thresholds", "a non-empty array of finite numbers", value) from None
    if arr.size == 0 or not np.all(np.isfinite(arr)):
        raise InvalidInput("thresholds", "a non-empty array of finite numbers", value)
    return np.unique(arr)


def clopper_pearson_epsilon(
    scores_u: np.ndarray,
    scores_r: np.ndarray,
    *,
    delta: float = 0.0,
    confidence: float = 0.95,
    split: str = "half",
    n_thresholds: int | None = DEFAULT_N_THRESHOLDS,
    thresholds: np.ndarray | None = None,
    seed: int = 0,
) -> EpsilonBound:
    """Clopper–Pearson lower bound on ε from attack scores in world U and world R.

    Each score is one independent trial: one independently trained (and unlearned or retrained)
    release scored by the attack. Both test directions are considered. The bound is

        ε_LB = max{0, ln((1 − δ − FPR_u)/FNR_u), ln((1 − δ − FNR_u)/FPR_u)}      (Eq. (2))

    where FPR_u and FNR_u are one-sided CP upper bounds. **Simultaneous confidence:** the
    statement "FPR ≤ FPR_u and FNR ≤ FNR_u" must hold jointly for Eq. (2) to bound ε, so
    each rate is bounded at one-sided level 1 − α/2 (α = 1 − ``confidence``) and the union
    bound gives the joint level 1 − α; one pair of upper bounds covers both terms of the
    maximum because both terms decrease in both rates. Threshold selection is then handled by
    ``split``:

    * ``"half"``: each world is split at random (``seed``) into a calibration half
      (⌊n/2⌋ trials) and an evaluation half (the rest). The direction and threshold are
      chosen on the calibration half, as those maximising Eq. (2) with the rates bounded at
      the stricter Bonferroni level 1 − α/(4m). This selection score deliberately is neither
      the raw point estimate (+inf at any threshold with zero errors, so it favours useless
      extreme thresholds) nor the plain 1 − α/2 bound: both chase thresholds in the tail
      whose calibration counts were lucky (winner's curse), and the stricter level discounts
      small counts. On the bare Gaussian mechanism at ε = 1 with 10⁵ trials per world this
      lifts the worst of 100 repetitions from about 0.35 to about 0.44. Only that one test is
      then counted on the evaluation half, at per-rate level 1 − α/2. The bound is valid
      whatever the selection rule, because the evaluation half plays no part in the choice.
    * ``"bonferroni"``: all trials are used, every candidate threshold in both directions is a
      test (2·m tests), and each rate is bounded at 1 − α/(4m), so all 4m one-sided rate
      statements hold jointly at 1 − α and the maximum over tests is a valid bound. The
      union bound is exact for thresholds fixed in advance (pass ``thresholds``); the default
      grid is taken from the pooled scores, as in jax_privacy, whose coverage is checked by
      simulation (see ``tests/test_epsilon.py``) rather than proven.

    Parameters
    ----------
    scores_u : array_like, shape (n_u,)
        Attack scores in world U (unlearned, then released); finite.
    scores_r : array_like, shape (n_r,)
        Attack scores in world R (retrained, then released); finite.
    delta : float, default 0.0
        δ of the audited claim, in [0, 1). Use the certificate's δ.
    confidence : float, default 0.95
        Joint confidence 1 − α of the bound, in (0, 1).
    split : {"half", "bonferroni"}, default "half"
        Threshold-selection protocol, see above.
    n_thresholds : int or None, default 200
        Size of the candidate grid: midpoints between consecutive distinct pooled scores (of the
        calibration half for ``"half"``, of all trials for ``"bonferroni"``), thinned to this
        many at evenly spaced ranks (so roughly evenly spaced quantiles). ``None`` keeps every
        gap. More thresholds cost confidence under ``"bonferroni"`` and add selection noise
        under ``"half"``; a few hundred is the practical optimum. Ignored when ``thresholds``
        is given.
    thresholds : array_like, optional
        Candidate thresholds fixed before seeing the scores (pre-registered). With
        ``split="bonferroni"`` and a single threshold this is the fixed-test protocol (the only
        correction left is for the two directions).
    seed : int, default 0
        Seed of the random calibration/evaluation split (``split="half"`` only).

    Returns
    -------
    EpsilonBound
        The bound, the chosen threshold and direction, the counts it was computed from, the
        trial counts, the ceiling that those counts allow, and the settings.

    Raises
    ------
    InvalidInput
        If a score array is not 1-D, is empty (fewer than 2 scores for ``split="half"``) or
        holds NaN/inf; ``delta`` is outside [0, 1); ``confidence`` is outside (0, 1); ``split``
        is unknown; ``n_thresholds`` is not an integer ≥ 1 or None; ``thresholds`` is
        empty or not finite; or ``seed`` is not an integer ≥ 0.

    Notes
    -----
    Trials must be independent (one score per independently trained model pair). Several forget
    examples scored on one model are not independent Bernoulli trials (``anchors-auditing.md``
    §2.12, pitfall 4). Even the optimal test on the bare Gaussian mechanism recovers only about
    half of ε with 10⁵ trials per world under this (ε, δ) estimator (§2.12 self-test table);
    "ε_LB ≪ ε" is expected and is not evidence that the release is more private than claimed.

    References
    ----------
    .. [1] Clopper & Pearson 1934; Kairouz, Oh & Viswanath, ICML 2015, Theorem 2.1.
    .. [2] Jagielski, Ullman & Oprea, NeurIPS 2020 (held-out threshold: ``fmnist_audit.py``).
    .. [3] Nasr, Song, Thakurta, Papernot & Carlini, IEEE S&P 2021 (two-sided Eq. (1) + CP).
    .. [4] Nasr et al., USENIX Security 2023 (Bonferroni over thresholds, as in jax_privacy
       ``auditing.py``).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> b = clopper_pearson_epsilon(rng.normal(3.0, 1.0, 2000), rng.normal(0.0, 1.0, 2000))
    >>> b.direction, 0 < b.epsilon_lower < b.ceiling
    ('U>R', True)
    """
    u = _scores(scores_u, "scores_u")
    r = _scores(scores_r, "scores_r")
    dlt = _delta(delta)
    conf = _confidence(confidence)
    if not isinstance(split, str) or split not in SPLITS:
        raise InvalidInput("split", f"one of {SPLITS}", split)
    m_req = _n_thresholds(n_thresholds)
    fixed = None if thresholds is None else _explicit_thresholds(thresholds)
    alpha = 1.0 - conf

    if split == "half":
        seed = Integer(0).check("seed", seed)
        for field, arr in (("scores_u", u), ("scores_r", r)):
            if arr.size < 2:
                raise InvalidInput(
                    field,
                    'a 1-D array with at least 2 scores for split="half"',
                    f"{arr.size} score(s)",
                )
        rng = np.random.default_rng(int(seed))
        pu = rng.permutation(u.size)
        pr = rng.permutation(r.size)
        cal_u, ev_u = u[pu[: u.size // 2]], u[pu[u.size // 2 :]]
        cal_r, ev_r = r[pr[: r.size // 2]], r[pr[r.size // 2 :]]
        level = 1.0 - alpha / 2.0
        if fixed is not None:
            cands = fixed
        else:
            cands = _candidate_thresholds(np.concatenate([cal_u, cal_r]), m_req)
        su, sr = np.sort(cal_u), np.sort(cal_r)
        eval_u, eval_r = ev_u, ev_r
        used_seed: int | None = int(seed)
    else:
        if fixed is not None:
            cands = fixed
        else:
            cands = _candidate_thresholds(np.concatenate([u, r]), m_req)
        su, sr = np.sort(u), np.sort(r)
        eval_u, eval_r = u, r
        used_seed = None

    if cands.size == 0:
        # Every score is the same value: the only tests say always U or always R.
        cands = np.array([float(np.max(np.concatenate([u, r])))])
    m = int(cands.size)
    bonferroni_level = 1.0 - alpha / (4.0 * m)
    if split == "bonferroni":
        level = bonferroni_level

    # Selection score: the CP bound at the Bonferroni level. For "bonferroni" this is the bound
    # itself; for "half" it is computed on the calibration half only, where the stricter level
    # discounts thresholds whose calibration counts are small (the winner's curse of picking the
    # maximum over many noisy tail thresholds).
    grid = _cp_epsilon_grid(su, sr, cands, bonferroni_level, dlt)
    d_idx, t_idx = np.unravel_index(int(np.argmax(grid)), grid.shape)
    threshold = float(cands[t_idx])
    direction = DIRECTIONS[d_idx]

    counts = _counts_at(eval_u, eval_r, threshold, direction)
    n_u_ev, n_r_ev = eval_u.size, eval_r.size
    fpr_u = float(_cp_upper(np.asarray(counts.fp), n_r_ev, level))
    fnr_u = float(_cp_upper(np.asarray(counts.fn), n_u_ev, level))
    eps_lb = float(_eps_from_rates(np.asarray(fpr_u), np.asarray(fnr_u), dlt))

    return EpsilonBound(
        epsilon_lower=eps_lb,
        threshold=threshold,
        direction=direction,
        counts=counts,
        fpr_upper=fpr_u,
        fnr_upper=fnr_u,
        rate_confidence=level,
        n_trials=(int(u.size), int(r.size)),
        n_evaluated=(int(n_u_ev), int(n_r_ev)),
        n_thresholds=m,
        confidence=conf,
        delta=dlt,
        method=f"clopper-pearson/{split}",
        ceiling=_ceiling(n_u_ev, n_r_ev, dlt, level),
        seed=used_seed,
    )


# ----------------------------------------------------------------------------------------------
# GDP estimate


@dataclass(frozen=True)
class GDPEstimate:
    """A μ-GDP fit to the empirical ROC curve and the ε it implies. **Not a bound.**

    Attributes
    ----------
    mu : float
        Fitted μ ≥ 0 of the Gaussian trade-off curve G_μ; NaN when no threshold was usable
        (``n_points == 0``, see ``note``).
    epsilon_estimate : float
        ε at which the μ-GDP privacy curve reaches ``delta`` (the analytic-Gaussian curve with
        σ = 1/μ, Δ = 1); ``inf`` when ``delta == 0`` and μ > 0, 0 when μ = 0, NaN with μ.
    delta : float
        The δ used for the conversion.
    direction : {"U>R", "R>U"}
        Orientation in which the scores separate the worlds (the sign of the fitted shift).
    n_points : int
        Thresholds that entered the fit (those with at least ``min_count`` trials in each of
        the four confusion cells).
    min_count : int
        The per-cell minimum that was applied.
    n_trials : (int, int)
        Trials per world, (n_u, n_r).
    note : str
        Empty, or why no estimate could be formed.
    method : str
        Description of the fit.
    kind : str
        Always ``"estimate"``: valid only if the trade-off curve really is Gaussian.
    """

    mu: float
    epsilon_estimate: float
    delta: float
    direction: str
    n_points: int
    min_count: int
    n_trials: tuple[int, int]
    note: str = ""
    method: str = "gdp-fit (Nasr et al. 2023): assumes a Gaussian trade-off curve; not a bound"
    kind: str = "estimate"

    def to_dict(self) -> dict:
        """Plain-Python (JSON-ready) dictionary of the fields."""
        d = dataclasses.asdict(self)
        d["n_trials"] = list(self.n_trials)
        return d


def _min_count(value: object, n_u: int, n_r: int) -> int:
    if value is None:
        return max(1, min(50, min(n_u, n_r) // 20))
    return Integer(1).check("min_count", value)


def gdp_epsilon_estimate(
    scores_u: np.ndarray,
    scores_r: np.ndarray,
    delta: float,
    *,
    n_thresholds: int | None = DEFAULT_N_THRESHOLDS,
    min_count: int | None = None,
) -> GDPEstimate:
    """Estimate ε by fitting a μ-GDP trade-off curve to the scores (Nasr et al. 2023). NOT a bound.

    Under μ-GDP the optimal test's ROC curve is Φ⁻¹(TPR) = Φ⁻¹(FPR) + μ at every threshold
    (Dong, Roth & Su 2022, Eq. (6): G_μ(α) = Φ(Φ⁻¹(1 − α) − μ)); for scores that are
    N(0, 1) in one world and N(μ, 1) in the other, ``Φ⁻¹(TPR(t)) − Φ⁻¹(FPR(t)) = μ`` exactly.
    The per-threshold differences d_t = Φ⁻¹(TPR̂_t) − Φ⁻¹(FPR̂_t) are therefore averaged with
    inverse-variance weights (delta method:
    Var d_t ≈ TPR(1−TPR)/(n_u φ(Φ⁻¹ TPR)²) + FPR(1−FPR)/(n_r φ(Φ⁻¹ FPR)²)), over thresholds with
    at least ``min_count`` trials in each confusion cell (the jax_privacy ``min_count``
    convention for raw counts). μ is the absolute value; its sign gives the direction. The
    fitted μ is converted with the exact analytic-Gaussian curve: ε is the root of
    δ_μ(ε) = δ, i.e. :func:`certify.mechanisms.epsilon_for` with σ = 1/μ and Δ = 1 (μ-GDP is
    the Gaussian mechanism with μ = Δ/σ).

    This reproduces the *purpose* of Nasr et al.'s estimator (a tight ε from few trials, see
    ``anchors-auditing.md`` §2.12, where the GDP value is within 10 % of ε at 10⁴–10⁵ trials
    while the CP bound recovers about half). jax_privacy's ``epsilon_from_gdp`` uses CP upper
    bounds with Bonferroni and the best threshold instead, which makes μ a lower bound *if*
    the mechanism is μ-GDP; this function returns the point fit. Either way, when the
    trade-off curve is not Gaussian-shaped (e.g. Laplace noise, or a nonlinear attack score)
    the result is not a lower bound on anything. Report it labelled "estimate", next to, never
    instead of, :func:`clopper_pearson_epsilon`.

    Parameters
    ----------
    scores_u, scores_r : array_like, shape (n_u,), (n_r,)
        Attack scores in worlds U and R; finite, non-empty.
    delta : float
        δ at which to express ε, in [0, 1).
    n_thresholds : int or None, default 200
        Thresholds (midpoints between pooled distinct scores at evenly spaced ranks) to fit
        over; None uses every gap.
    min_count : int or None, default None
        Minimum of (tp, fp, tn, fn) for a threshold to enter the fit. None: 50 (jax_privacy's
        default) when each world has ≥ 1 000 trials, otherwise 5 % of the smaller world (at
        least 1), so that small audits still get an estimate.

    Returns
    -------
    GDPEstimate
        ``mu``, ``epsilon_estimate``, the direction, the number of fitted thresholds, and
        ``kind="estimate"``. When no threshold has ``min_count`` trials in every cell (too few
        trials, or the worlds are perfectly separated so that every threshold has an empty
        cell) μ and ε are NaN, ``n_points == 0`` and ``note`` says why: the fit is undefined,
        and no number is better than an invented one.

    Raises
    ------
    InvalidInput
        Bad scores, ``delta`` outside [0, 1), ``n_thresholds`` not an integer ≥ 1 or None,
        ``min_count`` not an integer ≥ 1 or None.

    References
    ----------
    .. [1] M. Nasr, J. Hayes, T. Steinke, B. Balle, F. Tramèr, M. Jagielski, N. Carlini and
       A. Terzis, "Tight Auditing of Differentially Private Machine Learning", USENIX Security
       2023.
    .. [2] J. Dong, A. Roth and W. Su, "Gaussian Differential Privacy", JRSS-B 2022, Eq. (6)
       and Corollary 2.13 (μ-GDP ⇔ (ε, δ_μ(ε))-DP for all ε).
    .. [3] B. Balle and Y.-X. Wang, ICML 2018, Theorem 8 (the same curve with μ = Δ/σ).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> g = gdp_epsilon_estimate(rng.normal(1.0, 1.0, 20000), rng.normal(0.0, 1.0, 20000), 1e-5)
    >>> g.kind, round(g.mu, 1)
    ('estimate', 1.0)
    """
    u = _scores(scores_u, "scores_u")
    r = _scores(scores_r, "scores_r")
    dlt = _delta(delta)
    m = _n_thresholds(n_thresholds)
    k_min = _min_count(min_count, u.size, r.size)

    cands = _candidate_thresholds(np.concatenate([u, r]), m)
    su, sr = np.sort(u), np.sort(r)
    tp = _above(su, cands).astype(float)
    fp = _above(sr, cands).astype(float)
    fn, tn = u.size - tp, r.size - fp
    ok = np.minimum(np.minimum(tp, fp), np.minimum(tn, fn)) >= k_min
    n_trials = (int(u.size), int(r.size))
    if not np.any(ok):
        return GDPEstimate(
            mu=math.nan,
            epsilon_estimate=math.nan,
            delta=dlt,
            direction="U>R",
            n_points=0,
            min_count=k_min,
            n_trials=n_trials,
            note=(
                f"no threshold has at least {k_min} trials in each of TP, FP, TN and FN "
                "(too few trials, or perfectly separated worlds): the fit is undefined"
            ),
        )
    tpr, fpr = tp[ok] / u.size, fp[ok] / r.size
    z1, z0 = ndtri(tpr), ndtri(fpr)
    phi1 = np.exp(-0.5 * z1 * z1) / math.sqrt(2.0 * math.pi)
    phi0 = np.exp(-0.5 * z0 * z0) / math.sqrt(2.0 * math.pi)
    var = tpr * (1.0 - tpr) / (u.size * phi1**2) + fpr * (1.0 - fpr) / (r.size * phi0**2)
    w = 1.0 / var
    mu_signed = float(np.sum(w * (z1 - z0)) / np.sum(w))
    mu = abs(mu_signed)
    if mu == 0.0:
        eps = 0.0
    elif dlt == 0.0:
        eps = math.inf  # a Gaussian trade-off curve is not (ε, 0)-DP for any finite ε
    else:
        eps = float(epsilon_for(1.0 / mu, dlt, 1.0))
    return GDPEstimate(
        mu=mu,
        epsilon_estimate=eps,
        delta=dlt,
        direction="U>R" if mu_signed >= 0.0 else "R>U",
        n_points=int(np.count_nonzero(ok)),
        min_count=k_min,
        n_trials=n_trials,
    )
