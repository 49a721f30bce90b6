"""Shared second-order machinery: curvature-vector products, inverse solves and eigenvalues.

Every second-order unlearning method (Newton step, NGD, CNS/LiSSA, CureNewton) needs some of

* a **curvature operator** ``v ↦ A v`` for the Hessian ∇²f_D(θ) (:func:`hvp_operator`), the
  Gauss–Newton / true Fisher matrix at the empirical inputs (:func:`gauss_newton_operator`) or the
  empirical Fisher (:func:`empirical_fisher_operator`), each optionally plus ``l2·I``, and a
  mini-batch version of any of them for stochastic solvers (:func:`stochastic_operator`);
* an **inverse product** ``A⁻¹ b``: exactly through a dense Cholesky factorisation
  (:func:`explicit_hessian` + :func:`dense_solve`, small models only), by conjugate gradients
  (:func:`conjugate_gradient`, matrix-free, deterministic) or by the LiSSA stochastic Neumann
  series (:func:`lissa`, matrix-free, cost independent of n);
* **extreme eigenvalues** (:func:`power_iteration`, :func:`smallest_eigenvalue`, from
  :mod:`unlearners.power`; :func:`lanczos_extremes`; :func:`unlearners.lanczos.lanczos_bounds`
  stops on the Ritz residuals and moves each end outward by its residual): the LiSSA scale must
  exceed ‖A‖, and the certificates use λ_min(∇²f_D);
* **minimisers** of the L2-regularised empirical risk (:func:`newton_minimize` for convex linear
  models, :func:`lbfgs_minimize` otherwise, :func:`fit_regularized` choosing between them) and
  the dense Fisher (:func:`fisher_matrix`).

Conventions: an *operator* is a callable ``matvec(v) -> A v`` on flat vectors of shape (d,), with
the device and dtype of θ; a *stochastic* operator is a callable ``matvec(v, generator)`` that
draws its own mini-batch. Every function that draws random numbers takes an explicit
``torch.Generator``; draws are made on the generator's device and moved to the data's device, so
results are a pure function of the generator's state. Curvature is that of the **mean** loss
f_D(θ) = (1/n) Σ f_{z_i}(θ) (:class:`~unlearners.objective.Objective`), so it does not grow with n.
Bad arguments raise :class:`certify.errors.InvalidInput`.

References
----------
* Pearlmutter (1994), "Fast exact multiplication by the Hessian", Neural Computation 6(1).
* Schraudolph (2002), "Fast curvature matrix-vector products for second-order gradient descent",
  Neural Computation 14(7) (Gauss–Newton products Jᵀ H_out J v).
* Martens (2020), "New insights and perspectives on the natural gradient method", JMLR 21
  (generalised Gauss–Newton = Fisher for exponential-family outputs).
* Kunstner, Hennig & Balles (2019), "Limitations of the empirical Fisher approximation", NeurIPS.
* Hestenes & Stiefel (1952), "Methods of conjugate gradients for solving linear systems";
  Nocedal & Wright (2006), *Numerical Optimization*, 2nd ed., Alg. 5.2.
* Agarwal, Bullins & Hazan (2017), "Second-order stochastic optimization for machine learning in
  linear time", JMLR 18 (LiSSA); Koh & Liang (2017), "Understanding black-box predictions via
  influence functions", ICML (the recursion used for inverse-HVPs).
* Golub & Van Loan (2013), *Matrix Computations*, 4th ed., §7.3 (power iteration), §10.1
  (Lanczos), §4.2 (Cholesky).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Protocol, cast

import torch
from torch import Tensor
from torch.func import vmap

from certify.errors import InvalidInput, require_integer
from certify.errors import require_nonnegative as _nonneg
from certify.errors import require_positive as _positive
from unlearners.lanczos import lanczos_extremes
from unlearners.objective import Objective, regularized_grad, regularized_loss, vjp_pair
from unlearners.power import power_iteration, smallest_eigenvalue

Operator = Callable[[Tensor], Tensor]


class StochasticOperator(Protocol):
    def __call__(self, v: Tensor, generator: torch.Generator) -> Tensor: ...


__all__ = [
    "Operator",
    "StochasticOperator",
    "hvp_operator",
    "hvp_once",
    "gauss_newton_operator",
    "fisher_operator",
    "empirical_fisher_operator",
    "stochastic_operator",
    "explicit_hessian",
    "explicit_matrix",
    "dense_solve",
    "conjugate_gradient",
    "lissa",
    "power_iteration",
    "smallest_eigenvalue",
    "lanczos_extremes",
    "newton_minimize",
    "lbfgs_minimize",
    "fit_regularized",
    "fisher_matrix",
]


# -- validation -------------------------------------------------------------------------------
def _count(field: str, value: int, minimum: int = 1) -> int:
    return require_integer(field, value, minimum)


def _check_problem(objective: Objective, theta: Tensor, X: Tensor, y: Tensor) -> None:
    if not isinstance(theta, Tensor) or theta.dim() != 1 or theta.numel() != objective.dim:
        got = tuple(theta.shape) if isinstance(theta, Tensor) else theta
        raise InvalidInput("theta", f"a flat tensor of shape ({objective.dim},)", got)
    if X.shape[0] != y.shape[0]:
        raise InvalidInput("X, y", "the same number of records", (X.shape[0], y.shape[0]))
    if X.shape[0] == 0:
        raise InvalidInput("X", "at least one record", 0)


def _check_vector(field: str, v: Tensor, dim: int) -> None:
    if not isinstance(v, Tensor) or v.dim() != 1 or v.numel() != dim:
        got = tuple(v.shape) if isinstance(v, Tensor) else v
        raise InvalidInput(field, f"a flat tensor of shape ({dim},)", got)


# -- curvature operators --------------------------------------------------------------------
def hvp_operator(objective: Objective, theta: Tensor, X: Tensor, y: Tensor, *, l2: float = 0.0) -> Operator:
    """The exact Hessian-vector product ``v ↦ (∇²f_D(θ) + l2·I) v``.

    f_D is the mean per-sample loss of ``objective`` on (X, y). The gradient ∇f_D is
    evaluated once through the functional core (``torch.func.vjp`` of ``Objective.grad``) when
    the operator is built; each product is then one reverse pass through that cached graph
    (reverse-over-reverse, Pearlmutter 1994): H v = (vᵀ H)ᵀ since H is symmetric (a linear model
    uses :meth:`Objective.hvp_fn`'s closed form instead: two matrix products). This equals
    ``Objective.hvp`` (forward-over-reverse) to rounding and is several times faster per product
    on CPU, at the memory cost of keeping the gradient's graph on (X, y) alive as long as the
    operator. The d×d Hessian is never formed. The operator is symmetric; it is indefinite for
    non-convex models. It can be ``vmap``-ed over a batch of vectors.

    Parameters
    ----------
    objective, theta, X, y:
        The model, the flat parameters θ of shape (d,) and the data defining f_D.
    l2:
        Added multiple of the identity (an L2 regulariser (l2/2)‖θ‖², or damping), ``>= 0``.
    """
    _check_problem(objective, theta, X, y)
    lam = _nonneg("l2", l2)
    dim = objective.dim

    product = objective.hvp_fn(theta, X, y)  # closed form for a linear model, else the cached vjp

    def matvec(v: Tensor) -> Tensor:
        _check_vector("v", v, dim)
        out = product(v)
        return out + lam * v if lam else out

    return matvec


def hvp_once(objective: Objective, theta: Tensor, X: Tensor, y: Tensor, v: Tensor, *, l2: float = 0.0) -> Tensor:
    """One product ``(∇²f_D(θ) + l2·I) v`` where (X, y) changes with every product (a LiSSA step).

    A linear model uses the closed form (:meth:`Objective.hvp`). Any other model uses plain
    ``torch.autograd`` double backward (Pearlmutter 1994): the gradient with ``create_graph``,
    then the gradient of ⟨∇f, v⟩. :func:`hvp_operator` pays for a cached ``torch.func.vjp``
    graph that one product never amortises: on the default MLP (d = 257) and 10 records, one
    product costs 0.8–1.4 ms here against 1.9–3.3 ms through ``hvp_operator`` (2 shared CPU
    cores, one thread; same value to rounding, both reverse-over-reverse). Not vmap-able; use
    :meth:`Objective.hvp` under ``vmap``.
    """
    if objective.linear_layout is not None:  # closed form (torch.func only for odd input shapes)
        out = objective.hvp(theta, X, y, v)
    else:
        with torch.enable_grad():
            t = theta.detach().requires_grad_(True)
            g = torch.autograd.grad(objective.loss(t, X, y), t, create_graph=True)[0]
            out = torch.autograd.grad(g, t, grad_outputs=v)[0]
    return out + l2 * v if l2 else out


def _output_curvature(objective: Objective, out: Tensor) -> Callable[[Tensor], Tensor]:
    """u ↦ Λ u per record, Λ = ∇²_f ℓ (the loss's Hessian in the logits; independent of y)."""
    if objective.n_outputs == 1:
        p = torch.sigmoid(out)
        w = p * (1 - p)  # Bernoulli: Λ = p(1 − p)
        return lambda u: w * u
    p = torch.softmax(out, dim=-1)  # categorical: Λ = diag(p) − p pᵀ
    return lambda u: p * u - p * (p * u).sum(dim=-1, keepdim=True)


def gauss_newton_operator(objective: Objective, theta: Tensor, X: Tensor, y: Tensor, *, l2: float = 0.0) -> Operator:
    """The generalised Gauss–Newton product ``v ↦ ((1/n) Σ_i J_iᵀ Λ_i J_i + l2·I) v``.

    J_i = ∂f(x_i; θ)/∂θ is the Jacobian of the logits and Λ_i = ∇²_f ℓ the Hessian of the loss in
    the logits: p(1 − p) for the logistic loss (one output), diag(p) − p pᵀ for softmax
    cross-entropy. For these exponential-family losses Λ does not depend on the label, so this
    matrix equals the **true Fisher at the empirical inputs** (the model's own predictive
    distribution over y; Martens 2020 §9.2; eq. (8)/(35c) of the NGD paper), not the empirical
    Fisher. It is positive semi-definite for every model, and it equals the Hessian exactly when
    the logits are linear in θ (logistic / softmax regression), since H = GGN + (1/n) Σ_i
    Σ_k (∂ℓ/∂f_k) ∇²_θ f_k.

    Each product is J v followed by Jᵀ (Λ J v / n) (Schraudolph 2002); J is never formed. The
    forward pass and the pull-back u ↦ Jᵀu (``torch.func.vjp`` of ``objective.logits``) are
    computed once, when the operator is built; J v is obtained by differentiating the (linear)
    pull-back once more ("double-vjp trick": J v = ∇_u ⟨Jᵀu, v⟩), which on CPU is several times
    faster than a fresh forward-mode ``jvp`` per product and gives the same result to rounding.
    """
    _check_problem(objective, theta, X, y)
    lam = _nonneg("l2", l2)
    dim = objective.dim
    n = X.shape[0]

    def logits(t: Tensor) -> Tensor:
        return objective.logits(t, X)

    out, pullback = vjp_pair(logits, theta)
    out = out.detach()
    curvature = _output_curvature(objective, out)
    _, push = vjp_pair(lambda u: pullback(u)[0], torch.zeros_like(out))  # push(v) = (J v,)

    def matvec(v: Tensor) -> Tensor:
        _check_vector("v", v, dim)
        jv = push(v)[0]
        res = pullback(curvature(jv) / n)[0]
        return res + lam * v if lam else res

    return matvec


#: The Fisher of the NGD paper (true Fisher at the empirical inputs) is the Gauss–Newton matrix.
fisher_operator = gauss_newton_operator


def empirical_fisher_operator(
    objective: Objective, theta: Tensor, X: Tensor, y: Tensor, *, l2: float = 0.0
) -> Operator:
    """The empirical Fisher product ``v ↦ ((1/n) Σ_i g_i g_iᵀ + l2·I) v``, g_i = ∇f_{z_i}(θ).

    Uses the **observed** labels; it is PSD but, unlike :func:`gauss_newton_operator`, it is not
    the Fisher of the model and can be a poor curvature estimate (Kunstner et al. 2019). The
    per-sample gradients (an (n, d) matrix, memory n·d) are computed once, with ``vmap``, when
    the operator is built; each product is then two matrix-vector products.
    """
    _check_problem(objective, theta, X, y)
    lam = _nonneg("l2", l2)
    dim = objective.dim
    G = objective.per_sample_grads(theta, X, y).detach()
    n = G.shape[0]

    def matvec(v: Tensor) -> Tensor:
        _check_vector("v", v, dim)
        res = G.T @ (G @ v) / n
        return res + lam * v if lam else res

    return matvec


def stochastic_operator(
    factory: Callable[..., Operator],
    objective: Objective,
    theta: Tensor,
    X: Tensor,
    y: Tensor,
    *,
    batch_size: int,
    l2: float = 0.0,
) -> StochasticOperator:
    """A mini-batch version ``(v, generator) ↦ A_B v`` of a curvature operator, for :func:`lissa`.

    Each call draws ``batch_size`` record indices uniformly **with replacement** from (X, y)
    using ``generator`` (on its device) and returns ``factory(objective, theta, X[B], y[B],
    l2=l2)(v)``, e.g. with ``factory=hvp_operator`` the product (∇²f_B(θ) + l2·I) v of the
    mini-batch mean loss: an unbiased estimate of the full product (the CNS paper's
    H_{i,λ} = ∇²L(w*, X_i) + λI, Alg. 1 line 7).
    """
    _check_problem(objective, theta, X, y)
    b = _count("batch_size", batch_size)
    _nonneg("l2", l2)
    n = X.shape[0]

    def matvec(v: Tensor, generator: torch.Generator) -> Tensor:
        idx = torch.randint(n, (b,), generator=generator, device=generator.device).to(X.device)
        if factory is hvp_operator:  # one product per batch: no operator to build (see hvp_once)
            return hvp_once(objective, theta, X[idx], y[idx], v, l2=l2)
        return factory(objective, theta, X[idx], y[idx], l2=l2)(v)

    return matvec


# -- dense path -------------------------------------------------------------------------------
def explicit_matrix(matvec: Operator, dim: int, *, dtype, device, chunk_size: int | None = None) -> Tensor:
    """The d×d matrix of a symmetric operator, column by column, symmetrised (A + Aᵀ)/2.

    Columns are computed ``chunk_size`` at a time with ``torch.func.vmap`` over the identity
    (one column at a time with a Python loop if the operator cannot be vmapped).
    """
    d = _count("dim", dim)
    eye = torch.eye(d, dtype=dtype, device=device)
    c = d if chunk_size is None else _count("chunk_size", chunk_size)
    cols = []
    for start in range(0, d, c):
        block = eye[start : start + c]
        try:
            cols.append(vmap(matvec)(block))
        except Exception:  # operators with data-dependent control flow: plain loop
            cols.append(torch.stack([matvec(e) for e in block]))
    A = torch.cat(cols, dim=0)  # row i = A e_i = column i
    return (A + A.T) / 2


def explicit_hessian(
    objective: Objective,
    theta: Tensor,
    X: Tensor,
    y: Tensor,
    *,
    l2: float = 0.0,
    chunk_size: int | None = None,
) -> Tensor:
    """The dense Hessian ∇²f_D(θ) + l2·I, shape (d, d), exactly symmetric.

    Computed as d Hessian-vector products of :func:`hvp_operator` (reverse-over-reverse: the same
    as ``torch.func.jacrev(torch.func.grad(f))``) vmapped over ``chunk_size`` columns of the
    identity at a time, then symmetrised (H + Hᵀ)/2 to remove rounding asymmetry. Memory of one chunk is
    about chunk_size × (activations of one forward pass on X); the default picks
    chunk_size ≈ 2²¹ / n (at least 1, at most d). Use float64 if the result feeds a Cholesky
    factorisation or an eigendecomposition. Cost: d/chunk_size batched passes, O(d·n·cost per
    record); intended for small models (d up to a few thousand). A linear model's Hessian comes
    from :meth:`Objective.hessian` in closed form instead (C(C+1)/2 matrix products over the
    records), the same matrix to rounding.
    """
    _check_problem(objective, theta, X, y)
    lam = _nonneg("l2", l2)
    d = objective.dim
    if chunk_size is None:
        chunk_size = max(1, min(d, (1 << 21) // max(1, X.shape[0])))

    H = objective.hessian(theta, X, y)  # closed form for a linear model (one matmul per class pair)
    if H is None:
        H = explicit_matrix(
            hvp_operator(objective, theta, X, y), d, dtype=theta.dtype, device=theta.device, chunk_size=chunk_size
        )
    if lam:
        H = H + lam * torch.eye(d, dtype=H.dtype, device=H.device)
    return H


def dense_solve(H: Tensor, b: Tensor, *, damping: float = 0.0) -> Tensor:
    """Solve (H + damping·I) x = b by a Cholesky factorisation (Golub & Van Loan §4.2).

    Parameters
    ----------
    H:
        Symmetric matrix of shape (d, d) (only its lower triangle is read by the factorisation).
    b:
        Right-hand side of shape (d,) or (d, k).
    damping:
        Multiple of the identity added before factorising, ``>= 0``.

    Raises
    ------
    InvalidInput
        If H + damping·I is not (numerically) positive definite; the message gives its smallest
        eigenvalue (``torch.linalg.eigvalsh``) and the damping that would make it PD.
    """
    if not isinstance(H, Tensor) or H.dim() != 2 or H.shape[0] != H.shape[1]:
        raise InvalidInput("H", "a square matrix of shape (d, d)", tuple(getattr(H, "shape", ())) or H)
    d = H.shape[0]
    if not isinstance(b, Tensor) or b.dim() not in (1, 2) or b.shape[0] != d:
        raise InvalidInput("b", f"a tensor of shape ({d},) or ({d}, k)", tuple(getattr(b, "shape", ())) or b)
    lam = _nonneg("damping", damping)
    A = H + lam * torch.eye(d, dtype=H.dtype, device=H.device) if lam else H
    L, info = torch.linalg.cholesky_ex(A)
    if int(info) != 0 or not bool(torch.isfinite(L).all()):
        eig_min = float(torch.linalg.eigvalsh((A + A.T) / 2)[0])
        raise InvalidInput(
            "H + damping*I",
            "symmetric positive definite for the Cholesky solve",
            f"smallest eigenvalue {eig_min:.6g} (damping={lam:g})",
            hint=f"Use damping > {max(0.0, lam - eig_min):.6g} or a solver for indefinite systems.",
        )
    rhs = b.unsqueeze(-1) if b.dim() == 1 else b
    x = torch.cholesky_solve(rhs.to(A.dtype), L)
    return x.squeeze(-1) if b.dim() == 1 else x


# -- conjugate gradients ---------------------------------------------------------------------
def conjugate_gradient(
    matvec: Operator,
    b: Tensor,
    *,
    tol: float = 1e-10,
    max_iter: int | None = None,
    x0: Tensor | None = None,
) -> tuple[Tensor, dict]:
    """Solve A x = b for a symmetric positive-definite operator A by conjugate gradients.

    Hestenes & Stiefel (1952); Nocedal & Wright (2006) Alg. 5.2. Matrix-free: one ``matvec``
    per iteration. In exact arithmetic CG terminates in at most d iterations; the error after k
    iterations shrinks like 2((√κ − 1)/(√κ + 1))^k in the A-norm, κ = λ_max/λ_min.

    Parameters
    ----------
    matvec:
        v ↦ A v, e.g. :func:`hvp_operator` with ``l2 > 0``.
    b:
        Right-hand side, shape (d,).
    tol:
        Stop (``converged=True``) when the recursively updated residual r_k satisfies
        ‖r_k‖ <= tol·‖b‖ (relative). Below about 1e-7 (float32) or 1e-15 (float64) this is
        unreachable and CG runs ``max_iter`` iterations.
    max_iter:
        At most this many iterations (default 2·d).
    x0:
        Starting point (default 0).

    Returns
    -------
    x, info:
        ``info = {"iterations", "residual_norm" (‖b − A x‖, recomputed at exit with one extra
        matvec), "converged" (bool), "negative_curvature" (bool)}``. If A is found not to be
        positive definite (pᵀ A p <= 0 for a search direction p, which happens for an indefinite
        Hessian), CG stops at the current iterate with ``negative_curvature=True`` and
        ``converged=False`` rather than returning a meaningless solution.
    """
    _check_vector("b", b, b.numel() if isinstance(b, Tensor) else -1)
    d = b.numel()
    tol = _nonneg("tol", tol)
    iters = 2 * d if max_iter is None else _count("max_iter", max_iter, minimum=0)
    if x0 is None:
        x = torch.zeros_like(b)
        r = b.clone()
    else:
        _check_vector("x0", x0, d)
        x = x0.clone()
        r = b - matvec(x)
    b_norm = float(torch.linalg.vector_norm(b))
    threshold = tol * b_norm
    p = r.clone()
    rr = torch.dot(r, r)
    k = 0
    negative = False
    if b_norm == 0.0:
        return torch.zeros_like(b), {
            "iterations": 0,
            "residual_norm": 0.0,
            "converged": True,
            "negative_curvature": False,
        }
    while k < iters and math.sqrt(float(rr)) > threshold:
        Ap = matvec(p)
        pAp = torch.dot(p, Ap)
        if not float(pAp) > 0:
            negative = True
            break
        alpha = rr / pAp
        x = x + alpha * p
        r = r - alpha * Ap
        rr_new = torch.dot(r, r)
        p = r + (rr_new / rr) * p
        rr = rr_new
        k += 1
    res = float(torch.linalg.vector_norm(b - matvec(x)))
    converged = (not negative) and math.sqrt(float(rr)) <= threshold
    return x, {"iterations": k, "residual_norm": res, "converged": converged, "negative_curvature": negative}


# -- LiSSA -------------------------------------------------------------------------------------
def lissa(
    matvec: Operator | StochasticOperator,
    b: Tensor,
    *,
    scale: float,
    depth: int,
    damping: float = 0.0,
    repeats: int = 1,
    generator: torch.Generator | None = None,
    stochastic: bool = False,
    on_divergence: str = "raise",
    check_every: int = 1,
) -> tuple[Tensor, dict]:
    """LiSSA: the (stochastic) Neumann-series estimate of (A + damping·I)⁻¹ b.

    Agarwal, Bullins & Hazan (2017), in the vector form of Koh & Liang (2017) and of the CNS
    paper (Zhang et al. 2024, Alg. 1 / Prop. 3.5), with the "+b" term of the correct recursion
    (the NGD paper's eqs. (72)–(76) omit it). With s = ``scale`` and A_j the operator at step j::

        x_0 = b,   x_j = b + (I − (A_j + damping·I)/s) x_{j−1}   (j = 1..J = depth),
        result = x_J / s, averaged over ``repeats`` independent runs.

    x_J/s = (1/s) Σ_{i=0}^{J} (I − Ā/s)^i b for a fixed A, the truncated Neumann series of
    (Ā/s)⁻¹ with Ā = A + damping·I; with a stochastic A_j (a fresh mini-batch each step, E[A_j] =
    A) the estimate is asymptotically unbiased.

    **Convergence condition.** The series converges iff the spectrum of Ā lies in (0, 2s); the
    condition used by the theory is 0 ≺ Ā and **‖A_j + damping·I‖ < s for every step** (every
    mini-batch, for a stochastic operator). Then the error in each eigendirection decays like
    (1 − λ/s)^{J+1}, so J ≈ (s/λ_min(Ā))·log(1/tol) steps are needed: a small damping and a large
    scale make the low-curvature directions converge slowly. With a negative eigenvalue (a
    non-convex Hessian without enough damping) or ‖Ā‖ >= 2s the iterates grow geometrically.

    Parameters
    ----------
    matvec:
        ``v ↦ A v`` (deterministic), or ``(v, generator) ↦ A_B v`` when ``stochastic=True``
        (e.g. from :func:`stochastic_operator`), drawing a fresh mini-batch per step.
    b:
        Right-hand side, shape (d,).
    scale:
        s > 0, an upper bound on ‖A_j + damping·I‖ (the CNS paper's scalar H, ``hessian_scale``;
        the NGD paper's σ).
    depth:
        J >= 1 recursion steps per repeat.
    damping:
        λ >= 0 added to A (the CNS paper's λ, NGD's damping).
    repeats:
        R >= 1 independent runs to average (only useful with a stochastic operator).
    generator:
        Required when ``stochastic=True``; used for all mini-batch draws, in order.
    on_divergence:
        ``"raise"`` (InvalidInput), ``"warn"`` or ``"ignore"`` when divergence is detected: a
        non-finite iterate, or ‖x_j‖ > (j + 1)‖b‖ (impossible while ‖I − Ā_j/s‖ <= 1, since x_j
        is a sum of j + 1 terms of norm <= ‖b‖). A non-finite result always raises.
    check_every:
        Test for divergence every this many steps (and at the last one). Each test reads one
        norm back to the host, a synchronisation on a GPU: use e.g. 50 there.

    Returns
    -------
    x, info:
        ``info = {"depth", "repeats", "scale", "damping", "matvecs", "diverged" (bool),
        "last_step_norm" (‖x_J − x_{J−1}‖/s averaged over repeats: the size of the last Neumann
        term, a convergence diagnostic), "repeat_std" (root mean squared deviation of the repeats
        from their mean, 0 for one repeat)}``.
    """
    _check_vector("b", b, b.numel() if isinstance(b, Tensor) else -1)
    s = _positive("scale", scale)
    J = _count("depth", depth)
    lam = _nonneg("damping", damping)
    R = _count("repeats", repeats)
    every = _count("check_every", check_every)
    if on_divergence not in ("raise", "warn", "ignore"):
        raise InvalidInput("on_divergence", "one of 'raise', 'warn', 'ignore'", on_divergence)
    apply: Operator
    if stochastic:
        if generator is None:
            raise InvalidInput("generator", "a torch.Generator when stochastic=True", generator)
        # stochastic=True says the caller passed (v, generator) ↦ A_B v: a flag the checker cannot tie to a type
        sample, draws = cast(StochasticOperator, matvec), generator

        def apply(v: Tensor) -> Tensor:
            return sample(v, draws)
    else:
        apply = cast(Operator, matvec)
    b_norm = float(torch.linalg.vector_norm(b))
    estimates = []
    last_steps = []
    diverged = False
    for _ in range(R):
        x = b.clone()
        step = b
        for j in range(1, J + 1):
            Ax = apply(x)
            if lam:
                Ax = Ax + lam * x
            new = b + x - Ax / s
            step = new - x
            x = new
            if not diverged and (j % every == 0 or j == J):
                xn = float(torch.linalg.vector_norm(x))
                if not math.isfinite(xn) or xn > (j + 1) * b_norm * (1 + 1e-6) + 1e-300:
                    diverged = True
                    msg = (
                        f"LiSSA diverges: ‖x_{j}‖ = {xn:.3g} > (j+1)‖b‖ = {(j + 1) * b_norm:.3g}; "
                        f"the scale must exceed ‖A + damping·I‖ on every batch and A + damping·I "
                        f"must be positive definite."
                    )
                    if on_divergence == "raise" or not math.isfinite(xn):
                        raise InvalidInput(
                            "scale", "> ‖A + damping*I‖ with A + damping*I positive definite", s, hint=msg
                        )
                    if on_divergence == "warn":
                        warnings.warn(msg, RuntimeWarning, stacklevel=2)
        estimates.append(x / s)
        last_steps.append(float(torch.linalg.vector_norm(step)) / s)
    est = torch.stack(estimates)
    mean = est.mean(dim=0)
    if not bool(torch.isfinite(mean).all()):
        raise InvalidInput("scale", "> ‖A + damping*I‖ (the LiSSA result is not finite)", s)
    spread = float(((est - mean) ** 2).sum(dim=1).mean().sqrt()) if R > 1 else 0.0
    info = {
        "depth": J,
        "repeats": R,
        "scale": s,
        "damping": lam,
        "matvecs": J * R,
        "diverged": diverged,
        "last_step_norm": sum(last_steps) / R,
        "repeat_std": spread,
    }
    return mean, info


# ----------------------------------------------------------------------------------------------
# minimising a regularised empirical risk (the learning algorithm of the Newton-type methods)

#: Above this dimension Newton minimisation uses CG instead of a dense Cholesky factorisation.
DENSE_MAX_DIM = 4096


def newton_minimize(
    objective: Objective,
    X: Tensor,
    y: Tensor,
    theta0: Tensor,
    *,
    l2: float,
    tol: float = 1e-10,
    max_iter: int = 100,
) -> tuple[Tensor, dict]:
    """Minimise the regularised risk of a convex (linear) model by damped Newton.

    Newton directions come from a dense Cholesky solve of ∇²L (``explicit_hessian`` +
    ``dense_solve``) for d ≤ 4096, else from CG on Hessian-vector products; the step is chosen
    by Armijo backtracking (near the optimum, where loss differences fall below rounding, a full
    step is accepted when it reduces ‖∇L‖). Stops when ‖∇L‖ ≤ ``tol``. Deterministic.

    Returns
    -------
    (θ, info):
        ``info = {"iterations", "gradient_norm", "converged"}``.
    """
    theta = theta0.clone()
    d = theta.numel()
    g = regularized_grad(objective, theta, X, y, l2)
    gn = float(torch.linalg.vector_norm(g))
    f = float(regularized_loss(objective, theta, X, y, l2))
    it = 0
    while gn > tol and it < max_iter:
        it += 1
        if d <= DENSE_MAX_DIM:
            H = explicit_hessian(objective, theta, X, y, l2=l2)
            p = dense_solve(H, g)
        else:
            p, _ = conjugate_gradient(hvp_operator(objective, theta, X, y, l2=l2), g, tol=1e-3 * min(1.0, gn))
        slope = -float(torch.dot(g, p))
        t, accepted = 1.0, False
        for _ in range(60):
            cand = theta - t * p
            f_c = float(regularized_loss(objective, cand, X, y, l2))
            if f_c <= f + 1e-4 * t * slope:
                accepted = True
                break
            if t == 1.0 and abs(f_c - f) <= 1e-13 * max(1.0, abs(f)):
                g_c = regularized_grad(objective, cand, X, y, l2)
                if float(torch.linalg.vector_norm(g_c)) < gn:
                    accepted = True
                    break
            t *= 0.5
        if not accepted:
            break
        theta, f = cand, f_c
        g = regularized_grad(objective, theta, X, y, l2)
        gn = float(torch.linalg.vector_norm(g))
    return theta, {"iterations": it, "gradient_norm": gn, "converged": gn <= tol}


def lbfgs_minimize(
    objective: Objective,
    X: Tensor,
    y: Tensor,
    theta0: Tensor,
    *,
    l2: float,
    tol: float = 1e-10,
    max_iter: int = 100,
) -> tuple[Tensor, dict]:
    """Minimise the regularised risk of any model by full-batch L-BFGS (strong Wolfe line search).

    ``torch.optim.LBFGS`` with history 20, at most ``max_iter`` iterations, stopping when
    max |∂L/∂θ_j| ≤ ``tol``. Deterministic for a fixed device and dtype.
    """
    theta = theta0.detach().clone().requires_grad_(True)
    opt = torch.optim.LBFGS(
        [theta],
        lr=1.0,
        max_iter=int(max_iter),
        max_eval=int(max_iter) * 5 // 4 + 1,
        tolerance_grad=tol,
        tolerance_change=1e-15,
        history_size=20,
        line_search_fn="strong_wolfe",
    )

    def closure():
        opt.zero_grad()
        loss = regularized_loss(objective, theta, X, y, l2)
        loss.backward()
        return loss

    opt.step(closure)
    state = opt.state[opt._params[0]]
    theta = theta.detach()
    gn = float(torch.linalg.vector_norm(regularized_grad(objective, theta, X, y, l2)))
    return theta, {"iterations": int(state.get("n_iter", 0)), "gradient_norm": gn, "converged": gn <= tol}


def fit_regularized(
    objective: Objective, X: Tensor, y: Tensor, theta0: Tensor, *, l2: float, tol: float, max_iter: int
) -> tuple[Tensor, dict]:
    """A: Newton for a linear (convex) model, L-BFGS otherwise."""
    if objective.is_linear and l2 > 0:
        return newton_minimize(objective, X, y, theta0, l2=l2, tol=tol, max_iter=max_iter)
    return lbfgs_minimize(objective, X, y, theta0, l2=l2, tol=tol, max_iter=max_iter)


def fisher_matrix(objective: Objective, theta: Tensor, X: Tensor, y: Tensor) -> Tensor:
    """F(X, θ) = (1/N) Σ J_iᵀ Λ_i J_i, dense (d, d): eq. (8)/(35c), the Gauss–Newton matrix."""
    op = gauss_newton_operator(objective, theta, X, y)
    return explicit_matrix(op, objective.dim, dtype=theta.dtype, device=theta.device)
