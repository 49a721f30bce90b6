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

from typing import Any

from torch import Tensor

from certify.certificate import Certificate, Constant, issue
from certify.errors import Integer, Optional, Real
from certify.params import Param
from unlearners.base import Capabilities, Precision, Worlds
from unlearners.retrain import GRADIENT_DESCENT_OPTIONS, Retrain
from unlearners.training import gradient_descent


def unlearn_steps(value: int | None, steps: int) -> int:
    """The unlearning step count: ``value``, or 10 % of A's steps (at least 1) when None."""
    return max(1, round(0.1 * steps)) if value is None else int(value)


class GradientDescentBaseline(Retrain):
    """An uncertified baseline whose A is :class:`Retrain`'s full-batch gradient descent.

    ``_fit`` and ``_retrain`` are Retrain's (same θ_0, T, η, horizon), so the distance between
    U(A(D), D, Z) and A(D \\ Z) compares like with like; ``_fit`` also keeps A(D) for U.
    Subclasses implement ``_unlearn`` and set the class attributes; a subclass that batches its
    U declares ``train_many`` with :meth:`_worlds_many` (Retrain's is not inherited: U is not A).
    """

    certified = False
    precision = Precision(True, "nothing: no theorem (kind none); T and eta are reported")
    assumptions = ("none for privacy: the method has no theorem; closeness to retraining is measured empirically",)

    def _fit(self, X: Tensor, y: Tensor, theta0: Tensor) -> Tensor:
        self.theta_ = super()._fit(X, y, theta0)
        return self.theta_

    def _worlds_many(self, thetas0: Tensor, forget: Tensor, chunk: int | None, unlearn_many) -> Worlds:
        """A on D and on D' from every row of ``thetas0``, and ``unlearn_many(originals, forget,
        chunk)`` as U: the three worlds of N runs, batched."""
        forget = self.forget_indices(forget)
        X_r, y_r = self.retained(forget)
        original = self._descend_many(thetas0, *self.fitted_data(), self.steps, chunk)
        retrained = self._descend_many(thetas0, X_r, y_r, self.steps, chunk)
        return Worlds(original, unlearn_many(original, forget, chunk), retrained)

    def _certify(self, forget: Tensor, epsilon: float, delta: float, mechanism: str) -> Certificate:
        """Never issued: kind ``none``, the convention of every method without a theorem."""
        constants = [Constant("T", float(self.steps), "enforced", "gradient steps of A")]
        if getattr(self, "eta_", None) is not None:  # known once fit has chosen it
            constants.append(Constant("eta", float(self.eta_), "enforced", "constant step size of A"))
        return issue(
            self.name,
            "none",
            epsilon=epsilon,
            delta=delta,
            mechanism=mechanism,
            theorem=f"none: {self.name} is a heuristic baseline with no certified-removal or "
            "differential-privacy theorem",
            constants=constants,
            assumptions=self.assumptions,
        )


class FineTune(GradientDescentBaseline):
    """Fine-tune A(D) on the retained data D \\ Z with A's own gradient descent (uncertified).

    Options: A's ``steps``, ``eta``, ``horizon`` (as in ``retrain``); ``finetune_steps`` (U's
    gradient steps on D \\ Z from A(D); None: 10 % of T, at least 1) and ``finetune_eta`` (U's
    step size; None: A's η).
    """

    name = "finetune"
    title = "Fine-tune on the retained data (uncertified baseline)"
    paper = (
        "Qiao et al., arXiv:2404.01712, App. 8.2 (FineTune), after Tarun et al., 'Deep Regression "
        "Unlearning' (ICML 2023)"
    )
    deviations = (
        "full-batch gradient descent at A's constant step size instead of minibatch SGD "
        "(Qiao et al.: 10 epochs at lr 0.001)",
        "10% of A's steps by default (Qiao et al.: 10 of 40 epochs)",
    )
    capabilities = Capabilities(batched_training=True)  # train_many below batches its own U
    hyperparameters = GRADIENT_DESCENT_OPTIONS + (
        Param("finetune_steps", None, Optional(Integer(1), "for 10% of steps"), "gradient steps of U on D \\ Z"),
        Param("finetune_eta", None, Optional(Real(gt=0), "for A's eta"), "step size of U"),
    )

    def _check_options(self) -> None:
        self.finetune_steps = unlearn_steps(self.options["finetune_steps"], self.steps)

    def _unlearn(self, forget: Tensor) -> Tensor:
        """``finetune_steps`` gradient steps on f_{D\\Z} from A(D)."""
        X_r, y_r = self.retained(forget)
        theta, _ = gradient_descent(self.objective, self.theta_, X_r, y_r, eta=self._eta_u(), steps=self.finetune_steps)
        return theta

    def train_many(self, thetas0: Tensor, forget: Tensor, *, chunk: int | None = None) -> Worlds:
        """A, the fine-tuning and the retrain of N runs, batched (the same steps as ``_unlearn``)."""
        return self._worlds_many(thetas0, forget, chunk, self._finetune_many)

    def _finetune_many(self, originals: Tensor, forget: Tensor, chunk: int | None) -> Tensor:
        X_r, y_r = self.retained(forget)
        return self._descend_many(originals, X_r, y_r, self.finetune_steps, chunk, eta=self._eta_u())

    def _eta_u(self) -> float:
        return self.eta_ if self.finetune_eta is None else self.finetune_eta

    def report_hyperparameters(self) -> dict[str, Any]:
        return {
            **super().report_hyperparameters(),
            "finetune_steps": self.finetune_steps,
            "finetune_eta": self.finetune_eta if self.finetune_eta is not None else getattr(self, "eta_", None),
        }
