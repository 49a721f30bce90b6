"""Trials: N released models per world (unlearned, retrained), batched with ``torch.func.vmap``.

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

Batching. Parameter stacks have shape (N, d). Training and evaluation vmap the functional core
(:class:`unlearners.objective.Objective`) over the stack, chunked over models to bound memory
(and, on CPU, to keep activations in cache: see :data:`CHUNK_ELEMENTS`);
every function follows the device and dtype of the tensors it is given.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import Tensor, nn
from torch.func import vmap

from certify.errors import InvalidInput
from unlearners.base import Unlearner
from unlearners.objective import Objective
from unlearners.r2d import RewindToDelete
from unlearners.retrain import Retrain

MODES = ("noise", "retrain")

#: Leaf index of each random stream of a trial in the SeedSequence spawn tree.
STREAM_INIT, STREAM_UNLEARNED, STREAM_RETRAINED = 0, 1, 2

#: Default size of one vmapped chunk, in elements of its widest activation (models × records ×
#: widest layer). On CPU a chunk whose activations stay in cache is faster than one huge call
#: (measured on 2 cores, 64 MLPs 20-32-1 on 2,000 records: 16 models per call, ~1M elements,
#: ran a GD step ~1.5× faster than all 64 at once); on accelerators larger calls are better,
#: and the budget only bounds memory (2**26 float32 elements = 256 MiB per activation).
CHUNK_ELEMENTS = {"cpu": 2**20, "other": 2**26}

SEED_SCHEME = ("numpy SeedSequence(seed, spawn_key=(trial, stream)); stream 0 = initial point, "
               "1 = unlearned-world noise, 2 = retrained-world noise; each leaf seeds a CPU "
               "torch.Generator (64-bit seed from generate_state)")


# -- seeds -----------------------------------------------------------------------------
def trial_generator(seed: int, trial: int, stream: int) -> torch.Generator:
    """The CPU generator of one random stream of one trial (a pure function of its arguments)."""
    state = np.random.SeedSequence(int(seed), spawn_key=(int(trial), int(stream))).generate_state(
        1, dtype=np.uint64)
    return torch.Generator().manual_seed(int(state[0]))


def _check_seed(seed: int) -> int:
    if isinstance(seed, bool) or int(seed) != seed or seed < 0:
        raise InvalidInput("seed", "an integer >= 0", seed)
    return int(seed)


def _check_trials(n_trials: int) -> int:
    if isinstance(n_trials, bool) or int(n_trials) != n_trials or n_trials < 1:
        raise InvalidInput("n_trials", "an integer >= 1", n_trials)
    return int(n_trials)


def _check_sigma(sigma: float) -> float:
    s = float(sigma)
    if not (s >= 0 and s < float("inf")):
        raise InvalidInput("sigma", "a finite number >= 0 (the certificate's noise scale)", sigma)
    return s


# -- batched training --------------------------------------------------------------------
def batched_gradient_descent(
    objective: Objective,
    thetas0: Tensor,
    X: Tensor,
    y: Tensor,
    *,
    eta: float,
    steps: int,
    keep: Iterable[int] = (),
    chunk: int | None = None,
) -> tuple[Tensor, dict[int, Tensor]]:
    """Full-batch gradient descent on every row of a stack (N, d) of parameter vectors at once.

    Row i follows exactly :func:`unlearners.training.gradient_descent` from ``thetas0[i]``
    (θ_t = θ_{t−1} − η ∇f_D(θ_{t−1})), with the gradients of all rows computed by one
    ``vmap`` of :meth:`Objective.grad` per step (``chunk`` rows at a time).

    Returns ``(θ_T, {t: θ_t})`` with stacks of shape (N, d) for every requested t ∈ [0, T].
    """
    if thetas0.ndim != 2:
        raise InvalidInput("thetas0", "a stack of parameter vectors of shape (N, d)", tuple(thetas0.shape))
    size = chunk_size(objective, X, thetas0.shape[0], chunk)
    grads = vmap(objective.grad, in_dims=(0, None, None))
    wanted = set(int(t) for t in keep)
    thetas = thetas0.clone()
    kept: dict[int, Tensor] = {0: thetas.clone()} if 0 in wanted else {}
    for t in range(1, int(steps) + 1):
        if size >= thetas.shape[0]:
            g = grads(thetas, X, y)
        else:
            g = torch.cat([grads(part, X, y) for part in thetas.split(size)])
        thetas = thetas - eta * g
        if t in wanted:
            kept[t] = thetas.clone()
    return thetas, kept


# -- batched evaluation ------------------------------------------------------------------
def batched_logits(objective: Objective, thetas: Tensor, X: Tensor, *, chunk: int | None = None) -> Tensor:
    """Outputs of N models on n records: shape (N, n) for a binary model, (N, n, C) otherwise."""
    return _evaluate(objective.logits, objective, thetas, (X,), chunk)


def batched_per_sample_loss(objective: Objective, thetas: Tensor, X: Tensor, y: Tensor, *,
                            chunk: int | None = None) -> Tensor:
    """f_z(θ_i) of N models on n records: shape (N, n)."""
    return _evaluate(objective.per_sample_loss, objective, thetas, (X, y), chunk)


def batched_loss(objective: Objective, thetas: Tensor, X: Tensor, y: Tensor, *,
                 chunk: int | None = None) -> Tensor:
    """f_D(θ_i), the mean loss of each of N models: shape (N,)."""
    return _evaluate(objective.loss, objective, thetas, (X, y), chunk)


def batched_accuracy(objective: Objective, thetas: Tensor, X: Tensor, y: Tensor, *,
                     chunk: int | None = None) -> Tensor:
    """Accuracy of each of N models: shape (N,), in the dtype of ``thetas``."""
    return _evaluate(objective.accuracy, objective, thetas, (X, y), chunk)


def _evaluate(fn: Callable, objective: Objective, thetas: Tensor, data: tuple, chunk: int | None) -> Tensor:
    if thetas.ndim != 2:
        raise InvalidInput("thetas", "a stack of parameter vectors of shape (N, d)", tuple(thetas.shape))
    batched = vmap(fn, in_dims=(0,) + (None,) * len(data))
    size = chunk_size(objective, data[0], thetas.shape[0], chunk)
    if size >= thetas.shape[0]:
        return batched(thetas, *data)
    return torch.cat([batched(part, *data) for part in thetas.split(size)])


def chunk_size(objective: Objective, X: Tensor, n_models: int, chunk: int | None = None) -> int:
    """Models per vmapped call: ``chunk`` if given, else what keeps one activation within
    :data:`CHUNK_ELEMENTS` for the device of ``X``."""
    if chunk is not None:
        if isinstance(chunk, bool) or int(chunk) != chunk or chunk < 1:
            raise InvalidInput("chunk", "an integer >= 1 (models per vmapped call), or None", chunk)
        return int(chunk)
    widths = [w for m in objective.model.modules() if isinstance(m, nn.Linear)
              for w in (m.in_features, m.out_features)]
    per_model = max(1, int(X.shape[0]) * max(widths, default=1))
    budget = CHUNK_ELEMENTS["cpu" if X.device.type == "cpu" else "other"]
    return max(1, min(max(1, n_models), budget // per_model))


# -- noise -------------------------------------------------------------------------------
def noise_draws(theta: Tensor, sigma: float, n: int, generator: torch.Generator) -> Tensor:
    """n releases θ + σξ_i, ξ_i ~ N(0, I_d) i.i.d.: shape (n, d).

    The noise is drawn on the CPU from ``generator`` in θ's dtype and then moved to θ's device,
    so ``noise_draws(θ, σ, 1, g)[0]`` equals ``Unlearner.release(θ, σ, g)``. σ = 0 returns n
    copies of θ without touching the generator.
    """
    sigma = _check_sigma(sigma)
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
    seed, n_trials, sigma = _check_seed(seed), _check_trials(n_trials), _check_sigma(sigma)
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


def gradient_descent_kind(method: Unlearner) -> str | None:
    """``"r2d"`` or ``"retrain"`` when :func:`retrain_trials` can batch the method, else None.

    Batching re-implements the method's fit/unlearn/retrain with batched gradient descent, so
    it is used only for R2D and Retrain (and subclasses that keep their fit, unlearn and retrain)
    with the attributes the batched path reads (``steps``, ``eta_``, and ``rewind`` for R2D);
    any other method, including a subclass that overrides one of the three, runs the loop.
    """
    cls = type(method)
    for base, kind in ((RewindToDelete, "r2d"), (Retrain, "retrain")):
        if isinstance(method, base) and all(getattr(cls, n) is getattr(base, n)
                                            for n in ("fit", "unlearn", "retrain")):
            needed = ("steps", "eta_", "rewind") if kind == "r2d" else ("steps", "eta_")
            if all(hasattr(method, a) for a in needed):
                return kind
    return None


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
    device of the method's training data and cast to the dtype of its fitted θ_0; runs learning on D from θ_0^(i), unlearning
    of ``forget``, and retraining on D \\ Z from θ_0^(i); then releases both with fresh noise of
    scale ``sigma`` (streams 1 and 2). Each trial is a pure function of (seed, i).

    The method must have been fitted once (the audit's own run): its data ``X_, y_`` and its
    step size ``eta_`` are reused by every trial, so that every trial runs the algorithm the
    certificate (and ``sigma``) was computed for.

    * Batched path (``batched=None`` or True; R2D and Retrain, see :func:`gradient_descent_kind`):
      for R2D, T − K steps on D (only θ_{T−K} is needed), then K steps on D'; and T steps on D'
      from θ_0 for the retrain world; all trials at once with :func:`batched_gradient_descent`.
      For Retrain, unlearning *is* retraining: T steps on D' (computed once, used for both).
    * Loop path (any other method, or ``batched=False``): a deep copy of the method runs its own
      ``fit(X_, y_, θ_0^(i))``, ``unlearn(forget)`` and ``retrain(forget)`` per trial; when the
      method has an ``eta`` attribute it is pinned to the fitted ``eta_``. ``batched=True`` with
      a method that cannot be batched raises :class:`InvalidInput`.
    """
    seed, n_trials, sigma = _check_seed(seed), _check_trials(n_trials), _check_sigma(sigma)
    X, y = method.X_, method.y_
    if X is None or y is None:
        raise InvalidInput("method", "a fitted method (call method.fit first: its data and step size "
                           "are reused by every trial)", type(method).__name__)
    kind = gradient_descent_kind(method)
    if batched and kind is None:
        raise InvalidInput("batched", "False or None for a method that is not R2D or Retrain "
                           "(only those are batched)", batched)
    use_vmap = kind is not None and batched is not False
    dtype = _dtype(X, method)
    thetas0 = torch.stack([init(trial_generator(seed, i, STREAM_INIT)).to(device=X.device, dtype=dtype)
                           for i in range(n_trials)])
    if use_vmap:
        obj, eta, T = method.objective, float(method.eta_), int(method.steps)
        X_r, y_r = method.retained(forget)
        retrained, _ = batched_gradient_descent(obj, thetas0, X_r, y_r, eta=eta, steps=T, chunk=chunk)
        if kind == "r2d":
            K = int(method.rewind)
            _, kept = batched_gradient_descent(obj, thetas0, X, y, eta=eta, steps=T - K, keep={T - K},
                                               chunk=chunk)
            unlearned, _ = batched_gradient_descent(obj, kept[T - K], X_r, y_r, eta=eta, steps=K, chunk=chunk)
        else:
            unlearned = retrained.clone()
    else:
        worker = copy.deepcopy(method)
        if hasattr(worker, "eta") and getattr(method, "eta_", None) is not None:
            worker.eta = float(method.eta_)
        rows_u, rows_r = [], []
        for theta0 in thetas0:
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
    theta0 = getattr(method, "theta0_", None)
    if isinstance(theta0, Tensor):
        return theta0.dtype
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
