"""The one interface every attack implements: what it reads, what it returns.

An attack scores released models. The audit decides which models exist (the trials of both
worlds, shadow models when an attack declares it needs them) and hands them over in one
:class:`AttackInputs`; the attack returns one score per released model of each world and the
facts it wants in the report (:class:`AttackOutcome`). The audit then turns every attack's
scores into the same ε lower bound, ROC curve and GDP estimate, so an attack never computes a
bound itself and the report and HTML page show a new attack without edits.

Conventions: a larger score says "this release comes from the unlearned world" (the bound
tries both directions anyway); scores are finite; ``details`` is JSON data (numbers, strings,
lists, mappings), never personal data of the forgotten records.

Attacks are found by name through :mod:`attacks.registry`; this module imports no attack.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
from torch import Tensor

from unlearners.objective import Objective

#: What an attack may declare it needs beyond the trials (so the audit computes it only then).
NEEDS = ("shadows", "smoothness")


@dataclass(frozen=True)
class AttackInputs:
    """Everything an attack may look at.

    Attributes
    ----------
    objective:
        The model as functions of a flat θ.
    X, y, forget:
        The training set D and the indices of the forget set Z in it.
    X_unseen, y_unseen:
        Records no model of the audit was trained on.
    theta_original, theta_unlearned, theta_retrained:
        The audit's own noiseless A(D), U(A(D), D, Z) and A(D \\ Z), shape (d,).
    released_unlearned, released_retrained:
        The trials: released models of each world, shape (N, d).
    noiseless_unlearned, noiseless_retrained:
        The trials' noiseless parameters: (d,) when trials are noise draws, (N, d) when every
        trial retrains.
    sigma, delta:
        The release's noise scale and the δ of the bounds.
    seed:
        This attack's own seed (a pure function of the audit's attack seed and the attack name).
    settings:
        The audit's attack settings (``shadow_models``, ``relearn_max_steps``, ...).
    shadows_in, shadows_out:
        Only for attacks that need ``"shadows"``: released shadow models trained with Z and
        then unlearned ("in") and trained without Z ("out"), shape (S, d), independent of the
        trials.
    smoothness:
        Only for attacks that need ``"smoothness"``: L of the per-sample loss.
    """

    objective: Objective
    X: Tensor
    y: Tensor
    forget: Tensor
    X_unseen: Tensor
    y_unseen: Tensor
    theta_original: Tensor
    theta_unlearned: Tensor
    theta_retrained: Tensor
    released_unlearned: Tensor
    released_retrained: Tensor
    noiseless_unlearned: Tensor
    noiseless_retrained: Tensor
    sigma: float
    delta: float
    seed: int
    settings: Mapping[str, Any] = field(default_factory=dict)
    shadows_in: Tensor | None = None
    shadows_out: Tensor | None = None
    smoothness: float | None = None

    @property
    def forget_data(self) -> tuple[Tensor, Tensor]:
        return self.X[self.forget], self.y[self.forget]


@dataclass(frozen=True)
class AttackOutcome:
    """One score per released model of each world, and the attack's own facts for the report."""

    scores_unlearned: np.ndarray
    scores_retrained: np.ndarray
    details: dict[str, Any] = field(default_factory=dict)


class Attack(ABC):
    """Base class of an attack on the released models.

    Class attributes: ``name`` (the ``--attacks`` key), ``title``, ``description`` (what a
    score is, for the report), ``needs`` (a subset of :data:`NEEDS`).
    """

    name: ClassVar[str]
    title: ClassVar[str]
    description: ClassVar[str]
    needs: ClassVar[frozenset[str]] = frozenset()

    @abstractmethod
    def run(self, inputs: AttackInputs) -> AttackOutcome:
        """Score every released model of both worlds."""


def to_numpy(t: Any) -> np.ndarray:
    """A tensor (any device) or array-like as a numpy array."""
    return t.detach().cpu().numpy() if isinstance(t, Tensor) else np.asarray(t)
