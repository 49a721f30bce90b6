"""Shadow models for attacks that declare they need them (U-LiRA, Hayes et al. 2024).

Shadow s trains a replica of the audited method (same options, and those it chose while
fitting) on a random half of the retained records plus the forget set Z, then releases the
model unlearned of Z ("in": the unlearned world) and the model retrained without Z ("out"),
each with the release's noise σ. Shadows are independent of the trials the attacks score: they
draw from their own seed, a pure function of the audit's attack seed.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from unlearners.base import Unlearner


def shadow_models(method: Unlearner, X: Tensor, y: Tensor, forget: Tensor,
                  init: Callable[[torch.Generator], Tensor], sigma: float, n: int,
                  seed: int) -> tuple[Tensor, Tensor]:
    """Released "in" and "out" shadow models, each of shape (n, d)."""
    mark = torch.zeros(X.shape[0], dtype=torch.bool, device=X.device)
    mark[forget] = True
    pool = torch.nonzero(~mark).squeeze(1)
    gen = torch.Generator().manual_seed(int(seed))
    shadow_in, shadow_out = [], []
    for _ in range(int(n)):
        half = pool[torch.randperm(pool.numel(), generator=gen)[: pool.numel() // 2].to(pool.device)]
        members = torch.cat([half, forget]).sort().values
        position = torch.searchsorted(members, forget)  # Z inside the shadow's training set
        shadow = method.replica()
        if type(shadow).capabilities.deletable_before_training:
            shadow.declare_deletable(position)
        shadow.fit(X[members], y[members], init(gen))
        shadow_in.append(Unlearner.release(shadow.unlearn(position), sigma, gen))
        shadow_out.append(Unlearner.release(shadow.retrain(position), sigma, gen))
    return torch.stack(shadow_in), torch.stack(shadow_out)
