"""Benchmark: seconds per trial of an audit of the caller's own code, and trials per second with
two worker processes against one local process (issue 25, "Scale").

The caller's code is the BatchNorm CNN of tests/test_caller.py (``DigitsCNN``, ``cnn_train``: Adam
on mini-batches of 32, 25 epochs; ``cnn_finetune`` as the unlearning) on the 8x8 digits
(``max_train`` records, 3 forgotten), attacked by mia (no shadow models, so every model is a
trial). Each trial is one training on D, one unlearning and one retraining on D \\ Z, run one per
task on the executor (a shard of one trial: :func:`audit.attacking.shard_granule`).

One whole audit (:func:`audit.run`) per executor, in the same run: ``local`` (one process) and
``processes`` with 2 workers. The trial stage's time is the report's ``timings.attacks_s``
(worker start-up included for ``processes``); seconds per trial = attacks_s / trials, trials per
second its inverse, ``ratio`` = processes' trials/s over local's. Worker processes start with
``spawn`` and import torch and the audit before their first trial (seconds on a loaded machine):
``first_trial_s`` is the time to the first finished trial, and ``steady_trials_per_s`` the rate
after each worker's first trial (from the progress callback's arrival times), with its ratio.
The report's own cost model (``attacks.execution.cost``: the audit's own learn/unlearn/retrain
timings times the trainings the trials need) is recorded next to the measured time, to show how
well it predicts. ``identical``
says whether the attacks section minus ``execution`` matched between the executors (and a third,
local audit with every trial in one shard: ``per_task_overhead_s`` is the difference per trial
between one trial per task and one task for all, and its fraction of a trial's time). A small
unrecorded audit runs first so that imports and first calls are charged to neither executor.

The machine has 2 cores and may be shared with other work: the load average is recorded before
and after, and the CPU seconds of this process next to the wall time of the local run.

``--device cuda`` (bench/device_check.sh) runs the same audits on the GPU, the training function
checking that the model and the records arrive there, in the driver and in every worker.

Usage: python bench/bench_caller.py [--trials 40] [--max-train 120] [--workers 2] [--device cpu|cuda]
       [--out bench/results/caller.json]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "tests")]
# spawned workers import the caller's functions (module test_caller) by name: the same path for them
os.environ["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), str(ROOT / "tests"), os.environ.get("PYTHONPATH", "")])

import torch  # noqa: E402
from sklearn.datasets import load_digits  # noqa: E402

import audit  # noqa: E402
from audit.config import AuditConfig  # noqa: E402
from test_caller import DigitsCNN, cnn_finetune, cnn_train  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "caller.json"


def digits():
    d = load_digits()
    return torch.as_tensor(d.images[:, None] / 16.0, dtype=torch.float32), torch.as_tensor(d.target)


def on_device(fn, device: str):
    """``fn``, checking first that the model and the records arrive on the audit's device."""
    def checked(model, dataset, generator):
        where = {next(model.parameters()).device.type, dataset.tensors[0].device.type}
        if where != {device}:
            raise RuntimeError(f"train_fn got the model and data on {where}, not on the audit's {device}")
        return fn(model, dataset, generator)
    return checked


def one(config: AuditConfig, data) -> dict:
    arrivals: list[float] = []  # the clock at the trial stage's start and after every finished shard

    def progress(stage: str, done: int, total: int) -> None:
        if stage == "shards" and (done > 0 or not arrivals):
            arrivals.append(time.perf_counter())

    cpu0, t0 = time.process_time(), time.perf_counter()
    report = audit.run(config, progress, model=DigitsCNN(), data=data, train=on_device(cnn_train, config.device),
                       unlearn=cnn_finetune,
                       salt=b"s" * 32).to_json_dict()
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    workers = report["attacks"]["execution"]["workers"]
    # steady state: the trials after each worker's first (start-up and first calls excluded)
    steady = ((len(arrivals) - 1 - workers) / (arrivals[-1] - arrivals[workers])
              if len(arrivals) - 1 > workers else None)  # one shard per worker or fewer: no steady state
    section = report["attacks"]
    execution = section.pop("execution")
    n = section["trials"]["n_trials"]
    seconds = report["timings"]["attacks_s"]
    return {"executor": execution["executor"], "workers": execution["workers"], "shards": execution["shards"],
            "shard_size": execution["shard_size"], "trials": n, "attacks_s": seconds,
            "seconds_per_trial": seconds / n, "trials_per_s": n / seconds,
            "first_trial_s": arrivals[1] - arrivals[0], "steady_trials_per_s": steady, "audit_wall_s": wall,
            "driver_cpu_s": cpu, "own_run_s": {k: report["timings"][k] for k in ("learn_s", "unlearn_s", "retrain_s")},
            "cost_model": execution.get("cost"), "_section": json.dumps(section, sort_keys=True)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--trials", type=int, default=40)
    parser.add_argument("--max-train", type=int, default=120)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    data = digits()
    base = AuditConfig(attacks=("mia",), trials=args.trials, curve_points=2, noise_draws=2, frontier=[],
                       forget_strategy="mislabelled", forget_count=3, max_train=args.max_train, timing_repeats=1,
                       device=args.device)
    load_before = os.getloadavg()
    one(dataclasses.replace(base, trials=10, max_train=40), data)  # warm-up, unrecorded
    local = one(base, data)
    together = one(dataclasses.replace(base, shard_size=args.trials), data)  # every trial in one task
    processes = one(dataclasses.replace(base, executor="processes", workers=args.workers), data)
    load_after = os.getloadavg()
    identical = local.pop("_section") == processes.pop("_section") == together.pop("_section")
    overhead = (local["attacks_s"] - together["attacks_s"]) / args.trials
    result = {
        "benchmark": "bench/bench_caller.py",
        "what": "an audit of the caller's own code: the BatchNorm CNN of tests/test_caller.py (Adam, mini-batches "
                "of 32, 25 epochs) on the 8x8 digits, fine-tuning as the unlearning, attack mia; one trial = "
                "one training on D + one unlearning + one retraining on D minus Z, one trial per task",
        "settings": {"trials": args.trials, "max_train": args.max_train, "forget_count": 3, "dtype": "float64",
                     "workers": args.workers, "device": args.device},
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "torch": torch.__version__,
                    "torch_threads": torch.get_num_threads(),
                    "loadavg_before": [round(x, 2) for x in load_before],
                    "loadavg_after": [round(x, 2) for x in load_after],
                    "note": "shared machine: a load average above the core count means other work competed"},
        "local": local,
        "processes": processes,
        "local_one_shard": together,
        "per_task_overhead_s": overhead,
        "per_task_overhead_fraction_of_a_trial": overhead / together["seconds_per_trial"],
        "ratio_trials_per_s_processes_over_local": processes["trials_per_s"] / local["trials_per_s"],
        "ratio_steady_trials_per_s_processes_over_local": processes["steady_trials_per_s"]
        / local["steady_trials_per_s"],
        "identical_attacks_section": identical,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
