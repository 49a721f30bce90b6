"""Trials: N released models per world (unlearned, retrained), each a pure function of its seed.

An audit compares the distribution of the *unlearned* release U(A(D), D, Z) + ξ with that of
the *retrained* release A(D \\ Z) + ξ'. A trial is one draw from each world. Two modes:

* ``"noise"`` (:func:`noise_trials`): the method is deterministic given its seed, so the only
  randomness is the output noise; a trial is a fresh Gaussian draw around the same two
  noiseless parameter vectors.
* ``"retrain"`` (:func:`retrain_trials`): training is randomised through its initial point;
  a trial re-runs learning from a new θ_0^(i), unlearns, retrains, and adds fresh noise.

:func:`choose_mode` picks the mode an adversary faces (``"auto"``, the default): noise mode
only when the release adds output noise that the certificate rests on; retrain mode whenever
the released model is deterministic given its training randomness (σ = 0, no certificate, or
noise inside training), since two deterministic runs that differ prove nothing about privacy.
Every trial set also carries the world of the *original* model A(D) (the positive control: an
attack that cannot tell A(D) from A(D \\ Z) cannot judge U either).

Seeds. Every trial is a pure function of ``(seed, trial index)``; the seed itself is a pure
function of (root seed, role): the audit's trials and its shadow models are two roles of the same
game, never one shared stream. A trial has four random streams: ``s = 0`` the initial point,
``s = 1`` the noise of the unlearned world, ``s = 2`` the noise of the retrained world and
``s = 3`` the noise of the original model (the positive control), so the worlds never share a
stream. A method whose training draws more randomness (the caller's own code,
:mod:`unlearners.caller`) takes stream ``s = 4`` from the role seed and the trial index, which
the loop path passes to :meth:`~unlearners.base.Unlearner.seed_trial` before each trial.

* Noise (streams 1-3) is counter-based, so that a block of trials is drawn in bulk rather than
  one generator per trial (:func:`trial_noise`): stream s is numpy's Philox-4x64 keyed by the
  two 64-bit words ``SeedSequence(seed, spawn_key=(s,)).generate_state(2, uint64)``. Trial i
  owns the counter blocks ``[i·B, (i+1)·B)``, ``B = ceil(2·ceil(d/2) / 4)`` (a block is four
  64-bit words), i.e. the words ``w_0 .. w_{4B-1}`` of ``random_raw`` started at counter
  ``i·B``; its first ``2·ceil(d/2)`` words become uniforms ``u_k = (w_k >> 11)·2^-53`` in
  [0, 1), and each pair becomes two standard normals by Box-Muller in float64,
  ``r = sqrt(-2 log(1 - u_2j))`` (1 - u is in (0, 1], never log 0), ``z_2j = r cos(2π u_2j+1)``,
  ``z_2j+1 = r sin(2π u_2j+1)``; the first d are the row's noise ξ_i, cast to the parameter
  dtype, and the release is θ + σ ξ_i. Row i depends on (seed, s, i, d) only: the first N
  trials of a larger run are exactly the smaller run, and any block [a, b) of rows can be drawn
  on its own (sharding, resuming). Box-Muller maps exact uniforms to exact normals; with 53-bit
  uniforms |ξ| ≤ sqrt(106 log 2) ≈ 8.57, a truncation of probability about 1e-17 per draw.
* The initial point (stream 0) is drawn by the model's own initialiser from a CPU
  ``torch.Generator`` seeded with ``SeedSequence(seed, spawn_key=(i, 0)).generate_state(1,
  uint64)`` (:func:`trial_generator`), one per trial: retrain mode runs a few hundred trials,
  each a full training, so this loop costs nothing in comparison.

Everything is drawn on the CPU and then moved, so a seed gives the same numbers on CPU and CUDA
(up to the device's arithmetic in training; numpy's vectorised log, sin and cos may differ
between machines in the last bit).

Batching. Parameter stacks have shape (N, d). A method that declares ``batched_training``
trains all trials at once with its own :meth:`~unlearners.base.Unlearner.train_many` (next to
the algorithm it batches); any other method runs a replica per trial. Released models are
evaluated in batches by :mod:`unlearners.batched`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import Tensor

from certify.errors import InvalidInput, Real, require_integer
from unlearners.base import Unlearner, Worlds
from unlearners.batched import chunk_size
from unlearners.training import ROW_BLOCK

MODES = ("noise", "retrain", "rerun")
#: What ``trial_mode`` accepts: a mode, or ``"auto"`` (:func:`choose_mode`).
MODE_CHOICES = ("auto", *MODES)
#: The modes whose two worlds are the Gaussian mechanism on two fixed models (θ_u + σξ against
#: θ_r + σξ'): the release's trade-off curve is G_μ by construction, so the GDP bound on μ is a
#: valid bound there and an estimate elsewhere (:mod:`attacks.gdp`). Retrain and re-run trials
#: redraw training, whose randomness has no known shape.
GAUSSIAN_RELEASE_MODES = frozenset({"noise"})

#: The random streams of a trial (see the module docstring).
STREAM_INIT, STREAM_UNLEARNED, STREAM_RETRAINED, STREAM_ORIGINAL = 0, 1, 2, 3

SEED_SCHEME = (
    "seed a pure function of (root seed, role); noise of stream s (1 = unlearned world, 2 = retrained "
    "world, 3 = original model): numpy Philox-4x64 keyed by SeedSequence(seed, spawn_key=(s,))"
    ".generate_state(2, uint64), trial i at counter i*B with B = ceil(2*ceil(d/2)/4) blocks of four "
    "64-bit words; its first 2*ceil(d/2) words w give uniforms u = (w >> 11) * 2**-53, pairs give "
    "normals by Box-Muller in float64 (r = sqrt(-2 log(1 - u_even)), r cos and r sin of 2 pi u_odd), "
    "the first d cast to the parameter dtype; stream 0 (initial point, retrain mode): a CPU "
    "torch.Generator seeded with SeedSequence(seed, spawn_key=(trial, 0)).generate_state(1, uint64)"
)
#: Raw 64-bit words drawn at once by :func:`trial_noise`: 128 KiB of float64 uniforms and about
#: as much again of other buffers, so the elementwise passes stay in cache (the fastest of 2**12 to
#: 2**20 on the development machine, about 3x faster than 2**16) and the memory is bounded.
CHUNK_WORDS = 1 << 14
_SIGMA = Real(ge=0)


# -- mode -------------------------------------------------------------------------------
def choose_mode(requested: str, sigma: float, kind: str, *, reruns: bool = False) -> tuple[str, str]:
    """The trial mode and why: ``requested`` unless it is ``"auto"``.

    ``kind`` is the certificate's kind (``"output-noise"``, ``"training-noise"``, ``"exact"``,
    ``"none"``, ...). Auto: noise mode when the release draws output noise (σ > 0) outside
    training; otherwise retrain mode, the randomness an adversary faces when the released model
    is a deterministic function of its training randomness; ``"rerun"`` when the method's release
    is itself a noisy run (``reruns``: ``Capabilities.reruns``, noisy-ft), whose certificate is
    about that run's randomness from fixed starts (:func:`rerun_trials`). ``"noise"`` on a release
    without output noise (σ = 0) is refused: its trials would be identical copies; ``"rerun"`` for
    a method that declares no re-runs is refused."""
    if requested not in MODE_CHOICES:
        raise InvalidInput("trial_mode", "one of " + ", ".join(MODE_CHOICES), requested)
    if requested == "noise" and not sigma > 0:  # every noise draw would be the same model: nothing to attack
        raise InvalidInput(
            "trial_mode",
            "auto or retrain for this release: it adds no output noise (sigma = 0), so "
            "every noise-mode trial would be the same model",
            requested,
        )
    if requested == "rerun" and not reruns:
        raise InvalidInput(
            "trial_mode",
            "auto, noise or retrain for this method: rerun needs a method whose release is a noisy run (noisy-ft)",
            requested,
        )
    if requested != "auto":
        return requested, f"{requested} mode, as configured (trial_mode = {requested!r})"
    if reruns:
        return "rerun", (
            "rerun mode: the release is a noisy run from the trained model, and its certificate is about "
            "that run's randomness, so every trial re-runs it from the fixed A(D) and A(D \\ Z) starts"
        )
    if kind == "training-noise":
        return "retrain", (
            "retrain mode: the guarantee's noise is inside training, so every trial redraws the "
            "training randomness (its initial point) in both worlds"
        )
    if not sigma > 0:
        return "retrain", (
            "retrain mode: the release adds no output noise (sigma = 0), so a released model is a "
            "deterministic function of its training randomness, which every trial redraws in both "
            "worlds (noise draws would be identical copies)"
        )
    return "noise", (
        f"noise mode: the release adds Gaussian output noise (sigma = {sigma:.4g}), the randomness the "
        "certificate rests on, so every trial is a fresh noise draw around each world's model"
    )


# -- seeds -----------------------------------------------------------------------------
def trial_generator(seed: int, trial: int, stream: int) -> torch.Generator:
    """The CPU generator of one random stream of one trial (a pure function of its arguments):
    used for the initial points (stream 0); the noise streams are counter-based (:func:`trial_noise`)."""
    state = np.random.SeedSequence(int(seed), spawn_key=(int(trial), int(stream))).generate_state(1, dtype=np.uint64)
    return torch.Generator().manual_seed(int(state[0]))


def _blocks_per_row(dim: int) -> int:
    """Philox counter blocks (four 64-bit words each) that one row of ``dim`` normals owns."""
    return -(-2 * (-(-dim // 2)) // 4)


class _BoxMuller:
    """Standard normals from Philox words, in float64 buffers of ``rows`` rows reused chunk after chunk.

    Every transcendental function runs on a contiguous 1-D buffer, so each value goes through
    the same numpy kernel (vector body and masked tail alike) wherever its row sits in a block:
    a row is bit for bit the same in any block. The buffers are allocated once per call of
    :func:`trial_noise`, not per chunk (fresh large arrays cost page faults every time)."""

    def __init__(self, rows: int, blocks: int, dim: int) -> None:
        self.pairs = -(-dim // 2)
        self.dim = dim
        self.uniforms = np.empty((rows, 4 * blocks), dtype=np.float64)
        self.radius, self.angle, self.cosine = (np.empty(rows * self.pairs, dtype=np.float64) for _ in range(3))
        self.normals = np.empty((rows, 2 * self.pairs), dtype=np.float64)

    def __call__(self, generator: np.random.Generator, rows: int) -> np.ndarray:
        """The next ``rows`` rows of normals from ``generator``: (rows, dim), a view of a buffer."""
        pairs, shape = self.pairs, (rows, self.pairs)
        uniforms = self.uniforms[:rows]
        # Generator.random() turns each raw word w into (w >> 11) * 2**-53 in C: the uniform of
        # the scheme (tests check it against random_raw), in one pass instead of three
        generator.random(out=uniforms)
        radius, angle, cosine = (buf[: rows * pairs] for buf in (self.radius, self.angle, self.cosine))
        np.subtract(1.0, uniforms[:, 0 : 2 * pairs : 2], out=radius.reshape(shape))  # exact, in (0, 1]
        np.log(radius, out=radius)  # never log 0
        radius *= -2.0
        np.sqrt(radius, out=radius)
        np.multiply(uniforms[:, 1 : 2 * pairs : 2], 2.0 * np.pi, out=angle.reshape(shape))
        np.cos(angle, out=cosine)
        np.sin(angle, out=angle)
        normals = self.normals[:rows]
        np.multiply(radius.reshape(shape), cosine.reshape(shape), out=normals[:, 0::2])
        np.multiply(radius.reshape(shape), angle.reshape(shape), out=normals[:, 1::2])
        return normals[:, : self.dim]


def trial_noise(seed: int, stream: int, start: int, stop: int, dim: int, dtype: torch.dtype = torch.float64) -> Tensor:
    """The standard-normal noise ξ_i of trials ``start <= i < stop`` of one stream: (stop - start, dim).

    Row i is a pure function of (seed, stream, i, dim) (see the module docstring): it does not
    depend on ``start`` or ``stop``, so a larger block begins with a smaller one and blocks drawn
    apart equal one block drawn at once. Drawn on the CPU, in float64, then cast to ``dtype``; in
    chunks of about :data:`CHUNK_WORDS` words, so the temporaries stay small and in cache
    however many rows."""
    seed, stream = require_integer("seed", seed, 0), require_integer("stream", stream, 0)
    start, stop = require_integer("start", start, 0), require_integer("stop", stop, 0)
    dim = require_integer("dim", dim, 1)
    if stop < start:
        raise InvalidInput("stop", f"at least start ({start})", stop)
    blocks = _blocks_per_row(dim)
    key = np.random.SeedSequence(seed, spawn_key=(stream,)).generate_state(2, dtype=np.uint64)
    out = torch.empty((stop - start, dim), dtype=dtype)
    rows_per_chunk = max(1, min(CHUNK_WORDS // (4 * blocks), stop - start))
    normals = _BoxMuller(rows_per_chunk, blocks, dim)
    for first in range(start, stop, rows_per_chunk):
        last = min(stop, first + rows_per_chunk)
        generator = np.random.Generator(np.random.Philox(key=key, counter=first * blocks))
        out[first - start : last - start] = torch.from_numpy(normals(generator, last - first))  # the cast
    return out


# -- noise -------------------------------------------------------------------------------
def noise_draws(theta: Tensor, sigma: float, n: int, generator: torch.Generator) -> Tensor:
    """n releases θ + σξ_i, ξ_i ~ N(0, I_d) i.i.d., from one generator: shape (n, d).

    The noise is drawn on the CPU from ``generator`` in θ's dtype and then moved to θ's device,
    so ``noise_draws(θ, σ, 1, g)[0]`` equals ``Unlearner.release(θ, σ, g)``. σ = 0 returns n
    copies of θ without touching the generator. (Trials draw their noise with
    :func:`trial_noise` instead, one counter-based row per trial.)
    """
    sigma = _SIGMA.check("sigma", sigma)
    if sigma == 0:
        return theta.unsqueeze(0).expand(int(n), -1).clone()
    noise = torch.randn((int(n), theta.shape[-1]), generator=generator, dtype=theta.dtype, device="cpu")
    return theta.unsqueeze(0) + sigma * noise.to(theta.device)


def _noisy_rows(thetas: Tensor, sigma: float, seed: int, stream: int, first: int = 0) -> Tensor:
    """Row i of (N, d) (trial ``first + i``) plus σ times that trial's noise of ``stream``
    (:func:`trial_noise`), in the rows' dtype and on their device: θ_i + σ ξ_i, rounded as
    ``θ + σ * ξ``. σ = 0: a copy."""
    if sigma == 0:
        return thetas.clone()
    noise = trial_noise(seed, stream, first, first + thetas.shape[0], thetas.shape[1], thetas.dtype).to(thetas.device)
    return noise.mul_(sigma).add_(thetas)  # in place: the noise block becomes the released stack


# -- trial sets ----------------------------------------------------------------------------
@dataclass
class TrialSet:
    """N released models per world, and what produced them.

    Attributes
    ----------
    unlearned, retrained, original:
        Released parameter stacks (N, d): noiseless parameters plus fresh Gaussian noise. The
        original world (A(D), released with the same σ) is the audit's positive control.
    mode:
        ``"noise"`` (one noiseless model per world, N noise draws) or ``"retrain"`` (N trainings
        from N initial points, each with its own noise draw).
    n_trials, seed, sigma:
        N, the seed of this role (a pure function of the root seed and the role), and σ.
    theta_unlearned, theta_retrained, theta_original:
        The noiseless parameters: shape (d,) in noise mode, (N, d) in retrain mode.
    initial:
        The initial points θ_0^(i), (N, d), in retrain mode; None in noise mode.
    path:
        How the trials were computed: ``"noise"``, ``"vmap"`` (the method's batched training)
        or ``"loop"`` (the method's own fit/unlearn/retrain, one trial at a time).
    """

    unlearned: Tensor
    retrained: Tensor
    original: Tensor
    mode: str
    n_trials: int
    seed: int
    sigma: float
    theta_unlearned: Tensor
    theta_retrained: Tensor
    theta_original: Tensor
    initial: Tensor | None = None
    path: str = "noise"
    seed_scheme: str = field(default=SEED_SCHEME)


def noise_trials(
    theta_unlearned: Tensor,
    theta_retrained: Tensor,
    sigma: float,
    n_trials: int,
    seed: int,
    theta_original: Tensor | None = None,
    *,
    first: int = 0,
) -> TrialSet:
    """N independent noise draws around each world's noiseless parameters (mode ``"noise"``).

    Trial i of the unlearned world is θ_u + σ ξ_i with ξ_i row i of :func:`trial_noise` of
    stream 1; the retrained world uses stream 2 and the original model (the positive control;
    θ_u when not given) stream 3 (see the module docstring), so the worlds' noises are
    independent and each trial is a pure function of (seed, i). ``first``: the index of the
    first trial (a shard of a larger run: trials ``first .. first + n_trials − 1``).
    """
    seed, n_trials = require_integer("seed", seed, 0), require_integer("n_trials", n_trials, 1)
    first = require_integer("first", first, 0)
    sigma = _SIGMA.check("sigma", sigma)
    theta_original = theta_unlearned if theta_original is None else theta_original
    if not (theta_unlearned.shape == theta_retrained.shape == theta_original.shape) or theta_unlearned.ndim != 1:
        raise InvalidInput(
            "theta_unlearned/theta_retrained",
            "two parameter vectors of the same shape (d,)",
            (tuple(theta_unlearned.shape), tuple(theta_retrained.shape)),
        )
    rows = {
        name: theta.unsqueeze(0).expand(n_trials, -1)
        for name, theta in (("u", theta_unlearned), ("r", theta_retrained), ("o", theta_original))
    }
    return TrialSet(
        unlearned=_noisy_rows(rows["u"], sigma, seed, STREAM_UNLEARNED, first),
        retrained=_noisy_rows(rows["r"], sigma, seed, STREAM_RETRAINED, first),
        original=_noisy_rows(rows["o"], sigma, seed, STREAM_ORIGINAL, first),
        mode="noise",
        n_trials=n_trials,
        seed=seed,
        sigma=sigma,
        theta_unlearned=theta_unlearned.clone(),
        theta_retrained=theta_retrained.clone(),
        theta_original=theta_original.clone(),
        path="noise",
    )


def retrain_trials(
    method: Unlearner,
    forget: Tensor,
    n_trials: int,
    seed: int,
    *,
    init: Callable[[torch.Generator], Tensor],
    sigma: float,
    batched: bool | None = None,
    chunk: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    first: int = 0,
) -> TrialSet:
    """N trainings from fresh initial points, each unlearned, retrained and released (``"retrain"``).

    Trial i draws θ_0^(i) = ``init(g)`` with g the generator of stream 0 of trial i, moved to the
    device of the method's training data and cast to its dtype; runs learning on D from θ_0^(i),
    unlearning of ``forget``, and retraining on D \\ Z from θ_0^(i); then releases the three
    models with fresh noise of scale ``sigma`` (rows i of :func:`trial_noise` of streams 1, 2
    and 3). Each trial is a pure function of (seed, i).

    The method must have been fitted once (the audit's own run): its data and the options it
    chose while fitting (:meth:`~unlearners.base.Unlearner.pinned_options`, e.g. a step size)
    are reused by every trial, so that every trial runs the algorithm the certificate (and
    ``sigma``) was computed for.

    * Batched path (``batched=None`` or True): a method that declares ``batched_training``
      trains every trial at once with its own ``train_many``.
    * Loop path (any other method, or ``batched=False``): a replica of the method runs its own
      ``fit``, ``unlearn`` and ``retrain`` per trial. ``batched=True`` with a method that does
      not declare batched training raises :class:`InvalidInput`.

    ``progress(done, total)`` is called after each group of trials trained together (a multiple
    of the batched path's row block, :func:`progress_group`, so the grouping changes no bit of
    any trial), and after each trial on the loop path.

    ``first``: the index of the first trial, for a shard of a larger run (trials ``first ..
    first + n_trials − 1``). On the batched path it must be a multiple of the row block
    (:func:`progress_group` is one), so that each trial sits where it sits in the whole run and
    the shard's trials are bit for bit the whole run's.
    """
    seed, n_trials = require_integer("seed", seed, 0), require_integer("n_trials", n_trials, 1)
    first = require_integer("first", first, 0)
    sigma = _SIGMA.check("sigma", sigma)
    X, y = method.X_, method.y_
    if X is None or y is None:
        raise InvalidInput(
            "method",
            "a fitted method (call method.fit first: its data and step size are reused by every trial)",
            type(method).__name__,
        )
    can_batch = type(method).capabilities.batched_training
    if batched and not can_batch:
        raise InvalidInput("batched", f"False or None for {method.name}, which declares no batched training", batched)
    use_vmap = can_batch and batched is not False
    dtype = _dtype(X, method)
    if use_vmap and first % chunk_size(method.objective, X, ROW_BLOCK, chunk):
        block = chunk_size(method.objective, X, ROW_BLOCK, chunk)
        raise InvalidInput(
            "first",
            f"a multiple of {block}, the rows batched gradient descent computes together "
            "(a shard starting elsewhere would round its trials differently from the whole run)",
            first,
        )
    thetas0 = torch.stack(
        [
            init(trial_generator(seed, i, STREAM_INIT)).to(device=X.device, dtype=dtype)
            for i in range(first, first + n_trials)
        ]
    )
    group = progress_group(method.objective, X, chunk) if use_vmap else 1
    parts = []
    for start in range(0, n_trials, group):
        part = thetas0[start : start + group]
        parts.append(
            method.train_many(part, forget, chunk=chunk)
            if use_vmap
            else _loop(method, part, forget, seed, first + start)
        )
        if progress is not None:
            progress(start + part.shape[0], n_trials)
    worlds = Worlds(*(torch.cat(column) for column in zip(*parts)))
    return TrialSet(
        unlearned=_noisy_rows(worlds.unlearned, sigma, seed, STREAM_UNLEARNED, first),
        retrained=_noisy_rows(worlds.retrained, sigma, seed, STREAM_RETRAINED, first),
        original=_noisy_rows(worlds.original, sigma, seed, STREAM_ORIGINAL, first),
        mode="retrain",
        n_trials=n_trials,
        seed=seed,
        sigma=sigma,
        theta_unlearned=worlds.unlearned,
        theta_retrained=worlds.retrained,
        theta_original=worlds.original,
        initial=thetas0,
        path="vmap" if use_vmap else "loop",
    )


#: Trials trained together between two progress reports (rounded up to the row block).
PROGRESS_TRIALS = 64


def progress_group(objective, X: Tensor, chunk: int | None) -> int:
    """Trials per group of the batched path: :data:`PROGRESS_TRIALS` rounded up to a multiple of
    the rows that batched gradient descent computes together, so that a trial lands in the same
    position of the same block whether the trials are trained in groups or all at once."""
    block = chunk_size(objective, X, ROW_BLOCK, chunk)
    return block * -(-PROGRESS_TRIALS // block)


def _loop(method: Unlearner, thetas0: Tensor, forget: Tensor, seed: int, first: int) -> Worlds:
    """The three worlds of every trial from a replica's own fit, unlearn and retrain; row i is
    trial ``first + i`` (:meth:`~unlearners.base.Unlearner.seed_trial` tells the replica which)."""
    worker = method.replica()
    assert method.X_ is not None and method.y_ is not None  # the trials replay a fitted method
    rows = []
    for i, theta0 in enumerate(thetas0):
        worker.seed_trial(seed, first + i)
        if type(worker).capabilities.deletable_before_training:
            worker.declare_deletable(forget)
        rows.append((worker.fit(method.X_, method.y_, theta0), worker.unlearn(forget), worker.retrain(forget)))
    return Worlds(*(torch.stack(column) for column in zip(*rows)))


def _dtype(X: Tensor, method: Unlearner) -> torch.dtype:
    return X.dtype if X.is_floating_point() else torch.get_default_dtype()


def make_trials(
    mode: str,
    method: Unlearner,
    forget: Tensor,
    sigma: float,
    n_trials: int,
    seed: int,
    *,
    init: Callable[[torch.Generator], Tensor] | None = None,
    theta_unlearned: Tensor | None = None,
    theta_retrained: Tensor | None = None,
    theta_original: Tensor | None = None,
    batched: bool | None = None,
    chunk: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    first: int = 0,
) -> TrialSet:
    """Select the trial mode by name: ``"noise"`` or ``"retrain"`` (recorded in the TrialSet).

    In noise mode the noiseless parameters default to ``method.unlearn(forget)`` and
    ``method.retrain(forget)`` of the fitted method (the original to the unlearned one when
    not given); retrain mode needs ``init``. ``first`` makes the set a shard of a larger run:
    trials ``first .. first + n_trials − 1``, bit for bit those rows of the whole run (the
    groundwork of sharded and resumable trials).
    """
    if mode == "noise":
        u = method.unlearn(forget) if theta_unlearned is None else theta_unlearned
        r = method.retrain(forget) if theta_retrained is None else theta_retrained
        trials = noise_trials(u, r, sigma, n_trials, seed, theta_original, first=first)
        if progress is not None:  # noise draws of all trials take milliseconds: one report
            progress(n_trials, n_trials)
        return trials
    if mode == "retrain":
        if init is None:
            raise InvalidInput("init", "a callable init(generator) -> theta0 for retrain mode", init)
        return retrain_trials(
            method,
            forget,
            n_trials,
            seed,
            init=init,
            sigma=sigma,
            batched=batched,
            chunk=chunk,
            progress=progress,
            first=first,
        )
    if mode == "rerun":
        trials = rerun_trials(method, forget, n_trials, seed, first=first, batched=batched)
        if progress is not None:
            progress(n_trials, n_trials)
        return trials
    raise InvalidInput("mode", "one of " + ", ".join(repr(m) for m in MODES), mode)


def rerun_trials(
    method: Unlearner,
    forget: Tensor,
    n_trials: int,
    seed: int,
    *,
    first: int = 0,
    starts: tuple[Tensor, Tensor] | None = None,
    batched: bool | None = None,
) -> TrialSet:
    """N re-runs of a method whose release *is* a noisy run (noisy-ft; mode ``"rerun"``).

    The certificate of noisy fine-tuning is about the randomness of the whole noisy run from a
    given start: U's from A(D), the reference's from A(D \\ Z). So the two starts are fixed
    (:meth:`~unlearners.base.Unlearner.rerun_starts`; ``starts`` overrides them) and trial i
    re-runs the noisy phase and the noise-free steps from each, with the generators of streams 1
    (unlearned) and 2 (reference) of trial i (:func:`trial_generator`); nothing is added on output
    (σ = 0). The original world is A(D) itself, the positive control. Each trial is a pure function
    of (seed, i). ``batched`` (None: whenever the method can): each world's runs at once (path
    ``"vmap"``), the same runs up to the rounding of a batched gradient; False: one at a time.
    The method must be fitted and declare ``Capabilities.reruns``.
    """
    seed, n_trials = require_integer("seed", seed, 0), require_integer("n_trials", n_trials, 1)
    first = require_integer("first", first, 0)
    if not type(method).capabilities.reruns or method.X_ is None:
        raise InvalidInput(
            "method",
            "a fitted method whose release is a noisy run (Capabilities.reruns: noisy-ft)",
            type(method).__name__,
        )
    forget = method.forget_indices(forget)
    start_u, start_r = starts if starts is not None else method.rerun_starts(forget)
    worlds, paths = [], set()
    for start, stream in ((start_u, STREAM_UNLEARNED), (start_r, STREAM_RETRAINED)):
        rows, path = method.rerun(
            start, forget, [trial_generator(seed, i, stream) for i in range(first, first + n_trials)], batched=batched
        )
        worlds.append(rows)
        paths.add(path)
    unlearned, retrained = worlds
    original = start_u.expand(n_trials, -1).clone()
    return TrialSet(
        unlearned=unlearned,
        retrained=retrained,
        original=original,
        mode="rerun",
        n_trials=n_trials,
        seed=seed,
        sigma=0.0,
        theta_unlearned=unlearned,
        theta_retrained=retrained,
        theta_original=original,
        initial=torch.stack([start_u, start_r]),
        path=paths.pop(),
    )
