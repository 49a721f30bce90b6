"""Full-batch gradient descent, the learning algorithm the first-order theorems analyse."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from torch import Tensor

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
