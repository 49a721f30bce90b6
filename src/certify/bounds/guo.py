"""Certified removal by a Newton step: the gradient-residual bounds of Guo et al. (2020).

C. Guo, T. Goldstein, A. Hannun, L. van der Maaten, "Certified Data Removal from Machine
Learning Models", ICML 2020 (arXiv:1911.03030): Section 3 (Newton update removal mechanism),
Theorem 1, Corollary 1, Theorem 2 and Theorem 3, and the batch and sequential discussion of
Section 3; reference code ``facebookresearch/certified-removal`` (``test_removal.py``).

Setting. L2-regularised empirical risk with a linear predictor and a loss perturbation:

    L_b(w; D) = Σ_{i∈D} ℓ(wᵀx_i, y_i) + (λ|D|/2)·||w||² + bᵀw,

(the regulariser scales with |D|: removing m records removes mλ/2·||w||² too). Learning A returns
the unique minimiser w* of L_b(·; D). Removing Z (|Z| = m, D' = D \\ Z) by one Newton step,

    Δ = mλw* + Σ_{j∈Z} ∇ℓ(w*ᵀx_j, y_j),   H = ∇²L_b(w*; D'),   w⁻ = w* + H⁻¹Δ,

(Δ = −∇L_b(w*; D'), so w⁻ is the Newton iterate for D' from w*; for m = 1 it is the paper's
Newton update removal mechanism, for m > 1 its batch version). The *gradient residual*
||∇L_b(w⁻; D')|| is what certification pays for: it is zero exactly when w⁻ = A(D').

Assumptions (the caller must make them true):

* ℓ is convex in its first argument and ℓ'' is γ-Lipschitz (logistic loss: γ = 1/4 in the
  paper; the true constant sup|ℓ'''| = 1/(6√3) ≈ 0.0962 is smaller, so 1/4 is conservative);
* ||∇ℓ(wᵀx, y)|| ≤ C for every record and every w (logistic loss: C = max ||x||);
* every feature vector has ||x_i|| ≤ 1 (Theorem 1 and Corollary 1). The functions below take
  ``max_row_norm`` R = max ||x_i|| instead and reduce to the paper at R = 1 (see below);
* λ > 0, so L_b(·; D') is λ(n−m)-strongly convex.

Derivation of the data-dependent bound with R. With v = H⁻¹Δ and X' the design matrix of D',
∇L_b(w⁻; D') = ∫₀¹ (H(w* + tv) − H(w*))·v dt = X'ᵀ diag(ℓ''(·)(t) − ℓ''(·)(0)) X' v, and
|ℓ''(x_iᵀ(w* + tv)) − ℓ''(x_iᵀw*)| ≤ γt|x_iᵀv| ≤ γ·R·||v||, so

    ||∇L_b(w⁻; D')|| ≤ γ · ||X'||₂ · ||v|| · ||X'v|| · R            (Corollary 1 at R = 1).

(The paper's mean-value argument drops the factor 1/2 the integral gives; kept, as in the paper.)

Sequential removals (Section 3, "multiple removals"; the reference code's ``grad_norm_approx``):
each request k is a Newton step from the previous model that ignores its residual r_{k−1}, so
r_k = r_{k−1} + (H_k v_k − Δ_k) + ∫(…) and the bounds add: β_k = β_{k−1} + ||H_k v_k − Δ_k|| +
Corollary-1 term (the middle term is the linear solve's rounding error, zero in exact arithmetic).

Theorem 3 (loss perturbation): if the removal mechanism guarantees ||∇L_b(w⁻; D')|| ≤ ε' and
b ~ N(0, σ_b² I) with σ_b = c·ε'/ε, then removal is (ε, δ)-certified with δ = 1.5·e^{−c²/2}. Read
the other way: with σ_b fixed before training, removals are certified while the accumulated
residual bound β stays within the budget ε' = σ_b·ε/c, c = √(2 ln(1.5/δ)); past it, retrain.
Theorem 2 reduces the removal guarantee to the density ratio p(b)/p(b + u) of b at two points at
distance ||u|| ≤ ε' (u the gradient residual), i.e. to a Gaussian mechanism of sensitivity ε' on
b; ``mechanism="analytic"`` (the default here) then uses the exact Gaussian privacy curve for that
distance (Balle & Wang 2018), ``"classic"`` reproduces Theorem 3's δ = 1.5e^{−c²/2}. Both inherit
the paper's reduction, including its change of variables b ↦ w; note that the exact curve is
that of a fixed shift, whereas u depends on b (through w*).
The data-dependent bound makes the retrain decision (β ≤ ε') a function of D and Z, as in the
paper's protocol.

Parameter-space sensitivity (not in the paper; what an audit compares with the measured
distance): L_b(·; D') is λ(n−m)-strongly convex and A(D') is its minimiser, so

    ||w⁻ − A(D')|| ≤ ||∇L_b(w⁻; D')|| / (λ(n−m)) ≤ β / (λ(n−m)).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from certify.certificate import Bound, Condition
from certify.errors import (
    Integer,
    InvalidInput,
    require,
    require_nonnegative,
    require_positive,
    require_probability,
)
from certify.mechanisms import _check_mechanism, _classic_epsilon_error, _unit_sigma

__all__ = [
    "guo_bound",
    "GUO_GAMMA_LOGISTIC",
    "guo_accumulated_residual",
    "guo_budget",
    "guo_c",
    "guo_delta",
    "guo_loss_noise",
    "guo_parameter_sensitivity",
    "guo_residual_bound",
    "guo_worst_case_residual",
]

#: γ, the Lipschitz constant of ℓ'' the paper uses for the logistic loss (Section 3.2).
GUO_GAMMA_LOGISTIC = 0.25


def _count(field: str, value: object, lo: int, allowed: str) -> int:
    return require(Integer(lo), field, value, allowed)


# ----------------------------------------------------------------------------------------------
# Theorem 3: the constant c and the budget


def guo_c(delta: float) -> float:
    """c = √(2 ln(1.5/δ)), the inverse of Theorem 3's δ = 1.5·e^{−c²/2}.

    Parameters
    ----------
    delta : float
        δ in (0, 1).

    Returns
    -------
    float
        c > 0 (δ < 1 < 1.5 makes the logarithm positive).

    References
    ----------
    .. [1] Guo et al. 2020, Theorem 3.
    """
    dlt = require_probability("delta", delta)
    return math.sqrt(2.0 * math.log(1.5 / dlt))


def guo_delta(c: float) -> float:
    """δ = 1.5·e^{−c²/2} of Theorem 3 for a given c > 0."""
    c_f = require_positive("c", c)
    return 1.5 * math.exp(-0.5 * c_f * c_f)


def guo_budget(sigma_b: float, epsilon: float, delta: float, mechanism: str = "analytic") -> float:
    """The largest gradient-residual bound ε' that loss noise σ_b certifies at (ε, δ).

    Parameters
    ----------
    sigma_b : float
        Standard deviation of the loss perturbation b ~ N(0, σ_b² I), finite and ≥ 0.
    epsilon : float
        ε > 0 (≤ 1 with ``mechanism="classic"``).
    delta : float
        δ in (0, 1).
    mechanism : {"analytic", "classic"}
        ``"classic"``: Theorem 3 exactly, ε' = σ_b·ε/c with c = √(2 ln(1.5/δ)); the Gaussian tail
        argument behind it is the classic one, so ε ≤ 1 is required as for the classic Gaussian
        mechanism. ``"analytic"``: the largest sensitivity of a Gaussian mechanism with noise σ_b
        that is (ε, δ)-DP by Balle & Wang's exact condition, σ_b / σ_analytic(ε, δ, 1) (Theorem
        2 reduces certified removal to exactly this density ratio).

    Returns
    -------
    float
        ε' ≥ 0, linear in σ_b (0 when σ_b = 0: without loss noise nothing is certified).

    References
    ----------
    .. [1] Guo et al. 2020, Theorems 2 and 3; B. Balle and Y.-X. Wang, ICML 2018, Theorem 8.
    """
    mech = _check_mechanism(mechanism)
    sig = require_nonnegative("sigma_b", sigma_b)
    eps = require_positive("epsilon", epsilon)
    dlt = require_probability("delta", delta)
    if mech == "classic":
        if eps > 1.0:
            raise _classic_epsilon_error(epsilon)
        return sig * eps / guo_c(dlt)
    return sig / _unit_sigma(eps, dlt, "analytic")


def guo_loss_noise(epsilon: float, delta: float, budget: float, mechanism: str = "analytic") -> float:
    """σ_b that certifies removals whose accumulated residual bound is at most ``budget`` ε'.

    The inverse of :func:`guo_budget`: ``"classic"`` gives Theorem 3's σ_b = c·ε'/ε with
    c = √(2 ln(1.5/δ)) (ε ≤ 1); ``"analytic"`` gives ε'·σ_analytic(ε, δ, 1).

    References
    ----------
    .. [1] Guo et al. 2020, Theorem 3 (b ~ N(0, cε'/ε)^d).
    """
    mech = _check_mechanism(mechanism)
    eps = require_positive("epsilon", epsilon)
    dlt = require_probability("delta", delta)
    eps_prime = require_nonnegative("budget", budget)
    if mech == "classic":
        if eps > 1.0:
            raise _classic_epsilon_error(epsilon)
        return guo_c(dlt) * eps_prime / eps
    return eps_prime * _unit_sigma(eps, dlt, "analytic")


# ----------------------------------------------------------------------------------------------
# Corollary 1 and Theorem 1: the gradient residual of one Newton removal


def guo_residual_bound(
    spectral_norm: float,
    step_norm: float,
    projected_step_norm: float,
    *,
    gamma: float = GUO_GAMMA_LOGISTIC,
    max_row_norm: float = 1.0,
) -> float:
    """Corollary 1: ||∇L(w⁻; D')|| ≤ γ·||X'||₂·||H⁻¹Δ||·||X'H⁻¹Δ||·R.

    Parameters
    ----------
    spectral_norm : float
        ||X'||₂, the largest singular value of the retained data's design matrix (the rows the
        loss sees: with a bias, x̃ = (x, 1)).
    step_norm : float
        ||v|| with v = H⁻¹Δ the Newton removal step.
    projected_step_norm : float
        ||X'v||.
    gamma : float, default 1/4
        Lipschitz constant of ℓ'' (the paper's 1/4 for the logistic loss).
    max_row_norm : float, default 1
        R ≥ max_i ||x̃_i|| over the retained rows: bounds |x̃_iᵀv| ≤ R||v||. The paper assumes
        ||x_i|| ≤ 1, i.e. R = 1, which reproduces Corollary 1 exactly.

    Returns
    -------
    float
        The bound on the gradient residual of the regularised (and perturbed) loss on D' at w⁻.

    References
    ----------
    .. [1] Guo et al. 2020, Corollary 1 (and its proof, via Theorem 1); the reference code's
       ``Delta.norm() * Delta_p.norm() * spec_norm / 4``.
    """
    s = require_nonnegative("spectral_norm", spectral_norm)
    v = require_nonnegative("step_norm", step_norm)
    p = require_nonnegative("projected_step_norm", projected_step_norm)
    g = require_positive("gamma", gamma)
    r = require_nonnegative("max_row_norm", max_row_norm)
    return g * s * v * p * r


def guo_worst_case_residual(
    n: int,
    m: int,
    lam: float,
    C: float,
    *,
    gamma: float = GUO_GAMMA_LOGISTIC,
    max_row_norm: float = 1.0,
    perturbation_norm: float = 0.0,
) -> float:
    """Theorem 1 (batch of m): ||∇L(w⁻; D')|| ≤ γ·R³·m²·(2C + p/n)² / (λ²(n−m)).

    At R = 1 and p = 0 this is the paper's 4γm²C²/(λ²(n−m)) (4γC²/(λ²(n−1)) for one record).

    Derivation: Δ = mλw* + Σ_Z ∇ℓ_j with ||λw*|| ≤ C + p/n (stationarity of L_b on D, where
    p ≥ ||b|| + ||∇L_b(w*; D)|| covers the loss perturbation and an inexact optimum; the paper has
    b = 0 here), so ||Δ|| ≤ m(2C + p/n); H ⪰ λ(n−m)I gives ||v|| ≤ ||Δ||/(λ(n−m)); and
    ||X'||₂ ≤ √(n−m)·R, ||X'v|| ≤ √(n−m)·R||v||, so Corollary 1 is at most γR³(n−m)||v||².

    Parameters
    ----------
    n, m : int
        Training-set size and number of removed records, 0 ≤ m < n.
    lam : float
        λ > 0 (per record: the regulariser is λ|D|/2·||w||²).
    C : float
        Per-record gradient bound, ||∇ℓ(wᵀx, y)|| ≤ C for every w.
    gamma, max_row_norm :
        As in :func:`guo_residual_bound`.
    perturbation_norm : float, default 0
        p, an upper bound on ||b|| + ||∇L_b(w*; D)||.

    References
    ----------
    .. [1] Guo et al. 2020, Theorem 1 and its batch extension in Section 3.
    """
    n_i = _count("n", n, 1, "an integer >= 1 (the training-set size)")
    m_i = _count("m", m, 0, f"an integer with 0 <= m < n (n={n_i})")
    if m_i >= n_i:
        raise InvalidInput("m", f"an integer with 0 <= m < n (n={n_i})", m)
    lam_f = require_positive("lam", lam)
    C_f = require_nonnegative("C", C)
    g = require_positive("gamma", gamma)
    r = require_nonnegative("max_row_norm", max_row_norm)
    p = require_nonnegative("perturbation_norm", perturbation_norm)
    delta_norm = m_i * (2.0 * C_f + p / n_i)
    return g * r**3 * delta_norm**2 / (lam_f**2 * (n_i - m_i))


def guo_accumulated_residual(terms: Iterable[float]) -> float:
    """β = Σ_k (bound of request k): the residual bound after sequential removals.

    Each term must bound the residual a request *adds* (Corollary 1 plus any solve or training
    residual); the sum is taken with :func:`math.fsum` so that it does not depend on order.

    References
    ----------
    .. [1] Guo et al. 2020, Section 3 (multiple removals: the residual bounds add; retrain once
       the sum passes the budget ε'); the reference code's ``grad_norm_approx``.
    """
    values = [require_nonnegative("terms", t) for t in terms]
    return math.fsum(values)


def guo_parameter_sensitivity(residual: float, lam: float, n_retained: int) -> float:
    """||w⁻ − A(D')|| ≤ residual / (λ·n'), by λn'-strong convexity of L_b(·; D'), n' = |D'|.

    Parameters
    ----------
    residual : float
        A bound on ||∇L_b(w⁻; D')|| (e.g. the accumulated β).
    lam : float
        λ > 0.
    n_retained : int
        n' = |D'| ≥ 1.

    Returns
    -------
    float
        The parameter-space sensitivity Δ_θ, the L2 sensitivity to calibrate output noise to.
    """
    res = require_nonnegative("residual", residual)
    lam_f = require_positive("lam", lam)
    n_r = _count("n_retained", n_retained, 1, "an integer >= 1 (the retained-set size)")
    return res / (lam_f * n_r)


def guo_bound(
    beta: float, lam: float, n: int, m: int, *, source: str, budget: float | None = None, sigma_b: float = 0.0
) -> Bound:
    """Guo et al.'s guarantee for one release as a :class:`~certify.certificate.Bound`.

    The value is the parameter-space sensitivity β/(λ(n − m)) (Corollary 1's gradient residual
    β and λ(n − m)-strong convexity). With ``budget`` (the loss-perturbation mode, Theorem 3) the
    condition β ≤ ε′ is part of the bound: past it, Guo et al.'s protocol retrains.
    ``source`` says where β came from (data-dependent or Theorem 1's worst case).
    """
    value = guo_parameter_sensitivity(beta, lam, n - m)
    conditions: tuple[Condition, ...] = ()
    if budget is not None:
        ok = beta <= budget
        conditions = (
            Condition(
                "residual within the loss-noise budget",
                ok,
                f"the accumulated residual bound beta = {beta:.6g} is within the budget epsilon' = {budget:.6g} "
                f"that sigma_b = {sigma_b:g} certifies"
                if ok
                else f"the accumulated residual bound beta = {beta:.6g} exceeds the budget epsilon' = {budget:.6g} "
                f"that sigma_b = {sigma_b:g} certifies: Guo et al.'s protocol retrains here; the certificate is "
                "not issued",
            ),
        )
    formula = (
        "Guo et al. 2020, Corollary 1 (gradient residual of the Newton update removal, accumulated "
        f"over requests; {source}) and lambda(n-m)-strong convexity: ||theta_U - A(D')|| <= "
        "beta/(lambda(n-m))"
    )
    if budget is not None:
        formula = (
            "Guo et al. 2020, Theorem 3 (loss perturbation b ~ N(0, sigma_b^2 I); (epsilon, delta)-"
            "certified removal while the gradient residual is at most epsilon') with Corollary 1 "
            f"accumulated over requests ({source}); no output noise. Sensitivity reported in "
            "parameter space: beta/(lambda(n-m))"
        )
    return Bound(value=value, formula=formula, conditions=conditions)
