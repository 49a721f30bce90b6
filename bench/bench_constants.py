"""Benchmark: R2D's estimated constants on MLPs, before and after issue 14's changes.

On a 256 x 256 MLP, 99 % of R2D's fit (150 of 151 s) went to estimating the per-sample
smoothness L and gradient bound G: the step size estimated L *and* G at θ_0 (discarding G), the
fit estimated both again at 8 iterates (θ_0 included), and every replica (retrain-mode trials of
the loop path, shadow models, R2D's mini-batch ``train_many``) repeated the whole estimate. Now
(``src/unlearners/smoothness.py``): only the constants asked for are sampled, θ_0's samples are
shared by the step size and the certificate, replicas reuse the fit's constants
(``Unlearner.pinned_state``), and a plain MLP's per-sample gradient norms and Hessian products
come from its layers instead of ``vmap`` over records (the same numbers to rounding).

The *before* path is the code of commit :data:`BASELINE` (``smoothness.py`` and ``r2d.py`` read
with ``git show``), run in the same process on the same data. Four parts, one JSON object
(``bench/results/constants.json``):

``fit``
    R2D fits of an MLP (64 x 64 softplus, d = 6,154) on the built-in digits data (1,257 records,
    T = 50): wall time before and after, the constants (G is deterministic, so equal to rounding;
    L's record subset is drawn differently, since θ_0's samples are now shared), and the
    per-iterate estimations performed.
``audit_16_shadows``
    Retrain-mode trial sets of 16 models through the loop path (``make_trials(..., batched=False)``,
    what shadow models of a mini-batch or non-batched method run), after the audit's own fit:
    estimations performed (per iterate, G and L counted apart) and wall time, before and after.
    A smaller MLP (32 hidden units, T = 20) keeps the *before* run short.
``estimators_256``
    The 256 x 256 claim, per iterate on the built-in Adult data (34,190 records, d = 66,817): the
    MLP path's G (every record) and L (256 records) measured; the generic path's G measured on
    one 2,048-record chunk and L on 32 records, then scaled linearly to 34,190 and 256 records
    (``scaled: true``), and the projected estimation time of one fit before (9 G + 9 L) and
    after (8 G + 8 L). One full-batch gradient is timed too, for the fit's training part.
``settings``
    Threads, the machine, the baseline commit.

Usage: python bench/bench_constants.py [--threads 1] [--skip-256]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
import types
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from audit.datasets import load_dataset  # noqa: E402
from audit.trials import make_trials  # noqa: E402
from unlearners.models import build_model  # noqa: E402
from unlearners.objective import Objective, default_init  # noqa: E402
from unlearners.r2d import RewindToDelete  # noqa: E402
from unlearners.smoothness import ConstantSampler  # noqa: E402

#: The commit before issue 14's constant changes: the *before* path.
BASELINE = "df1201f"


def baseline_r2d():
    """HEAD~ R2D with its own smoothness module, and counters of its per-iterate estimations."""
    def source(path: str) -> str:
        return subprocess.run(["git", "show", f"{BASELINE}:{path}"], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout

    old = types.ModuleType("baseline_smoothness")
    exec(compile(source("src/unlearners/smoothness.py"), "baseline_smoothness", "exec"), old.__dict__)
    counts = {"G": 0, "L": 0}
    estimate_G, estimate_L = old._estimate_G, old._estimate_L

    def counted_G(objective, X, y, iterates, *args):
        counts["G"] += len(iterates)
        return estimate_G(objective, X, y, iterates, *args)

    def counted_L(objective, X, y, iterates, *args):
        counts["L"] += len(iterates)
        return estimate_L(objective, X, y, iterates, *args)

    old._estimate_G, old._estimate_L = counted_G, counted_L
    sys.modules["baseline_smoothness"] = old
    code = source("src/unlearners/r2d.py").replace("from unlearners.smoothness import", "from baseline_smoothness import")
    r2d = types.ModuleType("baseline_r2d")
    exec(compile(code, "baseline_r2d", "exec"), r2d.__dict__)
    return r2d.RewindToDelete, counts


def new_counts():
    counts = {"G": 0, "L": 0}
    for name, method in (("G", "_grad_norms"), ("L", "_hessian_norms")):
        original = getattr(ConstantSampler, method)

        def counted(self, theta, _name=name, _original=original):
            counts[_name] += 1
            return _original(self, theta)

        setattr(ConstantSampler, method, counted)
    return counts


def digits(hidden: tuple[int, ...]):
    data = load_dataset("digits", seed=0)
    X = torch.as_tensor(data.X_train, dtype=torch.float64)
    y = torch.as_tensor(data.y_train)
    obj = Objective(build_model("mlp", X.shape[1], data.n_classes, hidden=hidden).double())
    return obj, X, y, default_init(obj, torch.Generator().manual_seed(0))


def fit_part(Old, old_counts, counts) -> dict:
    obj, X, y, theta0 = digits((64, 64))
    out = {"model": "mlp 64x64 softplus", "d": obj.dim, "records": int(X.shape[0]), "steps": 50, "rewind": 10}
    for label, cls, c in (("before", Old, old_counts), ("after", RewindToDelete, counts)):
        c.update(G=0, L=0)
        method = cls(obj, steps=50, rewind=10)
        t0 = time.perf_counter()
        method.fit(X, y, theta0)
        out[label] = {"fit_s": round(time.perf_counter() - t0, 2), "estimations": dict(c),
                      "L": method.constants_["L"].value, "G": method.constants_["G"].value, "eta": method.eta_}
    out["speedup"] = round(out["before"]["fit_s"] / out["after"]["fit_s"], 1)
    out["G_relative_difference"] = abs(out["after"]["G"] - out["before"]["G"]) / out["before"]["G"]
    return out


def shadows_part(Old, old_counts, counts) -> dict:
    obj, X, y, theta0 = digits((32,))
    forget = torch.arange(20)

    def init(g):
        return default_init(obj, g)

    out = {"model": "mlp 32 softplus", "d": obj.dim, "records": int(X.shape[0]), "steps": 20, "shadow_models": 16}
    for label, cls, c in (("before", Old, old_counts), ("after", RewindToDelete, counts)):
        c.update(G=0, L=0)
        method = cls(obj, steps=20, rewind=5)
        t0 = time.perf_counter()
        method.fit(X, y, theta0)
        fit_s = time.perf_counter() - t0
        fit_counts = dict(c)
        t0 = time.perf_counter()
        make_trials("retrain", method, forget, 0.0, 16, 1, init=init, batched=False)
        out[label] = {"audit_fit_s": round(fit_s, 2), "shadows_s": round(time.perf_counter() - t0, 2),
                      "estimations_fit": fit_counts,
                      "estimations_total": dict(c),
                      "estimations_total_sum": c["G"] + c["L"]}
    return out


def estimators_256() -> dict:
    data = load_dataset("adult", seed=0)
    X = torch.as_tensor(data.X_train, dtype=torch.float64)
    y = torch.as_tensor(data.y_train)
    n = int(X.shape[0])
    obj = Objective(build_model("mlp", X.shape[1], 2, hidden=(256, 256)).double())
    theta = default_init(obj, torch.Generator().manual_seed(0))

    def timed(fn):
        t0 = time.perf_counter()
        fn()
        return time.perf_counter() - t0

    new = ConstantSampler(obj, X, y, generator=torch.Generator().manual_seed(0))
    G_new = timed(lambda: new._grad_norms(theta))
    L_new = timed(lambda: new._hessian_norms(theta))
    chunk = ConstantSampler(obj, X[:2048], y[:2048], generator=torch.Generator().manual_seed(0), structured=False)
    G_chunk = timed(lambda: chunk._grad_norms(theta))
    few = ConstantSampler(obj, X, y, generator=torch.Generator().manual_seed(0), structured=False,
                          records_for_smoothness=32)
    L_few = timed(lambda: few._hessian_norms(theta))
    G_old, L_old = G_chunk * n / 2048, L_few * 256 / 32
    grad_s = timed(lambda: obj.grad(theta, X, y))
    return {
        "model": "mlp 256x256 softplus", "d": obj.dim, "records": n,
        "per_iterate_s": {"G_after": round(G_new, 2), "L_after": round(L_new, 2),
                          "G_before": round(G_old, 1), "L_before": round(L_old, 1),
                          "G_before_measured_on_2048_records": round(G_chunk, 2),
                          "L_before_measured_on_32_records": round(L_few, 2)},
        "scaled": True,
        "fit_estimation_s": {"before": round(9 * (G_old + L_old), 1), "after": round(8 * (G_new + L_new), 1)},
        "full_batch_gradient_s": round(grad_s, 2),
        "training_s_at_T_100": round(100 * grad_s, 1),
        "note": "before = the generic vmap estimators at the baseline's 9 iterates (θ_0 twice), scaled "
                "linearly in records from the measured subsets; after = the MLP path at 8 iterates",
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--skip-256", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    Old, old_counts = baseline_r2d()
    counts = new_counts()
    t0 = time.perf_counter()
    out = {"fit": fit_part(Old, old_counts, counts), "audit_16_shadows": shadows_part(Old, old_counts, counts)}
    if not args.skip_256:
        out["estimators_256"] = estimators_256()
    out["settings"] = {"threads": args.threads, "baseline_commit": BASELINE, "torch": torch.__version__,
                       "machine": platform.processor() or platform.machine(), "cpus": os.cpu_count(),
                       "load_average": os.getloadavg(), "wall_s": round(time.perf_counter() - t0, 1)}
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
