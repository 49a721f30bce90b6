"""The constants of the CNS certificate (:mod:`unlearners.cns`).

The estimator of M, the per-sample Hessian-Lipschitz constant, where no closed form exists; the
records of the spectrum (λ_min, ‖H‖) and of the enforced values the certificate reports; and the
dense solve's measured error added to Δ. Kept apart from the method so that what the certificate
states about each constant is read in one place; apart from M's power method these functions
only build :class:`~certify.certificate.Constant` records from values the method passes in.
"""

from __future__ import annotations

import dataclasses
import math

import torch
from torch import Tensor
from torch.func import grad, jvp, vmap

from certify.certificate import Bound, Constant
from certify.constants import estimated_constant
from unlearners.objective import Objective

#: Factor on a sampled maximum (M, G), which is a lower estimate of the supremum it stands for.
SAFETY = 1.2


# -- estimator of the Hessian-Lipschitz constant --------------------------------------------------
def estimate_hessian_lipschitz(
    objective: Objective,
    X: Tensor,
    y: Tensor,
    points: list[Tensor],
    gen: torch.Generator,
    records: int = 64,
    iters: int = 12,
    safety: float = SAFETY,
) -> Constant:
    """M ≈ safety × max over records and points of ‖∇³f_z(θ)‖ (higher-order power method).

    For a symmetric 3-tensor T = ∇³f_z(θ), ‖∇²f_z(θ₁) − ∇²f_z(θ₂)‖ <= sup_seg ‖T‖·‖θ₁ − θ₂‖ and
    ‖T‖ = sup_{‖u‖=1} ‖T(·, u, u)‖ (Banach). T(·, u, u) = ∇_θ(uᵀ∇²f_z(θ)u) by automatic
    differentiation; u ← T(·, u, u)/‖T(·, u, u)‖, keeping the largest norm seen (a lower
    estimate of the supremum, hence the safety factor and the provenance ``estimated``).
    """
    idx = torch.randperm(X.shape[0], generator=gen)[:records].to(X.device)
    Xs, ys = X[idx], y[idx]

    def contraction(theta: Tensor, x: Tensor, t: Tensor, u: Tensor) -> Tensor:
        xb, tb = x.unsqueeze(0), t.unsqueeze(0)

        def quad(th: Tensor) -> Tensor:
            g = lambda s: grad(objective.loss)(s, xb, tb)  # noqa: E731
            return torch.dot(u, jvp(g, (th,), (u,))[1])

        return grad(quad)(theta)

    def one(theta: Tensor, x: Tensor, t: Tensor, u0: Tensor) -> Tensor:
        u = u0 / torch.linalg.vector_norm(u0)
        best = torch.zeros((), dtype=theta.dtype, device=theta.device)
        for _ in range(iters):
            w = contraction(theta, x, t, u)
            nw = torch.linalg.vector_norm(w)
            best = torch.maximum(best, nw)
            u = w / (nw + 1e-300)
        return best

    samples = []
    for theta in points:
        u0 = torch.randn((len(idx), theta.numel()), generator=gen, dtype=theta.dtype).to(theta.device)
        samples.append(vmap(one, in_dims=(None, 0, 0, 0))(theta, Xs, ys, u0))
    return estimated_constant(
        "M",
        torch.cat(samples).detach().cpu().numpy(),
        safety_factor=safety,
        description="per-sample Hessian-Lipschitz constant, estimated: max third-derivative norm "
        "||grad^3 f_z(theta)|| by a higher-order power method over a random subset of records at "
        "sampled iterates, times a safety factor (Assumption 3.2)",
        estimator=f"higher-order power method ({iters} steps) on {len(idx)} records at {len(points)} iterates",
    )


def merge_estimates(a: Constant, b: Constant) -> Constant:
    """One estimated constant from two sampled maxima of the same supremum."""
    da, db = a.diagnostics, b.diagnostics
    diag = {
        "estimator": f"{da.get('estimator')}; {db.get('estimator')}",
        "n_samples": int(da.get("n_samples", 0)) + int(db.get("n_samples", 0)),
        "max": max(da.get("max", -math.inf), db.get("max", -math.inf)),
        "safety_factor": da.get("safety_factor"),
    }
    return Constant(a.name, max(a.value, b.value), "estimated", a.description, diag)


# -- the certificate's records ----------------------------------------------------------------------
def spectrum_constants(
    steps: list[dict], override: Constant | None, *, linear: bool, l2: float
) -> tuple[Constant, Constant]:
    """λ_min and ‖H‖ over the Newton steps' diagnostics ``steps``: λ_min is the user's
    ``override`` when given, l2 for a (convex) linear model, else the smallest measured;
    ‖H‖ is the largest measured (only the condition λ > ‖H‖ uses it)."""
    hnorm = max(s["hessian_norm"] for s in steps)
    lmin_measured = min(s["lambda_min"] for s in steps)
    method = steps[0]["spectrum_method"]
    if override is not None:
        lmin = override
    elif linear:
        lmin = Constant(
            "lambda_min",
            l2,
            "analytic",
            "lower bound on the smallest eigenvalue of the retained-loss Hessian: the "
            "logistic loss is convex, so the Hessian is >= l2 I for every theta",
            {"measured": lmin_measured, "estimator": method},
        )
    else:
        lmin = Constant(
            "lambda_min",
            lmin_measured,
            "estimated",
            "smallest eigenvalue of the retained-loss Hessian (plus l2) at the point of "
            "each Newton step (the minimum over sequential steps)",
            {"estimator": method},
        )
    hn = Constant(
        "||H||",
        hnorm,
        "estimated",
        "spectral norm of the retained-loss Hessian (plus l2) at the point of each Newton "
        "step (the maximum over sequential steps); only the condition lambda > ||H|| uses it",
        {"estimator": method},
    )
    return lmin, hn


def enforced_constants(
    *,
    C: float,
    lam: float,
    lam_margin: float | None,
    fit_norm: float,
    d: int,
    n: int,
    m: int,
    retrain_residual: float,
) -> list[Constant]:
    """The values every certificate states as enforced: the norm bound, λ (``lam_margin`` when
    λ was chosen as that multiple of ``fit_norm``, the Hessian's norm after training, None when
    the user set it), the counts and the retrained model's measured residual gradient."""
    return [
        Constant(
            "C",
            C,
            "enforced",
            "norm bound: every training step is projected onto "
            "||theta|| <= C (PGD), for the original and the retrained model",
        ),
        Constant(
            "lambda",
            lam,
            "enforced",
            "local convex coefficient added to the Hessian only"
            + (
                f" (chosen as {lam_margin} x ||grad^2 L(w*, D)|| = {lam_margin} x {fit_norm:.6g})"
                if lam_margin is not None
                else ""
            ),
        ),
        Constant("d", float(d), "enforced", "number of parameters"),
        Constant("n", float(n), "enforced", "training records |D| (counted)"),
        Constant("m", float(m), "enforced", "deleted records |D_u| (counted)"),
        Constant(
            "retrain_residual",
            retrain_residual,
            "enforced",
            "||grad L(w~*, D_r)|| of the retrained model, measured (Prop. 4.1 needs it <= G)",
        ),
    ]


def lissa_constants(*, depth: int, scale: float, default_scale: bool, rho: float) -> list[Constant]:
    """The LiSSA settings the certificate's LiSSA term rests on (``default_scale``: H = L + λ)."""
    return [
        Constant("s", float(depth), "enforced", "LiSSA recursion depth"),
        Constant(
            "H_scale",
            scale,
            "enforced",
            "LiSSA scale H" + (" = L + lambda" if default_scale else ""),
        ),
        Constant("rho", rho, "enforced", "LiSSA failure probability; the Gaussian is calibrated at delta - rho"),
    ]


def training_residual_constant(residual: float) -> Constant:
    """‖∇L(w*, D)‖, which the forget-set shortcut's extra error at a non-stationary w* needs."""
    return Constant(
        "||grad L(w*, D)||",
        residual,
        "estimated",
        "residual gradient of training, measured at w* (enters the forget-set shortcut's extra error)",
    )


def with_solve_error(bound: Bound, step: dict, curvature: float) -> Bound:
    """Theorem 3.4 bounds the *exact* step x* = (H + λI)⁻¹v; the Cholesky solution x differs by
    ‖x − x*‖ <= ‖(H + λI)x − v‖ / (λ + λ_min) (as ‖(H + λI)⁻¹‖ = 1/(λ + λ_min), Eq. 25), the
    measured residual over the certificate's λ + λ_min. Added to Δ (triangle inequality), so the
    dense certificate covers the computed step, not an idealised one; it is ~1e-15 of Δ in
    float64 (H + λI has condition number below 2λ/(λ + λ_min) as λ > ‖H‖)."""
    if not curvature > 0 or not math.isfinite(bound.value):
        return bound
    err = step.get("residual_norm", 0.0) / curvature
    return dataclasses.replace(
        bound,
        value=bound.value + err,
        formula=bound.formula + " + ||(H + lambda I)x - v||/(lambda + lambda_min) (the Cholesky solve's "
        "measured residual: Delta covers the computed step)",
        constants=bound.constants
        + (
            Constant(
                "solve_error",
                err,
                "enforced",
                "||x - x*|| <= ||(H + lambda I)x - v||/(lambda + lambda_min), the dense solve's rounding, measured",
            ),
        ),
    )
