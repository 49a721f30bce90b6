"""Unlearning by natural gradient descent (Lev & Wilson).

O. Lev and A. Wilson, "Faster Machine Unlearning via Natural Gradient Descent" (arXiv
2407.08169v1). Two methods:

``ngd`` (:class:`NaturalGradientUnlearning`), Algorithm 1, certified
    A trains L2-regularised binary logistic regression, L(S, θ, λ) = (1/n) Σ ℓ(z, θ) + (λ/2)‖θ‖²,
    to its optimum (damped Newton to ‖∇L‖ ≤ 1e-10, so the retrain is exact) and keeps the
    Fisher F(S, θ_S) (eq. 8: the true Fisher at the empirical inputs, i.e. the Gauss–Newton
    matrix) and the residual gradient ∇L(S, θ_S, λ). U is the Fisher-preconditioned one-shot
    step of eq. (10), in the corrected form the digest calls V4:

        θ̃ = θ_S − (F(S\\U, θ_S) + λI)⁻¹ ∇L(S\\U, θ_S, λ),
        F(S\\U) = (n F(S) − Σ_U F_z)/(n − m),
        ∇L(S\\U, θ_S, λ) = (n ∇L(S, θ_S, λ) − Σ_U [∇ℓ(z, θ_S) + λθ_S])/(n − m),

    i.e. θ_S + (F(S\\U) + λI)⁻¹ (1/(n−m)) Σ_U [∇ℓ + λθ_S] at an exact optimum: a move *along*
    the forget gradient, computed from the stored statistics and the m deleted records only.
    The linear system is solved by Cholesky (``solver="dense"``), conjugate gradients
    (``"cg"``) or LiSSA (``"lissa"``, with the corrected recursion). Gaussian output noise is
    calibrated to the paper's γ = Mm²C²/(μ³n²) + 2m²CQK/(μ²n²) (Alg. 1 line 6,
    :func:`certify.bounds.ngd.ngd_sensitivity`) with constants in closed form.

``ngd-minmax`` (:class:`MinMaxNGD`), Algorithm 2, uncertified
    Alternating natural-gradient ascent on forget-set batches and descent on retained batches,
    with a proximal pull towards an exponential moving average θ_smooth of the iterates. No
    noise, no theorem: the audit measures it and reports it as uncertified.

Deviations from the paper (also in the classes' ``deviations``):

* Variant V4 (F(S\\U) and the regulariser's gradient, n−m normalisation) by default; the printed
  eq. (10) overshoots by ≈ n/m under the paper's own definition of L(U, ·) and drops λ∇π
  (digest §3.2, decisions 1–3). ``variant="v3"`` (F(S), the proof's normalisation) and
  ``variant="v2"`` (eq. 10 with L(U) read as (1/n) Σ_U: the printed algorithm) are available;
  v2 has no bound and is reported uncertified.
* The certificate does not assume zero training loss (Lemma 1): for a linear model the
  Gauss–Newton residual vanishes identically, so F = ∇²L exactly (digest decision 6).
* γ is used with μ = λ in the usual ½-convention (the paper's Def. 2 has no ½); the module
  :mod:`certify.bounds.ngd` proves that γ still dominates the V4 (and V3) error, including the
  enforced training and solver tolerances, and the certificate checks it.
* C needs a bounded Θ (the paper gives none): every regularised minimiser has
  ‖θ̂‖ ≤ B = min(√(2 ln 2/λ), √(R²+1)/λ), and C = √(R²+1) + λB (digest decision 8).
* Noise by the analytic Gaussian mechanism by default (valid for every ε); ``mechanism=
  "classic"`` gives Algorithm 1's σ = (γ/ε)√(2 ln(1.25/δ)) exactly, for ε ≤ 1 only.
* LiSSA uses v_t = b + (I − A/s) v_{t−1} (the paper's eqs. 72–76 omit "+b"), full-batch by
  default so that it converges; with ``lissa_batch`` it is the paper's stochastic version.
* Computation in float64 internally; results are returned in θ_0's dtype.
* Min/Max NGD: the NGD preconditioner is the exact damped Fisher (Gauss–Newton) of a random
  batch of retained inputs, applied by a few CG steps and rescaled to the raw gradient's norm,
  instead of Povey et al.'s online low-rank NGD-SGD (whose norm preservation is kept); losses
  are batch means; the proximal term pulls *towards* θ_smooth in both phases (digest decision
  15); weight decay λθ decays in both phases; one momentum buffer is shared by both phases;
  constant learning rate (no ×0.1 after epoch 4); θ_smooth is updated once per epoch with
  β = 0.4 (eq. 16) and the fast iterate is released.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import Tensor

from certify.bounds.ngd import ngd_bound, ngd_logistic_constants
from certify.certificate import Certificate, Constant, issue
from certify.errors import Boolean, Choice, Integer, InvalidInput, MappingOf, Optional, Real
from certify.params import Param
from unlearners.base import Capabilities, Knob, Precision, Unlearner
from unlearners.linalg import (
    Operator,
    StochasticOperator,
    conjugate_gradient,
    dense_solve,
    fisher_matrix,
    fit_regularized,
    gauss_newton_operator,
    lissa,
    newton_minimize,
    stochastic_operator,
)
from unlearners.modelcheck import SMOOTH, STATELESS
from unlearners.objective import Objective, regularized_grad

SOLVERS = ("dense", "cg", "lissa")
VARIANTS = ("v4", "v3", "v2")
_WORK = torch.float64


class _RetrainsWithTrain(Unlearner):
    """What both NGD methods share: A is the method's own ``_train`` (in float64), and the
    reference is that minimisation on D \\ Z from the same θ_0, its diagnostics kept per
    forget set (so a certificate can check them whatever ran before)."""

    def _start(self, X: Tensor, y: Tensor, theta0: Tensor) -> Tensor:
        self.theta0_ = theta0.clone()
        self._X64, self._y64 = X.to(_WORK), y
        self.n_ = int(X.shape[0])
        self._retrains: dict[tuple[int, ...], tuple[Tensor, dict]] = {}
        theta, self.train_info_ = self._train(self._X64, y, theta0.to(_WORK))
        self.theta_ = theta
        return theta

    def _retrain_with_info(self, forget: Tensor) -> tuple[Tensor, dict]:
        key = tuple(sorted(forget.tolist()))
        if key not in self._retrains:
            keep = torch.ones(self.n_, dtype=torch.bool, device=self._X64.device)
            keep[forget.to(keep.device)] = False
            self._retrains[key] = self._train(self._X64[keep], self._y64[keep], self.theta0_.to(_WORK))
        return self._retrains[key]

    def _retrain(self, forget: Tensor) -> Tensor:
        """A(S\\U): the method's own minimisation on the retained records, from the same θ_0."""
        return self._retrain_with_info(forget)[0].to(self.theta0_.dtype)


class NaturalGradientUnlearning(_RetrainsWithTrain):
    """NGD unlearning (Lev & Wilson, Algorithm 1) for L2-regularised binary logistic regression.

    Options (declared in ``hyperparameters``)
    -----------------------------------------
    l2:
        λ > 0: the regulariser (λ/2)‖θ‖² (bias included); also the strong-convexity μ = λ.
        γ grows like 1/λ³, so small λ buys a tighter fit at the price of far more noise.
    variant:
        ``"v4"`` (default; F(S\\U) and the full retained gradient: exactly one Newton step on the
        retained objective), ``"v3"`` (F(S) with the proof's n-normalisation) or ``"v2"`` (the
        printed eq. 10 with L(U) read as (1/n) Σ_U: no regulariser gradient; uncertified).
    solver:
        ``"dense"`` (Cholesky of the stored d×d Fisher, downdated by the forget set: cost
        independent of n), ``"cg"`` (conjugate gradients on Fisher-vector products) or
        ``"lissa"`` (Neumann series).
    train_tol:
        Training stops at ‖∇L‖ ≤ train_tol (also for the retrain); enforced, and part of the
        proved bound.
    solver_tol:
        The solve is accepted when ‖(F + λI) v − b‖ ≤ solver_tol (checked with an exact
        product after every solve); otherwise the certificate is not issued.
    max_iter:
        Newton iterations allowed for training.
    lissa_depth:
        LiSSA recursion length J (``None``: ⌈(s/λ)·ln 10¹²⌉, enough for 1e-12 relative accuracy
        in the flattest direction of the full-batch recursion).
    lissa_scale:
        LiSSA scale s > ‖F + λI‖ (``None``: the analytic bound Q·max‖x̃‖² + λ).
    lissa_batch:
        ``None``: full-batch (deterministic) LiSSA; an integer: the paper's stochastic LiSSA on
        batches of that many retained records (which rarely meets ``solver_tol``).
    lissa_repeats:
        Independent LiSSA runs averaged (R).
    cg_max_iter:
        CG iterations allowed (``None``: 2d).
    constants:
        User overrides for ``R``, ``K``, ``Q``, ``M``, ``mu``, ``C`` (provenance ``assumed``).
    seed:
        Seed of stochastic LiSSA's batches (unused otherwise).
    """

    name = "ngd"
    title = "NGD unlearning (Fisher-preconditioned Newton step)"
    paper = (
        "Lev & Wilson, 'Faster Machine Unlearning via Natural Gradient Descent' "
        "(arXiv 2407.08169; Algorithm 1, eq. 10, Lemma 1, App. E eq. 56)"
    )
    certified = True
    precision = Precision(
        False,
        "gamma from the trained and retrained models' gradient norms and the solver's "
        "residual (train_tol, solver_tol); the method computes in float64 internally, so"
        " float32 buys nothing",
    )
    model_requirements = frozenset({SMOOTH, STATELESS})
    assumptions = (
        "binary logistic regression with the regulariser (l2/2)||theta||^2, l2 > 0: the loss is an "
        "exponential family in linear logits, so the Fisher equals the Hessian (no zero-loss assumption)",
        "A minimises the regularised risk to ||grad L|| <= train_tol (enforced), the retrain likewise",
        "every record satisfies ||x|| <= R (R = max over the training set unless supplied)",
        "the linear solve meets ||(F + l2 I) v - b|| <= solver_tol (checked after every solve)",
        "sigma is fixed from the deletion size m before unlearning",
    )
    deviations = (
        "variant V4 by default: F(S\\U) and the regulariser's gradient with 1/(n-m) scaling "
        "(the printed eq. 10 overshoots by ~n/m and drops l2*theta); v3/v2 on request",
        "no zero-training-loss assumption: the Gauss-Newton residual vanishes for linear logits",
        "mu = l2 in the usual 1/2 convention; gamma is checked against a bound proved for the "
        "computed step, including the training and solver tolerances",
        "C on the ball ||theta|| <= min(sqrt(2 ln2/l2), sqrt(R^2+1)/l2) that holds every "
        "regularised minimiser (the paper gives no bounded Theta)",
        "analytic Gaussian mechanism by default; classic (Algorithm 1 line 6) on request",
        "LiSSA with the '+b' term (eqs. 72-76 omit it), full-batch unless lissa_batch is set",
    )

    hyperparameters = (
        Param("l2", 1e-2, Real(gt=0), "lambda: the regulariser (l2/2)||theta||^2, also the strong convexity mu"),
        Param("variant", "v4", Choice(VARIANTS), "v4 (corrected, default), v3 (the proof's) or v2 (as printed)"),
        Param("solver", "dense", Choice(SOLVERS), "linear solver: dense (Cholesky), cg or lissa"),
        Param("train_tol", 1e-10, Real(gt=0), "training and the retrain stop at ||grad L|| <= train_tol"),
        Param("solver_tol", 1e-10, Real(gt=0), "accepted residual of the linear solve"),
        Param("max_iter", 100, Integer(1), "Newton iterations allowed for training"),
        Param("lissa_depth", None, Optional(Integer(1), "for (s/l2) ln 1e12"), "LiSSA recursion length"),
        Param("lissa_scale", None, Optional(Real(gt=0), "for Q max||x||^2 + l2"), "LiSSA scale s"),
        Param("lissa_batch", None, Optional(Integer(1), "for full-batch LiSSA"), "records per stochastic LiSSA batch"),
        Param("lissa_repeats", 1, Integer(1), "independent LiSSA runs averaged"),
        Param("cg_max_iter", None, Optional(Integer(1), "for 2d"), "CG iterations allowed"),
        Param(
            "constants",
            {},
            MappingOf(Real(gt=0), keys=("R", "K", "Q", "M", "mu", "C")),
            "user overrides of the closed-form constants (provenance assumed)",
        ),
        Param("seed", 0, Integer(0), "seed of stochastic LiSSA's batches", audit="seed"),
    )
    capabilities = Capabilities(
        knob=Knob(
            "l2",
            "lambda",
            "a larger regulariser shrinks gamma (like 1/lambda^3) and the noise, and biases the model towards zero",
            refits=True,
        ),
        data_dependent_certificate=True,
    )

    def __init__(self, objective: Objective, **options: Any):
        super().__init__(objective, **options)
        if not (objective.is_linear and objective.n_outputs == 1):
            raise InvalidInput(
                "model",
                "'logreg' on a binary task (one linear layer with one output): "
                "the ngd certificate covers binary L2-regularised logistic regression only",
                f"{'linear' if objective.is_linear else 'non-linear'} model with {objective.n_outputs} output(s)",
                hint="Use ngd-minmax (uncertified) for other models.",
            )

    # -- A -------------------------------------------------------------------------------
    def _train(self, X: Tensor, y: Tensor, theta0: Tensor) -> tuple[Tensor, dict]:
        return newton_minimize(self.objective, X, y, theta0, l2=self.l2, tol=self.train_tol, max_iter=self.max_iter)

    def _fit(self, X: Tensor, y: Tensor, theta0: Tensor) -> Tensor:
        """A: Newton to ‖∇L(S, θ, λ)‖ ≤ train_tol; keep F(S, θ_S) (dense solver) and ∇L(S, θ_S, λ)."""
        theta = self._start(X, y, theta0)
        self._solves: dict[tuple[int, ...], tuple[Tensor, dict]] = {}
        self.full_grad_ = regularized_grad(self.objective, theta, self._X64, y, self.l2)
        self.fisher_ = fisher_matrix(self.objective, theta, self._X64, y) if self.solver == "dense" else None
        max_norm = float(torch.linalg.vector_norm(self._X64, dim=1).max())
        R = self.constants.get("R", max_norm)
        if R < max_norm * (1 - 1e-12):
            raise InvalidInput("constants[R]", f">= max ||x|| over the training set ({max_norm:.6g})", R)
        self.constants_ = self._constants(max_norm)
        return theta.to(theta0.dtype)

    def _constants(self, max_norm: float) -> dict[str, Constant]:
        found = ngd_logistic_constants(self.constants.get("R", max_norm), self.l2)
        for name, value in self.constants.items():
            found[name] = Constant(name, value, "assumed", f"{name} supplied by the user", {})
        return found

    def knob_grid(self, points: int) -> list[float]:
        """``points`` values of λ, log-spaced from λ/10 to 10λ, with the configured λ."""
        grid = {self.l2 * 10 ** (-1 + 2 * i / (points - 1)) for i in range(points)} | {self.l2}
        return sorted(grid)

    # -- U (Algorithm 1) -------------------------------------------------------------------
    def _unlearn(self, forget: Tensor) -> Tensor:
        """U: one Fisher-preconditioned step from θ_S (variant ``self.variant``)."""
        return self._step(forget)[0].to(self.theta0_.dtype)

    def _step(self, forget: Tensor) -> tuple[Tensor, dict]:
        """The step for this forget set and its solve diagnostics (computed once per set)."""
        key = tuple(sorted(forget.tolist()))
        if key in self._solves:
            return self._solves[key]
        n = self.n_
        idx = forget.to(self._X64.device)
        m = int(idx.numel())
        obj, theta, lam = self.objective, self.theta_, self.l2
        X_u, y_u = self._X64[idx], self._y64[idx]
        grad_u = obj.per_sample_grads(theta, X_u, y_u).sum(dim=0)  # Σ_U ∇ℓ(z, θ_S)
        keep = torch.ones(n, dtype=torch.bool, device=self._X64.device)
        keep[idx] = False
        if self.variant == "v4":
            # ∇L(S\U, θ_S, λ), exact (uses the stored residual gradient of A's output)
            rhs = (n * self.full_grad_ - grad_u - m * lam * theta) / (n - m)
            data = (self._X64[keep], self._y64[keep])
            sign = -1.0
        elif self.variant == "v3":
            # ∇L~(S\U, θ_S, λ) with L~ = (1/n) Σ_{S\U} ℓ + ((n−m)/n) λπ: the proof's normalisation
            rhs = self.full_grad_ - (grad_u + m * lam * theta) / n
            data = (self._X64, self._y64)
            sign = -1.0
        else:  # v2: eq. (10) with ∇L(U, θ_S, λ=0) read as (1/n) Σ_U ∇ℓ, times n/(n−m)
            rhs = grad_u / (n - m)
            data = (self._X64, self._y64)
            sign = 1.0
        step, info = self._solve(rhs, data, X_u, y_u, m)
        info = {
            **info,
            "variant": self.variant,
            "solver": self.solver,
            "forget_size": m,
            "rhs_norm": float(torch.linalg.vector_norm(rhs)),
        }
        self._solves[key] = (theta + sign * step, info)
        return self._solves[key]

    def _solve(self, rhs: Tensor, data: tuple[Tensor, Tensor], X_u: Tensor, y_u: Tensor, m: int) -> tuple[Tensor, dict]:
        """Solve (F(data, θ_S) + λI) v = rhs; report the exact residual ‖(F + λI) v − rhs‖."""
        obj, theta, lam, n = self.objective, self.theta_, self.l2, self.n_
        X_d, y_d = data
        if self.solver == "dense":
            assert self.fisher_ is not None, "fit stores the Fisher for the dense solver"
            if X_d.shape[0] == n:
                F = self.fisher_
            else:  # downdate the stored Fisher: F(S\U) = (n F(S) − m F(U))/(n − m)
                F = (n * self.fisher_ - m * fisher_matrix(obj, theta, X_u, y_u)) / (n - m)
            A = F + lam * torch.eye(F.shape[0], dtype=F.dtype, device=F.device)
            v = dense_solve(A, rhs)
            residual = float(torch.linalg.vector_norm(A @ v - rhs))
            return v, {"residual_norm": residual, "iterations": 1}
        op = gauss_newton_operator(obj, theta, X_d, y_d, l2=lam)
        if self.solver == "cg":
            bn = float(torch.linalg.vector_norm(rhs))
            v, info = conjugate_gradient(
                op, rhs, tol=self.solver_tol / bn if bn > 0 else 0.0, max_iter=self.cg_max_iter
            )
            return v, {
                "residual_norm": info["residual_norm"],
                "iterations": info["iterations"],
                "converged": info["converged"],
            }
        scale, depth = self._lissa_settings()
        base: Operator | StochasticOperator
        if self.lissa_batch is None:
            base = gauss_newton_operator(obj, theta, X_d, y_d)
            v, info = lissa(base, rhs, scale=scale, depth=depth, damping=lam, repeats=self.lissa_repeats)
        else:
            base = stochastic_operator(gauss_newton_operator, obj, theta, X_d, y_d, batch_size=self.lissa_batch)
            gen = torch.Generator(device="cpu").manual_seed(self.seed)
            v, info = lissa(
                base,
                rhs,
                scale=scale,
                depth=depth,
                damping=lam,
                repeats=self.lissa_repeats,
                generator=gen,
                stochastic=True,
            )
        residual = float(torch.linalg.vector_norm(op(v) - rhs))
        return v, {
            "residual_norm": residual,
            "iterations": depth * self.lissa_repeats,
            "lissa_scale": scale,
            "lissa_depth": depth,
        }

    def _lissa_settings(self) -> tuple[float, int]:
        c = self.constants_
        scale = self.lissa_scale if self.lissa_scale is not None else c["Q"].value * c["K"].value + self.l2
        depth = self.lissa_depth if self.lissa_depth is not None else math.ceil(scale / self.l2 * math.log(1e12))
        return float(scale), int(depth)

    def report_hyperparameters(self) -> dict:
        out = {
            "l2": self.l2,
            "variant": self.variant,
            "solver": self.solver,
            "train_tol": self.train_tol,
            "solver_tol": self.solver_tol,
            "max_iter": self.max_iter,
            "lissa_depth": self.lissa_depth,
            "lissa_scale": self.lissa_scale,
            "lissa_batch": self.lissa_batch,
            "lissa_repeats": self.lissa_repeats,
            "cg_max_iter": self.cg_max_iter,
            "constant_overrides": dict(self.constants),
            "seed": self.seed,
        }
        if self.solver == "lissa" and getattr(self, "constants_", None) is not None:
            out["lissa_scale_used"], out["lissa_depth_used"] = self._lissa_settings()
        if getattr(self, "train_info_", None) is not None:
            out["train_iterations"] = self.train_info_["iterations"]
            out["train_gradient_norm"] = self.train_info_["gradient_norm"]
        return out

    # -- certificate -------------------------------------------------------------------------
    def sensitivity_bound(self, forget_size: int) -> float:
        """γ of Algorithm 1 line 6 for deleting ``forget_size`` records (the fitted constants)."""
        from certify.bounds.ngd import ngd_sensitivity

        c = self.constants_
        return ngd_sensitivity(
            c["M"].value, c["C"].value, c["mu"].value, c["Q"].value, c["K"].value, self.n_, int(forget_size)
        )

    def _certify(self, forget: Tensor, epsilon: float, delta: float, mechanism: str) -> Certificate:
        """Algorithm 1's certificate for this forget set: σ calibrated to γ, with its conditions
        checked on this set's solve and on the retrain without it."""
        m = int(forget.numel())
        if m >= self.n_:
            raise InvalidInput("forget", f"fewer than n = {self.n_} records", m)
        bound = ngd_bound(
            self.constants_,
            self.n_,
            m,
            variant=self.variant,
            l2=self.l2,
            train_tol=self.train_tol,
            solver_tol=self.solver_tol,
            solver=self.solver,
            trained=self.train_info_,
            retrained=self._retrain_with_info(forget)[1],
            solve=self._step(forget)[1],
        )
        return issue(
            self.name,
            "output-noise",
            epsilon=epsilon,
            delta=delta,
            mechanism=mechanism,
            bound=bound,
            assumptions=self.assumptions,
        )


# ----------------------------------------------------------------------------------------------
class MinMaxNGD(_RetrainsWithTrain):
    """Min/Max NGD (Lev & Wilson, Algorithm 2): heuristic, uncertified.

    Each epoch runs k1 natural-gradient **ascent** steps on forget-set batches (eq. 14), then
    k2 natural-gradient **descent** steps on retained batches (eq. 15), both with the proximal
    term γ‖θ − θ_smooth‖² pulling towards θ_smooth, and then updates θ_smooth ← θ_smooth +
    β(θ − θ_smooth) (eq. 16). The fast iterate is released.

    Natural gradient: d ↦ P⁻¹d with P = F(B_F, θ) + damping·I, the Gauss–Newton (true Fisher)
    matrix on a fresh batch B_F of ``fisher_batch`` retained inputs, applied by ``cg_iters`` CG
    steps and (``normalize=True``, as in Povey et al.'s NGD-SGD that the paper used) rescaled to
    ‖d‖. Then heavy-ball momentum: b ← momentum·b + P⁻¹d, θ ← θ − η b.

    Any model (logistic regression or MLP, binary or multiclass). Options:

    l2:
        Regulariser (l2/2)‖θ‖² of the training objective; in U it acts as weight decay in both phases.
    steps:
        Iteration cap of A (Newton for a linear model, L-BFGS otherwise), which stops earlier at
        ‖∇L‖ ≤ 1e-10.
    eta:
        Learning rate α of both phases.
    epochs:
        Max-epochs of Algorithm 2 (the paper: 6).
    ascent_steps, descent_steps:
        k1 and k2 per epoch (``None``: one pass, ⌈m/forget_batch⌉ and ⌈(n−m)/retain_batch⌉).
    forget_batch, retain_batch:
        B_U and B_{S\\U} (the paper: 32 and 128).
    prox:
        γ, weight of the proximal term γ‖θ − θ_smooth‖².
    smoothing:
        β of the EMA θ_smooth (the paper: 0.4).
    momentum:
        Heavy-ball momentum (the paper: 0.9).
    damping:
        Added to the Fisher before inverting.
    fisher_batch:
        Retained inputs per Fisher estimate.
    cg_iters:
        CG iterations per natural-gradient solve.
    normalize:
        Rescale each natural gradient to the norm of the raw gradient (Povey et al.).
    output_noise:
        σ of optional Gaussian output noise (no (ε, δ) guarantee comes with it).
    seed:
        Seed of the batch sampling.
    """

    name = "ngd-minmax"
    title = "Min/Max NGD (alternating natural-gradient ascent/descent)"
    paper = (
        "Lev & Wilson, 'Faster Machine Unlearning via Natural Gradient Descent' "
        "(arXiv 2407.08169; Algorithm 2, eqs. 13-16)"
    )
    certified = False
    precision = Precision(
        False,
        "no theorem (kind none, sigma given); float64 kept because the method computes "
        "in float64 internally (float32 buys nothing)",
    )
    assumptions = ("none: Algorithm 2 is a heuristic without a privacy theorem",)
    deviations = (
        "NGD preconditioner = damped Gauss-Newton (true Fisher) of a retained batch by CG, rescaled "
        "to the raw gradient's norm, instead of Povey et al.'s online low-rank NGD-SGD",
        "batch-mean losses; proximal term pulls towards theta_smooth in both phases; weight decay "
        "decays in both phases; one momentum buffer for both phases; constant learning rate",
        "A minimises the regularised risk deterministically (Newton for linear models, L-BFGS "
        "otherwise) instead of SGD to zero training loss",
    )

    hyperparameters = (
        Param("l2", 1e-3, Real(ge=0), "regulariser (l2/2)||theta||^2 of training; weight decay in U"),
        Param("steps", 100, Integer(1), "iteration cap of A", audit="steps"),
        Param("eta", 0.01, Real(gt=0), "learning rate of both phases"),
        Param("epochs", 6, Integer(1), "max-epochs of Algorithm 2"),
        Param("ascent_steps", None, Optional(Integer(0), "for one pass over the forget set"), "k1 per epoch"),
        Param("descent_steps", None, Optional(Integer(0), "for one pass over the retained set"), "k2 per epoch"),
        Param("forget_batch", 32, Integer(1), "forget-set batch B_U"),
        Param("retain_batch", 128, Integer(1), "retained batch B_{S\\U}"),
        Param("prox", 0.1, Real(ge=0), "gamma, weight of the proximal term"),
        Param("smoothing", 0.4, Real(ge=0, le=1), "beta of the EMA theta_smooth"),
        Param("momentum", 0.9, Real(ge=0, lt=1), "heavy-ball momentum"),
        Param("damping", 1e-2, Real(gt=0), "added to the Fisher before inverting"),
        Param("fisher_batch", 256, Integer(1), "retained inputs per Fisher estimate"),
        Param("cg_iters", 10, Integer(1), "CG iterations per natural-gradient solve"),
        Param("normalize", True, Boolean(), "rescale each natural gradient to the raw gradient's norm"),
        Param("output_noise", 0.0, Real(ge=0), "std of uncalibrated Gaussian output noise (no theorem)"),
        Param("seed", 0, Integer(0), "seed of the batch sampling", audit="seed"),
    )

    # -- A -------------------------------------------------------------------------------
    def _train(self, X: Tensor, y: Tensor, theta0: Tensor) -> tuple[Tensor, dict]:
        return fit_regularized(self.objective, X, y, theta0, l2=self.l2, tol=1e-10, max_iter=self.steps)

    def _fit(self, X: Tensor, y: Tensor, theta0: Tensor) -> Tensor:
        return self._start(X, y, theta0).to(theta0.dtype)

    # -- U (Algorithm 2) -------------------------------------------------------------------
    def _natural(self, theta: Tensor, d: Tensor, X_f: Tensor, y_f: Tensor) -> Tensor:
        op = gauss_newton_operator(self.objective, theta, X_f, y_f, l2=self.damping)
        v, _ = conjugate_gradient(op, d, tol=1e-8, max_iter=self.cg_iters)
        if self.normalize:
            vn = torch.linalg.vector_norm(v)
            if float(vn) > 0:
                v = v * (torch.linalg.vector_norm(d) / vn)
        return v

    def _unlearn(self, forget: Tensor) -> Tensor:
        n = self.n_
        idx = forget.to(self._X64.device)
        m = int(idx.numel())
        keep = torch.ones(n, dtype=torch.bool, device=self._X64.device)
        keep[idx] = False
        X_u, y_u = self._X64[idx], self._y64[idx]
        X_r, y_r = self._X64[keep], self._y64[keep]
        k1 = self.ascent_steps if self.ascent_steps is not None else math.ceil(m / self.forget_batch)
        k2 = self.descent_steps if self.descent_steps is not None else math.ceil((n - m) / self.retain_batch)
        gen = torch.Generator(device="cpu").manual_seed(self.seed)
        obj, lam, gamma = self.objective, self.l2, self.prox
        theta = self.theta_.clone()
        smooth = theta.clone()
        buf = torch.zeros_like(theta)

        def batch(Xs: Tensor, ys: Tensor, size: int) -> tuple[Tensor, Tensor]:
            if size >= Xs.shape[0]:
                pick = torch.randperm(Xs.shape[0], generator=gen)
            else:
                pick = torch.randperm(Xs.shape[0], generator=gen)[:size]
            pick = pick.to(Xs.device)
            return Xs[pick], ys[pick]

        def step(theta: Tensor, raw: Tensor) -> Tensor:
            nonlocal buf
            X_f, y_f = batch(X_r, y_r, self.fisher_batch)  # the Fisher needs inputs only
            nat = self._natural(theta, raw, X_f, y_f)
            buf = self.momentum * buf + nat
            return theta - self.eta * buf

        for _ in range(self.epochs):
            for _ in range(k1):  # eq. (14): ascent on the forget loss
                Xb, yb = batch(X_u, y_u, self.forget_batch)
                raw = -obj.grad(theta, Xb, yb) + lam * theta + 2 * gamma * (theta - smooth)
                theta = step(theta, raw)
            for _ in range(k2):  # eq. (15): descent on the retained loss
                Xb, yb = batch(X_r, y_r, self.retain_batch)
                raw = obj.grad(theta, Xb, yb) + lam * theta + 2 * gamma * (theta - smooth)
                theta = step(theta, raw)
            smooth = smooth + self.smoothing * (theta - smooth)  # eq. (16)
        self.unlearn_info_ = {"ascent_steps": k1, "descent_steps": k2, "epochs": self.epochs}
        return theta.to(self.theta0_.dtype)

    def report_hyperparameters(self) -> dict:
        out = dict(self.options)
        if getattr(self, "unlearn_info_", None) is not None:
            out["ascent_steps_used"] = self.unlearn_info_["ascent_steps"]
            out["descent_steps_used"] = self.unlearn_info_["descent_steps"]
        return out

    def _certify(self, forget: Tensor, epsilon: float, delta: float, mechanism: str) -> Certificate:
        """No theorem: kind none, σ = ``output_noise``."""
        return issue(
            self.name,
            "none",
            epsilon=epsilon,
            delta=delta,
            mechanism=mechanism,
            output_noise=self.output_noise,
            theorem="none: Lev & Wilson's Algorithm 2 (Min/Max NGD) is a heuristic with no privacy theorem",
            constants=[
                Constant(
                    "output_noise",
                    float(self.output_noise),
                    "enforced",
                    "standard deviation of the optional Gaussian output noise (no guarantee)",
                )
            ],
            assumptions=self.assumptions,
        )
