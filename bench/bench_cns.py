"""Benchmark: CNS unlearning time against retraining, on the default audit's data.

Runs ``audit.pipeline.run(AuditConfig(method="cns", epsilon=1, attacks=(), model=...))`` (the
library form of ``audit run --method cns --epsilon 1 --attacks none``) for the default Adult
logistic regression (``logreg``, d = 3) and the default MLP (``mlp``, hidden 64, d = 257), each
in a fresh interpreter (as the CLI runs, first-call costs included), ``--repeats`` times, and
reads the report's timings: ``unlearn_s`` (the Newton step, its spectrum and solve) and
``retrain_s`` (A on D \\ Z from the same θ_0: 100 projected full-batch gradient steps), measured in
the same run, and the solver the report names (``method.hyperparameters.solver`` and
``solver_reason``). Also ``solver=lissa`` forced on the logistic regression, to show what the
``auto`` choice saves, and the sensitivity Δ of each certificate (the dense solve is certified by
Theorem 3.4, without the LiSSA term, so Δ falls as well).

``--baseline-src DIR`` runs the same configurations against another source tree (e.g. a
``git archive`` of the previous commit) for a before/after comparison in the same session.

Timings use ``--threads`` torch threads (default 1; see bench_objective.py: two threads on the
shared 2-core machine measure the neighbours). The 1-minute load average is recorded.

Calibration of the cost model behind ``solver="auto"`` (unlearners/cns.py, ``solver_costs``):
minimum of 3 runs, one thread, n = 34,190 float64 records unless noted. Linear closed-form Hessian:
0.65 ms (d = 3), 6.1 ms (d = 30), 44 ms (d = 109), 215 ms (d = 300), 19 ms (d = 63, C = 3), 784 ms
(d = 610, C = 10). MLP Hessian by vmapped products, n = 4,000: 0.07 s (d = 65), 3.8 s (d = 257);
the default MLP on all 34,190 records: 18 s. eigvalsh + Cholesky: 3 ms (d = 256), 123 ms (1024),
0.7 s (2048). One LiSSA step on 10 records: 90-103 µs (linear), 571-582 µs (MLP, d = 65 and 257).

Prints one JSON object and writes it to bench/results/cns.json.

Usage: python bench/bench_cns.py [--repeats 3] [--threads 1] [--baseline-src DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, sys, torch
torch.set_num_threads(int(sys.argv[1]))
from audit.config import AuditConfig
from audit.pipeline import run
model, options = sys.argv[2], json.loads(sys.argv[3])
report = run(AuditConfig(method="cns", epsilon=1.0, attacks=(), model=model, method_options=options))
d = report.to_dict()
hp = d["method"]["hyperparameters"]
print(json.dumps({"timings": d["timings"], "solver": hp["solver"], "solver_requested": hp.get("solver_requested"),
                  "solver_reason": hp.get("solver_reason"), "d": d["model"]["parameters"], "n": d["dataset"]["n_train"],
                  "sensitivity": d["certificate"]["sensitivity"], "valid": d["certificate"]["valid"],
                  "theorem": d["certificate"].get("theorem")}))
"""

CONFIGS = [("logreg", {}), ("logreg", {"solver": "lissa"}), ("mlp", {})]


def _one(src: Path, threads: int, model: str, options: dict) -> dict:
    env = {**os.environ, "PYTHONPATH": str(src)}
    out = subprocess.run([sys.executable, "-c", CHILD, str(threads), model, json.dumps(options)], cwd=ROOT,
                         env=env, capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"{model} {options} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _series(src: Path, args) -> list[dict]:
    rows = []
    for model, options in CONFIGS:
        runs = [_one(src, args.threads, model, options) for _ in range(args.repeats)]
        unlearn = [r["timings"]["unlearn_s"] for r in runs]
        retrain = [r["timings"]["retrain_s"] for r in runs]
        ratios = [u / r for u, r in zip(unlearn, retrain)]
        last = runs[-1]
        rows.append({
            "model": model, "options": options, "d": last["d"], "n": last["n"],
            "solver": last["solver"], "solver_requested": last["solver_requested"],
            "solver_reason": last["solver_reason"],
            "unlearn_s_median": statistics.median(unlearn), "retrain_s_median": statistics.median(retrain),
            "learn_s_median": statistics.median(r["timings"]["learn_s"] for r in runs),
            "unlearn_over_retrain_median": statistics.median(ratios),
            "unlearn_over_retrain_each_run": ratios,
            "unlearning_faster_than_retraining": all(x < 1 for x in ratios),
            "sensitivity": last["sensitivity"], "certificate_valid": last["valid"], "theorem": last["theorem"],
        })
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--baseline-src", type=Path, default=None,
                        help="another tree's src/ (or its root) to run the same configurations against")
    args = parser.parse_args()
    result = {"benchmark": "cns_unlearn_vs_retrain", "threads": args.threads, "repeats": args.repeats,
              "load_average_1min_start": os.getloadavg()[0], "cpu_count": os.cpu_count(),
              "config": "AuditConfig(method='cns', epsilon=1, attacks=(), model=...), defaults otherwise "
                        "(Adult, 100 steps, float64, seed 0)",
              "runs": _series(ROOT / "src", args)}
    if args.baseline_src is not None:
        base = args.baseline_src / "src" if (args.baseline_src / "src").is_dir() else args.baseline_src
        result["baseline_src"] = str(args.baseline_src)
        result["baseline_runs"] = _series(base, args)
    result["load_average_1min_end"] = os.getloadavg()[0]
    text = json.dumps(result, indent=2)
    print(text)
    (ROOT / "bench" / "results" / "cns.json").write_text(text + "\n")


if __name__ == "__main__":
    main()
