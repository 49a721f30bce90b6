"""Full-batch gradient descent, the learning algorithm the first-order theorems analyse, for one
model and for a stack of models at once (vmap); and its mini-batch variant, which those theorems
do not cover (:func:`minibatches`, :func:`full_batch_condition`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import partial
from typing import Protocol

import torch
from torch import Tensor
from torch.func import vmap

from certify.certificate import Condition
from certify.errors import InvalidInput
from unlearners.batched import chunk_size
from unlearners.mlp_grads import mlp_grads, mlp_layout, padded_rows
from unlearners.objective import Objective


class Gradient(Protocol):
    """What :func:`gradient_descent` calls: ∇f_{(X, y)}(θ), of an :class:`Objective` or of a loss
    built on one (NegGrad+'s descent on the retained data and ascent on the forget set)."""

    def grad(self, theta: Tensor, X: Tensor, y: Tensor) -> Tensor: ...


def gradient_descent(
    objective: Gradient,
    theta0: Tensor,
    X: Tensor,
    y: Tensor,
    *,
    eta: float,
    steps: int,
    keep: Iterable[int] = (),
    callback: Callable[[int, Tensor], None] | None = None,
    batches: list[Tensor] | None = None,
) -> tuple[Tensor, dict[int, Tensor]]:
    """Run θ_t = θ_{t−1} − η ∇f_D(θ_{t−1}) for ``steps`` iterations with a constant step size
    (with ``batches``, step t uses the records ``batches[t − 1]``: mini-batch SGD).

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
        if batches is None:
            theta = theta - eta * objective.grad(theta, X, y)
        else:
            theta = theta - eta * objective.grad(theta, X[batches[t - 1]], y[batches[t - 1]])
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
    ``vmap`` of :meth:`Objective.grad` per step, ``chunk`` rows at a time (default: a block size
    fixed by the model and the data, :data:`ROW_BLOCK`; the last block is padded), so that row
    i's result does not depend on how many rows are stacked with it. An MLP that
    :func:`unlearners.mlp_grads.mlp_layout` recognises gets the same gradients, bit for bit, in
    closed form (:func:`unlearners.mlp_grads.mlp_grads`), and its last block is padded only as
    far as :func:`unlearners.mlp_grads.padded_rows` needs to keep those bits.

    Returns ``(θ_T, {t: θ_t})`` with stacks of shape (N, d) for every requested t ∈ [0, T].
    """
    if thetas0.ndim != 2:
        raise InvalidInput("thetas0", "a stack of parameter vectors of shape (N, d)", tuple(thetas0.shape))
    size = chunk_size(objective, X, ROW_BLOCK, chunk)  # a function of the model and data, never of N
    n = thetas0.shape[0]
    layout = mlp_layout(objective)
    grads = vmap(objective.grad, in_dims=(0, None, None)) if layout is None else partial(mlp_grads, objective, layout)
    wanted = set(int(t) for t in keep)
    thetas = _padded(thetas0, n + -n % size if layout is None else padded_rows(n, size, X))
    kept: dict[int, Tensor] = {0: thetas[:n].clone()} if 0 in wanted else {}
    for t in range(1, int(steps) + 1):
        g = torch.cat([grads(part, X, y) for part in thetas.split(size)])
        thetas = thetas - eta * g
        if t in wanted:
            kept[t] = thetas[:n].clone()
    return thetas[:n].clone(), kept


#: Rows per vmapped gradient when the caller names no chunk (fewer when one activation would not
#: fit :data:`unlearners.batched.CHUNK_ELEMENTS`). It must not depend on the number of rows: the
#: BLAS kernels behind a vmapped matrix product block the stacked rows by position, so a row's
#: last bits depend on the size of the block it is computed in (measured: 2e-16 apart between
#: 3 and 6 rows of the closed-form logistic gradient). With a fixed block, and the last block
#: padded to it, row i is computed the same way however many rows there are: the first N trials
#: of a larger run are bit for bit the smaller run, and shards of trials agree with one run.
ROW_BLOCK = 16


def _padded(rows: Tensor, total: int) -> Tensor:
    """``rows`` with copies of its last row appended up to ``total`` rows (dropped after)."""
    extra = total - rows.shape[0]
    return rows if extra == 0 else torch.cat([rows, rows[-1:].expand(extra, -1)])


def minibatches(n: int, batch_size: int | None, steps: int, seed: int, device=None) -> list[Tensor] | None:
    """The record indices of ``steps`` mini-batches over n records: a fresh permutation per epoch
    from ``seed``, cut into batches of ``batch_size`` (the last of an epoch may be smaller).
    ``None`` when ``batch_size`` is None or covers every record (full batch)."""
    if batch_size is None or batch_size >= n:
        return None
    gen = torch.Generator().manual_seed(int(seed))
    out: list[Tensor] = []
    while len(out) < steps:
        out += list(torch.randperm(n, generator=gen).split(int(batch_size)))
    return [b.to(device) for b in out[:steps]]


def full_batch_condition(batch_size: int | None, n: int, theorem: str) -> Condition:
    """The condition that A (and U) are full-batch gradient descent, as ``theorem`` analyses it;
    a mini-batch run is measured, never certified."""
    if batch_size is None or batch_size >= n:
        return Condition("full-batch gradient descent", True, f"A and U take full-batch steps, as {theorem} assumes")
    return Condition(
        "full-batch gradient descent",
        False,
        f"batch_size = {batch_size} < n = {n}: A and U are mini-batch SGD, which {theorem} does not "
        "cover; this variant is measured, not certified (leave batch_size unset for the certified path)",
    )
