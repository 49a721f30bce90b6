"""CureNewton: unlearning by one cubic-regularised Newton step (uncertified).

Bui, Lu, Sim, Ng & Low, "On Newton's Method to Unlearn Neural Networks".

* Learning A: minimise L_D(w) = (1/n) Σ ℓ(x; w) + C(w) with C(w) = (l2/2)‖w‖² (the paper's
  weight decay, kept in g and H). Here: full-batch gradient descent with a constant step η for T
  steps from θ_0 (the paper: Adam on minibatches).
* Unlearning U (Sec. 5, Eq. 4–5; Appendix B, Algorithm 1): minimise the cubic model of the
  retained loss around w*,
  ⟨g, Δ⟩ + ½⟨HΔ, Δ⟩ + (L/3)‖Δ‖³ with g = ∇L_{D_r}(w*), H = ∇²L_{D_r}(w*) (Hessian 2L-Lipschitz),
  whose minimiser is the damped Newton step w = w* − (H + αL·I)⁻¹ g with α = ‖w − w*‖, α found by
  Newton's method on the secular equation 1/‖Δ(γ)‖ = L/γ (γ = αL), one Cholesky factorisation
  of H + γI per iteration, started just above −λ_min(H). Small models only (d×d Hessian).
* SCureNewton (Appendix C, Algorithm 2): stochastic cubic regularisation (Tripuraneni et al.
  2018) from w* on D_r: k_outer steps, each with a minibatch gradient, minibatch
  Hessian-vector products, a Cauchy-point start and k_inner gradient steps on the cubic model.
  For larger models.

No privacy theorem exists (the paper's Sec. 7 lists certification as future work). The method is
reported as *uncertified*; a user may ask for Gaussian output noise (``output_noise``), which is
then audited empirically only.

Errata applied (digest seed-002 §3.4–3.5, §10):

1. Alg. 1 lines 10/19 read "(𝐋𝐋ᵀ)⁻¹Δ = g"; the intended solve is 𝐋𝐋ᵀΔ = g.
2. The Newton update on α in Sec. 5.2 has the wrong sign; we use Alg. 1's form, Newton on
   φ(γ) = 1/‖Δ(γ)‖ − L/γ with the exact derivative ‖𝐋⁻¹Δ‖²/‖Δ‖³ + L/γ², monotone from the left.
3. Case 2 (the hard case) is garbled in the paper; we keep γ = −λ_d (α = −λ_d/L) and add τ·v_d
   with ‖Δ + τ v_d‖ = α (Cartis, Gould & Toint 2011 §6.1), α unchanged.
4. Alg. 2 line 7 "w_t = w_{t−1} − Δ" ascends the loss: the update is w_t = w_{t−1} + Δ.
5. Alg. 2 line 5 uses the *Hessian* batch B_2 (printed B_1).
6. The Cauchy radius of Alg. 2 line 9 is for an (M/6)‖Δ‖³ model while the inner gradient steps
   descend (M/3)‖Δ‖³: kept as printed by default, ``cauchy="consistent"`` uses 2M in line 9.
"""

from __future__ import annotations

import math
from typing import Any, TypedDict

import torch
from torch import Tensor

from certify.certificate import Certificate, Constant, issue
from certify.errors import Choice, Integer, InvalidInput, Optional, Real, require_positive
from certify.params import Param
from unlearners.base import Precision, Unlearner
from unlearners.footprint import meta, peak_bytes, with_margin
from unlearners.linalg import explicit_hessian, hvp_operator
from unlearners.objective import Objective, regularized_grad
from unlearners.smoothness import ConstantSampler, model_constants


class MemoryPlan(TypedDict):
    """Bytes held beyond the inputs (:meth:`CureNewton.memory_estimate`), and the dense Hessian's
    chunk of columns they were planned with (None: the stochastic variant builds no Hessian)."""

    stored: int
    working: int
    bound: int
    hessian_chunk: int | None


VARIANTS = ("auto", "dense", "stochastic")
#: Default cap on what fitting and unlearning hold (stored state and working memory): 2 GiB.
DEFAULT_MEMORY_CAP = 2**31
CAUCHY = ("printed", "consistent")


# -- Algorithm 1 -------------------------------------------------------------------------------
def cure_newton_solve(
    H: Tensor, g: Tensor, L: float, *, tol: float = 1e-8, eig_perturbation: float = 1e-8, max_iter: int = 50
) -> tuple[Tensor, float, dict]:
    """Algorithm 1's TrustRegionSolver (errata applied): Δ = (H + αL·I)⁻¹ g with ‖Δ‖ = α.

    Minimises the cubic model ⟨g, −Δ⟩ + ½⟨HΔ, Δ⟩ + (L/3)‖Δ‖³ over the step −Δ (the new
    parameters are w* − Δ).

    Parameters
    ----------
    H:
        Symmetric d×d Hessian of the retained loss (float64 recommended).
    g:
        Gradient of the retained loss, shape (d,).
    L:
        The paper's L > 0 (Hessian 2L-Lipschitz; cubic weight L/3).
    tol:
        Stop when |‖Δ‖ − α| <= tol·α.
    eig_perturbation:
        ε of line 7: γ_0 = max(0, −λ_d) + ε·max(1, |λ_d|).
    max_iter:
        T, the most Newton iterations on γ.

    Returns
    -------
    (Δ, α, info):
        info = {"case" (1: boundary root, 2: hard case, 0: interior/tiny step), "iterations",
        "lambda_min" (λ_d), "gamma", "secular_residual" (|‖Δ‖ − α|)}.
    """
    L = require_positive("hessian_lipschitz", L)
    d = g.numel()
    eye = torch.eye(d, dtype=H.dtype, device=H.device)
    evals, evecs = torch.linalg.eigh(H)
    lam_d, v_d = float(evals[0]), evecs[:, 0]
    eps = eig_perturbation * max(1.0, abs(lam_d))
    gamma = max(0.0, -lam_d) + eps
    chol, info = torch.linalg.cholesky_ex(H + gamma * eye)
    while int(info) != 0:  # rounding in λ_d: push γ up until H + γI factorises
        eps *= 10.0
        gamma = max(0.0, -lam_d) + eps
        chol, info = torch.linalg.cholesky_ex(H + gamma * eye)
    delta = torch.cholesky_solve(g.unsqueeze(-1), chol).squeeze(-1)  # erratum 1: 𝐋𝐋ᵀΔ = g
    alpha = gamma / L
    iterations, case = 0, 0
    norm = float(torch.linalg.vector_norm(delta))
    if norm > alpha:  # Case 1: the root γ* > γ_0 of φ(γ) = 1/‖Δ(γ)‖ − L/γ
        case = 1
        for iterations in range(1, max_iter + 1):  # noqa: B007 (read after the loop)
            u = torch.linalg.solve_triangular(chol, delta.unsqueeze(-1), upper=False).squeeze(-1)
            phi = 1.0 / norm - 1.0 / alpha
            dphi = float(u @ u) / norm**3 + L / gamma**2  # = ‖u‖²/‖Δ‖³ + 1/(γα)
            gamma = gamma - phi / dphi  # erratum 2: Newton on φ in γ, monotone from the left
            alpha = gamma / L
            chol = torch.linalg.cholesky(H + gamma * eye)
            delta = torch.cholesky_solve(g.unsqueeze(-1), chol).squeeze(-1)
            norm = float(torch.linalg.vector_norm(delta))
            if abs(norm - alpha) <= tol * alpha:
                break
    elif abs(norm - alpha) > tol * max(alpha, 1e-300) and lam_d < 0:
        # Case 2, the hard case (erratum 3): γ = −λ_d, Δ = pseudo-inverse step on the complement
        # of v_d's eigenspace plus τ·v_d with ‖Δ + τ v_d‖ = α; α = −λ_d/L is kept.
        case = 2
        gamma = -lam_d
        alpha = gamma / L
        shifted = evals - lam_d
        keep = shifted > eps
        coef = (evecs.T @ g)[keep] / shifted[keep]
        delta = evecs[:, keep] @ coef
        base = float(torch.linalg.vector_norm(delta))
        tau = math.sqrt(max(alpha**2 - base**2, 0.0))
        # lower model value: the step is −(Δ + τ v_d), so pick τ·⟨g, v_d⟩ >= 0
        if float(g @ v_d) < 0:
            tau = -tau
        delta = delta + tau * v_d
        norm = float(torch.linalg.vector_norm(delta))
    # else: λ_d >= 0 and ‖Δ(γ_0)‖ <= α_0 ≈ 0: the (regularised) Newton step is already tiny.
    return (
        delta,
        alpha,
        {
            "case": case,
            "iterations": iterations,
            "lambda_min": lam_d,
            "gamma": gamma,
            "secular_residual": abs(norm - alpha),
        },
    )


def cubic_model(H: Tensor, g: Tensor, step: Tensor, L: float) -> float:
    """⟨g, s⟩ + ½⟨Hs, s⟩ + (L/3)‖s‖³ for a step s = w − w* (Eq. 4 without the constant)."""
    return float(g @ step + 0.5 * step @ (H @ step) + (L / 3.0) * torch.linalg.vector_norm(step) ** 3)


# -- Algorithm 2 -------------------------------------------------------------------------------
def descent_cubic_solver(
    hvp,
    g: Tensor,
    M: float,
    sigma: float,
    eta: float,
    k_inner: int,
    generator: torch.Generator,
    cauchy: str = "printed",
) -> Tensor:
    """Algorithm 2's DescentCubicSolver: Cauchy start, then k_inner gradient steps on the cubic model.

    Returns Δ, a descent step: the caller updates w ← w + Δ (erratum 4).
    """
    gn = float(torch.linalg.vector_norm(g))
    if gn == 0.0:
        return torch.zeros_like(g)
    rho = M if cauchy == "printed" else 2.0 * M  # erratum 6: (M/6) vs (M/3) cubic weight
    beta = float(g @ hvp(g)) / (rho * gn**2)
    radius = -beta + math.sqrt(beta**2 + 2.0 * gn / rho)
    delta = -radius * g / gn
    if sigma > 0:
        xi = torch.randn(g.numel(), generator=generator, dtype=g.dtype).to(g.device)
        g = g + sigma * xi / torch.linalg.vector_norm(xi)  # ξ uniform on the unit sphere
    for _ in range(k_inner):
        delta = delta - eta * (hvp(delta) + g + M * torch.linalg.vector_norm(delta) * delta)
    return delta


class CureNewton(Unlearner):
    """CureNewton / SCureNewton (Bui et al.): cubic-regularised Newton unlearning, uncertified.

    Options (declared in ``hyperparameters``)
    -----------------------------------------
    steps, eta:
        T full-batch gradient steps of A (and of the retrain) with constant step η; ``eta=None``
        uses 1/L with L the per-sample smoothness at θ_0 (closed form for logistic regression,
        estimated otherwise).
    l2:
        Weight decay of the trained objective, included in g and H (paper: 0.005 on FashionMNIST).
    hessian_lipschitz:
        The paper's L: the retained-loss Hessian is 2L-Lipschitz, cubic weight L/3
        (paper: 5; its App. G.1 suggests keeping L above about 70).
    variant:
        ``"dense"`` (Algorithm 1: explicit Hessian, α by the secular Newton root-find with
        Cholesky), ``"stochastic"`` (Algorithm 2, SCureNewton) or ``"auto"`` (dense when
        d <= ``dense_max_dim``).
    tol, eig_perturbation, max_iter:
        Algorithm 1's stopping tolerance (relative, on |‖Δ‖ − α|), the eigenvalue perturbation ε
        and the most Newton iterations T (not given in the paper).
    stochastic_M, grad_batch, hessian_batch, outer_steps, inner_steps, inner_eta, perturbation, cauchy:
        Algorithm 2's M, |B_1|, |B_2|, k_outer, k_inner, η, σ (a saddle-escape perturbation, not
        privacy noise) and the Cauchy-radius convention (paper, FashionMNIST: 1, 128, 64, 20, 5,
        0.01; σ not given, default 0).
    output_noise:
        Standard deviation of Gaussian noise added to the released model at the user's request;
        no theorem calibrates it (the certificate is never issued).
    memory_cap:
        Most bytes the method may hold at its largest step, checked before training
        (:meth:`memory_estimate`). The dense Hessian is built from Hessian-vector products over
        all retained records, a chunk of columns at a time, whose working memory grows with chunk
        × records × activations (3.5 GB for a 257-parameter MLP on Adult at linalg's default
        chunk): the chunk is halved until the step fits, and the fit is refused when one column
        at a time does not.
    seed:
        Seed of the minibatch draws and estimators.
    """

    name = "curenewton"
    title = "CureNewton: cubic-regularised Newton step (uncertified)"
    paper = (
        "Bui, Lu, Sim, Ng & Low, 'On Newton's Method to Unlearn Neural Networks' "
        "(Sec. 5, Eqs. 4-5; Appendix B, Algorithm 1 (CureNewton); Appendix C, Algorithm 2 (SCureNewton))"
    )
    certified = False
    precision = Precision(
        False,
        "no theorem (kind none, sigma given); float64 kept because its cubic-regularized"
        " Newton solves stop at a tolerance float32 may not reach",
    )
    assumptions = (
        "none for privacy: the paper has no certification theorem; the target is closeness to the "
        "retrained parameters, measured empirically",
        "the retained-loss Hessian is 2L-Lipschitz, so the cubic model upper-bounds the loss "
        "(Nesterov & Polyak 2006, Lemma 2)",
    )
    deviations = (
        "A is full-batch gradient descent with a constant step (the paper: Adam on minibatches)",
        "errata applied: the Cholesky solve LL^T Delta = g (printed inverted), Newton on the "
        "secular equation 1/||Delta|| = L/gamma with the correct sign, the standard trust-region "
        "hard case (alpha kept), SCureNewton's w <- w + Delta (printed minus) on the Hessian batch B_2",
        "SCureNewton's Cauchy radius is kept as printed (an (M/6) model against the (M/3) inner "
        "steps); cauchy='consistent' uses 2M",
        "the weight decay l2 is part of the objective, hence of g and H (the paper does not say)",
        "optional Gaussian output noise is not calibrated by any theorem: audited empirically only",
    )

    hyperparameters = (
        Param("steps", 1000, Integer(1), "T: full-batch gradient steps of A and of the retrain", audit="steps"),
        Param("eta", None, Optional(Real(gt=0), "for 1/L at theta_0"), "constant step size of A", audit="eta"),
        Param("l2", 5e-3, Real(ge=0), "weight decay of the trained objective (in g and H)"),
        Param("hessian_lipschitz", 5.0, Real(gt=0), "L: the retained-loss Hessian is 2L-Lipschitz"),
        Param("variant", "auto", Choice(VARIANTS), "dense (Algorithm 1), stochastic (Algorithm 2) or auto"),
        Param("dense_max_dim", 2048, Integer(1), "largest d for the dense variant under auto"),
        Param("tol", 1e-8, Real(gt=0), "Algorithm 1's relative stopping tolerance"),
        Param("eig_perturbation", 1e-8, Real(gt=0), "Algorithm 1's eigenvalue perturbation"),
        Param("max_iter", 50, Integer(1), "Algorithm 1's Newton iterations on the secular equation"),
        Param("stochastic_M", 1.0, Real(gt=0), "Algorithm 2's M"),
        Param("grad_batch", 128, Integer(1), "Algorithm 2's gradient batch |B_1|"),
        Param("hessian_batch", 64, Integer(1), "Algorithm 2's Hessian batch |B_2|"),
        Param("outer_steps", 20, Integer(1), "Algorithm 2's k_outer"),
        Param("inner_steps", 5, Integer(0), "Algorithm 2's k_inner"),
        Param("inner_eta", 0.01, Real(gt=0), "Algorithm 2's inner step size"),
        Param("perturbation", 0.0, Real(ge=0), "Algorithm 2's saddle-escape perturbation (not privacy noise)"),
        Param("cauchy", "printed", Choice(CAUCHY), "Cauchy-radius convention of Algorithm 2"),
        Param("output_noise", 0.0, Real(ge=0), "std of uncalibrated Gaussian output noise (no theorem)"),
        Param(
            "memory_cap",
            DEFAULT_MEMORY_CAP,
            Integer(1),
            "most bytes fitting and unlearning may hold (stored state and working memory)",
        ),
        Param("seed", 0, Integer(0), "seed of the minibatch draws and estimators", audit="seed"),
    )

    def __init__(self, objective: Objective, **options: Any):
        super().__init__(objective, **options)
        self.last_: dict | None = None

    @property
    def resolved_variant(self) -> str:
        if self.variant != "auto":
            return self.variant
        return "dense" if self.objective.dim <= self.dense_max_dim else "stochastic"

    def _grad(self, theta: Tensor, X: Tensor, y: Tensor) -> Tensor:
        return regularized_grad(self.objective, theta, X, y, self.l2)

    # -- A ---------------------------------------------------------------------------------
    def _fit(self, X: Tensor, y: Tensor, theta0: Tensor) -> Tensor:
        """Full-batch gradient descent on L_D (mean loss + (l2/2)‖θ‖²) from θ_0."""
        self.memory_estimate_ = self._check_memory(X, y, theta0)
        self.theta0_ = theta0.clone()
        self.last_ = None
        if self.eta is None:
            gen = torch.Generator().manual_seed(self.seed)
            L = model_constants(
                self.objective,
                X,
                y,
                [theta0],
                generator=gen,
                which=("L",),
                records_for_smoothness=128,
                power_iterations=20,
            )["L"].value
            self.eta_ = 1.0 / (L + self.l2)
        else:
            self.eta_ = float(self.eta)
        #: (θ_T's storage and the forget set, H, g) of the last retained Hessian and gradient
        self._hg_cache: tuple[tuple[int, tuple[int, ...]], Tensor, Tensor] | None = None
        self.theta_ = self._descend(theta0, X, y)
        return self.theta_

    def pinned_options(self) -> dict[str, Any]:
        return {"eta": self.eta_} if getattr(self, "eta_", None) is not None else {}

    # -- memory, before training ---------------------------------------------------------------
    def memory_estimate(self, X: Tensor, y: Tensor, theta0: Tensor, hessian_chunk: int | None = None) -> MemoryPlan:
        """An upper bound of the bytes the method holds beyond its inputs at its largest step.

        Each step runs on meta tensors of the real shapes (:func:`unlearners.footprint.peak_bytes`):
        the full-batch gradient of A; the estimate of L at θ_0 (``eta=None``); and U on at most n
        retained records: dense, the Hessian built ``hessian_chunk`` columns at a time (its
        per-chunk intermediates are what grow), then the gradient beside it and the solve (the
        eigendecomposition, identity, shifted matrix and Cholesky factor: 5 d x d besides H, by
        count, since the secular iteration cannot run on meta tensors); stochastic, one outer
        step on |B_1| and |B_2| records. Stored: the retained copy of the data and a few
        d-vectors. ``hessian_chunk`` None: linalg's default. Returns ``{"stored", "working",
        "bound", "hessian_chunk"}``, ``bound`` with the margins of :func:`unlearners.footprint.with_margin`.
        """
        key = (tuple(X.shape), X.dtype, tuple(y.shape), theta0.dtype, hessian_chunk, repr(sorted(self.options.items())))
        cache: dict[tuple, MemoryPlan] = self.__dict__.setdefault(
            "_memory_plans", {}
        )  # a worker refitted per trial asks again
        if key not in cache:
            cache[key] = self._memory_plan(X, y, theta0, hessian_chunk)
        return cache[key].copy()

    def _memory_plan(self, X: Tensor, y: Tensor, theta0: Tensor, hessian_chunk: int | None) -> MemoryPlan:
        n, d = int(X.shape[0]), self.objective.dim
        es, dt = theta0.element_size(), theta0.dtype
        w = meta((d,), dt)
        Xm, ym = meta(tuple(X.shape), X.dtype), meta(tuple(y.shape), y.dtype)
        stored = X.numel() * X.element_size() + y.numel() * y.element_size() + 6 * d * es
        grad_peak = peak_bytes(self._grad, w, Xm, ym)
        phases = [grad_peak]
        if self.eta is None and not self.objective.is_linear:
            sampler = ConstantSampler(
                self.objective, Xm, ym, generator=torch.Generator(), records_for_smoothness=128, power_iterations=1
            )  # one step's peak is every step's
            phases.append(peak_bytes(sampler._hessian_norms, w))
        chunk = None
        if self.resolved_variant == "dense":
            chunk = hessian_chunk or max(1, min(d, (1 << 21) // max(1, n)))  # linalg.explicit_hessian's default
            H = peak_bytes(explicit_hessian, self.objective, w, Xm, ym, l2=self.l2, chunk_size=chunk)
            phases += [H, d * d * es + grad_peak, 6 * d * d * es]
        else:
            b1, b2 = min(self.grad_batch, n), min(self.hessian_batch, n)

            def outer_step(w: Tensor) -> Tensor:
                g = self._grad(w, Xm[:b1], ym[:b1])
                return hvp_operator(self.objective, w, Xm[:b2], ym[:b2], l2=self.l2)(g) + g

            phases.append(peak_bytes(outer_step, w) + 4 * d * es)  # g, Δ and the inner steps' vectors
        working = max(phases)
        return MemoryPlan(stored=stored, working=working, bound=with_margin(stored + working), hessian_chunk=chunk)

    def _check_memory(self, X: Tensor, y: Tensor, theta0: Tensor) -> MemoryPlan:
        """Halve the dense Hessian's chunk of columns until the step fits ``memory_cap``; refuse,
        before training, what does not fit with one column at a time."""
        plan = self.memory_estimate(X, y, theta0)
        while plan["bound"] > self.memory_cap and (chunk := plan["hessian_chunk"]) is not None and chunk > 1:
            plan = self.memory_estimate(X, y, theta0, hessian_chunk=chunk // 2)
        self.hessian_chunk_ = plan["hessian_chunk"]
        if plan["bound"] <= self.memory_cap:
            return plan
        hint = ""
        if self.resolved_variant == "dense":
            stochastic = self.replica(variant="stochastic").memory_estimate(X, y, theta0)["bound"]
            hint = (
                f"Or use -o variant=stochastic (Algorithm 2: Hessian-vector products on hessian_batch "
                f"records), which would hold about {stochastic} bytes."
            )
        raise InvalidInput(
            "memory_cap",
            f"at least {plan['bound']} bytes for {self.resolved_variant} CureNewton on {X.shape[0]} "
            f"records (d = {self.objective.dim}; stored {plan['stored']}, working memory {plan['working']} "
            "before margins)",
            self.memory_cap,
            hint=hint or None,
        )

    def _retrain(self, forget: Tensor) -> Tensor:
        X_r, y_r = self.retained(forget)
        return self._descend(self.theta0_, X_r, y_r)

    def _descend(self, theta0: Tensor, X: Tensor, y: Tensor) -> Tensor:
        theta = theta0.clone()
        for _ in range(self.steps):
            theta = theta - self.eta_ * self._grad(theta, X, y)
        return theta

    # -- U ---------------------------------------------------------------------------------
    def _unlearn(self, forget: Tensor) -> Tensor:
        """One CureNewton step (Algorithm 1) or SCureNewton (Algorithm 2) on the retained loss."""
        X_r, y_r = self.retained(forget)
        theta = self.theta_
        if self.resolved_variant == "dense":
            H, g = self._retained_hessian_gradient(forget)
            delta, alpha, info = cure_newton_solve(
                H,
                g,
                self.hessian_lipschitz,
                tol=self.tol,
                eig_perturbation=self.eig_perturbation,
                max_iter=self.max_iter,
            )
            new = theta - delta
            info.update(
                variant="dense",
                alpha=alpha,
                gradient_norm=float(torch.linalg.vector_norm(g)),
                model_value=cubic_model(H, g, -delta, self.hessian_lipschitz),
            )
        else:
            new, info = self._scure(theta, X_r, y_r)
        info["update_norm"] = float(torch.linalg.vector_norm(new - theta))
        self.last_ = info
        return new

    def _scure(self, theta: Tensor, X_r: Tensor, y_r: Tensor) -> tuple[Tensor, dict]:
        gen = torch.Generator().manual_seed(self.seed + 1)
        n = X_r.shape[0]
        w = theta.clone()
        for _ in range(self.outer_steps):
            b1 = torch.randperm(n, generator=gen)[: self.grad_batch].to(X_r.device)
            b2 = torch.randperm(n, generator=gen)[: self.hessian_batch].to(X_r.device)  # erratum 5
            g = self._grad(w, X_r[b1], y_r[b1])
            hvp = hvp_operator(self.objective, w, X_r[b2], y_r[b2], l2=self.l2)
            delta = descent_cubic_solver(
                hvp, g, self.stochastic_M, self.perturbation, self.inner_eta, self.inner_steps, gen, self.cauchy
            )
            w = w + delta  # erratum 4
        return w, {"variant": "stochastic", "outer_steps": self.outer_steps, "inner_steps": self.inner_steps}

    # -- comparison baselines (Sec. 4.2) -----------------------------------------------------
    def damped_newton_step(self, forget: Tensor, gamma: float = 1e-3) -> Tensor:
        """Damped-Newton (Sec. 4.2, Remark 4.2): w* − (H_r + γI)⁻¹ g_r, γ = 1e-3 by default.

        Solved with a general (LU) solver: H_r + γI may be indefinite, as in the paper's baseline.
        """
        H, g = self._retained_hessian_gradient(self.forget_indices(forget))
        eye = torch.eye(H.shape[0], dtype=H.dtype, device=H.device)
        return self.theta_ - torch.linalg.solve(H + require_positive("gamma", gamma) * eye, g)

    def pinv_newton_step(self, forget: Tensor) -> Tensor:
        """PINV-Newton (Sec. 4.2, Remark 4.1): w* − H_r⁺ g_r (``torch.linalg.pinv`` default cutoff)."""
        H, g = self._retained_hessian_gradient(self.forget_indices(forget))
        return self.theta_ - torch.linalg.pinv(H, hermitian=True) @ g

    def _retained_hessian_gradient(self, forget: Tensor) -> tuple[Tensor, Tensor]:
        """H_r and g_r at w* (cached for the last forget set, so the baselines reuse them)."""
        self._check_fitted()
        key = (self.theta_.data_ptr(), tuple(sorted(torch.as_tensor(forget).reshape(-1).tolist())))
        cached = getattr(self, "_hg_cache", None)
        if cached is not None and cached[0] == key:
            return cached[1], cached[2]
        X_r, y_r = self.retained(forget)
        H = explicit_hessian(
            self.objective, self.theta_, X_r, y_r, l2=self.l2, chunk_size=getattr(self, "hessian_chunk_", None)
        )
        g = self._grad(self.theta_, X_r, y_r)
        self._hg_cache = (key, H, g)
        return H, g

    # -- no theorem --------------------------------------------------------------------------
    def _certify(self, forget: Tensor, epsilon: float, delta: float, mechanism: str) -> Certificate:
        """Never issued: the paper has no privacy theorem. σ is the requested output noise."""
        return issue(
            self.name,
            "none",
            epsilon=epsilon,
            delta=delta,
            mechanism=mechanism,
            output_noise=self.output_noise,
            theorem="none: Bui et al. state no certified-removal or differential-privacy guarantee "
            "(Sec. 7 leaves it to future work)",
            constants=[
                Constant(
                    "sigma",
                    float(self.output_noise),
                    "enforced",
                    "output noise requested by the user and added to the release; no theorem calibrates it",
                )
            ],
            assumptions=self.assumptions,
        )

    def report_hyperparameters(self) -> dict:
        return {
            "steps": self.steps,
            "eta": getattr(self, "eta_", self.eta),
            "eta_requested": self.eta,
            "l2": self.l2,
            "hessian_lipschitz": self.hessian_lipschitz,
            "variant": self.variant,
            "resolved_variant": self.resolved_variant,
            "tol": self.tol,
            "eig_perturbation": self.eig_perturbation,
            "max_iter": self.max_iter,
            "stochastic_M": self.stochastic_M,
            "grad_batch": self.grad_batch,
            "hessian_batch": self.hessian_batch,
            "outer_steps": self.outer_steps,
            "inner_steps": self.inner_steps,
            "inner_eta": self.inner_eta,
            "perturbation": self.perturbation,
            "cauchy": self.cauchy,
            "output_noise": self.output_noise,
            "seed": self.seed,
            "last_unlearn": self.last_,
            "memory_cap": self.memory_cap,
            "hessian_chunk": getattr(self, "hessian_chunk_", None),
        }

    def _check_fitted(self) -> None:
        if getattr(self, "theta_", None) is None:
            raise RuntimeError("CureNewton.fit must be called first")
