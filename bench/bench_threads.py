"""Benchmark: the default audit at 1 and at 2 torch threads on a machine with a second busy process.

On a 2-core machine, one extra process spins (``while True: pass``) for the whole measurement.
The default audit (``audit run --method r2d --epsilon 1 --attacks none`` and with its attacks)
then runs with ``--threads 1`` and ``--threads 2``, interleaved, ``--repeats`` times each; the
wall and CPU times (``getrusage`` of the child) are compared. Issue 14's target: the two within
1.3× of each other (no spin-wait collapse). The same pair is also run with
``OMP_WAIT_POLICY=ACTIVE`` (OpenMP's spinning default, which the CLI replaces with ``PASSIVE``
unless the user sets the variable) to show what the setting prevents.

Prints one JSON object and writes bench/results/threads.json.

Usage: python bench/bench_threads.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_RATIO = 1.3
from _child import timed_child, write_results  # noqa: E402  (bench/ is the script's directory)

RESULTS = Path(__file__).resolve().parent / "results" / "threads.json"


def _run(threads: int, policy: str | None, attacks: bool) -> tuple[float, float]:
    env = dict(os.environ)
    env.pop("OMP_WAIT_POLICY", None)
    if policy is not None:
        env["OMP_WAIT_POLICY"] = policy
    command = ["audit", "run", "--method", "r2d", "--epsilon", "1", "--threads", str(threads), "--quiet"]
    if not attacks:
        command += ["--attacks", "none"]
    with tempfile.TemporaryDirectory() as out:
        wall, cpu, _ = timed_child([*command, "--out", out + "/r"], check=True, env=env, capture_output=True)
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.5)
        cases = {}
        for attacks in (False, True):
            for policy in (None, "ACTIVE"):
                walls: dict[int, list[float]] = {1: [], 2: []}
                cpus: dict[int, list[float]] = {1: [], 2: []}
                for _ in range(args.repeats):
                    for threads in (1, 2):
                        wall, cpu = _run(threads, policy, attacks)
                        walls[threads].append(wall)
                        cpus[threads].append(cpu)
                w1, w2 = statistics.median(walls[1]), statistics.median(walls[2])
                c1, c2 = statistics.median(cpus[1]), statistics.median(cpus[2])
                name = ("with attacks" if attacks else "--attacks none") + (
                    ", OMP_WAIT_POLICY=ACTIVE" if policy else ", the CLI's default (PASSIVE)")
                cases[name] = {"wall_s_1_thread": w1, "wall_s_2_threads": w2, "cpu_s_1_thread": c1,
                               "cpu_s_2_threads": c2, "wall_ratio": max(w1, w2) / min(w1, w2),
                               "cpu_ratio": max(c1, c2) / min(c1, c2),
                               "within_target": max(w1, w2) / min(w1, w2) <= TARGET_RATIO,
                               "walls": walls, "cpus": cpus}
    finally:
        busy.kill()
        busy.wait()
    result = {"benchmark": "threads_under_load", "cpu_count": os.cpu_count(), "busy_processes": 1,
              "repeats": args.repeats, "target_ratio": TARGET_RATIO, "cases": cases}
    print(write_results(RESULTS, result))


if __name__ == "__main__":
    main()
