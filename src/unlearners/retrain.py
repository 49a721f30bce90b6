"""Exact unlearning by retraining from scratch: the reference every audit compares against."""

from __future__ import annotations

import torch
from torch import Tensor

from certify.certificate import Certificate, Constant
from certify.errors import InvalidInput
from unlearners.base import Unlearner, register
from unlearners.objective import Objective
from unlearners.smoothness import step_size
from unlearners.training import gradient_descent


@register
class Retrain(Unlearner):
    """Retrain on D \\ Z with the same full-batch gradient descent (ε = 0 by construction).

    Parameters
    ----------
    steps, eta, horizon:
        Gradient steps T and constant step size η of the learning algorithm (η = horizon/(L·T)
        when not given, as for R2D, so that both learn the same model).
    """

    name = "retrain"
    title = "Retrain from scratch"
    paper = "exact unlearning baseline (e.g. Bourtoule et al. 2021, 'Machine Unlearning', S&P)"
    certified = True
    assumptions = ("the released model is exactly A(D \\ Z): nothing to certify beyond that",)
    deviations = ()

    def __init__(self, objective: Objective, *, steps: int = 100, eta: float | None = None,
                 horizon: float = 6.0):
        super().__init__(objective)
        if int(steps) != steps or steps < 1:
            raise InvalidInput("steps", "an integer >= 1", steps)
        if eta is not None and not (eta > 0 and eta < float("inf")):
            raise InvalidInput("eta", "a finite number > 0, or None for eta = horizon/(L*T)", eta)
        self.steps, self.eta, self.horizon = int(steps), eta, float(horizon)

    def fit(self, X: Tensor, y: Tensor, theta0: Tensor) -> Tensor:
        self._remember(X, y)
        self.theta0_ = theta0.clone()
        self.eta_ = step_size(self.objective, X, y, theta0, eta=self.eta, horizon=self.horizon,
                              steps=self.steps, generator=torch.Generator().manual_seed(0))
        theta, _ = gradient_descent(self.objective, theta0, X, y, eta=self.eta_, steps=self.steps)
        return theta

    def retrain(self, forget: Tensor) -> Tensor:
        X_r, y_r = self.retained(forget)
        theta, _ = gradient_descent(self.objective, self.theta0_, X_r, y_r, eta=self.eta_, steps=self.steps)
        return theta

    unlearn = retrain

    def hyperparameters(self) -> dict:
        return {"steps": self.steps, "eta": getattr(self, "eta_", self.eta), "horizon": self.horizon}

    def certify(self, forget_size: int, epsilon: float, delta: float, mechanism: str = "analytic") -> Certificate:
        return Certificate(
            method=self.name, epsilon=float(epsilon), delta=float(delta), sigma=0.0,
            sensitivity=0.0, mechanism=mechanism,
            theorem="exact unlearning: U(A(D), D, Z) = A(D \\ Z), so the two releases are identical",
            constants=[Constant("T", float(self.steps), "enforced", "gradient steps"),
                       Constant("eta", self.eta_, "enforced", "constant step size")],
            assumptions=list(self.assumptions),
        )
