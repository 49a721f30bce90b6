"""Full-batch gradient descent, the learning algorithm the first-order theorems analyse, for one
model and for a stack of models at once (vmap)."""

from __future__ import annotations

from collections.abc import Callable, Iterable

import torch
from torch import Tensor
from torch.func import vmap

from certify.errors import InvalidInput
from unlearners.batched import chunk_size
from unlearners.objective import Objective


def gradient_descent(
    objective: Objective,
    theta0: Tensor,
    X: Tensor,
    y: Tensor,
    *,
    eta: float,
    steps: int,
    keep: Iterable[int] = (),
    callback: Callable[[int, Tensor], None] | None = None,
) -> tuple[Tensor, dict[int, Tensor]]:
    """Run θ_t = θ_{t−1} − η ∇f_D(θ_{t−1}) for ``steps`` iterations with a constant step size.

    Parameters
    ----------
    objective, X, y:
        The empirical risk f_D and its data.
    theta0:
        The starting point (not modified).
    eta, steps:
        Constant step size η and number of gradient steps T.
    keep:
        Iterate indices t ∈ [0, T] to return copies of (checkpoints).
    callback:
        Called as ``callback(t, θ_t)`` after every step (for progress reporting).

    Returns
    -------
    (θ_T, checkpoints):
        The last iterate and ``{t: θ_t}`` for every requested t.
    """
    wanted = set(int(t) for t in keep)
    theta = theta0.clone()
    kept: dict[int, Tensor] = {0: theta.clone()} if 0 in wanted else {}
    for t in range(1, steps + 1):
        theta = theta - eta * objective.grad(theta, X, y)
        if t in wanted:
            kept[t] = theta.clone()
        if callback is not None:
            callback(t, theta)
    return theta, kept


def batched_gradient_descent(
    objective: Objective,
    thetas0: Tensor,
    X: Tensor,
    y: Tensor,
    *,
    eta: float,
    steps: int,
    keep: Iterable[int] = (),
    chunk: int | None = None,
) -> tuple[Tensor, dict[int, Tensor]]:
    """Full-batch gradient descent on every row of a stack (N, d) of parameter vectors at once.

    Row i follows exactly :func:`unlearners.training.gradient_descent` from ``thetas0[i]``
    (θ_t = θ_{t−1} − η ∇f_D(θ_{t−1})), with the gradients of all rows computed by one
    ``vmap`` of :meth:`Objective.grad` per step (``chunk`` rows at a time).

    Returns ``(θ_T, {t: θ_t})`` with stacks of shape (N, d) for every requested t ∈ [0, T].
    """
    if thetas0.ndim != 2:
        raise InvalidInput("thetas0", "a stack of parameter vectors of shape (N, d)", tuple(thetas0.shape))
    size = chunk_size(objective, X, thetas0.shape[0], chunk)
    grads = vmap(objective.grad, in_dims=(0, None, None))
    wanted = set(int(t) for t in keep)
    thetas = thetas0.clone()
    kept: dict[int, Tensor] = {0: thetas.clone()} if 0 in wanted else {}
    for t in range(1, int(steps) + 1):
        if size >= thetas.shape[0]:
            g = grads(thetas, X, y)
        else:
            g = torch.cat([grads(part, X, y) for part in thetas.split(size)])
        thetas = thetas - eta * g
        if t in wanted:
            kept[t] = thetas.clone()
    return thetas, kept
