"""Group privacy: what a record-level DP guarantee says about a group of m records.

Used by DP-SGD as an unlearning baseline (:mod:`unlearners.dpsgd`): deleting m records from a
model trained with DP-SGD changes nothing, so the deletion guarantee is the training guarantee
for datasets that differ in m records. Adjacency is add/remove throughout: D \\ Z is reached
from D by m single-record removals D = D_0 ⊃ D_1 ⊃ … ⊃ D_m = D \\ Z, each step a neighbouring
pair of the record-level guarantee.

Two routes, both correct, neither tight (the tight group accounting of Poisson-subsampled
DP-SGD is not attempted here); :func:`dpsgd_group_epsilon` reports the smaller.

1. **Classic (ε, δ) chaining** (:func:`classic_group_privacy`, :func:`classic_group_epsilon`).
   An (ε₁, δ₁)-DP mechanism is (mε₁, m·e^{(m−1)ε₁}·δ₁)-DP for groups of m (Vadhan 2017,
   "The Complexity of Differential Privacy", Lemma 2.2; Dwork & Roth 2014, Thm 2.2 for δ = 0).
   Derivation: chaining P[M(D_0) ∈ S] ≤ e^{ε₁} P[M(D_1) ∈ S] + δ₁ over the m steps gives
   δ_m = δ₁ Σ_{i<m} e^{iε₁} ≤ m e^{(m−1)ε₁} δ₁. DP-SGD's accountant gives a whole curve
   ε₁(δ₁), so for a requested group δ the route picks the δ₁ with m e^{(m−1)ε₁(δ₁)} δ₁ ≤ δ
   that makes ε₁(δ₁), hence mε₁, smallest.
2. **RDP group privacy** (:func:`rdp_group_privacy`, :func:`dpsgd_group_rdp_epsilon`).
   Mironov 2017, "Rényi Differential Privacy" (CSF), Proposition 2: if a mechanism is
   (α, ρ)-RDP and α ≥ 2^{c+1}, it is (α/2^c, 3^c ρ)-RDP for groups of 2^c records. Derivation:
   the weak triangle inequality (ibid. Prop. 11 with p = q = 2),
   D_β(P‖R) ≤ (β − ½)/(β − 1)·D_{2β}(P‖Q) + D_{2β−1}(Q‖R), with Q the dataset halfway along
   the chain; for β ≥ 2 the coefficient is ≤ 3/2 and D_{2β−1} ≤ D_{2β} (RDP grows with the
   order), so one halving costs a factor ≤ 5/2 ≤ 3 and doubles the order. The induction also
   covers every group size m ≤ 2^c (split a chain of length k into ⌈k/2⌉ and ⌊k/2⌋), so
   c = ⌈log₂ m⌉. DP-SGD's record-level RDP curve is that of the Poisson-subsampled Gaussian
   (Mironov, Talwar & Zhang 2019, computed by Opacus), valid for add/remove neighbours in
   both directions; the group curve is converted to (ε, δ) with :func:`rdp_to_dp`.

Pure functions of numbers (the RDP curve comes from Opacus's numerical analysis, numpy only).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from certify.errors import InvalidInput, require_integer, require_nonnegative, require_positive, require_probability

__all__ = [
    "GROUP_ORDERS",
    "RDP_ORDERS",
    "GroupGuarantee",
    "classic_group_epsilon",
    "classic_group_privacy",
    "dpsgd_group_epsilon",
    "dpsgd_group_rdp_epsilon",
    "dpsgd_rdp_epsilon",
    "group_levels",
    "rdp_group_privacy",
    "rdp_to_dp",
    "subsampled_gaussian_rdp",
]

RDP_ORDERS: tuple[float, ...] = (
    1.25,
    1.5,
    1.75,
    2,
    2.5,
    3,
    4,
    5,
    6,
    8,
    10,
    12,
    16,
    20,
    24,
    32,
    48,
    64,
    96,
    128,
    192,
    256,
    384,
    512,
    768,
    1024,
)
"""Orders α searched by the record-level RDP → (ε, δ) conversion (wider than Opacus's default,
whose largest order 63 is too small at the tiny δ₁ the classic group route asks for)."""

GROUP_ORDERS: tuple[float, ...] = (2, 2.5, 3, 4, 5, 6, 8, 10, 12, 16, 24, 32, 48, 64, 128, 256)
"""Group orders β = α/2^c searched by the RDP group route (Proposition 2 needs β ≥ 2)."""

_MAX_LOG_INV_DELTA = 700.0  # δ₁ = e^{−L} stays a normal double for L ≤ 700
_MAX_GROUP_LEVELS = 16  # 2^16-record groups: the group orders α = β·2^c stay computable


def _check_group(m: object) -> int:
    return require_integer("m", m, 1)


# -- route 1: classic (ε, δ) chaining ------------------------------------------------------------
def classic_group_privacy(epsilon: float, delta: float, m: int) -> tuple[float, float]:
    """The (ε, δ) guarantee for groups of m records of an (ε, δ)-DP mechanism.

    Vadhan 2017, Lemma 2.2 (Dwork & Roth 2014, Theorem 2.2 for δ = 0):
    (ε_m, δ_m) = (m·ε, m·e^{(m−1)ε}·δ). δ_m may exceed 1 (a vacuous guarantee); it is returned
    as computed (``inf`` on overflow) so the caller sees how far off it is.

    Parameters
    ----------
    epsilon, delta:
        The record-level guarantee (ε ≥ 0, 0 ≤ δ < 1).
    m:
        Group size, an integer ≥ 1.

    Returns
    -------
    (ε_m, δ_m)
    """
    epsilon, m = require_nonnegative("epsilon", epsilon), _check_group(m)
    if not require_nonnegative("delta", delta) < 1:
        raise InvalidInput("delta", "a number in [0, 1)", delta)
    if delta == 0:
        return m * epsilon, 0.0
    log_delta_m = math.log(delta) + math.log(m) + (m - 1) * epsilon
    return m * epsilon, math.exp(log_delta_m) if log_delta_m < 700 else math.inf


def classic_group_epsilon(
    epsilon_of_delta: Callable[[float], float], m: int, delta: float, *, rel_tol: float = 0.01
) -> tuple[float, float]:
    """The smallest group ε the classic route gives for the group δ ``delta``.

    Searches the record-level δ₁ = e^{−L} on a mechanism's privacy curve ε₁(δ₁) for the
    smallest L with m·e^{(m−1)ε₁(δ₁)}·δ₁ ≤ δ (:func:`classic_group_privacy` then gives a group
    δ within ``delta``), and returns m·ε₁(δ₁). L starts at log(m/δ) (where the constraint holds
    for m = 1 only), grows by doubling steps until feasible, then bisects to ``rel_tol`` (relative,
    in L). Every returned pair was evaluated and checked, so the guarantee holds whatever the
    shape of the curve; only its optimality assumes that the constraint, once met, stays met.

    Parameters
    ----------
    epsilon_of_delta:
        ε₁(δ₁): the mechanism's record-level ε at δ₁ (an upper bound, e.g. an accountant's).
    m:
        Group size, an integer ≥ 1 (m = 1 returns ε₁(δ) and δ).
    delta:
        Requested group δ ∈ (0, 1).
    rel_tol:
        Relative precision of the search in L = log(1/δ₁).

    Returns
    -------
    (ε_group, δ₁)
        ``(inf, nan)`` when no δ₁ ≥ e^{−700} meets the constraint.
    """
    m, delta = _check_group(m), require_probability("delta", delta)
    rel_tol = require_positive("rel_tol", rel_tol)
    log_delta = math.log(delta)
    seen: dict[float, float] = {}

    def feasible(L: float) -> bool:
        seen[L] = float(epsilon_of_delta(math.exp(-L)))
        return math.log(m) + (m - 1) * seen[L] - L <= log_delta

    lo = math.log(m) - log_delta
    if feasible(lo):
        return m * seen[lo], math.exp(-lo)
    step = 1.0
    while True:  # doubling steps in L until the constraint holds
        hi = min(lo + step, _MAX_LOG_INV_DELTA)
        if feasible(hi):
            break
        if hi == _MAX_LOG_INV_DELTA:
            return math.inf, math.nan
        lo, step = hi, 2.0 * step
    while hi - lo > rel_tol * hi:
        mid = 0.5 * (lo + hi)
        if feasible(mid):
            hi = mid
        else:
            lo = mid
    return m * seen[hi], math.exp(-hi)


# -- route 2: RDP group privacy ---------------------------------------------------------------
def group_levels(m: int) -> int:
    """c = ⌈log₂ m⌉: the halvings Proposition 2 needs for a group of m ≤ 2^c records."""
    return (_check_group(m) - 1).bit_length()


def rdp_group_privacy(order: float, rdp: float, m: int) -> tuple[float, float]:
    """Mironov 2017, Proposition 2: an (α, ρ)-RDP mechanism is (α/2^c, 3^c ρ)-RDP for groups of m.

    c = ⌈log₂ m⌉ (the proposition for 2^c records covers every smaller group, see the module
    docstring); it requires α ≥ 2^{c+1}, i.e. a group order α/2^c ≥ 2, for c ≥ 1.

    Returns
    -------
    (group order α/2^c, group RDP 3^c ρ)
    """
    order, rdp, m = require_positive("order", order), require_nonnegative("rdp", rdp), _check_group(m)
    c = group_levels(m)
    if c and order < 2 ** (c + 1):
        raise InvalidInput(
            "order",
            f"at least 2^(c+1) = {2 ** (c + 1)} for a group of m = {m} (Mironov 2017, Proposition 2, c = {c})",
            order,
        )
    return order / 2**c, 3**c * rdp


def rdp_to_dp(orders: Sequence[float], rdp: Sequence[float] | np.ndarray, delta: float) -> tuple[float, float]:
    """Convert an RDP curve ρ(α) to (ε, δ)-DP at the best listed order.

    ε = min_α ρ(α) + log((α−1)/α) − (log δ + log α)/(α − 1), floored at 0
    (Balle, Barthe, Gaboardi, Hsu & Sato 2020, "Hypothesis Testing Interpretations and Rényi
    Differential Privacy", Theorem 21; Canonne, Kamath & Steinke 2020, Proposition 12). This is
    the conversion Opacus's RDP accountant uses.

    Returns
    -------
    (ε, α*)
        ``(inf, nan)`` when every order gives ρ = ∞.
    """
    delta = require_probability("delta", delta)
    a = np.asarray(orders, dtype=float)
    r = np.asarray(rdp, dtype=float)
    if a.shape != r.shape or a.ndim != 1 or a.size == 0 or not np.all(a > 1):
        raise InvalidInput("orders", "a non-empty list of orders > 1, one per RDP value", list(a))
    with np.errstate(invalid="ignore"):
        eps = r + np.log((a - 1) / a) - (math.log(delta) + np.log(a)) / (a - 1)
    if not np.any(np.isfinite(eps)):
        return math.inf, math.nan
    best = int(np.nanargmin(eps))
    return max(float(eps[best]), 0.0), float(a[best])


def subsampled_gaussian_rdp(
    noise_multiplier: float, sample_rate: float, steps: int, orders: Sequence[float]
) -> np.ndarray:
    """RDP ρ(α) of ``steps`` compositions of the Poisson-subsampled Gaussian mechanism (DP-SGD).

    Mironov, Talwar & Zhang 2019, "Rényi Differential Privacy of the Sampled Gaussian
    Mechanism", Sec. 3, as implemented by Opacus (``opacus.accountants.analysis.rdp``); noise
    std = ``noise_multiplier`` × the clipping norm, add/remove neighbours.
    """
    from opacus.accountants.analysis.rdp import compute_rdp

    z = require_positive("noise_multiplier", noise_multiplier)
    q = require_positive("sample_rate", sample_rate)
    if q > 1:
        raise InvalidInput("sample_rate", "a number in (0, 1]", sample_rate)
    T = require_integer("steps", steps, 1)
    return np.asarray(compute_rdp(q=q, noise_multiplier=z, steps=T, orders=[float(a) for a in orders]), dtype=float)


def dpsgd_rdp_epsilon(
    noise_multiplier: float, sample_rate: float, steps: int, delta: float, orders: Sequence[float] = RDP_ORDERS
) -> float:
    """Record-level ε of DP-SGD at δ through RDP (the RDP accountant, with wider orders)."""
    return rdp_to_dp(orders, subsampled_gaussian_rdp(noise_multiplier, sample_rate, steps, orders), delta)[0]


def dpsgd_group_rdp_epsilon(
    noise_multiplier: float,
    sample_rate: float,
    steps: int,
    m: int,
    delta: float,
    orders: Sequence[float] = GROUP_ORDERS,
) -> tuple[float, float]:
    """Group ε of DP-SGD for m records at group δ through Proposition 2.

    For each group order β in ``orders`` (β ≥ 2): ρ_m(β) = 3^c·ρ(β·2^c) with ρ the record-level
    curve (:func:`subsampled_gaussian_rdp`), then :func:`rdp_to_dp`.

    Returns
    -------
    (ε_group, β*)
        ``(inf, nan)`` for groups beyond 2^16 records (orders too large to evaluate).
    """
    m = _check_group(m)
    c = group_levels(m)
    if c > _MAX_GROUP_LEVELS:
        return math.inf, math.nan
    if any(b < 2 for b in orders):
        raise InvalidInput("orders", "group orders >= 2 (Mironov 2017, Proposition 2)", list(orders))
    rdp = subsampled_gaussian_rdp(noise_multiplier, sample_rate, steps, [b * 2**c for b in orders])
    group = [rdp_group_privacy(b * 2**c, r, m) if math.isfinite(r) else (b, math.inf) for b, r in zip(orders, rdp)]
    return rdp_to_dp([g[0] for g in group], [g[1] for g in group], delta)


# -- both routes together -----------------------------------------------------------------------
@dataclass(frozen=True)
class GroupGuarantee:
    """The (ε, δ) guarantee of DP-SGD for a group of m records, and how it was obtained.

    Attributes
    ----------
    epsilon, delta:
        The group guarantee (δ = the requested group δ).
    route:
        ``"one record"`` (m = 1), ``"classic"`` or ``"rdp-group"``: the route that gave ε.
    classic_epsilon, delta_one_record:
        The classic route's ε and the record-level δ₁ it used (``inf``/``nan`` if infeasible).
    rdp_epsilon, rdp_order:
        The RDP route's ε and group order β* (``nan`` for m = 1, where it is not needed).
    """

    epsilon: float
    delta: float
    route: str
    classic_epsilon: float
    delta_one_record: float
    rdp_epsilon: float
    rdp_order: float

    @property
    def formula(self) -> str:
        """The route in words, for a certificate."""
        return {
            "one record": "m = 1: the accountant's record-level epsilon",
            "classic": "classic group privacy (m*eps1, m*exp((m-1)*eps1)*delta1) (Vadhan 2017, Lemma 2.2) "
            "at the record-level delta1 that keeps the group delta within the requested one",
            "rdp-group": "RDP group privacy (Mironov 2017, Proposition 2: (alpha/2^c, 3^c rho)) of the "
            "subsampled Gaussian's RDP curve, converted by Balle et al. 2020, Theorem 21",
        }[self.route]


def dpsgd_group_epsilon(
    m: int,
    delta: float,
    *,
    epsilon_of_delta: Callable[[float], float],
    noise_multiplier: float,
    sample_rate: float,
    steps: int,
) -> GroupGuarantee:
    """DP-SGD's guarantee for a group of m records at group δ: the smaller of the two routes.

    Parameters
    ----------
    m:
        Group size (the deleted records), an integer ≥ 1.
    delta:
        Requested group δ ∈ (0, 1).
    epsilon_of_delta:
        The trained model's record-level ε₁(δ₁), an upper bound (the accountant's).
    noise_multiplier, sample_rate, steps:
        DP-SGD's z, Poisson rate q and number of noisy steps T (for the RDP route).
    """
    m, delta = _check_group(m), require_probability("delta", delta)
    if m == 1:
        eps = float(epsilon_of_delta(delta))
        return GroupGuarantee(eps, delta, "one record", eps, delta, math.nan, math.nan)
    classic, delta_one = classic_group_epsilon(epsilon_of_delta, m, delta)
    rdp, order = dpsgd_group_rdp_epsilon(noise_multiplier, sample_rate, steps, m, delta)
    route = "classic" if classic <= rdp else "rdp-group"
    return GroupGuarantee(min(classic, rdp), delta, route, classic, delta_one, rdp, order)
