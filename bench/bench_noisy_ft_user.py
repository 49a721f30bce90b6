"""Benchmark: noisy-ft on a ReLU + BatchNorm CNN that a user's own code trains with Adam: its cost.

MNIST (``--mnist``), ``--n`` training images (a CPU-budget subset; the machine is shared), 10 %
forgotten, δ = 1e-5. A is the user's ``train(model, dataset, generator)``: Adam (lr 1e-3), batch
64, ``--epochs`` epochs, BatchNorm in train mode, ReLU and max pooling (a model no smoothness
constant covers). noisy-ft runs on it through :meth:`NoisyFineTune.with_training` with the default
``restart`` (init-scale); its noise-free phase is the user's own training started from the
restarted noisy model (``post_train``) on a random ``post_fraction`` of D \\ Z (``--fractions``).
For each seed (``--seeds``: the initial point, A's batches and the noise), ε (``--epsilons``),
variant and fraction, the JSON has the released test accuracy against retraining's (the user's
training on all of D \\ Z from the same initial point) and the CPU time ratio (``time.process_time``,
same process), and a control: retraining on a random share of D \\ Z of the same size (the user's
training from θ0 at the release's compute), so the release can be read against a retraining that
costs what it costs.

The restart comparison at ε = 1 (``bench/results/noisy_ft_user.json``: each ``restart`` and a plain
SGD noise-free phase) was produced by this script as of commit a6b0c0b.

Usage: python bench/bench_noisy_ft_user.py [--n 1000] [--epochs 3] [--out bench/results/noisy_ft_user_cost.json]
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import sys
import time
from pathlib import Path

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from audit.datasets import load_dataset, select_forget  # noqa: E402
from unlearners.noisyft import NoisyFineTune  # noqa: E402
from unlearners.objective import Objective  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_noisy_ft import DEFAULT_MNIST  # noqa: E402

VARIANTS = {
    "model-clip": {"variant": "model-clip", "C2": 0.01, "noisy_steps": 1},
    "gradient-clip": {"variant": "gradient-clip", "gamma": 0.01, "lam": 50.0, "C0": 0.01, "C1": 1.0, "noisy_steps": 5},
}


def net() -> nn.Module:
    """A small ReLU + BatchNorm + max-pool CNN (the kind of model no certified method here covered)."""
    return nn.Sequential(nn.Unflatten(1, (1, 28, 28)), nn.Conv2d(1, 8, 5), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(8, 16, 5), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                         nn.Linear(256, 10))


def make_train(epochs: int):
    def train(model: nn.Module, dataset, generator: torch.Generator) -> nn.Module:
        """The user's training: Adam, shuffled mini-batches of 64, ``epochs`` epochs."""
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        loader = torch.utils.data.DataLoader(dataset, batch_size=64, shuffle=True, generator=generator)
        model.train()
        for _ in range(epochs):
            for X, y in loader:
                opt.zero_grad()
                nn.functional.cross_entropy(model(X), y).backward()
                opt.step()
        return model
    return train


def _load(args):
    data = load_dataset(f"idx:{args.mnist}", seed=0, max_train=args.n,
                        feature_map={"normalize": [0.1307, 0.3081], "row_norm": "none"})
    X = torch.as_tensor(data.X_train, dtype=torch.float32).reshape(args.n, -1)
    Xt = torch.as_tensor(data.X_test, dtype=torch.float32).reshape(len(data.y_test), -1)
    forget = torch.as_tensor(select_forget(data, seed=0, fraction=0.1))
    return X, torch.as_tensor(data.y_train), Xt, torch.as_tensor(data.y_test), forget


def _cpu(fn, *args):
    """(fn(*args), the CPU seconds it took in this process)."""
    t = time.process_time()
    out = fn(*args)
    return out, time.process_time() - t


def cost_runs(args, X, y, Xt, yt, forget) -> list[dict]:
    """Per seed: A(D) by the user's training, retraining on D \\ Z (all of it, and the same random
    share the release's noise-free phase reads: the control), then noisy-ft at each (ε, variant,
    post_fraction) with the default restart and the user's training as the noise-free phase."""
    rows = []
    train = make_train(args.epochs)
    for seed in args.seeds:
        torch.manual_seed(seed)
        objective = Objective(net(), with_buffers=True)
        theta0 = torch.cat([p.detach().reshape(-1) for p in objective.model.parameters()]
                           + [objective.model.get_buffer(n).reshape(-1) for n in objective.buffer_names])
        base = NoisyFineTune.with_training(objective, train=train, train_seed=seed, batch_size=64, post_train=True)
        base.fit(X, y, theta0)
        retrained, retrain_cpu = _cpu(base.start_reference, forget)  # the user's training on D \\ Z
        retrain_acc = float(objective.accuracy(retrained, Xt, yt))
        X_r, y_r = base.retained(base.forget_indices(forget))
        control = {}
        for fraction in args.fractions:
            model = make_net_at(objective, theta0)
            gen = torch.Generator().manual_seed(10_000 + seed)
            read = torch.randperm(len(y_r), generator=gen)[: math.ceil(fraction * len(y_r))]
            trained, cpu = _cpu(train, model, torch.utils.data.TensorDataset(X_r[read], y_r[read]), gen)
            control[fraction] = (float(objective.accuracy(base.trainer_.trained_theta(trained), Xt, yt)), cpu)
        for eps, (name, opts), fraction in itertools.product(args.epsilons, VARIANTS.items(), args.fractions):
            method = base.replica(**opts, post_fraction=fraction, target_epsilon=eps)
            method.fit(X, y, theta0)  # the same seeded training: the same A(D)
            released, cpu = _cpu(method.unlearn, forget)
            cert = method.certify(forget, eps, 1e-5)
            acc = float(objective.accuracy(released, Xt, yt))
            rows.append({"seed": seed, "epsilon": eps, "variant": name, "options": opts, "post_fraction": fraction,
                         "sigma": method.sigma_, "certified_epsilon": cert.epsilon, "valid": cert.valid,
                         "test_accuracy": acc, "retrain_test_accuracy": retrain_acc,
                         "ratio_to_retrain": acc / retrain_acc, "cpu_s": cpu, "retrain_cpu_s": retrain_cpu,
                         "cpu_ratio_to_retrain": cpu / retrain_cpu,
                         "same_share_retrain_accuracy": control[fraction][0],
                         "same_share_retrain_cpu_s": control[fraction][1],
                         "ratio_to_same_share_retrain": acc / control[fraction][0]})
            print(json.dumps(rows[-1]), flush=True)
    return rows


def make_net_at(objective: Objective, theta: torch.Tensor) -> nn.Module:
    """A fresh copy of the user's module holding theta (parameters and buffers)."""
    from unlearners.buffers import holding

    return holding(objective, theta)


def summary(rows: list[dict]) -> list[dict]:
    """Per (ε, variant, post_fraction): the mean and range over seeds of the accuracy and CPU ratios."""
    out = []
    keys = sorted({(r["epsilon"], r["variant"], r["post_fraction"]) for r in rows})
    for eps, variant, fraction in keys:
        group = [r for r in rows if (r["epsilon"], r["variant"], r["post_fraction"]) == (eps, variant, fraction)]
        entry = {"epsilon": eps, "variant": variant, "post_fraction": fraction, "seeds": len(group)}
        for key in ("test_accuracy", "ratio_to_retrain", "cpu_ratio_to_retrain", "ratio_to_same_share_retrain"):
            values = [r[key] for r in group]
            entry[key] = {"mean": sum(values) / len(values), "min": min(values), "max": max(values)}
        out.append(entry)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mnist", type=Path, default=DEFAULT_MNIST)
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--epsilons", type=float, nargs="+", default=[0.5, 1.0, 2.0])
    ap.add_argument("--fractions", type=float, nargs="+", default=[1.0, 0.75])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    torch.set_num_threads(1)
    load_before = os.getloadavg()[0]
    X, y, Xt, yt, forget = _load(args)
    rows = cost_runs(args, X, y, Xt, yt, forget)
    out = {"dataset": "MNIST", "n_train": args.n, "n_test": int(len(yt)), "forgotten": int(len(forget)),
           "model": "ReLU + BatchNorm + max-pool CNN (conv 8, conv 16, linear), float32",
           "A": f"the user's train: Adam lr 1e-3, batch 64, {args.epochs} epochs", "delta": 1e-5,
           "restart": "init-scale (the default)",
           "noise_free_phase": "the user's train on a random post_fraction of D \\ Z (post_train)",
           "control": "same_share_retrain: the user's train from theta0 on a random share of D \\ Z of the same "
                      "size (retraining at the release's compute)",
           "summary": summary(rows), "runs": rows, "load_average_before": load_before,
           "load_average_after": os.getloadavg()[0],
           "machine": "shared 2-core machine loaded by other sessions: CPU times are process_time, same process"}
    text = json.dumps(out, indent=2)
    for entry in out["summary"]:
        print(entry["epsilon"], entry["variant"], entry["post_fraction"], *(f"{k} {entry[k]['mean']:.3f} "
              f"[{entry[k]['min']:.3f}, {entry[k]['max']:.3f}]" for k in ("ratio_to_retrain", "cpu_ratio_to_retrain",
                                                                         "ratio_to_same_share_retrain")))
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
