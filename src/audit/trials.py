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

Seeds. Every trial is a pure function of ``(seed, trial index)``: its random streams are the
leaves of the :class:`numpy.random.SeedSequence` spawn tree
``SeedSequence(seed).spawn(N)[i].spawn(4)[s]`` (equivalently
``SeedSequence(seed, spawn_key=(i, s))``), with ``s = 0`` the initial point, ``s = 1`` the
noise of the unlearned world, ``s = 2`` the noise of the retrained world and ``s = 3`` the
noise of the original model (the positive control). The seed itself is a pure function of
(root seed, role): the audit's trials and its shadow models are two roles of the same game,
never one shared stream. The worlds
therefore never share a stream, trial i does not depend on N (the first N trials of a larger
run are exactly the smaller run, so trials can be sharded or resumed), and each leaf seeds its
own CPU ``torch.Generator``: noise is drawn on the CPU and then moved, so a seed gives the same
numbers on CPU and CUDA (up to the device's arithmetic in training).

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

MODES = ("noise", "retrain")
#: What ``trial_mode`` accepts: a mode, or ``"auto"`` (:func:`choose_mode`).
MODE_CHOICES = ("auto", *MODES)

#: Leaf index of each random stream of a trial in the SeedSequence spawn tree.
STREAM_INIT, STREAM_UNLEARNED, STREAM_RETRAINED, STREAM_ORIGINAL = 0, 1, 2, 3

SEED_SCHEME = ("numpy SeedSequence(seed, spawn_key=(trial, stream)) with seed a pure function of "
               "(root seed, role); stream 0 = initial point, 1 = unlearned-world noise, "
               "2 = retrained-world noise, 3 = original-model noise; each leaf seeds a CPU "
               "torch.Generator (64-bit seed from generate_state)")
_SIGMA = Real(ge=0)


# -- mode -------------------------------------------------------------------------------
def choose_mode(requested: str, sigma: float, kind: str) -> tuple[str, str]:
    """The trial mode and why: ``requested`` unless it is ``"auto"``.

    ``kind`` is the certificate's kind (``"output-noise"``, ``"training-noise"``, ``"exact"``,
    ``"none"``, ...). Auto: noise mode when the release draws output noise (σ > 0) outside
    training; otherwise retrain mode, the randomness an adversary faces when the released model
    is a deterministic function of its training randomness."""
    if requested not in MODE_CHOICES:
        raise InvalidInput("trial_mode", "one of " + ", ".join(MODE_CHOICES), requested)
    if requested != "auto":
        return requested, f"{requested} mode, as configured (trial_mode = {requested!r})"
    if kind == "training-noise":
        return "retrain", ("retrain mode: the guarantee's noise is inside training, so every trial redraws the "
                           "training randomness (its initial point) in both worlds")
    if not sigma > 0:
        return "retrain", ("retrain mode: the release adds no output noise (sigma = 0), so a released model is a "
                           "deterministic function of its training randomness, which every trial redraws in both "
                           "worlds (noise draws would be identical copies)")
    return "noise", (f"noise mode: the release adds Gaussian output noise (sigma = {sigma:.4g}), the randomness the "
                     "certificate rests on, so every trial is a fresh noise draw around each world's model")


# -- seeds -----------------------------------------------------------------------------
def trial_generator(seed: int, trial: int, stream: int) -> torch.Generator:
    """The CPU generator of one random stream of one trial (a pure function of its arguments)."""
    state = np.random.SeedSequence(int(seed), spawn_key=(int(trial), int(stream))).generate_state(
        1, dtype=np.uint64)
    return torch.Generator().manual_seed(int(state[0]))


# -- noise -------------------------------------------------------------------------------
def noise_draws(theta: Tensor, sigma: float, n: int, generator: torch.Generator) -> Tensor:
    """n releases θ + σξ_i, ξ_i ~ N(0, I_d) i.i.d.: shape (n, d).

    The noise is drawn on the CPU from ``generator`` in θ's dtype and then moved to θ's device,
    so ``noise_draws(θ, σ, 1, g)[0]`` equals ``Unlearner.release(θ, σ, g)``. σ = 0 returns n
    copies of θ without touching the generator.
    """
    sigma = _SIGMA.check("sigma", sigma)
    if sigma == 0:
        return theta.unsqueeze(0).expand(int(n), -1).clone()
    noise = torch.randn((int(n), theta.shape[-1]), generator=generator, dtype=theta.dtype, device="cpu")
    return theta.unsqueeze(0) + sigma * noise.to(theta.device)


def _noisy_rows(thetas: Tensor, sigma: float, seed: int, stream: int) -> Tensor:
    """Row i of (N, d) plus noise from the trial-i generator of ``stream``."""
    return torch.stack([noise_draws(row, sigma, 1, trial_generator(seed, i, stream))[0]
                        for i, row in enumerate(thetas)])


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

    def describe(self) -> dict:
        """The trial metadata for a report (no tensors)."""
        return {"mode": self.mode, "n_trials": self.n_trials, "seed": self.seed,
                "sigma": self.sigma, "path": self.path, "seed_scheme": self.seed_scheme,
                "dim": int(self.unlearned.shape[-1]), "device": str(self.unlearned.device),
                "dtype": str(self.unlearned.dtype).removeprefix("torch."),
                "spread_unlearned": _spread(self.unlearned), "spread_retrained": _spread(self.retrained)}

    def degenerate(self) -> str | None:
        """Why these trials cannot be attacked meaningfully, or None: every released model of a
        world is the same vector (σ = 0 noise draws, or a training that ignores its randomness),
        so the attacks would compare two fixed points and any difference would hit the ceiling."""
        if self.n_trials > 1 and _all_equal(self.unlearned) and _all_equal(self.retrained):
            return (f"all {self.n_trials} released models of each world are identical ({self.mode} mode, "
                    f"sigma = {self.sigma:.4g}): nothing random separates the trials, so an attack would only "
                    "compare two fixed parameter vectors")
        return None


def _all_equal(stack: Tensor) -> bool:
    """Every row of (N, d) is bit for bit the first (exact: a mean of copies may round)."""
    return bool((stack == stack[:1]).all())


def _spread(stack: Tensor) -> float:
    """Root-mean-square distance of the rows of (N, d) from their mean (0 for identical copies)."""
    centred = stack - stack.mean(dim=0, keepdim=True)
    return float(centred.pow(2).sum(dim=1).mean().sqrt())


def noise_trials(theta_unlearned: Tensor, theta_retrained: Tensor, sigma: float, n_trials: int,
                 seed: int, theta_original: Tensor | None = None) -> TrialSet:
    """N independent noise draws around each world's noiseless parameters (mode ``"noise"``).

    Trial i of the unlearned world is ``Unlearner.release(θ_u, σ, g)`` with g the generator of
    stream 1 of trial i; the retrained world uses stream 2 and the original model (the
    positive control; θ_u when not given) stream 3 (see the module docstring), so the worlds'
    noises are independent and each trial is a pure function of (seed, i).
    """
    seed, n_trials = require_integer("seed", seed, 0), require_integer("n_trials", n_trials, 1)
    sigma = _SIGMA.check("sigma", sigma)
    theta_original = theta_unlearned if theta_original is None else theta_original
    if not (theta_unlearned.shape == theta_retrained.shape == theta_original.shape) or theta_unlearned.ndim != 1:
        raise InvalidInput("theta_unlearned/theta_retrained", "two parameter vectors of the same shape (d,)",
                           (tuple(theta_unlearned.shape), tuple(theta_retrained.shape)))
    rows = {name: theta.unsqueeze(0).expand(n_trials, -1)
            for name, theta in (("u", theta_unlearned), ("r", theta_retrained), ("o", theta_original))}
    return TrialSet(
        unlearned=_noisy_rows(rows["u"], sigma, seed, STREAM_UNLEARNED),
        retrained=_noisy_rows(rows["r"], sigma, seed, STREAM_RETRAINED),
        original=_noisy_rows(rows["o"], sigma, seed, STREAM_ORIGINAL),
        mode="noise", n_trials=n_trials, seed=seed, sigma=sigma,
        theta_unlearned=theta_unlearned.clone(), theta_retrained=theta_retrained.clone(),
        theta_original=theta_original.clone(), path="noise",
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
) -> TrialSet:
    """N trainings from fresh initial points, each unlearned, retrained and released (``"retrain"``).

    Trial i draws θ_0^(i) = ``init(g)`` with g the generator of stream 0 of trial i, moved to the
    device of the method's training data and cast to its dtype; runs learning on D from θ_0^(i),
    unlearning of ``forget``, and retraining on D \\ Z from θ_0^(i); then releases the three
    models with fresh noise of scale ``sigma`` (streams 1, 2, 3). Each trial is a pure function
    of (seed, i).

    The method must have been fitted once (the audit's own run): its data and the options it
    chose while fitting (:meth:`~unlearners.base.Unlearner.pinned_options`, e.g. a step size)
    are reused by every trial, so that every trial runs the algorithm the certificate (and
    ``sigma``) was computed for.

    * Batched path (``batched=None`` or True): a method that declares ``batched_training``
      trains every trial at once with its own ``train_many``.
    * Loop path (any other method, or ``batched=False``): a replica of the method runs its own
      ``fit``, ``unlearn`` and ``retrain`` per trial. ``batched=True`` with a method that does
      not declare batched training raises :class:`InvalidInput`.
    """
    seed, n_trials = require_integer("seed", seed, 0), require_integer("n_trials", n_trials, 1)
    sigma = _SIGMA.check("sigma", sigma)
    X, y = method.X_, method.y_
    if X is None or y is None:
        raise InvalidInput("method", "a fitted method (call method.fit first: its data and step size "
                           "are reused by every trial)", type(method).__name__)
    can_batch = type(method).capabilities.batched_training
    if batched and not can_batch:
        raise InvalidInput("batched", f"False or None for {method.name}, which declares no batched training",
                           batched)
    use_vmap = can_batch and batched is not False
    dtype = _dtype(X, method)
    thetas0 = torch.stack([init(trial_generator(seed, i, STREAM_INIT)).to(device=X.device, dtype=dtype)
                           for i in range(n_trials)])
    worlds = method.train_many(thetas0, forget, chunk=chunk) if use_vmap else _loop(method, thetas0, forget)
    return TrialSet(
        unlearned=_noisy_rows(worlds.unlearned, sigma, seed, STREAM_UNLEARNED),
        retrained=_noisy_rows(worlds.retrained, sigma, seed, STREAM_RETRAINED),
        original=_noisy_rows(worlds.original, sigma, seed, STREAM_ORIGINAL),
        mode="retrain", n_trials=n_trials, seed=seed, sigma=sigma,
        theta_unlearned=worlds.unlearned, theta_retrained=worlds.retrained, theta_original=worlds.original,
        initial=thetas0, path="vmap" if use_vmap else "loop",
    )


def _loop(method: Unlearner, thetas0: Tensor, forget: Tensor) -> Worlds:
    """The three worlds of every trial from a replica's own fit, unlearn and retrain."""
    worker = method.replica()
    rows = []
    for theta0 in thetas0:
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
) -> TrialSet:
    """Select the trial mode by name: ``"noise"`` or ``"retrain"`` (recorded in the TrialSet).

    In noise mode the noiseless parameters default to ``method.unlearn(forget)`` and
    ``method.retrain(forget)`` of the fitted method (the original to the unlearned one when
    not given); retrain mode needs ``init``.
    """
    if mode == "noise":
        u = method.unlearn(forget) if theta_unlearned is None else theta_unlearned
        r = method.retrain(forget) if theta_retrained is None else theta_retrained
        return noise_trials(u, r, sigma, n_trials, seed, theta_original)
    if mode == "retrain":
        if init is None:
            raise InvalidInput("init", "a callable init(generator) -> theta0 for retrain mode", init)
        return retrain_trials(method, forget, n_trials, seed, init=init, sigma=sigma,
                              batched=batched, chunk=chunk)
    raise InvalidInput("mode", "one of " + ", ".join(repr(m) for m in MODES), mode)
