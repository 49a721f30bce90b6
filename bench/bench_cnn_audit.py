"""Benchmark: the CNN audit a user types, at each training-set size (issue 26's speed targets).

``audit run --dataset idx:DIR --model cnn --method cns --max-train N`` with every other option at its
default (the run's default attacks, 1,000 noise trials per world, float64), each in a fresh
interpreter so imports count as a user pays them. Per size: the wall seconds, the child's CPU
seconds (user + system, ``getrusage``), the load average before and after (the machine may be
shared), each stage's seconds from the report's ``timings`` and the verdict with its findings.
The targets: at most 5 minutes wall for 2,000 images and 15 minutes for 10,000 on 2 CPU cores.

Per stage (``stages``): the child's CPU seconds (every thread, user + system), its wall seconds
and the 1-minute load average when the stage began, clocked at each change of the stage its
progress callback reports (the CLI's own command, run through ``audit.cli.main`` with that
callback wrapped; trials and shadows interleave, so each stage sums its intervals). On a shared
machine the CPU seconds are the comparable number: where the run is single-threaded, its wall
time on idle cores is about its CPU time.

Prints one JSON object and writes it to bench/results/cnn_audit.json, keeping the runs of the
sizes not measured this time.

Usage: python bench/bench_cnn_audit.py [--mnist DIR] [--sizes 2000,10000] [--timeout 1800]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET_S = {2000: 300.0, 10000: 900.0}
RESULTS = ROOT / "bench" / "results" / "cnn_audit.json"

#: Runs the CLI with its progress callback wrapped: one JSON line per stage change (stage, child CPU
#: of every thread, wall, load), appended to the file named by AUDIT_BENCH_STAGES.
CLOCKED_CLI = """
import json, os, resource, sys, time
import audit.cli.run as run
log, t0, last = open(os.environ["AUDIT_BENCH_STAGES"], "a"), time.perf_counter(), [None]
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
def mark(stage):
    row = {"stage": stage, "cpu": cpu(), "wall": time.perf_counter() - t0, "load": os.getloadavg()[0]}
    log.write(json.dumps(row) + "\\n")
    log.flush()
wrapped = run.checked
def checked(progress):
    inner = wrapped(progress)
    def clocked(stage, done, total):
        if stage != last[0]:
            mark(stage)
            last[0] = stage
        inner(stage, done, total)
    return clocked
run.checked = checked
import atexit
atexit.register(mark, "end")
sys.argv[0] = "audit"
from audit.cli import main
main()
"""


def stage_times(lines: list[str]) -> dict:
    """Per stage: CPU and wall seconds summed over its intervals, and the load when it began."""
    rows = [json.loads(line) for line in lines if line.strip()]
    stages: dict[str, dict] = {}
    for a, b in zip(rows, rows[1:]):
        entry = stages.setdefault(a["stage"], {"cpu_s": 0.0, "wall_s": 0.0, "load_at_start": a["load"]})
        entry["cpu_s"] += b["cpu"] - a["cpu"]
        entry["wall_s"] += b["wall"] - a["wall"]
    return stages


def one_size(mnist: Path, n: int, timeout: float) -> dict:
    cmd = ["audit", "run", "--dataset", f"idx:{mnist}", "--model", "cnn", "--method", "cns", "--max-train", str(n)]
    with tempfile.TemporaryDirectory() as tmp:
        stages_file = Path(tmp) / "stages.jsonl"
        env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "AUDIT_BENCH_STAGES": str(stages_file)}
        env.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # as audit.cli.main sets it before torch loads
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        load_before = os.getloadavg()[0]
        t0 = time.perf_counter()
        try:
            proc = subprocess.run(
                [sys.executable, "-c", CLOCKED_CLI, *cmd[1:], "--out", tmp + "/out", "-q"],
                capture_output=True,
                text=True,
                env=env,
                timeout=timeout,
            )
            code: int | str = proc.returncode
        except subprocess.TimeoutExpired:
            code = f"timed out after {timeout:g} s"
        wall = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        out = {
            "command": " ".join(cmd),
            "records": n,
            "exit_code": code,
            "wall_s": wall,
            "cpu_s": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
            "load_average_before": load_before,
            "load_average_after": os.getloadavg()[0],
            "target_wall_s": TARGET_S.get(n),
            "within_target": TARGET_S.get(n) is not None and wall <= TARGET_S[n],
        }
        if stages_file.exists():
            out["stages"] = stage_times(stages_file.read_text().splitlines())
        report_file = Path(tmp) / "out" / "report.json"
        if report_file.exists():
            report = json.loads(report_file.read_text())
            out["timings"] = report.get("timings")
            out["verdict"] = report["verdict"]
            out["findings"] = [f["code"] for f in report["findings"]]
            out["test_accuracy_original"] = report["utility"]["original"]["test"]["accuracy"]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mnist", type=Path, default=ROOT.parent / "shared" / "datasets" / "mnist")
    parser.add_argument("--sizes", default="2000,10000")
    parser.add_argument("--timeout", type=float, default=1800.0)
    args = parser.parse_args()
    runs = [one_size(args.mnist, int(n), args.timeout) for n in args.sizes.split(",")]
    measured = {run["records"] for run in runs}
    kept = json.loads(RESULTS.read_text())["runs"] if RESULTS.exists() else []
    runs += [run for run in kept if run["records"] not in measured]
    result = {"benchmark": "cnn_audit", "cpu_count": os.cpu_count(), "runs": sorted(runs, key=lambda r: r["records"])}
    text = json.dumps(result, indent=1)
    print(text)
    RESULTS.write_text(text + "\n")


if __name__ == "__main__":
    main()
