"""Benchmark: what the diagnostics cost an audit, before and after ``diagnostic_budget``.

The diagnostics are the tradeoff curve of the method's knob (R2D: the rewind K, replayed from the
stored trajectory; HF: the step size eta, one training per value) and R2D's checkpoint-recovery
check (Algorithm 3). For each case the same audit (``--attacks none``, defaults otherwise) runs
twice in this process, alternating: ``unbudgeted`` (``diagnostic_budget = 1000``: every grid
value and the whole recovery, what the audit did before the budget, plus the value the audit used,
now reused) and ``default`` (``diagnostic_budget = 1``). CPU seconds (``time.process_time``) per
stage from the progress callback: ``method`` is learn + unlearn + retrain (with the default 3
timing repeats), ``diagnostics`` the tradeoff stage plus the certify stage (where the recovery
runs; the certificate itself is a closed form); ``share`` is diagnostics / the whole run. Both
runs must give the same certificate and the same unlearned model (checked, recorded).

The machine is 2 cores shared with other work: read the ratios (same run, alternating), not the
seconds. Prints one JSON object (bench/results/diagnostics.json).
Usage: python bench/bench_diagnostics.py [--repeats 1] [--cases r2d-logreg,r2d-mlp,hf-logreg,hf-mlp]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import audit  # noqa: E402
from audit.config import AuditConfig  # noqa: E402

CASES = {
    "r2d-logreg": dict(method="r2d", model="logreg"),  # the default audit, without attacks
    "r2d-mlp": dict(method="r2d", model="mlp"),
    "hf-logreg": dict(method="hf", model="logreg"),
    # HF keeps one statistic per deletable record: on the whole Adult MLP table that is refused by its
    # memory cap, so the audit declares the forget set (the paper's large-model setting) on 500 records (2 shared cores)
    "hf-mlp": dict(method="hf", model="mlp", max_train=500, method_options={"deletable": "forget"}),
}
BUDGETS = {"unbudgeted": 1000.0, "default": 1.0}
METHOD_STAGES = ("learn", "unlearn", "retrain")
DIAGNOSTIC_STAGES = ("tradeoff", "certify")


def one_run(options: dict, budget: float) -> dict:
    stages: dict[str, float] = {}
    current = [None, time.process_time()]

    def progress(stage: str, done: int, total: int) -> None:
        now = time.process_time()
        if current[0] is not None:
            stages[current[0]] = stages.get(current[0], 0.0) + now - current[1]
        current[0], current[1] = stage, now

    start = time.process_time()
    report = audit.run(AuditConfig(attacks=(), diagnostic_budget=budget, **options), progress)
    progress("end", 0, 0)
    total = time.process_time() - start
    d = report.to_json_dict()
    method = sum(stages.get(s, 0.0) for s in METHOD_STAGES)
    diagnostics = sum(stages.get(s, 0.0) for s in DIAGNOSTIC_STAGES)
    curve, recovery = d.get("tradeoff") or {}, d.get("checkpoint_recovery") or {}
    return {"cpu_s": total, "method_cpu_s": method, "diagnostics_cpu_s": diagnostics,
            "tradeoff_cpu_s": stages.get("tradeoff", 0.0), "certify_stage_cpu_s": stages.get("certify", 0.0),
            "diagnostic_share": diagnostics / total, "diagnostics_over_method": diagnostics / method,
            "curve_rows": len(curve.get("rows", [])), "curve_left_out": len(curve.get("left_out", [])),
            "curve_work_trainings": curve.get("work"),
            "recovery_steps": recovery.get("steps"), "recovery_gradients": recovery.get("gradients"),
            "recovery_distance": recovery.get("distance_to_checkpoint"),
            "findings": [f["code"] for f in d["findings"]],
            "_certificate": d["certificate"], "_unlearned": d["parameters"]["sha256_unlearned"]}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--cases", default=",".join(CASES))
    args = parser.parse_args()
    out = {"benchmark": "diagnostics_budget", "cpu_count": os.cpu_count(), "repeats": args.repeats,
           "load_average_1min_start": os.getloadavg()[0],
           "note": "2 shared cores loaded by other work (see the load averages): CPU seconds, ratios from one run",
           "budgets": BUDGETS, "cases": {}}
    for name in args.cases.split(","):
        # imports and each code path's first calls (HF's meta-tensor memory plans, vmap's tracing) are
        # no budget's cost: a small audit of the same case, both budgets, runs first
        for budget in BUDGETS.values():
            one_run({**CASES[name], "max_train": 300}, budget)
        runs = {label: [] for label in BUDGETS}
        for _ in range(args.repeats):
            for label, budget in BUDGETS.items():  # alternating, so load drifts hit both alike
                runs[label].append(one_run(CASES[name], budget))
        same_certificate = all(r["_certificate"] == runs["unbudgeted"][0]["_certificate"] and
                               r["_unlearned"] == runs["unbudgeted"][0]["_unlearned"]
                               for rs in runs.values() for r in rs)
        case = {"config": CASES[name], "identical_certificate_and_unlearned_model": same_certificate}
        for label, rs in runs.items():
            case[label] = {k: (statistics.median(r[k] for r in rs) if isinstance(rs[0][k], float) else rs[0][k])
                           for k in rs[0] if not k.startswith("_")}
        case["audit_cpu_after_over_before"] = case["default"]["cpu_s"] / case["unbudgeted"]["cpu_s"]
        case["diagnostics_cpu_after_over_before"] = (case["default"]["diagnostics_cpu_s"]
                                                     / case["unbudgeted"]["diagnostics_cpu_s"])
        out["cases"][name] = case
        print(json.dumps({name: case}), file=sys.stderr, flush=True)
    out["load_average_1min_end"] = os.getloadavg()[0]
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
