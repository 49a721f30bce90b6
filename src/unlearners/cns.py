"""Certified unlearning for deep networks by one constrained Newton step (CNS).

Zhang, Dong, Wang & Li, "Towards Certified Unlearning for Deep Neural Networks", ICML 2024
(revised arXiv version with the corrected bounds).

* Learning A: minimise L(w, D) = (1/n) Σ l(w, x) with the parameter norm projected onto
  ‖w‖₂ ≤ C after every step (PGD). Here: full-batch projected gradient descent with a constant
  step η for T steps from θ_0, on the per-sample loss l = f_z + (l2/2)‖w‖² (weight decay is part
  of the trained, and retrained, objective).
* Unlearning U (Algorithm 1, Eq. 10; §2.3 of the digest): one Newton step on the retained loss
  with the "local convex" regulariser λ added to the Hessian only,

      w̃ = w* − (H_{w*} + λI)⁻¹ ∇L(w*, D_r),   H_{w*} = ∇²L(w*, D_r),

  the inverse-Hessian-vector product estimated by LiSSA (Prop. 3.5, Eq. 8: s recursion steps,
  scale H above every sampled ‖∇²l + λI‖), or solved exactly by Cholesky (Theorem 3.4, Eq. 7)
  where that is the cheaper of the two (``solver="auto"``, :func:`solver_costs`).
* Sequential requests (Algorithm 2, Prop. 4.2): w̃_k = w̃_{k−1} − (H_{w̃_{k−1}} + λI)⁻¹
  ∇L(w̃_{k−1}, D_{r_k}) with the full retained gradient; every released model gets its own noise
  (the released code's sequential script adds none: a bug not copied here).
* Certificate: Δ of Prop. 4.1, Eq. (11), corrected (:mod:`certify.bounds.cns`), noise by the
  analytic (default) or classic Gaussian mechanism at δ − ρ, so that the LiSSA failure
  probability ρ is inside the reported δ. Not issued (``valid=False``) when a condition of the
  theorem fails: λ <= ‖H_{w*}‖, λ + λ_min <= 0, s < 2k ln k, a LiSSA scale below L + λ, a
  diverging LiSSA recursion, ρ >= δ, or a measured residual gradient above G.
"""

from __future__ import annotations

import torch
from torch import Tensor

from certify.bounds.cns import BOUND_VERSIONS, cns_bound, logistic_hessian_lipschitz
from certify.certificate import Certificate, Constant, issue
from certify.constants import estimated_constant, user_constant
from certify.errors import Choice, Integer, InvalidInput, MappingOf, Optional, Real
from certify.params import Param
from unlearners.base import Precision, Unlearner
from unlearners.cns_constants import (
    SAFETY,
    enforced_constants,
    estimate_hessian_lipschitz,
    lissa_constants,
    merge_estimates,
    spectrum_constants,
    training_residual_constant,
    with_solve_error,
)
from unlearners.cns_spectrum import downdated_spectrum, hessian_spectrum, weyl_spectrum
from unlearners.linalg import dense_solve, hvp_operator, lissa, stochastic_operator
from unlearners.modelcheck import SMOOTH, STATELESS
from unlearners.objective import Objective, regularized_grad
from unlearners.smoothness import model_constants
from unlearners.training import minibatches

SOLVERS = ("auto", "lissa", "dense")
GRADIENTS = ("retain", "forget")
OVERRIDABLE = ("L", "M", "lambda_min", "G")
#: λ = LAM_MARGIN·‖∇²L(w*, D)‖ when ``lam`` is None (the theorem needs λ > ‖H_{w*}‖).
LAM_MARGIN = 1.25
#: Iterates (evenly spaced, first and last included) at which L and M are estimated.
ESTIMATION_POINTS = 4

# -- the cost model behind solver="auto" ---------------------------------------------------------
# Seconds on one CPU thread of the development machine (2 cores shared with other work; the
# minimum of 3 runs; the measurements are listed again in bench/bench_cns.py's docstring). The
# choices they drive are far from the boundary on the default audit: 0.6 ms (dense) against
# 0.10 s (LiSSA) for the logistic regression, 34 s (dense) against 0.64 s (LiSSA) for the MLP.
#  * a linear model's closed-form Hessian over n records (Objective.hessian): 0.65 ms at d = 3,
#    44 ms at d = 109, 215 ms at d = 300, 784 ms at d = 610 with C = 10 (n = 34,190), i.e. about
#    0.5 ms + 0.2 ns per unit of n·q²·C(C+1)/2 (q = features + 1; 0.07-0.2 measured, 2.1 at d = 3
#    where the fixed cost dominates);
#  * any other model's Hessian from d vmapped products: 4 ns (d = 65) to 14 ns (d = 257) per
#    unit of d²·n (the default MLP, d = 257, n = 34,190: 18 s measured) -> 15 ns;
#  * eigvalsh + Cholesky of a d×d matrix: 0.08-0.18 ns per d³ (3 ms at d = 256, 0.7 s at 2048);
#  * one LiSSA step on a 10-record batch: 90-103 µs for a linear model (closed form, d = 3 to
#    610), 570-580 µs for the MLPs (autograd double backward, d = 65 and 257), plus the records'
#    share of the product (≈ the per-record cost of the dense Hessian's products, × d).
DENSE_FIXED_S = 5e-4
LINEAR_HESSIAN_S = 2e-10
NONLINEAR_HESSIAN_S = 1.5e-8
CUBIC_S = 2e-10
LISSA_STEP_S = {"linear": 1e-4, "nonlinear": 6e-4}


def solver_costs(
    *, d: int, n: int, linear: bool, n_outputs: int, depth: int, repeats: int, hessian_batch: int | None
) -> dict[str, float]:
    """Predicted seconds of each solver for one deletion (the cost model above; deterministic,
    so the same configuration always picks the same solver and the same certificate).

    ``dense``: the explicit Hessian over the n records (formed once, after training; a deletion
    then subtracts the m deleted records' Hessians, see ``ConstrainedNewtonStep._step_spectrum``)
    plus its eigendecomposition and Cholesky factorisation, counted twice (after training and at
    the step). Counting the whole Hessian, not only the downdate, keeps the rule conservative:
    ``auto`` picks dense only when even learning's extra work is below LiSSA's recursion.
    ``lissa``: s·R steps, each a fixed cost plus the batch's share of one product (a full-batch
    recursion, ``hessian_batch=None``, reads all n records per step).
    """
    q = d // max(n_outputs, 1)  # features + 1 of a linear model (d = C·q with a bias)
    if linear:
        hessian = DENSE_FIXED_S + LINEAR_HESSIAN_S * n * q * q * n_outputs * (n_outputs + 1) / 2
        per_record = LINEAR_HESSIAN_S * q * n_outputs * 4  # V x, Λu, (Λu) xᵀ for one record
    else:
        hessian = NONLINEAR_HESSIAN_S * d * d * n
        per_record = NONLINEAR_HESSIAN_S * d
    step = LISSA_STEP_S["linear" if linear else "nonlinear"] + per_record * (
        n if hessian_batch is None else hessian_batch
    )
    return {"dense": hessian + 2 * CUBIC_S * d**3, "lissa": depth * repeats * step}


def project(theta: Tensor, C: float) -> Tensor:
    """Euclidean projection onto the ball ‖θ‖₂ <= C (rescale when outside)."""
    norm = float(torch.linalg.vector_norm(theta))
    return theta * (C / norm) if norm > C else theta


def projected_gradient_descent(
    objective: Objective,
    theta0: Tensor,
    X: Tensor,
    y: Tensor,
    *,
    eta: float,
    steps: int,
    C: float,
    l2: float,
    keep: set[int] | frozenset[int] = frozenset(),
    batches: list[Tensor] | None = None,
) -> tuple[Tensor, dict[int, Tensor]]:
    """T steps θ_t = Π_C(θ_{t−1} − η(∇f_D(θ_{t−1}) + l2·θ_{t−1})); returns θ_T and kept iterates.
    With ``batches`` step t uses the records ``batches[t − 1]`` (projected mini-batch SGD)."""
    theta = theta0.clone()
    kept = {0: theta.clone()} if 0 in keep else {}
    for t in range(1, steps + 1):
        Xb, yb = (X, y) if batches is None else (X[batches[t - 1]], y[batches[t - 1]])
        theta = project(theta - eta * (objective.grad(theta, Xb, yb) + l2 * theta), C)
        if t in keep:
            kept[t] = theta.clone()
    return theta, kept


class ConstrainedNewtonStep(Unlearner):
    """CNS (Zhang et al. 2024): projected training, one λ-regularised Newton step by LiSSA.

    Options (declared in ``hyperparameters``)
    -----------------------------------------
    steps, eta:
        T full-batch projected-gradient steps of A (and of the retrain) with constant step η;
        ``eta=None`` uses 1/L with L the per-sample smoothness at θ_0 (closed form for logistic
        regression, estimated otherwise).
    C:
        Norm bound of the projection ‖θ‖₂ <= C (paper: 10 for its MLP, 20 for CNNs).
    l2:
        Weight decay of the trained objective, l = f_z + (l2/2)‖θ‖² (paper: 5e-4).
    lam:
        λ, the local convex coefficient added to the Hessian only. ``None`` picks
        λ = 1.25·‖∇²L(w*, D)‖ measured after training, so that the theorem's λ > ‖H_{w*}‖ holds
        with a margin (the paper sets λ by hand: 1 for its MLP, which violates the condition).
    solver:
        ``"lissa"`` (the paper), ``"dense"`` (explicit Hessian + Cholesky; small models; the
        certificate is then Theorem 3.4's exact-inverse bound, without the LiSSA term, and
        ρ = 0) or ``"auto"`` (default): dense when d <= ``dense_max_dim`` and the cost model of
        :func:`solver_costs` predicts it cheaper than the LiSSA recursion, else LiSSA. The
        solver that ran, and why, is reported (``report_hyperparameters``).
    depth, repeats, hessian_batch, hessian_scale:
        LiSSA recursion depth s (paper: 1000), independent repetitions averaged (paper: 1,
        released code: 10), records per Hessian sample (paper: 1, released code: 10; ``None``
        uses all retained records, a deterministic Neumann series), and the scale H (``None``:
        L + λ, which bounds every sampled ‖∇²l + λI‖).
    rho:
        LiSSA failure probability ρ of Eq. (11); ``None`` uses δ/2 at certification. The
        Gaussian is calibrated at δ − ρ, so the certificate's δ includes it.
    bound:
        ``"corrected"`` (printed revised Eq. 11, default) or ``"original"`` (without (λ + L)).
    gradient:
        ``"retain"``: the exact retained gradient ∇L(w*, D_r) (the released code); ``"forget"``:
        Algorithm 1's shortcut −(m/(n−m))∇L(w*, D_u), whose extra error at a non-stationary w* is
        added to Δ.
    constants:
        User overrides of ``L``, ``M``, ``lambda_min``, ``G`` (provenance ``assumed``).
    seed:
        Seed of the constant estimators and of the LiSSA mini-batches.
    dense_max_dim:
        The largest d for which an explicit d×d Hessian is formed: always for ``solver="dense"``,
        and for a full-batch LiSSA when d <= depth. ‖H‖ and λ_min then come from its
        eigendecomposition, otherwise from Lanczos.
    """

    name = "cns"
    title = "Certified unlearning for DNNs (constrained Newton step, LiSSA)"
    paper = (
        "Zhang, Dong, Wang & Li, 'Towards Certified Unlearning for Deep Neural Networks', ICML 2024, "
        "revised arXiv version (Algorithms 1-2, Theorems 2.3, 3.4, 3.6, Propositions 3.5, 4.1 "
        "(Eq. 11, corrected), 4.2)"
    )
    certified = True
    precision = Precision(
        False,
        "the Newton step's Hessian spectrum (lambda_min, ||H||), gradient residuals and "
        "estimated L, M, G at the trained and unlearned models: linear solves and "
        "eigenvalues whose float32 error is of the order of the conditions they check",
    )
    model_requirements = frozenset({SMOOTH, STATELESS})
    assumptions = (
        "every per-sample loss has an L-Lipschitz gradient (Assumption 3.1) and an M-Lipschitz "
        "Hessian (Assumption 3.2)",
        "learning and retraining project the parameters onto ||theta|| <= C, so ||w* - w~*|| <= 2C",
        "lambda > ||H_{w*}|| for the retained-loss Hessian at w* (Theorems 3.4, 3.6, Prop. 4.1)",
        "LiSSA: depth s >= 2k ln k with k = (L+lambda)/(lambda+lambda_min) and a scale H above "
        "every sampled ||Hessian + lambda I|| (Prop. 3.5); the bound then holds w.p. >= 1 - rho",
        "the retrained model's residual gradient ||grad L(w~*, D_r)|| <= G (Prop. 4.1)",
        "the reference world is the retrained model plus the same Gaussian noise (Theorem 2.3, "
        "via Sekhari et al. 2021, Lemma 10)",
    )
    deviations = (
        "A is full-batch projected gradient descent with a constant step (the paper: Adam, "
        "minibatches, weight decay 5e-4, early stopping on a validation split)",
        "the exact retained gradient by default (the released code); Algorithm 1's forget-set "
        "shortcut on request, with its extra error at a non-stationary w* added to Delta",
        "Hessian samples are minibatches of 10 retained records (the released code), not single "
        "records; hessian_batch=1 gives the paper's",
        "lambda defaults to 1.25 ||H|| so that the theorem's condition holds (the paper's MLP "
        "used lambda = 1 below its own ||H||); the LiSSA scale defaults to L + lambda",
        "L, M, lambda_min and G are closed form for logistic regression and estimated otherwise "
        "(the paper guesses L = M = 1, lambda_min = 0, G unspecified): the certificate is then "
        "conditional",
        "sqrt(ln d/rho) is read as sqrt(ln(d/rho)) with d the number of parameters; rho defaults "
        "to delta/2 and the Gaussian is calibrated at delta - rho (the paper never folds rho in)",
        "analytic Gaussian mechanism by default (every reported epsilon in the paper is >> 1, "
        "where the classic formula is unproven)",
        "sequential requests release every intermediate model with its own noise (the released code adds none)",
        "solver=auto (default) takes the exact inverse (Theorem 3.4, the paper's exact-Hessian ablation) instead "
        "of LiSSA when a cost model predicts it cheaper (d <= dense_max_dim): the Hessian on D is formed after "
        "training and a deletion subtracts the deleted records' Hessians; Delta adds the solve's measured "
        "rounding error",
        "at w* the check lambda > ||H_w*|| and lambda_min use the spectrum measured after training on D, "
        "moved by Weyl's inequality by at most mL/(n - m) (only when that is below 1% of lambda)",
    )

    hyperparameters = (
        Param("steps", 1000, Integer(1), "T: projected gradient steps of A and of the retrain", audit="steps"),
        Param("eta", None, Optional(Real(gt=0), "for 1/L at theta_0"), "constant step size", audit="eta"),
        Param("C", 10.0, Real(gt=0), "norm bound of the projection ||theta|| <= C"),
        Param("l2", 5e-4, Real(ge=0), "weight decay of the trained objective"),
        Param(
            "lam",
            None,
            Optional(Real(ge=0), f"for {LAM_MARGIN} ||grad^2 L(w*, D)||"),
            "lambda, the local convex coefficient added to the Hessian",
        ),
        Param(
            "solver",
            "auto",
            Choice(SOLVERS),
            "lissa (the paper), dense (Cholesky, Theorem 3.4), or auto: the cheaper by a cost model",
        ),
        Param("depth", 1000, Integer(1), "LiSSA recursion depth s"),
        Param("repeats", 1, Integer(1), "independent LiSSA repetitions averaged"),
        Param(
            "hessian_batch",
            10,
            Optional(Integer(0), "(or 0) for all retained records"),
            "records per LiSSA Hessian sample",
        ),
        Param("hessian_scale", None, Optional(Real(gt=0), "for L + lambda"), "LiSSA scale H"),
        Param("rho", None, Optional(Real(gt=0, lt=1), "for delta/2"), "LiSSA failure probability"),
        Param("bound", "corrected", Choice(BOUND_VERSIONS), "Eq. 11 as corrected or as originally printed"),
        Param("gradient", "retain", Choice(GRADIENTS), "retain (the released code) or forget (Algorithm 1)"),
        Param(
            "constants",
            {},
            MappingOf(Real(), keys=OVERRIDABLE),
            "user overrides of L, M, lambda_min, G (provenance assumed)",
            audit="constants",
        ),
        Param("seed", 0, Integer(0), "seed of the estimators and of the LiSSA batches", audit="seed"),
        Param("dense_max_dim", 2048, Integer(1), "largest d for an explicit d x d Hessian"),
        Param(
            "batch_size",
            None,
            Optional(Integer(1), "for full batch"),
            "mini-batch size of A and the retrain (projected SGD, as the paper trains; Prop. 4.1 holds for "
            "any end point inside the ball, its residual gradients measured)",
        ),
    )

    #: An option (the constructor sets it), declared because _check_options reassigns it: 0 means None.
    hessian_batch: int | None

    def _check_options(self) -> None:
        if self.hessian_batch == 0:
            self.hessian_batch = None
        for k, v in self.constants.items():
            if k != "lambda_min" and not v > 0:  # lambda_min may be negative (a non-convex loss)
                raise InvalidInput(f"constants.{k}", "a finite number > 0", v)

    # -- the objective A minimises --------------------------------------------------------
    def _grad(self, theta: Tensor, X: Tensor, y: Tensor) -> Tensor:
        """∇L(θ) of the trained objective: mean loss plus (l2/2)‖θ‖²."""
        return regularized_grad(self.objective, theta, X, y, self.l2)

    # -- A -------------------------------------------------------------------------------
    def _fit(self, X: Tensor, y: Tensor, theta0: Tensor) -> Tensor:
        """Projected full-batch gradient descent on D from θ_0; estimates the constants."""
        self.theta0_ = theta0.clone()
        self.solver_, self.solver_reason_ = self._choose_solver(int(X.shape[0]))
        self._retrains: dict[tuple[int, ...], tuple[Tensor, float]] = {}
        #: keyed by the requests' sorted indices, after "single" for a one-batch deletion (Algorithm 1)
        self._sequences: dict[tuple[str | tuple[int, ...], ...], tuple[list[Tensor], list[dict]]] = {}
        gen = torch.Generator().manual_seed(self.seed)
        L0 = self._per_sample_L([theta0], gen) if self.eta is None else None
        self.eta_ = 1.0 / L0.value if L0 is not None else float(self.eta)
        T = self.steps
        sample_at = sorted({round(i * T / (ESTIMATION_POINTS - 1)) for i in range(ESTIMATION_POINTS)})
        theta, kept = projected_gradient_descent(
            self.objective,
            theta0,
            X,
            y,
            eta=self.eta_,
            steps=T,
            C=self.C,
            l2=self.l2,
            keep=set(sample_at),
            batches=minibatches(int(X.shape[0]), self.batch_size, T, self.seed, X.device),
        )
        self.theta_ = theta
        iterates = [kept[t] for t in sample_at]
        self.residual_ = float(torch.linalg.vector_norm(self._grad(theta, X, y)))
        if L0 is None or L0.provenance != "estimated":
            L = self._per_sample_L(iterates, gen)
        else:  # θ_0 was already sampled for the step size
            L = merge_estimates(L0, self._per_sample_L([kept[t] for t in sample_at if t != 0], gen))
        self.constants_ = {
            "L": L,
            "M": self._hessian_lipschitz(iterates, gen),
            "G": self._residual_bound(),
        }
        if "lambda_min" in self.constants:  # may be negative: not user_constant
            self.constants_["lambda_min"] = Constant(
                "lambda_min",
                float(self.constants["lambda_min"]),
                "assumed",
                "smallest eigenvalue of the retained-loss Hessian, supplied by the user",
            )
        self.spectrum_fit_ = self._spectrum(theta, X, y, gen)
        self.lam_ = (LAM_MARGIN * self.spectrum_fit_["norm"]) if self.lam is None else float(self.lam)
        return theta

    def pinned_options(self) -> dict:
        return {"eta": self.eta_} if getattr(self, "eta_", None) is not None else {}

    def _retrain(self, forget: Tensor) -> Tensor:
        """A(D \\ Z): the same projected gradient descent from the same θ_0."""
        return self._retrain_with_residual(forget)[0].clone()

    def _retrain_with_residual(self, forget: Tensor) -> tuple[Tensor, float]:
        """A(D \\ Z) and its residual gradient ||∇L(w~*, D_r)|| (computed once per forget set)."""
        key = tuple(sorted(forget.tolist()))
        if key not in self._retrains:
            X_r, y_r = self.retained(forget)
            theta, _ = projected_gradient_descent(
                self.objective,
                self.theta0_,
                X_r,
                y_r,
                eta=self.eta_,
                steps=self.steps,
                C=self.C,
                l2=self.l2,
                batches=minibatches(int(X_r.shape[0]), self.batch_size, self.steps, self.seed, X_r.device),
            )
            self._retrains[key] = (theta, float(torch.linalg.vector_norm(self._grad(theta, X_r, y_r))))
        return self._retrains[key]

    # -- U -------------------------------------------------------------------------------
    def _unlearn(self, forget: Tensor) -> Tensor:
        """Algorithm 1: w̃ = w* − (∇²L(w*, D_r) + λI)⁻¹ ∇L(w*, D_r) (LiSSA or Cholesky)."""
        return self._sequence([forget], single=True)[0][-1].clone()

    def unlearn_sequence(self, requests: list[Tensor]) -> list[Tensor]:
        """Algorithm 2 (Prop. 4.2): one Newton step per request from the previous estimate.

        ``requests`` are disjoint index sets into D (removed cumulatively). Returns the noiseless
        estimates w̃_1..w̃_k; release each with its own noise (:meth:`release_sequence`). The
        retained gradient is used at every step (the forget-set shortcut is invalid there).
        """
        if len(requests) == 0:
            raise InvalidInput("requests", "a non-empty list of index sets", requests)
        checked = [self.forget_indices(r, f"requests[{k}]") for k, r in enumerate(requests)]
        return [t.clone() for t in self._sequence(checked)[0]]

    def step_diagnostics(self, forget: Tensor) -> list[dict]:
        """The diagnostics of the Newton step that deletes ``forget`` (one entry: solver, Hessian
        norm and λ_min at the step's point, LiSSA or Cholesky residual, step norm)."""
        return [dict(d) for d in self._sequence([self.forget_indices(forget)], single=True)[1]]

    def _serve(
        self, requests: list[Tensor], epsilon: float, delta: float, mechanism: str
    ) -> list[tuple[Tensor, Certificate]]:
        """Algorithm 2's rule: chain the Newton steps; release k is certified by Prop. 4.2 over
        its first k steps."""
        thetas, _ = self._sequence(requests)
        return [
            (thetas[k - 1].clone(), self._certificate(requests[:k], epsilon, delta, mechanism))
            for k in range(1, len(requests) + 1)
        ]

    def _sequence(self, requests: list[Tensor], single: bool = False) -> tuple[list[Tensor], list[dict]]:
        """The Newton steps for validated requests and their diagnostics (once per sequence).

        ``single``: one batch deletion (Algorithm 1, with the ``gradient`` option); otherwise
        Algorithm 2's chained steps on the retained gradient.
        """
        key = (("single",) if single else ()) + tuple(tuple(sorted(r.tolist())) for r in requests)
        if key in self._sequences:
            return self._sequences[key]
        X, y = self.fitted_data()
        removed = torch.zeros(X.shape[0], dtype=torch.bool, device=X.device)
        theta = self.theta_
        out, diags = [], []
        for i, Z in enumerate(requests):
            if bool(removed[Z].any()):
                raise InvalidInput("requests", "disjoint index sets (a record is deleted once)", "repeated records")
            removed[Z] = True
            X_r, y_r = X[~removed], y[~removed]
            if single and self.gradient == "forget":
                n, m = X.shape[0], int(Z.numel())
                v = -(m / (n - m)) * self._grad(theta, X[Z], y[Z])
            else:
                v = self._grad(theta, X_r, y_r)
            # the first step is at w*, where the Hessian measured after training can be downdated
            step, diag = self._newton_step(theta, X_r, y_r, v, removed.clone() if i == 0 else None)
            diag.update(forget_size=int(Z.numel()), removed_total=int(removed.sum()))
            if not single:
                diag.update(request=i + 1, start_norm=float(torch.linalg.vector_norm(theta)))
            diags.append(diag)
            theta = theta - step
            out.append(theta)
        self._sequences[key] = (out, diags)
        return self._sequences[key]

    @staticmethod
    def release_sequence(thetas: list[Tensor], sigma: float, generator: torch.Generator) -> list[Tensor]:
        """Release every intermediate model with its own independent noise draw."""
        return [Unlearner.release(t, sigma, generator) for t in thetas]

    def _newton_step(
        self, theta: Tensor, X_r: Tensor, y_r: Tensor, v: Tensor, removed: Tensor | None = None
    ) -> tuple[Tensor, dict]:
        """One step (H + λI)⁻¹ v at θ on the retained records; ``removed`` (the deleted records'
        mask) when θ is w*, the trained model, so that the spectrum after training is reused."""
        gen = torch.Generator().manual_seed(self.seed + 1)
        spec = self._step_spectrum(theta, X_r, y_r, gen, removed)
        lam = self.lam_
        diag = {
            "gradient_norm": float(torch.linalg.vector_norm(v)),
            "hessian_norm": spec["norm"],
            "lambda_min": spec["lambda_min"],
            "spectrum_method": spec["method"],
        }
        if self.solver_ == "dense":
            H = spec["H"]
            try:
                x = dense_solve(H, v, damping=lam)
                diag["positive_definite"] = True
            except InvalidInput:
                eye = torch.eye(H.shape[0], dtype=H.dtype, device=H.device)
                x = torch.linalg.solve(H + lam * eye, v)
                diag["positive_definite"] = False
            diag.update(solver="dense (Cholesky)", diverged=False)
        else:
            scale = self._scale()
            try:
                if self.hessian_batch is None:
                    H = spec["H"]
                    matvec = (
                        (lambda u: H @ u)
                        if H is not None
                        else hvp_operator(self.objective, theta, X_r, y_r, l2=self.l2)
                    )
                    x, info = lissa(
                        matvec, v, scale=scale, depth=self.depth, damping=lam, repeats=1, on_divergence="ignore"
                    )
                else:
                    op = stochastic_operator(
                        hvp_operator, self.objective, theta, X_r, y_r, batch_size=self.hessian_batch, l2=self.l2
                    )
                    x, info = lissa(
                        op,
                        v,
                        scale=scale,
                        depth=self.depth,
                        damping=lam,
                        repeats=self.repeats,
                        generator=gen,
                        stochastic=True,
                        on_divergence="ignore",
                    )
            except InvalidInput as exc:  # a non-finite recursion: nothing to release
                raise InvalidInput(
                    "hessian_scale",
                    f"above ||Hessian + lambda I|| = {spec['norm'] + lam:.6g} on every "
                    "sample (the LiSSA recursion overflowed)",
                    scale,
                    hint="Leave hessian_scale unset for L + lambda.",
                ) from exc
            diag.update(
                solver="lissa", **{f"lissa_{k}": val for k, val in info.items()}, diverged=bool(info["diverged"])
            )
        if spec["H"] is not None:
            eye = torch.eye(spec["H"].shape[0], dtype=theta.dtype, device=theta.device)
            res = (spec["H"] + lam * eye) @ x - v
            diag["residual_norm"] = float(torch.linalg.vector_norm(res))
            diag["relative_residual"] = diag["residual_norm"] / max(diag["gradient_norm"], 1e-300)
        diag["step_norm"] = float(torch.linalg.vector_norm(x))
        return x, diag

    # -- constants ------------------------------------------------------------------------
    def _per_sample_L(self, iterates: list[Tensor], gen: torch.Generator) -> Constant:
        """Smoothness of l = f_z + (l2/2)‖θ‖²: closed form (logistic) or estimated, plus l2."""
        if "L" in self.constants:
            return user_constant("L", self.constants["L"], "per-sample smoothness, supplied by the user")
        # G is not needed here (it is a different quantity for CNS): only L is estimated
        base = model_constants(
            self.objective,
            *self.fitted_data(),
            iterates,
            generator=gen,
            which=("L",),
            records_for_smoothness=128,
            power_iterations=20,
        )["L"]
        return Constant(
            "L",
            base.value + self.l2,
            base.provenance,
            base.description + f"; plus l2 = {self.l2:g} of the trained objective (Assumption 3.1)",
            dict(base.diagnostics),
        )

    def _hessian_lipschitz(self, iterates: list[Tensor], gen: torch.Generator) -> Constant:
        """M of Assumption 3.2: closed form for logistic regression, else estimated."""
        if "M" in self.constants:
            return user_constant(
                "M", self.constants["M"], "per-sample Hessian-Lipschitz constant, supplied by the user"
            )
        if self.objective.is_linear:
            R = float(torch.linalg.vector_norm(self.fitted_data()[0], dim=1).max())
            n_classes = 2 if self.objective.n_outputs == 1 else self.objective.n_outputs
            return Constant(
                "M",
                logistic_hessian_lipschitz(R, n_classes),
                "analytic",
                "per-sample Hessian-Lipschitz constant of the logistic loss for every theta "
                "(binary: |sigma''| <= 1/(6 sqrt 3); softmax: third central moment <= 1/sqrt 2; "
                "times (R^2+1)^{3/2}, R = max ||x||)",
                {"max_feature_norm": R, "n_classes": n_classes},
            )
        return estimate_hessian_lipschitz(self.objective, *self.fitted_data(), iterates, gen)

    def _residual_bound(self) -> Constant:
        if "G" in self.constants:
            return user_constant(
                "G",
                self.constants["G"],
                "bound on the retrained model's residual gradient ||grad L(w~*, D_r)||, supplied by the user",
            )
        return estimated_constant(
            "G",
            [self.residual_],
            safety_factor=SAFETY,
            description="bound on the residual gradient of training: ||grad L(w*, D)|| measured after "
            "training, times a safety factor; the retrained model's ||grad L(w~*, D_r)|| (Prop. 4.1) "
            "is assumed no larger (it is checked when the retrain has been run)",
            estimator="one measurement at w* (the same algorithm from the same theta_0 on D_r is "
            "assumed to converge as far)",
        )

    def _needs_matrix(self) -> bool:
        """Form the explicit Hessian for the dense solver, or for a full-batch LiSSA when that
        costs fewer Hessian-vector products (d) than the recursion itself (depth)."""
        d = self.objective.dim
        if self.solver_ == "dense":
            if d > self.dense_max_dim:
                raise InvalidInput(
                    "solver",
                    f"'lissa' for a model with d = {d} > dense_max_dim = "
                    f"{self.dense_max_dim} parameters (the dense path forms a d x d Hessian)",
                    self.solver,
                )
            return True
        return self.hessian_batch is None and d <= min(self.depth, self.dense_max_dim)

    def _spectrum(self, theta: Tensor, X: Tensor, y: Tensor, gen: torch.Generator) -> dict:
        """‖H‖ and λ_min of ∇²L(θ) + l2·I on (X, y): from the explicit Hessian when one is
        formed (:meth:`_needs_matrix`), else by Lanczos (at most min(d, 60) products, fewer once converged)."""
        return hessian_spectrum(self.objective, theta, X, y, gen, l2=self.l2, explicit=self._needs_matrix())

    def _choose_solver(self, n: int) -> tuple[str, str]:
        """The solver that runs and why: the requested one, or ``auto``'s choice by
        :func:`solver_costs` (never dense above ``dense_max_dim``)."""
        d = self.objective.dim
        if self.solver != "auto":
            return self.solver, "requested"
        if d > self.dense_max_dim:
            return "lissa", f"d = {d} > dense_max_dim = {self.dense_max_dim}: no d x d Hessian is formed"
        costs = solver_costs(
            d=d,
            n=n,
            linear=self.objective.linear_layout is not None,
            n_outputs=self.objective.n_outputs,
            depth=self.depth,
            repeats=self.repeats,
            hessian_batch=self.hessian_batch,
        )
        choice = "dense" if costs["dense"] <= costs["lissa"] else "lissa"
        return choice, (
            f"cost model (solver_costs): dense ~ {costs['dense']:.3g} s (the d x d Hessian over "
            f"n = {n} records, d = {d}, with its factorisations) against LiSSA ~ {costs['lissa']:.3g} s "
            f"({self.depth * self.repeats} recursion steps)"
        )

    def _step_spectrum(
        self, theta: Tensor, X_r: Tensor, y_r: Tensor, gen: torch.Generator, removed: Tensor | None
    ) -> dict:
        """The spectrum (and explicit Hessian, when one is formed) of ∇²L(θ, D_r) + l2·I.

        At w* (``removed`` given) the measurement made after training on D is reused:

        * an explicit Hessian is downdated, H(D_r) = (n·H(D) − m·H(Z) − m·l2·I)/(n − m) with H(Z)
          the m deleted records' mean Hessian: the same matrix up to rounding, at the cost of m
          records instead of n − m (when m <= n − m);
        * otherwise ‖H‖ and λ_min are bounded by Weyl's inequality: the deleted records' summed
          Hessian has eigenvalues in [−mL, mL] (Assumption 3.1, L including l2, an upper bound),
          so λ_max(H_r) <= (n(λ_max(H_D) − l2) + mL)/(n − m) + l2 and
          λ_min(H_r) >= (n(λ_min(H_D) − l2) − mL)/(n − m) + l2. Used only while mL/(n − m) is at
          most WEYL_FRACTION·λ, so the bounds cost the certificate under 1 % of λ; else Lanczos.

        Elsewhere (sequential steps after the first) it is measured anew (:meth:`_spectrum`).
        """
        if removed is None:
            return self._spectrum(theta, X_r, y_r, gen)
        fit = self.spectrum_fit_
        n, m = int(removed.numel()), int(removed.sum())
        if fit["H"] is not None:
            reused = downdated_spectrum(self.objective, fit, theta, *self.fitted_data(), removed, l2=self.l2)
        else:
            reused = weyl_spectrum(fit, n=n, m=m, L=self.constants_["L"].value, lam=self.lam_, l2=self.l2)
        return reused if reused is not None else self._spectrum(theta, X_r, y_r, gen)

    def _scale(self) -> float:
        return float(self.hessian_scale) if self.hessian_scale is not None else self.constants_["L"].value + self.lam_

    # -- certificate ----------------------------------------------------------------------
    def _certify(self, forget: Tensor, epsilon: float, delta: float, mechanism: str) -> Certificate:
        """(ε, δ) certificate of Prop. 4.1, Eq. (11), for deleting exactly ``forget``."""
        return self._certificate([forget], epsilon, delta, mechanism, single=True)

    def _certificate(
        self, requests: list[Tensor], epsilon: float, delta: float, mechanism: str, single: bool = False
    ) -> Certificate:
        """The certificate of the last release of ``requests`` (Prop. 4.1 for one batch deletion,
        Prop. 4.2 for chained requests): its conditions are checked on these requests' own Newton
        steps and on the retrain without every record they delete."""
        n, d = int(self.fitted_data()[0].shape[0]), self.objective.dim
        union = torch.cat(requests)
        m = int(union.numel())
        if m >= n:
            raise InvalidInput("forget", f"fewer than n = {n} records", m)
        steps = self._sequence(requests, single=single)[1]
        lam = self.lam_
        L, M, G = self.constants_["L"], self.constants_["M"], self.constants_["G"]
        lmin, hn = spectrum_constants(
            steps, self.constants_.get("lambda_min"), linear=self.objective.is_linear, l2=self.l2
        )
        lissa_path = self.solver_ == "lissa"
        rho = (self.rho if self.rho is not None else delta / 2.0) if lissa_path else 0.0
        retrain_residual = self._retrain_with_residual(union)[1]
        exact = enforced_constants(
            C=self.C,
            lam=lam,
            lam_margin=LAM_MARGIN if self.lam is None else None,
            fit_norm=self.spectrum_fit_["norm"],
            d=d,
            n=n,
            m=m,
            retrain_residual=retrain_residual,
        )
        if lissa_path:
            exact += lissa_constants(
                depth=self.depth, scale=self._scale(), default_scale=self.hessian_scale is None, rho=rho
            )
        trick = single and self.gradient == "forget"
        if trick:  # Algorithm 2 always uses the retained gradient
            exact.append(training_residual_constant(self.residual_))
        bound = cns_bound(
            C=self.C,
            M=M.value,
            L=L.value,
            lam=lam,
            lambda_min=lmin.value,
            G=G.value,
            d=d,
            n=n,
            m=m,
            rho=rho,
            delta=delta,
            version=self.bound,
            lissa=lissa_path,
            depth=self.depth,
            scale=self._scale(),
            hessian_norm=hn.value,
            theta_norm=float(torch.linalg.vector_norm(self.theta_)),
            start_norms=[(s["request"], s["start_norm"]) for s in steps if "request" in s],
            diverged=any(s.get("diverged") for s in steps),
            retrain_residual=retrain_residual,
            forget_trick_residual=self.residual_ if trick else None,
            sequential=0 if single else len(requests),
            constants=(L, M, lmin, G, hn, *exact),
        )
        if not lissa_path:
            bound = with_solve_error(bound, steps[-1], lam + lmin.value)
        return issue(
            self.name,
            "output-noise",
            epsilon=epsilon,
            delta=delta,
            mechanism=mechanism,
            bound=bound,
            assumptions=self.assumptions,
            reserved_delta=rho,
        )

    def report_hyperparameters(self) -> dict:
        return {
            "steps": self.steps,
            "eta": getattr(self, "eta_", self.eta),
            "eta_requested": self.eta,
            "C": self.C,
            "l2": self.l2,
            "lam": getattr(self, "lam_", self.lam),
            "lam_requested": self.lam,
            "solver": getattr(self, "solver_", self.solver),
            "solver_requested": self.solver,
            "solver_reason": getattr(self, "solver_reason_", None),
            "depth": self.depth,
            "repeats": self.repeats,
            "hessian_batch": self.hessian_batch,
            "hessian_scale": self._scale() if hasattr(self, "lam_") else self.hessian_scale,
            "rho": self.rho,
            "bound": self.bound,
            "gradient": self.gradient,
            "constant_overrides": dict(self.constants),
            "seed": self.seed,
            "batch_size": self.batch_size,
        }
