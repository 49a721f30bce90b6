"""Evaluation once: accuracy and loss of many parameter vectors from one forward pass each.

The utility stage and the frontier score released models θ + ξ on the retain, forget and test
splits. Each (model, split) is one chunked forward pass that gives both the accuracy and the
loss (the predicted labels and the per-record losses come from the same outputs). Released
(noisy) models are scored in float32 where the run computes in float64: no certificate reads
these numbers (they describe the release's utility), and the pass costs about a third (the
built-in CNN on 10,000 MNIST test images: 2.4 s in float64 in one block, 0.35-0.4 s in float32
in chunks of 512, one loaded core). Where a split has more than ``records`` records, released
models are scored on a seeded random subsample of that size, with the standard error of the mean
accuracy stated (:func:`accuracy_se`). ``vmap`` over the draws was measured and not used: on CPU
the batched convolution is no faster than one pass per draw.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor

from unlearners.objective import Objective

#: Records per forward pass of a non-linear model: the activations of a chunk stay in cache
#: (the CNN above: 2.7x cheaper per record in chunks of 256 than in one block of 10,000).
EVAL_CHUNK = 512


@dataclass(frozen=True)
class Scores:
    """Released models scored on one set of records.

    ``accuracy`` and ``loss`` (k,): each model's accuracy and mean loss; ``hits`` (m,): how many
    of the k models got each record right (the record-level spread behind :func:`accuracy_se`)."""

    accuracy: Tensor
    loss: Tensor
    hits: Tensor


@dataclass(frozen=True)
class Evaluated:
    """What the utility stage hands the frontier: the test records releases are scored on (``test``,
    subsampled and cast), the test split's size, the unlearned model's noiseless test accuracy, and
    (σ, scores) of its releases at the certificate's σ (None without finite, non-zero noise)."""

    test: tuple[Tensor, Tensor]
    population: int
    noiseless: float
    known: tuple[float, Scores] | None


def outputs(objective: Objective, theta: Tensor, X: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
    """(per-record loss, per-record correct) of one model: one forward pass, chunked for a
    non-linear model."""
    step = int(X.shape[0]) if objective.is_linear else EVAL_CHUNK
    losses, right = [], []
    for i in range(0, max(int(X.shape[0]), 1), step):
        out = objective.logits(theta, X[i : i + step])
        losses.append(objective.loss_of_outputs(out, y[i : i + step]))
        right.append(objective.labels_of_outputs(out) == y[i : i + step])
    return torch.cat(losses), torch.cat(right)


def score(objective: Objective, thetas: Tensor, X: Tensor, y: Tensor) -> Scores:
    """Accuracy, mean loss and per-record hits of every row of ``thetas`` (k, d) on (X, y), one
    pass per row, in the dtype of ``X`` (``thetas`` are cast to it). A row whose loss overflows
    there is scored again in the rows' own dtype."""
    n = int(X.shape[0])
    acc, loss, hits = [], [], torch.zeros(n, dtype=torch.long, device=X.device)
    for theta in thetas:
        per_loss, right = outputs(objective, theta.to(X.dtype), X, y)
        if not bool(torch.isfinite(per_loss).all()) and X.dtype != theta.dtype:
            per_loss, right = outputs(objective, theta, X.to(theta.dtype), y)
        acc.append(int(right.sum()) / n)
        loss.append(float(per_loss.sum(dtype=torch.float64)) / n)
        hits += right
    return Scores(torch.tensor(acc, dtype=torch.float64), torch.tensor(loss, dtype=torch.float64), hits)


def accuracy_se(scores: Scores, population: int) -> float:
    """Standard error of ``scores.accuracy.mean()`` as an estimate of the mean released accuracy on
    all ``population`` records: the draws' spread over √k plus, when the m scored records are a
    random subsample, the records' spread with the finite-population correction,
    √(s²_draws/k + (1 − m/N)·s²_records/m). Conservative: s²_records also holds the draws' noise."""
    k, m = int(scores.accuracy.numel()), int(scores.hits.numel())
    draws = float(scores.accuracy.var()) / k if k > 1 else 0.0
    per_record = scores.hits.to(torch.float64) / k
    records = (1 - m / population) * float(per_record.var()) / m if m < population and m > 1 else 0.0
    return math.sqrt(draws + records)


def subsample(X: Tensor, y: Tensor, records: int | None, generator: torch.Generator) -> tuple[Tensor, Tensor]:
    """(X, y) itself, or ``records`` of its rows drawn without replacement from ``generator``."""
    n = int(X.shape[0])
    if records is None or n <= records:
        return X, y
    keep = torch.randperm(n, generator=generator)[:records].to(X.device)
    return X[keep], y[keep]


def noisy_dtype(objective: Objective, dtype: torch.dtype) -> torch.dtype:
    """float32 for released models of a float64 run, unless the model computes with floating
    buffers that θ does not carry (they would stay float64: a dtype mismatch)."""
    carried = set(objective.buffer_names)
    pinned = any(b.is_floating_point() and name not in carried for name, b in objective.model.named_buffers())
    return torch.float32 if dtype == torch.float64 and not pinned else dtype
