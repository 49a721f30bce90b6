"""Measure a method's real peak memory against its pre-training estimate, in a fresh process.

Run as ``python tests/memory_probe.py '<json config>'``; prints one JSON object. The measured peak
is the growth of the process's peak RSS (VmHWM after resetting it, see :func:`reset_peak`) over
``fit`` (and, for CureNewton, one ``unlearn``), after a warm-up run on a few records has loaded
the kernels, so that library initialisation is part of the baseline. Used by
``tests/test_hessian_free.py``, ``tests/test_curenewton.py`` and ``bench/bench_hf_memory.py``.

Config keys: method ("hf" or "curenewton"), n, features, classes (2), model ("mlp"), options of
the model, method_options, k (HF: deletable records), forget (CureNewton: records unlearned).
"""

from __future__ import annotations

import json
import resource
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from unlearners.curenewton import CureNewton  # noqa: E402
from unlearners.hessian_free import HessianFree  # noqa: E402
from unlearners.models import build_model  # noqa: E402
from unlearners.objective import Objective, default_init  # noqa: E402

from synthetic import synthetic  # noqa: E402


def _status(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024  # kB
    raise KeyError(field)


def reset_peak() -> int:
    """Reset the peak RSS to the current RSS and return it (the baseline).

    ``ru_maxrss`` alone misleads in a child process: Linux keeps it across ``execve``, so a probe
    started from a large parent (a pytest session holding a fitted model) inherits the parent's
    peak and measures nothing. Writing 5 to ``/proc/self/clear_refs`` resets this process's high
    water mark (VmHWM, Linux >= 4.0); where that is unavailable, the ``ru_maxrss`` baseline."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return _status("VmRSS")
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux


def peak_rss() -> int:
    try:
        return _status("VmHWM")
    except (OSError, KeyError):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def main(cfg: dict) -> dict:
    torch.set_num_threads(int(cfg.get("threads", 1)))
    classes = int(cfg.get("classes", 2))
    X, y = synthetic(n=int(cfg["n"]), d=int(cfg["features"]), classes=classes, seed=0)
    obj = Objective(
        build_model(cfg.get("model", "mlp"), int(cfg["features"]), classes, **cfg.get("options", {})).double()
    )
    theta0 = default_init(obj, torch.Generator().manual_seed(0))
    options = cfg.get("method_options", {})
    if cfg["method"] == "hf":
        method = HessianFree(obj, deletable=list(range(int(cfg["k"]))), memory_cap=2**50, **options)
        t0 = time.perf_counter()
        estimate = method.memory_estimate(X, y, theta0, int(cfg["k"]))
        estimate_s = time.perf_counter() - t0
        HessianFree(obj, epochs=1, deletable=[0, 1]).fit(X[:8], y[:8], theta0)  # warm-up
        base = reset_peak()
        method.fit(X, y, theta0)
    else:
        method = CureNewton(obj, memory_cap=2**50, **options)
        t0 = time.perf_counter()
        estimate = method.memory_estimate(X, y, theta0)
        estimate_s = time.perf_counter() - t0
        warm = CureNewton(obj, steps=1, variant=method.resolved_variant)
        warm.fit(X[:16], y[:16], theta0)
        warm.unlearn([0])
        base = reset_peak()
        method.fit(X, y, theta0)  # chooses the same chunk as the estimate: the cap is not binding
        method.unlearn(list(range(int(cfg.get("forget", 10)))))
    measured = peak_rss() - base
    return {
        "config": cfg,
        "d": obj.dim,
        "stored": estimate["stored"],
        "working": estimate["working"],
        "simulated": estimate["stored"] + estimate["working"],
        "bound": estimate["bound"],
        "measured": measured,
        "estimate_s": round(estimate_s, 3),
    }


if __name__ == "__main__":
    print(json.dumps(main(json.loads(sys.argv[1]))))
