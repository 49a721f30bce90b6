"""Benchmark: the CNN audit a user types, at each training-set size (issue 26's speed targets).

``audit run --dataset idx:DIR --model cnn --method cns --max-train N`` with every other option at its
default (the run's default attacks, 1,000 noise trials per world, float64), each in a fresh
interpreter so imports count as a user pays them. Per size: the wall seconds, the child's CPU
seconds (user + system, ``getrusage``), the load average before and after (the machine may be
shared), each stage's seconds from the report's ``timings`` and the verdict with its findings.
The targets: at most 5 minutes wall for 2,000 images and 15 minutes for 10,000 on 2 CPU cores.

Prints one JSON object and writes it to bench/results/cnn_audit.json.

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


def one_size(mnist: Path, n: int, timeout: float) -> dict:
    cmd = ["audit", "run", "--dataset", f"idx:{mnist}", "--model", "cnn", "--method", "cns", "--max-train", str(n)]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    with tempfile.TemporaryDirectory() as tmp:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        load_before = os.getloadavg()[0]
        t0 = time.perf_counter()
        try:
            proc = subprocess.run(
                [sys.executable, "-m", "audit.cli", *cmd[1:], "--out", tmp, "-q"],
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
        report_file = Path(tmp) / "report.json"
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
    result = {
        "benchmark": "cnn_audit",
        "cpu_count": os.cpu_count(),
        "runs": [one_size(args.mnist, int(n), args.timeout) for n in args.sizes.split(",")],
    }
    text = json.dumps(result, indent=1)
    print(text)
    (ROOT / "bench" / "results" / "cnn_audit.json").write_text(text + "\n")


if __name__ == "__main__":
    main()
