"""Small synthetic problems shared by the tests."""

import torch


def synthetic(n=600, d=5, classes=2, seed=0):
    """A small linearly separable-ish problem with unit-norm rows."""
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(n, d, generator=g, dtype=torch.float64)
    X = X / X.norm(dim=1, keepdim=True)
    w = torch.randn(d, classes, generator=g, dtype=torch.float64)
    y = (X @ w * 3 + 0.5 * torch.randn(n, classes, generator=g, dtype=torch.float64)).argmax(1)
    return X, y
