"""Sensitivity bounds of certified-unlearning theorems, one function per theorem.

Each function turns a paper's theorem into a number Δ (a bound on the L2 distance between the
noiseless unlearned and the noiseless retrained parameters) or into the knob that reaches a
target noise level. Noise is then calibrated with :mod:`certify.mechanisms`. Pure Python/scipy.

Rewind-to-Delete (R2D)
----------------------
S. Mu and D. Klabjan, "Rewind-to-Delete: Certified Machine Unlearning for Nonconvex Functions",
Section 3, Theorem 3.1, Eq. (3), Lemmas B.2 and B.3 (Appendix B), Corollary 3.2.

Assumptions of the theorem, all of which the caller must make true (or record as estimated):

* every per-sample loss f_z is L-smooth (∇f_z is L-Lipschitz) — a global constant, for all θ;
* every per-sample gradient is bounded, ‖∇f_z(θ)‖ < G for all θ;
* learning is *full-batch* gradient descent on f_D with a *constant* step size η for T steps
  (not minibatch SGD, not a decaying schedule), and the retrain reference runs the same
  algorithm on D' = D \\ Z from the *same* initial point θ_0;
* |D| = n, |Z| = m (samples, not users), and unlearning rewinds to the saved iterate θ_{T−K}
  and runs K full-batch GD steps on D';
* the utility half of Theorem 3.1 also needs η ≤ min{1/L, n/(2(n−m)L)}; the certification
  itself (the bound on Δ) needs only the smoothness and gradient-bound assumptions.

Under them, with q = 1 + ηLn/(n−m),

    ‖θ'_T − θ''_K‖ ≤ Δ(K) = 2mG·h(K)/(Ln),   h(K) = (q^{T−K} − 1)(1 + ηL)^K,

where Lemma B.2 bounds the drift of training on D versus D' for T−K steps and Lemma B.3 the
(non-contractive) growth over the K unlearning steps. Eq. (3) is the classic Gaussian mechanism
applied to Δ(K); for ε > 1 the paper's experiments use the analytic Gaussian mechanism instead.
"""

from __future__ import annotations

import math

from certify.certificate import Bound, Condition, Constant
from certify.errors import (
    Integer,
    require,
    require_nonnegative,
    require_positive,
    require_probability,
)
from certify.mechanisms import _check_mechanism, _classic_epsilon_error, _unit_sigma

__all__ = [
    "r2d_bound",
    "r2d_corollary_rewind_bound",
    "r2d_h",
    "r2d_rewind_for_sigma",
    "r2d_sensitivity",
    "r2d_step_size_limit",
    "r2d_step_size_ok",
]

_LOG_MAX = math.log(1.7976931348623157e308)  # log of the largest double


# ----------------------------------------------------------------------------------------------
# validation helpers


def _require_int(field: str, value: object, allowed: str, lo: int, hi: int | None = None) -> int:
    """An integer (int, numpy integer, or integral float) in [lo, hi], else InvalidInput saying
    ``allowed`` (the range with its meaning)."""
    return require(Integer(lo, hi), field, value, allowed)


def _check_n_m(n: object, m: object) -> tuple[int, int]:
    n_i = _require_int("n", n, "an integer >= 2 (the training-set size)", 2)
    m_i = _require_int("m", m, f"an integer with 0 < m < n (n={n_i})", 1, n_i - 1)
    return n_i, m_i


def _check_T_K(T: object, K: object) -> tuple[int, int]:
    T_i = _require_int("T", T, "an integer >= 0 (number of gradient steps)", 0)
    K_i = _require_int("K", K, f"an integer with 0 <= K <= T (T={T_i})", 0, T_i)
    return T_i, K_i


def _log_q(eta: float, L: float, n: int, m: int) -> float:
    """log q with q = 1 + ηLn/(n−m), the per-step expansion while the data differ."""
    return math.log1p(eta * L * n / (n - m))


def _h_validated(K: int, T: int, eta: float, L: float, n: int, m: int) -> float:
    if K == T:
        return 0.0
    x = (T - K) * _log_q(eta, L, n, m)  # > 0
    y = K * math.log1p(eta * L)  # >= 0
    if x < _LOG_MAX and y < _LOG_MAX:
        return math.expm1(x) * math.exp(y)  # a float product overflows to inf, never raises
    # log h = log(e^x − 1) + y = x + log(1 − e^−x) + y
    log_h = x + math.log1p(-math.exp(-x)) + y if x > 1.0 else math.log(math.expm1(x)) + y
    return math.inf if log_h >= _LOG_MAX else math.exp(log_h)


# ----------------------------------------------------------------------------------------------
# Rewind-to-Delete


def r2d_h(K: int, T: int, eta: float, L: float, n: int, m: int) -> float:
    """The R2D growth factor h(K) = ((1 + ηLn/(n−m))^{T−K} − 1)·(1 + ηL)^K.

    Computed with ``log1p``/``expm1`` (in log space when a factor would overflow), so that a
    large ηL(T−K) returns ``math.inf`` instead of raising ``OverflowError``.

    Parameters
    ----------
    K : int
        Rewind length: the number of unlearning GD steps, 0 ≤ K ≤ T.
    T : int
        Number of full-batch GD steps of the learning algorithm, T ≥ 0 (counted in gradient
        steps, not epochs).
    eta : float
        Constant step size η > 0.
    L : float
        Per-sample smoothness constant L > 0.
    n : int
        Training-set size, n ≥ 2.
    m : int
        Number of deleted samples, 0 < m < n.

    Returns
    -------
    float
        h(K) ≥ 0; exactly ``0.0`` at K = T (a full retrain), strictly decreasing in K, and
        ``math.inf`` if it exceeds the largest double.

    Raises
    ------
    InvalidInput
        If K, T, n or m are not integers in range, or eta or L is not finite and > 0.

    References
    ----------
    .. [1] S. Mu and D. Klabjan, "Rewind-to-Delete: Certified Machine Unlearning for Nonconvex
       Functions", Theorem 3.1 and Eq. (3); Lemma B.2 gives the factor q^{T−K} − 1,
       Lemma B.3 the factor (1 + ηL)^K; monotonicity in K is shown after Corollary 3.2.
    """
    T_i, K_i = _check_T_K(T, K)
    eta_f = require_positive("eta", eta)
    L_f = require_positive("L", L)
    n_i, m_i = _check_n_m(n, m)
    return _h_validated(K_i, T_i, eta_f, L_f, n_i, m_i)


def r2d_sensitivity(K: int, T: int, eta: float, L: float, G: float, n: int, m: int) -> float:
    """The R2D sensitivity Δ(K) = 2mG·h(K)/(Ln), a bound on ‖θ'_T − θ''_K‖₂.

    θ'_T is the model retrained by T full-batch GD steps on D' = D \\ Z from θ_0; θ''_K is the
    unlearned model (K GD steps on D' from the saved iterate θ_{T−K} of the run on D).

    Parameters
    ----------
    K, T : int
        Rewind length and total number of GD steps, 0 ≤ K ≤ T.
    eta : float
        Constant step size η > 0 (the theorem does not cover schedules or minibatches).
    L : float
        Per-sample smoothness constant L > 0 (every f_z L-smooth, globally).
    G : float
        Per-sample gradient bound G > 0 (‖∇f_z(θ)‖ < G for all z and θ).
    n : int
        Training-set size, n ≥ 2.
    m : int
        Number of deleted samples (not users), 0 < m < n.

    Returns
    -------
    float
        Δ(K) ≥ 0, ``0.0`` at K = T, ``math.inf`` on overflow. Linear in G and in m·h(K)/n.

    Raises
    ------
    InvalidInput
        If an argument is outside the ranges above.

    References
    ----------
    .. [1] S. Mu and D. Klabjan, "Rewind-to-Delete", Theorem 3.1, Eq. (3) (σ = Δ(K)·√(2 ln
       (1.25/δ))/ε), Appendix B: Lemma B.2 (‖θ_t − θ'_t‖ ≤ (2Gm/(Ln))(q^t − 1)) and Lemma B.3
       (‖θ'_T − θ''_K‖ ≤ ‖θ_{T−K} − θ'_{T−K}‖(1 + ηL)^K).
    """
    T_i, K_i = _check_T_K(T, K)
    eta_f = require_positive("eta", eta)
    L_f = require_positive("L", L)
    G_f = require_positive("G", G)
    n_i, m_i = _check_n_m(n, m)
    h = _h_validated(K_i, T_i, eta_f, L_f, n_i, m_i)
    return 2.0 * m_i * G_f * h / (L_f * n_i)


def r2d_step_size_limit(L: float, n: int, m: int) -> float:
    """The largest step size Theorem 3.1 allows: min{1/L, n/(2(n−m)L)}.

    Parameters
    ----------
    L : float
        Per-sample smoothness constant L > 0.
    n : int
        Training-set size, n ≥ 2.
    m : int
        Number of deleted samples, 0 < m < n.

    Returns
    -------
    float
        η_max = min(1/L, n/(2(n−m)L)). (The second term is the smaller one whenever m < n/2.)

    Raises
    ------
    InvalidInput
        If L is not finite and > 0, or n, m are not integers with 0 < m < n.

    References
    ----------
    .. [1] S. Mu and D. Klabjan, "Rewind-to-Delete", Theorem 3.1 (step-size condition, used by
       the utility bound, Eq. 4; the certification holds for any η > 0).
    """
    L_f = require_positive("L", L)
    n_i, m_i = _check_n_m(n, m)
    return min(1.0 / L_f, n_i / (2.0 * (n_i - m_i) * L_f))


def r2d_step_size_ok(eta: float, L: float, n: int, m: int) -> bool:
    """Whether η satisfies Theorem 3.1's condition η ≤ min{1/L, n/(2(n−m)L)}.

    Parameters
    ----------
    eta : float
        Step size η > 0.
    L, n, m
        As in :func:`r2d_step_size_limit`.

    Returns
    -------
    bool
        ``eta <= r2d_step_size_limit(L, n, m)``.

    Raises
    ------
    InvalidInput
        If eta or L is not finite and > 0, or n, m are not integers with 0 < m < n.

    References
    ----------
    .. [1] S. Mu and D. Klabjan, "Rewind-to-Delete", Theorem 3.1.
    """
    eta_f = require_positive("eta", eta)
    return eta_f <= r2d_step_size_limit(L, n, m)


def r2d_rewind_for_sigma(
    sigma: float,
    epsilon: float,
    delta: float,
    T: int,
    eta: float,
    L: float,
    G: float,
    n: int,
    m: int,
    mechanism: str = "analytic",
) -> int:
    """The smallest rewind K that certifies (ε, δ) with a given noise level σ (exact search).

    Returns the smallest integer K in [0, T] with
    ``sigma_for(epsilon, delta, r2d_sensitivity(K, T, eta, L, G, n, m), mechanism) <= sigma``.
    Because h(K) is strictly decreasing in K and σ is linear in Δ, the condition is monotone in K
    and an integer bisection finds it in O(log T) evaluations; K = T always qualifies (Δ(T) = 0).

    Parameters
    ----------
    sigma : float
        The noise standard deviation that will be added, finite and ≥ 0. σ = 0 gives K = T.
    epsilon : float
        Target ε > 0 (≤ 1 with ``mechanism="classic"``).
    delta : float
        Target δ in (0, 1).
    T : int
        Number of full-batch GD steps of learning, T ≥ 0.
    eta, L, G : float
        Constant step size, per-sample smoothness and per-sample gradient bound, all > 0.
    n, m : int
        Training-set size and number of deleted samples, 0 < m < n.
    mechanism : {"analytic", "classic"}, default "analytic"
        Gaussian calibration (see :func:`certify.mechanisms.sigma_for`). ``"classic"``
        reproduces Theorem 3.1's Eq. (3) exactly.

    Returns
    -------
    int
        The smallest certified rewind K (unlearning cost K/T of a retrain).

    Raises
    ------
    InvalidInput
        If an argument is out of range, the mechanism is unknown, or ``mechanism="classic"``
        with ``epsilon > 1``.

    References
    ----------
    .. [1] S. Mu and D. Klabjan, "Rewind-to-Delete", Theorem 3.1, Eq. (3), and Corollary 3.2
       (whose closed form, :func:`r2d_corollary_rewind_bound`, upper-bounds this K).
    """
    mech = _check_mechanism(mechanism)
    sig = require_nonnegative("sigma", sigma)
    eps = require_positive("epsilon", epsilon)
    dlt = require_probability("delta", delta)
    T_i = _require_int("T", T, "an integer >= 0 (number of gradient steps)", 0)
    eta_f = require_positive("eta", eta)
    L_f = require_positive("L", L)
    G_f = require_positive("G", G)
    n_i, m_i = _check_n_m(n, m)
    if mech == "classic" and eps > 1.0:
        raise _classic_epsilon_error(epsilon)

    unit = _unit_sigma(eps, dlt, mech)  # sigma_for(eps, dlt, Δ, mech) == Δ * unit

    def ok(k: int) -> bool:
        h = _h_validated(k, T_i, eta_f, L_f, n_i, m_i)
        if h == 0.0:
            return True
        sens = 2.0 * m_i * G_f * h / (L_f * n_i)
        return sens * unit <= sig

    if ok(0):
        return 0
    lo, hi = 0, T_i  # ok(lo) is False, ok(hi) is True
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return hi


def r2d_corollary_rewind_bound(
    sigma: float,
    epsilon: float,
    delta: float,
    T: int,
    eta: float,
    L: float,
    G: float,
    n: int,
    m: int,
) -> float:
    """Corollary 3.2's closed-form rewind: K ≤ ln(q^T − σLnε/(2mG√(2 ln(1.25/δ)))) / ln q.

    With q = 1 + ηLn/(n−m). It follows from h(K) ≤ q^T − q^K (since 1 + ηL ≤ q) and the
    classic Gaussian mechanism, so it is a real-valued *upper* bound on the exact root of
    σ(K) = σ. ``math.ceil`` of it is always a valid integer rewind, so the exact
    :func:`r2d_rewind_for_sigma` with ``mechanism="classic"`` is ≤ ``math.ceil(bound)`` (it can
    exceed the unrounded bound by less than one step).
    Evaluated in log space: ln(q^T − c) = T ln q + ln(1 − c·q^{−T}).

    Parameters
    ----------
    sigma : float
        Noise standard deviation, finite and ≥ 0 (σ = 0 gives T).
    epsilon : float
        Target ε with 0 < ε ≤ 1 (the classic mechanism of Theorem 3.1).
    delta : float
        Target δ in (0, 1).
    T : int
        Number of full-batch GD steps of learning, T ≥ 0.
    eta, L, G : float
        Constant step size, per-sample smoothness and per-sample gradient bound, all > 0.
    n, m : int
        Training-set size and number of deleted samples, 0 < m < n.

    Returns
    -------
    float
        The bound, clamped to [0, T]. ``0.0`` when the log argument is ≤ 1 (the paper: when it
        is ≤ 0, K = 0 already suffices; between 0 and 1 the bound is negative and is clamped).

    Raises
    ------
    InvalidInput
        If an argument is out of range or ``epsilon > 1`` (use :func:`r2d_rewind_for_sigma`
        with ``mechanism="analytic"`` for larger ε).

    References
    ----------
    .. [1] S. Mu and D. Klabjan, "Rewind-to-Delete", Corollary 3.2 (and Theorem 3.1, Eq. 3).
    """
    sig = require_nonnegative("sigma", sigma)
    eps = require_positive("epsilon", epsilon)
    dlt = require_probability("delta", delta)
    T_i = _require_int("T", T, "an integer >= 0 (number of gradient steps)", 0)
    eta_f = require_positive("eta", eta)
    L_f = require_positive("L", L)
    G_f = require_positive("G", G)
    n_i, m_i = _check_n_m(n, m)
    if eps > 1.0:
        raise _classic_epsilon_error(epsilon)
    if T_i == 0:
        return 0.0
    log_q = _log_q(eta_f, L_f, n_i, m_i)
    if sig == 0.0:
        return float(T_i)
    log_c = (
        math.log(sig)
        + math.log(L_f)
        + math.log(n_i)
        + math.log(eps)
        - math.log(2.0 * m_i * G_f)
        - 0.5 * math.log(2.0 * math.log(1.25 / dlt))
    )
    log_r = log_c - T_i * log_q  # log(c / q^T)
    if log_r >= 0.0:
        return 0.0  # q^T − c ≤ 0: K = 0 suffices
    log_arg = T_i * log_q + math.log1p(-math.exp(log_r))
    if log_arg <= 0.0:
        return 0.0
    return min(float(T_i), log_arg / log_q)


def r2d_bound(K: int, T: int, eta: float, L: Constant, G: Constant, n: int, m: int, eta_note: str = "") -> Bound:
    """Theorem 3.1 as a :class:`~certify.certificate.Bound`: Δ(K), its step-size condition and
    every constant it rests on (L and G with their provenance; η, T, K, n, m enforced).

    ``eta_note`` says how η was chosen (appended to its description).
    """
    value = r2d_sensitivity(K, T, eta, L.value, G.value, n, m)
    limit = r2d_step_size_limit(L.value, n, m)
    met = eta <= limit
    step = Condition(
        "step size",
        met,
        f"step size eta = {eta:.6g} {'is within' if met else 'exceeds'} Theorem 3.1's limit "
        f"min(1/L, n/(2(n-m)L)) = {limit:.6g}" + ("" if met else ": the certificate is not issued"),
    )
    constants = (
        L,
        G,
        Constant("eta", eta, "enforced", "constant step size of every gradient step" + eta_note),
        Constant("T", float(T), "enforced", "gradient steps of learning and of the retrain"),
        Constant("K", float(K), "enforced", "rewind: gradient steps replayed on the retained data"),
        Constant("n", float(n), "enforced", "training records |D| (counted)"),
        Constant("m", float(m), "enforced", "deleted records |Z| (counted)"),
        Constant(
            "eta*L*T", eta * L.value * T, "enforced", "the exponent that drives h(K): the bound grows like exp(eta*L*T)"
        ),
    )
    return Bound(
        value=value,
        formula="Mu & Klabjan, Rewind-to-Delete, Theorem 3.1 (Eq. 3; Lemmas B.2-B.3): "
        "||theta''_K - theta'_T|| <= 2mG((1+eta*L*n/(n-m))^(T-K) - 1)(1+eta*L)^K/(Ln)",
        conditions=(step,),
        constants=constants,
    )
