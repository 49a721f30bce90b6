"""The one interface every attack implements: what it reads, what it returns.

An attack scores released models. The audit decides which models exist (the trials of both
worlds, shadow models when an attack declares it needs them) and hands them over in one
:class:`AttackInputs`; the attack returns one score per released model of each world and the
facts it wants in the report (:class:`AttackOutcome`). The audit then turns every attack's
scores into the same ε lower bound, ROC curve and GDP estimate, so an attack never computes a
bound itself and the report and HTML page show a new attack without edits.

Two halves, so that the models can be made elsewhere (:mod:`audit.shards`). An attack reads a
model through :meth:`Attack.features`: small per-model arrays (its loss on Z, its confidence on
each forgotten record, a relearn time), a pure function of each model and the shared inputs.
The audit computes them where the models are trained, shard by shard, on any executor, and
ships only those arrays; :meth:`Attack.score` then turns the features of every model into the
outcome (fitting shadow Gaussians, choosing a variance model, ranking records: everything that
looks across models). :meth:`Attack.run` is the two in one process. An attack that implements
only ``run`` still works everywhere: its features default to the parameters themselves, so its
models are shipped whole.

Conventions: a larger score says "this release comes from the unlearned world" (the bound
tries both directions anyway); scores are finite; ``details`` is JSON data (numbers, strings,
lists, mappings), never personal data of the forgotten records.

Attacks are found by name through :mod:`attacks.registry`; this module imports no attack.
"""

from __future__ import annotations

from abc import ABC
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

import numpy as np
import torch
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
        The trials: released models of each world, shape (N, d). Empty, (0, d), in the inputs
        :meth:`Attack.features` and :meth:`Attack.score` receive (the models come as rows and
        as features).
    noiseless_unlearned, noiseless_retrained:
        The trials' noiseless parameters: (d,) when trials are noise draws, (N, d) when every
        trial retrains ((0, d) beside empty released stacks).
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

    @property
    def every_trial_retrains(self) -> bool:
        """Whether the trials are trainings (retrain mode) rather than noise draws around one model."""
        return self.noiseless_unlearned.ndim == 2

    def worlds(self) -> dict[str, ModelRows]:
        """The models of these inputs by world (:data:`WORLDS`): the two released stacks, and
        the shadow stacks that are present."""
        retrains = self.every_trial_retrains
        out = {
            "unlearned": ModelRows(self.released_unlearned, self.noiseless_unlearned if retrains else None),
            "retrained": ModelRows(self.released_retrained, self.noiseless_retrained if retrains else None),
        }
        for side in ("shadows_in", "shadows_out"):
            if getattr(self, side) is not None:
                out[side] = ModelRows(getattr(self, side))
        return out

    def without_models(self) -> AttackInputs:
        """These inputs with empty model stacks: the shared part that features and scores read."""
        empty = self.theta_original.new_empty((0, self.theta_original.shape[-1]))
        return replace(
            self,
            released_unlearned=empty,
            released_retrained=empty,
            noiseless_unlearned=empty if self.every_trial_retrains else self.noiseless_unlearned,
            noiseless_retrained=empty if self.every_trial_retrains else self.noiseless_retrained,
            shadows_in=None,
            shadows_out=None,
        )


#: The worlds whose models an attack scores: the trials of both worlds, and the shadow models
#: trained with Z then unlearned ("in") and trained without Z ("out").
WORLDS = ("unlearned", "retrained", "shadows_in", "shadows_out")


@dataclass(frozen=True)
class ModelRows:
    """A block of models of one world: released parameters (n, d) and, when every trial
    retrains, their noiseless parameters (n, d) (None for noise draws and shadow models)."""

    released: Tensor
    noiseless: Tensor | None = None

    def __len__(self) -> int:
        return int(self.released.shape[0])


#: Features of the models of every world: world -> feature name -> array with one row per model.
Features = Mapping[str, Mapping[str, np.ndarray]]


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

    A subclass implements :meth:`features` and :meth:`score` (the models are then never shipped:
    only their features), or only :meth:`run` (its features are the parameters).
    """

    name: ClassVar[str]
    title: ClassVar[str]
    description: ClassVar[str]
    needs: ClassVar[frozenset[str]] = frozenset()
    orientation: ClassVar[str] = "worlds"
    """What a larger score means (:data:`attacks.estimates.ORIENTATIONS`): "memory" (the release
    behaves more like a model that saw Z, so an AUROC below ½ is over-unlearning) or "worlds" (it
    looks more like the unlearned world's models, whichever side of the original they lie: the
    score cannot say which way). The default claims nothing."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        halves = cls.features is not Attack.features, cls.score is not Attack.score
        if halves[0] != halves[1]:
            raise TypeError(
                f"{cls.__name__} implements {'features' if halves[0] else 'score'} without "
                f"{'score' if halves[0] else 'features'}: an attack implements both, or only run"
            )
        # a named (registrable) attack must score something: refused when its module is imported,
        # so the registry lists it as a broken plug-in instead of failing in the middle of an audit
        if "name" in cls.__dict__ and not any(halves) and cls.run is Attack.run:
            raise TypeError(f"{cls.__name__} implements neither run nor features and score")

    @classmethod
    def ships_models(cls) -> bool:
        """Whether this attack's features are the parameters themselves (it implements only run)."""
        return cls.features is Attack.features

    def features(self, inputs: AttackInputs, models: ModelRows) -> dict[str, np.ndarray]:
        """What this attack reads of each model of ``models``: arrays with one row per model.

        ``inputs`` holds the shared part (:meth:`AttackInputs.without_models`: data, the audit's
        own models, σ, the seed, the shadow count in ``settings``). The rows must be a pure function of
        each model and ``inputs``, never a statistic over the block: the audit computes them in
        blocks of its choosing, on other machines, and concatenates them. Default: the released
        parameters (and the noiseless ones when every trial retrains), for an attack that
        implements only :meth:`run`."""
        out = {"released": to_numpy(models.released)}
        if models.noiseless is not None:
            out["noiseless"] = to_numpy(models.noiseless)
        return out

    def score(self, inputs: AttackInputs, features: Features) -> AttackOutcome:
        """The outcome from the features of every model, by world (:data:`WORLDS`; the shadow
        worlds only for an attack that needs them). Default (an attack that implements only
        :meth:`run`): the parameters are stacked back and :meth:`run` scores them."""
        device, dtype = inputs.theta_original.device, inputs.theta_original.dtype

        def stack(world: str, name: str) -> Tensor:
            return torch.as_tensor(features[world][name], dtype=dtype, device=device)

        retrains = "noiseless" in features["unlearned"]
        models: dict[str, Any] = dict(  # AttackInputs fields: the stacked model rows
            released_unlearned=stack("unlearned", "released"), released_retrained=stack("retrained", "released")
        )
        if retrains:
            models.update(
                noiseless_unlearned=stack("unlearned", "noiseless"), noiseless_retrained=stack("retrained", "noiseless")
            )
        for side in ("shadows_in", "shadows_out"):
            if side in features:
                models[side] = stack(side, "released")
        return self.run(replace(inputs, **models))

    def run(self, inputs: AttackInputs) -> AttackOutcome:
        """Score every released model of both worlds: :meth:`features` of each world's models,
        then :meth:`score`."""
        shared = inputs.without_models()
        return self.score(shared, {world: self.features(shared, rows) for world, rows in inputs.worlds().items()})


def to_numpy(t: Any) -> np.ndarray:
    """A tensor (any device) or array-like as a numpy array."""
    return t.detach().cpu().numpy() if isinstance(t, Tensor) else np.asarray(t)
