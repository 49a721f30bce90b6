"""Sequential deletions: the cumulative guarantee across every published release.

Deletion requests arrive one after another. After request k the operator publishes

    release k = θ_k + N(0, σ_k² I),

where θ_k is the noiseless unlearned model after requests Z_1, …, Z_k. The reference world is
the model retrained on D \\ (Z_1 ∪ … ∪ Z_k); the method's certificate bounds the L2 distance of
the two noiseless models by Δ_k (its sensitivity). Each release is therefore a Gaussian
mechanism with noise multiplier z_k = σ_k/Δ_k, and two guarantees follow:

*Per release, against retraining.* The certificate's own (ε_k, δ_k): an adversary who sees
release k alone cannot tell it from the retrained model's release. The ledger records these as
given; it does not recompute them.

*Cumulative, for an adversary who sees every release.* The releases form an adaptive
composition, and it is composed exactly. A Gaussian release with multiplier z_k = σ_k/Δ_k is
μ_k-GDP with μ_k = 1/z_k (Dong, Roth & Su 2022, Theorem 2.7); μ-GDP mechanisms compose adaptively
into a √(Σμ_k²)-GDP mechanism, with no slack for Gaussians (their Corollary 3.3); and μ-GDP is
(ε, δ)-DP exactly on the analytic Gaussian curve δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2)
(their Corollary 2.13; Balle & Wang 2018, Theorem 8), which :func:`certify.mechanisms.epsilon_for`
inverts. So the cumulative ε after one release is the certificate's own analytic ε, and k equal
releases cost what one release with σ/√k costs.

*Cross-check.* Rényi DP (Mironov 2017, Props. 1 and 7: (α, α/(2z²)) per release, summed; Balle
et al. 2020, Theorem 21 to convert, over a grid of orders, through Opacus's RDP analysis imported
on first use so that ``import certify`` stays free of torch) is reported beside it as
``rdp_epsilon``. It is valid and never tighter: measured 1.093 against the exact 1.000 after one
ε = 1 release at δ = 1e-5, and 2.65 against 2.44 after five, so an RDP ledger spends a budget
early.

Only releases under an ``output-noise`` or ``exact`` certificate (:data:`GAUSSIAN_KINDS`) are
Gaussian releases; an ``exact`` release is the retrained model itself (Δ = 0) and costs nothing.
A ``training-noise`` release (privacy from noise inside training) or a ``none`` release (no
theorem) has no Δ the composition can use: the ledger reads the certificate's ``kind``
(:meth:`PrivacyLedger.record_certificate`), records it with an unbounded Δ, and the cumulative ε
is infinite from then on, with a warning that names the release, its kind and why.

The Rényi-DP mathematics lives in :mod:`certify.rdp`; its public names are re-exported here.

The operator sets a budget on the cumulative ε. Once the cumulative ε after the latest release
exceeds it, the budget is spent and a full retrain from scratch is due: the retrained model
starts a fresh ledger. :meth:`PrivacyLedger.would_exceed` answers the same question *before*
publishing, so the operator can retrain instead of publishing a release that would not fit.

Two properties of the RDP cross-check worth knowing when reading a report:

* After one release it is looser than the certificate's exact (analytic) ε: for z = 3.7306
  (ε = 1 at δ = 1e-5) it gives 1.0926. It is below the basic-composition sum Σε_k from the
  second release on (see :func:`basic_composition_epsilon`).
* It is only as good as the grid of orders. With very large noise multipliers (per-release
  ε ≲ 0.1 at small δ) the best order lies above the largest default order (63); the ledger then
  warns, and a wider ``orders`` grid tightens it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from certify.certificate import KINDS
from certify.errors import (
    Boolean,
    Choice,
    InvalidInput,
    require_integer,
    require_nonnegative,
    require_positive,
    require_probability,
)
from certify.mechanisms import epsilon_for
from certify.rdp import (  # the RDP mathematics, re-exported: `from certify.ledger import ...` works
    DEFAULT_ORDERS,
    NONNEGATIVE_OR_INF,
    UNIT_INTERVAL,
    basic_composition_epsilon,
    check_orders,
    gaussian_release_rdp,
    rdp_to_epsilon,
)

__all__ = [
    "COMPOSITION_METHOD",
    "DEFAULT_ORDERS",
    "GAUSSIAN_KINDS",
    "PrivacyLedger",
    "Release",
    "basic_composition_epsilon",
    "gaussian_composition_epsilon",
    "gaussian_release_rdp",
    "rdp_to_epsilon",
]

GAUSSIAN_KINDS: tuple[str, ...] = ("output-noise", "exact")
"""Certificate kinds whose releases are Gaussian output releases the ledger composes."""

_WHY_UNBOUNDED = {
    "training-noise": "its privacy comes from noise inside training, which the composition of "
    "Gaussian output releases does not model",
    "none": "the method has no theorem, so nothing bounds the distance to the retrained model",
}
"""Why a release of each non-Gaussian kind has no sensitivity the composition can use."""

COMPOSITION_METHOD = (
    "exact composition of Gaussian releases: mu = sqrt(sum (sensitivity/sigma)^2)-GDP "
    "(Dong, Roth & Su 2022, Cor. 3.3) on the analytic Gaussian curve; Renyi DP (Mironov 2017, "
    "Opacus rdp analysis) as a cross-check"
)
"""How the cumulative guarantee is composed, in words (``composition`` in ``to_dict``)."""


# ----------------------------------------------------------------------------------------------
# the ledger


@dataclass(frozen=True)
class Release:
    """One published release and the guarantees in force after it.

    Attributes
    ----------
    index:
        k, the position of this release in the sequence, starting at 1.
    epsilon, delta:
        The per-release certified (ε, δ) against the model retrained on D \\ (Z_1 ∪ … ∪ Z_k),
        as the certificate states them.
    sigma, sensitivity:
        σ_k and Δ_k of the Gaussian release; Δ_k is ``inf`` when there is no bound the
        composition can use (a ``training-noise`` or ``none`` certificate, or no Δ at all).
    noise_multiplier:
        z_k = σ_k/Δ_k; ``inf`` when Δ_k = 0 (nothing to hide), 0 when σ_k = 0 < Δ_k.
    forget_total:
        How many records have been deleted in all, |Z_1 ∪ … ∪ Z_k|.
    certificate_valid:
        Whether the release's certificate holds; a release published under an invalid
        certificate voids the cumulative guarantee from then on.
    cumulative_epsilon:
        ε for an adversary who sees releases 1…k, at the ledger's δ (exact composition).
    cumulative_mu:
        μ = √(Σ_{j≤k} (Δ_j/σ_j)²), the composed releases' Gaussian-DP parameter (``inf`` once
        void or unbounded).
    rdp_epsilon:
        The RDP cross-check of ``cumulative_epsilon`` (never smaller).
    cumulative_order:
        The RDP order attaining ``rdp_epsilon``; None when it is 0 or inf.
    budget_spent:
        Whether ``cumulative_epsilon`` exceeds the ledger's budget.
    distance:
        The measured ‖θ_k − θ_k^retrain‖₂ of the noiseless models, when given.
    realized_epsilon:
        The realized ε of this deletion (white-box, from ``distance``), when given.
    label:
        Free text identifying the request (a ticket number, a user group), when given.
    kind:
        The kind of the release's certificate (:data:`certify.certificate.KINDS`). Only
        ``output-noise`` and ``exact`` releases are Gaussian releases the ledger composes.
    """

    index: int
    epsilon: float
    delta: float
    sigma: float
    sensitivity: float
    noise_multiplier: float
    forget_total: int
    certificate_valid: bool
    cumulative_epsilon: float
    cumulative_mu: float
    rdp_epsilon: float
    cumulative_order: float | None
    budget_spent: bool
    distance: float | None = None
    realized_epsilon: float | None = None
    label: str | None = None
    kind: str = "output-noise"


class PrivacyLedger:
    """The record of every published release and the cumulative guarantee they leave.

    Parameters
    ----------
    delta : float
        The δ at which the cumulative ε is stated, in (0, 1).
    budget_epsilon : float or None, default None
        The cumulative ε the operator allows before a full retrain, finite and > 0; None for no
        budget (then the budget is never spent, as if it were ``inf``).
    orders : sequence of float, default :data:`DEFAULT_ORDERS`
        RDP orders for the cross-check, each finite and > 1.

    Notes
    -----
    *Budget spent* and *retrain due* mean the same thing: the cumulative ε after the latest
    release is strictly greater than the budget. Since μ only grows, this stays true for every
    later release; the remedy is to retrain from scratch on the remaining data and start a new
    ledger for the retrained model. To avoid ever publishing over budget, ask
    :meth:`would_exceed` before each release and retrain instead when it answers True.

    A release whose certificate is not valid makes the cumulative ε ``inf`` from that release
    on: its Δ bounds nothing, so neither it nor any composition containing it has a guarantee.

    References
    ----------
    .. [1] J. Dong, A. Roth and W. Su, "Gaussian Differential Privacy", JRSS-B 2022,
       Theorem 2.7, Corollaries 2.13 and 3.3.
    .. [2] I. Mironov, "Rényi Differential Privacy", CSF 2017, Propositions 1 and 7 (cross-check).
    .. [3] B. Balle et al., AISTATS 2020, Theorem 21 (RDP to (ε, δ), cross-check).

    Examples
    --------
    >>> ledger = PrivacyLedger(delta=1e-5, budget_epsilon=3.0)
    >>> for k in range(1, 11):
    ...     r = ledger.record(sigma=3.7306, sensitivity=1.0, epsilon=1.0, delta=1e-5,
    ...                       forget_total=10 * k)
    >>> ledger.first_release_over_budget, ledger.retrain_due
    (8, True)
    """

    def __init__(
        self,
        delta: float,
        budget_epsilon: float | None = None,
        orders: Sequence[float] = DEFAULT_ORDERS,
    ):
        self._delta = require_probability("delta", delta)
        self._budget = None if budget_epsilon is None else require_positive("budget_epsilon", budget_epsilon)
        self._orders = check_orders(orders)
        self._releases: list[Release] = []
        self._rdp = np.zeros(self._orders.size)
        self._mu2 = 0.0  # Σ (Δ_k/σ_k)², the composed Gaussian-DP parameter squared
        self._void_from: int | None = None  # first release with an invalid certificate

    # -- read-only state -------------------------------------------------------------------

    @property
    def delta(self) -> float:
        """The δ of the cumulative guarantee."""
        return self._delta

    @property
    def budget_epsilon(self) -> float | None:
        """The cumulative-ε budget, or None for none."""
        return self._budget

    @property
    def orders(self) -> tuple[float, ...]:
        """The RDP orders used."""
        return tuple(float(a) for a in self._orders)

    @property
    def releases(self) -> tuple[Release, ...]:
        """Every recorded release, in order."""
        return tuple(self._releases)

    def cumulative_mu(self) -> float:
        """μ of the composed releases (√Σ(Δ_k/σ_k)²); ``inf`` once void; 0.0 if none."""
        return self._releases[-1].cumulative_mu if self._releases else 0.0

    def cumulative_rdp(self) -> np.ndarray:
        """The summed RDP of all releases at each order (a copy); ``inf`` everywhere once void."""
        if self._void_from is not None:
            return np.full(self._orders.size, math.inf)
        return self._rdp.copy()

    def cumulative_epsilon(self) -> float:
        """ε for an adversary who sees every release so far, at :attr:`delta`; 0.0 if none."""
        return self._releases[-1].cumulative_epsilon if self._releases else 0.0

    @property
    def budget_spent(self) -> bool:
        """True when the cumulative ε exceeds the budget (never without a budget)."""
        return self._over_budget(self.cumulative_epsilon())

    @property
    def retrain_due(self) -> bool:
        """True when the budget is spent: retrain from scratch before serving another request."""
        return self.budget_spent

    @property
    def first_release_over_budget(self) -> int | None:
        """Index k of the first release after which the budget was spent, or None."""
        for r in self._releases:
            if r.budget_spent:
                return r.index
        return None

    # -- looking ahead ---------------------------------------------------------------------

    def epsilon_after(self, sigma: float, sensitivity: float, *, certificate_valid: bool = True) -> float:
        """The cumulative ε one more release (σ, Δ) would leave, without recording it.

        Parameters
        ----------
        sigma, sensitivity, certificate_valid
            As in :meth:`record`.

        Returns
        -------
        float
            The prospective cumulative ε at :attr:`delta` (``inf`` if the ledger is void or
            would become void).
        """
        return self._compose(sigma, sensitivity, certificate_valid)[0]

    def would_exceed(self, sigma: float, sensitivity: float, *, certificate_valid: bool = True) -> bool:
        """Whether publishing one more release (σ, Δ) would leave the budget spent.

        True as well when the budget is spent already. Always False without a budget.
        """
        return self._over_budget(self.epsilon_after(sigma, sensitivity, certificate_valid=certificate_valid))

    # -- recording -------------------------------------------------------------------------

    def record(
        self,
        *,
        sigma: float,
        sensitivity: float,
        epsilon: float,
        delta: float,
        forget_total: int,
        certificate_valid: bool = True,
        distance: float | None = None,
        realized_epsilon: float | None = None,
        label: str | None = None,
        kind: str = "output-noise",
    ) -> Release:
        """Record one published release and return it with the cumulative guarantee after it.

        Parameters
        ----------
        sigma : float
            Noise standard deviation σ_k, ≥ 0 (``inf`` allowed).
        sensitivity : float
            The certificate's sensitivity Δ_k, ≥ 0; ``inf`` (no bound: an uncertified method,
            or privacy inside training such as DP-SGD's) makes the cumulative ε infinite.
        epsilon, delta : float
            The per-release certified ε_k (≥ 0, ``inf`` allowed) and δ_k (in [0, 1]).
        forget_total : int
            Records deleted so far in all, |Z_1 ∪ … ∪ Z_k|: an integer ≥ 0 and never smaller
            than at the previous release (deletions accumulate).
        certificate_valid : bool, default True
            False when the certificate's theorem does not hold; voids the cumulative guarantee.
        distance : float, optional
            Measured distance of the noiseless unlearned and retrained models, finite, ≥ 0.
        realized_epsilon : float, optional
            The realized ε of this deletion, ≥ 0 (``inf`` allowed).
        label : str, optional
            Free text identifying the request.
        kind : str, default ``"output-noise"``
            The kind of the release's certificate (recorded, and named in the warnings).

        Returns
        -------
        Release
            The recorded release (also appended to :attr:`releases`).

        Raises
        ------
        InvalidInput
            Naming the offending field, for any value outside the ranges above. Nothing is
            recorded then.
        """
        eps_k = NONNEGATIVE_OR_INF.check("epsilon", epsilon)
        dlt_k = UNIT_INTERVAL.check("delta", delta)
        total = require_integer("forget_total", forget_total, 0)
        if self._releases and total < self._releases[-1].forget_total:
            raise InvalidInput(
                "forget_total",
                f"an integer >= {self._releases[-1].forget_total} (the previous release's total)",
                forget_total,
                hint="It counts every record deleted so far, which never decreases.",
            )
        dist = None if distance is None else require_nonnegative("distance", distance)
        realized = None if realized_epsilon is None else NONNEGATIVE_OR_INF.check("realized_epsilon", realized_epsilon)
        if label is not None and not isinstance(label, str):
            raise InvalidInput("label", "a string or None", label)
        kind = Choice(KINDS).check("kind", kind)  # before any state changes: nothing half-recorded
        cum_eps, mu2, rdp_eps, cum_order, rdp, valid = self._compose(sigma, sensitivity, certificate_valid)
        sig, sens = float(sigma), float(sensitivity)

        index = len(self._releases) + 1
        self._rdp, self._mu2 = rdp, mu2
        if not valid and self._void_from is None:
            self._void_from = index
        release = Release(
            index=index,
            epsilon=eps_k,
            delta=dlt_k,
            sigma=sig,
            sensitivity=sens,
            noise_multiplier=_noise_multiplier(sig, sens),
            forget_total=total,
            certificate_valid=valid,
            cumulative_epsilon=cum_eps,
            cumulative_mu=math.inf if math.isinf(cum_eps) else math.sqrt(mu2),
            rdp_epsilon=rdp_eps,
            cumulative_order=cum_order,
            budget_spent=self._over_budget(cum_eps),
            distance=dist,
            realized_epsilon=realized,
            label=label,
            kind=kind,
        )
        self._releases.append(release)
        return release

    def record_certificate(
        self,
        certificate: Any,
        *,
        forget_total: int,
        distance: float | None = None,
        realized_epsilon: float | None = None,
        label: str | None = None,
    ) -> Release:
        """:meth:`record` with σ, Δ, ε, δ, validity and kind read from a
        :class:`~certify.certificate.Certificate`.

        The kind decides what composes, never σ or Δ alone:

        * ``output-noise``: a Gaussian release with σ and Δ as certified;
        * ``exact``: the release is the retrained model, Δ = 0: nothing to hide, it costs nothing;
        * ``training-noise`` (privacy inside training) and ``none`` (no theorem): no Gaussian
          output guarantee, so the release is recorded with an unbounded sensitivity and the
          cumulative ε becomes infinite, with a warning naming the release, its kind and why.

        A missing Δ (``sensitivity`` None) on an ``output-noise`` certificate is likewise an
        unbounded sensitivity, and a missing ε (a ``none`` certificate states none) is recorded
        as ``inf``.
        """
        kind = Choice(KINDS).check("kind", getattr(certificate, "kind", None))
        if kind not in GAUSSIAN_KINDS:
            sensitivity = math.inf
        elif kind == "exact":
            sensitivity = 0.0
        else:
            sensitivity = math.inf if certificate.sensitivity is None else certificate.sensitivity
        return self.record(
            sigma=certificate.sigma,
            sensitivity=sensitivity,
            epsilon=certificate.epsilon if certificate.epsilon is not None else math.inf,
            delta=certificate.delta,
            forget_total=forget_total,
            certificate_valid=certificate.valid,
            distance=distance,
            realized_epsilon=realized_epsilon,
            label=label,
            kind=kind,
        )

    # -- reporting -------------------------------------------------------------------------

    def warnings(self) -> list[str]:
        """Human-readable findings, most serious first; empty when there is nothing to say.

        Covers: a void cumulative guarantee (an invalid certificate, or a noiseless release of
        differing models), a spent budget, a measured distance above the certified sensitivity,
        and a best RDP order at an end of the grid (a valid but possibly loose cross-check).
        """
        out: list[str] = []
        if self._void_from is not None:
            k = self._void_from
            out.append(
                f"release {k} was published under a certificate that is not valid: the "
                f"cumulative guarantee is void (epsilon = inf) from release {k} on; retrain "
                "from scratch before serving further requests"
            )
        first_noiseless = next(  # an unbounded release is reported below, not as noiseless
            (r for r in self._releases if r.sigma == 0.0 and 0.0 < r.sensitivity and not math.isinf(r.sensitivity)),
            None,
        )
        unbounded = next((r for r in self._releases if math.isinf(r.sensitivity)), None)
        if first_noiseless is not None:
            k = first_noiseless.index
            out.append(
                f"release {k} was published without noise (sigma = 0) although its sensitivity "
                f"is {first_noiseless.sensitivity:.4g} > 0: no finite epsilon holds from "
                f"release {k} on"
            )
        if unbounded is not None:
            why = _WHY_UNBOUNDED.get(unbounded.kind, "its sensitivity bound is not finite")
            out.append(
                f"release {unbounded.index} ({unbounded.kind} certificate) has no sensitivity "
                f"bound the composition of Gaussian output releases can use ({why}): the "
                f"cumulative epsilon is not finite from release {unbounded.index} on; read each "
                "release's own certificate instead"
            )
        first = self.first_release_over_budget
        if first is not None:
            r = self._releases[first - 1]
            msg = (
                f"cumulative epsilon {r.cumulative_epsilon:.4g} after release {first} exceeds "
                f"the budget {self._budget:g} at delta={self._delta:g}: the budget is spent; "
                "retrain from scratch before serving further requests"
            )
            later = len(self._releases) - first
            if later:
                msg += (
                    f" ({later} further release(s) were published after it; the cumulative "
                    f"epsilon is now {self.cumulative_epsilon():.4g})"
                )
            out.append(msg)
        for r in self._releases:
            if r.distance is not None and r.distance > r.sensitivity:
                out.append(
                    f"release {r.index}: the measured distance {r.distance:.4g} to the retrained "
                    f"model exceeds the certified sensitivity {r.sensitivity:.4g}; the "
                    "certificate's bound did not hold for this deletion"
                )
        order = self._releases[-1].cumulative_order if self._releases else None
        lo, hi = float(self._orders.min()), float(self._orders.max())
        if order is not None and order in (lo, hi) and lo < hi:
            out.append(
                f"the best RDP order for the RDP cross-check of the cumulative epsilon, {order:g}, "
                f"is at the {'largest' if order == hi else 'smallest'} order used ({lo:g} to {hi:g}): "
                "the cross-check holds but a wider range of orders may make it smaller"
            )
        return out

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready summary: the per-release table, the composition and its verdict.

        Floats may be ``inf`` (the report layer encodes them). Keys: ``composition``,
        ``orders`` (min, max, count), ``delta``, ``budget_epsilon``, ``cumulative_epsilon``,
        ``cumulative_mu``, ``rdp_epsilon``, ``cumulative_order``, ``basic_composition`` (Σε, Σδ of the per-release certificates),
        ``budget_spent``, ``retrain_due``, ``first_release_over_budget``, ``releases`` (one dict
        per :class:`Release`), ``warnings``.
        """
        sum_eps, sum_delta = basic_composition_epsilon(
            [r.epsilon for r in self._releases], [r.delta for r in self._releases]
        )
        return {
            "composition": COMPOSITION_METHOD,
            "orders": {
                "min": float(self._orders.min()),
                "max": float(self._orders.max()),
                "count": int(self._orders.size),
            },
            "delta": self._delta,
            "budget_epsilon": self._budget,
            "cumulative_epsilon": self.cumulative_epsilon(),
            "cumulative_mu": self.cumulative_mu(),
            "rdp_epsilon": self._releases[-1].rdp_epsilon if self._releases else 0.0,
            "cumulative_order": self._releases[-1].cumulative_order if self._releases else None,
            "basic_composition": {"epsilon": sum_eps, "delta": sum_delta},
            "budget_spent": self.budget_spent,
            "retrain_due": self.retrain_due,
            "first_release_over_budget": self.first_release_over_budget,
            "releases": [asdict(r) for r in self._releases],
            "warnings": self.warnings(),
        }

    # -- internals -------------------------------------------------------------------------

    def _over_budget(self, epsilon: float) -> bool:
        return self._budget is not None and epsilon > self._budget

    def _compose(self, sigma, sensitivity, certificate_valid):
        """Validate one prospective release and compose it with the recorded ones.

        Returns ``(epsilon, mu2, rdp_epsilon, order, rdp, valid)``: the exact cumulative ε and
        the μ² it comes from, the RDP cross-check and its order, the new RDP sum, and the
        validated ``certificate_valid``.
        """
        valid = Boolean().check("certificate_valid", certificate_valid)
        rdp = self._rdp + gaussian_release_rdp(sigma, sensitivity, self._orders)  # validates σ, Δ
        mu2 = self._mu2 + _mu(float(sigma), float(sensitivity)) ** 2
        if self._void_from is not None or not valid:
            return math.inf, mu2, math.inf, None, rdp, valid
        rdp_eps, order = rdp_to_epsilon(rdp, self._orders, self._delta)
        return gaussian_composition_epsilon(math.sqrt(mu2), self._delta), mu2, rdp_eps, order, rdp, valid


def gaussian_composition_epsilon(mu: float, delta: float) -> float:
    """ε at δ of a μ-GDP mechanism, such as Gaussian releases composed to μ = √Σ(Δ_k/σ_k)².

    Exact: μ-GDP is (ε, δ)-DP on exactly the analytic Gaussian curve with Δ/σ = μ (Dong, Roth &
    Su 2022, Cor. 2.13), so this is :func:`certify.mechanisms.epsilon_for` at σ = 1, Δ = μ;
    ``inf`` for μ = ``inf``.

    >>> round(gaussian_composition_epsilon(1 / 3.730631634816, 1e-5), 6)
    1.0
    """
    return math.inf if math.isinf(mu) else epsilon_for(1.0, delta, mu)


def _mu(sigma: float, sensitivity: float) -> float:
    """μ = Δ/σ of one Gaussian release: 0 when Δ = 0, ``inf`` when σ = 0 < Δ or Δ = ``inf``."""
    if sensitivity == 0.0:
        return 0.0
    return math.inf if sigma == 0.0 or math.isinf(sensitivity) else sensitivity / sigma


def _noise_multiplier(sigma: float, sensitivity: float) -> float:
    """z = σ/Δ, with ``inf`` for Δ = 0 (no difference to hide)."""
    if sensitivity == 0.0:
        return math.inf
    return sigma / sensitivity
