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

Deviations from the paper (also declared in ``deviations`` and shown on the method's page):

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

from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor
from torch.func import vmap

from certify.bounds import r2d_bound, r2d_rewind_for_sigma, r2d_sensitivity
from certify.certificate import Certificate, issue
from certify.errors import Integer, InvalidInput, MappingOf, Optional, Real
from certify.params import Param
from unlearners.base import Capabilities, Knob, Precision, Unlearner, Worlds
from unlearners.modelcheck import SMOOTH, STATELESS
from unlearners.smoothness import ConstantSampler, step_size
from unlearners.training import batched_gradient_descent, full_batch_condition, gradient_descent, minibatches

#: Keep every iterate when the trajectory fits in this many bytes (needed for σ budgets,
#: tradeoff curves and evenly spaced constant estimation); otherwise only θ_{T−K}.
TRAJECTORY_BYTES = 256 * 2**20


class RewindToDelete(Unlearner):
    """Rewind-to-Delete (Mu & Klabjan), Algorithms 1–3 with the certificate of Theorem 3.1.

    Options (declared in ``hyperparameters``): ``steps`` T, ``rewind`` K (0 ≤ K ≤ T), ``eta``
    (None: η = horizon/(L·T), so that ηLT = horizon: the bound grows like exp(ηLT), so this
    product, not T, sets the price of the certificate), ``horizon``, ``constants`` (user
    overrides of L and G, provenance ``assumed``) and ``seed`` (of the constant estimators;
    unused for logistic regression).
    """

    name = "r2d"
    title = "Rewind-to-Delete"
    paper = (
        "Mu & Klabjan, 'Rewind-to-Delete: Certified Machine Unlearning for Nonconvex "
        "Functions' (Algorithms 1-3, Theorem 3.1, Eq. 3, Corollary 3.2)"
    )
    certified = True
    precision = Precision(
        False,
        "Theorem 3.1's bound from L and G (estimated on the trained trajectory for non-"
        "linear models) and eta; the theorem bounds exact gradient descent, and float32 "
        "rounding (unit roundoff 6e-8 per operation, accumulated over T steps) is not in it",
    )
    model_requirements = frozenset({SMOOTH, STATELESS})
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
    hyperparameters = (
        Param(
            "steps", 100, Integer(1, 1_000_000), "T: full-batch gradient steps of A and of the retrain", audit="steps"
        ),
        Param("rewind", 95, Integer(0), "K: steps U rewinds and replays on the retained data (K <= T)", audit="rewind"),
        Param("eta", None, Optional(Real(gt=0), "for eta = horizon/(L*T)"), "constant step size", audit="eta"),
        Param("horizon", 6.0, Real(gt=0), "eta*L*T when eta is None", audit="horizon"),
        Param(
            "constants",
            {},
            MappingOf(Real(gt=0), keys=("L", "G")),
            "user overrides of the smoothness L and gradient bound G (provenance assumed)",
            audit="constants",
        ),
        Param(
            "seed", 0, Integer(0, 2**63 - 1), "seed of the constant estimators (and of the mini-batches)", audit="seed"
        ),
        Param(
            "batch_size",
            None,
            Optional(Integer(1), "for full batch, the certified path"),
            "mini-batch size of A, U and the retrain: an uncertified variant (Theorem 3.1 is full-batch)",
        ),
    )
    capabilities = Capabilities(
        knob=Knob(
            "rewind",
            "K",
            "a longer replay (larger K) needs less noise and costs more compute; K = T is retraining",
            sigma_budget=True,
        ),
        checkpoint_recovery=True,
        batched_training=True,
    )
    pinned_state = ("constants_",)  # replicas (trials, shadow models) reuse the fit's L and G

    def _check_options(self) -> None:
        if self.rewind > self.steps:
            raise InvalidInput("rewind", f"an integer in [0, steps={self.steps}]", self.rewind)

    # -- Algorithm 1 -------------------------------------------------------------------
    def _fit(self, X: Tensor, y: Tensor, theta0: Tensor) -> Tensor:
        """Algorithm 1: T full-batch GD steps on D from θ_0, keeping θ_{T−K}."""
        self.theta0_ = theta0.clone()
        gen = torch.Generator().manual_seed(self.seed)
        sampler = ConstantSampler(self.objective, X, y, generator=gen)  # θ_0's samples serve η and the certificate
        self.eta_ = step_size(
            self.objective,
            X,
            y,
            theta0,
            eta=self.eta,
            horizon=self.horizon,
            steps=self.steps,
            generator=gen,
            overrides=self.constants,
            sampler=sampler,
        )
        T = self.steps
        bytes_needed = (T + 1) * theta0.numel() * theta0.element_size()
        self.full_trajectory_ = bytes_needed <= TRAJECTORY_BYTES
        keep = range(T + 1) if self.full_trajectory_ else {0, T - self.rewind, T}
        theta_T, self.checkpoints_ = gradient_descent(
            self.objective,
            theta0,
            X,
            y,
            eta=self.eta_,
            steps=T,
            keep=keep,
            batches=minibatches(int(X.shape[0]), self.batch_size, T, self.seed, X.device),
        )
        sample_at = sorted({round(i * T / 7) for i in range(8)} & set(self.checkpoints_))
        self.constants_ = sampler.constants(
            {t: self.checkpoints_[t] for t in sample_at},
            overrides=self.constants,
            pinned=self.pinned_.get("constants_"),  # a replica reuses the constants of the fit it came from
        )
        return theta_T

    def pinned_options(self) -> dict[str, Any]:
        return {"eta": self.eta_} if getattr(self, "eta_", None) is not None else {}

    def report_hyperparameters(self) -> dict:
        return {
            "steps": self.steps,
            "rewind": self.rewind,
            "batch_size": self.batch_size,
            "eta": getattr(self, "eta_", self.eta),
            "eta_requested": self.eta,
            "horizon": self.horizon,
            "constant_overrides": dict(self.constants),
        }

    # -- Algorithm 2 -------------------------------------------------------------------
    def _unlearn(self, forget: Tensor, rewind: int | None = None) -> Tensor:
        """Algorithm 2: rewind to θ_{T−K}, then K full-batch GD steps on D' = D \\ Z (mini-batch
        variant: the last K of the retrain's T seeded draws over D', so K = T is the retrain)."""
        K = self._rewind(rewind)
        start = self.checkpoint(self.steps - K)
        X_r, y_r = self.retained(forget)
        schedule = minibatches(int(X_r.shape[0]), self.batch_size, self.steps, self.seed, X_r.device)
        theta, _ = gradient_descent(
            self.objective,
            start,
            X_r,
            y_r,
            eta=self.eta_,
            steps=K,
            batches=None if schedule is None else schedule[self.steps - K :],
        )
        return theta

    def unlearn_sweep(self, forget: Tensor | Sequence[int], values: Sequence[Any]) -> Tensor:
        """Algorithm 2 at every rewind K in ``values`` together: each replay starts from its own
        stored θ_{T−K} of the one training trajectory, and the replays step on D' side by side,
        a replay joining when K steps remain, so all of them end together and each takes exactly
        its K steps (Σ K row-steps, one vmapped gradient per step instead of one call per replay
        and step). Rows of a vmapped product may differ from a lone replay in the last bit. The
        mini-batch variant replays one rewind at a time."""
        rewinds = [self._rewind(int(v)) for v in values]
        forget = self.forget_indices(forget)
        if not rewinds or minibatches(int(self.fitted_data()[0].shape[0]), self.batch_size, 1, 0) is not None:
            return super().unlearn_sweep(forget, rewinds)
        X_r, y_r = self.retained(forget)
        grads = vmap(self.objective.grad, in_dims=(0, None, None))
        order = sorted(range(len(rewinds)), key=lambda j: -rewinds[j])  # longest replay first
        horizon, eta = max(rewinds), float(self.eta_)
        last = self.checkpoint(self.steps)
        rows = last.new_empty((0, last.numel()))
        joined = 0
        for t in range(horizon):
            while joined < len(order) and rewinds[order[joined]] == horizon - t:  # K steps remain
                rows = torch.cat([rows, self.checkpoint(self.steps - rewinds[order[joined]]).unsqueeze(0)])
                joined += 1
            rows = rows - eta * grads(rows, X_r, y_r)
        done = [last for _ in order[joined:]]  # K = 0: θ_T itself
        finished = torch.cat([rows, torch.stack(done)]) if done else rows
        out = torch.empty_like(finished)
        out[torch.as_tensor(order, device=finished.device)] = finished
        return out

    def _retrain(self, forget: Tensor) -> Tensor:
        """A(D'): the same T steps from the same θ_0 on the retained data."""
        X_r, y_r = self.retained(forget)
        theta, _ = gradient_descent(
            self.objective,
            self.theta0_,
            X_r,
            y_r,
            eta=self.eta_,
            steps=self.steps,
            batches=minibatches(int(X_r.shape[0]), self.batch_size, self.steps, self.seed, X_r.device),
        )
        return theta

    def train_many(self, thetas0: Tensor, forget: Tensor, *, chunk: int | None = None) -> Worlds:
        """Algorithms 1–2 and the retrain for N initial points at once: T steps on D (keeping
        θ_{T−K}), then K steps on D' from θ_{T−K}; and T steps on D' for the retrain world. The
        mini-batch variant runs the N fits one after another."""
        forget = self.forget_indices(forget)
        if minibatches(int(self.fitted_data()[0].shape[0]), self.batch_size, 1, 0) is not None:
            worlds = []
            for theta0 in thetas0:
                twin = self.replica()
                worlds.append((twin.fit(*self.fitted_data(), theta0), twin.unlearn(forget), twin.retrain(forget)))
            return Worlds(*(torch.stack(column) for column in zip(*worlds)))
        obj, eta, T, K = self.objective, float(self.eta_), self.steps, self.rewind
        X_r, y_r = self.retained(forget)
        retrained, _ = batched_gradient_descent(obj, thetas0, X_r, y_r, eta=eta, steps=T, chunk=chunk)
        original, kept = batched_gradient_descent(
            obj, thetas0, *self.fitted_data(), eta=eta, steps=T, keep={T - K}, chunk=chunk
        )
        unlearned, _ = batched_gradient_descent(obj, kept[T - K], X_r, y_r, eta=eta, steps=K, chunk=chunk)
        return Worlds(original, unlearned, retrained)

    def checkpoint(self, t: int) -> Tensor:
        """The stored iterate θ_t of the training run."""
        if t not in self.checkpoints_:
            raise InvalidInput(
                "rewind",
                "a rewind whose checkpoint was kept (the trajectory was too large to "
                f"keep whole; kept steps {sorted(self.checkpoints_)})",
                self.steps - t,
            )
        return self.checkpoints_[t]

    def _rewind(self, rewind: int | None) -> int:
        K = self.rewind if rewind is None else int(rewind)
        if not 0 <= K <= self.steps:
            raise InvalidInput("rewind", f"an integer in [0, steps={self.steps}]", rewind)
        return K

    # -- Algorithm 3 -------------------------------------------------------------------
    def recover_checkpoint(
        self,
        theta_T: Tensor,
        rewind: int | None = None,
        *,
        tol: float = 1e-12,
        max_iter: int = 500,
        max_gradients: int | None = None,
    ) -> tuple[Tensor, dict]:
        """Algorithm 3: recover θ_{T−K} from θ_T by K proximal-point steps on −f_D.

        Each step solves x = y + η∇f_D(x) (the optimality condition of
        argmin_x −f_D(x) + ||x − y||²/(2η), Lemma 2.3) by fixed-point iteration, a contraction
        with factor ηL < 1, started from the previous steps' displacements extrapolated (gradient
        descent's steps change slowly: the start is within O((ηL)²) of the solution, and the first
        step starts at y). With ``max_gradients`` the recovery stops before a step that could not
        finish within that many full-data gradients; ``steps`` then counts the steps recovered.
        Returns the recovered point and diagnostics (iterations per step, the largest final
        residual, whether every solve met ``tol``, the gradients evaluated).
        """
        K = self._rewind(rewind)
        L = self.constants_["L"].value
        if self.eta_ * L >= 1:
            raise InvalidInput("eta", f"< 1/L = {1 / L:.6g} for Algorithm 3 (Lemma 2.3)", self.eta_)
        X, y = self.fitted_data()
        current, moves = theta_T.clone(), list[Tensor]()
        iterations, worst, converged, spent = [], 0.0, True, 0
        for _ in range(K):
            guess = current + (2 * moves[-1] - moves[-2] if len(moves) > 1 else moves[-1] if moves else 0)
            x, it, residual = self._proximal_step(
                current, guess, X, y, tol, max_iter, None if max_gradients is None else max_gradients - spent
            )
            spent += it
            if x is None:  # the budget ran out inside this step: it is not recovered
                break
            converged &= residual <= tol * (1.0 + float(torch.linalg.vector_norm(x)))
            iterations.append(it)
            worst = max(worst, residual)
            moves.append(x - current)
            current = x
        return current, {
            "steps": len(iterations),
            "max_iterations": max(iterations, default=0),
            "max_residual": worst,
            "converged": converged,
            "tolerance": tol,
            "rewind": K,
            "gradients": spent,
        }

    def _proximal_step(
        self, y0: Tensor, x: Tensor, X: Tensor, y: Tensor, tol: float, max_iter: int, allowed: int | None
    ) -> tuple[Tensor | None, int, float]:
        """x = y0 + η∇f_D(x) by fixed-point iteration from ``x``: the point (None when ``allowed``
        gradients ran out first), the gradients used and the last residual."""
        residual = float("inf")
        for it in range(1, max_iter + 1):
            if allowed is not None and it > allowed:
                return None, it - 1, residual
            x_new = y0 + self.eta_ * self.objective.grad(x, X, y)
            residual = float(torch.linalg.vector_norm(x_new - x))
            x = x_new
            if residual <= tol * (1.0 + float(torch.linalg.vector_norm(x))):
                break
        return x, it, residual

    def checkpoint_recovery(self, theta_T: Tensor, budget: float = float("inf")) -> dict[str, Any]:
        """Algorithm 3 checked: recover θ_{T−K} from θ_T, measure the distance to the stored one.

        A diagnostic (no certificate depends on it) within ``budget`` trainings: at most budget × T
        full-data gradients. Cut short, it measures the steps it recovered against the stored
        θ_{T−steps} (the whole trajectory is kept when it fits in memory; otherwise a cut check is
        not applicable, there being no stored iterate to compare with)."""
        if minibatches(int(self.fitted_data()[0].shape[0]), self.batch_size, 1, 0) is not None:
            return {"applicable": False, "reason": "Algorithm 3 inverts full-batch steps; this run is mini-batch SGD"}
        limit = None if budget == float("inf") else max(1, int(budget * self.steps))
        try:
            recovered, diag = self.recover_checkpoint(theta_T, max_gradients=limit)
        except InvalidInput as exc:  # η ≥ 1/L: Algorithm 3 does not apply
            return {"applicable": False, "reason": str(exc)}
        if self.steps - diag["steps"] not in self.checkpoints_:
            return {
                "applicable": False,
                "reason": (
                    f"the diagnostic budget ({limit} gradients) recovered {diag['steps']} of K = {diag['rewind']} steps "
                    "and the trajectory was too large to keep whole: no stored iterate to compare with"
                ),
            }
        true = self.checkpoint(self.steps - diag["steps"])
        return {
            "applicable": True,
            "distance_to_checkpoint": float(torch.linalg.vector_norm(recovered - true)),
            "checkpoint_norm": float(torch.linalg.vector_norm(true)),
            **diag,
        }

    # -- Theorem 3.1 -------------------------------------------------------------------
    def sensitivity(self, forget_size: int, rewind: int | None = None) -> float:
        """Δ(K) = 2mG·h(K)/(Ln) of Theorem 3.1 for the fitted constants."""
        n = int(self.fitted_data()[0].shape[0])
        return r2d_sensitivity(
            self._rewind(rewind),
            self.steps,
            self.eta_,
            self.constants_["L"].value,
            self.constants_["G"].value,
            n,
            int(forget_size),
        )

    def knob_grid(self, points: int) -> list[int]:
        """Rewinds spread evenly over [0, T], with the configured K."""
        T = self.steps
        return sorted({int(round(i * T / (points - 1))) for i in range(points)} | {self.rewind})

    def knob_cost(self, value: int) -> float:
        """A rewind K replays K of training's T gradient steps on D' (K/T of a training)."""
        return self._rewind(int(value)) / self.steps

    def knob_is_retrain(self, value: int) -> bool:
        """K = T replays the whole training on D' from θ_0: the retrain (bit for bit in the
        mini-batch variant, to rounding in the batched full-batch sweep)."""
        return self._rewind(int(value)) == self.steps

    def knob_for_sigma(
        self, sigma: float, forget: Tensor, epsilon: float, delta: float, mechanism: str = "analytic"
    ) -> int:
        """Smallest K whose calibrated σ(K) is at most the budget ``sigma`` (exact search)."""
        n, m = int(self.fitted_data()[0].shape[0]), int(self.forget_indices(forget).numel())
        return r2d_rewind_for_sigma(
            sigma,
            epsilon,
            delta,
            self.steps,
            self.eta_,
            self.constants_["L"].value,
            self.constants_["G"].value,
            n,
            m,
            mechanism,
        )

    def _certify(
        self, forget: Tensor, epsilon: float, delta: float, mechanism: str, rewind: int | None = None
    ) -> Certificate:
        """The (ε, δ) certificate of Theorem 3.1 for deleting the records ``forget``."""
        bound = r2d_bound(
            self._rewind(rewind),
            self.steps,
            self.eta_,
            self.constants_["L"],
            self.constants_["G"],
            int(self.fitted_data()[0].shape[0]),
            int(forget.numel()),
            eta_note=(f" (chosen as horizon/(L*T) with horizon = {self.horizon})" if self.eta is None else ""),
        )
        return issue(
            self.name,
            "output-noise",
            epsilon=epsilon,
            delta=delta,
            mechanism=mechanism,
            bound=bound,
            assumptions=self.assumptions,
            conditions=[full_batch_condition(self.batch_size, int(self.fitted_data()[0].shape[0]), "Theorem 3.1")],
        )
