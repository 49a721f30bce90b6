"""Many models at once: evaluation of a stack of parameter vectors (N, d), batched with vmap.

Every function vmaps the functional core (:class:`unlearners.objective.Objective`) over the
stack, chunked over models to bound memory (and, on CPU, to keep activations in cache: see
:data:`CHUNK_ELEMENTS`), and follows the device and dtype of the tensors it is given.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor, nn
from torch.func import vmap

from certify.errors import InvalidInput
from unlearners.objective import Objective

#: Default size of one vmapped chunk, in elements of its widest activation (models × records ×
#: widest layer). On CPU a chunk whose activations stay in cache is faster than one huge call
#: (measured on 2 cores, 64 MLPs 20-32-1 on 2,000 records: 16 models per call, ~1M elements,
#: ran a GD step ~1.5× faster than all 64 at once); on accelerators larger calls are better,
#: and the budget only bounds memory (2**26 float32 elements = 256 MiB per activation).
CHUNK_ELEMENTS = {"cpu": 2**20, "other": 2**26}


def batched_logits(objective: Objective, thetas: Tensor, X: Tensor, *, chunk: int | None = None) -> Tensor:
    """Outputs of N models on n records: shape (N, n) for a binary model, (N, n, C) otherwise."""
    return _evaluate(objective.logits, objective, thetas, (X,), chunk)


def batched_per_sample_loss(
    objective: Objective, thetas: Tensor, X: Tensor, y: Tensor, *, chunk: int | None = None
) -> Tensor:
    """f_z(θ_i) of N models on n records: shape (N, n)."""
    return _evaluate(objective.per_sample_loss, objective, thetas, (X, y), chunk)


def batched_loss(objective: Objective, thetas: Tensor, X: Tensor, y: Tensor, *, chunk: int | None = None) -> Tensor:
    """f_D(θ_i), the mean loss of each of N models: shape (N,)."""
    return _evaluate(objective.loss, objective, thetas, (X, y), chunk)


def batched_accuracy(objective: Objective, thetas: Tensor, X: Tensor, y: Tensor, *, chunk: int | None = None) -> Tensor:
    """Accuracy of each of N models: shape (N,), in the dtype of ``thetas``."""
    return _evaluate(objective.accuracy, objective, thetas, (X, y), chunk)


def _evaluate(fn: Callable, objective: Objective, thetas: Tensor, data: tuple, chunk: int | None) -> Tensor:
    if thetas.ndim != 2:
        raise InvalidInput("thetas", "a stack of parameter vectors of shape (N, d)", tuple(thetas.shape))
    batched = vmap(fn, in_dims=(0,) + (None,) * len(data))
    size = chunk_size(objective, data[0], thetas.shape[0], chunk)
    if size >= thetas.shape[0]:
        return batched(thetas, *data)
    return torch.cat([batched(part, *data) for part in thetas.split(size)])


def chunk_size(objective: Objective, X: Tensor, n_models: int, chunk: int | None = None) -> int:
    """Models per vmapped call: ``chunk`` if given, else what keeps one activation within
    :data:`CHUNK_ELEMENTS` for the device of ``X``."""
    if chunk is not None:
        if isinstance(chunk, bool) or int(chunk) != chunk or chunk < 1:
            raise InvalidInput("chunk", "an integer >= 1 (models per vmapped call), or None", chunk)
        return int(chunk)
    widths = [w for m in objective.model.modules() if isinstance(m, nn.Linear) for w in (m.in_features, m.out_features)]
    per_model = max(1, int(X.shape[0]) * max(widths, default=1))
    budget = CHUNK_ELEMENTS["cpu" if X.device.type == "cpu" else "other"]
    return max(1, min(max(1, n_models), budget // per_model))
