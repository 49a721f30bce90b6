"""Rényi differential privacy of Gaussian releases: the pure mathematics the ledger composes.

* :func:`gaussian_release_rdp`: one Gaussian release with noise σ and sensitivity Δ is
  (α, αΔ²/(2σ²))-RDP at every order α > 1 (Mironov 2017, Prop. 7);
* :func:`rdp_to_epsilon`: RDP at several orders to the smallest (ε, δ) (Balle et al. 2020,
  Theorem 21);
* :func:`basic_composition_epsilon`: Σε, Σδ, for comparison.

RDP adds up under adaptive composition (Mironov 2017, Prop. 1), so the ledger sums the curves
of its releases. Both conversions use Opacus's RDP analysis
(``opacus.accountants.analysis.rdp``), imported on first use so that ``import certify`` stays
free of torch.
"""

from __future__ import annotations

import math
import warnings as _warnings
from collections.abc import Iterable, Sequence

import numpy as np

from certify.errors import InvalidInput, Real, require_probability

__all__ = [
    "DEFAULT_ORDERS",
    "NONNEGATIVE_OR_INF",
    "UNIT_INTERVAL",
    "basic_composition_epsilon",
    "check_orders",
    "gaussian_release_rdp",
    "rdp_to_epsilon",
]

DEFAULT_ORDERS: tuple[float, ...] = tuple([1 + x / 10.0 for x in range(1, 100)] + [float(a) for a in range(12, 64)])
"""RDP orders α at which the ledger accounts: 1.1, 1.2, …, 10.9, then 12, 13, …, 63.

The same 151 orders as Opacus's ``RDPAccountant.DEFAULT_ALPHAS``. The cumulative ε is the
minimum of the converted bound over these orders; a best order at either end of the grid means
a wider grid could give a smaller (still valid) ε.
"""


# ----------------------------------------------------------------------------------------------
# validation (the family of :mod:`certify.errors`, plus the array checks for orders and RDP)

NONNEGATIVE_OR_INF = Real(ge=0, allow_inf=True)
"""A number ≥ 0 that may be ``inf`` (σ, Δ, ε): not NaN, not a bool."""
UNIT_INTERVAL = Real(ge=0, le=1)
"""A number in the closed interval [0, 1] (a per-release δ, which may be 0)."""


def check_orders(orders: object) -> np.ndarray:
    """The RDP orders as a float array, each finite and > 1 (at least one), else raise."""
    allowed = "a non-empty sequence of finite RDP orders > 1"
    try:
        arr = np.asarray(orders, dtype=float)
    except (TypeError, ValueError):
        raise InvalidInput("orders", allowed, orders) from None
    if arr.ndim != 1 or arr.size == 0 or not np.all(np.isfinite(arr)) or not np.all(arr > 1.0):
        raise InvalidInput("orders", allowed, orders)
    return arr


def _check_rdp(rdp: object, n_orders: int) -> np.ndarray:
    allowed = f"a sequence of {n_orders} RDP values >= 0 (inf allowed), one per order"
    try:
        arr = np.asarray(rdp, dtype=float)
    except (TypeError, ValueError):
        raise InvalidInput("rdp", allowed, rdp) from None
    if arr.shape != (n_orders,) or not np.all(arr >= 0.0):  # NaN fails `>= 0`
        raise InvalidInput("rdp", allowed, rdp)
    return arr


def _opacus_rdp():
    """Opacus's RDP analysis module, imported on first use (it imports torch)."""
    from opacus.accountants.analysis import rdp

    return rdp


def gaussian_release_rdp(sigma: float, sensitivity: float, orders: Sequence[float] = DEFAULT_ORDERS) -> np.ndarray:
    """Rényi DP of one Gaussian release at each order: α Δ²/(2σ²).

    Computed with Opacus's analysis, ``compute_rdp(q=1.0, noise_multiplier=σ/Δ, steps=1,
    orders=orders)`` (sampling rate 1: the whole model is released, nothing is subsampled).

    Parameters
    ----------
    sigma : float
        Noise standard deviation σ of the release, a number ≥ 0; ``inf`` is allowed.
    sensitivity : float
        L2 sensitivity Δ: a bound on the distance between the noiseless unlearned and retrained
        models, finite and ≥ 0.
    orders : sequence of float, default :data:`DEFAULT_ORDERS`
        RDP orders α, each finite and > 1.

    Returns
    -------
    numpy.ndarray
        One RDP value per order, as floats. Special cases: zeros when ``sensitivity == 0`` (the
        two worlds coincide) or ``sigma == inf`` (the release is pure noise); ``+inf`` at every
        order when ``sigma == 0`` and ``sensitivity > 0`` (a noiseless release of differing
        models has no finite guarantee).

    Raises
    ------
    InvalidInput
        If ``sigma`` is NaN or negative, ``sensitivity`` is not finite and ≥ 0, or ``orders``
        is empty or holds an order that is not finite and > 1.

    References
    ----------
    .. [1] I. Mironov, "Rényi Differential Privacy", CSF 2017, Proposition 7 (Gaussian
       mechanism: ε(α) = αΔ²/(2σ²)).
    .. [2] Opacus, ``opacus.accountants.analysis.rdp.compute_rdp``.

    Examples
    --------
    >>> float(gaussian_release_rdp(2.0, 1.0, orders=[2.0])[0])
    0.25
    """
    sig = NONNEGATIVE_OR_INF.check("sigma", sigma)
    sens = NONNEGATIVE_OR_INF.check("sensitivity", sensitivity)
    alphas = check_orders(orders)
    if math.isinf(sens) or (sig == 0.0 and sens > 0.0):
        # no bound on the distance (an uncertified release, or privacy inside training that
        # output noise does not model), or a noiseless release of differing models
        return np.full(alphas.size, math.inf)
    if sens == 0.0 or math.isinf(sig):
        return np.zeros(alphas.size)
    rdp = _opacus_rdp().compute_rdp(q=1.0, noise_multiplier=sig / sens, steps=1, orders=[float(a) for a in alphas])
    return np.asarray(rdp, dtype=float)


def rdp_to_epsilon(rdp: Sequence[float], orders: Sequence[float], delta: float) -> tuple[float, float | None]:
    """Convert RDP at several orders to the smallest ε with (ε, δ)-DP.

    Uses Opacus's ``get_privacy_spent``, i.e. the conversion of Balle et al. 2020 (Thm 21),

        ε = min over α of  rdp(α) − (log δ + log α)/(α − 1) + log((α − 1)/α),

    which is never larger than the classic ``rdp(α) + log(1/δ)/(α − 1)`` (Mironov 2017, Prop. 3).

    Parameters
    ----------
    rdp : sequence of float
        RDP values, one per order, each ≥ 0 (``inf`` allowed).
    orders : sequence of float
        The orders α the values belong to, each finite and > 1.
    delta : float
        Target δ, in the open interval (0, 1).

    Returns
    -------
    (float, float or None)
        ``(epsilon, best_order)``: ε ≥ 0 and the order that attains it. Special cases:
        ``(0.0, None)`` when every value is 0 (zero Rényi divergence means identical
        distributions); ``(inf, None)`` when every value is ``inf``. A negative minimum (possible
        for tiny RDP and large δ) is reported as 0.0, which (ε < 0, δ)-DP implies.

    Raises
    ------
    InvalidInput
        If ``orders`` is invalid, ``rdp`` does not hold one value ≥ 0 per order, or ``delta`` is
        not in (0, 1).

    References
    ----------
    .. [1] B. Balle, G. Barthe, M. Gaboardi, J. Hsu and T. Sato, "Hypothesis Testing
       Interpretations and Rényi Differential Privacy", AISTATS 2020, Theorem 21.
    .. [2] I. Mironov, "Rényi Differential Privacy", CSF 2017, Proposition 3.
    .. [3] Opacus, ``opacus.accountants.analysis.rdp.get_privacy_spent``.
    """
    alphas = check_orders(orders)
    values = _check_rdp(rdp, alphas.size)
    dlt = require_probability("delta", delta)
    if np.all(values == 0.0):
        return 0.0, None
    if np.all(np.isinf(values)):
        return math.inf, None
    with _warnings.catch_warnings():
        # Opacus warns when the best order is at an end of the grid; the ledger reports that
        # itself, in words, and the library stays silent.
        _warnings.simplefilter("ignore")
        eps, order = _opacus_rdp().get_privacy_spent(orders=[float(a) for a in alphas], rdp=values, delta=dlt)
    return max(0.0, float(eps)), float(order)


def basic_composition_epsilon(epsilons: Iterable[float], deltas: Iterable[float]) -> tuple[float, float]:
    """Basic composition: k releases that are (ε_i, δ_i)-DP are (Σε_i, Σδ_i)-DP together.

    Shown next to the RDP composition for comparison. For equal Gaussian releases at ε = 1,
    δ = 1e-5 each, RDP (at δ = 1e-5) is smaller from the second release on (1.596 vs 2 for two
    releases, 3.915 vs 10 for ten); after a single release it is larger (1.093 vs 1), because
    RDP converts a Gaussian mechanism to (ε, δ) with some slack.

    Parameters
    ----------
    epsilons : iterable of float
        Per-release ε_i, each ≥ 0 (``inf`` allowed).
    deltas : iterable of float
        Per-release δ_i, each in [0, 1], as many as ``epsilons``.

    Returns
    -------
    (float, float)
        ``(Σε_i, Σδ_i)``; ``(0.0, 0.0)`` for no releases. A Σδ_i ≥ 1 is returned as is and
        makes the guarantee vacuous.

    Raises
    ------
    InvalidInput
        If an ε_i is NaN or negative, a δ_i is outside [0, 1], or the lengths differ.

    References
    ----------
    .. [1] C. Dwork and A. Roth, "The Algorithmic Foundations of Differential Privacy", 2014,
       Theorem 3.16.
    """
    eps = [NONNEGATIVE_OR_INF.check("epsilons", e) for e in epsilons]
    dls = [UNIT_INTERVAL.check("deltas", d) for d in deltas]
    if len(eps) != len(dls):
        raise InvalidInput("deltas", f"one value per epsilon ({len(eps)})", f"{len(dls)} values")
    return float(math.fsum(eps)) if eps else 0.0, float(math.fsum(dls)) if dls else 0.0
