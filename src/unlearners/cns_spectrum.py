"""The Hessian spectrum at the Newton steps of CNS (:mod:`unlearners.cns`).

‖H‖ and λ_min of the retained-loss Hessian ∇²L(θ, D_r) + l2·I, measured (an explicit Hessian's
eigendecomposition, or Lanczos) or, at w*, reused from the measurement made after training on D
(a downdated explicit Hessian, or Weyl bounds). Kept apart from the method because it is linear
algebra on the objective, θ and the records alone: the method decides which path applies (its
solver and ``dense_max_dim``) and passes its constants in.

Every function returns the same record: ``{"H": the explicit Hessian or None, "lambda_min",
"lambda_max", "norm": max(|lambda_min|, |lambda_max|), "method": how it was obtained}``.
"""

from __future__ import annotations

import torch
from torch import Tensor

from unlearners.lanczos import lanczos_bounds
from unlearners.linalg import explicit_hessian, hvp_operator
from unlearners.objective import Objective

#: Lanczos products for ‖H‖ and λ_min when no explicit Hessian is formed: at most LANCZOS_ITERS,
#: stopping once both extreme Ritz residuals are <= LANCZOS_TOL·‖H‖ (after LANCZOS_MIN_ITERS); each
#: end carries its residual (:mod:`unlearners.lanczos`). Built-in CNN, 1,000 MNIST images: 24
#: products instead of 60, each costing about 2.6 full-data gradients.
LANCZOS_ITERS = 60
LANCZOS_TOL = 1e-3
LANCZOS_MIN_ITERS = 12
#: The spectrum of the retained-loss Hessian at w* is bounded from the one measured on D after
#: training (Weyl) when the m deleted records can move it by at most this fraction of λ.
WEYL_FRACTION = 0.01


def hessian_spectrum(
    objective: Objective, theta: Tensor, X: Tensor, y: Tensor, gen: torch.Generator, *, l2: float, explicit: bool
) -> dict:
    """‖H‖ and λ_min of ∇²L(θ) + l2·I on (X, y): from the explicit Hessian when ``explicit``,
    else by Lanczos (at most min(d, 60) products, fewer once converged)."""
    d = objective.dim
    if explicit:
        H = explicit_hessian(objective, theta, X, y, l2=l2)
        ev = torch.linalg.eigvalsh(H)
        lo, hi = float(ev[0]), float(ev[-1])
        method = "dense eigendecomposition (exact up to rounding)"
    else:
        H = None
        k = min(d, LANCZOS_ITERS)
        out = lanczos_bounds(
            hvp_operator(objective, theta, X, y, l2=l2),
            d,
            max_iters=k,
            tol=LANCZOS_TOL,
            min_iters=min(k, LANCZOS_MIN_ITERS),
            generator=gen,
            dtype=theta.dtype,
            device=theta.device,
        )
        lo, hi = out.lower, out.upper
        method = out.describe(k, LANCZOS_TOL)
    return {"H": H, "lambda_min": lo, "lambda_max": hi, "norm": max(abs(lo), abs(hi)), "method": method}


def downdated_spectrum(
    objective: Objective, fit: dict, theta: Tensor, X: Tensor, y: Tensor, removed: Tensor, *, l2: float
) -> dict | None:
    """The spectrum of H(D_r) = (n·H(D) − m·H(Z) − m·l2·I)/(n − m), the explicit Hessian ``fit``
    measured on D after training downdated by the m ``removed`` records' mean Hessian H(Z); None
    when m > n − m, where forming H(D_r) anew reads fewer records."""
    n, m = int(removed.numel()), int(removed.sum())
    if m > n - m:
        return None
    eye = torch.eye(fit["H"].shape[0], dtype=fit["H"].dtype, device=fit["H"].device)
    H_Z = explicit_hessian(objective, theta, X[removed], y[removed])
    H = (n * fit["H"] - m * H_Z - (m * l2) * eye) / (n - m)
    ev = torch.linalg.eigvalsh(H)
    lo, hi = float(ev[0]), float(ev[-1])
    return {
        "H": H,
        "lambda_min": lo,
        "lambda_max": hi,
        "norm": max(abs(lo), abs(hi)),
        "method": "dense eigendecomposition (exact up to rounding) of H(D_r) = (n H(D) - m H(Z))/(n - m), "
        "H(D) formed after training",
    }


def weyl_spectrum(fit: dict, *, n: int, m: int, L: float, lam: float, l2: float) -> dict | None:
    """Weyl bounds on the spectrum of H(D_r) from ``fit``, the one measured on D after training:
    the m deleted records' summed Hessian has eigenvalues in [−mL, mL], so each end moves by at
    most mL/(n − m). None when that shift exceeds WEYL_FRACTION·λ, where the bounds would cost the
    certificate more than measuring anew."""
    shift = m * L / (n - m)
    if shift > WEYL_FRACTION * lam:
        return None
    hi = (n * (fit["lambda_max"] - l2)) / (n - m) + shift + l2
    lo = (n * (fit["lambda_min"] - l2)) / (n - m) - shift + l2
    return {
        "H": None,
        "lambda_min": lo,
        "lambda_max": hi,
        "norm": max(abs(lo), abs(hi)),
        "method": f"Weyl bounds from the Hessian on D at w* ({fit['method']}) and ||sum of the {m} deleted "
        f"records' Hessians|| <= m L: shifted by m L/(n - m) = {shift:.3g}",
    }
