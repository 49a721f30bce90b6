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

from attacks.base import Attack, AttackInputs, AttackOutcome
from certify.errors import InvalidInput, require_integer, require_positive
from unlearners.objective import Objective


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
        return {"mean_steps": float(self.steps.mean()), "median_steps": float(np.median(self.steps)),
                "censored_fraction": float(self.censored.mean()), "target_loss": self.target_loss,
                "lr": self.lr, "max_steps": self.max_steps, "n_models": int(self.steps.size),
                "curve_mean_forget_loss": self.curve}


def relearn_time(
    objective: Objective,
    thetas: Tensor,
    X_forget: Tensor,
    y_forget: Tensor,
    *,
    target_loss: float,
    lr: float,
    max_steps: int = 200,
    chunk: int = 4096,
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
    if X_forget.shape[0] == 0 or X_forget.shape[0] != y_forget.shape[0]:
        raise InvalidInput("forget set", "a non-empty set of records with one label each",
                           (tuple(X_forget.shape), tuple(y_forget.shape)))
    lr = require_positive("lr", lr)
    max_steps = require_integer("max_steps", max_steps, 1)

    loss = vmap(objective.loss, in_dims=(0, None, None))
    step = vmap(objective.grad, in_dims=(0, None, None))  # closed form for a linear model
    steps_all, curves = [], []
    for start in range(0, thetas.shape[0], chunk):
        theta = thetas[start:start + chunk].clone()
        reached = torch.full((theta.shape[0],), max_steps + 1, dtype=torch.long, device=theta.device)
        curve = []
        for t in range(max_steps + 1):
            current = loss(theta, X_forget, y_forget)
            curve.append(current.sum())
            newly = (current <= target_loss) & (reached > max_steps)
            reached[newly] = t
            if t == max_steps or bool((reached <= max_steps).all()):
                curve.extend([current.sum()] * (max_steps - t))
                break
            theta = theta - lr * step(theta, X_forget, y_forget)
        steps_all.append(reached.cpu())
        curves.append(torch.stack(curve).cpu())
    steps = torch.cat(steps_all).numpy()
    mean_curve = (torch.stack(curves).sum(0) / thetas.shape[0]).tolist()
    return RelearnResult(steps=steps, censored=steps > max_steps, target_loss=float(target_loss),
                         lr=lr, max_steps=int(max_steps), curve=[float(v) for v in mean_curve])


class RelearnTime(Attack):
    """Relearn time as an attack: fewer fine-tuning steps to regain the original forget loss =
    remembers more. The fixed step is 1/L (stable for an L-smooth loss)."""

    name = "relearn"
    title = "Relearn time"
    description = ("fine-tuning steps (gradient descent on Z, step 1/L) until the forget loss reaches "
                   "the original model's; fewer steps = remembers more")
    needs = frozenset({"smoothness"})

    def run(self, inputs: AttackInputs) -> AttackOutcome:
        Xf, yf = inputs.forget_data
        target = float(inputs.objective.loss(inputs.theta_original, Xf, yf))
        lr = 1.0 / float(inputs.smoothness)
        max_steps = int(inputs.settings.get("relearn_max_steps", 100))
        ru = relearn_time(inputs.objective, inputs.released_unlearned, Xf, yf, target_loss=target, lr=lr,
                          max_steps=max_steps)
        rr = relearn_time(inputs.objective, inputs.released_retrained, Xf, yf, target_loss=target, lr=lr,
                          max_steps=max_steps)
        return AttackOutcome(-ru.steps.astype(float), -rr.steps.astype(float),
                             {"unlearned": ru.summary(), "retrained": rr.summary()})

