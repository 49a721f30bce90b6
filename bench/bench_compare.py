"""Benchmark: `audit compare` with its default methods on the built-in Adult data (issue 16).

Two commands, each in a fresh interpreter so imports count as a user pays them, timed with the
CPU of the child (user + system, ``getrusage``) on this machine's cores:

1. **The reference**: the default audit, ``audit run --method r2d --epsilon 1``, measured in the
   same run (so the ratio holds on a faster or slower machine).
2. **The comparison**: ``audit compare --epsilon 1 --out DIR`` with every default (methods
   r2d, cns, hf, newton, ngd, dpsgd, finetune, retrain; the run's default attacks and RMIA;
   1,000 noise trials per world, or 200 retrain-mode trials for a release without output noise).

From the comparison's own files: each method's wall time (its report's ``started_at`` to
``created_at``, to the second) and stage timings, the page's size, and the table the page shows
(certified ε, σ, released accuracy, points below retraining, speed-up, best empirical ε, AUROCs)
with the recommendation, so the issue note can quote them.

Prints one JSON object and writes it to bench/results/compare.json.

Usage: python bench/bench_compare.py [--methods r2d,newton,retrain] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _child import timed_child  # noqa: E402  (bench/ is the script's directory)

RESULTS = Path(__file__).resolve().parent / "results" / "compare.json"
REFERENCE = ["audit", "run", "--method", "r2d", "--epsilon", "1", "-q"]


def _seconds(report: dict) -> float:
    start, end = (datetime.fromisoformat(report[k].replace("Z", "+00:00")) for k in ("started_at", "created_at"))
    return (end - start).total_seconds()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--methods", default=None, help="methods to compare (default: audit compare's)")
    parser.add_argument("--out", default=None, help="keep the comparison directory here")
    args = parser.parse_args()

    load_before = os.getloadavg()[0]
    ref_wall, ref_cpu, ref = timed_child(REFERENCE, capture_output=True, text=True)
    if ref.returncode not in (0, 1, 4, 5):
        raise SystemExit(f"reference failed: {ref.stderr}")

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(args.out) if args.out else Path(tmp) / "cmp"
        shown = ["audit", "compare", "--epsilon", "1"] + (["--methods", args.methods] if args.methods else [])
        wall, cpu, proc = timed_child([*shown, "--out", str(out), "-q"], capture_output=True, text=True)
        if proc.returncode not in (0, 1):
            raise SystemExit(f"audit compare failed ({proc.returncode}): {proc.stderr}")
        doc = json.loads((out / "report.json").read_text())
        methods = {}
        for row in doc["methods"]:
            report = json.loads((out / row["report"]).read_text())
            leakage = row["leakage"] or {}
            methods[row["name"]] = {
                "wall_s": _seconds(report),
                "stages_s": {k: v for k, v in report["timings"].items() if k.endswith("_s")},
                "trial_mode": leakage.get("trial_mode"), "n_trials": leakage.get("n_trials"),
                "verdict": row["verdict"], "certified_epsilon": row["certified_epsilon"], "sigma": row["sigma"],
                "test_accuracy_released_mean": row["test_accuracy_released_mean"],
                "test_accuracy_released_std": row["test_accuracy_released_std"],
                "test_accuracy_retrained": row["test_accuracy_retrained"],
                "loss_vs_retrained_points": row["loss_vs_retrained_points"],
                "speedup_vs_retrain": row["speedup_vs_retrain"],
                "best_empirical_epsilon": leakage.get("best_empirical_epsilon"),
                "best_attack": leakage.get("best_attack"),
                "auroc_ulira": (leakage.get("auroc") or {}).get("ulira"),
                "auroc_rmia": (leakage.get("auroc") or {}).get("rmia"),
                "frontier": [(p["epsilon"], p["test_accuracy_mean"]) for p in (row["frontier"] or {}).get("points", [])],
            }
        page_bytes = (out / "report.html").stat().st_size

    result = {
        "benchmark": "compare",
        "command": " ".join(shown),
        "cpu_count": os.cpu_count(),
        "load_average_before": load_before,
        "reference": {"command": " ".join(REFERENCE), "wall_s": ref_wall, "cpu_s": ref_cpu},
        "wall_s": wall,
        "cpu_s": cpu,
        "wall_ratio_to_reference": wall / ref_wall,
        "methods_requested": doc["methods_requested"],
        "not_applicable": {m["name"]: m["reason"] for m in doc["not_applicable"]},
        "recommendation": doc["recommendation"]["method"],
        "recommendation_why": doc["recommendation"]["why"],
        "excluded": doc["recommendation"]["excluded"],
        "page_bytes": page_bytes,
        "methods": methods,
        "largest_share": max(methods, key=lambda m: methods[m]["wall_s"]) if methods else None,
    }
    text = json.dumps(result, indent=2, sort_keys=True)
    print(text)
    if not args.methods:
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text(text + "\n")


if __name__ == "__main__":
    main()
