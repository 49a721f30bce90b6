"""The smoothness L and gradient bound G of a model's per-sample loss, closed form or sampled.

Linear models on norm-bounded features get the closed-form global bounds of
:func:`certify.constants.logistic_regression_constants`. For other models no global bound is
available, so the constants are estimated along the training trajectory, in the spirit of
Mu & Klabjan (Rewind-to-Delete), Appendix D, but per sample, as Theorem 3.1 requires:

* G: the largest per-sample gradient norm over every training record at every sampled iterate;
* L: the largest per-sample Hessian spectral norm (power iteration on Hessian-vector products)
  over a random subset of records at every sampled iterate.

Both are multiplied by a safety factor and reported with provenance ``estimated``.
"""

from __future__ import annotations

import torch
from torch import Tensor
from torch.func import vmap

from certify.certificate import Constant
from certify.constants import estimated_constant, logistic_regression_constants, user_constant
from unlearners.objective import Objective


def model_constants(
    objective: Objective,
    X: Tensor,
    y: Tensor,
    iterates: list[Tensor],
    *,
    generator: torch.Generator,
    overrides: dict[str, float] | None = None,
    records_for_smoothness: int = 256,
    power_iterations: int = 30,
    safety_factor: float = 1.2,
    chunk: int = 2048,
) -> dict[str, Constant]:
    """Return ``{"G": Constant, "L": Constant}`` for the per-sample loss of ``objective`` on D.

    Parameters
    ----------
    X, y:
        The training set D (every record the bound must cover).
    iterates:
        Points θ along the training trajectory at which to sample (ignored for linear models).
    generator:
        Source of randomness for the record subset and the power-iteration starts.
    overrides:
        User-supplied values (provenance ``assumed``) that replace the computed ones.
    """
    overrides = dict(overrides or {})
    if objective.is_linear:
        R = float(torch.linalg.vector_norm(X, dim=1).max())
        n_classes = 2 if objective.n_outputs == 1 else objective.n_outputs
        G, L = logistic_regression_constants(R, n_classes)
        found = {"G": G, "L": L}
    else:  # estimate only what the user did not supply (estimation is the slow part)
        found = {}
        if "G" not in overrides:
            found["G"] = _estimate_G(objective, X, y, iterates, safety_factor, chunk)
        if "L" not in overrides:
            found["L"] = _estimate_L(objective, X, y, iterates, generator, records_for_smoothness,
                                     power_iterations, safety_factor)
    for name, value in overrides.items():
        found[name] = user_constant(name, value, f"{name} supplied by the user")
    return found


def _estimate_G(objective, X, y, iterates, safety, chunk) -> Constant:
    norms = []
    for theta in iterates:
        for start in range(0, X.shape[0], chunk):
            g = objective.per_sample_grads(theta, X[start:start + chunk], y[start:start + chunk])
            norms.append(torch.linalg.vector_norm(g, dim=1))
    samples = torch.cat(norms).cpu().numpy()
    return estimated_constant(
        "G", samples, safety_factor=safety,
        description="per-sample gradient bound, estimated: max ||grad f_z(theta)|| over all "
        "training records at sampled iterates, times a safety factor",
        estimator=f"exhaustive over {X.shape[0]} records at {len(iterates)} iterates",
    )


def _estimate_L(objective, X, y, iterates, generator, n_records, iters, safety) -> Constant:
    idx = torch.randperm(X.shape[0], generator=generator)[:n_records].to(X.device)
    Xs, ys = X[idx], y[idx]

    def one_norm(theta: Tensor, x: Tensor, t: Tensor, v0: Tensor) -> Tensor:
        xb, tb = x.unsqueeze(0), t.unsqueeze(0)
        v = v0 / torch.linalg.vector_norm(v0)
        for _ in range(iters):
            w = objective.hvp(theta, xb, tb, v)
            v = w / (torch.linalg.vector_norm(w) + 1e-30)
        return torch.linalg.vector_norm(objective.hvp(theta, xb, tb, v))

    samples = []
    for theta in iterates:
        v0 = torch.randn((len(idx), theta.numel()), generator=generator, dtype=theta.dtype)
        samples.append(vmap(one_norm, in_dims=(None, 0, 0, 0))(theta, Xs, ys, v0.to(theta.device)))
    return estimated_constant(
        "L", torch.cat(samples).cpu().numpy(), safety_factor=safety,
        description="per-sample smoothness, estimated: max Hessian spectral norm of f_z by power "
        "iteration over a random subset of records at sampled iterates, times a safety factor",
        estimator=f"power iteration ({iters} steps) on {len(idx)} records at {len(iterates)} iterates",
    )


def step_size(
    objective: Objective,
    X: Tensor,
    y: Tensor,
    theta0: Tensor,
    *,
    eta: float | None,
    horizon: float,
    steps: int,
    generator: torch.Generator,
    overrides: dict[str, float] | None = None,
) -> float:
    """The constant step size: ``eta`` if given, else horizon / (L·T) with L at θ_0.

    First-order certificates grow like exp(η·L·T), so the default fixes the product η·L·T
    (the *horizon*) rather than η itself.
    """
    if eta is not None:
        return float(eta)
    L = model_constants(objective, X, y, [theta0], generator=generator, overrides=overrides)["L"].value
    return horizon / (L * steps)
