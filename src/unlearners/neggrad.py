"""Negative gradient (NegGrad+): descend on the retained data, ascend on the forget set (uncertified).

From A(D), U runs K steps of

    θ ← θ − η (∇f_{D\\Z}(θ) − α ∇f_Z(θ)),

i.e. gradient descent on f_{D\\Z} − α f_Z: the forget set's loss is pushed up while the retained
loss is kept down. This is the "NegGrad+" baseline of Kurmanji, Triantafillou, Hayes &
Triantafillou, "Towards Unbounded Machine Unlearning" (NeurIPS 2023) (their β·L_r − (1 − β)·L_f
is α = (1 − β)/β up to the step size). Plain NegGrad, ascent on Z alone
(Tarun et al., "Deep Regression Unlearning", ICML 2023; Qiao et al., arXiv:2404.01712,
App. 8.2: 2 epochs, lr 1e-4, batch 1), drifts away from A(D \\ Z) on the retained data too; the
descent term is the usual fix. No privacy theorem exists; the audit measures the method.

Ascent on a loss that is unbounded above (the logistic loss of a record pushed to the wrong
side) can run θ off to infinity; a non-finite θ is reported as an error, never returned.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from certify.errors import Integer, InvalidInput, Optional, Real
from certify.params import Param
from unlearners.base import Capabilities, Worlds
from unlearners.finetune import GradientDescentBaseline, unlearn_steps
from unlearners.objective import Objective
from unlearners.retrain import GRADIENT_DESCENT_OPTIONS
from unlearners.training import gradient_descent


class _DescentAscent:
    """f_{D'}(θ) − α f_Z(θ) exposed as the one method :func:`gradient_descent` calls.

    ``grad(θ, X, y)`` is ∇f_{(X, y)}(θ) − α ∇f_Z(θ): the retained data travels through
    gradient_descent's arguments, the forget set is fixed here.
    """

    def __init__(self, objective: Objective, X_forget: Tensor, y_forget: Tensor, alpha: float):
        self.objective, self.X_forget, self.y_forget, self.alpha = objective, X_forget, y_forget, alpha
        self.model = objective.model  # what the batched path sizes its chunks by

    def grad(self, theta: Tensor, X: Tensor, y: Tensor) -> Tensor:
        ascent = self.objective.grad(theta, self.X_forget, self.y_forget)
        return self.objective.grad(theta, X, y) - self.alpha * ascent


class NegativeGradient(GradientDescentBaseline):
    """NegGrad+ from A(D): descent on D \\ Z, weighted ascent on Z (uncertified).

    Options: A's ``steps``, ``eta``, ``horizon`` (as for :class:`~unlearners.finetune.FineTune`);
    ``neggrad_steps`` K (U's steps from A(D); None: 10 % of T, at least 1), ``neggrad_eta``
    (U's step size; None: A's η) and ``ascent_weight`` α ≥ 0 (α = 0 is fine-tuning).
    """

    name = "neggrad"
    title = "NegGrad+: descent on the retained data, ascent on the forget set (uncertified baseline)"
    paper = (
        "Kurmanji et al., 'Towards Unbounded Machine Unlearning' (NeurIPS 2023), NegGrad+; NegGrad as in "
        "Tarun et al., 'Deep Regression Unlearning' (ICML 2023) and Qiao et al., arXiv:2404.01712, App. 8.2"
    )
    deviations = (
        "NegGrad+ (descent on D \\ Z plus alpha-weighted ascent on Z), not Qiao et al.'s pure ascent on Z",
        "full-batch gradient descent at A's constant step size, 10% of A's steps by default "
        "(Qiao et al.: 2 epochs of batch-1 ascent at lr 1e-4)",
    )
    capabilities = Capabilities(batched_training=True)  # train_many below batches its own U
    hyperparameters = GRADIENT_DESCENT_OPTIONS + (
        Param("neggrad_steps", None, Optional(Integer(1), "for 10% of steps"), "K: steps of U from A(D)"),
        Param("neggrad_eta", None, Optional(Real(gt=0), "for A's eta"), "step size of U"),
        Param("ascent_weight", 1.0, Real(ge=0), "alpha: weight of the ascent on the forget set"),
    )

    def _check_options(self) -> None:
        self.neggrad_steps = unlearn_steps(self.options["neggrad_steps"], self.steps)

    def _unlearn(self, forget: Tensor) -> Tensor:
        """K steps of θ ← θ − η(∇f_{D\\Z}(θ) − α∇f_Z(θ)) from A(D).

        Raises
        ------
        InvalidInput
            (field ``neggrad_steps``) when θ stops being finite: the ascent diverged.
        """
        X_r, y_r = self.retained(forget)
        theta, _ = gradient_descent(
            self._descent_ascent(forget),
            self.theta_,
            X_r,
            y_r,
            eta=self._eta_u(),
            steps=self.neggrad_steps,
            callback=self._check_finite,
        )
        return theta

    def train_many(self, thetas0: Tensor, forget: Tensor, *, chunk: int | None = None) -> Worlds:
        """A, NegGrad+ and the retrain of N runs, batched (the same steps as ``_unlearn``)."""
        return self._worlds_many(thetas0, forget, chunk, self._neggrad_many)

    def _neggrad_many(self, originals: Tensor, forget: Tensor, chunk: int | None) -> Tensor:
        X_r, y_r = self.retained(forget)
        thetas = self._descend_many(
            originals, X_r, y_r, self.neggrad_steps, chunk, eta=self._eta_u(), objective=self._descent_ascent(forget)
        )
        self._check_finite(self.neggrad_steps, thetas)
        return thetas

    def _descent_ascent(self, forget: Tensor) -> _DescentAscent:
        X, y = self.fitted_data()
        return _DescentAscent(self.objective, X[forget], y[forget], self.ascent_weight)

    def _eta_u(self) -> float:
        return self.eta_ if self.neggrad_eta is None else self.neggrad_eta

    def _check_finite(self, t: int, theta: Tensor) -> None:
        if not bool(torch.isfinite(theta).all()):
            raise InvalidInput(
                "neggrad_steps",
                f"few enough steps for the ascent to stay finite (theta is not finite after step {t})",
                self.neggrad_steps,
                hint="Lower neggrad_steps, neggrad_eta or ascent_weight.",
            )

    def report_hyperparameters(self) -> dict[str, Any]:
        return {
            **super().report_hyperparameters(),
            "neggrad_steps": self.neggrad_steps,
            "neggrad_eta": self.neggrad_eta if self.neggrad_eta is not None else getattr(self, "eta_", None),
            "ascent_weight": self.ascent_weight,
        }
