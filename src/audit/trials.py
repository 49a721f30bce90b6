"""Trials: N released models per world (unlearned, retrained), each a pure function of its seed.

An audit compares the distribution of the *unlearned* release U(A(D), D, Z) + ξ with that of
the *retrained* release A(D \\ Z) + ξ'. A trial is one draw from each world. Two modes:

* ``"noise"`` (:func:`noise_trials`): the method is deterministic given its seed, so the only
  randomness is the output noise; a trial is a fresh Gaussian draw around the same two
  noiseless parameter vectors.
* ``"retrain"`` (:func:`retrain_trials`): training is randomised through its initial point;
  a trial re-runs learning from a new θ_0^(i), unlearns, retrains, and adds fresh noise.

Seeds. Every trial is a pure function of ``(seed, trial index)``: its random streams are the
leaves of the :class:`numpy.random.SeedSequence` spawn tree
``SeedSequence(seed).spawn(N)[i].spawn(3)[s]`` (equivalently
``SeedSequence(seed, spawn_key=(i, s))``), with ``s = 0`` the initial point, ``s = 1`` the
noise of the unlearned world and ``s = 2`` the noise of the retrained world. The two worlds
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
from unlearners.base import Unlearner

MODES = ("noise", "retrain")

#: Leaf index of each random stream of a trial in the SeedSequence spawn tree.
STREAM_INIT, STREAM_UNLEARNED, STREAM_RETRAINED = 0, 1, 2

SEED_SCHEME = ("numpy SeedSequence(seed, spawn_key=(trial, stream)); stream 0 = initial point, "
               "1 = unlearned-world noise, 2 = retrained-world noise; each leaf seeds a CPU "
               "torch.Generator (64-bit seed from generate_state)")
_SIGMA = Real(ge=0)


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
    unlearned, retrained:
        Released parameter stacks (N, d): noiseless parameters plus fresh Gaussian noise.
    mode:
        ``"noise"`` (one noiseless model per world, N noise draws) or ``"retrain"`` (N trainings
        from N initial points, each with its own noise draw).
    n_trials, seed, sigma:
        N, the root seed, and the noise scale σ used.
    theta_unlearned, theta_retrained:
        The noiseless parameters: shape (d,) in noise mode, (N, d) in retrain mode.
    initial:
        The initial points θ_0^(i), (N, d), in retrain mode; None in noise mode.
    path:
        How the trials were computed: ``"noise"``, ``"vmap"`` (batched gradient descent) or
        ``"loop"`` (the method's own fit/unlearn/retrain, one trial at a time).
    """

    unlearned: Tensor
    retrained: Tensor
    mode: str
    n_trials: int
    seed: int
    sigma: float
    theta_unlearned: Tensor
    theta_retrained: Tensor
    initial: Tensor | None = None
    path: str = "noise"
    seed_scheme: str = field(default=SEED_SCHEME)

    def describe(self) -> dict:
        """The trial metadata for a report (no tensors)."""
        return {"mode": self.mode, "n_trials": self.n_trials, "seed": self.seed,
                "sigma": self.sigma, "path": self.path, "seed_scheme": self.seed_scheme,
                "dim": int(self.unlearned.shape[-1]), "device": str(self.unlearned.device),
                "dtype": str(self.unlearned.dtype).removeprefix("torch.")}


def noise_trials(theta_unlearned: Tensor, theta_retrained: Tensor, sigma: float, n_trials: int,
                 seed: int) -> TrialSet:
    """N independent noise draws around each world's noiseless parameters (mode ``"noise"``).

    Trial i of the unlearned world is ``Unlearner.release(θ_u, σ, g)`` with g the generator of
    stream 1 of trial i; the retrained world uses stream 2 (see the module docstring), so the
    worlds' noises are independent and each trial is a pure function of (seed, i).
    """
    seed, n_trials = require_integer("seed", seed, 0), require_integer("n_trials", n_trials, 1)
    sigma = _SIGMA.check("sigma", sigma)
    if theta_unlearned.shape != theta_retrained.shape or theta_unlearned.ndim != 1:
        raise InvalidInput("theta_unlearned/theta_retrained", "two parameter vectors of the same shape (d,)",
                           (tuple(theta_unlearned.shape), tuple(theta_retrained.shape)))
    u = theta_unlearned.unsqueeze(0).expand(n_trials, -1)
    r = theta_retrained.unsqueeze(0).expand(n_trials, -1)
    return TrialSet(
        unlearned=_noisy_rows(u, sigma, seed, STREAM_UNLEARNED),
        retrained=_noisy_rows(r, sigma, seed, STREAM_RETRAINED),
        mode="noise", n_trials=n_trials, seed=seed, sigma=sigma,
        theta_unlearned=theta_unlearned.clone(), theta_retrained=theta_retrained.clone(),
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
) -> TrialSet:
    """N trainings from fresh initial points, each unlearned, retrained and released (``"retrain"``).

    Trial i draws θ_0^(i) = ``init(g)`` with g the generator of stream 0 of trial i, moved to the
    device of the method's training data and cast to its dtype; runs learning on D from θ_0^(i),
    unlearning of ``forget``, and retraining on D \\ Z from θ_0^(i); then releases both with fresh
    noise of scale ``sigma`` (streams 1 and 2). Each trial is a pure function of (seed, i).

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
    if use_vmap:
        unlearned, retrained = method.train_many(thetas0, forget, chunk=chunk)
    else:
        worker = method.replica()
        rows_u, rows_r = [], []
        for theta0 in thetas0:
            if type(worker).capabilities.deletable_before_training:
                worker.declare_deletable(forget)
            worker.fit(X, y, theta0)
            rows_u.append(worker.unlearn(forget))
            rows_r.append(worker.retrain(forget))
        unlearned, retrained = torch.stack(rows_u), torch.stack(rows_r)
    return TrialSet(
        unlearned=_noisy_rows(unlearned, sigma, seed, STREAM_UNLEARNED),
        retrained=_noisy_rows(retrained, sigma, seed, STREAM_RETRAINED),
        mode="retrain", n_trials=n_trials, seed=seed, sigma=sigma,
        theta_unlearned=unlearned, theta_retrained=retrained, initial=thetas0,
        path="vmap" if use_vmap else "loop",
    )


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
    batched: bool | None = None,
    chunk: int | None = None,
) -> TrialSet:
    """Select the trial mode by name: ``"noise"`` or ``"retrain"`` (recorded in the TrialSet).

    In noise mode the noiseless parameters default to ``method.unlearn(forget)`` and
    ``method.retrain(forget)`` of the fitted method; retrain mode needs ``init``.
    """
    if mode == "noise":
        u = method.unlearn(forget) if theta_unlearned is None else theta_unlearned
        r = method.retrain(forget) if theta_retrained is None else theta_retrained
        return noise_trials(u, r, sigma, n_trials, seed)
    if mode == "retrain":
        if init is None:
            raise InvalidInput("init", "a callable init(generator) -> theta0 for retrain mode", init)
        return retrain_trials(method, forget, n_trials, seed, init=init, sigma=sigma,
                              batched=batched, chunk=chunk)
    raise InvalidInput("mode", "one of " + ", ".join(repr(m) for m in MODES), mode)
