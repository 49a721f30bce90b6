"""The no-op "unlearning": release the original model A(D) as if Z had been deleted (uncertified).

This is the negative control of every empirical audit: an auditor that cannot tell it from
retraining has no power on this model and data (compare the positive control of
:mod:`audit.attacking`, which attacks A(D) against A(D \\ Z) inside every audit). A is
:class:`~unlearners.retrain.Retrain`'s full-batch gradient descent, so A(D \\ Z) is the fair
reference. It is also what an operator does who ignores a deletion request.
"""

from __future__ import annotations

from torch import Tensor

from unlearners.base import Capabilities, Worlds
from unlearners.finetune import GradientDescentBaseline
from unlearners.retrain import GRADIENT_DESCENT_OPTIONS


class NoOp(GradientDescentBaseline):
    """U(A(D), D, Z) = A(D): nothing is unlearned (the negative control)."""

    name = "noop"
    title = "No-op: the original model released unchanged (negative control)"
    paper = "negative control of empirical unlearning audits (e.g. Hayes et al., SaTML 2025, Sec. 5)"
    deviations = ()
    hyperparameters = GRADIENT_DESCENT_OPTIONS
    capabilities = Capabilities(batched_training=True)  # train_many below: U is the identity

    def _unlearn(self, forget: Tensor) -> Tensor:
        return self.theta_.clone()

    def train_many(self, thetas0: Tensor, forget: Tensor, *, chunk: int | None = None) -> Worlds:
        """A on D and on D' from every initial point; U releases A(D)."""
        return self._worlds_many(thetas0, forget, chunk, lambda originals, _forget, _chunk: originals.clone())
