"""Exact unlearning by retraining from scratch: the reference every audit compares against."""

from __future__ import annotations

from typing import Any, ClassVar

import torch
from torch import Tensor

from certify.certificate import Certificate, Constant, issue
from certify.errors import Integer, Optional, Real
from certify.params import Param
from unlearners.base import Capabilities, Precision, Unlearner, Worlds
from unlearners.smoothness import step_size
from unlearners.training import batched_gradient_descent, gradient_descent

#: A's options, shared by every method whose learning algorithm is Retrain's gradient descent.
GRADIENT_DESCENT_OPTIONS = (
    Param("steps", 100, Integer(1, 1_000_000), "T: full-batch gradient steps of A (and of the retrain)", audit="steps"),
    Param("eta", None, Optional(Real(gt=0), "for eta = horizon/(L*T)"), "constant step size of A", audit="eta"),
    Param("horizon", 6.0, Real(gt=0), "eta*L*T when eta is None", audit="horizon"),
)


class Retrain(Unlearner):
    """Retrain on D \\ Z with the same full-batch gradient descent (ε = 0 by construction).

    Options: ``steps`` T and ``eta`` (η = horizon/(L·T) when None, as for R2D, so that both
    learn the same model), ``horizon``.
    """

    name = "retrain"
    title = "Retrain from scratch"
    paper = "exact unlearning baseline (e.g. Bourtoule et al. 2021, 'Machine Unlearning', S&P)"
    certified = True
    precision = Precision(
        True,
        "nothing numerical: exact unlearning (epsilon = 0) holds because the unlearned "
        "and retrained models are the same computation at either precision; T and eta are"
        " reported",
    )
    # the base's declared types: a subclass (noisy-ft) declares tables of other lengths
    assumptions: ClassVar[tuple[str, ...]] = (
        "the released model is exactly A(D \\ Z): nothing to certify beyond that",
    )
    deviations: ClassVar[tuple[str, ...]] = ()
    hyperparameters: ClassVar[tuple[Param, ...]] = GRADIENT_DESCENT_OPTIONS
    capabilities = Capabilities(batched_training=True)

    def _fit(self, X: Tensor, y: Tensor, theta0: Tensor) -> Tensor:
        self.theta0_ = theta0.clone()
        self.eta_ = step_size(
            self.objective,
            X,
            y,
            theta0,
            eta=self.eta,
            horizon=self.horizon,
            steps=self.steps,
            generator=torch.Generator().manual_seed(0),
        )
        theta, _ = gradient_descent(self.objective, theta0, X, y, eta=self.eta_, steps=self.steps)
        return theta

    def _retrain(self, forget: Tensor) -> Tensor:
        X_r, y_r = self.retained(forget)
        theta, _ = gradient_descent(self.objective, self.theta0_, X_r, y_r, eta=self.eta_, steps=self.steps)
        return theta

    def _unlearn(self, forget: Tensor) -> Tensor:
        return self._retrain(forget)

    def train_many(self, thetas0: Tensor, forget: Tensor, *, chunk: int | None = None) -> Worlds:
        """T steps on D and on D' from every initial point; unlearning *is* retraining (one run
        serves both worlds)."""
        X_r, y_r = self.retained(self.forget_indices(forget))
        original = self._descend_many(thetas0, *self.fitted_data(), self.steps, chunk)
        retrained = self._descend_many(thetas0, X_r, y_r, self.steps, chunk)
        return Worlds(original, retrained.clone(), retrained)

    def _descend_many(
        self,
        thetas0: Tensor,
        X: Tensor,
        y: Tensor,
        steps: int,
        chunk: int | None,
        eta: float | None = None,
        objective=None,
    ) -> Tensor:
        """``steps`` batched full-batch gradient steps of A's kind from every row of ``thetas0``."""
        theta, _ = batched_gradient_descent(
            objective or self.objective,
            thetas0,
            X,
            y,
            eta=float(self.eta_ if eta is None else eta),
            steps=steps,
            chunk=chunk,
        )
        return theta

    def pinned_options(self) -> dict[str, Any]:
        return {"eta": self.eta_} if getattr(self, "eta_", None) is not None else {}

    def report_hyperparameters(self) -> dict:
        return {"steps": self.steps, "eta": getattr(self, "eta_", self.eta), "horizon": self.horizon}

    def _certify(self, forget: Tensor, epsilon: float, delta: float, mechanism: str) -> Certificate:
        return issue(
            self.name,
            "exact",
            epsilon=epsilon,
            delta=delta,
            mechanism=mechanism,
            theorem="exact unlearning: U(A(D), D, Z) = A(D \\ Z), so the two releases are identical",
            constants=[
                Constant("T", float(self.steps), "enforced", "gradient steps"),
                Constant("eta", self.eta_, "enforced", "constant step size"),
            ],
            assumptions=self.assumptions,
        )
