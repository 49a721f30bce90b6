"""Benchmark: does the default audit, with its trials sized by cost, refute a planted release of
realized ε = 3 against a certified ε = 1 with its assumption-free (Clopper–Pearson) bound, within
10 s on 2 cores (issue 28 item 3)?

The planted release is a real audit: the default command ``audit run --method r2d --epsilon 1``
with the gradient bound overridden to ``--G 8.1943e-5`` (the default's 1.414 scaled so that σ is
‖θ_U − θ_R‖/0.7191: a μ-GDP release of μ = 0.7191, realized ε = 3.000 at δ = 1e-5). Its
certificate still says ε = 1. Each command runs in a fresh interpreter (imports counted, as a user
pays them), timed by :func:`_child.timed_child` (wall, and CPU = user + system of the child).

Also measured, interleaved with the planted runs so both see the same load: the honest default
command (the trials plateau at the floor: 1,000 per world, no pilot), and the planted command at
the old constant ``--trials 1000``. Per run: wall, CPU, the trial count and its record, every
attack's bound, the best bound and the verdict. Before any run: the trials per world the best
attack needs (the prediction of :func:`audit.trial_budget.predicted_bound` at the default
per-attack level) and the machine's load.

Prints one JSON object and writes it to bench/results/trial_budget.json.

Usage: python bench/bench_trial_budget.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

from _child import timed_child  # noqa: E402  (bench/ is the script's directory)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

RESULTS = Path(__file__).resolve().parent / "results" / "trial_budget.json"
PLANTED_G = "8.1943e-5"
BASE = ["audit", "run", "--method", "r2d", "--epsilon", "1"]
COMMANDS = {
    "planted_default": [*BASE, "--G", PLANTED_G],
    "honest_default": BASE,
    "planted_1000_trials": [*BASE, "--G", PLANTED_G, "--trials", "1000"],
}
TARGET_WALL_S = 10.0


def _one(name: str, command: list[str]) -> dict:
    with tempfile.TemporaryDirectory() as out:
        wall, cpu, proc = timed_child([*command, "--out", out + "/report", "--quiet"], capture_output=True, text=True)
        if proc.returncode not in (0, 1):  # 1: the verdict is "violated"
            raise SystemExit(f"{name}: exit {proc.returncode}: {proc.stderr[-2000:]}")
        report = json.loads(Path(out, "report", "report.json").read_text())
    attacks = report["attacks"]
    cmp = attacks["comparison"]
    return {
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 2),
        "load_average_before": round(os.getloadavg()[0], 2),
        "exit_code": proc.returncode,
        "n_per_world": attacks["trials"]["n_per_world"],
        "sizing": attacks["trials"].get("sizing"),
        "attacks_s": round(report["timings"].get("attacks_s", 0.0), 2),
        "epsilon_lower": {k: round(v["bound"]["epsilon_lower"], 3) for k, v in attacks["attacks"].items()},
        "best_epsilon_lower": round(cmp["best_empirical_epsilon"], 3),
        "best_attack": cmp["best_attack"],
        "realized_epsilon": round(report["realized"]["epsilon"], 4),
        "certified_epsilon": cmp["certified_epsilon"],
        "verdict": report["verdict"],
    }


def _needed() -> dict:
    """Trials per world at which the best attack's predicted bound on the planted release passes 1."""
    from scipy.optimize import brentq

    from audit.attacking import per_attack_confidence
    from audit.trial_budget import predicted_bound
    from certify.mechanisms import epsilon_for

    mu = brentq(lambda m: epsilon_for(1.0 / m, 1e-5, 1.0) - 3.0, 0.05, 10.0)
    each = per_attack_confidence(0.95, 4)
    counts = (1000, 2000, 4000, 8000, 16000, 32000, 64000)
    return {"mu": round(mu, 4), "per_attack_confidence": each,
            "predicted_bound": {str(n): round(predicted_bound(mu, n, 1e-5, each), 3) for n in counts}}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    runs: dict[str, list[dict]] = {name: [] for name in COMMANDS}
    load_before = os.getloadavg()[0]
    for _ in range(args.repeats):
        for name, command in COMMANDS.items():
            runs[name].append(_one(name, command))
    planted = runs["planted_default"]
    out = {
        "benchmark": "trial_budget",
        "commands": {name: " ".join(command) for name, command in COMMANDS.items()},
        "cpu_count": os.cpu_count(),
        "load_average_before": round(load_before, 2),
        "load_average_after": round(os.getloadavg()[0], 2),
        "machine": "2 shared cores, loaded by other jobs: CPU = user + system of each child; runs interleaved",
        "needed": _needed(),
        "runs": runs,
        "planted_bound_above_certified_all": all(r["best_epsilon_lower"] > 1.0 for r in planted),
        "planted_max_wall_s": max(r["wall_s"] for r in planted),
        "planted_max_cpu_s": max(r["cpu_s"] for r in planted),
        "target_wall_s": TARGET_WALL_S,
        "within_target_cpu": all(r["cpu_s"] < TARGET_WALL_S and r["best_epsilon_lower"] > 1.0 for r in planted),
    }
    text = json.dumps(out, indent=1)
    RESULTS.write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
