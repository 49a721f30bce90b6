"""Benchmark: vmap-batched against one-model-at-a-time training and evaluation of N small MLPs.

N MLPs (20 inputs -> 32 softplus hidden units -> 1 logit, float32) on synthetic records:

(a) training: ``steps`` full-batch gradient-descent steps per model, looping
    :func:`unlearners.training.gradient_descent` over the models, against one call of
    :func:`audit.trials.batched_gradient_descent` on the (N, d) stack;
(b) evaluation: logits and per-sample losses of every model on every record, looping
    ``Objective.logits`` / ``Objective.per_sample_loss``, against ``batched_logits`` /
    ``batched_per_sample_loss``.

Both paths are warmed up, then timed with ``time.perf_counter`` (median of ``--repeats``), with
torch's default thread count unless ``--threads`` is given. The two paths' results are compared
(largest absolute difference) so a speedup never comes from computing something else. Prints one
JSON object. Target: both speedups >= 10x on 2 CPU cores.

Usage: python bench/bench_vmap.py [--models 64] [--records 2000] [--steps 50] [--device cpu|cuda]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from unlearners.batched import batched_logits, batched_per_sample_loss, chunk_size  # noqa: E402
from unlearners.models import build_model  # noqa: E402
from unlearners.objective import Objective, default_init  # noqa: E402
from unlearners.training import batched_gradient_descent, gradient_descent  # noqa: E402

TARGET = 10.0


def _timed(fn, repeats: int, sync) -> tuple[float, list[float], object]:
    out = fn()  # warm-up
    sync()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        sync()
        times.append(time.perf_counter() - start)
    return statistics.median(times), times, out


def _profile(obj, args, thetas0, X, y, device, sync, train_loop_s, train_batched_s, eval_loop_s) -> dict:
    """Where the time goes: the loop's fixed cost per call against work that scales with N·n·h.

    * ``loop_grad_call_8_records_s``: one ``Objective.grad`` call on 8 records (dispatch,
      functional call and autograd bookkeeping, almost no arithmetic): the fixed cost per
      model-step that batching removes. ``loop_per_model_step_s`` is the loop's whole cost per
      model-step, ``batched_per_model_step_s`` the batched path's: once the fixed cost is gone,
      what is left is arithmetic on N·n·hidden elements, which batching does not reduce.
    * ``activation_*``: the activation (and its derivative) on one (N, n, hidden) tensor, work
      that is the same in both paths; ``*_speedup_ceiling_activation`` = loop time / the
      activation's share alone (two forward passes in evaluation: logits and losses).
    * ``batched_*_top_ops_ms``: torch.profiler self time of the most expensive operators in one
      batched GD step and one batched evaluation.
    """
    act = obj.model[1]
    z = torch.randn(args.models, args.records, args.hidden, generator=torch.Generator().manual_seed(1)).to(device)
    zr = z.clone().requires_grad_()
    ones = torch.ones_like(z)

    def fwd_bwd():
        return torch.autograd.grad(act(zr), zr, ones)[0]

    with torch.no_grad():
        act_fwd_s = _timed(lambda: act(z), args.repeats, sync)[0]
    act_fwd_bwd_s = _timed(fwd_bwd, args.repeats, sync)[0]
    X8, y8 = X[:8], y[:8]
    overhead_s = _timed(lambda: [obj.grad(t, X8, y8) for t in thetas0], args.repeats, sync)[0] / args.models
    per_model_step_loop = train_loop_s / (args.models * args.steps)
    return {
        "loop_per_model_step_s": per_model_step_loop,
        "loop_grad_call_8_records_s": overhead_s,
        "batched_per_model_step_s": train_batched_s / (args.models * args.steps),
        "activation": args.activation,
        "activation_fwd_s": act_fwd_s,
        "activation_fwd_bwd_s": act_fwd_bwd_s,
        "train_speedup_ceiling_activation": train_loop_s / (args.steps * act_fwd_bwd_s),
        "eval_speedup_ceiling_activation": eval_loop_s / (2 * act_fwd_s),
        "batched_train_step_top_ops_ms": _top_ops(
            lambda: batched_gradient_descent(obj, thetas0, X, y, eta=args.eta, steps=1, chunk=args.chunk),
            device, sync),
        "batched_eval_top_ops_ms": _top_ops(
            lambda: (batched_logits(obj, thetas0, X, chunk=args.chunk),
                     batched_per_sample_loss(obj, thetas0, X, y, chunk=args.chunk)),
            device, sync, no_grad=True),
    }


def _top_ops(fn, device, sync, no_grad=False, count=6) -> dict:
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    with torch.set_grad_enabled(not no_grad):
        fn()
        sync()
        with profile(activities=activities) as prof:
            fn()
            sync()
    key = "self_cpu_time_total" if device.type == "cpu" else "self_device_time_total"
    rows = sorted(prof.key_averages(), key=lambda e: getattr(e, key, 0.0), reverse=True)[:count]
    return {e.key: round(getattr(e, key, 0.0) / 1e3, 3) for e in rows}


#: (models, records) settings measured when --records is not given: the audit's own workload
#: (1,000 released models scored on a 20-record forget set) and small-MLP training at growing
#: data sizes, where per-call overhead gives way to arithmetic.
GRID = ((1000, 20), (64, 20), (64, 200), (64, 2000))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=64, help="N, the number of models")
    parser.add_argument("--records", type=int, default=None,
                        help="records per model (default: the grid %s)" % (GRID,))
    parser.add_argument("--features", type=int, default=20)
    parser.add_argument("--hidden", type=int, default=32)
    parser.add_argument("--activation", default="softplus", help="softplus (default), tanh, gelu or silu")
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--eta", type=float, default=0.5)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    parser.add_argument("--device", default="cpu", help="cpu or cuda")
    parser.add_argument("--chunk", type=int, default=None,
                        help="models per vmapped call (default: audit.trials' device-aware choice)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.records is None:
        rows = []
        for models, records in GRID:
            args.models, args.records = models, records
            steps = args.steps
            if models > 100:
                args.steps = 5  # keep the one-model-at-a-time reference short
            rows.append(measure(args))
            args.steps = steps
        summary = [{k: r[k] for k in ("n_models", "n_records", "steps", "train_speedup", "eval_speedup",
                                      "within_target")} for r in rows]
        print(json.dumps({"benchmark": "vmap_batched_vs_loop_grid", "target_speedup": TARGET,
                          "summary": summary, "runs": rows}, indent=2))
    else:
        print(json.dumps(measure(args), indent=2))


def measure(args) -> dict:
    """One (models, records) setting: loop vs vmap for training and evaluation."""
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        print(json.dumps({"error": "--device cuda requested but CUDA is not available",
                          "torch": torch.__version__}))
        sys.exit(2)
    assert args.records is not None
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)

    load_before = os.getloadavg()[0]
    gen = torch.Generator().manual_seed(args.seed)
    X = torch.randn(args.records, args.features, generator=gen)
    w = torch.randn(args.features, generator=gen)
    y = ((X @ w + 0.5 * torch.randn(args.records, generator=gen)) > 0).long()
    obj = Objective(build_model("mlp", args.features, 2, hidden=(args.hidden,), activation=args.activation))
    thetas0 = torch.stack([default_init(obj, torch.Generator().manual_seed(args.seed + 1 + i), torch.float32)
                           for i in range(args.models)])
    X, y, thetas0 = X.to(device), y.to(device), thetas0.to(device)

    def train_loop():
        return torch.stack([gradient_descent(obj, t, X, y, eta=args.eta, steps=args.steps)[0] for t in thetas0])

    def train_batched():
        return batched_gradient_descent(obj, thetas0, X, y, eta=args.eta, steps=args.steps, chunk=args.chunk)[0]

    def eval_loop():
        logits = torch.stack([obj.logits(t, X) for t in thetas0])
        losses = torch.stack([obj.per_sample_loss(t, X, y) for t in thetas0])
        return logits, losses

    def eval_batched():
        return (batched_logits(obj, thetas0, X, chunk=args.chunk),
                batched_per_sample_loss(obj, thetas0, X, y, chunk=args.chunk))

    with torch.no_grad():
        eval_loop_s, eval_loop_all, (l_loop, f_loop) = _timed(eval_loop, args.repeats, sync)
        eval_batched_s, eval_batched_all, (l_b, f_b) = _timed(eval_batched, args.repeats, sync)
    train_loop_s, train_loop_all, th_loop = _timed(train_loop, args.repeats, sync)
    train_batched_s, train_batched_all, th_b = _timed(train_batched, args.repeats, sync)
    profile = _profile(obj, args, thetas0, X, y, device, sync, train_loop_s, train_batched_s, eval_loop_s)

    train_speedup = train_loop_s / train_batched_s
    eval_speedup = eval_loop_s / eval_batched_s
    result = {
        "benchmark": "vmap_batched_vs_loop",
        "n_models": args.models,
        "d": obj.dim,
        "n_records": args.records,
        "architecture": f"mlp {args.features}-{args.hidden}-1 softplus, float32",
        "steps": args.steps,
        "chunk": chunk_size(obj, X, args.models, args.chunk),
        "repeats": args.repeats,
        "device": str(device) + (f" ({torch.cuda.get_device_name(device)})" if device.type == "cuda" else ""),
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "cpu_count": os.cpu_count(),
        "load_average_1min": [load_before, os.getloadavg()[0]],
        "train_loop_s": train_loop_s,
        "train_batched_s": train_batched_s,
        "train_speedup": train_speedup,
        "eval_loop_s": eval_loop_s,
        "eval_batched_s": eval_batched_s,
        "eval_speedup": eval_speedup,
        "train_max_abs_diff": float((th_loop - th_b).abs().max()),
        "eval_max_abs_diff": float(max((l_loop - l_b).abs().max(), (f_loop - f_b).abs().max())),
        "all_times_s": {"train_loop": train_loop_all, "train_batched": train_batched_all,
                        "eval_loop": eval_loop_all, "eval_batched": eval_batched_all},
        "profile": profile,
        "target_speedup": TARGET,
        "within_target": train_speedup >= TARGET and eval_speedup >= TARGET,
    }
    return result


if __name__ == "__main__":
    main()
