"""Extreme eigenvalues of a symmetric operator by power iteration (Golub & Van Loan §7.3).

:func:`power_iteration` estimates the largest eigenvalue (a lower bound on λ_max, as a Rayleigh
quotient), :func:`smallest_eigenvalue` the smallest (an upper bound on λ_min) by power iteration on
the shifted operator; :mod:`unlearners.lanczos` converges much faster for the same number of
products. The operator is a callable ``matvec(v) -> A v`` on flat vectors (the conventions of
:mod:`unlearners.linalg`, which exports both); the start vectors are drawn with an explicit
``torch.Generator`` on its device and moved to the data's device, so results are a pure function
of the generator's state. Bad arguments raise :class:`certify.errors.InvalidInput`.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import Tensor

from certify.errors import InvalidInput, require_integer, require_nonnegative


def _randn(dim: int, generator: torch.Generator, dtype, device) -> Tensor:
    """Standard normal vector drawn on the generator's device, moved to ``device``."""
    return torch.randn(dim, generator=generator, dtype=dtype, device=generator.device).to(device)


def _power(matvec: Callable[[Tensor], Tensor], v: Tensor, iters: int, tol: float) -> tuple[float, Tensor]:
    v = v / torch.linalg.vector_norm(v)
    lam = float("nan")
    for _ in range(iters):
        w = matvec(v)
        new = float(torch.dot(v, w))  # Rayleigh quotient vᵀAv, ‖v‖ = 1
        norm = torch.linalg.vector_norm(w)
        if float(norm) == 0.0:
            return 0.0, v
        v = w / norm
        if tol and math.isfinite(lam) and abs(new - lam) <= tol * max(abs(new), 1e-300):
            lam = new
            break
        lam = new
    lam = float(torch.dot(v, matvec(v)))
    return lam, v


def power_iteration(
    matvec: Callable[[Tensor], Tensor],
    dim: int,
    *,
    iters: int = 100,
    generator: torch.Generator,
    dtype: torch.dtype = torch.float64,
    device: torch.device | str | None = None,
    tol: float = 0.0,
) -> tuple[float, Tensor]:
    """Estimate the largest (algebraic) eigenvalue of a symmetric operator by power iteration.

    Golub & Van Loan §7.3.1: v ← A v / ‖A v‖ from a Gaussian start drawn with ``generator``; the
    estimate is the Rayleigh quotient vᵀ A v, which never exceeds λ_max and converges at rate
    (λ_2/λ_1)^{2k} (as a lower bound on λ_max; use a safety factor when it must bound ‖A‖, e.g. a
    LiSSA scale). Plain power iteration finds the eigenvalue of largest **magnitude**; if that
    estimate is negative (an indefinite A with |λ_min| > λ_max), a second run on A − μI with
    μ the negative estimate returns the algebraically largest eigenvalue instead.

    Parameters
    ----------
    iters:
        Power steps per run, >= 1.
    tol:
        Stop early when the Rayleigh quotient changes by <= tol relative (0: run all iters).

    Returns
    -------
    (eigenvalue, unit eigenvector estimate)
    """
    d = require_integer("dim", dim, 1)
    k = require_integer("iters", iters, 1)
    tol = require_nonnegative("tol", tol)
    device = torch.device("cpu") if device is None else torch.device(device)
    v0 = _randn(d, generator, dtype, device)
    lam, v = _power(matvec, v0, k, tol)
    if lam < 0:
        mu = lam
        shifted = lambda u: matvec(u) - mu * u  # noqa: E731  spectrum shifted to [0, λ_max − μ]
        _, v = _power(shifted, _randn(d, generator, dtype, device), k, tol)
        lam = float(torch.dot(v, matvec(v)))
    return lam, v


def smallest_eigenvalue(
    matvec: Callable[[Tensor], Tensor],
    dim: int,
    *,
    largest: float | None = None,
    iters: int = 100,
    generator: torch.Generator,
    dtype: torch.dtype = torch.float64,
    device: torch.device | str | None = None,
    tol: float = 0.0,
) -> tuple[float, Tensor]:
    """Estimate the smallest (algebraic) eigenvalue of a symmetric operator A.

    Power iteration on the shifted operator B = c·I − A with c >= λ_max(A), whose dominant
    eigenvalue is c − λ_min(A) >= 0 (Golub & Van Loan §7.3.2); returns c − λ_max(B) and its
    eigenvector. ``largest`` is c; if not given it is estimated with :func:`power_iteration`
    (same ``iters``, ``generator``). Convergence is governed by (c − λ_{d−1})/(c − λ_d), which is
    close to 1 when the bottom of the spectrum is clustered (typical of Hessians): use many
    iterations, or :func:`unlearners.lanczos.lanczos_extremes`, which converges much faster for the
    same number of products. The estimate is an upper bound on λ_min(A) (a Rayleigh quotient).

    Returns
    -------
    (eigenvalue, unit eigenvector estimate)
    """
    d = require_integer("dim", dim, 1)
    k = require_integer("iters", iters, 1)
    tol = require_nonnegative("tol", tol)
    device = torch.device("cpu") if device is None else torch.device(device)
    if largest is None:
        largest, _ = power_iteration(matvec, d, iters=k, generator=generator, dtype=dtype, device=device, tol=tol)
    c = float(largest)
    if not math.isfinite(c):
        raise InvalidInput("largest", "a finite number (an upper bound on the largest eigenvalue)", largest)
    c = c + 1e-12 * abs(c)  # strictly above λ_max so that B is PSD even at the top
    shifted = lambda u: c * u - matvec(u)  # noqa: E731
    _, v = _power(shifted, _randn(d, generator, dtype, device), k, tol)
    return float(torch.dot(v, matvec(v))), v
