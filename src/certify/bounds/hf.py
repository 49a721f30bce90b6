"""Approximation-error bounds of Hessian-free online unlearning (Qiao, Zhang, Tang & Wei 2024).

"Efficient Online Unlearning via Hessian-Free Recollection of Individual Data Statistics"
(arXiv:2404.01712, April 2024), Section 4: Lemma 1 (trajectory divergence), Lemma 2
(contraction), Theorem 2 (approximation error ||w^{-U} − w − a^{-U}||), App. 7.

Setting. Mini-batch SGD with per-sample clipping ||ĝ_i|| ≤ C and step sizes η_t (the paper:
η_t = η q^t). The retrained reference w^{-U} is the coupled run (same start, same batches, U
dropped from its batches, divisor |B_t| kept: the paper's linear scaling rule). With
δ_t = w^{-U}_t − w_t and the recollection a_t (the forward recursion of the approximators),

    δ_{t+1} = δ_t − (η_t/|B_t|) Σ_{i∈B_t\\U} [ĝ_i(w_t + δ_t) − ĝ_i(w_t)] + (η_t/|B_t|) Σ_{u∈U∩B_t} ĝ_u(w_t)
    a_{t+1} = (I − η_t H̄_t) a_t + (η_t/|B_t|) Σ_{u∈U∩B_t} ĝ_u(w_t),      H̄_t = (1/|B_t|) Σ_{i∈B_t} ∇²ℓ_i(w_t),

so the error e_t = δ_t − a_t obeys, exactly,

    e_{t+1} = (I − η_t H̄_t) e_t − η_t (Ā_t − H̄_t) δ_t,      Ā_t δ_t = (1/|B_t|) Σ_{B_t\\U} [ĝ_i(w_t+δ_t) − ĝ_i(w_t)].

Taking norms gives the recursions below: ||e_{t+1}|| ≤ ρ_t ||e_t|| + η_t κ_t ||δ_t||, where
ρ_t ≥ ||I − η_t H̄_t|| (Lemma 2) and κ_t ≥ ||Ā_t − H̄_t|| (a Lipschitz constant), and ||δ_t|| is
bounded by Lemma 1 (any model) or by a contraction (convex, unclipped).

Deviation from the paper (documented on the method's page, docs/methods/). Theorem 2 as printed,
||e_T|| ≤ (2η²C/(1−q)) ζ_T, is dimensionally inconsistent: η²C has units of w³/loss, not of w.
Its proof bounds the per-step linearisation error by η_t ||δ_t|| where the derivation above gives
η_t κ_t ||δ_t||; the missing factor is the curvature κ (≈ the smoothness M). Restoring it gives
:func:`hf_theorem2_bound`, and the step-by-step recursion :func:`hf_error_bound` (which also
uses the exact η_t, ρ_t, κ_t of every step) is never larger. The paper's second ζ term (the
injection at u's own step, App. 7.4) is not needed: with the paper's Eq. 8 ordering the injection
is exact, and the Hessian of u at its own step is part of Ā_t − H̄_t. The authors' code injects
before the Hessian product; that ordering adds η_t² M_t (|U∩B_t|/|B_t|) C per step
(:func:`hf_error_bound`, ``injection_before``).

:func:`hf_bound` packages the recursion as a :class:`~certify.certificate.Bound` for a
certificate: its value, its conditions (the reference it covers, a finite value) and the
constants it rests on.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from certify.certificate import Bound, Condition, Constant
from certify.errors import InvalidInput, require_choice, require_integer, require_nonnegative, require_positive

#: The coupled retrains: the paper's (divisor |B_t|, Eqs. 4-5) and the authors' script's (|B_t \\ U|).
RETRAIN_DIVISORS = ("original", "remaining")

__all__ = [
    "RETRAIN_DIVISORS",
    "hf_bound",
    "hf_contraction_factor",
    "hf_divergence_bound",
    "hf_error_bound",
    "hf_theorem2_bound",
]


def _series(field: str, values: Sequence[float], length: int | None = None) -> list[float]:
    out = [require_nonnegative(f"{field}[{i}]", float(v)) for i, v in enumerate(values)]
    if length is not None and len(out) != length:
        raise InvalidInput(field, f"one value per step ({length})", len(out))
    return out


def hf_contraction_factor(eta: float, lam: float, smooth: float) -> float:
    """Lemma 2: ||I − ηH|| ≤ max(|1 − ηλ|, |1 − ηM|) for a symmetric λI ⪯ H ⪯ MI.

    Parameters
    ----------
    eta:
        Step size η ≥ 0.
    lam, smooth:
        λ ≤ M, bounds on the spectrum of H (λ may be negative for a non-convex loss).
    """
    eta = require_nonnegative("eta", eta)
    if not (math.isfinite(lam) and math.isfinite(smooth)) or lam > smooth:
        raise InvalidInput("lam", "finite bounds with lam <= smooth", (lam, smooth))
    return max(abs(1.0 - eta * lam), abs(1.0 - eta * smooth))


def hf_divergence_bound(
    etas: Sequence[float],
    clip: float,
    forgotten_fraction: Sequence[float],
    contraction: Sequence[float] | None = None,
) -> list[float]:
    """Bound on ||δ_t|| = ||w^{-U}_t − w_t||: Lemma 1, tightened by a contraction when one holds.

    D_{t+1} = min(D_t + 2η_t C, ρ'_t D_t + η_t C f_t), with f_t = |U∩B_t|/|B_t|.

    The first branch is Lemma 1 (any model, any U): each step moves the coupled runs apart by at
    most 2η_t C, since every clipped per-sample gradient has norm ≤ C and the divisor is the
    original |B_t|; with η_t = η q^t it sums to the paper's 2ηC(1 − q^t)/(1 − q).

    The second branch holds when the retained-batch map w ↦ w − (η_t/|B_t|) Σ_{B_t\\U} ∇ℓ_i(w)
    is ρ'_t-Lipschitz, i.e. for a convex loss whose clipping is never active (then its Jacobian
    is I − η_t J with λ' I ⪯ J ⪯ M I, Lemma 2) and the forgotten records' gradients are ≤ C.
    Each branch is an upper bound given any upper bound of D_t, so their minimum is one too.

    Parameters
    ----------
    etas:
        η_0, ..., η_{T−1}.
    clip:
        C, bound on every applied per-sample gradient.
    forgotten_fraction:
        f_t = |U ∩ B_t| / |B_t| for every step.
    contraction:
        ρ'_t for every step, or None when no contraction holds (non-convex, or clipping may be
        active): Lemma 1 alone.

    Returns
    -------
    [D_0, ..., D_T].
    """
    etas = _series("etas", etas)
    T = len(etas)
    f = _series("forgotten_fraction", forgotten_fraction, T)
    rho = None if contraction is None else _series("contraction", contraction, T)
    C = require_nonnegative("clip", clip)
    out = [0.0]
    for t in range(T):
        lemma1 = out[-1] + 2.0 * etas[t] * C
        if rho is not None:
            lemma1 = min(lemma1, rho[t] * out[-1] + etas[t] * C * f[t])
        out.append(lemma1)
    return out


def hf_error_bound(
    etas: Sequence[float],
    contraction: Sequence[float],
    lipschitz_gap: Sequence[float],
    divergence: Sequence[float],
    *,
    injection_before: Sequence[float] | None = None,
) -> float:
    """Bound on the approximation error ||w^{-U}_T − w_T − a^{-U}_T|| (Theorem 2, corrected).

    E_{t+1} = ρ_t E_t + η_t κ_t D_t (+ η_t² M_t f_t C when the injection precedes the Hessian
    product, the authors' code), E_0 = 0; see the module docstring for the derivation.

    Parameters
    ----------
    etas:
        η_0, ..., η_{T−1}.
    contraction:
        ρ_t ≥ ||I − η_t H̄_t|| (Lemma 2 with the spectrum of the mean batch Hessian).
    lipschitz_gap:
        κ_t ≥ ||Ā_t − H̄_t||: M_t for a convex loss without active clipping (both operators are
        PSD and ⪯ M_t I), L̄_t + M_t otherwise (L̄_t the mean per-sample Lipschitz constant of
        the clipped gradients: clipping is a projection, hence 1-Lipschitz).
    divergence:
        [D_0, ..., D_T] from :func:`hf_divergence_bound` (only D_0..D_{T−1} are used).
    injection_before:
        Per-step extra term M_t f_t C (multiplied here by η_t²), or None for Eq. 8's ordering.

    Returns
    -------
    The bound E_T (``inf`` on overflow).
    """
    etas = _series("etas", etas)
    T = len(etas)
    rho = _series("contraction", contraction, T)
    kappa = _series("lipschitz_gap", lipschitz_gap, T)
    D = _series("divergence", divergence)
    if len(D) < T:
        raise InvalidInput("divergence", f"at least {T} values (D_0..D_(T-1))", len(D))
    extra = None if injection_before is None else _series("injection_before", injection_before, T)
    E = 0.0
    for t in range(T):
        E = rho[t] * E + etas[t] * kappa[t] * D[t]
        if extra is not None:
            E += etas[t] ** 2 * extra[t]
        if not math.isfinite(E):
            return math.inf
    return E


def hf_theorem2_bound(eta: float, decay: float, clip: float, rho: float, smooth: float, steps: int) -> float:
    """Theorem 2's closed form with the curvature factor restored (constant ρ and M).

    With η_t = η q^t, Lemma 1's D_t = 2ηC(1 − q^t)/(1 − q) and constant ρ, κ = M, the recursion of
    :func:`hf_error_bound` sums to

        E_T = (2η²CM/(1 − q)) · [(ρ^T − q^T)/(ρ − q) − (ρ^T − q^{2T})/(ρ − q²)],

    the paper's first term of ζ_T (App. 7.4, identity Σ_k ρ^{T−k−1}(q^k − q^{2k})) times M. The
    paper prints it without M (dimensionally inconsistent, see the module docstring).

    Parameters
    ----------
    eta, decay:
        Initial step η > 0 and per-step decay q ∈ (0, 1).
    clip:
        C ≥ 0.
    rho, smooth:
        Contraction ρ ≥ 0 (Lemma 2) and curvature M ≥ 0.
    steps:
        T ≥ 0.
    """
    eta = require_positive("eta", eta)
    q = float(decay)
    if not 0.0 < q < 1.0:
        raise InvalidInput("decay", "a number in (0, 1) (the closed form divides by 1 - q)", decay)
    C, r, M = require_nonnegative("clip", clip), require_nonnegative("rho", rho), require_nonnegative("smooth", smooth)
    if int(steps) != steps or steps < 0:
        raise InvalidInput("steps", "an integer >= 0", steps)
    T = int(steps)
    # Σ_{k<T} ρ^{T−k−1}(q^k − q^{2k}) summed term by term when ρ is (numerically) q or q².
    total = sum(r ** (T - k - 1) * (q**k - q ** (2 * k)) for k in range(T)) if T else 0.0
    return 2.0 * eta * eta * C * M / (1.0 - q) * total


def hf_bound(
    etas: Sequence[float],
    contraction: Sequence[float],
    lipschitz_gap: Sequence[float],
    divergence: Sequence[float],
    *,
    clip: Constant,
    curvature: Sequence[Constant],
    decay: float,
    l2: float,
    forget_size: int,
    retrain_divisor: str = "original",
    injection_before: Sequence[float] | None = None,
    divergence_contracted: bool = False,
    steps_note: str = "",
    eta_note: str = "",
) -> Bound:
    """The corrected Theorem 2 as a :class:`~certify.certificate.Bound` for one forget set.

    The value is :func:`hf_error_bound` of the per-step series (computed by the method from the
    batches that hold the forget set); the conditions are the theorem's:

    * ``reference``: the bound covers the coupled retrain with divisor |B_t| (Eqs. 4-5,
      ``retrain_divisor="original"``); the authors' script (divisor |B_t \\ U|,
      ``"remaining"``) is a different algorithm, measured but not certified;
    * ``finite bound``: the recursion did not overflow.

    Parameters
    ----------
    etas, contraction, lipschitz_gap, divergence, injection_before:
        As in :func:`hf_error_bound` (``divergence`` from :func:`hf_divergence_bound`).
    clip:
        C, the bound on every applied per-record gradient, with its provenance.
    curvature:
        The curvature constants the series were computed from (M and G, or M and L), with
        their provenance (estimated ones make the certificate conditional).
    decay, l2:
        The step decay q and the per-record L2 coefficient.
    forget_size:
        m = |U| (the series already encode which batches held U).
    retrain_divisor:
        The reference the distance is measured to (:data:`RETRAIN_DIVISORS`).
    divergence_contracted:
        Whether ``divergence`` used the contraction branch (analytic curvature) or Lemma 1
        alone (enforced by clipping).
    steps_note, eta_note:
        Appended to the descriptions of T and η (how they were chosen).
    """
    divisor = require_choice("retrain_divisor", retrain_divisor, RETRAIN_DIVISORS)
    m = require_integer("forget_size", forget_size, 1)
    q = require_positive("decay", decay)
    lam = require_nonnegative("l2", l2)
    if len(etas) == 0:
        raise InvalidInput("etas", "one step size per SGD step (at least one step)", 0)
    value = hf_error_bound(etas, contraction, lipschitz_gap, divergence, injection_before=injection_before)
    T = len(etas)
    covered = divisor == "original"
    reference = Condition(
        "reference",
        covered,
        "the reference is the coupled retrain with divisor |B_t| (Eqs. 4-5), which the bound covers"
        if covered
        else "the bound covers the coupled retrain with divisor |B_t| (Eqs. 4-5); the reference chosen here "
        "(retrain_divisor=remaining, the authors' script) is a different algorithm, so the distance to it "
        "is measured but not certified",
    )
    finite = math.isfinite(value)
    bounded = Condition(
        "finite bound",
        finite,
        f"the approximation-error recursion gives E_T = {value:.6g}"
        if finite
        else "the approximation-error recursion overflows (contraction factors above 1 over many steps): "
        "a smaller eta or fewer epochs keeps it finite",
    )
    constants = (
        Constant("T", float(T), "enforced", "SGD steps" + steps_note),
        Constant("eta", float(etas[0]), "enforced", "initial step size; eta_t = eta * q^t" + eta_note),
        Constant("q", q, "enforced", "per-step decay of the step size"),
        clip,
        Constant("l2", lam, "enforced", "per-record L2 coefficient (strong convexity of each l_i)"),
        *curvature,
        Constant("m", float(m), "enforced", "deleted records |U| (counted); the bound uses the batches that hold them"),
        Constant(
            "D_T",
            float(divergence[-1]),
            "analytic" if divergence_contracted else "enforced",
            "bound on the trajectory divergence ||w^-U_T - w_T||: Lemma 1"
            + (", tightened by the retained batches' contraction" if divergence_contracted else " (clipped gradients)"),
            {"max_contraction": max(contraction), "lemma": "Lemma 1" + (" + Lemma 2" if divergence_contracted else "")},
        ),
    )
    return Bound(
        value=value,
        formula="Qiao et al. 2024, Lemma 1 (divergence), Lemma 2 (contraction) and Theorem 2 (approximation "
        "error, curvature factor restored): ||w^-U_T - w_T - a^-U_T|| <= E_T with "
        "E_(t+1) = rho_t E_t + eta_t kappa_t D_t"
        + (" + eta_t^2 M_t f_t C (injection before the Hessian product)" if injection_before is not None else "")
        + ", E_0 = 0",
        conditions=(reference, bounded),
        constants=constants,
    )
