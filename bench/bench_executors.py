"""Benchmark: an audit's trials per second on the local, processes and Ray executors, and a paper
estimate of the throughput on N machines.

The attack stage makes the trials in shards (:mod:`audit.shards`) on an executor
(:mod:`audit.executors`); whatever the executor, the scores and bounds must be byte-identical.
This benchmark runs one whole audit (:func:`audit.pipeline.run`) per executor and trial count and
reads ``timings.attacks_s`` of its report: trials/s = trials per world / attack-stage seconds (each
retrain-mode trial trains three models: original, unlearned and retrained, each from its own
initial point). The ratio to ``local`` is taken at each count in the same run, and
``identical`` says whether ``report["attacks"]`` minus ``execution`` matched local's byte for byte.

Settings: R2D on the MLP (Adult, one hidden layer of 64 units), ``max_train`` 500 and ``steps`` 5
(each trial is 3 short trainings, about 8 ms on one core: 10,000 trials take about 80 s locally,
and the default run about 5 minutes on this 2-core machine), ``trial_mode`` "retrain" with
attacks mia,whitebox (no shadow models: trials/s counts trials only); and noise mode (each trial
a noise draw around the audit's own models, a fraction of a millisecond) with the default
attacks, whose 16 shadow models per world are counted in ``models_per_s``, at 1,000 records and
20 steps (below that R2D issues no certificate, σ = 0, and there is no noise to draw).
workers = 2 (this machine's cores); ``ray`` starts its own local cluster in every run, as a user
without a cluster gets it, so its start-up is in the measured time. One small local audit per
mode runs first, unrecorded, so that imports and first calls are not charged to whichever runs
first. The machine may be shared: each run records the load average and, for local, its CPU
seconds next to the wall time.

Instrumentation (wrapped, not modified): ``audit.executors.execute`` records the executor's wall
and driver CPU time, the arrival time and array bytes of every shard's result;
``audit.executors._serialise`` the pickled context's size (shipped once per worker). A
calibration pair (local and a one-worker Ray run with one-granule shards) isolates Ray's start-up
and per-shard overhead. The *estimate* section combines these measured parts in an Amdahl-style
formula, stated in the JSON with its assumptions. A failed run is recorded with its error; the
JSON is rewritten after every run (``partial`` until the end).

Usage: python bench/bench_executors.py [--trials 1000,10000] [--executors local,processes,ray]
       [--modes retrain,noise] [--workers 2] [--max-train 500] [--steps 5] [--quick]
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
from attacks.registry import BUILTIN, get_attack  # noqa: E402
from audit import pipeline  # noqa: E402
from audit.attacking import ExecutionSettings, shard_size_for  # noqa: E402
from audit.config import AuditConfig  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "executors.json"
MACHINES = (1, 2, 4, 8, 16)
MODES = {"retrain": {"trial_mode": "retrain", "attacks": ("mia", "whitebox")},
         # noise: the default attacks (U-LiRA's shadows included); R2D issues no certificate (σ = 0,
         # nothing to draw) below about 1,000 records and 20 steps, so noise mode is measured there
         "noise": {"trial_mode": "noise", "max_train": 1000, "steps": 20, "attacks": tuple(BUILTIN)}}


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
            arrivals, sizes, t0, cpu = [], [], time.perf_counter(), time.process_time()

            class Timed:  # the executor, each result's arrival and array bytes recorded
                workers = executor.workers

                def run(self, ctx, todo, done):
                    def timed(shard, result):
                        arrivals.append(time.perf_counter() - t0)
                        sizes.append(int(sum(np.asarray(v).nbytes for v in result.values())))
                        done(shard, result)
                    executor.run(ctx, todo, timed)

            out = self.execute(ctx, shards, Timed(), **options)
            record.update(executor_s=time.perf_counter() - t0, executor_cpu_s=time.process_time() - cpu,
                          first_result_s=arrivals[0],
                          result_bytes=sum(sizes), result_bytes_per_shard=max(sizes), granule=ctx.granule)
            return out

        executors._serialise, executors.execute = serialise, execute
        return record

    def __exit__(self, *exc) -> None:
        executors._serialise, executors.execute = self.serialise, self.execute


def audit_once(args, mode: str, trials: int, executor: str, workers: int | None = None,
               shard_size: int | None = None) -> tuple[dict, str]:
    settings = {"max_train": args.max_train, "steps": args.steps, **MODES[mode]}
    config = AuditConfig(method="r2d", model="mlp", hidden=(64,), trials=trials, executor=executor, workers=workers,
                         shard_size=shard_size, curve_points=2, noise_draws=2, **settings)
    load = os.getloadavg()[0]
    with Probe() as probe, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        report = pipeline.run(config, salt=b"0" * 32).to_dict()
        total = time.perf_counter() - t0
    attacks, timings = report["attacks"], report["timings"]
    if attacks is None:
        raise RuntimeError(f"no attack stage ran ({[f.get('code') for f in report['findings']]})")
    execution = attacks.pop("execution")
    shadows = any("shadows" in get_attack(name).needs for name in config.attacks)
    models = trials + (config.shadow_models if shadows else 0)
    stage = timings["attacks_s"]
    row = {"mode": mode, "trials": trials, "models_per_world": models, "executor": executor,
           "workers": execution["workers"], "shard_size": execution["shard_size"], "shards": execution["shards"],
           "torch_threads": report["environment"]["threads"], "total_s": total, "attacks_s": stage,
           "before_and_after_attacks_s": total - stage, "driver_in_attack_stage_s": stage - probe["executor_s"],
           **probe, "trials_per_s": trials / stage, "models_per_s": models / stage, "load_average_before": load,
           "load_average_after": os.getloadavg()[0]}
    return row, json.dumps(attacks, sort_keys=True)


def estimate(runs: list[dict], mode: str, n: int, cores: int, gbit: float) -> dict | None:
    """Trials/s of the attack stage on N machines of ``cores`` cores, from the measured parts."""
    main = {r["executor"]: r for r in runs if r["mode"] == mode and r["trials"] == n and r["role"] == "main"
            and "error" not in r}
    calib = {r["executor"]: r for r in runs if r["mode"] == mode and r["role"] == "calibration"}
    if "local" not in main or "ray" not in main or len(calib) < 2 or any("error" in r for r in calib.values()):
        return None
    local, ray, one_local, one_ray = main["local"], main["ray"], calib["local"], calib["ray"]
    per_trial = local["executor_cpu_s"] / n  # CPU seconds per trial of one dedicated core (one thread)
    driver = local["driver_in_attack_stage_s"]  # serial: planning, gathering, scoring, bounds
    # one worker each, the same shards: Ray's start-up is its extra time to the first shard, its
    # per-task overhead the rest of its extra time, per shard
    start = max(0.0, one_ray["first_result_s"] - one_local["first_result_s"])
    extra = one_ray["executor_s"] - one_local["executor_s"] - start
    per_shard = max(0.0, extra / one_ray["shards"])
    bytes_per_s = gbit * 1e9 / 8
    out_per_trial, shadows = ray["result_bytes"] / n, ray["models_per_world"] - n
    table = []
    for machines in MACHINES:
        workers = machines * cores
        size = shard_size_for(n, local["granule"], ExecutionSettings("ray"), workers)
        shards = math.ceil(n / size) + math.ceil(shadows / size)  # the shadow models: a role of their own
        waves = math.ceil((n + shadows) / (size * workers))  # rounds of N*c full shards, all workers busy
        compute = waves * (size * per_trial + per_shard)
        shipped = (machines * ray["context_bytes"] + n * out_per_trial) / bytes_per_s
        stage = start + driver + compute + shipped
        table.append({"machines": machines, "workers": workers, "shard_size": size, "shards": shards,
                      "compute_s": compute, "network_s": shipped, "attacks_s": stage, "trials_per_s": n / stage,
                      "end_to_end_trials_per_s": n / (stage + local["before_and_after_attacks_s"])})
    serial = start + driver + (ray["context_bytes"] + n * out_per_trial) / bytes_per_s
    return {
        "label": "estimate (not measured)", "mode": mode, "trials": n, "cores_per_machine": cores,
        "network_gbit_s_assumed": gbit,
        "formula": "attacks_s(N) = start + driver + ceil(models/(N*c*shard_size)) * (shard_size*t_trial + o_shard) "
                   "+ (N*context_bytes + trials*result_bytes_per_trial) / bandwidth; trials/s = trials/attacks_s; "
                   "shard_size as the audit chooses it for N*c Ray workers (shard_size_for)",
        "assumptions": ["N identical machines like this one, c dedicated one-threaded workers each (t_trial: CPU "
                        "seconds per trial of the local run), no stragglers",
                        "the context travels once per machine (Ray's object store), results one by one over the "
                        "driver's link at the assumed bandwidth",
                        "start-up and o_shard from a one-worker Ray run against a local run with the same shards "
                        "(a local cluster started by the run; joining a running cluster costs less)"],
        "measured_parts": {"t_trial_cpu_s": per_trial, "t_trial_wall_s": local["executor_s"] / n,
                           "driver_serial_s": driver, "start_s": start, "o_shard_s": per_shard,
                           "o_shard_raw_s": extra / one_ray["shards"], "calibration_shards": one_ray["shards"],
                           "context_bytes": ray["context_bytes"], "result_bytes_per_trial": out_per_trial,
                           "before_and_after_attacks_s": local["before_and_after_attacks_s"]},
        "amdahl_limit_trials_per_s": n / serial,
        "N1_estimate_vs_measured_ray": {"estimated": table[0]["trials_per_s"], "measured": ray["trials_per_s"],
                                        "cores_match": cores == ray["workers"], "load_average_during":
                                        [ray["load_average_before"], ray["load_average_after"]]},
        "table": table,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", default="1000,10000", help="trials per world, comma-separated")
    parser.add_argument("--executors", default="local,processes,ray")
    parser.add_argument("--modes", default="retrain,noise", help="trial modes (retrain: every trial trains)")
    parser.add_argument("--workers", type=int, default=2, help="workers of processes and ray")
    parser.add_argument("--max-train", type=int, default=500)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--cores-per-machine", type=int, default=executors.cpu_count())
    parser.add_argument("--gbit", type=float, default=1.0, help="network bandwidth assumed by the estimate")
    parser.add_argument("--quick", action="store_true", help="smoke run: retrain mode, 200 trials, 200 records")
    parser.add_argument("--estimate-from", help="only recompute the estimate from this results file's runs")
    parser.add_argument("--out", help=f"results file (default {RESULTS.name}; --quick writes none)")
    args = parser.parse_args()
    args.out = args.out or (None if args.quick else str(RESULTS))
    if args.estimate_from:  # e.g. another --gbit or --cores-per-machine, without measuring again
        data = json.loads(Path(args.estimate_from).read_text())
        data["estimates"] = [e for m in data["setup"]["modes"] if (e := estimate(
            data["runs"], m, max(r["trials"] for r in data["runs"] if r["mode"] == m), args.cores_per_machine,
            args.gbit))]
        Path(args.out or RESULTS).write_text(json.dumps(data, indent=2) + "\n")
        print(json.dumps(data["estimates"], indent=2))
        return
    if args.quick:
        args.trials, args.max_train, args.steps, args.modes = "200", 200, 5, "retrain"
    counts, names, modes = [int(t) for t in args.trials.split(",")], args.executors.split(","), args.modes.split(",")
    runs, summary, estimates = [], [], []
    started, load = time.perf_counter(), os.getloadavg()[0]

    def measure(mode, n, name, role, reference, **options):
        try:
            row, attacks = audit_once(args, mode, n, name, **options)
            row["identical_to_local"] = None if reference is None else attacks == reference
        except Exception as exc:  # noqa: BLE001 - a failed run (e.g. workers killed) is recorded, not fatal
            row, attacks = {"mode": mode, "trials": n, "executor": name, "error": f"{type(exc).__name__}: {exc}"}, None
        runs.append({"role": role, **row})
        print(f"{mode} {n} {name} ({role}): {row.get('trials_per_s', 0):.1f} trials/s {row.get('error', '')}",
              file=sys.stderr, flush=True)
        write(partial=True)
        return attacks

    def write(partial: bool) -> str:
        text = json.dumps({
            "benchmark": "executors_trials_per_second", "partial": partial,
            "setup": {"method": "r2d", "model": "mlp", "hidden": [64], "dataset": "adult", "curve_points": 2,
                      "noise_draws": 2, "modes": {m: {"max_train": args.max_train, "steps": args.steps,
                                                      **MODES[m]} for m in modes},
                      "workers": args.workers, "cpu_count": executors.cpu_count(), "quick": args.quick,
                      "trials_per_s": "trials per world / timings.attacks_s (the attack stage, executor start-up "
                                      "included); models_per_s adds the shadow models per world",
                      "ray_cluster": "local, started and shut down by the executor in each run",
                      "calibration": "local and 1-worker ray with one-granule shards, at the smallest trial count "
                                     "(the estimate's start-up and per-shard overhead)"},
            "summary": summary, "estimates": estimates, "runs": runs,
            "benchmark_wall_s": time.perf_counter() - started,
            "load_average_1min": {"start": load, "end": os.getloadavg()[0]},
        }, indent=2)
        if args.out:
            Path(args.out).parent.mkdir(exist_ok=True)
            Path(args.out).write_text(text + "\n")
        return text

    for mode in modes:
        audit_once(args, mode, 64, "local")  # warm-up: imports and first calls not charged to local
        for n in counts:
            reference = None
            for name in names:
                found = measure(mode, n, name, "main", reference, workers=None if name == "local" else args.workers)
                reference = found if name == "local" else reference
            these = [r for r in runs if r["mode"] == mode and r["trials"] == n and r["role"] == "main"]
            at = {r["executor"]: r for r in these if "error" not in r}
            base = at.get("local", {}).get("trials_per_s")
            summary.append({"mode": mode, "trials": n, "failed": [r["executor"] for r in these if "error" in r],
                            "identical": all(r["identical_to_local"] is not False for r in at.values()) and bool(base),
                            **{key: {k: r[key] for k, r in at.items()} for key in ("trials_per_s", "models_per_s")},
                            "ratio_to_local": {k: r["trials_per_s"] / base for k, r in at.items()} if base else None})
            if n == min(counts) and "ray" in names:
                for name in ("local", "ray"):
                    measure(mode, n, name, "calibration", reference, workers=1, shard_size=1)
        found = estimate(runs, mode, max(counts), args.cores_per_machine, args.gbit)
        if found:
            estimates.append(found)
    print(write(partial=False))


if __name__ == "__main__":
    main()
