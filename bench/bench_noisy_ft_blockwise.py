"""Benchmark: block-wise against plain noisy fine-tuning on the largest CNN the CPU budget fits, at
equal (ε, δ) (issue 27 item 3; Dolgova & Stich, arXiv:2601.05134).

The setting of ``bench_noisy_ft_collapse.py``: MNIST (``--n`` training images, 10 % forgotten), its
318k-parameter ReLU + BatchNorm CNN trained by the user's Adam, ε = 1, δ = 1e-5, gradient clipping
at that bench's radii (γ = 0.01, λ = 50, C0 = 0.01, C1 = 1). Per seed, in one process: A(D) and
retraining, then

* plain noisy-ft, T = 5 noisy steps (σ solved for ε = 1);
* ``schedule = blockwise`` with k blocks of T = 5 steps each (σ_b = √k·σ, the same ε);
* ``schedule = blockwise`` with k blocks of the authors' T (``authors_block_parameters``: 1 step
  at these radii), σ_b solved for the same ε;

each read straight after the noisy phase (no noise-free phase, restart none) and after the
noise-free phase (the user's training on D \\ Z, restart none and init-scale).

The authors' code does not project the start onto the C0-ball (``training_unlearning.py:137`` is
commented out; ``training_block_unlearning.py`` has no projection), so their runs start from the
trained model itself. ``--unprojected`` adds the two noisy outputs of that path (plain and
block-wise, same σ): **not certified** (the accounting needs ‖x_0‖ ≤ C0), a diagnostic of where
their accuracy comes from. CPU seconds are ``time.process_time``; the load average is recorded.

``--epsilon`` sets the target (default 1) and ``--noisy-only`` keeps only the noisy outputs: at a
larger ε the noise no longer erases the start, which is where the schedules could differ.
``--radii authors`` takes the radii of the authors' plotting code instead. The runs behind the
docs: ``--unprojected`` (``bench/results/noisy_ft_blockwise.json``), ``--seeds 0 --epsilon 16
--noisy-only --unprojected`` (``bench/results/noisy_ft_blockwise_eps16.json``) and ``--seeds 0 --radii
authors --noisy-only --unprojected`` (``bench/results/noisy_ft_blockwise_authors_radii.json``).

Usage: python bench/bench_noisy_ft_blockwise.py [--n 2000] [--blocks 4] [--seeds 0 1] [--epsilon 1] [--noisy-only]
       [--unprojected] [--out FILE.json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_noisy_ft import DEFAULT_MNIST  # noqa: E402
from bench_noisy_ft_collapse import wide_net  # noqa: E402
from bench_noisy_ft_user import VARIANTS, _cpu, _load, make_train  # noqa: E402

from certify.bounds.blockwise import authors_block_parameters  # noqa: E402
from unlearners.noisyft import CallerTrainedNoisyFineTune, NoisyFineTune  # noqa: E402
from unlearners.objective import Objective  # noqa: E402

#: ``bench``: the radii of bench_noisy_ft_user.py (γ 0.01, λ 50, C0 0.01, C1 1, T = 5); ``authors``: those of the
#: authors' visualize_sigma_by_xk (visualize_plots.py:237: η 1e-4, λ 10, C0 0.01, C1 1) at their T (105)
RADII_SETS = {
    "bench": VARIANTS["gradient-clip"],
    "authors": {"variant": "gradient-clip", "gamma": 1e-4, "lam": 10.0, "C0": 0.01, "C1": 1.0, "noisy_steps": 105},
}
RADII = dict(RADII_SETS["bench"])


class Unprojected(CallerTrainedNoisyFineTune):
    """The authors' code path: the start is not projected onto the C0-ball. NOT certified."""

    def _initial(self, start, gen):
        return start.clone()


def schedules(blocks: int, epsilon: float) -> list[tuple[str, dict]]:
    authors_T = authors_block_parameters(epsilon, 1e-5, blocks, RADII["C0"], RADII["C1"], RADII["gamma"], RADII["lam"])
    return [
        (f"plain, T = {RADII['noisy_steps']}", {}),
        (f"blockwise k = {blocks}, T = {RADII['noisy_steps']} per block", {"schedule": "blockwise", "blocks": blocks}),
        (
            f"blockwise k = {blocks}, the authors' T = {authors_T.steps} per block",
            {"schedule": "blockwise", "blocks": blocks, "noisy_steps": authors_T.steps},
        ),
    ]


def runs_for_seed(args, seed: int, X, y, Xt, yt, forget) -> tuple[dict, list[dict]]:
    torch.manual_seed(seed)
    objective = Objective(wide_net(), with_buffers=True)
    theta0 = torch.cat(
        [p.detach().reshape(-1) for p in objective.model.parameters()]
        + [objective.model.get_buffer(n).reshape(-1) for n in objective.buffer_names]
    )
    base = NoisyFineTune.with_training(
        objective, train=make_train(args.epochs), train_seed=seed, batch_size=64, post_train=True,
        post_fraction=1.0, target_epsilon=args.epsilon, **RADII,
    )
    _, fit_cpu = _cpu(base.fit, X, y, theta0)
    retrained, retrain_cpu = _cpu(base.start_reference, forget)
    retrain_acc = float(objective.accuracy(retrained, Xt, yt))
    head = {"seed": seed, "parameters": sum(p.numel() for p in objective.model.parameters()),
            "original_test_accuracy": float(objective.accuracy(base.theta_, Xt, yt)),
            "retrain_test_accuracy": retrain_acc, "fit_cpu_s": fit_cpu, "retrain_cpu_s": retrain_cpu,
            "start_norm": float(base.theta_[: sum(p.numel() for p in objective.model.parameters())].norm())}
    print(json.dumps(head), flush=True)
    phases = [("none", {"post_train": False, "post_steps": 0}, "none (the noisy output)"),
              ("none", {"post_train": True}, "the user's training on D \\ Z"),
              ("init-scale", {"post_train": True}, "the user's training on D \\ Z")][: 1 if args.noisy_only else 3]
    rows = []
    for (name, opts), (restart, phase, words) in ((s, p) for s in schedules(args.blocks, args.epsilon) for p in phases):
        rows.append(_row(base, {**opts, **phase, "restart": restart}, X, y, theta0, forget, Xt, yt, retrain_acc))
        rows[-1].update(seed=seed, schedule=name, noise_free_phase=words, certified=True)
        print(json.dumps(rows[-1]), flush=True)
    if args.unprojected:
        for name, opts in schedules(args.blocks, args.epsilon)[:2]:
            twin = Unprojected(objective, train=base.trainer_.train_fn, train_seed=seed, **{
                **base.options, **opts, "post_train": False, "post_steps": 0, "restart": "none"})
            rows.append(_row(twin, {}, X, y, theta0, forget, Xt, yt, retrain_acc))
            rows[-1].update(seed=seed, schedule=name + ", start NOT projected (the authors' code path)",
                            noise_free_phase="none (the noisy output)", certified=False)
            print(json.dumps(rows[-1]), flush=True)
    return head, rows


def _row(base, opts, X, y, theta0, forget, Xt, yt, retrain_acc) -> dict:
    method = base.replica(**opts) if opts else base
    method.fit(X, y, theta0)  # the same seeded training: the same A(D)
    released, cpu = _cpu(method.unlearn, forget)
    cert = method.certify(forget, method.target_epsilon, 1e-5)
    acc = float(method.objective.accuracy(released, Xt, yt))
    return {"options": dict(opts), "sigma": method.sigma_, "certified_epsilon": cert.epsilon,
            "test_accuracy": acc, "ratio_to_retrain": acc / retrain_acc, "cpu_s": cpu}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mnist", type=Path, default=DEFAULT_MNIST)
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--blocks", type=int, default=4)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--radii", choices=sorted(RADII_SETS), default="bench")
    ap.add_argument("--noisy-only", action="store_true", help="only the noisy phase's outputs")
    ap.add_argument("--unprojected", action="store_true", help="add the authors' unprojected start (not certified)")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    torch.set_num_threads(1)
    RADII.update(RADII_SETS[args.radii])
    load_before = os.getloadavg()[0]
    X, y, Xt, yt, forget = _load(args)
    heads, rows = [], []
    for seed in args.seeds:
        head, seed_rows = runs_for_seed(args, seed, X, y, Xt, yt, forget)
        heads.append(head)
        rows += seed_rows
    out = {"dataset": "MNIST", "n_train": args.n, "n_test": int(len(yt)), "forgotten": int(len(forget)),
           "model": "ReLU + BatchNorm + max-pool CNN (conv 32, conv 64, linear 1024-256-10), float32",
           "A": f"the user's train: Adam lr 1e-3, batch 64, {args.epochs} epochs", "epsilon": args.epsilon, "delta": 1e-5,
           "radii": RADII, "blocks": args.blocks, "seeds": heads, "runs": rows,
           "load_average_before": load_before, "load_average_after": os.getloadavg()[0],
           "machine": "shared 2-core machine loaded by other sessions: CPU times are process_time, same process"}
    if args.out:
        args.out.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
