"""Benchmark: the closed-form derivatives of a linear model against the torch.func ones.

On the default audit's model and data: the Adult logistic regression as the pipeline builds it
(``load_dataset("adult")`` with its default feature map, float64, one logit; 34,190 training
records), or random data of that shape with ``--random``. For each of

* ``grad`` (full-batch ∇f_D), ``per_sample_grads`` (n × d), ``hvp`` (∇²f_D v), ``loss`` and
  ``logits``,
* 100 steps of full-batch gradient descent (:func:`unlearners.training.gradient_descent`),

it times the closed form (``Objective`` as shipped) and the torch.func path (the same
``Objective`` with ``linear_layout = None``, which is exactly the former code: ``grad`` of the
loss, ``vmap`` of ``grad`` per record, ``jvp`` of ``grad``, ``functional_call``), in the same run,
interleaved, median of ``--repeats`` timings after a warm-up, and checks that both give the same
numbers (largest absolute difference). The first call's cost, which includes imports done lazily
by torch.func (``torch._dynamo``), is measured in fresh interpreters.

Timings use ``--threads`` torch threads (default 1): on the shared 2-core machine, two threads
make every parallel kernel wait for a descheduled thread (12-16 ms per op measured under load),
which measures the neighbours, not the code. The 1-minute load average is recorded.

Prints one JSON object and writes it to bench/results/objective.json.

Usage: python bench/bench_objective.py [--repeats 20] [--threads 1] [--random]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from unlearners.models import build_model  # noqa: E402
from unlearners.objective import Objective, default_init  # noqa: E402
from unlearners.training import gradient_descent  # noqa: E402


def _data(random: bool):
    if random:
        g = torch.Generator().manual_seed(0)
        X = torch.randn(34190, 2, generator=g, dtype=torch.float64)
        X = X / X.norm(dim=1, keepdim=True)
        y = (torch.rand(34190, generator=g) < 0.24).long()
        return X, y, "random, shape of the default Adult training set"
    from audit.datasets import load_dataset

    data = load_dataset("adult", seed=0)
    X = torch.as_tensor(data.X_train, dtype=torch.float64).reshape(len(data.X_train), -1)
    return X, torch.as_tensor(data.y_train), "adult (default feature map), training split"


def _first_call(closed: bool) -> float:
    """Seconds of the first ``grad`` call in a fresh interpreter (lazy imports included)."""
    code = (
        "import sys, time, torch; sys.path.insert(0, 'src');"
        "from unlearners.models import build_model; from unlearners.objective import Objective;"
        "X = torch.randn(34190, 2, dtype=torch.float64); y = (torch.rand(34190) < .24).long();"
        "o = Objective(build_model('logreg', (2,), 2).double());"
        + ("" if closed else "o.linear_layout = None;")
        + "t = torch.zeros(o.dim, dtype=torch.float64); s = time.perf_counter(); o.grad(t, X, y);"
        "print(time.perf_counter() - s)"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    return float(out.stdout.strip())


def measure(args) -> dict:
    torch.set_num_threads(args.threads)
    X, y, source = _data(args.random)
    n, p = X.shape
    closed = Objective(build_model("logreg", (p,), 2).double())
    ref = Objective(build_model("logreg", (p,), 2).double())
    ref.linear_layout = None  # the torch.func path, i.e. the former implementation
    assert closed.linear_layout is not None
    theta = default_init(closed, torch.Generator().manual_seed(0))
    v = torch.randn(closed.dim, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    eta = 1.0
    calls = {
        "grad": lambda o: o.grad(theta, X, y),
        "per_sample_grads": lambda o: o.per_sample_grads(theta, X, y),
        "hvp": lambda o: o.hvp(theta, X, y, v),
        "loss": lambda o: o.loss(theta, X, y),
        "logits": lambda o: o.logits(theta, X),
        "gradient_descent_100_steps": lambda o: gradient_descent(o, theta, X, y, eta=eta, steps=100)[0],
    }
    out = {}
    for name, fn in calls.items():
        a, b = fn(closed), fn(ref)  # warm-up, and the agreement check
        diff = float((a - b).abs().max())
        times = {"closed_form": [], "torch_func": []}
        reps = max(3, args.repeats // 10) if name.startswith("gradient_descent") else args.repeats
        for _ in range(reps):  # interleaved, so that load changes hit both alike
            for key, o in (("closed_form", closed), ("torch_func", ref)):
                s = time.perf_counter()
                fn(o)
                times[key].append(time.perf_counter() - s)
        med = {k: statistics.median(t) for k, t in times.items()}
        out[name] = {"closed_form_ms": 1e3 * med["closed_form"], "torch_func_ms": 1e3 * med["torch_func"],
                     "speedup": med["torch_func"] / med["closed_form"], "max_abs_difference": diff,
                     "repeats": reps}
    first = {"closed_form_s": _first_call(True), "torch_func_s": _first_call(False)}
    return {
        "benchmark": "objective_closed_forms",
        "data": source, "n": n, "features": p, "d": closed.dim, "dtype": "float64",
        "threads": args.threads, "load_average_1min": os.getloadavg()[0], "cpu_count": os.cpu_count(),
        "torch": torch.__version__,
        "per_call": out,
        "first_grad_call_fresh_process": first,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--random", action="store_true", help="random data of the default shape")
    args = parser.parse_args()
    result = measure(args)
    text = json.dumps(result, indent=2)
    print(text)
    target = ROOT / "bench" / "results" / "objective.json"
    target.write_text(text + "\n")


if __name__ == "__main__":
    main()
