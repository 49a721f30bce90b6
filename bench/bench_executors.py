"""Benchmark: an audit's trials per second on the local, processes and Ray executors, and a paper
estimate of the throughput on N machines.

The attack stage makes the trials in shards (:mod:`audit.shards`) on an executor
(:mod:`audit.executors`); whatever the executor, the scores and bounds must be byte-identical.
This benchmark runs one whole audit (:func:`audit.pipeline.run`) per executor and trial count and
reads ``timings.attacks_s`` of its report: trials/s = trials per world / attack-stage seconds (each
retrain-mode trial trains three models: original, unlearned and retrained, each from its own
initial point). The ratio to ``local`` is taken at each count in the same run, and
``identical`` says whether ``report["attacks"]`` minus ``execution`` matched local's byte for byte.

Settings: R2D on the MLP (Adult, one hidden layer of 64 units), ``max_train`` 500 and ``steps``
10 (each trial is 3 short trainings; chosen so 10,000 trials take about two minutes on one core
and the whole default run stays within ~15 minutes on 2 cores), ``trial_mode`` "retrain" with
attacks mia,whitebox (no shadow models: trials/s counts trials only); and noise mode (each trial
a noise draw around the audit's own models) with the default attacks, whose 16 shadow models per
world are counted in ``models_per_s``, at 1,000 records and 20 steps (below that R2D issues no
certificate, σ = 0, and there is no noise to draw).
workers = 2 (this machine's cores); ``ray`` starts its own local cluster in every run, as a user
without a cluster gets it, so its start-up is in the measured time. One small local audit per mode
runs first, unrecorded, so that imports and first calls are not charged to whichever runs first.

Instrumentation (wrapped, not modified): ``audit.executors.execute`` records the executor's wall
time, the arrival time and array bytes of every shard's result; ``audit.executors._serialise``
records the pickled context's size (shipped once per worker). The *estimate* section combines
these measured parts in an Amdahl-style formula, stated in the JSON with its assumptions.

Usage: python bench/bench_executors.py [--trials 1000,10000] [--executors local,processes,ray]
       [--modes retrain,noise] [--workers 2] [--max-train 500] [--steps 10] [--quick]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import audit.executors as executors  # noqa: E402
from attacks.registry import get_attack  # noqa: E402
from audit import pipeline  # noqa: E402
from audit.attacking import ExecutionSettings, shard_size_for  # noqa: E402
from audit.config import AuditConfig  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "executors.json"
MACHINES = (1, 2, 4, 8, 16)
MODES = {"retrain": {"trial_mode": "retrain", "attacks": ("mia", "whitebox")},
         # noise: the default attacks (U-LiRA's shadows included); R2D issues no certificate (σ = 0,
         # nothing to draw) below about 1,000 records and 20 steps, so noise mode is measured there
         "noise": {"trial_mode": "noise", "max_train": 1000, "steps": 20}}


class Probe:
    """Wraps ``execute`` and ``_serialise`` of :mod:`audit.executors` for one audit."""

    def __enter__(self) -> dict:
        self.record: dict = {"context_bytes": None, "serialise_s": None}
        self.execute, self.serialise = executors.execute, executors._serialise
        record = self.record

        def serialise(ctx):
            t0 = time.perf_counter()
            blob = self.serialise(ctx)
            record.update(context_bytes=len(blob), serialise_s=time.perf_counter() - t0)
            return blob

        def execute(ctx, shards, executor, **options):
            arrivals, sizes, t0 = [], [], time.perf_counter()

            class Timed:  # the executor, each result's arrival and array bytes recorded
                workers = executor.workers

                def run(self, ctx, todo, done):
                    def timed(shard, result):
                        arrivals.append(time.perf_counter() - t0)
                        sizes.append(int(sum(np.asarray(v).nbytes for v in result.values())))
                        done(shard, result)
                    executor.run(ctx, todo, timed)

            out = self.execute(ctx, shards, Timed(), **options)
            record.update(executor_s=time.perf_counter() - t0, first_result_s=arrivals[0],
                          result_bytes=sum(sizes), result_bytes_per_shard=max(sizes), granule=ctx.granule)
            return out

        executors._serialise, executors.execute = serialise, execute
        return record

    def __exit__(self, *exc) -> None:
        executors._serialise, executors.execute = self.serialise, self.execute


def audit_once(args, mode: str, trials: int, executor: str) -> tuple[dict, str]:
    settings = {"max_train": args.max_train, "steps": args.steps, **MODES[mode]}
    config = AuditConfig(method="r2d", model="mlp", hidden=(64,), trials=trials, executor=executor,
                         workers=None if executor == "local" else args.workers, curve_points=2, noise_draws=2,
                         **settings)
    load = os.getloadavg()[0]
    with Probe() as probe, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        report = pipeline.run(config, salt=b"0" * 32).to_dict()
        total = time.perf_counter() - t0
    attacks, timings = report["attacks"], report["timings"]
    if attacks is None:
        raise SystemExit(f"{mode} {trials}: no attack stage ran ({[f.get('code') for f in report['findings']]})")
    execution = attacks.pop("execution")
    shadows = any("shadows" in get_attack(name).needs for name in config.attacks)
    models = trials + (config.shadow_models if shadows else 0)
    stage = timings["attacks_s"]
    row = {"mode": mode, "trials": trials, "models_per_world": models, "executor": executor,
           "workers": execution["workers"], "shard_size": execution["shard_size"], "shards": execution["shards"],
           "total_s": total, "attacks_s": stage, "before_and_after_attacks_s": total - stage,
           "driver_in_attack_stage_s": stage - probe["executor_s"], **probe,
           "trials_per_s": trials / stage, "models_per_s": models / stage, "load_average_before": load}
    return row, json.dumps(attacks, sort_keys=True)


def estimate(runs: list[dict], mode: str, n: int, cores: int, gbit: float) -> dict | None:
    """Trials/s of the attack stage on N machines of ``cores`` cores, from the measured parts."""
    at = {r["executor"]: r for r in runs if r["mode"] == mode and r["trials"] == n}
    if "local" not in at or "ray" not in at:
        return None
    local, ray = at["local"], at["ray"]
    per_trial = local["executor_s"] / n  # one shard after another on one core: compute only
    driver = local["driver_in_attack_stage_s"]  # serial: planning, gathering, scoring, bounds
    start = max(0.0, ray["first_result_s"] - ray["shard_size"] * per_trial)  # Ray start-up + context shipping
    overhead = (ray["executor_s"] - start) * ray["workers"] - local["executor_s"]
    per_shard = max(0.0, overhead / ray["shards"])
    bytes_per_s = gbit * 1e9 / 8
    out_per_trial = ray["result_bytes"] / n
    table = []
    for machines in MACHINES:
        workers = machines * cores
        size = shard_size_for(n, local["granule"], ExecutionSettings("ray"), workers)
        shards = math.ceil(n / size)
        compute = math.ceil(shards / workers) * (size * per_trial + per_shard)
        shipped = (machines * ray["context_bytes"] + n * out_per_trial) / bytes_per_s
        stage = start + driver + compute + shipped
        table.append({"machines": machines, "workers": workers, "shard_size": size, "shards": shards,
                      "compute_s": compute, "network_s": shipped, "attacks_s": stage, "trials_per_s": n / stage,
                      "end_to_end_trials_per_s": n / (stage + local["before_and_after_attacks_s"])})
    serial = start + driver + (ray["context_bytes"] + n * out_per_trial) / bytes_per_s
    return {
        "label": "estimate (not measured)", "mode": mode, "trials": n, "cores_per_machine": cores,
        "network_gbit_s_assumed": gbit,
        "formula": "attacks_s(N) = start + driver + ceil(shards/(N*c)) * (shard_size*t_trial + o_shard) "
                   "+ (N*context_bytes + trials*result_bytes_per_trial) / bandwidth; trials/s = trials/attacks_s; "
                   "shard_size as the audit chooses it for N*c Ray workers (shard_size_for)",
        "assumptions": ["N identical machines like this one, c one-threaded workers each, no stragglers",
                        "the context travels once per machine (Ray's object store), results one by one "
                        "over the driver's link at the assumed bandwidth",
                        "start-up as measured for a local Ray cluster started by the run (joining a running "
                        "cluster costs less)",
                        "t_trial from the local run (one core); o_shard = Ray's extra core-seconds per shard "
                        "over local's, start-up excluded"],
        "measured_parts": {"t_trial_s": per_trial, "driver_serial_s": driver, "start_s": start,
                           "o_shard_s": per_shard, "o_shard_raw_s": overhead / ray["shards"],
                           "context_bytes": ray["context_bytes"], "result_bytes_per_trial": out_per_trial,
                           "result_bytes_per_shard": ray["result_bytes_per_shard"],
                           "before_and_after_attacks_s": local["before_and_after_attacks_s"]},
        "amdahl_limit_trials_per_s": n / serial,
        "check_N1_vs_measured_ray": {"estimated_trials_per_s": table[0]["trials_per_s"] if cores == ray["workers"]
                                     else None, "measured_trials_per_s": ray["trials_per_s"]},
        "table": table,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", default="1000,10000", help="trials per world, comma-separated")
    parser.add_argument("--executors", default="local,processes,ray")
    parser.add_argument("--modes", default="retrain,noise", help="trial modes (retrain: every trial trains)")
    parser.add_argument("--workers", type=int, default=2, help="workers of processes and ray")
    parser.add_argument("--max-train", type=int, default=500)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--cores-per-machine", type=int, default=executors.cpu_count())
    parser.add_argument("--gbit", type=float, default=1.0, help="network bandwidth assumed by the estimate")
    parser.add_argument("--quick", action="store_true", help="smoke run: 200 trials, 200 records, 5 steps")
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args()
    if args.quick:
        args.trials, args.max_train, args.steps = "200", 200, 5
    counts, names = [int(t) for t in args.trials.split(",")], args.executors.split(",")
    runs, summary, estimates = [], [], []
    started, load = time.perf_counter(), os.getloadavg()[0]
    for mode in args.modes.split(","):
        audit_once(args, mode, 64, "local")  # warm-up: imports and first calls not charged to local
        for n in counts:
            reference = None
            for name in names:
                row, attacks = audit_once(args, mode, n, name)
                reference = attacks if reference is None else reference
                row["identical_to_first"] = attacks == reference
                runs.append(row)
                print(f"{mode} {n} {name}: {row['trials_per_s']:.1f} trials/s, attack stage {row['attacks_s']:.1f} s",
                      file=sys.stderr, flush=True)
            at = {r["executor"]: r for r in runs if r["mode"] == mode and r["trials"] == n}
            base = at.get("local")
            summary.append({"mode": mode, "trials": n, "identical": all(r["identical_to_first"] for r in at.values()),
                            "trials_per_s": {k: r["trials_per_s"] for k, r in at.items()},
                            "models_per_s": {k: r["models_per_s"] for k, r in at.items()},
                            "ratio_to_local": {k: r["trials_per_s"] / base["trials_per_s"] for k, r in at.items()}
                            if base else None})
            print(json.dumps(summary[-1]), file=sys.stderr, flush=True)
        found = estimate(runs, mode, max(counts), args.cores_per_machine, args.gbit)
        if found:
            estimates.append(found)
    text = json.dumps({
        "benchmark": "executors_trials_per_second",
        "setup": {"method": "r2d", "model": "mlp", "hidden": [64], "dataset": "adult", "curve_points": 2,
                  "noise_draws": 2, "modes": {m: {"max_train": args.max_train, "steps": args.steps,
                                                  **{k: list(v) if isinstance(v, tuple) else v
                                                     for k, v in MODES[m].items()}}
                                              for m in args.modes.split(",")},
                  "workers": args.workers, "cpu_count": executors.cpu_count(), "quick": args.quick,
                  "trials_per_s": "trials per world / timings.attacks_s (the attack stage, executor start-up "
                                  "included); models_per_s adds the shadow models per world",
                  "ray_cluster": "local, started and shut down by the executor in each run"},
        "summary": summary, "estimates": estimates, "runs": runs,
        "benchmark_wall_s": time.perf_counter() - started,
        "load_average_1min": {"start": load, "end": os.getloadavg()[0]},
    }, indent=2)
    out = Path(args.out)
    out.parent.mkdir(exist_ok=True)
    out.write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
