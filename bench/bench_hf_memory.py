"""Benchmark: the memory checks of HF and CureNewton against the real peak, at a few sizes.

HF's old check compared only the recollection table (n_deletable × d floats) with ``memory_cap``;
the precomputation also holds the working memory of its steps (per-record gradients of a batch,
the vmapped Hessian-vector products over the approximators, whose intermediates grow with
chunk × |B| × activations), so a run that passed at 2 GiB was killed at 20.8 GB. CureNewton had
no check; its dense Hessian on a 257-parameter MLP peaked at 3.5 GB. Both now bound, before
training, the stored state plus the working memory of their largest step, by running the steps
on meta tensors (``src/unlearners/footprint.py``).

Each configuration runs in a fresh process (``tests/memory_probe.py``): the estimate, then the
real fit (CureNewton: and one dense unlearning step), measuring the growth of the peak RSS
(VmHWM reset before the run). Per row: ``table`` (what the old HF check counted), ``simulated``
(stored + working memory, the tensors' peak), ``bound`` (with the allocator margins),
``measured``, and the ratios. The row marked ``malloc_fixed`` repeats a mini-batch configuration
with ``MALLOC_MMAP_THRESHOLD_=65536``: the gap between the tensors' peak and the RSS is glibc's
(its dynamic mmap threshold), which the margins cover.

One JSON object (``bench/results/hf_memory.json``). Usage: python bench/bench_hf_memory.py
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROBE = ROOT / "tests" / "memory_probe.py"

CONFIGS = [
    {"method": "hf", "n": 500, "features": 10, "k": 500, "options": {"hidden": [32]}, "method_options": {"epochs": 2}},
    {"method": "hf", "n": 1000, "features": 10, "k": 1000, "options": {"hidden": [32]}, "method_options": {"epochs": 2}},
    {"method": "hf", "n": 2000, "features": 10, "k": 2000, "options": {"hidden": [32]}, "method_options": {"epochs": 2}},
    {"method": "hf", "n": 3000, "features": 20, "k": 3000, "options": {"hidden": [64, 64]}, "method_options": {"epochs": 2}},
    {"method": "hf", "n": 3000, "features": 20, "k": 1000, "options": {"hidden": [64, 64]},
     "method_options": {"epochs": 2, "batch_size": 500}},
    {"method": "hf", "n": 2000, "features": 10, "k": 500, "options": {"hidden": [64]},
     "method_options": {"epochs": 2, "batch_size": 256}},
    {"method": "hf", "n": 2000, "features": 10, "k": 2000, "options": {"hidden": [32]},
     "method_options": {"epochs": 2, "chunk": 64}},
    {"method": "hf", "n": 2000, "features": 50, "k": 2000, "model": "logreg", "classes": 10,
     "method_options": {"epochs": 2}},
    {"method": "curenewton", "n": 3000, "features": 2, "options": {"hidden": [64]}, "method_options": {"steps": 3}},
    {"method": "curenewton", "n": 8000, "features": 2, "options": {"hidden": [64]}, "method_options": {"steps": 3}},
    {"method": "curenewton", "n": 3000, "features": 10, "options": {"hidden": [32, 32]}, "method_options": {"steps": 3}},
]


def probe(config: dict, env: dict | None = None) -> dict:
    out = subprocess.run([sys.executable, str(PROBE), json.dumps(config)], capture_output=True, text=True,
                         check=True, env={**os.environ, **(env or {})})
    r = json.loads(out.stdout.strip().splitlines()[-1])
    mib = 2**20
    row = {"config": config, "d": r["d"], "simulated_mib": round(r["simulated"] / mib, 1),
           "bound_mib": round(r["bound"] / mib, 1), "measured_mib": round(r["measured"] / mib, 1),
           "bound_over_measured": round(r["bound"] / max(r["measured"], 1), 2),
           "simulated_over_measured": round(r["simulated"] / max(r["measured"], 1), 2),
           "bound_holds": r["bound"] >= r["measured"], "estimate_s": r["estimate_s"]}
    if config["method"] == "hf":
        row["table_mib"] = round(int(config["k"]) * r["d"] * 8 / mib, 2)  # what the old check counted
    return row


def main() -> None:
    t0 = time.perf_counter()
    rows = [probe(c) for c in CONFIGS]
    fixed = probe(CONFIGS[5], {"MALLOC_MMAP_THRESHOLD_": "65536"})
    fixed["malloc_fixed"] = True
    rows.append(fixed)
    print(json.dumps({"rows": rows, "all_bounds_hold": all(r["bound_holds"] for r in rows),
                      "max_bound_over_measured": max(r["bound_over_measured"] for r in rows),
                      "settings": {"threads": 1, "machine": platform.machine(), "cpus": os.cpu_count(),
                                   "wall_s": round(time.perf_counter() - t0, 1)}}, indent=2))


if __name__ == "__main__":
    main()
