"""Benchmark: second-order machinery and second-order unlearning methods against their baselines.

(1) Inverse Hessian-vector product x = (H + λI)⁻¹ b, H = ∇²f_D(θ) on the training set, with
    :mod:`unlearners.linalg`:

    * ``dense``: ``explicit_hessian`` (d vmapped HVPs) + ``dense_solve`` (Cholesky): the reference;
    * ``cg``: ``conjugate_gradient`` on ``hvp_operator`` (tol 1e-10 relative residual);
    * ``lissa``: ``lissa`` on the full-data ``hvp_operator`` (deterministic Neumann series);
    * ``lissa_minibatch``: ``lissa`` on ``stochastic_operator`` (a fresh mini-batch of
      ``--lissa-batch`` records per step, as in the CNS paper's Alg. 1).

    Each time is reported as a ratio to the dense solve of the same problem in the same run,
    with the relative error ‖x − x_dense‖/‖x_dense‖. Problems: logistic regression and an MLP
    (one softplus hidden layer of ``--hidden`` = 32 units, d = 705, on the first
    ``--mlp-max-train`` = 4000 training records: the dense Hessian costs d HVPs on all records)
    on the built-in Adult data (20 whitened PCA features, unit-norm rows), float64, at a point trained by gradient descent on the
    L2-regularised loss. b is the forget set's gradient (1 % of the training records), the
    right-hand side of a Newton unlearning step. λ = ``--l2`` for logistic regression; for the MLP,
    whose Hessian is indefinite, λ = max(l2, 1.1·(−λ_min(H))) so that all solvers solve the same
    positive-definite system (λ_min from the dense path, so the MLP's λ uses information the
    matrix-free solvers would not have). LiSSA's scale is 1.2× a power-iteration estimate of
    λ_max(H + λI) (its time is reported as ``scale_estimate_s`` and not included in ``lissa_s``);
    its depth is the number of steps the Neumann series needs to reach 1e-8 in the slowest
    direction, ⌈(scale/λ_min(H + λI))·ln 1e8⌉, capped at ``--lissa-max-depth``.

(2) Every registered second-order method among {newton, ngd, cns, curenewton, ngd-minmax}
    (``unlearners.registry.available_methods``; absent ones are listed as "not available"), built
    with default options on each model: the times of ``fit`` (A on D), ``unlearn(forget)`` and
    ``retrain(forget)`` (A on D \\ Z) for a random 1 % forget set, and unlearn/retrain as a
    ratio; also ‖θ_unlearn − θ_retrain‖ / ‖θ_fit − θ_retrain‖ (how far from exact removal the
    unlearned parameters are, relative to doing nothing; 0 is exact). A method that raises
    (e.g. a convex-only method on the MLP) is reported with its error message.

Inverse-HVP timings are the minimum over ``--repeats`` runs after a warm-up of each code path;
method timings are single runs (``fit`` first, which warms up the shared code). All use
``time.perf_counter`` and torch's default thread count unless ``--threads``. The load average is
recorded at start and end: on a machine shared with other jobs, torch's multi-threaded kernels
can slow down by more than 10x (threads wait on each other's time slices), so compare runs only at
a similar load, or pass ``--threads 1``. Prints one JSON object. Target: < 3 minutes on 2 CPU
cores.

Usage: python bench/bench_second_order.py [--max-train N] [--mlp-max-train 4000] [--hidden 32] [--l2 1e-2]
       [--models logreg,mlp] [--threads 2]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import time
from pathlib import Path

import torch
from torch import Tensor

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from audit.datasets import load_dataset  # noqa: E402
from unlearners.linalg import (  # noqa: E402
    conjugate_gradient,
    dense_solve,
    explicit_hessian,
    hvp_operator,
    lissa,
    power_iteration,
    stochastic_operator,
)
from unlearners.models import build_model  # noqa: E402
from unlearners.objective import Objective, default_init  # noqa: E402
from unlearners.registry import available_methods  # noqa: E402

SECOND_ORDER = ("newton", "ngd", "cns", "curenewton", "ngd-minmax")


_T0 = time.perf_counter()


def _log(msg: str) -> None:
    print(f"[{time.perf_counter() - _T0:7.1f}s] {msg}", file=sys.stderr, flush=True)


def _timed(fn, repeats: int = 1):
    """(min wall time over ``repeats`` runs, the last run's result)."""
    best = math.inf
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - start)
    return best, out


def _rel(x, ref) -> float:
    return float(torch.linalg.vector_norm(x - ref) / torch.linalg.vector_norm(ref))


def _problem(args, model_name: str):
    max_train = args.mlp_max_train if model_name == "mlp" else args.max_train
    data = load_dataset("adult", seed=0, max_train=max_train, feature_map={"pca_components": 20})
    X = torch.as_tensor(data.X_train, dtype=torch.float64)
    y = torch.as_tensor(data.y_train)
    opts = {"hidden": (args.hidden,)} if model_name == "mlp" else {}
    obj = Objective(build_model(model_name, X.shape[1], data.n_classes, **opts).double())
    theta0 = default_init(obj, torch.Generator().manual_seed(args.seed))
    n = X.shape[0]
    forget = torch.randperm(n, generator=torch.Generator().manual_seed(args.seed + 1))[: max(1, n // 100)]
    return obj, theta0, X, y, forget


def _train(obj, theta0, X, y, l2: float, steps: int) -> tuple[Tensor, float]:
    """Gradient descent on f_D + (l2/2)‖θ‖² with η = 1/(1.2·λ_max) at θ_0."""
    lam_max, _ = power_iteration(hvp_operator(obj, theta0, X, y, l2=l2), obj.dim, iters=30,
                                 generator=torch.Generator().manual_seed(0))
    eta = 1.0 / (1.2 * lam_max)
    theta = theta0.clone()
    for _ in range(steps):
        theta = theta - eta * (obj.grad(theta, X, y) + l2 * theta)
    return theta, eta


def inverse_hvp(args, model_name: str) -> dict:
    obj, theta0, X, y, forget = _problem(args, model_name)
    _log(f"{model_name}: training (n={X.shape[0]}, d={obj.dim})")
    t_train, (theta, eta) = _timed(lambda: _train(obj, theta0, X, y, args.l2, args.train_steps))
    _log(f"{model_name}: dense Hessian")
    b = obj.grad(theta, X[forget], y[forget]) + args.l2 * theta

    # dense reference (also gives the spectrum used to pick the MLP's damping and LiSSA's depth)
    explicit_hessian(obj, theta, X[:64], y[:64])  # warm-up
    t_hess, H = _timed(lambda: explicit_hessian(obj, theta, X, y), args.repeats)
    ev = torch.linalg.eigvalsh(H)
    lam_min_H, lam_max_H = float(ev[0]), float(ev[-1])
    damping = args.l2 if lam_min_H + args.l2 > 0 else max(args.l2, 1.1 * (-lam_min_H))
    t_chol, x_dense = _timed(lambda: dense_solve(H, b, damping=damping), args.repeats)
    dense_s = t_hess + t_chol
    lam_min = lam_min_H + damping

    out = {
        "n": int(X.shape[0]), "d": obj.dim, "train_steps": args.train_steps, "train_s": t_train,
        "eta": eta, "l2": args.l2, "damping": damping,
        "lambda_min_H": lam_min_H, "lambda_max_H": lam_max_H,
        "condition_number": (lam_max_H + damping) / lam_min,
        "dense": {"hessian_s": t_hess, "cholesky_solve_s": t_chol, "total_s": dense_s},
    }

    _log(f"{model_name}: CG")
    # conjugate gradients (operator construction included: one gradient with its graph)
    def cg():
        return conjugate_gradient(hvp_operator(obj, theta, X, y, l2=damping), b, tol=1e-10)

    conjugate_gradient(hvp_operator(obj, theta, X[:64], y[:64], l2=damping), b, max_iter=3)  # warm-up
    t_cg, (x_cg, info) = _timed(cg, args.repeats)
    out["cg"] = {"time_s": t_cg, "ratio_to_dense": t_cg / dense_s, "relative_error": _rel(x_cg, x_dense),
                 **info}

    _log(f"{model_name}: LiSSA")
    # LiSSA scale: power iteration on the damped operator (timed separately)
    t_scale, (top, _) = _timed(lambda: power_iteration(
        hvp_operator(obj, theta, X, y), obj.dim, iters=args.power_iters,
        generator=torch.Generator().manual_seed(0), tol=1e-6), args.repeats)
    scale = 1.2 * (top + damping)
    needed = math.ceil(scale / lam_min * math.log(1e8))
    depth = min(needed, args.lissa_max_depth)

    def lis():
        return lissa(hvp_operator(obj, theta, X, y), b, scale=scale, damping=damping, depth=depth,
                     on_divergence="ignore")

    lissa(hvp_operator(obj, theta, X[:64], y[:64]), b, scale=scale, damping=damping, depth=3,
          on_divergence="ignore")  # warm-up
    t_l, (x_l, info) = _timed(lis, args.repeats)
    out["lissa"] = {"time_s": t_l, "ratio_to_dense": t_l / dense_s, "relative_error": _rel(x_l, x_dense),
                    "scale_estimate_s": t_scale, "ratio_to_dense_with_scale_estimate": (t_l + t_scale) / dense_s,
                    "depth_needed_for_1e-8": needed, **info}

    # mini-batch LiSSA (CNS paper's Alg. 1: fresh batch per step)
    mb_depth = min(needed, args.lissa_minibatch_depth)

    def lis_mb():
        op = stochastic_operator(hvp_operator, obj, theta, X, y, batch_size=args.lissa_batch)
        return lissa(op, b, scale=scale, damping=damping, depth=mb_depth, repeats=args.lissa_repeats,
                     stochastic=True, generator=torch.Generator().manual_seed(0), on_divergence="ignore")

    t_mb, (x_mb, info) = _timed(lis_mb, args.repeats)
    out["lissa_minibatch"] = {"time_s": t_mb, "ratio_to_dense": t_mb / dense_s,
                              "relative_error": _rel(x_mb, x_dense), "batch_size": args.lissa_batch, **info}
    return out


def methods(args, model_name: str, registry: dict) -> dict:
    obj, theta0, X, y, forget = _problem(args, model_name)
    results = {}
    for name in SECOND_ORDER:
        if name not in registry:
            results[name] = "not available"
            continue
        try:
            _log(f"{model_name}: method {name}")
            method = registry[name](obj)
            t_fit, theta_fit = _timed(lambda: method.fit(X, y, theta0))
            t_un, theta_un = _timed(lambda: method.unlearn(forget))
            t_re, theta_re = _timed(lambda: method.retrain(forget))
            base = float(torch.linalg.vector_norm(theta_fit - theta_re))
            results[name] = {
                "fit_s": t_fit, "unlearn_s": t_un, "retrain_s": t_re,
                "unlearn_to_retrain_ratio": t_un / t_re,
                "distance_to_retrain_relative": (float(torch.linalg.vector_norm(theta_un - theta_re)) / base
                                                 if base > 0 else None),
                "hyperparameters": _jsonable(method.report_hyperparameters()),
            }
        except Exception as exc:  # noqa: BLE001  (a method may reject a model; report, keep going)
            results[name] = {"error": f"{type(exc).__name__}: {exc}"}
    return {"n": int(X.shape[0]), "d": obj.dim, "forget": int(forget.numel()), "methods": results}


def _jsonable(obj):
    try:
        json.dumps(obj)
        return obj
    except TypeError:
        return {k: (v if isinstance(v, (int, float, str, bool, type(None))) else repr(v)) for k, v in obj.items()} \
            if isinstance(obj, dict) else repr(obj)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--max-train", type=int, default=None,
                        help="logistic regression's training records (default: all 34190)")
    parser.add_argument("--mlp-max-train", type=int, default=4000, help="the MLP's training records")
    parser.add_argument("--hidden", type=int, default=32)
    parser.add_argument("--l2", type=float, default=1e-2)
    parser.add_argument("--train-steps", type=int, default=300)
    parser.add_argument("--power-iters", type=int, default=100)
    parser.add_argument("--lissa-max-depth", type=int, default=2000)
    parser.add_argument("--lissa-minibatch-depth", type=int, default=1000)
    parser.add_argument("--lissa-batch", type=int, default=256)
    parser.add_argument("--lissa-repeats", type=int, default=1)
    parser.add_argument("--models", default="logreg,mlp")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=3, help="inverse-HVP timings: min over this many runs")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--skip-methods", action="store_true")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    models = [m for m in args.models.split(",") if m]
    start = time.perf_counter()
    report = {
        "benchmark": "second_order",
        "data": "adult, 20 PCA components, float64",
        "torch": torch.__version__, "threads": torch.get_num_threads(), "machine": platform.machine(),
        "cpu_count": os.cpu_count(), "load_average_at_start": list(os.getloadavg()),
        "inverse_hvp": {m: inverse_hvp(args, m) for m in models},
    }
    if not args.skip_methods:
        registry = available_methods()
        report["methods_available"] = [m for m in SECOND_ORDER if m in registry]
        report["methods_not_available"] = [m for m in SECOND_ORDER if m not in registry]
        report["unlearning"] = {m: methods(args, m, registry) for m in models}
    report["load_average_at_end"] = list(os.getloadavg())
    report["total_s"] = time.perf_counter() - start
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
