"""Accounting of certified noisy fine-tuning (Koloskova, Allouah, Jha, Guerraoui & Koyejo,
"Certified Unlearning for Neural Networks", ICML 2025, arXiv:2506.06985): no assumption on the
loss, only radii the user chooses.

Both variants run T noisy steps on the retain set D \\ Z only, so the forgotten records enter
through the starting point alone; the noise makes the start fade (privacy amplification by
(stochastic post-)iteration). The release is the last iterate; noise-free fine-tuning on the
retain set afterwards is post-processing and changes nothing below.

**Gradient clipping** (the paper's Section 3, "gradient clipping"; the authors' code calls it
``iteration`` / PABI). x_0 = Π_{C0}(A(D)) and

    x_{t+1} = x_t − γ (Π_{C1}(g_t) + λ x_t) + ξ_{t+1},   ξ ~ N(0, σ² I_d).

The update map moves two points at most (1 − γλ) times closer plus 2γC1 apart, so privacy
amplification by iteration (Feldman, Mironov, Talwar & Thakurta, FOCS 2018, Theorem 22, with the
shift of the non-contractive part carried along) bounds the Rényi divergence of the last iterates
started anywhere in the C0-ball at *every* order α > 1 by α·ρ with

    ρ = ( c^T·2C0 + 2γC1·Σ_{k<T} c^k )² / ( 2σ² Σ_{k<T} c^{2k} ),   c = 1 − γλ.

This is exactly the quantity of the authors' accountant (``pabi_renyi`` in
``visualisation/viz_accountants.py``; ``Trainer.dp_accountant`` in ``src/training/trainer.py``,
the "numerator / denominator" of the intermediate Rényi epsilon; ``Trainer.unlearn_sigma_t`` for
the constant-noise σ it inverts). :func:`gradient_clip_rho` re-derives it.

Deviation from the authors' code, on purpose: their ``renyi2dp`` converts ρ to (ε, δ) as if the
Rényi bound were ρ at every order (``eps_renyi − (log δ + log α)/(α − 1) + log((α − 1)/α)``
with ``eps_renyi`` fixed), but the Gaussian steps give α·ρ at order α (Mironov 2017, Prop. 7),
and the paper's closed forms (σ² ∝ log(1/δ)/ε²) keep the α. Here the curve α·ρ is converted by
the toolkit's RDP conversion (Balle et al. 2020, Theorem 21, :func:`certify.rdp.rdp_to_epsilon`)
on a dense order grid, which gives a larger, valid ε. ``authors_renyi2dp`` reproduces their
number for comparison only.

**Model clipping** (the paper's Section 3, "model clipping"; ``contractive_coefficients`` in the
code). x_0 = A(D) (+ N(0, σ0²) after Π_{C0} if σ0 > 0) and

    x_{t+1} = Π_{C2}(x_t − γ(g_t + λ x_t)) + ξ_{t+1}.

Every step is a Markov kernel whose outputs for any two inputs are Gaussians with means in the
C2-ball, so its E_γ contraction coefficient is at most the hockey-stick divergence of two
Gaussians 2C2/σ apart (Asoodeh, Diaz & Calmon, "Privacy amplification of iterative algorithms
via contraction coefficients", ISIT 2020; Balle, Barthe, Gaboardi & Geumlek, NeurIPS 2019):

    δ_{t+1} = δ_t · δ_Gauss(ε̃_t; 2C2/σ),   ε̃_t = log(1 + (e^ε − 1)/δ_t),

from δ_0 = δ_Gauss(ε; 2C0/σ0) (or 1 without initial noise). δ_Gauss is the exact Gaussian
privacy curve (:func:`certify.mechanisms.delta_for`, Balle & Wang 2018, Theorem 8; the authors'
``theta_epsilon``). :func:`model_clip_delta` re-derives ``Trainer.dp_accountant``'s recursion.

Theorem numbers: the statements above are the ones the authors' code evaluates. The paper's own
theorem and equation numbers are not quoted: the copies reachable here (arXiv HTML v2, the ICML
text) give only its opening, and the code names no theorem; the accounting is checked against
that code instead (tests/test_noisyft.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from certify.errors import InvalidInput, require_positive, require_probability
from certify.mechanisms import delta_for

#: Rényi orders for the conversion of α·ρ: the toolkit's grid refined near 1 and continued
#: geometrically to 10^5, so the optimum order (≈ 1 + sqrt(log(1/δ)/ρ)) is inside the grid for
#: every ρ ≥ 1e-9 at δ ≥ 1e-300.
ORDERS: tuple[float, ...] = tuple(
    sorted(
        set(
            [1 + x / 100.0 for x in range(1, 100)]
            + [1 + x / 10.0 for x in range(10, 100)]
            + [float(a) for a in np.unique(np.round(np.geomspace(11, 1e5, 400), 2))]
        )
    )
)

_ORDERS = np.asarray(ORDERS)
VARIANTS = ("gradient-clip", "model-clip")


def _contraction(gamma: float, lam: float) -> float:
    """c = 1 − γλ, the factor the weight-decay term shrinks the iterate by (needs 0 ≤ γλ < 1)."""
    if not 0.0 <= gamma * lam < 1.0:
        raise InvalidInput(
            "lam", "a value with 0 <= gamma * lam < 1 (the decay step must shrink the iterate)", gamma * lam
        )
    return 1.0 - gamma * lam


def _geometric(log_c: float, steps: int) -> float:
    """Σ_{k<T} c^k with c = exp(log_c) ≤ 1, stable for c → 1 (T when c = 1)."""
    if log_c == 0.0:
        return float(steps)
    return math.expm1(steps * log_c) / math.expm1(log_c)


def gradient_clip_shift(C0: float, C1: float, gamma: float, lam: float, steps: int) -> float:
    """The distance PABI must absorb: c^T·2C0 + 2γC1·Σ_{k<T} c^k (= 2C0 + 2γC1T when λ = 0)."""
    c = _contraction(gamma, lam)
    log_c = math.log(c) if c < 1.0 else 0.0
    return math.exp(steps * log_c) * 2.0 * C0 + 2.0 * gamma * C1 * _geometric(log_c, steps)


def gradient_clip_rho(C0: float, C1: float, gamma: float, lam: float, steps: int, sigma: float) -> float:
    """ρ such that the released iterate is (α, α·ρ)-Rényi-unlearning at every α > 1 (module docstring)."""
    steps = _steps(steps)
    c = _contraction(gamma, lam)
    log_c2 = 2.0 * math.log(c) if c < 1.0 else 0.0
    shift = gradient_clip_shift(C0, C1, gamma, lam, steps)
    return shift**2 / (2.0 * sigma**2 * _geometric(log_c2, steps))


def rho_to_epsilon(rho: float, delta: float) -> tuple[float, float]:
    """(ε, best order) of the Rényi curve α·ρ at δ: the minimum over every real α > 1 of

        h(α) = αρ − (log δ + log α)/(α − 1) + log((α − 1)/α)

    (Balle et al. 2020, Theorem 21; the formula of :func:`certify.rdp.rdp_to_epsilon`, Opacus's
    ``get_privacy_spent``, evaluated here in numpy because σ's root search calls it hundreds of
    times). The grid :data:`ORDERS` brackets the minimum and a golden-section search between the
    neighbouring orders finishes it (h is smooth; relative error below 1e-12)."""
    if rho <= 0.0:
        return 0.0, math.inf
    log_delta = math.log(delta)

    def h(alpha: float) -> float:
        return alpha * rho - (log_delta + math.log(alpha)) / (alpha - 1) + math.log((alpha - 1) / alpha)

    values = _ORDERS * rho - (log_delta + np.log(_ORDERS)) / (_ORDERS - 1) + np.log((_ORDERS - 1) / _ORDERS)
    best = int(np.argmin(values))
    lo = float(_ORDERS[best - 1]) if best > 0 else 1.0 + 1e-9
    hi = float(_ORDERS[best + 1]) if best + 1 < _ORDERS.size else float(_ORDERS[-1])
    ratio = (math.sqrt(5.0) - 1.0) / 2.0
    a, b = lo + (1 - ratio) * (hi - lo), lo + ratio * (hi - lo)
    fa, fb = h(a), h(b)
    for _ in range(200):
        if hi - lo <= 1e-13 * hi:
            break
        if fa <= fb:
            hi, b, fb = b, a, fa
            a = lo + (1 - ratio) * (hi - lo)
            fa = h(a)
        else:
            lo, a, fa = a, b, fb
            b = lo + ratio * (hi - lo)
            fb = h(b)
    alpha, value = (a, fa) if fa <= fb else (b, fb)
    if float(values[best]) < value:  # the grid point itself (a bracket at the grid's end)
        alpha, value = float(_ORDERS[best]), float(values[best])
    return max(0.0, value), alpha


def rho_for_epsilon(epsilon: float, delta: float) -> float:
    """The largest ρ whose curve α·ρ converts to at most ε at δ (bisection in log ρ; ε is
    increasing in ρ). Relative tolerance 1e-12."""
    epsilon = require_positive("epsilon", epsilon)
    delta = require_probability("delta", delta)
    lo, hi = -60.0, math.log(max(epsilon, 1e-12)) + 5.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if rho_to_epsilon(math.exp(mid), delta)[0] <= epsilon:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-12:
            break
    return math.exp(lo)


def gradient_clip_sigma(
    epsilon: float, delta: float, C0: float, C1: float, gamma: float, lam: float, steps: int
) -> float:
    """σ that makes gradient-clipped noisy fine-tuning (ε, δ)-unlearning: σ² = K/ρ* with ρ = K/σ²."""
    rho_star = rho_for_epsilon(epsilon, delta)
    unit = gradient_clip_rho(C0, C1, gamma, lam, steps, 1.0)  # ρ at σ = 1, i.e. K
    return math.sqrt(unit / rho_star) * (1.0 + 1e-12)  # the rounding goes to the safe side


def authors_renyi2dp(eps_renyi: float, delta: float) -> float:
    """The authors' conversion, reproduced for comparison only (``renyi2dp`` /
    ``Trainer.dp_accountant``: ``eps_renyi`` held fixed over α = linspace(1.001, 1000, 10000))."""
    alpha = np.linspace(1.001, 1000, 10000)
    return float(np.min(eps_renyi - (np.log(delta) + np.log(alpha)) / (alpha - 1) + np.log((alpha - 1) / alpha)))


# -- model clipping -------------------------------------------------------------------------------
def model_clip_deltas(
    epsilon: float, sigma: float, C2: float, steps: int, *, C0: float = 0.0, sigma0: float = 0.0
) -> list[float]:
    """[δ_0, δ_1, …, δ_T] of the contraction recursion (module docstring) at ε."""
    epsilon = require_positive("epsilon", epsilon)
    steps = _steps(steps)
    current = delta_for(sigma0, epsilon, 2.0 * C0) if sigma0 > 0 else 1.0
    out = [current]
    for _ in range(steps):
        if current <= 0.0:
            out.append(0.0)
            continue
        tilde = math.log1p(math.expm1(epsilon) / current)
        current = current * delta_for(sigma, tilde, 2.0 * C2)
        out.append(current)
    return out


def model_clip_sigma(
    epsilon: float, delta: float, C2: float, steps: int, *, C0: float = 0.0, sigma0: float = 0.0
) -> float:
    """The smallest σ (relative tolerance 1e-10) with δ_T(σ) ≤ δ (δ_T decreases as σ grows)."""
    delta = require_probability("delta", delta)
    C2 = require_positive("C2", C2)

    def ok(log_sigma: float) -> bool:
        return model_clip_deltas(epsilon, math.exp(log_sigma), C2, steps, C0=C0, sigma0=sigma0)[-1] <= delta

    lo, hi = math.log(C2) - 40.0, math.log(C2) + 5.0
    while not ok(hi):
        lo, hi = hi, hi + 5.0
        if hi > math.log(C2) + 200:
            raise InvalidInput("steps", "enough steps to reach delta with finite noise", steps)
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if ok(mid) else (mid, hi)
        if hi - lo < 1e-10:
            break
    return math.exp(hi)


def model_clip_epsilon(
    delta: float, sigma: float, C2: float, steps: int, *, C0: float = 0.0, sigma0: float = 0.0
) -> float:
    """The smallest ε (relative tolerance 1e-10) with δ_T(ε) ≤ δ at the σ that was run."""
    delta = require_probability("delta", delta)

    def ok(log_eps: float) -> bool:
        return model_clip_deltas(math.exp(log_eps), sigma, C2, steps, C0=C0, sigma0=sigma0)[-1] <= delta

    lo, hi = -30.0, 0.0
    while not ok(hi):
        lo, hi = hi, hi + 1.0
        if hi > 10:
            return math.inf
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if ok(mid) else (mid, hi)
        if hi - lo < 1e-10:
            break
    return math.exp(hi)


@dataclass(frozen=True)
class NoisyFTAccount:
    """What a run of noisy fine-tuning certifies at δ: ε, the route, and the numbers behind it."""

    epsilon: float
    delta: float
    sigma: float
    formula: str
    rho: float | None = None
    best_order: float | None = None
    deltas: tuple[float, ...] = ()


def account(
    variant: str,
    *,
    delta: float,
    sigma: float,
    steps: int,
    gamma: float,
    lam: float,
    C0: float,
    C1: float,
    C2: float,
    sigma0: float = 0.0,
) -> NoisyFTAccount:
    """The (ε, δ) guarantee of a run with noise σ (the certificate's numbers)."""
    if variant == "gradient-clip":
        rho = gradient_clip_rho(C0, C1, gamma, lam, steps, sigma)
        eps, order = rho_to_epsilon(rho, delta)
        return NoisyFTAccount(
            eps,
            delta,
            sigma,
            (
                f"rho = (c^T*2*C0 + 2*gamma*C1*sum_k c^k)^2 / (2*sigma^2*sum_k c^(2k)) = {rho:.6g} with c = 1 - gamma*lambda "
                f"(PABI, Feldman et al. 2018 Thm 22); Renyi alpha*rho at every order converted at delta = {delta:g} "
                f"(Balle et al. 2020 Thm 21): epsilon = {eps:.6g} at alpha = {order}"
            ),
            rho=rho,
            best_order=order,
        )
    eps = model_clip_epsilon(delta, sigma, C2, steps, C0=C0, sigma0=sigma0)
    deltas = model_clip_deltas(eps, sigma, C2, steps, C0=C0, sigma0=sigma0) if math.isfinite(eps) else []
    return NoisyFTAccount(
        eps,
        delta,
        sigma,
        (
            f"delta_(t+1) = delta_t * delta_Gauss(log(1 + (e^eps - 1)/delta_t); 2*C2/sigma) over T = {steps} projected "
            f"noisy steps (E_gamma contraction, Asoodeh et al. 2020), delta_0 = "
            f"{'delta_Gauss(eps; 2*C0/sigma0)' if sigma0 > 0 else '1 (no initial noise)'}: the smallest epsilon with "
            f"delta_T <= {delta:g} is {eps:.6g}"
        ),
        deltas=tuple(deltas),
    )


def _steps(steps: object) -> int:
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or int(steps) < 1:
        raise InvalidInput("steps", "an integer >= 1", steps)
    return int(steps)
