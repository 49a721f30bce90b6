"""DP-SGD's randomness as counter-based streams, and many DP-SGD runs as one batched computation.

A *run* is one DP-SGD training (A on D, or the retrain on D \\ Z). Its randomness is two Philox
streams (numpy's Philox-4x64), keyed by :func:`run_keys`, a pure function of (seed, θ_0); in an
audit θ_0 is itself a pure function of (role seed, trial index), so every trial's training is one
of (seed, role, index). Both implementations read the same streams in the same calls (one call
per epoch):

* **Poisson sampling** at rate q over the run's n records (Abadi et al. 2016's lots; Opacus's
  ``UniformWithReplacementSampler`` draws one uniform per record per step instead, n words a
  step). Step s owns M = :func:`gap_budget` (n, q) words of the sampling stream, at counter
  s·M/4; each word u gives a gap G = ⌊log(1 − u) / log(1 − q)⌋ + 1, geometric on {1, 2, ...}
  with P(G > k) = (1 − q)^k, and the records at the positions cumsum(G) − 1 below n form the
  batch: each record is in it independently with probability q, up to the rounding of the
  logarithms (as ``rand < q`` is up to the rounding of the uniform). M covers the batch size's
  mean plus :data:`MARGIN_SD` standard deviations; a step whose M gaps end before n (below 1e-18
  at the default: more than 431 records where 255 are expected) continues the chain with rounds
  j = 1, 2, ... of M more words at counter (j·T + s)·M/4, T the run's steps, so no batch is cut.
  About q·n + 10·sqrt(q·n) words a step instead of n: 432 instead of 34,190 on the default Adult
  run (q = 1/134).
* **Gaussian noise**: step s's d standard normals ξ_s (d = the model's parameter count) from
  the noise stream at counter s·B, B = ceil(2·ceil(d/2)/4) blocks, by Box-Muller in float64 as
  :func:`audit.trials.trial_noise` draws a trial's noise; the noise added to the clipped sum is
  z·C·ξ_s, split over the parameters in θ's order.

The batched trainer (:func:`train_batched`) runs N runs from a stack of initial points: per step,
per-sample gradients of every sampled record of every run (closed form r ⊗ [x, 1] for a linear
model; otherwise ``vmap`` over runs of :meth:`~unlearners.objective.Objective.per_sample_grads`,
itself ``vmap(grad)``), Opacus's clipping rule (each record's gradient scaled by
min(1, C / (‖g‖ + 1e-6)), the norm taken per parameter tensor and then over them), the clipped
sum, the noise and the SGD step, for every run at once. Runs are computed in blocks of a fixed
number of rows (the last padded with copies of its last run) and every step's batch is padded to
the fixed width M, so every call has the same shapes and a run sits at the same position of a
block wherever it is computed: run i's result does not depend on how many runs are stacked with
it (shards and prefixes of a trial set are bit for bit the whole run's). The one exception is a
step that overflows M (above): that epoch of its block is computed at a wider width, so the
block's other runs are not guaranteed the same last bits as in a set without that run.

:class:`unlearners.dpsgd.DPSGD` trains the audit's own model with Opacus (the reference and the
accountant) on these streams; its trials use this trainer, which equals Opacus's step to rounding
(``tests/test_dpsgd_batched.py``; summation order of the clipped sum and of the linear layer
differ, so not bit for bit).
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import torch
from torch import Tensor
from torch.func import vmap

from unlearners.objective import Objective

#: Standard deviations of the batch size that a step's word budget covers beyond its mean.
MARGIN_SD = 10
#: Words added to every budget (small batches: a Poisson(1) batch needs room for a few records).
MARGIN_WORDS = 16
#: Elements of one block's per-sample gradients computed at once (batch positions are split
#: into fixed sub-chunks beyond it: 128 MiB of float64).
PER_SAMPLE_ELEMENTS = 1 << 24
#: Opacus's clipping rule: min(1, C / (norm + 1e-6)) (``DPOptimizer.clip_and_accumulate``).
CLIP_EPS = 1e-6


class RunKeys(NamedTuple):
    """The Philox keys (two 64-bit words each) of one run's sampling and noise streams."""

    sample: np.ndarray
    noise: np.ndarray


def run_keys(seed: int, theta0: Tensor) -> RunKeys:
    """The keys of a run from (seed, θ_0): SHA-256 of the seed's decimal digits and θ_0's bytes,
    words 0-1 the sampling key, words 2-3 the noise key. θ_0 enters so that trials that relearn
    from fresh initial points also redraw DP-SGD's own randomness."""
    digest = hashlib.sha256(str(int(seed)).encode() + theta0.detach().cpu().contiguous().numpy().tobytes())
    words = np.frombuffer(digest.digest(), dtype="<u8").astype(np.uint64)
    return RunKeys(words[:2].copy(), words[2:].copy())


def gap_budget(n: int, q: float) -> int:
    """M: the words of the sampling stream each step owns (a multiple of 4, one Philox block)."""
    mean, var = n * q, n * q * (1.0 - q)
    return 4 * math.ceil((mean + MARGIN_SD * math.sqrt(var) + MARGIN_WORDS) / 4)


def _uniforms(key: np.ndarray, counter: int, rows: int, words: int) -> np.ndarray:
    out = np.empty((rows, words), dtype=np.float64)
    np.random.Generator(np.random.Philox(key=key, counter=counter)).random(out=out)  # (w >> 11)·2^-53
    return out


def _gaps(u: np.ndarray, q: float) -> np.ndarray:
    if q >= 1.0:  # every record, every step
        return np.ones(u.shape, dtype=np.int64)
    return (np.floor(np.log1p(-u) / math.log1p(-q)) + 1).astype(np.int64)


def sampled_positions(key: np.ndarray, n: int, q: float, total_steps: int, first: int, stop: int) -> np.ndarray:
    """Poisson batches of steps ``first .. stop - 1`` over n records: (stop - first, W) int64
    positions, increasing along a row; an entry >= n is not a record (W = M, or a multiple of M
    where a step needed more words). See the module docstring."""
    budget = gap_budget(n, q)
    pos = np.cumsum(_gaps(_uniforms(key, first * budget // 4, stop - first, budget), q), axis=1) - 1
    short = np.flatnonzero(pos[:, -1] < n)
    if short.size == 0:
        return pos
    rows = [list(row) for row in pos]
    for r in short:  # the chain continues until it passes n (see the module docstring)
        step, chain, j = first + int(r), pos[r], 0
        while chain[-1] < n:
            j += 1
            more = _gaps(_uniforms(key, (j * total_steps + step) * budget // 4, 1, budget), q)[0]
            chain = np.concatenate([chain, chain[-1] + np.cumsum(more)])
        rows[r] = chain
    width = budget * -(-max(len(row) for row in rows) // budget)
    out = np.full((len(rows), width), n, dtype=np.int64)
    for i, row in enumerate(rows):
        out[i, : len(row)] = row
    return out


def step_normals(key: np.ndarray, dim: int, first: int, stop: int) -> np.ndarray:
    """Standard normals ξ_s of steps ``first .. stop - 1``: (stop - first, dim) float64."""
    pairs = -(-dim // 2)
    blocks = -(-2 * pairs // 4)
    u = _uniforms(key, first * blocks, stop - first, 4 * blocks)
    radius = np.sqrt(-2.0 * np.log(1.0 - u[:, 0 : 2 * pairs : 2]))  # 1 - u in (0, 1]: never log 0
    angle = 2.0 * np.pi * u[:, 1 : 2 * pairs : 2]
    out = np.empty((stop - first, 2 * pairs), dtype=np.float64)
    out[:, 0::2], out[:, 1::2] = radius * np.cos(angle), radius * np.sin(angle)
    return out[:, :dim]


@dataclass(frozen=True)
class Mechanism:
    """One DP-SGD configuration: rate q, steps per epoch, epochs, clipping norm C, noise
    multiplier z and the SGD step (η divided by the expected batch size)."""

    sample_rate: float
    steps_per_epoch: int
    epochs: int
    clip: float
    noise_multiplier: float
    lr: float

    @property
    def steps(self) -> int:
        return self.steps_per_epoch * self.epochs

    @property
    def noise_std(self) -> float:
        """z·C, as Opacus computes it (``noise_multiplier * max_grad_norm``)."""
        return self.noise_multiplier * self.clip


def epoch_randomness(keys: RunKeys, n: int, dim: int, mech: Mechanism, epoch: int) -> tuple[np.ndarray, np.ndarray]:
    """(positions, normals) of one run's steps in ``epoch``: what both implementations read."""
    first, stop = epoch * mech.steps_per_epoch, (epoch + 1) * mech.steps_per_epoch
    return (
        sampled_positions(keys.sample, n, mech.sample_rate, mech.steps, first, stop),
        step_normals(keys.noise, dim, first, stop),
    )


def train_batched(
    objective: Objective, X: Tensor, y: Tensor, thetas0: Tensor, keys: list[RunKeys], mech: Mechanism, *, block: int
) -> Tensor:
    """θ_T of N DP-SGD runs from ``thetas0`` (N, d) on (X, y), run i with the streams of
    ``keys[i]``, ``block`` runs at a time (the last block padded): (N, d)."""
    n_runs = thetas0.shape[0]
    pad = -n_runs % block
    thetas = torch.cat([thetas0, thetas0[-1:].expand(pad, -1)]) if pad else thetas0
    keys = list(keys) + [keys[-1]] * pad
    out = [
        _train_block(objective, X, y, thetas[a : a + block].clone(), keys[a : a + block], mech)
        for a in range(0, thetas.shape[0], block)
    ]
    return torch.cat(out)[:n_runs]


def _train_block(
    objective: Objective, X: Tensor, y: Tensor, thetas: Tensor, keys: list[RunKeys], mech: Mechanism
) -> Tensor:
    n, dim = int(X.shape[0]), thetas.shape[1]
    clipped_sum = per_sample_clipped_sum(objective, X, y)
    for epoch in range(mech.epochs):
        drawn = [epoch_randomness(k, n, dim, mech, epoch) for k in keys]
        width = max(p.shape[1] for p, _ in drawn)
        positions = np.full((len(keys), mech.steps_per_epoch, width), n, dtype=np.int64)
        for i, (p, _) in enumerate(drawn):
            positions[i, :, : p.shape[1]] = p
        at = torch.from_numpy(positions).to(X.device).transpose(0, 1)  # (steps, runs, width)
        valid = (at < n).to(thetas.dtype)  # entries >= n are padding
        at = at.clamp(max=n - 1)
        normals = torch.from_numpy(np.stack([z for _, z in drawn], axis=1)).to(device=X.device, dtype=thetas.dtype)
        for s in range(mech.steps_per_epoch):
            thetas = dpsgd_step(clipped_sum, thetas, at[s], valid[s], normals[s], mech)
    return thetas


def dpsgd_step(clipped_sum, thetas: Tensor, idx: Tensor, valid: Tensor, normals: Tensor, mech: Mechanism) -> Tensor:
    """One DP-SGD step of every run: θ − lr·(Σ_i clip(g_i) + z·C·ξ). ``idx`` (runs, W): the batch
    of each run, ``valid`` (runs, W): 1 for a record of the batch, 0 for padding (any index),
    ``normals`` (runs, d): ξ; ``clipped_sum`` from :func:`per_sample_clipped_sum`."""
    return thetas - mech.lr * (clipped_sum(thetas, idx, valid, mech.clip) + mech.noise_std * normals)


def per_sample_clipped_sum(objective: Objective, X: Tensor, y: Tensor):
    """``f(thetas, idx, valid, clip)``: for each run, the sum over its batch ``idx`` (weights
    ``valid``) of its records' clipped gradients, (runs, d), with Opacus's rule: g·min(1, C/(‖g‖ +
    1e-6)), ‖g‖ the norm of the per-parameter norms (``DPOptimizer.clip_and_accumulate``). Closed
    form for a linear model (:meth:`Objective.per_sample_grads`'s r ⊗ [x, 1]), ``vmap`` over runs
    of the per-sample gradients otherwise, in fixed sub-chunks of the batch beyond
    :data:`PER_SAMPLE_ELEMENTS` (the same shapes in every block)."""
    feats = objective._features(X)
    if feats is not None:
        return _LinearClippedSum(objective, feats, y)
    per_sample = vmap(objective.per_sample_grads)

    def part(thetas: Tensor, idx: Tensor, valid: Tensor, clip: float) -> Tensor:
        grads = per_sample(thetas, X[idx], y[idx])  # (runs, W, d)
        norms = torch.stack([g.norm(2, dim=-1) for g in grads.split(objective.numels, dim=-1)], dim=-1)
        return torch.einsum("rw,rwd->rd", _clip_factor(norms.norm(2, dim=-1), clip, valid), grads)

    def clipped_sum(thetas: Tensor, idx: Tensor, valid: Tensor, clip: float) -> Tensor:
        runs, width = idx.shape
        sub = max(1, min(width, PER_SAMPLE_ELEMENTS // max(1, runs * thetas.shape[1])))
        total = part(thetas, idx[:, :sub], valid[:, :sub], clip)
        for a in range(sub, width, sub):
            total = total + part(thetas, idx[:, a : a + sub], valid[:, a : a + sub], clip)
        return total

    return clipped_sum


def _clip_factor(norms: Tensor, clip: float, valid: Tensor) -> Tensor:
    return (clip / (norms + CLIP_EPS)).clamp(max=1.0) * valid


class _LinearClippedSum:
    """The clipped sum of a linear model z = W x + b in closed form: r = ∂ℓ/∂z (σ(z) − y or
    softmax(z) − e_y), per-sample gradients r ⊗ x and r, whose per-parameter norms are ‖r‖·‖x‖
    and ‖r‖; the clipped sum is Σ_i c_i r_i ⊗ x_i (one batched matrix product) and Σ_i c_i r_i."""

    def __init__(self, objective: Objective, feats: Tensor, y: Tensor) -> None:
        self.objective, self.feats, self.y = objective, feats, y
        self.feat_norms = feats.norm(2, dim=1)
        lay = objective.linear_layout
        assert lay is not None, "the closed-form per-sample gradients are those of a linear model"
        sizes = dict(zip(objective.names, objective.numels))
        offsets = dict(zip(objective.names, [sum(objective.numels[:i]) for i in range(len(objective.names))]))
        self.weight = (offsets[lay.weight], sizes[lay.weight])
        self.bias = (offsets[lay.bias], sizes[lay.bias]) if lay.bias is not None else None
        self.classes = torch.arange(objective.n_outputs, device=feats.device)

    def __call__(self, thetas: Tensor, idx: Tensor, valid: Tensor, clip: float) -> Tensor:
        runs, C = thetas.shape[0], self.objective.n_outputs
        Xb = self.feats[idx]  # (runs, W, f)
        (w0, wn) = self.weight
        W = thetas[:, w0 : w0 + wn].reshape(runs, C, -1)
        z = torch.bmm(Xb, W.transpose(1, 2))  # (runs, W, C): what nn.functional.linear computes
        if self.bias is not None:
            z = z + thetas[:, self.bias[0] : self.bias[0] + C].unsqueeze(1)
        yb = self.y[idx]
        if C == 1:
            r = torch.sigmoid(z) - yb.to(z.dtype).unsqueeze(-1)
            r_norm = r.squeeze(-1).abs()
        else:
            r = torch.softmax(z, dim=-1) - (yb.unsqueeze(-1) == self.classes).to(z.dtype)
            r_norm = r.norm(2, dim=-1)
        weight_norm = r_norm * self.feat_norms[idx]
        norms = torch.hypot(weight_norm, r_norm) if self.bias is not None else weight_norm
        cr = _clip_factor(norms, clip, valid).unsqueeze(-1) * r  # (runs, W, C)
        out = torch.empty_like(thetas)
        out[:, w0 : w0 + wn] = torch.bmm(cr.transpose(1, 2), Xb).reshape(runs, wn)
        if self.bias is not None:
            out[:, self.bias[0] : self.bias[0] + C] = cr.sum(1)
        return out
