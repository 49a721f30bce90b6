"""Binomial rates and what one test's error rates say about ε: the exact (Clopper–Pearson)
interval of a proportion, and Eq. (1) of :mod:`attacks.epsilon` (the smallest ε compatible with
(ε, δ)-DP given a test's FPR and FNR).

Also the validation every estimator of :mod:`attacks` shares (scores, δ, confidence, counts,
rates), so that one bad input gets one sentence everywhere.

References
----------
.. [1] C. J. Clopper and E. S. Pearson, "The use of confidence or fiducial limits illustrated in
   the case of the binomial", Biometrika 26(4), 1934.
.. [2] L. Wasserman and S. Zhou, "A statistical framework for differential privacy", JASA
   105(489), 2010.
.. [3] P. Kairouz, S. Oh and P. Viswanath, "The composition theorem for differential privacy",
   ICML 2015, Theorem 2.1.
"""

from __future__ import annotations

import numpy as np
from scipy.special import betaincinv

from certify.errors import PROBABILITY, InvalidInput, Real

__all__ = [
    "ALTERNATIVES",
    "clopper_pearson_interval",
    "epsilon_from_rates",
]

ALTERNATIVES: tuple[str, ...] = ("two-sided", "less", "greater")
"""Sides of :func:`clopper_pearson_interval`, named as in :func:`scipy.stats.binomtest`."""

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
        raise InvalidInput(field, "a 1-D array of finite real numbers", f"array of shape {arr.shape}")
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
        np.issubdtype(arr.dtype, np.floating) and bool(np.all(np.isfinite(arr))) and bool(np.all(arr == np.round(arr)))
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
        raise InvalidInput("fnr_upper", "broadcastable against fpr_upper", np.shape(fnr_upper)) from None
    return _scalar_or_array(_eps_from_rates(fpr, fnr, dlt))


def _cp_upper_unique(k: np.ndarray, n: int, level: float) -> np.ndarray:
    """:func:`_cp_upper` evaluated once per distinct count (special functions are the cost)."""
    values, inverse = np.unique(k, return_inverse=True)
    return _cp_upper(values, n, level)[inverse].reshape(k.shape)
