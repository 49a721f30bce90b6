"""Benchmark: noisy-ft on a ReLU + BatchNorm CNN that a user's own code trains with Adam.

MNIST (``--mnist``), ``--n`` training images (a CPU-budget subset; the machine is shared), 10 %
forgotten, δ = 1e-5. A is the user's ``train(model, dataset, generator)``: Adam (lr 1e-3), batch
64, ``--epochs`` epochs, BatchNorm in train mode, ReLU and max pooling (a model no smoothness
constant covers). noisy-ft runs on it through :meth:`NoisyFineTune.with_training`; its noise-free
phase is either the user's own training on D \\ Z started from the noisy model (``post_train``) or
plain SGD at ``--post-eta`` in train mode on mini-batches of 64 of the retain set, for as many steps
as the user's training took, then the BatchNorm statistics recomputed on D \\ Z. Each from each start
of the noise-free phase (``restart``): ``init-scale`` (the default), ``normalisation`` and ``none``
(the noisy model as it is: the paper's procedure, which leaves the BatchNorm scales near 0).
Retraining is the user's training on D \\ Z from the same initial point, in the same run. The
JSON has the released test accuracy against retraining's and the CPU time ratio
(``time.process_time``, same process).

Usage: python bench/bench_noisy_ft_user.py [--n 1000] [--epochs 3] [--out bench/results/noisy_ft_user.json]
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import sys
import time
from pathlib import Path

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from audit.datasets import load_dataset, select_forget  # noqa: E402
from unlearners.noisyft import RESTARTS, NoisyFineTune  # noqa: E402
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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mnist", type=Path, default=DEFAULT_MNIST)
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--post-eta", type=float, default=0.05)
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    torch.set_num_threads(1)
    data = load_dataset(f"idx:{args.mnist}", seed=args.seed, max_train=args.n,
                        feature_map={"normalize": [0.1307, 0.3081], "row_norm": "none"})
    X = torch.as_tensor(data.X_train, dtype=torch.float32).reshape(args.n, -1)
    y = torch.as_tensor(data.y_train)
    Xt = torch.as_tensor(data.X_test, dtype=torch.float32).reshape(len(data.y_test), -1)
    yt = torch.as_tensor(data.y_test)
    torch.manual_seed(args.seed)
    objective = Objective(net(), with_buffers=True)
    theta0 = torch.cat([p.detach().reshape(-1) for p in objective.model.parameters()]
                       + [objective.model.get_buffer(n).reshape(-1) for n in objective.buffer_names])
    forget = torch.as_tensor(select_forget(data, seed=args.seed, fraction=0.1))
    steps = args.epochs * math.ceil((args.n - len(forget)) / 64)
    train = make_train(args.epochs)
    rows = []
    base = NoisyFineTune.with_training(objective, train=train, batch_size=64, post_steps=steps, post_eta=args.post_eta,
                                       target_epsilon=args.epsilon)
    t = time.process_time()
    base.fit(X, y, theta0)
    fit_cpu = time.process_time() - t
    t = time.process_time()
    retrained = base.start_reference(forget)  # the user's training on D \ Z from theta0
    retrain_cpu = time.process_time() - t
    retrain_acc = float(objective.accuracy(retrained, Xt, yt))
    for (name, opts), post_train, restart in itertools.product(VARIANTS.items(), (True, False), RESTARTS):
        method = base.replica(**opts, post_train=post_train, restart=restart)
        method.fit(X, y, theta0)  # the same seeded training: the same A(D)
        t = time.process_time()
        released = method.unlearn(forget)
        cpu = time.process_time() - t
        cert = method.certify(forget, args.epsilon, 1e-5)
        acc = float(objective.accuracy(released, Xt, yt))
        rows.append({"variant": name, "options": opts, "restart": restart, "noise_free_phase": "the user's train on "
                     "D \\ Z" if post_train else f"{steps} SGD steps at {args.post_eta}", "sigma": method.sigma_,
                     "certified_epsilon": cert.epsilon, "valid": cert.valid, "test_accuracy": acc,
                     "ratio_to_retrain": acc / retrain_acc, "cpu_s": cpu, "cpu_ratio_to_retrain": cpu / retrain_cpu})
        print(json.dumps(rows[-1]), flush=True)
    out = {"dataset": "MNIST", "n_train": args.n, "n_test": int(len(yt)), "forgotten": int(len(forget)),
           "model": "ReLU + BatchNorm + max-pool CNN (conv 8, conv 16, linear), float32", "parameters": objective.dim,
           "A": f"the user's train: Adam lr 1e-3, batch 64, {args.epochs} epochs", "epsilon": args.epsilon,
           "delta": 1e-5, "post_phase": "the user's train on D \\ Z from the restarted noisy model (the statistics "
                                        "it leaves), or SGD (batch 64, train mode) and the BatchNorm statistics "
                                        "recomputed on D \\ Z",
           "original_test_accuracy": float(objective.accuracy(base.theta_, Xt, yt)), "retrain_test_accuracy": retrain_acc,
           "retrain_cpu_s": retrain_cpu, "fit_cpu_s": fit_cpu, "runs": rows,
           "machine": "shared 2-core machine loaded by other sessions: CPU times are process_time, same process"}
    text = json.dumps(out, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
