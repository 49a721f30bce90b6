"""Relearn time: how quickly a released model re-acquires the forgotten records.

Golatkar, Achille & Soatto 2020 ("Eternal Sunshine of the Spotless Net", CVPR) measure
unlearning by the number of fine-tuning steps a model needs on the forgotten data to regain the
original model's loss on it: a model that still "remembers" Z relearns it faster than one that
never saw it. Here the fine-tuning is a fixed optimizer (full-batch gradient descent on Z with a
constant step), run on many released models at once with ``torch.func.vmap``. The number of
steps is also a per-model score from which :mod:`attacks.epsilon` derives an ε lower bound.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch
from torch import Tensor
from torch.func import vmap

from attacks.base import Attack, AttackInputs, AttackOutcome, Features, ModelRows
from certify.errors import InvalidInput, require_integer, require_positive
from unlearners.objective import Objective

CHUNK = 4096
"""Models fine-tuned at once (bounds memory; the relearn summary's mean curve is summed by chunk)."""


@dataclass
class RelearnResult:
    """Relearn times of a stack of models.

    ``steps[i]`` is the first step at which model i's loss on the forget set is at most
    ``target_loss``; models that never get there within ``max_steps`` are censored at
    ``max_steps + 1`` (``censored[i]`` is True). ``curve`` is the mean forget loss after each
    step (length ``max_steps + 1``, step 0 first), for plotting.
    """

    steps: np.ndarray
    censored: np.ndarray
    target_loss: float
    lr: float
    max_steps: int
    curve: list[float] = field(default_factory=list)

    def summary(self) -> dict:
        return {
            "mean_steps": float(self.steps.mean()),
            "median_steps": float(np.median(self.steps)),
            "censored_fraction": float(self.censored.mean()),
            "target_loss": self.target_loss,
            "lr": self.lr,
            "max_steps": self.max_steps,
            "n_models": int(self.steps.size),
            "curve_mean_forget_loss": self.curve,
        }


def relearn_time(
    objective: Objective,
    thetas: Tensor,
    X_forget: Tensor,
    y_forget: Tensor,
    *,
    target_loss: float,
    lr: float,
    max_steps: int = 200,
    chunk: int = CHUNK,
) -> RelearnResult:
    """Fine-tune every model in ``thetas`` (N, d) on Z until its forget loss ≤ ``target_loss``.

    Parameters
    ----------
    objective:
        The model as functions of a flat θ.
    thetas:
        Released parameter vectors, one row per model.
    X_forget, y_forget:
        The forget set Z.
    target_loss:
        The loss to reach, normally the original (pre-deletion) model's loss on Z.
    lr:
        Constant step of the fine-tuning gradient descent (the same for every model: a fixed
        optimizer, so the step counts are comparable between worlds).
    max_steps:
        Cap; models that do not reach the target are censored at ``max_steps + 1``.
    chunk:
        Models fine-tuned at once (bounds memory).

    References
    ----------
    Golatkar, Achille & Soatto (2020), CVPR, §5 "relearn time".
    """
    if thetas.ndim != 2:
        raise InvalidInput("thetas", "a 2-D stack (N models, d parameters)", tuple(thetas.shape))
    lr, max_steps = _checked(X_forget, y_forget, lr, max_steps)

    steps_all, curves = [], []
    for start in range(0, thetas.shape[0], chunk):
        reached, losses = _fine_tune(
            objective,
            thetas[start : start + chunk],
            X_forget,
            y_forget,
            target_loss=target_loss,
            lr=lr,
            max_steps=max_steps,
            stop_early=True,
        )
        # the curve after the chunk stopped holds its last loss
        curve = [current.sum() for current in losses]
        curve.extend([curve[-1]] * (max_steps + 1 - len(losses)))
        steps_all.append(reached.cpu())
        curves.append(torch.stack(curve).cpu())
    steps = torch.cat(steps_all).numpy()
    mean_curve = (torch.stack(curves).sum(0) / thetas.shape[0]).tolist()
    return RelearnResult(
        steps=steps,
        censored=steps > max_steps,
        target_loss=float(target_loss),
        lr=lr,
        max_steps=int(max_steps),
        curve=[float(v) for v in mean_curve],
    )


def _checked(X_forget: Tensor, y_forget: Tensor, lr: float, max_steps: int) -> tuple[float, int]:
    """``lr`` and ``max_steps`` validated, once the forget set is checked non-empty and labelled."""
    if X_forget.shape[0] == 0 or X_forget.shape[0] != y_forget.shape[0]:
        raise InvalidInput(
            "forget set",
            "a non-empty set of records with one label each",
            (tuple(X_forget.shape), tuple(y_forget.shape)),
        )
    return require_positive("lr", lr), require_integer("max_steps", max_steps, 1)


def _fine_tune(
    objective: Objective,
    thetas: Tensor,
    X_forget: Tensor,
    y_forget: Tensor,
    *,
    target_loss: float,
    lr: float,
    max_steps: int,
    stop_early: bool,
) -> tuple[Tensor, list[Tensor]]:
    """Fine-tune the rows of ``thetas`` together: (the first step at which each row's forget loss is
    at most ``target_loss``, ``max_steps + 1`` when never; each row's forget loss at steps 0, 1, ...).

    Every row follows its own descent, so its step count and losses do not depend on the other
    rows. ``stop_early`` stops once every row reached the target (fewer losses are returned then:
    which step that is depends on every row); otherwise all ``max_steps + 1`` losses are computed.
    """
    loss = vmap(objective.loss, in_dims=(0, None, None))
    # the loss and the step's gradient from one forward pass (a third of a CNN step's work; the
    # same values as objective.loss and objective.grad, closed form for a linear model)
    loss_and_step = vmap(objective.loss_and_grad, in_dims=(0, None, None))
    theta = thetas.clone()
    reached = torch.full((theta.shape[0],), max_steps + 1, dtype=torch.long, device=theta.device)
    losses = []
    for t in range(max_steps + 1):
        current, step = (
            (loss(theta, X_forget, y_forget), None) if t == max_steps else loss_and_step(theta, X_forget, y_forget)
        )
        losses.append(current)
        newly = (current <= target_loss) & (reached > max_steps)
        reached[newly] = t
        if t == max_steps or (stop_early and bool((reached <= max_steps).all())):
            break
        assert step is not None  # only the last iteration, which has broken out above, takes no step
        theta = theta - lr * step
    return reached, losses


class RelearnTime(Attack):
    """Relearn time as an attack: fewer fine-tuning steps to regain the original forget loss =
    remembers more. The fixed step is 1/L (stable for an L-smooth loss).

    Feature of a model: its step count (a block of models stops once all of them reached the
    target; each model's count is its own). The summary's curve is the forget loss of the audit's
    own noiseless model of each world during the same fine-tuning (``curve_forget_loss``): one
    model, so that no model's whole curve has to be shipped; the step statistics cover every
    trial."""

    name = "relearn"
    title = "Relearn time"
    description = (
        "fine-tuning steps (gradient descent on Z, step 1/L) until the forget loss reaches "
        "the original model's; fewer steps = remembers more"
    )
    needs = frozenset({"smoothness"})
    orientation = "memory"  # fewer steps to relearn Z: remembers more

    @staticmethod
    def _settings(inputs: AttackInputs) -> tuple[float, float, int]:
        """(target loss, step, max steps): the original model's forget loss, 1/L, the setting."""
        Xf, yf = inputs.forget_data
        assert inputs.smoothness is not None  # given to every attack that needs "smoothness", as this one
        lr, max_steps = _checked(
            Xf, yf, 1.0 / float(inputs.smoothness), int(inputs.settings.get("relearn_max_steps", 100))
        )
        return float(inputs.objective.loss(inputs.theta_original, Xf, yf)), lr, max_steps

    def features(self, inputs: AttackInputs, models: ModelRows) -> dict[str, np.ndarray]:
        """``steps`` (n,): relearn time of each model."""
        Xf, yf = inputs.forget_data
        target, lr, max_steps = self._settings(inputs)
        parts = [
            _fine_tune(
                inputs.objective, block, Xf, yf, target_loss=target, lr=lr, max_steps=max_steps, stop_early=True
            )[0]
            for block in models.released.split(CHUNK)
        ]
        return {"steps": torch.cat(parts).cpu().numpy()}

    def score(self, inputs: AttackInputs, features: Features) -> AttackOutcome:
        target, lr, max_steps = self._settings(inputs)
        Xf, yf = inputs.forget_data
        own = {"unlearned": inputs.theta_unlearned, "retrained": inputs.theta_retrained}

        def summary(world: str) -> dict:
            steps = features[world]["steps"]
            curve = relearn_time(
                inputs.objective, own[world].unsqueeze(0), Xf, yf, target_loss=target, lr=lr, max_steps=max_steps
            ).curve
            out = RelearnResult(
                steps=steps, censored=steps > max_steps, target_loss=target, lr=lr, max_steps=max_steps
            ).summary()
            out.pop("curve_mean_forget_loss")
            return {**out, "curve_forget_loss": curve}

        return AttackOutcome(
            -features["unlearned"]["steps"].astype(float),
            -features["retrained"]["steps"].astype(float),
            {
                "unlearned": summary("unlearned"),
                "retrained": summary("retrained"),
                "curve": "forget loss of the audit's own noiseless model of each world while it is "
                "fine-tuned (it stops at the target); the step statistics cover every trial",
            },
        )
