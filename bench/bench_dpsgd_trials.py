"""Benchmark: DP-SGD's retrain-mode trials, batched against one Opacus training at a time (issue 26).

A DP-SGD trial is two private trainings (A on D, the retrain on D \\ Z; unlearning is the
identity). On the default comparison (`audit compare --epsilon 1`: Adult's 34,190 records, the
default logistic regression on 2 features, d = 3; DP-SGD's defaults: 30 epochs of B = 256, so
q = 1/134 and T = 4,020 noisy steps) each Opacus training costs seconds, almost all of it
Opacus's fixed cost per step. This script builds the same trials the two ways the audit can
(:func:`audit.trials.make_trials` in retrain mode with ``batched=True``: DP-SGD's ``train_many``,
:mod:`unlearners.dpsgd_batched`; ``batched=False``: a replica's ``fit`` and ``retrain`` through
Opacus per trial), on the same counter-based streams, and reports in one run:

* trials per CPU-second of each path and their ratio (CPU of this process, ``time.process_time``:
  the machine is shared, so wall time is reported but not compared);
* the largest difference between the batched and the Opacus trials (they agree to rounding: the
  clipped sum and the linear layer are summed in another order), over all T steps;
* whether the first trials of the batched set are bit for bit a smaller batched set (prefix).

Prints one JSON object and writes it to bench/results/dpsgd_trials.json.

Usage: python bench/bench_dpsgd_trials.py [--trials 75] [--loop-trials 3] [--max-train N]
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

from audit.config import AuditConfig  # noqa: E402
from audit.datasets import load_dataset  # noqa: E402
from audit.datasets.forget import select_forget  # noqa: E402
from audit.trials import make_trials  # noqa: E402
from unlearners.models import build_model  # noqa: E402
from unlearners.objective import Objective, init_parameters  # noqa: E402
from unlearners.registry import get_method  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "dpsgd_trials.json"
WORLDS = ("theta_original", "theta_unlearned", "theta_retrained")


def _timed(fn):
    cpu, wall = time.process_time(), time.perf_counter()
    out = fn()
    return out, time.process_time() - cpu, time.perf_counter() - wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=75, help="batched trials (75: one progress group on Adult)")
    parser.add_argument("--loop-trials", type=int, default=3, help="trials through Opacus one at a time")
    parser.add_argument("--max-train", type=int, default=None, help="cap on Adult's training set (default: all)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    config = AuditConfig()
    data = load_dataset(config.dataset, seed=args.seed, max_train=args.max_train)
    X = torch.as_tensor(data.X_train, dtype=torch.float64)
    y = torch.as_tensor(data.y_train)
    forget = torch.as_tensor(select_forget(data, fraction=0.01, seed=args.seed))
    objective = Objective(build_model(config.model, data.input_shape, data.n_classes))
    method = get_method("dpsgd")(objective, target_epsilon=1.0, target_delta=config.delta)

    def init(generator: torch.Generator) -> torch.Tensor:
        return init_parameters(objective, generator, torch.float64)

    _, fit_cpu, fit_wall = _timed(lambda: method.fit(X, y, init(torch.Generator().manual_seed(args.seed))))

    def trials(n: int, batched: bool):
        return make_trials("retrain", method, forget, 0.0, n, seed=args.seed + 1, init=init, batched=batched)

    load_before = os.getloadavg()[0]
    batched, batched_cpu, batched_wall = _timed(lambda: trials(args.trials, True))
    loop, loop_cpu, loop_wall = _timed(lambda: trials(args.loop_trials, False))
    prefix = trials(args.loop_trials, True)
    k = args.loop_trials
    difference = max(float((getattr(batched, w)[:k] - getattr(loop, w)).abs().max()) for w in WORLDS)
    scale = max(float(getattr(loop, w).abs().max()) for w in WORLDS)
    hp = method.report_hyperparameters()
    rate_batched, rate_loop = args.trials / batched_cpu, k / loop_cpu
    result = {
        "benchmark": "dpsgd_retrain_trials_batched_vs_opacus_loop",
        "machine": "shared 2-core machine, loaded by other sessions: CPU seconds of this process are compared, "
                   "wall seconds only reported",
        "cpu_count": os.cpu_count(), "load_average_before": load_before, "torch_threads": torch.get_num_threads(),
        "dataset": config.dataset, "model": config.model, "n_params": objective.dim, "n_train": int(X.shape[0]),
        "forget_size": int(forget.numel()),
        "dpsgd": {key: hp[key] for key in ("epochs", "batch_size", "clip", "eta", "accountant", "noise_multiplier",
                                             "sample_rate", "steps", "epsilon_one_record")},
        "audit_fit_opacus_cpu_s": fit_cpu, "audit_fit_opacus_wall_s": fit_wall,
        "batched": {"trials": args.trials, "cpu_s": batched_cpu, "wall_s": batched_wall,
                    "trials_per_cpu_s": rate_batched, "path": batched.path},
        "opacus_loop": {"trials": k, "cpu_s": loop_cpu, "wall_s": loop_wall, "trials_per_cpu_s": rate_loop,
                        "path": loop.path},
        "speedup_trials_per_cpu_s": rate_batched / rate_loop,
        "max_abs_difference_batched_vs_opacus": difference,
        "max_abs_parameter": scale,
        "prefix_bit_identical": all(torch.equal(getattr(prefix, w), getattr(batched, w)[:k]) for w in WORLDS),
    }
    text = json.dumps(result, indent=2)
    if args.max_train is None:
        RESULTS.parent.mkdir(exist_ok=True)
        RESULTS.write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
