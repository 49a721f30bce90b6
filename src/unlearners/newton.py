"""Certified removal by a Newton update (Guo, Goldstein, Hannun & van der Maaten, ICML 2020).

Guo et al., "Certified Data Removal from Machine Learning Models" (arXiv:1911.03030), for
L2-regularised binary logistic regression; formulas and their provenance in
:mod:`certify.bounds.guo`.

* Learning A (Algorithm 1 of the paper: loss perturbation): draw b ~ N(0, σ_b² I_d) and return
  the unique minimiser θ* of

      L_b(θ; D) = Σ_{i∈D} ℓ(θ; z_i) + (λ|D|/2)·||θ||² + bᵀθ,

  where ℓ(θ; (x, y)) = log(1 + e^{θᵀx̃}) − y·θᵀx̃ is the logistic loss on labels {0, 1},
  x̃ = (x, 1) when the model has a bias, and every coordinate of θ (bias included) is
  regularised. (The reference code minimises the same objective divided by |D|:
  mean loss + λ/2·||θ||² + bᵀθ/|D|.) A is Newton's method with a backtracking line search,
  run until ||∇L_b(θ; D)||/|D| ≤ ``tol``, so A(D) and the retrained A(D \\ Z) are optimal to
  rounding.
* Unlearning U (the Newton update removal mechanism, batch version): for the forget set Z,
  |Z| = m, D' = D \\ Z,

      Δ = mλθ* + Σ_{j∈Z} ∇ℓ(θ*; z_j),   H = ∇²L_b(θ*; D') = X'ᵀ diag(σ'(X'θ*)) X' + λ(n−m)I,
      θ⁻ = θ* + H⁻¹Δ,

  solved exactly (Cholesky, :func:`unlearners.linalg.dense_solve`). Sequential requests
  (:meth:`NewtonRemoval.unlearn_sequence`) apply the update from the previous model each time,
  as the reference code does.
* Certificate: the data-dependent gradient-residual bound of Corollary 1,
  ||∇L_b(θ⁻; D')|| ≤ γ·||X'||₂·||H⁻¹Δ||·||X'H⁻¹Δ||·R, accumulated over requests into β, and by
  λ(n−m)-strong convexity the parameter-space bound Δ_θ = β/(λ(n−m)) ≥ ||θ⁻ − A(D')||, which is
  the certificate's ``sensitivity``.

Two release modes (``output_noise``):

``output_noise=True`` (default)
    Publish θ⁻ + N(0, σ²I) with σ = sigma_for(ε, δ, Δ_θ) (analytic Gaussian mechanism by default).
    No loss perturbation unless ``loss_noise`` is given (b = 0): the certificate rests on the
    output noise alone, so b would only cost accuracy. This is the default because it is the
    mode an audit can test: the toolkit's realized ε, noise trials and attacks all model noise
    on the released parameters, whereas the randomness of b is drawn once per training.
``output_noise=False`` (the paper's mechanism)
    Publish θ⁻ itself (certificate σ = 0). The privacy comes from the objective perturbation b
    (Theorem 3): removals are certified while β ≤ ε' = σ_b·ε/c, c = √(2 ln(1.5/δ)) (classic) or
    ε' = σ_b/σ_analytic(ε, δ, 1) (analytic, default); past the budget the model must be
    retrained and the certificate is not issued. An output-noise audit of this mode reports an
    infinite realized ε: σ = 0 there, and the noise is in b, which the audit's trials do not redraw.

In both modes the bound is data-dependent (Corollary 1 on the actual D and Z), so σ, or the
decision to retrain, is itself a function of D and Z, as in the paper's protocol; Theorem 1's
data-independent worst case is available from :meth:`NewtonRemoval.worst_case_certificate` and
is several orders of magnitude larger.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor
from torch.func import jacfwd

from certify.bounds.guo import (
    GUO_GAMMA_LOGISTIC,
    guo_accumulated_residual,
    guo_bound,
    guo_budget,
    guo_c,
    guo_parameter_sensitivity,
    guo_residual_bound,
    guo_worst_case_residual,
)
from certify.certificate import Certificate, Constant, issue
from certify.constants import logistic_regression_constants
from certify.errors import Boolean, Integer, InvalidInput, Optional, Real, require_choice, require_positive
from certify.mechanisms import MECHANISMS
from certify.params import Param
from unlearners.base import Capabilities, Precision, Unlearner
from unlearners.linalg import dense_solve
from unlearners.modelcheck import SMOOTH, STATELESS
from unlearners.objective import Objective

#: Guo et al.'s reference code draws b with ``--std 10`` by default; used when the paper's
#: loss-perturbation mode is chosen without a ``loss_noise``.
PAPER_LOSS_NOISE = 10.0


class NewtonRemoval(Unlearner):
    """Certified removal by a Newton update (Guo et al. 2020) for L2-regularised binary LR.

    The model must be binary logistic regression: one linear layer with one output unit.

    Options (declared in ``hyperparameters``)
    -----------------------------------------
    l2:
        λ > 0, per record: the objective carries (λ|D|/2)·||θ||². Default 1e-3, the value of the
        authors' MNIST setting (``--lam 1e-3 --std 10``). The bound Δ_θ scales like 1/λ³, so a
        larger λ buys a much smaller noise at some cost in accuracy.
    loss_noise:
        σ_b, the standard deviation of the loss perturbation b ~ N(0, σ_b² I). ``None``: 0 when
        ``output_noise`` is True (the output noise certifies; b would only cost accuracy), and
        the reference code's default 10 when it is False.
    output_noise:
        True (default): release θ + N(0, σ²I) with σ calibrated to Δ_θ = β/(λ(n−m)).
        False: the paper's mechanism, no output noise, certified by Theorem 3 while β ≤ ε'.
    max_iter, tol:
        Newton iterations of A, and its stopping rule ||∇L_b(θ; D)||/|D| ≤ tol.
    seed:
        Seed of the draw of b (a CPU ``torch.Generator``).
    """

    name = "newton"
    title = "Certified removal (Newton update)"
    paper = (
        "Guo, Goldstein, Hannun & van der Maaten, 'Certified Data Removal from Machine Learning "
        "Models', ICML 2020 (Newton update removal, Theorem 1, Corollary 1, Theorems 2-3)"
    )
    certified = True
    precision = Precision(
        False,
        "the data-dependent gradient residual beta of the Newton step (Corollary 1) and "
        "the Hessian solve at the trained model, computed in the run's dtype: at float32 "
        "sigma moved by 1e-5 relative on 80 records (tests/test_dtype.py)",
    )
    model_requirements = frozenset({SMOOTH, STATELESS})
    assumptions = (
        "binary logistic regression (one linear layer, one logit); every parameter, bias "
        "included, is L2-regularised with lambda*|D|/2*||theta||^2",
        "A returns the unique minimiser of L_b(theta; D) = sum_i loss_i + lambda*|D|/2*||theta||^2 "
        "+ b.theta, and the retrained reference is A(D \\ Z) with the same b",
        "the second derivative of the loss is gamma-Lipschitz, gamma = 1/4 (logistic loss)",
        "output_noise=true: theta_U + N(0, sigma^2 I) with sigma calibrated to beta/(lambda(n-m)); "
        "output_noise=false: sigma_b fixed before training, b never released, and the model is "
        "retrained once the accumulated residual bound beta exceeds epsilon' (Theorem 3)",
    )
    deviations = (
        "default release adds Gaussian output noise calibrated to the parameter-space bound "
        "beta/(lambda(n-m)) (strong convexity), with b = 0; the paper's loss perturbation without "
        "output noise is output_noise=false (certificate sigma = 0)",
        "features need not have norm <= 1: Corollary 1 and Theorem 1 carry R = max ||(x, 1)|| "
        "(R = 1 in the paper); the bias is a regularised coordinate",
        "beta also counts the measured gradient at the trained optimum and each linear solve's "
        "residual (zero in exact arithmetic); ||X'||_2 is exact, not 20 power-iteration steps",
        "analytic Gaussian calibration by default; classic = Theorem 3's c = sqrt(2 ln(1.5/delta)), epsilon <= 1",
        "A is Newton's method with line search to ||grad||/n <= tol (the code: 100 L-BFGS steps); "
        "a forget set is removed by one batch Newton step, sequences by unlearn_sequence",
    )

    hyperparameters = (
        Param("l2", 1e-3, Real(gt=0), "lambda, per record: the objective carries (lambda|D|/2)||theta||^2"),
        Param(
            "loss_noise",
            None,
            Optional(Real(ge=0), "for 0 with output noise, else 10 (the reference code)"),
            "sigma_b, the std of the loss perturbation b",
        ),
        Param("output_noise", True, Boolean(), "release with Gaussian output noise (false: Theorem 3, sigma = 0)"),
        Param("max_iter", 100, Integer(1), "Newton iterations of A"),
        Param("tol", 1e-12, Real(gt=0), "A's stopping rule ||grad L_b||/|D| <= tol"),
        Param("seed", 0, Integer(0), "seed of the draw of b", audit="seed"),
    )
    capabilities = Capabilities(data_dependent_certificate=True)

    def __init__(self, objective: Objective, **options: Any):
        super().__init__(objective, **options)
        if not objective.is_linear or objective.n_outputs != 1:
            raise InvalidInput(
                "model",
                "binary logistic regression (a single linear layer with one output); "
                "Guo et al.'s certificate needs a strongly convex loss",
                _describe(objective),
            )
        self.gamma = GUO_GAMMA_LOGISTIC
        self.ledger_: list[dict] = []

    def _check_options(self) -> None:
        requested = self.options["loss_noise"]
        self.loss_noise_requested = requested
        self.loss_noise = requested if requested is not None else (0.0 if self.output_noise else PAPER_LOSS_NOISE)

    # -- learning A ------------------------------------------------------------------------
    def _fit(self, X: Tensor, y: Tensor, theta0: Tensor) -> Tensor:
        """A(D): draw b ~ N(0, σ_b² I), then minimise L_b(θ; D) by Newton's method from θ_0."""
        if set(torch.unique(y).tolist()) - {0, 1}:
            raise InvalidInput("y", "binary labels in {0, 1}", sorted(set(torch.unique(y).tolist())))
        self.theta0_ = theta0.clone()
        self.Phi_ = _design_matrix(self.objective, X, theta0)
        self.yf_ = y.to(self.Phi_.dtype)
        gen = torch.Generator().manual_seed(self.seed)
        noise = torch.randn(theta0.shape, generator=gen, dtype=theta0.dtype, device="cpu")
        self.b_ = (self.loss_noise * noise).to(theta0.device)
        self.theta_, self.fit_info_ = _minimise(self.Phi_, self.yf_, self.l2, self.b_, theta0, self.max_iter, self.tol)
        self.train_residual_ = self.fit_info_["gradient_norm"]
        self.ledger_ = []
        self._removals: dict[tuple[tuple[int, ...], ...], tuple[Tensor, list[dict]]] = {}
        return self.theta_.clone()

    def _retrain(self, forget: Tensor) -> Tensor:
        """A(D \\ Z) with the same b, from the same θ_0, to the same tolerance."""
        keep = self._keep(forget)
        theta, _ = _minimise(self.Phi_[keep], self.yf_[keep], self.l2, self.b_, self.theta0_, self.max_iter, self.tol)
        return theta

    # -- unlearning U ----------------------------------------------------------------------
    def _unlearn(self, forget: Tensor) -> Tensor:
        """One batch Newton removal of ``forget`` from A(D): θ⁻ = θ* + H⁻¹Δ (the same model for
        the same forget set whatever ran before)."""
        theta, self.ledger_ = self._removal([forget])
        return theta.clone()

    def unlearn_sequence(self, requests: Sequence[Tensor]) -> Tensor:
        """Remove disjoint forget sets one after another from A(D), accumulating β.

        Request k is a Newton step from the model after request k−1 on the data left after it
        (Δ_k = m_kλθ_{k−1} + Σ_{j∈Z_k} ∇ℓ(θ_{k−1}; z_j), H_k on D_k), and
        β_k = β_{k−1} + ||H_k v_k − Δ_k|| + γ||X_k||₂||v_k||||X_k v_k||R_k with β_0 the measured
        ||∇L_b(θ*; D)||. The reference is :meth:`retrain` of the union of the requests. The
        records of every request are kept for :meth:`ledger`.
        """
        if isinstance(requests, Tensor) or len(requests) == 0:
            raise InvalidInput("requests", "a non-empty sequence of index tensors", type(requests).__name__)
        checked = [
            self.forget_indices(r, f"requests[{k}]" if len(requests) > 1 else "forget") for k, r in enumerate(requests)
        ]
        theta, self.ledger_ = self._removal(checked)
        return theta.clone()

    def _removal(self, requests: list[Tensor]) -> tuple[Tensor, list[dict]]:
        """The Newton removals of a sequence of validated requests from A(D), and their records
        (computed once per sequence)."""
        key = tuple(tuple(sorted(r.tolist())) for r in requests)
        if key in self._removals:
            return self._removals[key]
        n = self.Phi_.shape[0]
        keep = torch.ones(n, dtype=torch.bool, device=self.Phi_.device)
        theta = self.theta_.clone()
        beta = self.train_residual_
        ledger = []
        for k, idx in enumerate(requests):
            if not bool(keep[idx].all()):
                raise InvalidInput(
                    "requests",
                    "disjoint forget sets (a record can be removed once)",
                    f"request {k} repeats an earlier record",
                )
            keep[idx] = False
            if not bool(keep.any()):
                raise InvalidInput("forget", "a forget set that leaves at least one record", "all records")
            theta, record = self._newton_removal(theta, idx, keep)
            beta = guo_accumulated_residual([beta, record["solve_residual"], record["corollary_1"]])
            record.update(
                request=k,
                beta=beta,
                removed_total=int(n - int(keep.sum())),
                delta_theta=guo_parameter_sensitivity(beta, self.l2, int(keep.sum())),
            )
            ledger.append(record)
        self._removals[key] = (theta, ledger)
        return theta, ledger

    def _serve(
        self, requests: list[Tensor], epsilon: float, delta: float, mechanism: str
    ) -> list[tuple[Tensor, Certificate]]:
        """Guo et al.'s rule: chain Newton removals from the previous model, β accumulating."""
        out = []
        for k in range(1, len(requests) + 1):
            theta, ledger = self._removal(requests[:k])
            out.append((theta.clone(), self._certificate(ledger, epsilon, delta, mechanism)))
        return out

    def _newton_removal(self, theta: Tensor, idx: Tensor, keep: Tensor) -> tuple[Tensor, dict]:
        Phi, y, lam = self.Phi_, self.yf_, self.l2
        P, yk = Phi[keep], y[keep]
        n_r, m = int(P.shape[0]), int(idx.numel())
        Pz = Phi[idx]
        delta = Pz.T @ (torch.sigmoid(Pz @ theta) - y[idx]) + m * lam * theta
        H = _hessian(P, theta, lam)
        v = dense_solve(H, delta)
        theta_new = theta + v
        Pv = P @ v
        spectral = float(torch.linalg.eigvalsh(P.T @ P)[-1].clamp_min(0).sqrt())
        R = float(torch.linalg.vector_norm(P, dim=1).max())
        step, projected = float(torch.linalg.vector_norm(v)), float(torch.linalg.vector_norm(Pv))
        record = {
            "m": m,
            "n_retained": n_r,
            "step_norm": step,
            "projected_step_norm": projected,
            "spectral_norm": spectral,
            "max_row_norm": R,
            "solve_residual": float(torch.linalg.vector_norm(H @ v - delta)),
            "corollary_1": guo_residual_bound(spectral, step, projected, gamma=self.gamma, max_row_norm=R),
            "measured_residual": float(torch.linalg.vector_norm(_gradient(P, yk, theta_new, lam, self.b_))),
        }
        return theta_new, record

    # -- measurements ------------------------------------------------------------------------
    def gradient(self, theta: Tensor, forget: Tensor | None = None) -> Tensor:
        """∇L_b(θ; D \\ Z), the full gradient of the perturbed objective (b included)."""
        keep = self._keep(self.forget_indices(forget)) if forget is not None else slice(None)
        return _gradient(self.Phi_[keep], self.yf_[keep], theta, self.l2, self.b_)

    def ledger(self) -> list[dict]:
        """One record per removal request of the last :meth:`unlearn`/:meth:`unlearn_sequence`."""
        return [dict(r) for r in self.ledger_]

    def report_hyperparameters(self) -> dict:
        out = {
            "l2": self.l2,
            "loss_noise": self.loss_noise,
            "loss_noise_requested": self.loss_noise_requested,
            "output_noise": self.output_noise,
            "max_iter": self.max_iter,
            "tol": self.tol,
            "seed": self.seed,
            "gamma": self.gamma,
        }
        if hasattr(self, "fit_info_"):
            out.update(
                fit_iterations=self.fit_info_["iterations"],
                fit_gradient_norm=self.fit_info_["gradient_norm"],
                fit_converged=self.fit_info_["converged"],
                b_norm=float(torch.linalg.vector_norm(self.b_)),
            )
        return out

    # -- certificate -------------------------------------------------------------------------
    def _certify(self, forget: Tensor, epsilon: float, delta: float, mechanism: str) -> Certificate:
        """The certificate for removing ``forget`` in one batch: the data-dependent β of that
        removal (Corollary 1), whatever ran before."""
        return self._certificate(self._removal([forget])[1], epsilon, delta, mechanism)

    def worst_case_certificate(
        self, forget_size: int, epsilon: float, delta: float, mechanism: str = "analytic"
    ) -> Certificate:
        """Theorem 1's data-independent worst case for removing any ``forget_size`` records."""
        if not hasattr(self, "theta_"):
            raise RuntimeError("NewtonRemoval.fit must be called before certify")
        n = int(self.Phi_.shape[0])
        m = Integer(1, n - 1).check("forget_size", forget_size)
        epsilon = require_positive("epsilon", epsilon)
        mechanism = require_choice("mechanism", mechanism, MECHANISMS)
        return self._certificate(None, epsilon, delta, mechanism, worst_case_size=m)

    def _certificate(
        self,
        ledger: list[dict] | None,
        epsilon: float,
        delta: float,
        mechanism: str,
        worst_case_size: int | None = None,
    ) -> Certificate:
        """The certificate from the records of a removal sequence (its last β), or Theorem 1's
        worst case for ``worst_case_size`` records when ``ledger`` is None."""
        n, lam, r0 = int(self.Phi_.shape[0]), self.l2, self.train_residual_
        warnings: list[str] = []
        G, L = logistic_regression_constants(float(torch.linalg.vector_norm(self.X_, dim=1).max()), 2)
        row_norm_all = float(torch.linalg.vector_norm(self.Phi_, dim=1).max())
        if ledger is not None:
            last = ledger[-1]
            m = last["removed_total"]
            beta, source = last["beta"], "data-dependent (Corollary 1, accumulated over requests)"
            R_value, R_what = last["max_row_norm"], "the retained rows"
        else:
            assert worst_case_size is not None, "a certificate without a ledger is the worst case for a size"
            m = worst_case_size
            b_norm = float(torch.linalg.vector_norm(self.b_))
            beta = r0 + guo_worst_case_residual(
                n, m, lam, G.value, gamma=self.gamma, max_row_norm=row_norm_all, perturbation_norm=b_norm + r0
            )
            source = "worst case (Theorem 1) for any batch of m records"
            R_value, R_what = row_norm_all, "all training rows"
            warnings.append(
                f"the residual bound is Theorem 1's worst case for any {m} records, not the "
                "data-dependent Corollary 1 of an actual removal"
            )
        if not self.fit_info_["converged"]:
            warnings.append(
                f"A stopped at ||grad L_b||/n = {r0 / n:.3g} > tol = {self.tol:g} "
                f"after {self.fit_info_['iterations']} Newton steps: the retrained reference is "
                "optimal only to that accuracy (the measured residual is counted in beta)"
            )
        sensitivity = guo_parameter_sensitivity(beta, lam, n - m)
        constants = self._certificate_constants(
            ledger, G, L, n=n, m=m, beta=beta, source=source, R_value=R_value, R_what=R_what, sensitivity=sensitivity
        )
        if self.output_noise:
            bound = guo_bound(beta, lam, n, m, source=source)
            return issue(
                self.name,
                "output-noise",
                epsilon=epsilon,
                delta=delta,
                mechanism=mechanism,
                bound=bound,
                constants=constants,
                assumptions=self.assumptions,
                warnings=warnings,
            )
        budget = guo_budget(self.loss_noise, epsilon, delta, mechanism)
        if mechanism == "classic":
            constants.append(
                Constant("c", guo_c(delta), "analytic", "sqrt(2 ln(1.5/delta)), Theorem 3's delta = 1.5 exp(-c^2/2)")
            )
        constants.append(
            Constant(
                "epsilon_prime",
                budget,
                "enforced",
                "residual budget certified by the loss noise: "
                + (
                    "sigma_b * epsilon / c (Theorem 3)"
                    if mechanism == "classic"
                    else "sigma_b / sigma_analytic(epsilon, delta, 1) (Theorems 2-3 with the "
                    "analytic Gaussian mechanism)"
                ),
            )
        )
        warnings.append(
            "the privacy comes from the objective perturbation b, so a realized or empirical "
            "epsilon computed from output noise does not apply to this release"
        )
        bound = guo_bound(beta, lam, n, m, source=source, budget=budget, sigma_b=self.loss_noise)
        return issue(
            self.name,
            "training-noise",
            epsilon=epsilon,
            delta=delta,
            mechanism=mechanism,
            bound=bound,
            constants=constants,
            assumptions=self.assumptions,
            warnings=warnings,
        )

    def _certificate_constants(
        self,
        ledger: list[dict] | None,
        G: Constant,
        L: Constant,
        *,
        n: int,
        m: int,
        beta: float,
        source: str,
        R_value: float,
        R_what: str,
        sensitivity: float,
    ) -> list[Constant]:
        """The constants the certificate reports, in their report order (both release modes share
        them; the loss-noise mode appends its budget's): the regulariser, the counts, the loss's
        constants, the residual β and Δ_θ, and A's noise and stopping rule."""
        lam, r0 = self.l2, self.train_residual_
        constants = [
            Constant(
                "lambda",
                lam,
                "enforced",
                "L2 regularisation per record: the objective carries "
                "(lambda|D|/2)||theta||^2, so L_b(.; D') is lambda(n-m)-strongly convex",
            ),
            Constant("n", float(n), "enforced", "training records |D| (counted)"),
            Constant("m", float(m), "enforced", "removed records |Z| (counted, all requests together)"),
            Constant(
                "gamma",
                self.gamma,
                "analytic",
                "Lipschitz constant of the logistic loss's second "
                "derivative sigmoid(1-sigmoid), the paper's 1/4 (the exact sup|l'''| = 1/(6 sqrt 3) "
                "~ 0.096 is smaller, so 1/4 is conservative)",
            ),
            Constant(
                "C",
                G.value,
                "analytic",
                "per-record gradient bound of Theorem 1 (" + G.description + ")",
                G.diagnostics,
            ),
            L,
            Constant(
                "R",
                R_value,
                "analytic",
                f"max ||(x, 1)|| over {R_what}: bounds |x_i.v| <= R||v|| in Corollary 1 (the paper assumes R = 1)",
            ),
            Constant(
                "train_residual",
                r0,
                "enforced",
                "||grad L_b(theta*; D)|| measured at the end of A "
                f"(stopping rule ||grad||/n <= tol = {self.tol:g}); the paper assumes an exact optimum (0), "
                "here it starts beta",
                {"iterations": self.fit_info_["iterations"], "converged": self.fit_info_["converged"]},
            ),
            Constant(
                "beta",
                beta,
                "analytic",
                "bound on the gradient residual ||grad L_b(theta_U; D')||: "
                "train residual + sum over requests of (solve residual + gamma ||X'||_2 ||H^-1 Delta|| "
                f"||X' H^-1 Delta|| R); {source}",
                {"source": source, "requests": [dict(r) for r in ledger] if ledger is not None else []},
            ),
            Constant(
                "Delta_theta",
                sensitivity,
                "analytic",
                "parameter-space sensitivity beta / (lambda (n - m)) >= ||theta_U - A(D')|| by strong convexity",
            ),
            Constant(
                "sigma_b",
                self.loss_noise,
                "enforced",
                "loss perturbation: b ~ N(0, sigma_b^2 I) drawn by A (seed "
                f"{self.seed}) and added as b.theta to the training objective; never released",
                {"b_norm": float(torch.linalg.vector_norm(self.b_))},
            ),
            Constant("tol", self.tol, "enforced", "stopping rule of A: ||grad L_b(theta; D)||/|D| <= tol"),
        ]
        if ledger is not None:
            constants.insert(
                7,
                Constant(
                    "||X'||_2",
                    ledger[-1]["spectral_norm"],
                    "analytic",
                    "spectral norm of the retained design matrix at the last request, exact (eigenvalues of X'^T X')",
                ),
            )
        return constants

    # -- helpers -----------------------------------------------------------------------------
    def _keep(self, forget: Tensor) -> Tensor:
        if not hasattr(self, "Phi_"):
            raise RuntimeError("NewtonRemoval.fit must be called before unlearning")
        keep = torch.ones(self.Phi_.shape[0], dtype=torch.bool, device=self.Phi_.device)
        keep[forget] = False
        return keep


# -- the closed-form pieces of L_b for a linear model ------------------------------------------
def _describe(objective: Objective) -> str:
    return f"{type(objective.model).__name__} with {objective.n_outputs} output(s), linear={objective.is_linear}"


def _design_matrix(objective: Objective, X: Tensor, theta0: Tensor) -> Tensor:
    """Φ with logits(θ, X) = Φθ: the Jacobian of the (linear) logits, rows x̃_i in θ's layout."""
    Phi = jacfwd(lambda t: objective.logits(t, X))(theta0)
    probe = torch.linspace(-1.0, 1.0, theta0.numel(), dtype=theta0.dtype, device=theta0.device)
    if not torch.allclose(objective.logits(probe, X), Phi @ probe, rtol=1e-5, atol=1e-6):
        raise InvalidInput(
            "model",
            "a model whose logit is linear in theta (logistic regression)",
            "a model whose output is not linear in its parameters",
        )
    return Phi.detach()


def _loss_value(Phi: Tensor, y: Tensor, theta: Tensor, lam: float, b: Tensor) -> Tensor:
    z = Phi @ theta
    n = Phi.shape[0]
    return (torch.nn.functional.softplus(z) - y * z).sum() + 0.5 * lam * n * (theta @ theta) + b @ theta


def _gradient(Phi: Tensor, y: Tensor, theta: Tensor, lam: float, b: Tensor) -> Tensor:
    return Phi.T @ (torch.sigmoid(Phi @ theta) - y) + lam * Phi.shape[0] * theta + b


def _hessian(Phi: Tensor, theta: Tensor, lam: float) -> Tensor:
    s = torch.sigmoid(Phi @ theta)
    H = Phi.T @ ((s * (1 - s)).unsqueeze(1) * Phi)
    H.diagonal().add_(lam * Phi.shape[0])
    return H


def _minimise(
    Phi: Tensor, y: Tensor, lam: float, b: Tensor, theta0: Tensor, max_iter: int, tol: float
) -> tuple[Tensor, dict]:
    """Newton's method with Armijo backtracking on the strongly convex L_b; stops at
    ||∇L_b||/n ≤ tol, or when the gradient stops decreasing (the rounding floor)."""
    n = Phi.shape[0]
    theta = theta0.clone()
    best, best_norm, stalled = theta, math.inf, 0
    iterations = 0
    for iterations in range(max_iter + 1):
        g = _gradient(Phi, y, theta, lam, b)
        g_norm = float(torch.linalg.vector_norm(g))
        if g_norm < best_norm:
            best, best_norm, stalled = theta, g_norm, 0
        else:
            stalled += 1
        if best_norm <= tol * n or stalled >= 3 or iterations == max_iter:
            break
        step = dense_solve(_hessian(Phi, theta, lam), g)
        decrement = float(g @ step)
        f0 = float(_loss_value(Phi, y, theta, lam, b))
        t = 1.0
        if decrement > 1e-10 * max(1.0, abs(f0)):  # objective differences still above rounding
            while t > 1e-12 and float(_loss_value(Phi, y, theta - t * step, lam, b)) > f0 - 1e-4 * t * decrement:
                t *= 0.5
        theta = theta - t * step
    return best, {"iterations": iterations, "gradient_norm": best_norm, "converged": best_norm <= tol * n}
