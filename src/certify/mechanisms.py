"""Noise calibration for the Gaussian mechanism (numpy/scipy only, no torch).

A Gaussian mechanism releases ``f(x) + N(0, sigma^2 I)``, where ``sensitivity`` (Δ) is the L2
global sensitivity of ``f`` under the neighbouring relation being certified. For certified
unlearning, the "neighbours" are the noiseless unlearned model and the noiseless model retrained
without the deleted data, and Δ is a bound on the distance between them.

Two calibrations are offered (see :data:`MECHANISMS`):

``"analytic"``
    The exact privacy curve of the Gaussian mechanism (Balle & Wang 2018, Theorem 8). The
    mechanism is (ε, δ)-DP **if and only if**

        Φ(Δ/(2σ) − εσ/Δ) − e^ε · Φ(−Δ/(2σ) − εσ/Δ) ≤ δ.

    Valid for every ε > 0, and never looser than the classic formula where both apply.
``"classic"``
    σ = Δ·√(2 ln(1.25/δ))/ε (Dwork & Roth 2014, Theorem A.1), proven only for 0 < ε ≤ 1.
    Many certified-unlearning theorems are stated with it (e.g. Rewind-to-Delete, Eq. 3), so it
    is kept to reproduce them exactly; for ε > 1 it raises :class:`~certify.errors.InvalidInput`.

Numerics. The analytic curve is evaluated in log space,

    log δ = log Φ(a − b) + log(1 − exp(ε + log Φ(−a − b) − log Φ(a − b))),
    a = Δ/(2σ),  b = εσ/Δ,

with ``scipy.special.log_ndtr`` (the function behind ``scipy.stats.norm.logcdf``), so it stays
accurate for tiny δ (1e-12 and below) and for large ε (50 and above) where ``e^ε`` would overflow
and ``Φ(a−b) − e^ε Φ(−a−b)`` would cancel catastrophically. Roots are bracketed and then found
with :func:`scipy.optimize.brentq` on ``log σ`` (or ``log ε``) with a *relative* tolerance of
about 1e-14, unlike the absolute tolerance of 1e-12 in the authors' reference code, which is
meaningless at δ ≤ 1e-9.

Only the ratio μ = Δ/σ matters for the analytic curve (μ-GDP, Dong, Roth & Su 2022), so σ is
linear in Δ: ``sigma_for(eps, delta, c * Delta) == c * sigma_for(eps, delta, Delta)``.
"""

from __future__ import annotations

import math

from scipy.optimize import brentq
from scipy.special import log_ndtr

from certify.errors import (
    InvalidInput,
    require_choice,
    require_nonnegative,
    require_positive,
    require_probability,
)

__all__ = ["MECHANISMS", "delta_for", "epsilon_for", "sigma_for"]

MECHANISMS: tuple[str, ...] = ("analytic", "classic")
"""Calibrations accepted by the ``mechanism`` argument."""

_REFERENCES = {"analytic": "Balle & Wang 2018, Thm 8", "classic": "Dwork & Roth, Thm A.1"}


def noise_clause(mechanism: str) -> str:
    """How a certificate's theorem names its noise: 'Gaussian noise by the <m> mechanism (<ref>)'."""
    return f"Gaussian noise by the {mechanism} mechanism ({_REFERENCES[_check_mechanism(mechanism)]})"

_LN2 = math.log(2.0)
_XTOL = 1e-14  # absolute, in log σ or log ε: a relative tolerance on σ or ε
_RTOL = 1e-15  # brentq's floor is 4 * machine epsilon
_MAXITER = 500
_MAX_EXPANSIONS = 2200  # doublings/halvings while bracketing; 2**2200 spans every double
_LOG_FLOOR = -1e300  # stands in for log 0 so brentq sees finite values


# ----------------------------------------------------------------------------------------------
# validation helpers


def _check_mechanism(mechanism: object) -> str:
    return require_choice("mechanism", mechanism, MECHANISMS)


def _classic_epsilon_error(epsilon: object) -> InvalidInput:
    return InvalidInput(
        "epsilon",
        "≤ 1 for the classic Gaussian mechanism",
        epsilon,
        hint=(
            "The classic calibration sigma = Delta*sqrt(2 ln(1.25/delta))/epsilon is proven only "
            "for 0 < epsilon <= 1 (Dwork & Roth, Thm A.1) and is not private for large epsilon; "
            "use mechanism='analytic' (Balle & Wang 2018), which is exact for every epsilon."
        ),
    )


# ----------------------------------------------------------------------------------------------
# the analytic Gaussian privacy curve, for sensitivity 1 and noise 1/mu


def _log1mexp(x: float) -> float:
    """log(1 − e^x) for x < 0, accurate at both ends (Mächler 2012)."""
    if x > -_LN2:
        return math.log(-math.expm1(x))
    return math.log1p(-math.exp(x))


def _log_delta(mu: float, epsilon: float) -> float:
    """log δ(ε) of the Gaussian mechanism with Δ/σ = mu (0 < mu < inf, ε ≥ 0).

    Returns ``-inf`` when δ underflows (only for astronomically small δ).
    """
    a = 0.5 * mu
    b = epsilon / mu
    log_p = float(log_ndtr(a - b))
    log_m = float(log_ndtr(-a - b))
    x = epsilon + log_m - log_p  # log of e^ε Φ(−a−b) / Φ(a−b), always < 0 in exact arithmetic
    if not x < 0.0:
        return -math.inf
    return log_p + _log1mexp(x)


def _bracket_decreasing(g, start: float) -> tuple[float, float]:
    """Find lo < hi with g(lo) > 0 > g(hi) for a decreasing g, doubling outward from ``start``."""
    lo = hi = start
    g_lo = g_hi = g(start)
    if g_lo == 0.0:
        return start, start
    n = 0
    while g_lo <= 0.0:
        hi, g_hi = lo, g_lo
        lo -= _LN2
        g_lo = g(lo)
        n += 1
        if n > _MAX_EXPANSIONS:  # pragma: no cover - impossible for validated input
            raise RuntimeError("could not bracket the root (lower end)")
    while g_hi >= 0.0:
        lo, g_lo = hi, g_hi
        hi += _LN2
        g_hi = g(hi)
        n += 1
        if n > _MAX_EXPANSIONS:  # pragma: no cover - impossible for validated input
            raise RuntimeError("could not bracket the root (upper end)")
    return lo, hi


def _solve_decreasing(g, start: float) -> float:
    lo, hi = _bracket_decreasing(g, start)
    if lo == hi:
        return lo
    return float(brentq(g, lo, hi, xtol=_XTOL, rtol=_RTOL, maxiter=_MAXITER))


def _analytic_unit_sigma(epsilon: float, delta: float) -> float:
    """Smallest σ with δ(σ) ≤ delta for Δ = 1 (Balle & Wang 2018, Thm 8)."""
    log_target = math.log(delta)

    def g(log_sigma: float) -> float:
        value = _log_delta(math.exp(-log_sigma), epsilon)
        return max(value, _LOG_FLOOR) - log_target

    # Start at the classic formula: within a small factor of the root for every (ε, δ).
    start = math.log(math.sqrt(2.0 * math.log(1.25 / delta)) / epsilon)
    return math.exp(_solve_decreasing(g, start))


def _classic_unit_sigma(epsilon: float, delta: float) -> float:
    if epsilon > 1.0:
        raise _classic_epsilon_error(epsilon)
    return math.sqrt(2.0 * math.log(1.25 / delta)) / epsilon


def _unit_sigma(epsilon: float, delta: float, mechanism: str) -> float:
    """σ for Δ = 1; validated inputs. ``sigma_for`` is ``sensitivity * _unit_sigma(...)``."""
    if mechanism == "classic":
        return _classic_unit_sigma(epsilon, delta)
    return _analytic_unit_sigma(epsilon, delta)


# ----------------------------------------------------------------------------------------------
# public API


def sigma_for(
    epsilon: float, delta: float, sensitivity: float, mechanism: str = "analytic"
) -> float:
    """Noise standard deviation that makes a Gaussian mechanism (ε, δ)-DP.

    Parameters
    ----------
    epsilon : float
        Privacy loss ε, a finite number > 0. With ``mechanism="classic"`` it must also be ≤ 1.
    delta : float
        Failure probability δ, in the open interval (0, 1).
    sensitivity : float
        L2 global sensitivity Δ of the released quantity, finite and ≥ 0. For certified
        unlearning: a bound on ‖unlearned − retrained‖₂ of the noiseless parameters.
    mechanism : {"analytic", "classic"}, default "analytic"
        ``"analytic"``: the smallest σ satisfying Balle & Wang's exact condition
        Φ(Δ/(2σ) − εσ/Δ) − e^ε Φ(−Δ/(2σ) − εσ/Δ) ≤ δ, found by a log-space root search with
        relative tolerance ~1e-14. ``"classic"``: σ = Δ·√(2 ln(1.25/δ))/ε.

    Returns
    -------
    float
        The per-coordinate noise standard deviation σ ≥ 0. It is linear in ``sensitivity`` and
        ``0.0`` when ``sensitivity == 0`` (identical neighbours need no noise).

    Raises
    ------
    InvalidInput
        If ``epsilon`` is not finite and > 0, ``delta`` is not in (0, 1), ``sensitivity`` is not
        finite and ≥ 0, ``mechanism`` is not one of :data:`MECHANISMS`, or
        ``mechanism="classic"`` with ``epsilon > 1`` (use ``mechanism="analytic"``).

    References
    ----------
    .. [1] B. Balle and Y.-X. Wang, "Improving the Gaussian Mechanism for Differential Privacy:
       Analytical Calibration and Optimal Denoising", ICML 2018, Theorem 8 (exact condition)
       and Algorithm 1; Theorem 4 (the classic formula fails for large ε).
    .. [2] C. Dwork and A. Roth, "The Algorithmic Foundations of Differential Privacy",
       Foundations and Trends in TCS 9(3-4), 2014, Theorem A.1 (classic mechanism, ε ∈ (0, 1)).

    Examples
    --------
    >>> round(sigma_for(1.0, 1e-5, 1.0), 6)
    3.730632
    >>> round(sigma_for(1.0, 1e-5, 1.0, mechanism="classic"), 6)
    4.844805
    """
    mechanism = _check_mechanism(mechanism)
    eps = require_positive("epsilon", epsilon)
    dlt = require_probability("delta", delta)
    sens = require_nonnegative("sensitivity", sensitivity)
    if mechanism == "classic" and eps > 1.0:
        raise _classic_epsilon_error(epsilon)
    if sens == 0.0:
        return 0.0
    return sens * _unit_sigma(eps, dlt, mechanism)


def epsilon_for(
    sigma: float, delta: float, sensitivity: float, mechanism: str = "analytic"
) -> float:
    """Smallest ε for which a Gaussian mechanism with noise σ is (ε, δ)-DP.

    Parameters
    ----------
    sigma : float
        Per-coordinate noise standard deviation σ, finite and ≥ 0.
    delta : float
        Failure probability δ, in the open interval (0, 1).
    sensitivity : float
        L2 global sensitivity Δ, finite and ≥ 0.
    mechanism : {"analytic", "classic"}, default "analytic"
        ``"analytic"``: the exact ε, the root in ε of Balle & Wang's curve δ(ε) = δ (δ(ε) is
        strictly decreasing in ε). ``"classic"``: ε = Δ·√(2 ln(1.25/δ))/σ, which must be ≤ 1.

    Returns
    -------
    float
        ε ≥ 0. Special cases: ``0.0`` when ``sensitivity == 0``; ``0.0`` (analytic) when the
        mechanism is already (0, δ)-DP, i.e. δ(0) = 2Φ(Δ/(2σ)) − 1 ≤ δ; ``math.inf`` when
        ``sigma == 0`` and ``sensitivity > 0`` (no noise gives no finite ε, for either mechanism).

    Raises
    ------
    InvalidInput
        If ``sigma`` or ``sensitivity`` is not finite and ≥ 0, ``delta`` is not in (0, 1),
        ``mechanism`` is unknown, or ``mechanism="classic"`` and the resulting ε exceeds 1 (the
        classic formula is unproven there; use ``mechanism="analytic"``).

    References
    ----------
    .. [1] B. Balle and Y.-X. Wang, ICML 2018, Theorem 8.
    .. [2] C. Dwork and A. Roth, 2014, Theorem A.1.
    .. [3] J. Dong, A. Roth and W. Su, "Gaussian Differential Privacy", JRSS-B 2022,
       Corollary 2.13 (the same curve with μ = Δ/σ).

    Examples
    --------
    >>> round(epsilon_for(1.0, 1e-5, 1.0), 6)
    4.377178
    """
    mechanism = _check_mechanism(mechanism)
    sig = require_nonnegative("sigma", sigma)
    dlt = require_probability("delta", delta)
    sens = require_nonnegative("sensitivity", sensitivity)
    if sens == 0.0:
        return 0.0
    if sig == 0.0:
        return math.inf
    mu = sens / sig
    if math.isinf(mu):
        return math.inf
    if mu == 0.0:
        return 0.0
    if mechanism == "classic":
        eps = mu * math.sqrt(2.0 * math.log(1.25 / dlt))
        if eps > 1.0:
            raise _classic_epsilon_error(eps)
        return eps

    log_target = math.log(dlt)
    if _log_delta(mu, 0.0) <= log_target:
        return 0.0

    def g(log_eps: float) -> float:
        value = _log_delta(mu, math.exp(log_eps))
        return max(value, _LOG_FLOOR) - log_target

    start = math.log(mu * math.sqrt(2.0 * math.log(1.25 / dlt)))
    return math.exp(_solve_decreasing(g, start))


def delta_for(sigma: float, epsilon: float, sensitivity: float) -> float:
    """The exact δ(ε) of a Gaussian mechanism with noise σ (the analytic privacy curve).

    δ = Φ(Δ/(2σ) − εσ/Δ) − e^ε Φ(−Δ/(2σ) − εσ/Δ), evaluated in log space.

    Parameters
    ----------
    sigma : float
        Per-coordinate noise standard deviation σ, finite and ≥ 0.
    epsilon : float
        Privacy loss ε, finite and ≥ 0 (ε = 0 gives the total-variation distance
        2Φ(Δ/(2σ)) − 1 between the two output distributions).
    sensitivity : float
        L2 global sensitivity Δ, finite and ≥ 0.

    Returns
    -------
    float
        The smallest δ in [0, 1] for which the mechanism is (ε, δ)-DP. Special cases:
        ``0.0`` when ``sensitivity == 0``; ``1.0`` when ``sigma == 0`` and ``sensitivity > 0``
        (a noiseless release of differing values is not (ε, δ)-DP for any δ < 1).

    Raises
    ------
    InvalidInput
        If ``sigma``, ``epsilon`` or ``sensitivity`` is not a finite number ≥ 0.

    References
    ----------
    .. [1] B. Balle and Y.-X. Wang, ICML 2018, Theorem 8.
    .. [2] J. Dong, A. Roth and W. Su, JRSS-B 2022, Corollary 2.13.

    Examples
    --------
    >>> f"{delta_for(3.73063163482, 1.0, 1.0):.6e}"
    '1.000000e-05'
    """
    sig = require_nonnegative("sigma", sigma)
    eps = require_nonnegative("epsilon", epsilon)
    sens = require_nonnegative("sensitivity", sensitivity)
    if sens == 0.0:
        return 0.0
    if sig == 0.0:
        return 1.0
    mu = sens / sig
    if math.isinf(mu):
        return 1.0
    if mu == 0.0:
        return 0.0
    return min(1.0, math.exp(_log_delta(mu, eps)))
