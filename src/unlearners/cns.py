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
  scale H above every sampled ‖∇²l + λI‖), or solved exactly by Cholesky for small models.
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

import math
from collections.abc import Sequence

import torch
from torch import Tensor
from torch.func import grad, jvp, vmap

from certify.bounds.cns import (
    BOUND_VERSIONS,
    cns_depth_required,
    cns_exact_newton_bound,
    cns_forget_trick_term,
    cns_lissa_error,
    cns_sensitivity,
    logistic_hessian_lipschitz,
)
from certify.certificate import Certificate, Constant
from certify.constants import estimated_constant, user_constant
from certify.errors import InvalidInput
from certify.errors import require_finite as _finite
from certify.errors import require_integer as _integer
from certify.errors import require_nonnegative as _nonneg
from certify.errors import require_positive as _positive
from certify.mechanisms import sigma_for
from unlearners.base import Unlearner, register
from unlearners.linalg import (
    dense_solve,
    explicit_hessian,
    hvp_operator,
    lanczos_extremes,
    lissa,
    stochastic_operator,
)
from unlearners.objective import Objective, regularized_grad
from unlearners.smoothness import model_constants

SOLVERS = ("lissa", "dense")
GRADIENTS = ("retain", "forget")
OVERRIDABLE = ("L", "M", "lambda_min", "G")
#: λ = LAM_MARGIN·‖∇²L(w*, D)‖ when ``lam`` is None (the theorem needs λ > ‖H_{w*}‖).
LAM_MARGIN = 1.25
SAFETY = 1.2
#: Iterates (evenly spaced, first and last included) at which L and M are estimated.
ESTIMATION_POINTS = 4
#: Lanczos products for ‖H‖ and λ_min when no explicit Hessian is formed.
LANCZOS_ITERS = 60


def project(theta: Tensor, C: float) -> Tensor:
    """Euclidean projection onto the ball ‖θ‖₂ <= C (rescale when outside)."""
    norm = float(torch.linalg.vector_norm(theta))
    return theta * (C / norm) if norm > C else theta


def projected_gradient_descent(objective: Objective, theta0: Tensor, X: Tensor, y: Tensor, *,
                               eta: float, steps: int, C: float, l2: float,
                               keep: set[int] | frozenset[int] = frozenset()) -> tuple[Tensor, dict[int, Tensor]]:
    """T steps θ_t = Π_C(θ_{t−1} − η(∇f_D(θ_{t−1}) + l2·θ_{t−1})); returns θ_T and kept iterates."""
    theta = theta0.clone()
    kept = {0: theta.clone()} if 0 in keep else {}
    for t in range(1, steps + 1):
        theta = project(theta - eta * (objective.grad(theta, X, y) + l2 * theta), C)
        if t in keep:
            kept[t] = theta.clone()
    return theta, kept


@register
class ConstrainedNewtonStep(Unlearner):
    """CNS (Zhang et al. 2024): projected training, one λ-regularised Newton step by LiSSA.

    Parameters
    ----------
    objective:
        The per-sample loss f_z as functions of a flat θ.
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
        ``"lissa"`` (the paper) or ``"dense"`` (explicit Hessian + Cholesky; small models; the
        LiSSA term of the bound then vanishes and ρ = 0).
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
        "sequential requests release every intermediate model with its own noise (the released "
        "code adds none)",
    )

    def __init__(
        self,
        objective: Objective,
        *,
        steps: int = 1000,
        eta: float | None = None,
        C: float = 10.0,
        l2: float = 5e-4,
        lam: float | None = None,
        solver: str = "lissa",
        depth: int = 1000,
        repeats: int = 1,
        hessian_batch: int | None = 10,
        hessian_scale: float | None = None,
        rho: float | None = None,
        bound: str = "corrected",
        gradient: str = "retain",
        constants: dict[str, float] | None = None,
        seed: int = 0,
        dense_max_dim: int = 2048,
    ):
        super().__init__(objective)
        self.steps = _integer("steps", steps, 1)
        self.eta = None if eta is None else _positive("eta", eta)
        self.C = _positive("C", C)
        self.l2 = _nonneg("l2", l2)
        self.lam = None if lam is None else _nonneg("lam", lam)
        if solver not in SOLVERS:
            raise InvalidInput("solver", "one of " + ", ".join(map(repr, SOLVERS)), solver)
        self.solver = solver
        self.depth = _integer("depth", depth, 1)
        self.repeats = _integer("repeats", repeats, 1)
        self.hessian_batch = None if hessian_batch in (None, 0) else _integer("hessian_batch", hessian_batch, 1)
        self.hessian_scale = None if hessian_scale is None else _positive("hessian_scale", hessian_scale)
        if rho is not None:
            r = _positive("rho", rho)
            if r >= 1:
                raise InvalidInput("rho", "a probability in (0, 1), or None for delta/2", rho)
            rho = r
        self.rho = rho
        if bound not in BOUND_VERSIONS:
            raise InvalidInput("bound", "one of 'corrected', 'original'", bound)
        self.bound = bound
        if gradient not in GRADIENTS:
            raise InvalidInput("gradient", "one of 'retain', 'forget'", gradient)
        self.gradient = gradient
        overrides = dict(constants or {})
        unknown = sorted(set(overrides) - set(OVERRIDABLE))
        if unknown:
            raise InvalidInput("constants", "a mapping with keys among " + ", ".join(OVERRIDABLE), unknown)
        for k, v in overrides.items():
            if k == "lambda_min":
                _finite("constants.lambda_min", v)
            else:
                _positive(f"constants.{k}", v)
        self.constant_overrides = overrides
        self.seed = int(seed)
        self.dense_max_dim = _integer("dense_max_dim", dense_max_dim, 1)
        self.last_: dict | None = None

    # -- the objective A minimises --------------------------------------------------------
    def _grad(self, theta: Tensor, X: Tensor, y: Tensor) -> Tensor:
        """∇L(θ) of the trained objective: mean loss plus (l2/2)‖θ‖²."""
        return regularized_grad(self.objective, theta, X, y, self.l2)

    # -- A -------------------------------------------------------------------------------
    def fit(self, X: Tensor, y: Tensor, theta0: Tensor) -> Tensor:
        """Projected full-batch gradient descent on D from θ_0; estimates the constants."""
        self._remember(X, y)
        self.theta0_ = theta0.clone()
        self.last_ = None
        self.retrain_residual_: float | None = None
        gen = torch.Generator().manual_seed(self.seed)
        L0 = self._per_sample_L([theta0], gen) if self.eta is None else None
        self.eta_ = 1.0 / L0.value if L0 is not None else float(self.eta)
        T = self.steps
        sample_at = sorted({round(i * T / (ESTIMATION_POINTS - 1)) for i in range(ESTIMATION_POINTS)})
        theta, kept = projected_gradient_descent(self.objective, theta0, X, y, eta=self.eta_, steps=T,
                                                 C=self.C, l2=self.l2, keep=set(sample_at))
        self.theta_ = theta
        iterates = [kept[t] for t in sample_at]
        self.residual_ = float(torch.linalg.vector_norm(self._grad(theta, X, y)))
        if L0 is None or L0.provenance != "estimated":
            L = self._per_sample_L(iterates, gen)
        else:  # θ_0 was already sampled for the step size
            L = _merge_estimates(L0, self._per_sample_L([kept[t] for t in sample_at if t != 0], gen))
        self.constants_ = {
            "L": L,
            "M": self._hessian_lipschitz(iterates, gen),
            "G": self._residual_bound(),
        }
        if "lambda_min" in self.constant_overrides:  # may be negative: not user_constant
            self.constants_["lambda_min"] = Constant(
                "lambda_min", float(self.constant_overrides["lambda_min"]), "assumed",
                "smallest eigenvalue of the retained-loss Hessian, supplied by the user")
        self.spectrum_fit_ = self._spectrum(theta, X, y, gen)
        self.lam_ = (LAM_MARGIN * self.spectrum_fit_["norm"]) if self.lam is None else float(self.lam)
        return theta

    def retrain(self, forget: Tensor) -> Tensor:
        """A(D \\ Z): the same projected gradient descent from the same θ_0."""
        X_r, y_r = self.retained(forget)
        theta, _ = projected_gradient_descent(self.objective, self.theta0_, X_r, y_r, eta=self.eta_,
                                              steps=self.steps, C=self.C, l2=self.l2)
        self.retrain_residual_ = float(torch.linalg.vector_norm(self._grad(theta, X_r, y_r)))
        return theta

    # -- U -------------------------------------------------------------------------------
    def unlearn(self, forget: Tensor) -> Tensor:
        """Algorithm 1: w̃ = w* − (∇²L(w*, D_r) + λI)⁻¹ ∇L(w*, D_r) (LiSSA or Cholesky)."""
        self._check_fitted()
        forget = torch.as_tensor(forget, device=self.X_.device).reshape(-1)
        X_r, y_r = self.retained(forget)
        theta = self.theta_
        if self.gradient == "forget":
            n, m = self.X_.shape[0], int(forget.numel())
            v = -(m / (n - m)) * self._grad(theta, self.X_[forget], self.y_[forget])
        else:
            v = self._grad(theta, X_r, y_r)
        step, diag = self._newton_step(theta, X_r, y_r, v)
        diag.update(forget_size=int(forget.numel()))
        self.last_ = {"steps": [diag]}
        return theta - step

    def unlearn_sequence(self, requests: list[Tensor]) -> list[Tensor]:
        """Algorithm 2 (Prop. 4.2): one Newton step per request from the previous estimate.

        ``requests`` are index sets into D (removed cumulatively). Returns the noiseless
        estimates w̃_1..w̃_k; release each with its own noise (:meth:`release_sequence`). The
        retained gradient is used at every step (the forget-set shortcut is invalid there).
        """
        self._check_fitted()
        if len(requests) == 0:
            raise InvalidInput("requests", "a non-empty list of index sets", requests)
        removed = torch.zeros(self.X_.shape[0], dtype=torch.bool, device=self.X_.device)
        theta = self.theta_
        out, diags = [], []
        for i, Z in enumerate(requests):
            Z = torch.as_tensor(Z, device=self.X_.device).reshape(-1)
            removed[Z] = True
            X_r, y_r = self.X_[~removed], self.y_[~removed]
            v = self._grad(theta, X_r, y_r)
            step, diag = self._newton_step(theta, X_r, y_r, v)
            diag.update(request=i + 1, forget_size=int(Z.numel()), removed_total=int(removed.sum()),
                        start_norm=float(torch.linalg.vector_norm(theta)))
            diags.append(diag)
            theta = theta - step
            out.append(theta)
        self.last_ = {"steps": diags}
        return out

    def serve_requests(self, requests: Sequence[Tensor], epsilon: float, delta: float,
                       mechanism: str = "analytic") -> list[tuple[Tensor, Certificate]]:
        """Algorithm 2's rule: chain the Newton steps; release k is certified by Prop. 4.2 over
        its first k steps."""
        thetas = self.unlearn_sequence(list(requests))
        steps = self.last_["steps"]
        out = []
        for k, theta in enumerate(thetas, start=1):
            self.last_ = {"steps": steps[:k]}
            out.append((theta, self.certify(steps[k - 1]["removed_total"], epsilon, delta, mechanism)))
        return out

    @staticmethod
    def release_sequence(thetas: list[Tensor], sigma: float, generator: torch.Generator) -> list[Tensor]:
        """Release every intermediate model with its own independent noise draw."""
        return [Unlearner.release(t, sigma, generator) for t in thetas]

    def _newton_step(self, theta: Tensor, X_r: Tensor, y_r: Tensor, v: Tensor) -> tuple[Tensor, dict]:
        gen = torch.Generator().manual_seed(self.seed + 1)
        spec = self._spectrum(theta, X_r, y_r, gen)
        lam = self.lam_
        diag = {"gradient_norm": float(torch.linalg.vector_norm(v)), "hessian_norm": spec["norm"],
                "lambda_min": spec["lambda_min"], "spectrum_method": spec["method"]}
        if self.solver == "dense":
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
                    matvec = (lambda u: H @ u) if H is not None else hvp_operator(self.objective, theta, X_r, y_r,
                                                                                   l2=self.l2)
                    x, info = lissa(matvec, v, scale=scale, depth=self.depth, damping=lam, repeats=1,
                                    on_divergence="ignore")
                else:
                    op = stochastic_operator(hvp_operator, self.objective, theta, X_r, y_r,
                                             batch_size=self.hessian_batch, l2=self.l2)
                    x, info = lissa(op, v, scale=scale, depth=self.depth, damping=lam, repeats=self.repeats,
                                    generator=gen, stochastic=True, on_divergence="ignore")
            except InvalidInput as exc:  # a non-finite recursion: nothing to release
                raise InvalidInput(
                    "hessian_scale", f"above ||Hessian + lambda I|| = {spec['norm'] + lam:.6g} on every "
                    "sample (the LiSSA recursion overflowed)", scale,
                    hint="Leave hessian_scale unset for L + lambda.") from exc
            diag.update(solver="lissa", **{f"lissa_{k}": val for k, val in info.items()},
                        diverged=bool(info["diverged"]))
        if spec["H"] is not None:
            eye = torch.eye(spec["H"].shape[0], dtype=theta.dtype, device=theta.device)
            res = (spec["H"] + lam * eye) @ x - v
            diag["relative_residual"] = float(torch.linalg.vector_norm(res)) / max(diag["gradient_norm"], 1e-300)
        diag["step_norm"] = float(torch.linalg.vector_norm(x))
        return x, diag

    # -- constants ------------------------------------------------------------------------
    def _per_sample_L(self, iterates: list[Tensor], gen: torch.Generator) -> Constant:
        """Smoothness of l = f_z + (l2/2)‖θ‖²: closed form (logistic) or estimated, plus l2."""
        if "L" in self.constant_overrides:
            return user_constant("L", self.constant_overrides["L"], "per-sample smoothness, supplied by the user")
        # G is not needed here (it is a different quantity for CNS): skip its estimation.
        base = model_constants(self.objective, self.X_, self.y_, iterates, generator=gen,
                               overrides=None if self.objective.is_linear else {"G": 1.0},
                               records_for_smoothness=128, power_iterations=20)["L"]
        return Constant("L", base.value + self.l2, base.provenance,
                        base.description + f"; plus l2 = {self.l2:g} of the trained objective "
                        "(Assumption 3.1)", dict(base.diagnostics))

    def _hessian_lipschitz(self, iterates: list[Tensor], gen: torch.Generator) -> Constant:
        """M of Assumption 3.2: closed form for logistic regression, else estimated."""
        if "M" in self.constant_overrides:
            return user_constant("M", self.constant_overrides["M"], "per-sample Hessian-Lipschitz "
                                 "constant, supplied by the user")
        if self.objective.is_linear:
            R = float(torch.linalg.vector_norm(self.X_, dim=1).max())
            n_classes = 2 if self.objective.n_outputs == 1 else self.objective.n_outputs
            return Constant("M", logistic_hessian_lipschitz(R, n_classes), "analytic",
                            "per-sample Hessian-Lipschitz constant of the logistic loss for every theta "
                            "(binary: |sigma''| <= 1/(6 sqrt 3); softmax: third central moment <= 1/sqrt 2; "
                            "times (R^2+1)^{3/2}, R = max ||x||)",
                            {"max_feature_norm": R, "n_classes": n_classes})
        return _estimate_hessian_lipschitz(self.objective, self.X_, self.y_, iterates, gen)

    def _residual_bound(self) -> Constant:
        if "G" in self.constant_overrides:
            return user_constant("G", self.constant_overrides["G"], "bound on the retrained model's "
                                 "residual gradient ||grad L(w~*, D_r)||, supplied by the user")
        return estimated_constant(
            "G", [self.residual_], safety_factor=SAFETY,
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
        if self.solver == "dense":
            if d > self.dense_max_dim:
                raise InvalidInput("solver", f"'lissa' for a model with d = {d} > dense_max_dim = "
                                   f"{self.dense_max_dim} parameters (the dense path forms a d x d Hessian)",
                                   self.solver)
            return True
        return self.hessian_batch is None and d <= min(self.depth, self.dense_max_dim)

    def _spectrum(self, theta: Tensor, X: Tensor, y: Tensor, gen: torch.Generator) -> dict:
        """‖H‖ and λ_min of ∇²L(θ) + l2·I on (X, y): from the explicit Hessian when one is
        formed (:meth:`_needs_matrix`), else by Lanczos (min(d, 60) products)."""
        d = self.objective.dim
        if self._needs_matrix():
            H = explicit_hessian(self.objective, theta, X, y, l2=self.l2)
            ev = torch.linalg.eigvalsh(H)
            lo, hi = float(ev[0]), float(ev[-1])
            method = "dense eigendecomposition (exact up to rounding)"
        else:
            H = None
            k = min(d, LANCZOS_ITERS)
            lo, hi = lanczos_extremes(hvp_operator(self.objective, theta, X, y, l2=self.l2), d, iters=k,
                                      generator=gen, dtype=theta.dtype, device=theta.device)
            method = f"Lanczos, {k} Hessian-vector products (Ritz values: may under-estimate |lambda|)"
        return {"H": H, "lambda_min": lo, "lambda_max": hi, "norm": max(abs(lo), abs(hi)), "method": method}

    def _scale(self) -> float:
        return float(self.hessian_scale) if self.hessian_scale is not None else self.constants_["L"].value + self.lam_

    # -- certificate ----------------------------------------------------------------------
    def certify(self, forget_size: int, epsilon: float, delta: float, mechanism: str = "analytic") -> Certificate:
        """(ε, δ) certificate of Prop. 4.1, Eq. (11) (Prop. 4.2 for sequential requests)."""
        self._check_fitted()
        n, m, d = int(self.X_.shape[0]), int(forget_size), self.objective.dim
        if not 0 < m < n:
            raise InvalidInput("forget_size", f"an integer with 0 < m < n (n={n})", forget_size)
        warnings: list[str] = []
        valid = True
        if self.last_ is None:
            steps = [{"hessian_norm": self.spectrum_fit_["norm"], "lambda_min": self.spectrum_fit_["lambda_min"],
                      "spectrum_method": self.spectrum_fit_["method"], "diverged": False}]
            warnings.append("unlearn() has not run: the Hessian spectrum is that of the full-data loss "
                            "at w*, not of the retained loss")
        else:
            steps = self.last_["steps"]
        lam = self.lam_
        L, M, G = self.constants_["L"], self.constants_["M"], self.constants_["G"]
        hnorm = max(s["hessian_norm"] for s in steps)
        lmin_measured = min(s["lambda_min"] for s in steps)
        method = steps[0]["spectrum_method"]
        if "lambda_min" in self.constants_:
            lmin = self.constants_["lambda_min"]
        elif self.objective.is_linear:
            lmin = Constant("lambda_min", self.l2, "analytic",
                            "lower bound on the smallest eigenvalue of the retained-loss Hessian: the "
                            "logistic loss is convex, so the Hessian is >= l2 I for every theta",
                            {"measured": lmin_measured, "estimator": method})
        else:
            lmin = Constant("lambda_min", lmin_measured, "estimated",
                            "smallest eigenvalue of the retained-loss Hessian (plus l2) at the point of "
                            "each Newton step (the minimum over sequential steps)", {"estimator": method})
        hn = Constant("||H||", hnorm, "estimated",
                      "spectral norm of the retained-loss Hessian (plus l2) at the point of each Newton "
                      "step (the maximum over sequential steps); only the condition lambda > ||H|| uses it",
                      {"estimator": method})
        lissa_path = self.solver == "lissa"
        rho = (self.rho if self.rho is not None else delta / 2.0) if lissa_path else 0.0
        # -- conditions of the theorem
        if not lam > hnorm:
            valid = False
            warnings.append(f"lambda = {lam:.6g} is not above the Hessian norm ||H_w*|| = {hnorm:.6g}: "
                            "Theorems 3.4/3.6 and Proposition 4.1 require lambda > ||H_w*||; the "
                            "certificate is not issued")
        if not lam + lmin.value > 0:
            valid = False
            warnings.append(f"lambda + lambda_min = {lam + lmin.value:.6g} <= 0: H + lambda I is not "
                            "positive definite and the bound is infinite")
        theta_norm = float(torch.linalg.vector_norm(self.theta_))
        if theta_norm > self.C * (1 + 1e-9):
            valid = False
            warnings.append(f"||w*|| = {theta_norm:.6g} exceeds C = {self.C:g}")
        for s in steps:
            if s.get("start_norm", 0.0) > self.C * (1 + 1e-9):
                valid = False
                warnings.append(f"sequential request {s['request']} starts from ||w~|| = "
                                f"{s['start_norm']:.6g} > C = {self.C:g}: the 2C bound of Prop. 4.2 fails")
        # k = (L + λ)/(λ + λ_min) assumes the scale is L + λ; a larger scale slows the recursion
        # in proportion, so the condition is checked with max(H, L + λ) in place of L + λ.
        depth_needed = cns_depth_required(max(L.value, self._scale() - lam), lam, lmin.value)
        exact = [Constant("C", self.C, "enforced", "norm bound: every training step is projected onto "
                          "||theta|| <= C (PGD), for the original and the retrained model"),
                 Constant("lambda", lam, "enforced", "local convex coefficient added to the Hessian only"
                          + (f" (chosen as {LAM_MARGIN} x ||grad^2 L(w*, D)|| = {LAM_MARGIN} x "
                             f"{self.spectrum_fit_['norm']:.6g})" if self.lam is None else "")),
                 Constant("d", float(d), "enforced", "number of parameters"),
                 Constant("n", float(n), "enforced", "training records |D| (counted)"),
                 Constant("m", float(m), "enforced", "deleted records |D_u| (counted)")]
        if lissa_path:
            scale = self._scale()
            exact += [Constant("s", float(self.depth), "enforced", "LiSSA recursion depth"),
                      Constant("H_scale", scale, "enforced", "LiSSA scale H" + (" = L + lambda" if self.hessian_scale is None else "")),
                      Constant("rho", rho, "enforced", "LiSSA failure probability; the Gaussian is "
                               "calibrated at delta - rho")]
            if self.depth < depth_needed:
                valid = False
                warnings.append(f"LiSSA depth s = {self.depth} is below 2k ln k = {depth_needed:.6g} "
                                f"(k = max(H, L+lambda)/(lambda+lambda_min)) required by Theorem 3.6 / Prop. 4.1")
            if scale < L.value + lam:
                valid = False
                warnings.append(f"LiSSA scale H = {scale:.6g} is below L + lambda = {L.value + lam:.6g}: "
                                "Prop. 3.5 needs H >= ||grad^2 l(w*, x) + lambda I|| for every sample")
            if any(s.get("diverged") for s in steps):
                valid = False
                warnings.append("the LiSSA recursion diverged (||P_j|| grew beyond (j+1)||v||)")
            if not rho < delta:
                valid = False
                warnings.append(f"rho = {rho:g} is not below delta = {delta:g}: no room for the Gaussian")
        retrain_residual = getattr(self, "retrain_residual_", None)
        if retrain_residual is not None and retrain_residual > G.value * (1 + 1e-9):
            valid = False
            warnings.append(f"the retrained model's residual gradient {retrain_residual:.6g} exceeds "
                            f"G = {G.value:.6g}: Proposition 4.1's assumption fails")
        # -- the bound
        if lissa_path:
            sens = cns_sensitivity(self.C, M.value, L.value, lam, lmin.value, G.value, d, rho, self.bound)
            err = cns_lissa_error(L.value, lam, lmin.value, d, rho, self.bound)
            theorem = ("Zhang et al. 2024, Proposition 4.1, Eq. (11) ("
                       + ("corrected" if self.bound == "corrected" else "pre-correction")
                       + "): Delta = (2C(MC+lambda)+G)/(lambda+lambda_min) + (16 sqrt(ln(d/rho))"
                       + ("(lambda+L)" if self.bound == "corrected" else "")
                       + "/(lambda+lambda_min) + 1/16)(2LC+G), w.p. >= 1 - rho")
        else:
            sens = cns_exact_newton_bound(self.C, M.value, lam, lmin.value, G.value)
            err = 0.0
            theorem = ("Zhang et al. 2024, Theorem 3.4, Eq. (7) with the residual-gradient term of "
                       "Proposition 4.1 (exact Cholesky inverse, no LiSSA term): "
                       "Delta = (2C(MC+lambda)+G)/(lambda+lambda_min)")
        constants = [L, M, lmin, G, hn, *exact]
        sequential = len(steps) > 1 or "request" in steps[0]
        if self.gradient == "forget" and not sequential:  # Algorithm 2 always uses the retained gradient
            res = Constant("||grad L(w*, D)||", self.residual_, "estimated",
                           "residual gradient of training, measured at w* (enters the forget-set shortcut's "
                           "extra error)")
            constants.append(res)
            sens += cns_forget_trick_term(n, m, self.residual_, lam, lmin.value, err)
            theorem += " + (n/(n-m))(1/(lambda+lambda_min) + LiSSA error)||grad L(w*, D)|| (forget-set shortcut)"
        if sequential:
            theorem += f"; sequential requests (Prop. 4.2): the same bound for each of {len(steps)} releases"
        if math.isinf(sens):
            valid = False
            sigma = math.inf
        else:
            sigma = sigma_for(epsilon, delta - rho, sens, mechanism) if rho < delta else math.inf
        if any(c.provenance in ("estimated", "assumed") for c in constants):
            names = ", ".join(c.name for c in constants if c.provenance in ("estimated", "assumed"))
            warnings.append(f"the certificate is conditional on estimated or assumed constants ({names})")
        theorem += (f"; Gaussian noise by the {mechanism} mechanism"
                    + (" (Balle & Wang 2018)" if mechanism == "analytic" else " (Theorem 2.3)")
                    + (" at delta - rho" if lissa_path else ""))
        return Certificate(
            method=self.name, epsilon=float(epsilon), delta=float(delta), sigma=float(sigma),
            sensitivity=float(sens), mechanism=mechanism, theorem=theorem, constants=constants,
            assumptions=list(self.assumptions), warnings=warnings, valid=valid,
        )

    def hyperparameters(self) -> dict:
        return {"steps": self.steps, "eta": getattr(self, "eta_", self.eta), "eta_requested": self.eta,
                "C": self.C, "l2": self.l2, "lam": getattr(self, "lam_", self.lam), "lam_requested": self.lam,
                "solver": self.solver, "depth": self.depth, "repeats": self.repeats,
                "hessian_batch": self.hessian_batch,
                "hessian_scale": self._scale() if hasattr(self, "lam_") else self.hessian_scale,
                "rho": self.rho, "bound": self.bound, "gradient": self.gradient,
                "constant_overrides": dict(self.constant_overrides), "seed": self.seed,
                "last_unlearn": _jsonable(self.last_)}

    def _check_fitted(self) -> None:
        if getattr(self, "theta_", None) is None:
            raise RuntimeError("ConstrainedNewtonStep.fit must be called first")


# -- estimator of the Hessian-Lipschitz constant --------------------------------------------------
def _estimate_hessian_lipschitz(objective: Objective, X: Tensor, y: Tensor, points: list[Tensor],
                                gen: torch.Generator, records: int = 64, iters: int = 12,
                                safety: float = SAFETY) -> Constant:
    """M ≈ safety × max over records and points of ‖∇³f_z(θ)‖ (higher-order power method).

    For a symmetric 3-tensor T = ∇³f_z(θ), ‖∇²f_z(θ₁) − ∇²f_z(θ₂)‖ <= sup_seg ‖T‖·‖θ₁ − θ₂‖ and
    ‖T‖ = sup_{‖u‖=1} ‖T(·, u, u)‖ (Banach). T(·, u, u) = ∇_θ(uᵀ∇²f_z(θ)u) by automatic
    differentiation; u ← T(·, u, u)/‖T(·, u, u)‖, keeping the largest norm seen (a lower
    estimate of the supremum, hence the safety factor and the provenance ``estimated``).
    """
    idx = torch.randperm(X.shape[0], generator=gen)[:records].to(X.device)
    Xs, ys = X[idx], y[idx]

    def contraction(theta: Tensor, x: Tensor, t: Tensor, u: Tensor) -> Tensor:
        xb, tb = x.unsqueeze(0), t.unsqueeze(0)

        def quad(th: Tensor) -> Tensor:
            g = lambda s: grad(objective.loss)(s, xb, tb)  # noqa: E731
            return torch.dot(u, jvp(g, (th,), (u,))[1])

        return grad(quad)(theta)

    def one(theta: Tensor, x: Tensor, t: Tensor, u0: Tensor) -> Tensor:
        u = u0 / torch.linalg.vector_norm(u0)
        best = torch.zeros((), dtype=theta.dtype, device=theta.device)
        for _ in range(iters):
            w = contraction(theta, x, t, u)
            nw = torch.linalg.vector_norm(w)
            best = torch.maximum(best, nw)
            u = w / (nw + 1e-300)
        return best

    samples = []
    for theta in points:
        u0 = torch.randn((len(idx), theta.numel()), generator=gen, dtype=theta.dtype).to(theta.device)
        samples.append(vmap(one, in_dims=(None, 0, 0, 0))(theta, Xs, ys, u0))
    return estimated_constant(
        "M", torch.cat(samples).detach().cpu().numpy(), safety_factor=safety,
        description="per-sample Hessian-Lipschitz constant, estimated: max third-derivative norm "
        "||grad^3 f_z(theta)|| by a higher-order power method over a random subset of records at "
        "sampled iterates, times a safety factor (Assumption 3.2)",
        estimator=f"higher-order power method ({iters} steps) on {len(idx)} records at {len(points)} iterates",
    )


def _merge_estimates(a: Constant, b: Constant) -> Constant:
    """One estimated constant from two sampled maxima of the same supremum."""
    da, db = a.diagnostics, b.diagnostics
    diag = {"estimator": f"{da.get('estimator')}; {db.get('estimator')}",
            "n_samples": int(da.get("n_samples", 0)) + int(db.get("n_samples", 0)),
            "max": max(da.get("max", -math.inf), db.get("max", -math.inf)),
            "safety_factor": da.get("safety_factor")}
    return Constant(a.name, max(a.value, b.value), "estimated", a.description, diag)


# -- validation helpers ----------------------------------------------------------------------------


def _jsonable(obj):
    if isinstance(obj, dict):
        return {k: _jsonable(v) for k, v in obj.items() if k != "H"}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, Tensor):
        return obj.tolist()
    return obj
