"""The buffers a parameter vector θ holds (BatchNorm's running statistics): the module that holds
θ, and the statistics recomputed on the retain set. Everything here reads θ and D \\ Z only, so
for a certified method it is post-processing (:mod:`unlearners.noisyft`)."""

from __future__ import annotations

import copy
from collections.abc import Collection, Sequence
from typing import Protocol, TypeGuard

import torch
from torch import Tensor

from unlearners.objective import Objective

#: The records of one step: an index tensor of a mini-batch, or ``slice(None)`` for the full set.
Batch = Tensor | slice


def retain_statistics(
    objective: Objective,
    theta: Tensor,
    X_r: Tensor,
    y_r: Tensor,
    batches: Sequence[Batch],
    eta: float,
    gen: torch.Generator,
    frozen: Collection[str] = frozenset(),
) -> Tensor:
    """The noise-free phase of a model with buffers, then its buffers recomputed on the retain set.

    The steps run in train mode (BatchNorm on batch statistics, dropout drawing from a seed taken
    from ``gen``), plain SGD at ``eta`` on (X_r, y_r); then every normalisation layer's running
    statistics are reset and recomputed as the cumulative average over one pass of the retain set
    (momentum None). Everything read is the noisy parameters and D \\ Z: post-processing."""
    model = holding(objective, theta).train()
    params = [p for name, p in model.named_parameters() if p.requires_grad and name not in frozen]
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(torch.randint(2**62, (1,), generator=gen)))
        for batch in batches:
            model.zero_grad()
            objective.loss_of_outputs(model(X_r[batch]), y_r[batch]).mean().backward()
            with torch.no_grad():
                for p in params:
                    if p.grad is not None:
                        p.sub_(eta * p.grad)
        norms = [m for m in model.modules() if keeps_statistics(m)]
        for m in norms:
            m.reset_running_stats()
            m.momentum = None  # cumulative average: the statistics of the whole pass
        with torch.no_grad():
            for i in range(0, int(X_r.shape[0]), STATISTICS_CHUNK):
                model(X_r[i : i + STATISTICS_CHUNK])
    state = {**dict(model.named_parameters()), **dict(model.named_buffers())}
    return torch.cat([state[name].detach().reshape(-1) for name in objective.names]).to(theta)


#: Records per forward pass when recomputing the running statistics: the cumulative average gives
#: every chunk one weight, so the statistics depend on this and on the retain set's order, never on Z.
STATISTICS_CHUNK = 512


class _RunningStatistics(Protocol):
    """A normalisation layer that keeps running statistics (BatchNorm, InstanceNorm that tracks)."""

    momentum: float | None

    def reset_running_stats(self) -> None: ...


def keeps_statistics(module: torch.nn.Module) -> TypeGuard[_RunningStatistics]:
    """Whether ``module`` keeps running statistics (it has ``reset_running_stats``, as torch's
    normalisation layers that track them do)."""
    return callable(getattr(module, "reset_running_stats", None))


def holding(objective: Objective, theta: Tensor) -> torch.nn.Module:
    """A copy of the objective's module holding θ (parameters and buffers)."""
    model = copy.deepcopy(objective.model)
    with torch.no_grad():
        for name, value in objective.unflatten(theta).items():
            held = model.get_buffer(name) if name in objective.buffer_names else model.get_parameter(name)
            held.copy_(value)
    return model
