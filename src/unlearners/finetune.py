"""Fine-tuning on the retained data: the simplest approximate unlearning baseline (uncertified).

U(A(D), D, Z) continues the learning algorithm from A(D) on D \\ Z for a few steps, hoping to
wash out the deleted records' influence. It has no privacy theorem; the audit measures it.

References: Qiao, Zhang, Tang & Wei, "Efficient Online Unlearning via Hessian-Free Recollection
of Individual Data Statistics" (arXiv:2404.01712), App. 8.2 "FineTune" (10 epochs on S \\ U at
lr 0.001 after 40 training epochs), a baseline they take from Tarun, Chundawat, Mandal &
Kankanhalli, "Deep Regression Unlearning" (ICML 2023).

This module also holds :class:`GradientDescentBaseline`, the part ``finetune`` and ``neggrad``
share: the learning algorithm A of ``retrain`` (so that A(D \\ Z) is the fair reference) and the
certificate that is never issued.
"""

from __future__ import annotations

import math

from torch import Tensor

from certify.certificate import Certificate, Constant
from certify.errors import require_integer, require_positive
from unlearners.base import register
from unlearners.objective import Objective
from unlearners.retrain import Retrain
from unlearners.training import gradient_descent


def default_unlearn_steps(field: str, value: int | None, steps: int) -> int:
    """The unlearning step count: ``value``, or 10 % of A's steps (at least 1) when None."""
    return max(1, round(0.1 * steps)) if value is None else require_integer(field, value, 1)


class GradientDescentBaseline(Retrain):
    """An uncertified baseline whose A is :class:`Retrain`'s full-batch gradient descent.

    ``fit`` and ``retrain`` are Retrain's (same θ_0, T, η, horizon), so the distance between
    U(A(D), D, Z) and A(D \\ Z) compares like with like; ``fit`` also keeps A(D) for U.
    Subclasses implement ``unlearn`` and set the class attributes.
    """

    certified = False
    assumptions = ("none for privacy: the method has no theorem; closeness to retraining is measured "
                   "empirically",)

    def fit(self, X: Tensor, y: Tensor, theta0: Tensor) -> Tensor:
        self.theta_ = super().fit(X, y, theta0)
        return self.theta_

    def _fitted(self) -> Tensor:
        if getattr(self, "theta_", None) is None:
            raise RuntimeError(f"{type(self).__name__}.fit must be called before unlearning")
        return self.theta_

    def certify(self, forget_size: int, epsilon: float, delta: float, mechanism: str = "analytic") -> Certificate:
        """Never issued (valid=False, σ = 0, sensitivity = ∞), the convention of every uncertified method."""
        constants = [Constant("T", float(self.steps), "enforced", "gradient steps of A")]
        if getattr(self, "eta_", None) is not None:  # known once fit has chosen it
            constants.append(Constant("eta", float(self.eta_), "enforced", "constant step size of A"))
        return Certificate(
            method=self.name, epsilon=float(epsilon), delta=float(delta), sigma=0.0,
            sensitivity=math.inf, mechanism=mechanism,
            theorem=f"none: {self.name} is a heuristic baseline with no certified-removal or "
                    "differential-privacy theorem",
            constants=constants,
            assumptions=list(self.assumptions),
            warnings=[f"{self.name} carries no certificate: the audit measures it empirically only"],
            valid=False,
        )


@register
class FineTune(GradientDescentBaseline):
    """Fine-tune A(D) on the retained data D \\ Z with A's own gradient descent (uncertified).

    Parameters
    ----------
    objective:
        The per-sample loss as functions of a flat θ.
    steps, eta, horizon:
        A: T full-batch gradient steps with constant step η (η = horizon/(L·T) when None), as
        in ``retrain``.
    finetune_steps:
        Gradient steps of U on D \\ Z from A(D); None: 10 % of T (at least 1).
    finetune_eta:
        Step size of U; None: A's η.
    """

    name = "finetune"
    title = "Fine-tune on the retained data (uncertified baseline)"
    paper = ("Qiao et al., arXiv:2404.01712, App. 8.2 (FineTune), after Tarun et al., 'Deep Regression "
             "Unlearning' (ICML 2023)")
    deviations = (
        "full-batch gradient descent at A's constant step size instead of minibatch SGD "
        "(Qiao et al.: 10 epochs at lr 0.001)",
        "10% of A's steps by default (Qiao et al.: 10 of 40 epochs)",
    )

    def __init__(self, objective: Objective, *, steps: int = 100, eta: float | None = None,
                 horizon: float = 6.0, finetune_steps: int | None = None, finetune_eta: float | None = None):
        super().__init__(objective, steps=steps, eta=eta, horizon=horizon)
        self.finetune_steps = default_unlearn_steps("finetune_steps", finetune_steps, self.steps)
        self.finetune_eta = None if finetune_eta is None else require_positive("finetune_eta", finetune_eta)

    def unlearn(self, forget: Tensor) -> Tensor:
        """``finetune_steps`` gradient steps on f_{D\\Z} from A(D)."""
        theta = self._fitted()
        X_r, y_r = self.retained(forget)
        eta = self.eta_ if self.finetune_eta is None else self.finetune_eta
        theta, _ = gradient_descent(self.objective, theta, X_r, y_r, eta=eta, steps=self.finetune_steps)
        return theta

    def hyperparameters(self) -> dict:
        return {**super().hyperparameters(), "finetune_steps": self.finetune_steps,
                "finetune_eta": self.finetune_eta if self.finetune_eta is not None else getattr(self, "eta_", None)}
