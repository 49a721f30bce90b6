"""Rewind-to-Delete (R2D): certified unlearning by rewinding gradient descent.

Mu & Klabjan, "Rewind-to-Delete: Certified Machine Unlearning for Nonconvex Functions".

* Algorithm 1 (learning A): full-batch gradient descent for T steps with constant step η from
  θ_0; keep the checkpoint θ_{T−K}; publish θ_T + N(0, σ²I).
* Algorithm 2 (unlearning U): from θ_{T−K}, K gradient steps on the retained loss f_{D'};
  publish θ''_K + N(0, σ²I) with fresh noise.
* Algorithm 3: recover θ_{T−K} from θ_T without a stored checkpoint by K proximal-point
  (backward-Euler) steps x = θ''_{t−1} + η∇f_D(x), valid when ηL < 1 (Lemma 2.3).
* Theorem 3.1 / Eq. (3): ||θ''_K − θ'_T|| ≤ Δ(K) = 2mG·h(K)/(Ln) with
  h(K) = ((1 + ηLn/(n−m))^{T−K} − 1)(1 + ηL)^K, where θ'_T is A run on D' from the same θ_0
  with the same η and T (the retrained reference). Gaussian noise calibrated to Δ(K) makes the
  two releases (ε, δ)-indistinguishable.

Deviations from the paper (also in the README's method table):

* T and K count gradient steps, and η is constant, exactly as the theorem assumes; the paper's
  experiments used minibatch SGD with a decaying step (digest decisions 1 and 2).
* L and G are global per-sample constants: closed form for logistic regression on
  norm-bounded features; for other models they are *estimated* per sample along the trajectory
  and the certificate is reported as conditional (the paper estimated them from minibatch
  gradients at the final weights, which the theorem does not cover).
* The noise is calibrated with the analytic Gaussian mechanism (Balle & Wang 2018) by default,
  which is valid for every ε and tighter; ``mechanism="classic"`` gives Eq. (3) exactly, for
  ε ≤ 1 only.
"""

from __future__ import annotations

import torch
from torch import Tensor

from certify.bounds import r2d_rewind_for_sigma, r2d_sensitivity, r2d_step_size_limit
from certify.certificate import Certificate, Constant
from certify.errors import InvalidInput
from certify.mechanisms import noise_clause, sigma_for
from unlearners.base import Unlearner, register
from unlearners.objective import Objective
from unlearners.smoothness import model_constants, step_size
from unlearners.training import gradient_descent

#: Keep every iterate when the trajectory fits in this many bytes (needed for σ budgets,
#: tradeoff curves and evenly spaced constant estimation); otherwise only θ_{T−K}.
TRAJECTORY_BYTES = 256 * 2**20


@register
class RewindToDelete(Unlearner):
    """Rewind-to-Delete (Mu & Klabjan), Algorithms 1–3 with the certificate of Theorem 3.1.

    Parameters
    ----------
    objective:
        The per-sample loss as functions of a flat θ.
    steps:
        T, the number of full-batch gradient steps of A (and of the retrain).
    rewind:
        K, the number of steps U rewinds and replays on the retained data (0 ≤ K ≤ T).
    eta:
        Constant step size η. ``None`` chooses η = horizon / (L·T), so that ηLT = horizon: the
        bound grows like exp(ηLT), so this product, not T, sets the price of the certificate.
    horizon:
        ηLT when ``eta`` is None.
    constants:
        User overrides for ``L`` and ``G`` (reported with provenance ``assumed``).
    seed:
        Seed of the constant estimators (unused for logistic regression).
    """

    name = "r2d"
    title = "Rewind-to-Delete"
    paper = (
        "Mu & Klabjan, 'Rewind-to-Delete: Certified Machine Unlearning for Nonconvex "
        "Functions' (Algorithms 1-3, Theorem 3.1, Eq. 3, Corollary 3.2)"
    )
    certified = True
    assumptions = (
        "every per-sample loss f_z is L-smooth and ||grad f_z(theta)|| < G for every theta",
        "A is full-batch gradient descent with constant step eta <= min(1/L, n/(2(n-m)L))",
        "the retrained reference runs the same T steps from the same theta_0 with the same eta",
        "sigma is fixed before training, from the deletion budget m",
    )
    deviations = (
        "T and K count gradient steps; constant eta (the paper's experiments: SGD, decaying lr)",
        "L and G are global per-sample bounds (closed form for logistic regression, otherwise "
        "estimated per sample and flagged conditional); the paper estimated them from minibatches",
        "analytic Gaussian mechanism by default (valid for every epsilon); classic Eq. (3) on request",
    )

    def __init__(
        self,
        objective: Objective,
        *,
        steps: int = 100,
        rewind: int = 95,
        eta: float | None = None,
        horizon: float = 6.0,
        constants: dict[str, float] | None = None,
        seed: int = 0,
    ):
        super().__init__(objective)
        if int(steps) != steps or steps < 1:
            raise InvalidInput("steps", "an integer >= 1", steps)
        if int(rewind) != rewind or not 0 <= rewind <= steps:
            raise InvalidInput("rewind", f"an integer in [0, steps={steps}]", rewind)
        if eta is not None and not (eta > 0 and eta < float("inf")):
            raise InvalidInput("eta", "a finite number > 0, or None for eta = horizon/(L*T)", eta)
        if not (horizon > 0 and horizon < float("inf")):
            raise InvalidInput("horizon", "a finite number > 0", horizon)
        self.steps = int(steps)
        self.rewind = int(rewind)
        self.eta = eta
        self.horizon = float(horizon)
        self.constant_overrides = dict(constants or {})
        self.seed = int(seed)

    # -- Algorithm 1 -------------------------------------------------------------------
    def fit(self, X: Tensor, y: Tensor, theta0: Tensor) -> Tensor:
        """Algorithm 1: T full-batch GD steps on D from θ_0, keeping θ_{T−K}."""
        self._remember(X, y)
        self.theta0_ = theta0.clone()
        gen = torch.Generator().manual_seed(self.seed)
        self.eta_ = step_size(self.objective, X, y, theta0, eta=self.eta, horizon=self.horizon,
                              steps=self.steps, generator=gen, overrides=self.constant_overrides)
        T = self.steps
        bytes_needed = (T + 1) * theta0.numel() * theta0.element_size()
        self.full_trajectory_ = bytes_needed <= TRAJECTORY_BYTES
        keep = range(T + 1) if self.full_trajectory_ else {0, T - self.rewind, T}
        theta_T, self.checkpoints_ = gradient_descent(
            self.objective, theta0, X, y, eta=self.eta_, steps=T, keep=keep
        )
        sample_at = sorted({round(i * T / 7) for i in range(8)} & set(self.checkpoints_))
        self.constants_ = model_constants(
            self.objective, X, y, [self.checkpoints_[t] for t in sample_at],
            generator=gen, overrides=self.constant_overrides,
        )
        return theta_T

    def hyperparameters(self) -> dict:
        return {"steps": self.steps, "rewind": self.rewind, "eta": getattr(self, "eta_", self.eta),
                "eta_requested": self.eta, "horizon": self.horizon,
                "constant_overrides": dict(self.constant_overrides)}

    # -- Algorithm 2 -------------------------------------------------------------------
    def unlearn(self, forget: Tensor, rewind: int | None = None) -> Tensor:
        """Algorithm 2: rewind to θ_{T−K}, then K full-batch GD steps on D' = D \\ Z."""
        K = self.rewind if rewind is None else int(rewind)
        start = self.checkpoint(self.steps - K)
        X_r, y_r = self.retained(forget)
        theta, _ = gradient_descent(self.objective, start, X_r, y_r, eta=self.eta_, steps=K)
        return theta

    def retrain(self, forget: Tensor) -> Tensor:
        """A(D'): the same T steps from the same θ_0 on the retained data."""
        X_r, y_r = self.retained(forget)
        theta, _ = gradient_descent(self.objective, self.theta0_, X_r, y_r, eta=self.eta_, steps=self.steps)
        return theta

    def checkpoint(self, t: int) -> Tensor:
        """The stored iterate θ_t of the training run."""
        if t not in self.checkpoints_:
            raise InvalidInput(
                "rewind", "a rewind whose checkpoint was kept (the trajectory was too large to "
                f"keep whole; kept steps {sorted(self.checkpoints_)})", self.steps - t,
            )
        return self.checkpoints_[t]

    # -- Algorithm 3 -------------------------------------------------------------------
    def recover_checkpoint(
        self, theta_T: Tensor, rewind: int | None = None, *, tol: float = 1e-12, max_iter: int = 500
    ) -> tuple[Tensor, dict]:
        """Algorithm 3: recover θ_{T−K} from θ_T by K proximal-point steps on −f_D.

        Each step solves x = y + η∇f_D(x) (the optimality condition of
        argmin_x −f_D(x) + ||x − y||²/(2η), Lemma 2.3) by fixed-point iteration, a contraction
        with factor ηL < 1. Returns the recovered point and diagnostics (iterations per step,
        the largest final residual, and whether every solve met ``tol``).
        """
        K = self.rewind if rewind is None else int(rewind)
        L = self.constants_["L"].value
        if self.eta_ * L >= 1:
            raise InvalidInput("eta", f"< 1/L = {1 / L:.6g} for Algorithm 3 (Lemma 2.3)", self.eta_)
        X, y = self.X_, self.y_
        current = theta_T.clone()
        iterations, worst, converged = [], 0.0, True
        for _ in range(K):
            x = current.clone()
            for it in range(1, max_iter + 1):
                x_new = current + self.eta_ * self.objective.grad(x, X, y)
                residual = float(torch.linalg.vector_norm(x_new - x))
                x = x_new
                if residual <= tol * (1.0 + float(torch.linalg.vector_norm(x))):
                    break
            else:
                converged = False
            iterations.append(it)
            worst = max(worst, residual)
            current = x
        return current, {"steps": K, "max_iterations": max(iterations, default=0),
                         "max_residual": worst, "converged": converged, "tolerance": tol}

    # -- Theorem 3.1 -------------------------------------------------------------------
    def sensitivity(self, forget_size: int, rewind: int | None = None) -> float:
        """Δ(K) = 2mG·h(K)/(Ln) of Theorem 3.1 for the fitted constants."""
        K = self.rewind if rewind is None else int(rewind)
        n = int(self.X_.shape[0])
        return r2d_sensitivity(K, self.steps, self.eta_, self.constants_["L"].value,
                               self.constants_["G"].value, n, int(forget_size))

    def rewind_for_sigma(self, sigma: float, forget_size: int, epsilon: float, delta: float,
                         mechanism: str = "analytic") -> int:
        """Smallest K whose calibrated σ(K) is at most the budget ``sigma`` (exact search)."""
        n = int(self.X_.shape[0])
        return r2d_rewind_for_sigma(sigma, epsilon, delta, self.steps, self.eta_,
                                    self.constants_["L"].value, self.constants_["G"].value,
                                    n, int(forget_size), mechanism)

    def certify(self, forget_size: int, epsilon: float, delta: float, mechanism: str = "analytic",
                rewind: int | None = None) -> Certificate:
        """The (ε, δ) certificate of Theorem 3.1 for deleting ``forget_size`` records."""
        K = self.rewind if rewind is None else int(rewind)
        n, m, T = int(self.X_.shape[0]), int(forget_size), self.steps
        L, G = self.constants_["L"], self.constants_["G"]
        delta_K = self.sensitivity(m, K)
        warnings: list[str] = []
        valid = True
        limit = r2d_step_size_limit(L.value, n, m)
        if self.eta_ > limit:
            valid = False
            warnings.append(f"step size eta = {self.eta_:.6g} exceeds Theorem 3.1's limit "
                            f"min(1/L, n/(2(n-m)L)) = {limit:.6g}: the certificate is not issued")
        if delta_K == float("inf"):
            valid = False
            warnings.append("the sensitivity bound overflows (eta*L*(T-K) too large): no finite "
                            "noise certifies this run")
            sigma = float("inf")
        else:
            sigma = sigma_for(epsilon, delta, delta_K, mechanism)
        if L.provenance in ("estimated", "assumed") or G.provenance in ("estimated", "assumed"):
            warnings.append("the certificate is conditional on estimated or assumed constants "
                            "(L, G): a sampled maximum can under-estimate a supremum")
        exact = [
            Constant("eta", self.eta_, "enforced",
                     "constant step size of every gradient step" + (
                         f" (chosen as horizon/(L*T) with horizon = {self.horizon})" if self.eta is None else "")),
            Constant("T", float(T), "enforced", "gradient steps of learning and of the retrain"),
            Constant("K", float(K), "enforced", "rewind: gradient steps replayed on the retained data"),
            Constant("n", float(n), "enforced", "training records |D| (counted)"),
            Constant("m", float(m), "enforced", "deleted records |Z| (counted)"),
            Constant("eta*L*T", self.eta_ * L.value * T, "enforced",
                     "the exponent that drives h(K): the bound grows like exp(eta*L*T)"),
        ]
        return Certificate(
            method=self.name, epsilon=float(epsilon), delta=float(delta), sigma=float(sigma),
            sensitivity=float(delta_K), mechanism=mechanism,
            theorem="Mu & Klabjan, Rewind-to-Delete, Theorem 3.1 (Eq. 3; Lemmas B.2-B.3): "
                    "||theta''_K - theta'_T|| <= 2mG((1+eta*L*n/(n-m))^(T-K) - 1)(1+eta*L)^K/(Ln); "
                    + noise_clause(mechanism),
            constants=[L, G, *exact],
            assumptions=list(self.assumptions),
            warnings=warnings,
            valid=valid,
        )
