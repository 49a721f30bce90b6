"""Benchmark: start-up of the light commands against `python -c pass`, measured in the same run.

Each command runs ``--repeats`` times in a fresh interpreter (interleaved with the reference);
the median wall time and CPU time (``getrusage`` of the child) are reported with the ratio to
``python -c pass``. The commands: ``audit --help``, ``audit calibrate`` (σ for ε = 1,
δ = 1e-5, Δ = 1), ``audit verify`` of a signed report (made once, before timing, with
``--attacks none``), and ``audit methods`` (the built-ins from src/audit/data/catalog.json,
without torch since issue 26). Issue 14's target: the first three well under a second; issue
26's: ``audit methods`` under a second. On a loaded machine wall time follows the load: compare
``cpu_s``. Prints JSON and writes bench/results/startup.json.

Usage: python bench/bench_startup.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from _child import timed_child, write_results  # noqa: E402  (bench/ is the script's directory)

RESULTS = Path(__file__).resolve().parent / "results" / "startup.json"


def _timed(command: list[str]) -> tuple[float, float]:
    wall, cpu, _ = timed_child(command, check=True, capture_output=True)
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(["audit", "keygen", "--out", f"{tmp}/keys"], check=True, capture_output=True)
        subprocess.run(["audit", "run", "--method", "r2d", "--epsilon", "1", "--attacks", "none", "--quiet",
                        "--out", f"{tmp}/report", "--sign-key", f"{tmp}/keys/private.pem"],
                       check=True, capture_output=True)
        commands = {
            "python -c pass": [sys.executable, "-c", "pass"],
            "audit --help": ["audit", "--help"],
            "audit calibrate": ["audit", "calibrate", "--epsilon", "1", "--delta", "1e-5", "--sensitivity", "1"],
            "audit verify": ["audit", "verify", f"{tmp}/report", "--key", f"{tmp}/keys/public.pem"],
            "audit methods": ["audit", "methods"],
        }
        load_before = os.getloadavg()[0]
        samples: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
        for _ in range(args.repeats):
            for name, command in commands.items():
                samples[name].append(_timed(command))
    base_wall = statistics.median(w for w, _ in samples["python -c pass"])
    rows = {}
    for name, runs in samples.items():
        wall, cpu = statistics.median(w for w, _ in runs), statistics.median(c for _, c in runs)
        rows[name] = {"wall_s": wall, "cpu_s": cpu, "wall_over_python": wall / base_wall}
    result = {"benchmark": "startup", "cpu_count": os.cpu_count(), "load_average_before": load_before,
              "repeats": args.repeats, "commands": rows,
              "light_commands_under_1s": all(rows[n]["wall_s"] < 1.0
                                             for n in ("audit --help", "audit calibrate", "audit verify"))}
    print(write_results(RESULTS, result))


if __name__ == "__main__":
    main()
