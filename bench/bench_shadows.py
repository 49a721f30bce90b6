"""Benchmark: U-LiRA's shadow models on the default MLP, trained batched (vmap) against one at a time.

U-LiRA (and the LiRA/RMIA variants that reuse its shadows) needs S shadow models of each world
trained with and without the forget set. In retrain mode (the mode of a method without output
noise, or any method with ``--trial-mode retrain``) a shadow is a whole training run: learn on
D from its own initial point, unlearn, retrain on D \\ Z. This benchmark builds the audit's
shadow set for R2D on the default MLP (Adult, one hidden layer of 64 units, 257 parameters) the
two ways the audit can (:func:`audit.trials.make_trials` with ``batched=True``: the method's
``train_many``, every shadow in one vmapped gradient per step; ``batched=False``: a replica's
own ``fit``/``unlearn``/``retrain`` per shadow), checks that both give the same parameters, and
prints JSON with the CPU and wall times and their ratio, measured in the same run.

Target (issue 14): batched ≥ 10× faster than one at a time with 64 shadows. Two settings are
measured: the full Adult training set (34,190 records), where each model-step is tens of
milliseconds of arithmetic (the softplus and its derivative on 34,190 × 64 values, then the
matrix products) and the loop's fixed cost per call (~0.5 ms) is a small share, so batching
cannot remove much; and 1,000 records, where the fixed cost per call dominates. The ratio does
not depend on T (every shadow takes the same T + K + T steps either way), so T is kept small.

Usage: python bench/bench_shadows.py [--shadows 64] [--sizes full,1000] [--steps 10] [--threads 1]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from audit.datasets import load_dataset  # noqa: E402
from audit.datasets.forget import select_forget  # noqa: E402
from audit.trials import make_trials  # noqa: E402
from unlearners.models import build_model  # noqa: E402
from unlearners.objective import Objective, init_parameters  # noqa: E402
from unlearners.registry import get_method  # noqa: E402

TARGET = 10.0
RESULTS = Path(__file__).resolve().parent / "results" / "shadows.json"


def _timed(fn):
    cpu, wall = time.process_time(), time.perf_counter()
    out = fn()
    return out, time.process_time() - cpu, time.perf_counter() - wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shadows", type=int, default=64)
    parser.add_argument("--sizes", default="full,1000", help="training-set sizes: 'full' (all of Adult) or counts")
    parser.add_argument("--steps", type=int, default=10, help="T (the ratio does not depend on it)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (the audit's auto choice is 1 here)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    runs = [measure(args, None if size == "full" else int(size)) for size in args.sizes.split(",")]
    text = json.dumps({"benchmark": "ulira_shadows_batched_vs_loop", "target_speedup": TARGET,
                       "summary": [{k: r[k] for k in ("n_train", "shadows", "speedup_cpu", "within_target")}
                                   for r in runs], "runs": runs}, indent=2)
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(text + "\n")
    print(text)


def measure(args, max_train: int | None) -> dict:
    data = load_dataset("adult", seed=args.seed, max_train=max_train)
    X = torch.as_tensor(data.X_train, dtype=torch.float64)
    y = torch.as_tensor(data.y_train)
    forget = torch.as_tensor(select_forget(data, fraction=0.01, seed=args.seed))
    objective = Objective(build_model("mlp", data.input_shape, data.n_classes))
    method = get_method("r2d")(objective, steps=args.steps, rewind=args.steps // 2, seed=args.seed)

    def init(generator: torch.Generator) -> torch.Tensor:
        return init_parameters(objective, generator, torch.float64)

    method.fit(X, y, init(torch.Generator().manual_seed(args.seed)))  # the audit's own run: η and L, G
    sigma = 0.01

    def shadows(batched: bool):
        return make_trials("retrain", method, forget, sigma, args.shadows, seed=args.seed + 1, init=init,
                           batched=batched)

    load_before = os.getloadavg()[0]
    batched, batched_cpu, batched_wall = _timed(lambda: shadows(True))
    loop, loop_cpu, loop_wall = _timed(lambda: shadows(False))
    difference = max(float((getattr(batched, w) - getattr(loop, w)).abs().max())
                     for w in ("theta_original", "theta_unlearned", "theta_retrained"))
    return {
        "method": "r2d", "model": "mlp (64 hidden units)", "n_params": objective.dim,
        "n_train": int(X.shape[0]), "forget_size": int(forget.numel()), "steps": args.steps,
        "rewind": args.steps // 2, "shadows": args.shadows, "threads": args.threads,
        "cpu_count": os.cpu_count(), "load_average_before": load_before,
        "loop_cpu_s": loop_cpu, "loop_wall_s": loop_wall,
        "batched_cpu_s": batched_cpu, "batched_wall_s": batched_wall,
        "speedup_cpu": loop_cpu / batched_cpu, "speedup_wall": loop_wall / batched_wall,
        "target_speedup": TARGET, "within_target": loop_cpu / batched_cpu >= TARGET,
        "paths": [batched.path, loop.path],
        "max_abs_difference_batched_vs_loop": difference,
    }


if __name__ == "__main__":
    main()
