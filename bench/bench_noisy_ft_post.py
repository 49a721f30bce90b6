"""Benchmark: noisy-ft's noise-free phase at A's step count against half of it (ceil), on the
models ``audit compare`` runs noisy-ft on, against plain retraining in the same process.

Each setup is built the way the audit builds it (:func:`audit.inputs.load_inputs`, the audit's
θ_0, :func:`audit.methods.build_method` with the method's defaults, the dtype the method's
precision audit picks), with seeds ``--seeds``: A(D) is fitted once, retraining A on D \\ Z from
the same θ_0 is the reference (test accuracy and CPU time, ``time.process_time``), and noisy-ft
at ε = ``--epsilon`` (δ = 1e-5) unlearns from the same A(D) with ``post_steps`` = A's steps and
= ceil(A's steps / 2). The JSON has, per setup and seed, each release's test accuracy and CPU
time and their ratios to retraining's, and per setup the means and the worst seed.

Setups (``--setups``): ``adult-mlp`` (the built-in MLP on Adult, ``audit compare --model mlp``'s
default data), ``adult-logreg`` (Adult's default model: ``audit compare`` does not add noisy-ft
there, measured for a user who names it), ``digits-mlp``, ``mnist-cnn`` (the built-in CNN on
``--mnist-n`` MNIST images; skipped when the IDX files are absent), each at the audit's defaults
(100 steps, η = horizon/(L·T)); and the same models at a step size at which they learn
(``adult-mlp-eta0.5``, ``digits-mlp-eta1``, ``mnist-cnn-eta0.5-200``: 200 steps at η = 0.5, as
``bench_noisy_ft.py``).

Usage: python bench/bench_noisy_ft_post.py [--seeds 0 1 2] [--out bench/results/noisy_ft_post_half.json]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import resource
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _child import write_results  # noqa: E402
from bench_noisy_ft import DEFAULT_MNIST  # noqa: E402

from audit.config import AuditConfig  # noqa: E402
from audit.inputs import load_inputs  # noqa: E402
from audit.methods import build_method, run_dtype  # noqa: E402
from audit.pipeline import _initial_point  # noqa: E402
from unlearners.noisyft import NoisyFineTune  # noqa: E402


def setups(mnist: Path, mnist_n: int) -> dict[str, dict]:
    """The audit configuration of each setup (method noisy-ft at its defaults)."""
    out = {
        "adult-mlp": {"dataset": "adult", "model": "mlp"},
        "adult-logreg": {"dataset": "adult", "model": "logreg"},
        "digits-mlp": {"dataset": "digits", "model": "mlp"},
    }
    if mnist.is_dir():
        out["mnist-cnn"] = {"dataset": f"idx:{mnist}", "model": "cnn", "max_train": mnist_n}
    # at the defaults' step size (eta = horizon/(L*T) with L estimated) the MLPs stay near the majority
    # class or chance and the CNN is still climbing at 100 steps: the same models at a step size at
    # which they learn (what `audit compare --eta` runs), the CNN as in bench_noisy_ft.py
    out["adult-mlp-eta0.5"] = {"dataset": "adult", "model": "mlp", "eta": 0.5}
    out["digits-mlp-eta1"] = {"dataset": "digits", "model": "mlp", "eta": 1.0}
    if mnist.is_dir():
        out["mnist-cnn-eta0.5-200"] = {
            "dataset": f"idx:{mnist}",
            "model": "cnn",
            "max_train": mnist_n,
            "eta": 0.5,
            "steps": 200,
        }
    return out


def one(fields: dict, seed: int, epsilon: float) -> dict:
    """One setup at one seed: retraining, then noisy-ft at A's post steps and at half of them."""
    config = AuditConfig(method="noisy-ft", seed=seed, epsilon=epsilon, delta=1e-5, **fields)
    seeds = config.seeds()
    dtype = getattr(torch, run_dtype(config)[0])
    device = torch.device("cpu")
    data, forget_np, X, y, _, objective = load_inputs(config, None, None, None, seeds, dtype, device)
    forget = torch.as_tensor(forget_np)
    Xt, yt = torch.as_tensor(data.X_test, dtype=dtype), torch.as_tensor(data.y_test)
    theta0 = _initial_point(objective, dtype, device, torch.Generator().manual_seed(seeds["init"]))
    method = build_method(config, objective, seeds)
    assert isinstance(method, NoisyFineTune) and method.post_steps is None  # the built-in default
    method.fit(X, y, theta0)
    t = time.process_time()
    retrained = super(NoisyFineTune, method)._retrain(forget)  # A(D \ Z): plain retraining
    retrain_cpu = time.process_time() - t
    retrain_acc = float(objective.accuracy(retrained, Xt, yt))
    row = {
        "seed": seed,
        "n_train": int(X.shape[0]),
        "forgotten": int(forget.numel()),
        "dtype": str(dtype),
        "steps": method.steps,
        "eta": method.eta_,
        "retrain_test_accuracy": retrain_acc,
        "retrain_cpu_s": retrain_cpu,
        "original_test_accuracy": float(objective.accuracy(method.theta_, Xt, yt)),
    }
    for label, post in (("post_A", method.steps), ("post_half", math.ceil(method.steps / 2))):
        method.set_option("post_steps", post)
        t = time.process_time()
        released = method.unlearn(forget)
        cpu = time.process_time() - t
        cert = method.certify(forget, epsilon, 1e-5)
        acc = float(objective.accuracy(released, Xt, yt))
        row[label] = {
            "post_steps": post,
            "test_accuracy": acc,
            "ratio_to_retrain": acc / retrain_acc,
            "cpu_s": cpu,
            "cpu_ratio_to_retrain": cpu / retrain_cpu,
            "sigma": method.sigma_,
            "certified_epsilon": cert.epsilon,
            "valid": cert.valid,
        }
    row["half_accuracy_over_A"] = row["post_half"]["test_accuracy"] / row["post_A"]["test_accuracy"]
    print(json.dumps(row), flush=True)
    return row


def summary(rows: list[dict]) -> dict:
    """Means over the seeds, and the worst seed for the decision (half's accuracy over A's, half's CPU ratio)."""

    def mean(get) -> float:
        return sum(get(r) for r in rows) / len(rows)

    return {
        "seeds": len(rows),
        **{
            f"{label}_{key}_mean": mean(lambda r, label=label, key=key: r[label][key])
            for label in ("post_A", "post_half")
            for key in ("ratio_to_retrain", "cpu_ratio_to_retrain")
        },
        "half_accuracy_over_A_mean": mean(lambda r: r["half_accuracy_over_A"]),
        "half_accuracy_over_A_min": min(r["half_accuracy_over_A"] for r in rows),
        "post_half_cpu_ratio_to_retrain_max": max(r["post_half"]["cpu_ratio_to_retrain"] for r in rows),
        "post_A_cpu_ratio_to_retrain_max": max(r["post_A"]["cpu_ratio_to_retrain"] for r in rows),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mnist", type=Path, default=DEFAULT_MNIST)
    ap.add_argument("--mnist-n", type=int, default=1000)
    ap.add_argument("--setups", nargs="*", default=None)
    ap.add_argument("--seeds", type=int, nargs="*", default=[0, 1, 2])
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    torch.set_num_threads(1)
    chosen = setups(args.mnist, args.mnist_n)
    names = args.setups or list(chosen)
    results = {}
    for name in names:
        rows = [one(chosen[name], seed, args.epsilon) for seed in args.seeds]
        results[name] = {"config": chosen[name], "summary": summary(rows), "runs": rows}
        print(json.dumps({name: results[name]["summary"]}), flush=True)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    out = {
        "method": "noisy-ft at its defaults (model-clip, C2 = 0.01, one noisy step, restart init-scale)",
        "epsilon": args.epsilon,
        "delta": 1e-5,
        "setups": results,
        "process_cpu_s": usage.ru_utime + usage.ru_stime,
        "load_average_at_end": list(os.getloadavg()),
        "machine": f"{platform.machine()}, torch {torch.__version__}, 1 thread; shared 2-core machine: CPU "
        "times are process_time, ratios paired in the same process",
    }
    text = json.dumps(out, indent=2)
    print(text)
    if args.out:
        write_results(args.out, out)


if __name__ == "__main__":
    main()
