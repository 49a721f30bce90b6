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

Where μ = Δ/σ is small (σ ≫ Δ, with small ε and δ) the two terms of the curve are nearly equal
and no rearrangement of the closed form keeps its digits, so there δ is computed as the integral
of its (positive) derivative along μ, by Gauss-Legendre quadrature (:func:`_log_delta_integral`).
Checked against mpmath at 400-900 digits over μ, ε in [1e-300, 1e12]: log δ to within 5e-13.

Every input a float can hold gets either its answer or :class:`~certify.errors.InvalidInput`:
``sigma_for`` refuses (naming ``sensitivity`` or ``epsilon``) when σ would overflow to inf or
fall below the smallest normal float (2.2e-308, where a released σ would be 0 or lose its
digits); ``epsilon_for`` returns ``math.inf`` when ε exceeds the largest float (σ below about
1e-154·Δ), which is both its correctly rounded value and what it gives for σ = 0. Root searches
end on the safe side of the root: δ at the σ or ε returned is at most the target.

Only the ratio μ = Δ/σ matters for the analytic curve (μ-GDP, Dong, Roth & Su 2022), so σ is
linear in Δ: ``sigma_for(eps, delta, c * Delta) == c * sigma_for(eps, delta, Delta)``.
"""

from __future__ import annotations

import math
import sys
from typing import TypeVar

import numpy as np

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
# the float range: every extreme input either gets its correctly rounded answer or InvalidInput

_LOG_MAX = math.log(sys.float_info.max)  # log of the largest float, ~709.78
_LOG_MIN_NORMAL = math.log(sys.float_info.min)  # log of the smallest normal float, ~-708.40
_LOG_MIN_SUBNORMAL = math.log(5e-324)  # log of the smallest positive float, ~-744.44
_SMALLEST = 5e-324  # the smallest positive float
_LOG_SIGMA_LIMIT = 1000.0  # |log σ| for Δ = 1 past which δ is exactly 0 or 1 in floating point


def _exp(x: float) -> float:
    """``math.exp`` that rounds an overflow to ``inf`` (as IEEE arithmetic does) instead of raising."""
    try:
        return math.exp(x)
    except OverflowError:
        return math.inf


def _log_c(delta: float) -> float:
    """log √(2 ln(1.25/δ)), the classic constant, computed without forming 1.25/δ (which
    overflows for a subnormal δ)."""
    return 0.5 * math.log(2.0 * (math.log(1.25) - math.log(delta)))


# ----------------------------------------------------------------------------------------------
# the analytic Gaussian privacy curve, for sensitivity 1 and noise 1/mu


def _log1mexp(x: float) -> float:
    """log(1 − e^x) for x < 0, accurate at both ends (Mächler 2012)."""
    if x > -_LN2:
        return math.log(-math.expm1(x))
    return math.log1p(-math.exp(x))


# Gauss-Legendre rule for _log_delta_integral: 20 nodes integrate e^(polynomial) to machine
# precision on a panel over which the exponent changes by at most about 2.
_GL_NODES, _GL_WEIGHTS = np.polynomial.legendre.leggauss(20)
_LOG_GL_WEIGHTS = np.log(_GL_WEIGHTS)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_SQRT2 = math.sqrt(2.0)
_MAX_PANELS = 64
#: (2k − 1)!! for the asymptotic series of erfcx used when w = s + t >= 30 (8 terms: the first
#: omitted, 17!!/w^18, is below 1e-18 of the sum).
_ODD_FACTORIALS = np.array([1.0, 3.0, 15.0, 105.0, 945.0, 10395.0, 135135.0, 2027025.0])


FloatOrArray = TypeVar("FloatOrArray", float, np.ndarray)  # a number, or an array of them elementwise


def erfcx(x: FloatOrArray) -> FloatOrArray:
    """scipy.special.erfcx, imported on first use: this module is imported by every command
    (the configuration names its mechanisms), scipy only by those that calibrate."""
    from scipy.special import erfcx as scaled_erfc

    return scaled_erfc(x)


def log_ndtr(x: float) -> float:
    """scipy.special.log_ndtr (log Φ), imported on first use (see :func:`erfcx`)."""
    from scipy.special import log_ndtr as log_cdf

    return log_cdf(x)


def _log_delta_integral(mu: float, t: float) -> float | None:
    """log δ for Δ/σ = mu and t = ε/μ as the integral of a positive function, or None when the
    integrand varies too fast over [0, μ/2] for the rule (only where δ is far below any target).

    With f(s) = Φ(s − t) − e^(2st) Φ(−s − t), δ = f(μ/2) and f(0) = 0; using
    e^(2st) φ(s + t) = φ(s − t),

        f'(s) = 2 e^(−(s−t)²/2) M(s, t),   M = 1/√(2π) − (t/2) erfcx((s + t)/√2) > 0,

    so δ = ∫₀^(μ/2) f'(s) ds has no cancellation. The closed form subtracts two numbers near
    Φ(−t) when μ is small (σ ≫ Δ, small ε and δ) and loses every digit: it once gave σ = 3.6e15
    instead of 2.8e299 for ε = δ = 1e-300.
    """
    a = 0.5 * mu
    span = a * (t + a) / 2.0  # how far the exponent −(s−t)²/2 moves, in units of 2
    if not span <= _MAX_PANELS:
        return None
    panels = max(1, math.ceil(span))
    h = a / panels
    left = np.arange(panels)[:, None] * h
    s = (left + 0.5 * h * (_GL_NODES[None, :] + 1.0)).ravel()
    w = s + t
    with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
        direct = _INV_SQRT_2PI - 0.5 * t * erfcx(w / math.sqrt(2.0))
        # for large w the direct M cancels (both terms near 1/√(2π)); the asymptotic series
        # of erfcx gives M = (s/w + (t/w) Σ (−1)^(k+1) (2k−1)!!/w^(2k)) / √(2π) without it
        inv2 = 1.0 / np.maximum(w, 1.0) ** 2
        powers = inv2[:, None] ** np.arange(1, _ODD_FACTORIALS.size + 1)[None, :]
        signs = (-1.0) ** np.arange(_ODD_FACTORIALS.size)
        series = (powers * (signs * _ODD_FACTORIALS)[None, :]).sum(axis=1)
        asymptotic = _INV_SQRT_2PI * (s / w + (t / w) * series)
        m = np.where(w >= 30.0, asymptotic, direct)
        log_f = _LN2 - 0.5 * (s - t) ** 2 + np.log(m)
    if not np.all(np.isfinite(log_f)):  # pragma: no cover - M > 0 for every s, t >= 0
        return None
    terms = log_f + np.tile(_LOG_GL_WEIGHTS, panels)
    top = float(terms.max())
    # log(h/2) from log μ: h itself underflows to 0 for a subnormal μ
    log_half_h = math.log(mu) - 2.0 * _LN2 - math.log(panels)
    return log_half_h + top + math.log(float(np.exp(terms - top).sum()))


def _two_product(x: float, y: float) -> tuple[float, float]:
    """hi + lo == x·y exactly (Dekker 1971, with Veltkamp's split); for |x|, |y| < 1e150."""

    def split(v: float) -> tuple[float, float]:
        c = 134217729.0 * v  # 2^27 + 1
        high = c - (c - v)
        return high, v - high

    hi = x * y
    xh, xl = split(x)
    yh, yl = split(y)
    lo = ((xh * yh - hi) + xh * yl + xl * yh) + xl * yl
    return hi, lo


def _log_delta(mu: float, epsilon: float) -> float:
    """log δ(ε) of the Gaussian mechanism with Δ/σ = mu (0 ≤ mu ≤ inf, 0 ≤ ε ≤ inf).

    Returns ``-inf`` when δ underflows (only for astronomically small δ). The ends of the range
    are the limits of the curve, so that a root search may step past the float range of σ or ε:
    mu = 0 (σ/Δ beyond the largest float) and ε = inf give δ = 0, mu = inf (σ/Δ below the
    smallest float) gives δ = 1.

    δ = Φ(d)(1 − e^x) with d = a − b, a = μ/2, b = ε/μ and x = log(e^ε Φ(−a−b)/Φ(d)). Since
    ε − (a+b)²/2 = −d²/2 exactly, e^ε Φ(−a−b) = ½ e^(−d²/2) erfcx((a+b)/√2): x is formed
    from d and erfcx without ever subtracting ε from (a+b)²/2, two numbers of size ε that
    cancel to O(d²) (at μ = 1e6 that cancellation alone cost 4 digits of δ).
    """
    if mu == 0.0 or math.isinf(epsilon):
        return -math.inf
    if math.isinf(mu):
        return 0.0
    a = 0.5 * mu
    b = epsilon / mu  # may overflow to inf: then Φ(a − b) = 0 below
    d = a - b
    if 1.0 < mu < 1e150 and b < 1e150:
        # a ≈ b when δ matters at large μ, so d is exact but the rounding of ε/μ (half an ulp
        # of b, 6e-5 at b = 5e11) moves δ; add back the exact residual (ε − b·μ)/μ
        hi, lo = _two_product(b, mu)
        d -= ((epsilon - hi) - lo) / mu
    log_p = float(log_ndtr(d))
    if log_p == -math.inf:
        return -math.inf  # δ ≤ Φ(d), which is 0 in floating point
    log_erfcx_sum = math.log(float(erfcx((a + b) / _SQRT2))) if math.isfinite(a + b) else -math.inf
    if d < 0.0:
        # Φ(d) = ½ e^(−d²/2) erfcx(−d/√2): the ratio is erfcx((a+b)/√2) / erfcx(−d/√2)
        other = math.log(float(erfcx(-d / _SQRT2)))
        x = log_erfcx_sum - other
    else:
        other = log_p
        x = -0.5 * d * d - _LN2 + log_erfcx_sum - log_p
    # x carries a rounding error of a few ulps of the logs it subtracts, which log(1 − e^x)
    # turns into a relative error of δ of about that over |x|: where that passes ~1e-12 (small
    # μ: the two logs nearly equal), integrate instead
    if not -x >= 1e-3 * (abs(log_erfcx_sum) + abs(other) + 1.0) and math.isfinite(b):
        value = _log_delta_integral(mu, b)
        if value is not None:
            return value
    if not x < 0.0:
        return -math.inf
    return log_p + _log1mexp(x)


def _step(n: int) -> float:
    """The n-th bracketing step: ln 2 (a factor 2 in σ or ε) for the first 8, where every root
    of ordinary inputs lies, then doubling, so that a root 700 away (σ for ε = 1e-300, whose
    start is the classic 1e300) is reached in a few dozen steps instead of a thousand."""
    return _LN2 * 2.0 ** max(0, n - 8)


def _bracket_decreasing(g, start: float, lower: float, upper: float) -> tuple[float, float]:
    """Find lo < hi in [lower, upper] with g(lo) >= 0 >= g(hi) for a decreasing g, stepping outward
    from ``start``; the caller has checked g(lower) > 0 >= g(upper), so the search ends there."""
    start = min(max(start, lower), upper)
    lo = hi = start
    g_lo = g_hi = g(start)
    if g_lo == 0.0:
        return start, start
    n = 0
    while g_lo <= 0.0 and lo > lower:
        hi, g_hi = lo, g_lo
        lo = max(lo - _step(n), lower)
        g_lo = g(lo)
        n += 1
        if n > _MAX_EXPANSIONS:  # pragma: no cover - the steps reach the limits first
            raise RuntimeError("could not bracket the root (lower end)")
    while g_hi >= 0.0 and hi < upper:
        lo, g_lo = hi, g_hi
        hi = min(hi + _step(n), upper)
        g_hi = g(hi)
        n += 1
        if n > _MAX_EXPANSIONS:  # pragma: no cover - the steps reach the limits first
            raise RuntimeError("could not bracket the root (upper end)")
    return lo, hi


def _solve_decreasing(g, start: float, lower: float, upper: float) -> float:
    lo, hi = _bracket_decreasing(g, start, lower, upper)
    if lo == hi:
        return lo
    from scipy.optimize import brentq  # on first use (see erfcx)

    root = float(brentq(g, lo, hi, xtol=_XTOL, rtol=_RTOL, maxiter=_MAXITER))
    # brentq lands within its tolerance on either side of the root; step to the side where
    # g <= 0 (δ at or below the target), so that the σ or ε returned is never the too-small
    # one. It matters where the curve is steep (ε ≈ 5e299 at σ = 1e-150: a relative 1e-14 too
    # small an ε has δ = 1).
    if g(root) <= 0.0:
        return root
    bad, good, step = root, root, _XTOL + 4.0 * _RTOL * abs(root)
    while good < hi:
        good = min(good + step, hi)
        if g(good) <= 0.0:
            break
        bad, step = good, 2.0 * step
    for _ in range(60):  # bisect back towards the root, keeping g(good) <= 0
        mid = 0.5 * (bad + good)
        if not bad < mid < good:
            break
        if g(mid) <= 0.0:
            good = mid
        else:
            bad = mid
    return good


def _analytic_log_unit_sigma(epsilon: float, delta: float) -> float:
    """log of the smallest σ with δ(σ) ≤ delta for Δ = 1 (Balle & Wang 2018, Thm 8).

    Solved in log σ so that σ itself may lie outside the float range (a subnormal δ with a tiny
    ε needs σ above 1e308); the caller decides whether Δ·σ is representable.
    """
    log_target = math.log(delta)

    def g(log_sigma: float) -> float:
        value = _log_delta(_exp(-log_sigma), epsilon)
        return max(value, _LOG_FLOOR) - log_target

    # Start at the classic formula: within a small factor of the root for every (ε, δ). The
    # limits hold the root for every valid (ε, δ): at σ = e^-1000 the release is noiseless
    # (δ = 1 > target), at σ = e^1000 it is pure noise (δ = 0 < target).
    start = _log_c(delta) - math.log(epsilon)
    return _solve_decreasing(g, start, -_LOG_SIGMA_LIMIT, _LOG_SIGMA_LIMIT)


def _analytic_unit_sigma(epsilon: float, delta: float) -> float:
    """Smallest σ with δ(σ) ≤ delta for Δ = 1 (Balle & Wang 2018, Thm 8)."""
    return _exp(_analytic_log_unit_sigma(epsilon, delta))


def _classic_c(delta: float) -> float:
    """√(2 ln(1.25/δ)): the textbook expression, except for a subnormal δ, where 1.25/δ
    overflows and the log form is used."""
    ratio = 1.25 / delta
    if math.isinf(ratio):
        return math.exp(_log_c(delta))
    return math.sqrt(2.0 * math.log(ratio))


def _classic_unit_sigma(epsilon: float, delta: float) -> float:
    if epsilon > 1.0:
        raise _classic_epsilon_error(epsilon)
    return _classic_c(delta) / epsilon  # inf for ε below ~2e-307


def _classic_sigma_error(sigma: float, delta: float, sensitivity: float, c: float) -> InvalidInput:
    """epsilon_for's refusal of a σ whose classic ε exceeds 1, naming σ (the input the user
    gave) and the smallest σ that works, or Δ when no finite σ does."""
    hint = (
        "The classic calibration epsilon = Delta*sqrt(2 ln(1.25/delta))/sigma is proven only "
        "for epsilon <= 1 (Dwork & Roth, Thm A.1); use mechanism='analytic' (Balle & Wang "
        "2018), which is exact for every epsilon."
    )
    smallest = sensitivity * c
    if math.isinf(smallest):
        return InvalidInput(
            "sensitivity",
            f"at most {sys.float_info.max / c:.6g} at delta {delta:g} with the classic "
            "mechanism (a larger one needs a sigma beyond the largest float)",
            sensitivity,
            hint=hint,
        )
    return InvalidInput(
        "sigma",
        f"at least {smallest:.6g} at sensitivity {sensitivity:g}, delta {delta:g} with the "
        "classic mechanism (so that its epsilon is <= 1)",
        sigma,
        hint=hint,
    )


def _log_unit_sigma(epsilon: float, delta: float, mechanism: str) -> float:
    """log σ for Δ = 1; validated inputs (classic: ε ≤ 1)."""
    if mechanism == "classic":
        return math.log(_classic_c(delta)) - math.log(epsilon)
    return _analytic_log_unit_sigma(epsilon, delta)


def _unit_sigma(epsilon: float, delta: float, mechanism: str) -> float:
    """σ for Δ = 1; validated inputs. ``sigma_for`` is ``sensitivity * _unit_sigma(...)``
    (``inf`` where σ for Δ = 1 exceeds the largest float: only for ε or δ near 1e-308)."""
    if mechanism == "classic":
        return _classic_unit_sigma(epsilon, delta)
    return _analytic_unit_sigma(epsilon, delta)


def _sigma_out_of_range(
    log_sigma: float, log_unit: float, epsilon: float, delta: float, sensitivity: float, mechanism: str
) -> InvalidInput:
    """The error for a σ = Δ·unit outside the normal floats, naming the input to change."""
    where = f"at epsilon {epsilon:g}, delta {delta:g} with the {mechanism} mechanism"
    if log_sigma < _LOG_MIN_NORMAL:
        # σ for Δ = 1 is at least ~1e-155 (at ε = 1.8e308), so only a tiny Δ gets here
        smallest = _exp(_LOG_MIN_NORMAL - log_unit)
        return InvalidInput(
            "sensitivity",
            f"0 or at least {smallest:.6g} {where}",
            sensitivity,
            hint="A smaller positive sensitivity needs a sigma below the smallest normal float "
            "(2.2e-308), which cannot be released faithfully.",
        )
    if log_unit <= _LOG_MAX and sensitivity > 1.0:
        largest = _exp(_LOG_MAX - log_unit)
        return InvalidInput(
            "sensitivity",
            f"at most {largest:.6g} {where}",
            sensitivity,
            hint=f"sigma = sensitivity x {_exp(log_unit):.6g} would exceed the largest float (1.8e308).",
        )
    if mechanism == "classic":
        smallest = _exp(math.log(sensitivity) + _log_c(delta) - _LOG_MAX)
        return InvalidInput(
            "epsilon",
            f"at least {smallest:.6g} at sensitivity {sensitivity:g}, delta {delta:g} with the classic mechanism",
            epsilon,
            hint="sigma = sensitivity*sqrt(2 ln(1.25/delta))/epsilon would exceed the largest float (1.8e308).",
        )
    return InvalidInput(
        "epsilon",
        f"large enough that sigma fits in a float at sensitivity {sensitivity:g}, delta {delta:g}",
        epsilon,
        hint="The analytic sigma exceeds the largest float (1.8e308); a larger epsilon or delta needs less noise.",
    )


# ----------------------------------------------------------------------------------------------
# public API


def sigma_for(epsilon: float, delta: float, sensitivity: float, mechanism: str = "analytic") -> float:
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
        ``0.0`` when ``sensitivity == 0`` (identical neighbours need no noise); otherwise a
        normal float (never inf, 0 or subnormal).

    Raises
    ------
    InvalidInput
        If ``epsilon`` is not finite and > 0, ``delta`` is not in (0, 1), ``sensitivity`` is not
        finite and ≥ 0, ``mechanism`` is not one of :data:`MECHANISMS`, or
        ``mechanism="classic"`` with ``epsilon > 1`` (use ``mechanism="analytic"``); or if σ is
        outside the normal floats: ``sensitivity`` above about 1.8e308/σ₁ or below
        2.2e-308/σ₁ (σ₁ = σ at Δ = 1), or ``epsilon`` so small that σ₁ itself overflows (classic:
        below Δ·√(2 ln(1.25/δ))/1.8e308; analytic: only with a subnormal δ).

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
    # Decide in log space whether Δ·σ₁ is a normal float: a σ that overflows to inf or
    # underflows to 0 (or to a subnormal, with few significant bits) would be a false answer.
    log_unit = _log_unit_sigma(eps, dlt, mechanism)
    log_sigma = math.log(sens) + log_unit
    if not _LOG_MIN_NORMAL <= log_sigma <= _LOG_MAX:
        raise _sigma_out_of_range(log_sigma, log_unit, eps, dlt, sens, mechanism)
    unit = _unit_sigma(eps, dlt, mechanism)
    if math.isinf(unit):  # σ₁ alone overflows but a tiny Δ brings Δ·σ₁ back into range
        return _exp(log_sigma)
    sigma = sens * unit  # the product, not exp(log σ): exactly what the bounds' searches compare
    if math.isinf(sigma) or sigma < sys.float_info.min:  # pragma: no cover - log test rounding edge
        raise _sigma_out_of_range(log_sigma, log_unit, eps, dlt, sens, mechanism)
    return sigma


def epsilon_for(sigma: float, delta: float, sensitivity: float, mechanism: str = "analytic") -> float:
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
        ``sigma == 0`` and ``sensitivity > 0`` (no noise gives no finite ε, for either mechanism)
        and (analytic) when ε exceeds the largest float, about σ < 1e-154·Δ (inf is then its
        correctly rounded value); ``5e-324`` when 0 < ε < 5e-324 (an upper bound).

    Raises
    ------
    InvalidInput
        If ``sigma`` or ``sensitivity`` is not finite and ≥ 0, ``delta`` is not in (0, 1),
        ``mechanism`` is unknown, or ``mechanism="classic"`` and the resulting ε exceeds 1 (the
        classic formula is unproven there; use ``mechanism="analytic"``): that error names
        ``sigma`` and the smallest σ that works, Δ·√(2 ln(1.25/δ)) (or ``sensitivity`` when
        even that overflows).

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
    mu = sens / sig  # inf when Δ/σ > 1.8e308, 0 when below the smallest float
    if mechanism == "classic":
        c = _classic_c(dlt)
        eps = mu * c
        if eps > 1.0:
            raise _classic_sigma_error(sig, dlt, sens, c)
        # a positive ε below the smallest float is reported as that float: an upper bound
        return max(eps, _SMALLEST)
    if math.isinf(mu):
        return math.inf  # ε ≈ μ²/2 is beyond the largest float: inf is its rounding
    if mu == 0.0:
        return 0.0

    log_target = math.log(dlt)
    if _log_delta(mu, 0.0) <= log_target:
        return 0.0
    # ε beyond the largest float (σ ≲ 1e-154·Δ): inf is the correctly rounded value, and the
    # one this function already gives for σ = 0; a finite number would understate ε.
    if _log_delta(mu, sys.float_info.max) > log_target:
        return math.inf
    if _log_delta(mu, _SMALLEST) <= log_target:
        return _SMALLEST  # 0 < ε < 5e-324: the smallest float bounds it from above

    def g(log_eps: float) -> float:
        value = _log_delta(mu, _exp(log_eps))
        return max(value, _LOG_FLOOR) - log_target

    start = math.log(mu) + _log_c(dlt)
    return min(_exp(_solve_decreasing(g, start, _LOG_MIN_SUBNORMAL, _LOG_MAX)), sys.float_info.max)


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
