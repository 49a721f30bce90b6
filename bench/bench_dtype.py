"""Benchmark: float32 against float64 (issue 26 item 5), ratios measured in one run on the CPU.

Two parts, each timed in CPU seconds of this process (``time.process_time``: the machine is shared,
so wall time says more about the neighbours than about the work), float32 and float64 interleaved
and the median of ``--repeats`` taken:

* ``kernels``: the work ``--dtype auto`` moves to float32, on the audit's own data and models, each
  from the same float64 θ_0 rounded to the dtype (as the pipeline does):
  - ``mlp_training``: full-batch gradient descent of the default MLP (``--model mlp``, hidden 64) on
    Adult's training set (``--mlp-records``), ``--steps`` steps;
  - ``cnn_training``: the same for the built-in CNN on ``--cnn-records`` random 1x28x28 images
    (MNIST's shape; the step's cost does not depend on what the images show);
  - ``retrain_trials``: retrain-mode trials of the MLP: ``Retrain.train_many`` of ``--trials``
    initial points (the batched path, both worlds) on ``--trial-records`` records.
* ``audits``: one audit per dtype of a method ``auto`` trains in float32 (``retrain`` on the MLP,
  retrain-mode trials, the attacks below), with the CPU seconds of its learn, utility and attack
  stages (the pipeline's stage functions wrapped with a CPU clock), and what float32 changed:
  test accuracy, the certificate (kind, ε, σ, every constant) and every attack's ε lower bound
  and AUROC.

Prints one JSON object, written to bench/results/dtype.json.

Usage: python bench/bench_dtype.py [--repeats 3] [--steps 30] [--trials 32]
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import os
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from audit import pipeline  # noqa: E402
from audit.config import AuditConfig  # noqa: E402
from audit.inputs import load_inputs  # noqa: E402
from unlearners.objective import init_parameters  # noqa: E402
from unlearners.retrain import Retrain  # noqa: E402
from unlearners.training import gradient_descent  # noqa: E402

DTYPES = {"float32": torch.float32, "float64": torch.float64}


def _problem(config: AuditConfig, dtype: torch.dtype, data=None):
    """X, y, the objective and θ_0 of ``config``'s audit in ``dtype`` (θ_0 drawn in float64, rounded)."""
    seeds = config.seeds()
    _, forget, X, y, _, objective = load_inputs(config, None, data, None, seeds, dtype, torch.device("cpu"))
    if objective.is_linear:
        X = X.reshape(X.shape[0], -1)
    theta0 = init_parameters(objective, torch.Generator().manual_seed(seeds["init"]), torch.float64).to(dtype)
    return X, y, objective, theta0, torch.as_tensor(forget)


def _cpu(fn) -> float:
    start = time.process_time()
    fn()
    return time.process_time() - start


def _paired(make, repeats: int) -> dict:
    """CPU seconds of ``make(dtype)()`` for both dtypes, interleaved, after one warm-up each."""
    jobs = {name: make(dtype) for name, dtype in DTYPES.items()}
    for job in jobs.values():
        job()
    times = {name: [] for name in DTYPES}
    for _ in range(repeats):
        for name, job in jobs.items():
            times[name].append(_cpu(job))
    out = {name: {"cpu_s": statistics.median(t), "cpu_times_s": t} for name, t in times.items()}
    out["float64_over_float32"] = out["float64"]["cpu_s"] / out["float32"]["cpu_s"]
    return out


def _training(config: AuditConfig, steps: int, data=None):
    def make(dtype):
        X, y, objective, theta0, _ = _problem(config, dtype, data)
        return lambda: gradient_descent(objective, theta0, X, y, eta=0.1, steps=steps)
    return make


def _trials(config: AuditConfig, steps: int, trials: int):
    def make(dtype):
        X, y, objective, theta0, forget = _problem(config, dtype)
        method = Retrain(objective, steps=steps, eta=0.1)
        method.fit(X, y, theta0)
        gen = torch.Generator().manual_seed(1)
        thetas0 = torch.stack([init_parameters(objective, gen, torch.float64) for _ in range(trials)]).to(dtype)
        return lambda: method.train_many(thetas0, forget)
    return make


def kernels(args) -> dict:
    mlp = AuditConfig(model="mlp", hidden=(64,), max_train=args.mlp_records)
    cnn = AuditConfig(model="cnn")
    gen = torch.Generator().manual_seed(0)  # MNIST-shaped images: the step's cost, not what it learns
    images = (torch.rand(args.cnn_records, 1, 28, 28, generator=gen).numpy(),
              torch.randint(0, 10, (args.cnn_records,), generator=gen).numpy())
    trial_config = dataclasses.replace(mlp, max_train=args.trial_records)
    return {
        "mlp_training": {"records": args.mlp_records, "steps": args.steps,
                         **_paired(_training(mlp, args.steps), args.repeats)},
        "cnn_training": {"records": args.cnn_records, "shape": [1, 28, 28], "steps": args.cnn_steps,
                         **_paired(_training(cnn, args.cnn_steps, images), args.repeats)},
        "retrain_trials": {"records": args.trial_records, "steps": args.steps, "trials": args.trials,
                           **_paired(_trials(trial_config, args.steps, args.trials), args.repeats)},
    }


def _stage_clock(names: tuple[str, ...]):
    """Wrap the pipeline's stage functions with a CPU clock; returns the dict they fill."""
    spent: dict[str, float] = {}

    def wrap(name, fn):
        @functools.wraps(fn)
        def timed(*a, **kw):
            start = time.process_time()
            try:
                return fn(*a, **kw)
            finally:
                spent[name] = spent.get(name, 0.0) + time.process_time() - start
        return timed

    for name in names:
        setattr(pipeline, name, wrap(name, getattr(pipeline, name)))
    return spent


def _summary(report) -> dict:
    r = report.to_json_dict()
    cert = r["certificate"]
    attacks = r.get("attacks") or {}
    return {
        "test_accuracy": {world: r["utility"][world]["test"]["accuracy"] for world in ("original", "unlearned")},
        "certificate": {"kind": cert["kind"], "epsilon": cert.get("epsilon"), "sigma": cert.get("sigma"),
                        "constants": {c["name"]: c["value"] for c in cert.get("constants", [])}},
        "attacks": {name: {"epsilon_lower": a["bound"]["epsilon_lower"],
                           "auroc": (a["bound"].get("roc") or {}).get("auroc")}
                    for name, a in (attacks.get("attacks") or {}).items()},
        "positive_control_auroc": (attacks.get("positive_control") or {}).get("auroc"),
        "trials": {k: attacks.get("trials", {}).get(k) for k in ("mode", "n_trials", "dtype")},
    }


def audits(args) -> dict:
    spent = _stage_clock(("_learn", "_utility", "_attack"))
    config = AuditConfig(method="retrain", model="mlp", hidden=(64,), max_train=args.trial_records,
                         steps=args.steps, trials=args.audit_trials, attacks=tuple(args.attacks.split(",")),
                         curve_points=2, noise_draws=2, frontier=())
    out: dict = {"config": {"method": "retrain", "model": "mlp", "hidden": [64], "max_train": args.trial_records,
                            "steps": args.steps, "trials": args.audit_trials, "attacks": args.attacks}}
    for name in ("float32", "float64"):  # warm-up: first calls compile and import
        pipeline.run(dataclasses.replace(config, dtype=name, trials=10, max_train=100, steps=2), salt=b"s" * 32)
    for name in ("float32", "float64"):
        spent.clear()
        start = time.process_time()
        report = pipeline.run(dataclasses.replace(config, dtype=name), salt=b"s" * 32)
        out[name] = {"cpu_s": time.process_time() - start, "stage_cpu_s": dict(spent), **_summary(report)}
    out["float64_over_float32"] = {stage: out["float64"]["stage_cpu_s"][stage] / out["float32"]["stage_cpu_s"][stage]
                                   for stage in out["float32"]["stage_cpu_s"]}
    out["float64_over_float32"]["audit"] = out["float64"]["cpu_s"] / out["float32"]["cpu_s"]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--cnn-steps", type=int, default=5)
    parser.add_argument("--cnn-records", type=int, default=1000, help="random 1x28x28 images (MNIST's shape)")
    parser.add_argument("--mlp-records", type=int, default=None, help="MLP training records (default: all)")
    parser.add_argument("--trial-records", type=int, default=2000)
    parser.add_argument("--trials", type=int, default=32)
    parser.add_argument("--audit-trials", type=int, default=100)
    parser.add_argument("--attacks", default="mia,whitebox,ulira")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "dtype.json"))
    args = parser.parse_args()
    torch.set_num_threads(1)
    result = {
        "benchmark": "float32 vs float64 on the CPU: training, retrain-mode trials and an audit's stages "
                     "(CPU seconds of this process, medians, both dtypes interleaved in one run)",
        "machine": f"{os.cpu_count()} CPUs shared with other jobs (loaded): CPU time, not wall time",
        "torch": torch.__version__, "torch_threads": torch.get_num_threads(),
        "kernels": kernels(args),
        "audits": audits(args),
    }
    text = json.dumps(result, indent=2)
    print(text)
    Path(args.out).write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
