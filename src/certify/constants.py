"""The constants certified-unlearning theorems depend on, with where each value came from.

Closed-form bounds are used where the model allows them (linear models on norm-bounded
features); otherwise values are estimated by sampling, and the resulting
:class:`~certify.certificate.Constant` says so, with the estimator's diagnostics, so that a
certificate resting on it is reported as conditional.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

from certify.certificate import Constant
from certify.errors import InvalidInput, require_nonnegative, require_positive


def logistic_regression_constants(max_feature_norm: float, n_classes: int) -> tuple[Constant, Constant]:
    """Global per-sample gradient bound G and smoothness L of (multinomial) logistic regression.

    For a linear model with bias on a record (x, y) with ||x|| ≤ R, write x̃ = (x, 1), so
    ||x̃||² ≤ R² + 1.

    * Binary (one logit, logistic loss): ∇f_z(θ) = (σ(θ·x̃) − y) x̃ with |σ − y| < 1, hence
      ||∇f_z(θ)|| < √(R²+1) = G; ∇²f_z(θ) = σ(1−σ) x̃x̃ᵀ ⪯ x̃x̃ᵀ/4, hence L = (R²+1)/4.
    * C classes (softmax cross-entropy): ∇_W f_z = (p − e_y) x̃ᵀ with ||p − e_y||² < 2, hence
      G = √2·√(R²+1); ∇²f_z = (diag p − ppᵀ) ⊗ x̃x̃ᵀ and λ_max(diag p − ppᵀ) ≤ 1/2
      (Böhning 1992), hence L = (R²+1)/2.

    Both hold for every θ, which is what R2D Theorem 3.1 (Mu & Klabjan) requires; they hold for
    every record of a dataset whose feature norms are at most R.

    Parameters
    ----------
    max_feature_norm:
        R = max_i ||x_i|| over every record the bound must cover (training set D ⊇ D \\ Z).
    n_classes:
        Number of classes C ≥ 2.

    Returns
    -------
    (G, L):
        Two constants with provenance ``analytic``.
    """
    R = require_nonnegative("max_feature_norm", max_feature_norm)
    if int(n_classes) != n_classes or n_classes < 2:
        raise InvalidInput("n_classes", "an integer >= 2", n_classes)
    r2 = R * R + 1.0
    if n_classes == 2:
        G, L = math.sqrt(r2), r2 / 4.0
        how = "binary logistic loss: |sigmoid - y| < 1 and sigmoid(1-sigmoid) <= 1/4"
    else:
        G, L = math.sqrt(2.0 * r2), r2 / 2.0
        how = "softmax cross-entropy: ||p - e_y||^2 < 2 and lambda_max(diag p - p p^T) <= 1/2"
    diag = {"max_feature_norm": R, "n_classes": int(n_classes)}
    return (
        Constant("G", G, "analytic", f"per-sample gradient bound for every theta ({how}; R = max ||x||)", diag),
        Constant("L", L, "analytic", f"per-sample smoothness for every theta ({how}; R = max ||x||)", diag),
    )


def estimated_constant(
    name: str,
    samples: Iterable[float],
    *,
    safety_factor: float,
    description: str,
    estimator: str,
) -> Constant:
    """Turn sampled lower estimates of a supremum into a constant, reported as *estimated*.

    The value is ``safety_factor × max(samples)``. A sampled maximum can only under-estimate a
    supremum, so the safety factor is a guess, not a guarantee: a certificate that uses the
    result is conditional on it.

    Parameters
    ----------
    name:
        Symbol (``L``, ``G``).
    samples:
        Observed values whose supremum the constant must bound (e.g. per-sample gradient norms
        along the training trajectory, or Hessian spectral norms from power iteration).
    safety_factor:
        Multiplier ≥ 1 applied to the observed maximum.
    description, estimator:
        What is bounded, and how the samples were produced (recorded in the diagnostics).
    """
    arr = np.asarray(list(samples), dtype=float)
    if arr.size == 0:
        raise InvalidInput("samples", "a non-empty collection of finite numbers", [])
    if not np.all(np.isfinite(arr)):
        raise InvalidInput("samples", "finite numbers", "a non-finite value")
    safety = require_positive("safety_factor", safety_factor)
    if safety < 1:
        raise InvalidInput("safety_factor", "a number >= 1", safety_factor)
    diagnostics = {
        "estimator": estimator,
        "n_samples": int(arr.size),
        "max": float(arr.max()),
        "mean": float(arr.mean()),
        "std": float(arr.std()),
        "quantile_99": float(np.quantile(arr, 0.99)),
        "safety_factor": safety,
    }
    return Constant(name, safety * float(arr.max()), "estimated", description, diagnostics)


def user_constant(name: str, value: float, description: str) -> Constant:
    """A constant supplied by the user without evidence (provenance ``assumed``)."""
    return Constant(name, require_positive(name, value), "assumed", description)
