"""Benchmark: why HF's recollected statistics blow up at the paper's step size on some image data.

MNIST logistic regression as in docs/benchmarks.md's HF command, scaled to the issue's setting: 300
training images, 30 % deleted, full batch, 50 epochs, η = 0.05, q = 0.995, C = 10, L2 1e-6,
float64. The pixels are normalised four ways, from MNIST's own statistics to brighter inputs (a
larger normalised mean and spread, as an image set brighter than MNIST gets under MNIST's
normalisation). For each: η_t·λ_max(H̄_t) by power iteration every 5 steps along the training
trajectory, the largest recollected statistic against the bound Σ_t η_t C/|B_t| that
non-expansive steps obey, ‖θ_U − θ_R‖, the noiseless test accuracy of the unlearned and retrained
models, and whether HF now refuses the run (before its fix it released the blown-up model).

Prints one JSON object. Usage: python bench/bench_hf_stability.py [--mnist DIR] [--threads 2]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from audit.datasets import load_dataset, select_forget  # noqa: E402
from certify.errors import InvalidInput  # noqa: E402
from unlearners.hessian_free import STABILITY_FACTOR, HessianFree  # noqa: E402
from unlearners.linalg import power_iteration  # noqa: E402
from unlearners.models import logistic_regression  # noqa: E402
from unlearners.objective import Objective, default_init  # noqa: E402

DEFAULT_MNIST = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "mnist"
NORMALISATIONS = ([0.1307, 0.3081], [0.1307, 0.2], [0.1307, 0.1], [-0.5, 0.2])


class Unchecked(HessianFree):
    """HF as it was before the stability check: the statistics are measured, never refused."""

    def _check_stable(self, A, X, y) -> None:
        self._measure_stability(A)


def one(folder: Path, normalize: list[float], eta: float, n: int) -> dict:
    data = load_dataset(f"idx:{folder}", seed=1, max_train=n, feature_map={"normalize": normalize, "row_norm": "none"})
    X = torch.as_tensor(data.X_train, dtype=torch.float64).reshape(n, -1)
    y = torch.as_tensor(data.y_train)
    Xt = torch.as_tensor(data.X_test, dtype=torch.float64).reshape(len(data.y_test), -1)
    yt = torch.as_tensor(data.y_test)
    obj = Objective(logistic_regression(X.shape[1], 10).double())
    theta0 = default_init(obj, torch.Generator().manual_seed(3), torch.float64)
    forget = torch.as_tensor(select_forget(data, fraction=0.3, seed=2))
    method = HessianFree(obj, eta=eta, deletable=forget.tolist())
    refused = None
    try:
        method.fit(X, y, theta0)
    except InvalidInput as exc:
        refused = str(exc)
    raw = Unchecked(obj, eta=eta, deletable=forget.tolist())  # what was released before the refusal
    raw.fit(X, y, theta0)
    w, gen, sharpness = theta0.clone(), torch.Generator().manual_seed(0), []
    for t, batch in enumerate(raw.batches_):
        if t % 5 == 0 or t == len(raw.batches_) - 1:
            hvp = lambda v: raw._hvps(w, X[batch], y[batch], v[None])[0]  # noqa: E731
            top, _ = power_iteration(hvp, obj.dim, iters=40, generator=gen, dtype=w.dtype, device=w.device)
            sharpness.append([t, raw.etas_[t] * top])
        g, _ = raw._clipped_grads(w, X[batch], y[batch])
        w = w - (raw.etas_[t] / batch.numel()) * g.sum(0)
    unlearned, retrained = raw.unlearn(forget), raw.retrain(forget)
    return {
        "normalize": normalize,
        "eta_lambda_max_every_5_steps": sharpness,
        "max_eta_lambda_max": max(v for _, v in sharpness),
        "probed_steps_above_2": [t for t, v in sharpness if v > 2],
        "largest_statistic": raw.largest_statistic_,
        "non_expansive_bound": raw.stability_bound_,
        "distance_unlearned_retrained": float(torch.linalg.vector_norm(unlearned - retrained)),
        "distance_noop_retrained": float(torch.linalg.vector_norm(raw.theta_ - retrained)),
        "test_accuracy_unlearned": float(obj.accuracy(unlearned, Xt, yt)),
        "test_accuracy_retrained": float(obj.accuracy(retrained, Xt, yt)),
        "refused_now": refused is not None,
        "refusal": refused,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mnist", type=Path, default=DEFAULT_MNIST)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--eta", type=float, default=0.05)
    parser.add_argument("--n", type=int, default=300)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    runs = [one(args.mnist, norm, args.eta, args.n) for norm in NORMALISATIONS]
    print(json.dumps({"benchmark": "hf_stability", "setting": {
        "data": "MNIST (../shared/datasets/mnist)", "n_train": args.n, "deleted": "30 %", "eta": args.eta,
        "epochs": 50, "batch": "full", "decay": 0.995, "clip": 10, "l2": 1e-6, "dtype": "float64",
        "refusal_factor": STABILITY_FACTOR}, "runs": runs}, indent=2))


if __name__ == "__main__":
    main()
