"""Benchmark: does plain noisy fine-tuning collapse accuracy on the largest CNN the CPU budget fits?

Dolgova & Stich (arXiv:2601.05134) report ResNet-18 on CIFAR-10 falling from 98 % to under 20 %
after plain noisy fine-tuning at a certified (ε, δ). Here: MNIST (``--n`` training images, 10 %
forgotten), a ReLU + BatchNorm + max-pool CNN of about 320,000 parameters (conv 32, conv 64,
linear 1024-256-10; 50x the user CNN of ``bench_noisy_ft_user.py``) trained by the user's Adam
(lr 1e-3, batch 64, ``--epochs`` epochs), ε = 1, δ = 1e-5, both variants with the radii of that
bench. For each seed: A(D) and retraining (the user's training on D \\ Z), then noisy-ft with the
user's training as the noise-free phase (``post_train``, ``post_fraction`` 1) from each start
(``restart``: ``none`` is the paper's procedure, ``init-scale`` the default), and the accuracy of
the noisy phase's own output (no noise-free phase, ``restart`` none: the point the noise leaves).
CPU seconds are ``time.process_time`` in this process; the load average is recorded.

With ``--sgd-eta`` the noise-free phase is instead plain SGD (batch 64, train mode, then the
BatchNorm statistics recomputed on D \\ Z) for as many steps as A took, from each ``restart``: close
to the papers' noise-free phase (their code uses SGD with momentum 0.9), a step that does not adapt
to the noisy point's scale as Adam does. Its run with ``--sgd-eta 0.05 --seeds 0`` is
``bench/results/noisy_ft_collapse_sgd.json``.

Usage: python bench/bench_noisy_ft_collapse.py [--n 2000] [--epochs 3] [--sgd-eta ETA] [--out FILE.json]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_noisy_ft import DEFAULT_MNIST  # noqa: E402
from bench_noisy_ft_user import VARIANTS, _cpu, _load, make_train  # noqa: E402

from unlearners.noisyft import NoisyFineTune  # noqa: E402
from unlearners.objective import Objective  # noqa: E402


def wide_net() -> nn.Module:
    """The user CNN's shape at 4x the channels and a hidden layer of 256 (about 320k parameters)."""
    return nn.Sequential(nn.Unflatten(1, (1, 28, 28)), nn.Conv2d(1, 32, 5), nn.BatchNorm2d(32), nn.ReLU(),
                         nn.MaxPool2d(2), nn.Conv2d(32, 64, 5), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(1024, 256), nn.BatchNorm1d(256), nn.ReLU(), nn.Linear(256, 10))


def runs_for_seed(args, seed: int, X, y, Xt, yt, forget) -> tuple[dict, list[dict]]:
    torch.manual_seed(seed)
    objective = Objective(wide_net(), with_buffers=True)
    theta0 = torch.cat([p.detach().reshape(-1) for p in objective.model.parameters()]
                       + [objective.model.get_buffer(n).reshape(-1) for n in objective.buffer_names])
    base = NoisyFineTune.with_training(objective, train=make_train(args.epochs), train_seed=seed, batch_size=64,
                                       post_train=True, post_fraction=1.0, target_epsilon=1.0)
    _, fit_cpu = _cpu(base.fit, X, y, theta0)
    retrained, retrain_cpu = _cpu(base.start_reference, forget)
    head = {"seed": seed, "parameters": sum(p.numel() for p in objective.model.parameters()),
            "original_test_accuracy": float(objective.accuracy(base.theta_, Xt, yt)),
            "retrain_test_accuracy": float(objective.accuracy(retrained, Xt, yt)), "fit_cpu_s": fit_cpu,
            "retrain_cpu_s": retrain_cpu}
    print(json.dumps(head), flush=True)
    rows = []
    if args.sgd_eta is None:
        user, noisy_output = {"post_train": True}, {"post_train": False, "post_steps": 0}
        phases = [("none", user, "the user's training on D \\ Z"), ("init-scale", user, "the user's training on D \\ Z"),
                  ("none", noisy_output, "none (the noisy output)")]
    else:  # an SGD noise-free phase, as in the papers' code (without its momentum)
        steps = args.epochs * math.ceil((args.n - len(forget)) / 64)
        sgd = {"post_train": False, "post_steps": steps, "post_eta": args.sgd_eta}
        phases = [(r, sgd, f"{steps} SGD steps at {args.sgd_eta} (batch 64)") for r in ("none", "init-scale")]
    for (name, opts), (restart, phase, words) in ((v, p) for v in VARIANTS.items() for p in phases):
        method = base.replica(**opts, restart=restart, **phase)
        method.fit(X, y, theta0)  # the same seeded training: the same A(D)
        released, cpu = _cpu(method.unlearn, forget)
        cert = method.certify(forget, 1.0, 1e-5)
        acc = float(objective.accuracy(released, Xt, yt))
        rows.append({"seed": seed, "variant": name, "options": opts, "restart": restart,
                     "noise_free_phase": words,
                     "sigma": method.sigma_, "certified_epsilon": cert.epsilon, "valid": cert.valid,
                     "test_accuracy": acc, "ratio_to_retrain": acc / head["retrain_test_accuracy"], "cpu_s": cpu,
                     "cpu_ratio_to_retrain": cpu / retrain_cpu})
        print(json.dumps(rows[-1]), flush=True)
    return head, rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mnist", type=Path, default=DEFAULT_MNIST)
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    ap.add_argument("--sgd-eta", type=float, default=None,
                    help="instead: a plain SGD noise-free phase at this step size, from each restart")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    torch.set_num_threads(1)
    load_before = os.getloadavg()[0]
    X, y, Xt, yt, forget = _load(args)
    heads, rows = [], []
    for seed in args.seeds:
        head, seed_rows = runs_for_seed(args, seed, X, y, Xt, yt, forget)
        heads.append(head)
        rows += seed_rows
    out = {"dataset": "MNIST", "n_train": args.n, "n_test": int(len(yt)), "forgotten": int(len(forget)),
           "model": "ReLU + BatchNorm + max-pool CNN (conv 32, conv 64, linear 1024-256-10), float32",
           "A": f"the user's train: Adam lr 1e-3, batch 64, {args.epochs} epochs", "epsilon": 1.0, "delta": 1e-5,
           "seeds": heads, "runs": rows, "load_average_before": load_before, "load_average_after": os.getloadavg()[0],
           "machine": "shared 2-core machine loaded by other sessions: CPU times are process_time, same process"}
    if args.out:
        args.out.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
