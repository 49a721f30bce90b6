"""Benchmark: the counter-based trial noise against the former per-trial generators.

Each trial draws d standard normals per noise stream. Three ways to draw N trials of one stream,
measured in the same run on the CPU (median of ``--repeats`` after a warm-up):

* ``counter_based``: :func:`audit.trials.trial_noise` (Philox keyed per stream, row i at counter
  i·B, Box-Muller in float64, cast to the dtype): what the trials use now;
* ``per_trial_generator``: the former scheme, verbatim: for every trial a
  ``numpy.random.SeedSequence(seed, spawn_key=(i, stream))``, a ``torch.Generator`` seeded from
  it and one ``torch.randn(1, d)``;
* ``bulk_randn``: one ``torch.randn(N, d)`` from one generator (no per-trial property at all):
  the floor any scheme with per-trial seeds is compared with.

Plus the whole :func:`audit.trials.noise_trials` (three streams, released stacks), the rate in
trials per second and in normals per second, and the ratios. d is the parameter count of the
default audit's model (logistic regression on Adult's default 2 whitened features, 2 classes:
d = 3); ``--dims`` adds other sizes. Prints one JSON object, written to bench/results/trials.json.

Usage: python bench/bench_trials.py [--trials 50000] [--dims 1000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from audit.config import AuditConfig  # noqa: E402
from audit.datasets.registry import available_datasets  # noqa: E402
from audit.trials import noise_trials, trial_noise  # noqa: E402
from unlearners.models import build_model  # noqa: E402
from unlearners.objective import Objective  # noqa: E402

SEED, STREAM = 12345, 1


def default_dimension() -> int:
    """d of the default audit: the default model on the default dataset's default features."""
    config = AuditConfig()
    shape = available_datasets()[config.dataset].shape
    return Objective(build_model(config.model, shape["default_features"], shape["classes"])).dim


def per_trial_generator(n: int, d: int, dtype: torch.dtype) -> torch.Tensor:
    """The former ``_noisy_rows`` noise: a SeedSequence and a torch.Generator per trial."""
    rows = []
    for i in range(n):
        state = np.random.SeedSequence(SEED, spawn_key=(i, STREAM)).generate_state(1, dtype=np.uint64)
        generator = torch.Generator().manual_seed(int(state[0]))
        rows.append(torch.randn((1, d), generator=generator, dtype=dtype)[0])
    return torch.stack(rows)


def counter_based(n: int, d: int, dtype: torch.dtype) -> torch.Tensor:
    return trial_noise(SEED, STREAM, 0, n, d, dtype)


def bulk_randn(n: int, d: int, dtype: torch.dtype) -> torch.Tensor:
    return torch.randn((n, d), generator=torch.Generator().manual_seed(SEED), dtype=dtype)


def _timed(fn, repeats: int) -> dict:
    """Median wall time, and median CPU time of this process (less sensitive to other processes
    sharing the cores; torch.randn may use several threads, so its CPU time can exceed its wall)."""
    fn()  # warm-up
    times, cpu = [], []
    for _ in range(repeats):
        start, start_cpu = time.perf_counter(), time.process_time()
        fn()
        times.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return {"seconds": statistics.median(times), "cpu_seconds": statistics.median(cpu), "times_s": times}


def measure(n: int, d: int, dtype: torch.dtype, repeats: int, old_repeats: int) -> dict:
    out: dict = {"trials": n, "dim": d, "dtype": str(dtype).removeprefix("torch.")}
    for name, fn, reps in (("counter_based", counter_based, repeats),
                           ("per_trial_generator", per_trial_generator, old_repeats),
                           ("bulk_randn", bulk_randn, repeats)):
        timing = _timed(lambda fn=fn: fn(n, d, dtype), reps)
        timing["trials_per_s"] = n / timing["seconds"]
        timing["normals_per_s"] = n * d / timing["seconds"]
        out[name] = timing
    theta = torch.zeros(d, dtype=dtype)
    whole = _timed(lambda: noise_trials(theta, theta + 1, 1.0, n, SEED), repeats)
    whole["trials_per_s"] = n / whole["seconds"]
    out["noise_trials_three_streams"] = whole
    seconds = {k: out[k]["seconds"] for k in ("counter_based", "per_trial_generator", "bulk_randn")}
    cpu = {k: out[k]["cpu_seconds"] for k in seconds}
    out["speedup_vs_per_trial_generator"] = seconds["per_trial_generator"] / seconds["counter_based"]
    out["slowdown_vs_bulk_randn"] = seconds["counter_based"] / seconds["bulk_randn"]
    out["cpu_speedup_vs_per_trial_generator"] = cpu["per_trial_generator"] / cpu["counter_based"]
    out["cpu_slowdown_vs_bulk_randn"] = cpu["counter_based"] / cpu["bulk_randn"]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=50_000)
    parser.add_argument("--dims", default="", help="extra parameter counts, comma-separated")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--old-repeats", type=int, default=1, help="repeats of the slow former scheme")
    parser.add_argument("--dtype", default="float64", choices=("float64", "float32"))
    args = parser.parse_args()
    dtype = getattr(torch, args.dtype)
    d0 = default_dimension()
    dims = [d0] + [int(x) for x in args.dims.split(",") if x.strip()]
    result = {
        "benchmark": "per-trial noise: counter-based (Philox + Box-Muller) vs per-trial SeedSequence + "
                     "torch.Generator vs one bulk torch.randn, one stream, CPU",
        "default_dimension": d0,
        "torch_threads": torch.get_num_threads(),
        "runs": [measure(args.trials, d, dtype, args.repeats, args.old_repeats) for d in dims],
        "numpy": np.__version__,
        "torch": torch.__version__,
    }
    text = json.dumps(result, indent=2)
    print(text)
    out = Path(__file__).resolve().parent / "results" / "trials.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(text + "\n")


if __name__ == "__main__":
    main()
