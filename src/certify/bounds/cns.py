"""Certified unlearning for deep networks by one constrained Newton step (CNS).

B. Zhang, Y. Dong, T. Wang, J. Li, "Towards Certified Unlearning for Deep Neural Networks",
ICML 2024 (revised arXiv version, whose footnote corrects the bounds of Theorem 3.6 and
Proposition 4.1 by a factor (λ + L) in their second term and adds the condition on s).

The method (paper §3–4): train with the parameter norm projected onto ‖w‖₂ ≤ C, then take one
Newton step on the retained loss with a *locally convexified* Hessian,

    w̃ = w* − (H_{w*} + λI)⁻¹ ∇L(w*, D_r),      H_{w*} = ∇²L(w*, D_r),

the inverse-Hessian-vector product being estimated by LiSSA (Prop. 3.5, Eq. 8, s recursion
steps with scale H ≥ ‖∇²l(w*, x) + λI‖), and release w̃ + N(0, σ²I) with σ calibrated to a bound
Δ ≥ ‖w̃ − w̃*‖₂ (Theorem 2.3), w̃* the constrained minimiser on D_r.

Assumptions of the theorems (the caller must make them true or record them as estimated):

* Assumption 3.1: every per-sample loss l(·, x) has an L-Lipschitz gradient;
* Assumption 3.2: every per-sample loss has an M-Lipschitz Hessian;
* ‖w*‖₂ ≤ C and ‖w̃*‖₂ ≤ C (projected training), so ‖w* − w̃*‖₂ ≤ 2C (Eq. 26);
* λ > ‖H_{w*}‖₂ (Theorems 3.4, 3.6, Prop. 4.1), and λ_min is the smallest eigenvalue of H_{w*},
  so ‖(H_{w*} + λI)⁻¹‖₂ = 1/(λ + λ_min) (Eq. 25);
* LiSSA (Theorem 3.6, Prop. 4.1): s ≥ 2k ln k with k = (L + λ)/(λ + λ_min); the
  concentration bound (Eq. 31, after Agarwal et al. 2017, Lemma 3.6) holds with probability
  at least 1 − ρ, where d is the number of parameters;
* Prop. 4.1 (non-converged training): ‖∇L(w̃*, D_r)‖ ≤ G (and ‖∇L(w*, D)‖ ≤ G).

Bounds (digest seed-001 §3–4, Appendix "minimal formulas"):

* Eq. (7), Theorem 3.4 (exact inverse, converged):  Δ = 2C(MC + λ)/(λ + λ_min);
* Eq. (11), Prop. 4.1 (LiSSA, non-converged, corrected; Algorithms 1 and 2 use it):

      Δ = (2C(MC + λ) + G)/(λ + λ_min) + (16·√ln(d/ρ)·(λ + L)/(λ + λ_min) + 1/16)·(2LC + G);

  the pre-correction version (used for the paper's Table 3) drops the factor (λ + L);
* Prop. 4.2 (sequential requests): the same bound at every step k, with λ_min taken at the
  previous estimate w̃_{k−1} on D_{r_k}.

``√ln d/ρ`` is read as √(ln(d/ρ)) (digest §9.8). Pure Python; no torch.
"""

from __future__ import annotations

import math

from certify.certificate import Bound, Condition
from certify.errors import InvalidInput, require_nonnegative, require_positive

__all__ = [
    "BOUND_VERSIONS",
    "cns_bound",
    "cns_depth_required",
    "cns_exact_newton_bound",
    "cns_forget_trick_term",
    "cns_lissa_error",
    "cns_sensitivity",
    "logistic_hessian_lipschitz",
]

BOUND_VERSIONS: tuple[str, ...] = ("corrected", "original")
"""``corrected``: the printed (revised) Eq. 9/11 with the (λ + L) factor; ``original``: without it."""


def _finite(field: str, value: object) -> float:
    try:
        x = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise InvalidInput(field, "a finite number", value) from None
    if not math.isfinite(x):
        raise InvalidInput(field, "a finite number", value)
    return x


def _curvature(lam: float, lambda_min: float) -> float:
    """λ + λ_min, the smallest eigenvalue of H_{w*} + λI; must be > 0 for any bound to exist."""
    return _finite("lam", lam) + _finite("lambda_min", lambda_min)


def _dim_rho(d: object, rho: object) -> tuple[int, float]:
    if isinstance(d, bool) or not isinstance(d, (int, float)) or float(d) != int(d) or int(d) < 1:
        raise InvalidInput("d", "an integer >= 1 (the number of parameters)", d)
    try:
        r = float(rho)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise InvalidInput("rho", "a probability in (0, 1)", rho) from None
    if not 0.0 < r < 1.0:
        raise InvalidInput("rho", "a probability in (0, 1)", rho)
    return int(d), r


def cns_exact_newton_bound(C: float, M: float, lam: float, lambda_min: float, G: float = 0.0) -> float:
    """(2C(MC + λ) + G)/(λ + λ_min): the error of the exact λ-regularised Newton step.

    With G = 0 this is Theorem 3.4, Eq. (7). With G > 0 it is the first term of Prop. 4.1,
    Eq. (11): writing ∇L(w*, D_r) = ∇L(w̃*, D_r) + H̄(w* − w̃*) with H̄ the mean Hessian on the
    segment, w̃ − w̃* = (H_{w*} + λI)⁻¹[(H_{w*} − H̄ + λI)(w* − w̃*) − ∇L(w̃*, D_r)], and
    ‖H_{w*} − H̄‖ ≤ (M/2)‖w* − w̃*‖ ≤ MC, ‖w* − w̃*‖ ≤ 2C, ‖∇L(w̃*, D_r)‖ ≤ G.

    Parameters
    ----------
    C : float
        Norm bound of the projection, > 0.
    M : float
        Hessian-Lipschitz constant of the per-sample loss, >= 0.
    lam : float
        The local convex coefficient λ >= 0 (added to the Hessian only).
    lambda_min : float
        The smallest eigenvalue of H_{w*} = ∇²L(w*, D_r) (or a lower bound on it); may be < 0.
    G : float
        Bound on the retrained model's residual gradient ‖∇L(w̃*, D_r)‖, >= 0.

    Returns
    -------
    float
        The bound; ``math.inf`` when λ + λ_min <= 0 (the regularised Hessian is not positive
        definite and the theorem says nothing).

    References
    ----------
    .. [1] Zhang et al. (ICML 2024), Theorem 3.4, Eq. (7) (proof: Eqs. 25–26), and the first
       term of Proposition 4.1, Eq. (11).
    """
    C_f = require_positive("C", C)
    M_f = require_nonnegative("M", M)
    lam_f = require_nonnegative("lam", lam)
    G_f = require_nonnegative("G", G)
    k = _curvature(lam_f, lambda_min)
    if k <= 0:
        return math.inf
    return (2.0 * C_f * (M_f * C_f + lam_f) + G_f) / k


def cns_lissa_error(L: float, lam: float, lambda_min: float, d: int, rho: float, version: str = "corrected") -> float:
    """The LiSSA estimation error ‖(H_{w*} + λI)⁻¹ − H̃⁻¹_{s,λ}/H‖₂ bound, w.p. >= 1 − ρ.

    ``corrected`` (revised paper, Eq. 31): 16·√ln(d/ρ)·(λ + L)/(λ + λ_min) + 1/16;
    ``original`` (ICML text, used for Table 3): 16·√ln(d/ρ)/(λ + λ_min) + 1/16.
    Valid only when s >= :func:`cns_depth_required` and the LiSSA scale bounds every sampled
    Hessian (Prop. 3.5).

    Returns ``math.inf`` when λ + λ_min <= 0.

    References
    ----------
    .. [1] Zhang et al. (ICML 2024), proof of Theorem 3.6, Eq. (31), after Agarwal, Bullins &
       Hazan (2017), Lemma 3.6; the (λ + L) factor is the revised version's correction.
    """
    L_f = require_nonnegative("L", L)
    lam_f = require_nonnegative("lam", lam)
    d_i, r = _dim_rho(d, rho)
    if version not in BOUND_VERSIONS:
        raise InvalidInput("version", "one of 'corrected', 'original'", version)
    k = _curvature(lam_f, lambda_min)
    if k <= 0:
        return math.inf
    root = math.sqrt(math.log(d_i / r))
    factor = (lam_f + L_f) if version == "corrected" else 1.0
    return 16.0 * root * factor / k + 1.0 / 16.0


def cns_sensitivity(
    C: float,
    M: float,
    L: float,
    lam: float,
    lambda_min: float,
    G: float,
    d: int,
    rho: float,
    version: str = "corrected",
) -> float:
    """Δ of Proposition 4.1, Eq. (11): the sensitivity of CNS with a LiSSA inverse.

        Δ = (2C(MC + λ) + G)/(λ + λ_min) + ε_LiSSA·(2LC + G),

    ε_LiSSA = :func:`cns_lissa_error` (corrected by default). The second factor bounds
    ‖∇L(w*, D_r)‖ ≤ ‖∇L(w*, D_r) − ∇L(w̃*, D_r)‖ + ‖∇L(w̃*, D_r)‖ ≤ 2LC + G (Eq. 32). With G = 0
    it is Theorem 3.6, Eq. (9). Holds with probability >= 1 − ρ over the LiSSA samples; the
    caller must fold ρ into δ.

    Parameters
    ----------
    C, M, lam, lambda_min, G
        As in :func:`cns_exact_newton_bound`.
    L : float
        Gradient-Lipschitz (smoothness) constant of the per-sample loss, >= 0.
    d : int
        Number of parameters.
    rho : float
        LiSSA failure probability in (0, 1).
    version : {"corrected", "original"}
        Which printing of the LiSSA term.

    Returns
    -------
    float
        Δ >= 2C·λ/(λ + λ_min) (it never vanishes: the worst case ‖w* − w̃*‖ = 2C stays);
        ``math.inf`` when λ + λ_min <= 0.

    References
    ----------
    .. [1] Zhang et al. (ICML 2024), Proposition 4.1, Eq. (11) (corrected), Theorem 3.6,
       Eq. (9); Proposition 4.2 (the same bound for each sequential request).
    """
    first = cns_exact_newton_bound(C, M, lam, lambda_min, G)
    err = cns_lissa_error(L, lam, lambda_min, d, rho, version)
    if math.isinf(first) or math.isinf(err):
        return math.inf
    return first + err * (2.0 * float(L) * float(C) + float(G))


def cns_forget_trick_term(
    n: int, m: int, residual: float, lam: float, lambda_min: float, lissa_error: float = 0.0
) -> float:
    """Extra error of Algorithm 1's gradient shortcut when training did not converge.

    Algorithm 1 / Eq. (10) replaces ∇L(w*, D_r) by −(m/(n − m))∇L(w*, D_u), which equals
    ∇L(w*, D_r) − (n/(n − m))∇L(w*, D). The step is therefore off by
    (n/(n − m))·‖Ĥ⁻¹∇L(w*, D)‖ ≤ (n/(n − m))·(1/(λ + λ_min) + ε_LiSSA)·‖∇L(w*, D)‖, where Ĥ⁻¹ is
    the inverse actually applied (ε_LiSSA = 0 for an exact inverse). This term is derived here
    (the paper's Prop. 4.1 states ‖∇L(w*, D)‖ <= G among its assumptions but its bound does not
    carry it); it is 0 when w* is stationary.

    Parameters
    ----------
    n, m : int
        Training-set size and number of deleted records, 0 < m < n.
    residual : float
        ‖∇L(w*, D)‖ (measured after training), >= 0.
    lam, lambda_min : float
        As in :func:`cns_exact_newton_bound`.
    lissa_error : float
        ε_LiSSA (:func:`cns_lissa_error`), or 0 for an exact inverse.
    """
    if isinstance(n, bool) or isinstance(m, bool) or int(n) != n or int(m) != m or not 0 < m < n:
        raise InvalidInput("n, m", "integers with 0 < m < n", (n, m))
    res = require_nonnegative("residual", residual)
    lam_f = require_nonnegative("lam", lam)
    k = _curvature(lam_f, lambda_min)
    if k <= 0:
        return math.inf
    return (n / (n - m)) * (1.0 / k + require_nonnegative("lissa_error", lissa_error)) * res


def cns_depth_required(L: float, lam: float, lambda_min: float) -> float:
    """The LiSSA depth condition of Theorem 3.6 / Prop. 4.1: s >= 2k·ln k, k = (L+λ)/(λ+λ_min).

    Returns 0 when k <= 1 (every s >= 1 qualifies) and ``math.inf`` when λ + λ_min <= 0.

    References
    ----------
    .. [1] Zhang et al. (ICML 2024, revised), Theorem 3.6 and Proposition 4.1 ("a condition on
       s is added").
    """
    L_f = require_nonnegative("L", L)
    lam_f = require_nonnegative("lam", lam)
    den = _curvature(lam_f, lambda_min)
    if den <= 0:
        return math.inf
    k = (L_f + lam_f) / den
    return 0.0 if k <= 1.0 else 2.0 * k * math.log(k)


def logistic_hessian_lipschitz(max_feature_norm: float, n_classes: int) -> float:
    """Hessian-Lipschitz constant M of the (multinomial) logistic loss of a linear model with bias.

    For a record with ||x|| <= R, x̃ = (x, 1), ‖x̃‖³ <= (R² + 1)^{3/2}:

    * binary (one logit t = θ·x̃): ∇²f = σ'(t) x̃x̃ᵀ and |σ''| <= √3/18 = 1/(6√3), hence
      ‖∇²f(θ₁) − ∇²f(θ₂)‖ <= (1/(6√3))·‖x̃‖³·‖θ₁ − θ₂‖;
    * C classes (logits z = W x̃): the third derivative of log-sum-exp in a unit direction u is the
      third central moment E_p[(u − ū)³], at most (max u − min u)³/4 <= (√2)³/4 = 1/√2
      (Popoviciu), and ‖Δz‖ <= ‖ΔW‖_F ‖x̃‖, hence M = (R² + 1)^{3/2}/√2.

    Global (every θ); derived for this toolkit, not in the paper (which guesses M = 1).
    """
    R = require_nonnegative("max_feature_norm", max_feature_norm)
    if isinstance(n_classes, bool) or int(n_classes) != n_classes or n_classes < 2:
        raise InvalidInput("n_classes", "an integer >= 2", n_classes)
    cube = (R * R + 1.0) ** 1.5
    return cube / (6.0 * math.sqrt(3.0)) if n_classes == 2 else cube / math.sqrt(2.0)


def cns_bound(
    *,
    C: float,
    M: float,
    L: float,
    lam: float,
    lambda_min: float,
    G: float,
    d: int,
    n: int,
    m: int,
    rho: float,
    delta: float,
    version: str,
    lissa: bool,
    depth: int,
    scale: float,
    hessian_norm: float,
    theta_norm: float,
    start_norms: list[tuple[int, float]],
    diverged: bool,
    retrain_residual: float,
    forget_trick_residual: float | None,
    sequential: int,
    constants: tuple = (),
) -> Bound:
    """Proposition 4.1 (Eq. 11, corrected) or Theorem 3.4 (dense solve) as a
    :class:`~certify.certificate.Bound`, with every condition of the theorem checked.

    Conditions: λ > ‖H_{w*}‖ (Theorems 3.4/3.6, Prop. 4.1); λ + λ_min > 0; ‖w*‖ ≤ C; each
    sequential request starts inside the ball (Prop. 4.2); with LiSSA, the depth s ≥ 2k ln k,
    the scale H ≥ L + λ, no divergence and ρ < δ; the retrained model's residual gradient ≤ G
    (Prop. 4.1). ``forget_trick_residual`` adds Algorithm 1's forget-set shortcut term;
    ``sequential`` > 0 (the number of chained requests so far; 0 for one batch deletion) labels
    the bound as Prop. 4.2's, per release.
    """
    conds = []

    def check(name: str, ok: bool, good: str, bad: str) -> None:
        conds.append(Condition(name, bool(ok), good if ok else bad))

    check(
        "lambda above ||H||",
        lam > hessian_norm,
        f"lambda = {lam:.6g} > ||H_w*|| = {hessian_norm:.6g}",
        f"lambda = {lam:.6g} is not above the Hessian norm ||H_w*|| = {hessian_norm:.6g}: Theorems 3.4/3.6 "
        "and Proposition 4.1 require lambda > ||H_w*||; the certificate is not issued",
    )
    check(
        "positive definite",
        lam + lambda_min > 0,
        f"lambda + lambda_min = {lam + lambda_min:.6g} > 0",
        f"lambda + lambda_min = {lam + lambda_min:.6g} <= 0: H + lambda I is not positive definite and the "
        "bound is infinite",
    )
    check(
        "inside the ball",
        theta_norm <= C * (1 + 1e-9),
        f"||w*|| = {theta_norm:.6g} <= C = {C:g}",
        f"||w*|| = {theta_norm:.6g} exceeds C = {C:g}",
    )
    for request, norm in start_norms:
        check(
            f"request {request} starts inside the ball",
            norm <= C * (1 + 1e-9),
            f"sequential request {request} starts from ||w~|| = {norm:.6g} <= C = {C:g}",
            f"sequential request {request} starts from ||w~|| = {norm:.6g} > C = {C:g}: the 2C bound of "
            "Prop. 4.2 fails",
        )
    if lissa:
        # k = (L + λ)/(λ + λ_min) assumes the scale is L + λ; a larger scale slows the recursion
        # in proportion, so the condition is checked with max(H, L + λ) in place of L + λ.
        needed = cns_depth_required(max(L, scale - lam), lam, lambda_min)
        check(
            "LiSSA depth",
            depth >= needed,
            f"LiSSA depth s = {depth} >= 2k ln k = {needed:.6g}",
            f"LiSSA depth s = {depth} is below 2k ln k = {needed:.6g} (k = max(H, L+lambda)/(lambda+lambda_min)) "
            "required by Theorem 3.6 / Prop. 4.1",
        )
        check(
            "LiSSA scale",
            scale >= L + lam,
            f"LiSSA scale H = {scale:.6g} >= L + lambda = {L + lam:.6g}",
            f"LiSSA scale H = {scale:.6g} is below L + lambda = {L + lam:.6g}: Prop. 3.5 needs "
            "H >= ||grad^2 l(w*, x) + lambda I|| for every sample",
        )
        check(
            "LiSSA converged",
            not diverged,
            "the LiSSA recursion stayed bounded",
            "the LiSSA recursion diverged (||P_j|| grew beyond (j+1)||v||)",
        )
        check(
            "rho below delta",
            rho < delta,
            f"rho = {rho:g} < delta = {delta:g}",
            f"rho = {rho:g} is not below delta = {delta:g}: no room for the Gaussian",
        )
    check(
        "retrain residual within G",
        retrain_residual <= G * (1 + 1e-9),
        f"the retrained model's residual gradient {retrain_residual:.6g} <= G = {G:.6g}",
        f"the retrained model's residual gradient {retrain_residual:.6g} exceeds G = {G:.6g}: Proposition "
        "4.1's assumption fails",
    )
    if lissa:
        value = cns_sensitivity(C, M, L, lam, lambda_min, G, d, rho, version)
        err = cns_lissa_error(L, lam, lambda_min, d, rho, version)
        formula = (
            "Zhang et al. 2024, Proposition 4.1, Eq. (11) ("
            + ("corrected" if version == "corrected" else "pre-correction")
            + "): Delta = (2C(MC+lambda)+G)/(lambda+lambda_min) + (16 sqrt(ln(d/rho))"
            + ("(lambda+L)" if version == "corrected" else "")
            + "/(lambda+lambda_min) + 1/16)(2LC+G), w.p. >= 1 - rho"
        )
    else:
        value = cns_exact_newton_bound(C, M, lam, lambda_min, G)
        err = 0.0
        formula = (
            "Zhang et al. 2024, Theorem 3.4, Eq. (7) with the residual-gradient term of Proposition 4.1 "
            "(exact Cholesky inverse, no LiSSA term): Delta = (2C(MC+lambda)+G)/(lambda+lambda_min)"
        )
    if forget_trick_residual is not None:
        value += cns_forget_trick_term(n, m, forget_trick_residual, lam, lambda_min, err)
        formula += " + (n/(n-m))(1/(lambda+lambda_min) + LiSSA error)||grad L(w*, D)|| (forget-set shortcut)"
    if sequential > 0:
        formula += f"; sequential requests (Prop. 4.2): the same bound for each of {sequential} releases"
    return Bound(value=value, formula=formula, conditions=tuple(conds), constants=tuple(constants))
