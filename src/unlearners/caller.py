"""The caller's own training and unlearning code, audited as an uncertified method.

A deletion pipeline trains its network its own way (Adam, mini-batches, augmentation, BatchNorm,
dropout) and unlearns with a routine its team wrote. :class:`CallerMethod` turns the two
functions into the learning/unlearning pair (A, U) that every audit measures:

* ``train(model, dataset, generator) -> model``: A. ``dataset`` is a
  ``torch.utils.data.TensorDataset`` of the records (X, y); the model arrives in train mode,
  holding θ_0 (fresh parameters and fresh BatchNorm statistics), on the audit's device and in its
  dtype. Called on D for the original world and on D \\ Z for the retrained world.
* ``unlearn(model, forget, retain, generator) -> model``: U, called on a copy of the model
  ``train`` returned on D, with ``forget`` = Z and ``retain`` = D \\ Z as TensorDatasets.

Both may train in place and return the same module. What they return is read back as θ: the
parameters and the floating-point buffers (BatchNorm's running statistics, the
``Objective(with_buffers=True)`` layout), and the model is then scored in eval mode (dropout off,
BatchNorm on its running statistics), as it is served.

Seeds. Every call is a pure function of (seed, trial, call): ``seed`` is the role's seed (the
audit's own run, its trials, its shadow models), ``trial`` the trial index (0 for the audit's own
run) and ``call`` one of :data:`CALLS`. The call's seed is
``SeedSequence(seed, spawn_key=(trial, STREAM_TRAINING, call)).generate_state(1, uint64)``
(:func:`call_seed`). It seeds the ``torch.Generator`` the function receives (CPU), *and*, for the
duration of the call, torch's global generator (CPU and CUDA), numpy's global generator and
Python's ``random`` (all restored afterwards): dropout and most augmentations draw from the
global generator, so this is what makes a training a pure function of its seed. The caller's
own ``DataLoader`` should take the generator (``DataLoader(dataset, shuffle=True,
generator=generator)``); a loader with worker processes must also seed its workers from it.

Trials (retrain mode, :func:`audit.trials.retrain_trials`) run one at a time through the loop
path (``fit``/``unlearn``/``retrain`` of a replica); before each trial the loop calls
:meth:`~unlearners.base.Unlearner.seed_trial` with the role seed and the trial index, which this
method keeps and every built-in method ignores. No ``batched_training`` is declared: the
caller's functions cannot be vmapped; ``trials_one_per_task`` makes each trial its own shard on the
executor, and :meth:`CallerMethod.code_identity` puts the functions' source in a resumable run's key.

The production model. :func:`load_original` reads the model the pipeline already trained (a
module or a state dict) and :meth:`CallerMethod.adopt` makes it A(D): ``unlearn`` then runs on a
copy of it, while ``retrain`` stays a fresh training from the audit's θ_0 (the production model's
own θ_0 is unknown). :meth:`CallerMethod.reproducibility` is the determinism check: ``train``
twice on a small subset with one seed, compared bit for bit.

:func:`challenge` adapts the NeurIPS 2023 machine-unlearning challenge's signature
``unlearning(net, retain_loader, forget_loader, val_loader)`` to an ``unlearn`` function.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import os
import random
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn
from torch.utils.data import DataLoader, TensorDataset

from certify.certificate import Certificate, issue
from certify.errors import InvalidInput
from unlearners.base import Precision, Unlearner
from unlearners.objective import Objective, reinitialise

TrainFn = Callable[[nn.Module, TensorDataset, torch.Generator], nn.Module]
UnlearnFn = Callable[[nn.Module, TensorDataset, TensorDataset, torch.Generator], nn.Module]

#: The random stream of the caller's code in a trial (streams 0-3 are :mod:`audit.trials`').
STREAM_TRAINING = 4
#: The calls of one run, in the order of their spawn key.
CALLS = ("train", "unlearn", "retrain")
#: Records of the determinism check (two trainings with one seed, before the trials).
REPRODUCIBILITY_RECORDS = 64


def call_seed(seed: int, trial: int, call: str) -> int:
    """The seed of one call of the caller's code (see the module docstring)."""
    state = np.random.SeedSequence(int(seed), spawn_key=(int(trial), STREAM_TRAINING, CALLS.index(call)))
    return int(state.generate_state(1, dtype=np.uint64)[0] >> 1)


@contextmanager
def seeded(seed: int):
    """Every global generator the caller's code may read, seeded with ``seed`` and restored on exit;
    yields the CPU ``torch.Generator`` the function receives."""
    py_state, np_state = random.getstate(), np.random.get_state()
    devices = list(range(torch.cuda.device_count())) if torch.cuda.is_available() else []
    try:
        with torch.random.fork_rng(devices=devices):
            torch.manual_seed(seed)  # CPU and every CUDA device
            random.seed(seed)
            np.random.seed(seed % 2**32)
            yield torch.Generator().manual_seed(seed)
    finally:
        random.setstate(py_state)
        np.random.set_state(np_state)


def qualified_name(fn: Any) -> str:
    """``module.qualname`` of a function (what the report records)."""
    target = fn.func if hasattr(fn, "func") and callable(fn.func) else fn
    module = getattr(target, "__module__", None) or "?"
    return f"{module}.{getattr(target, '__qualname__', type(target).__name__)}"


def code_digest(fn: Any) -> str:
    """A digest of the source files that define ``fn`` and the functions it wraps (a
    ``functools.partial``'s function, a closure's functions: :func:`challenge`'s submission), so
    that an edited function (or a helper edited in its file) gives another digest. Code without a
    file (a notebook cell, ``exec``) is digested by its bytecode and constants. Helpers imported
    from other files are not followed."""
    digest, files, seen = hashlib.sha256(), set(), set()

    def visit(f: Any) -> None:
        if id(f) in seen:
            return
        seen.add(id(f))
        if isinstance(f, functools.partial):
            visit(f.func)
            return
        code = getattr(f, "__code__", None) or getattr(getattr(type(f), "__call__", None), "__code__", None)  # noqa: B004
        if code is None:
            return
        if os.path.isfile(code.co_filename):
            files.add(code.co_filename)
        else:
            digest.update(code.co_code + repr(code.co_consts).encode())
        for cell in getattr(f, "__closure__", None) or ():
            try:
                visit(cell.cell_contents)
            except ValueError:  # an empty cell
                continue

    visit(fn)
    for name in sorted(files):
        with open(name, "rb") as handle:
            digest.update(handle.read())
    return digest.hexdigest()


class CallerMethod(Unlearner):
    """The caller's ``train`` and ``unlearn`` functions as an uncertified method (kind ``none``).

    Parameters
    ----------
    objective:
        Built with ``with_buffers=True`` (θ holds BatchNorm's running statistics).
    train, unlearn:
        The caller's functions (module docstring).
    seed:
        The role seed of the audit's own run; trials replace it (:meth:`seed_trial`).
    """

    name = "caller"
    title = "The caller's own training and unlearning code (uncertified)"
    paper = "none: the caller's code, audited empirically"
    certified = False
    precision = Precision(
        False,
        "no theorem (kind none); float64 kept because the audit cannot know what the "
        "caller's own training code assumes",
    )
    trials_one_per_task = True
    assumptions = (
        "none for privacy: the caller's code has no theorem; closeness to retraining with the same "
        "training code is measured empirically",
    )

    def __init__(self, objective: Objective, *, train: TrainFn, unlearn: UnlearnFn, seed: int = 0):
        for field, fn in (("train", train), ("unlearn", unlearn)):
            if not callable(fn):
                raise InvalidInput(field, "a function (see unlearners.caller)", type(fn).__name__)
        super().__init__(objective)
        self.train_fn, self.unlearn_fn = train, unlearn
        self.seed, self.trial = int(seed), 0
        self.module_: nn.Module | None = None
        self.theta0_: Tensor | None = None

    def replica(self, **overrides: Any) -> CallerMethod:
        if overrides:
            raise InvalidInput("method_options", "none for the caller's code", sorted(overrides))
        return CallerMethod(self.objective, train=self.train_fn, unlearn=self.unlearn_fn, seed=self.seed)

    def seed_trial(self, seed: int, trial: int) -> None:
        self.seed, self.trial = int(seed), int(trial)

    def adopt(self, trained: nn.Module, X: Tensor, y: Tensor, theta0: Tensor) -> Tensor:
        """The production model as A(D), instead of a training: what :meth:`fit` would set, with
        ``trained`` (:func:`load_original`) as the model ``unlearn`` receives a copy of. ``theta0``
        is only the retrained reference's initial point (the production model's own is unknown:
        the reference is a fresh training)."""
        self.X_, self.y_, self.theta0_ = X, y, theta0
        self.module_ = trained
        return self._theta(trained)

    def reproducibility(
        self, X: Tensor, y: Tensor, theta0: Tensor, records: int = REPRODUCIBILITY_RECORDS
    ) -> dict[str, Any]:
        """``train`` twice on the first ``min(records, n)`` records with one seed (the audit's own
        run's ``train`` call seed) and θ_0: whether the two θ are bit for bit equal. Exact equality:
        a trial is a pure function of its seed or it is not; the largest difference says by how
        much (a CUDA kernel's last bits, or another draw altogether)."""
        k = min(int(records), int(X.shape[0]))
        first, second = (self._theta(self._train("train", X[:k], y[:k], theta0)) for _ in range(2))
        return {
            "records": k,
            "seed": call_seed(self.seed, self.trial, "train"),
            "equal": bool(torch.equal(first, second)),
            "max_abs_difference": float((first - second).abs().max()) if first.numel() else 0.0,
        }

    # -- the algorithm pair --------------------------------------------------------------
    def _fit(self, X: Tensor, y: Tensor, theta0: Tensor) -> Tensor:
        self.theta0_ = theta0
        self.module_ = self._train("train", X, y, theta0)
        return self._theta(self.module_)

    def _unlearn(self, forget: Tensor) -> Tensor:
        if self.module_ is None:
            raise RuntimeError("CallerMethod.fit must be called before unlearning")
        keep_X, keep_y = self.retained(forget)
        X, y = self.fitted_data()
        model = copy.deepcopy(self.module_).train()
        with seeded(call_seed(self.seed, self.trial, "unlearn")) as generator:
            out = self.unlearn_fn(model, TensorDataset(X[forget], y[forget]), TensorDataset(keep_X, keep_y), generator)
        return self._theta(self._returned("unlearn", out))

    def _retrain(self, forget: Tensor) -> Tensor:
        X_r, y_r = self.retained(forget)
        assert self.theta0_ is not None, "fit and adopt set theta0_ with the data retained() read"
        return self._theta(self._train("retrain", X_r, y_r, self.theta0_))

    def _certify(self, forget: Tensor, epsilon: float, delta: float, mechanism: str) -> Certificate:
        """Never issued: kind ``none``, as for every method without a theorem."""
        return issue(
            self.name,
            "none",
            epsilon=epsilon,
            delta=delta,
            mechanism=mechanism,
            theorem="none: the caller's training and unlearning code has no certified-removal or "
            "differential-privacy theorem",
            assumptions=self.assumptions,
        )

    def report_hyperparameters(self) -> dict[str, Any]:
        return {"train": qualified_name(self.train_fn), "unlearn": qualified_name(self.unlearn_fn)}

    def code_identity(self) -> tuple[str, ...]:
        """The functions' qualified names and :func:`code_digest`: a resumed run never reuses the
        trials of edited code."""
        return tuple(f"{qualified_name(fn)}:{code_digest(fn)}" for fn in (self.train_fn, self.unlearn_fn))

    # -- helpers ----------------------------------------------------------------------------
    def _train(self, call: str, X: Tensor, y: Tensor, theta0: Tensor) -> nn.Module:
        """A fresh copy of the module holding θ_0, trained by the caller's ``train`` on (X, y)."""
        model = _holding(self.objective, self.objective.unflatten(theta0))
        with torch.no_grad():
            for _, buffer in model.named_buffers():
                if not buffer.is_floating_point():  # num_batches_tracked: a fresh training starts at 0
                    buffer.zero_()
        with seeded(call_seed(self.seed, self.trial, call)) as generator:
            out = self.train_fn(model.train(), TensorDataset(X, y), generator)
        return self._returned("train", out)

    def trained_theta(self, out: Any) -> Tensor:
        """θ of what the caller's ``train`` returned (checked to be the module), in the objective's layout."""
        return self._theta(self._returned("train", out))

    def _returned(self, field: str, out: Any) -> nn.Module:
        if not isinstance(out, nn.Module):
            raise InvalidInput(field, "a function that returns the model (an nn.Module)", type(out).__name__)
        return out

    def _theta(self, model: nn.Module) -> Tensor:
        """θ of a returned module in the objective's layout, dtype and device."""
        state = {**dict(model.named_parameters()), **dict(model.named_buffers())}
        missing = [name for name in self.objective.names if name not in state]
        if missing:
            raise InvalidInput(
                "train",
                "a function that returns the model it was given (same parameter names)",
                f"missing {missing[:3]}",
            )
        reference = self.objective.model.get_parameter(self.objective.names[0])
        return torch.cat(
            [
                state[name].detach().reshape(-1).to(device=reference.device, dtype=reference.dtype)
                for name in self.objective.names
            ]
        )


def _holding(objective: Objective, values: dict[str, Tensor]) -> nn.Module:
    """A copy of the objective's module holding ``values`` (parameters and floating-point buffers
    by name), in the objective's dtype and on its device."""
    model = copy.deepcopy(objective.model)
    with torch.no_grad():
        for name in objective.names:
            held = model.get_buffer(name) if name in objective.buffer_names else model.get_parameter(name)
            held.copy_(values[name])
    return model


ORIGINAL_WORDS = (
    "the model your pipeline trained: an nn.Module of the audited architecture, or its state dict "
    "(torch.save(model.state_dict(), path)) with every parameter and buffer in its shape"
)


def load_original(source: Any, objective: Objective) -> nn.Module:
    """The production model (``original=``/``--original``) as a copy of the objective's module
    holding its weights: ``source`` an ``nn.Module``, a state dict, or the path of one saved with
    ``torch.save`` (read with ``weights_only=True``, mapped to the audit's device). Every
    parameter and floating-point buffer must be there in its shape (integer buffers, e.g.
    BatchNorm's ``num_batches_tracked``, are taken when present); anything else is refused,
    before any training, naming ``original``."""
    if isinstance(source, nn.Module):
        state = source.state_dict()
    elif isinstance(source, dict):
        state = source
    else:
        reference = objective.model.get_parameter(objective.names[0])
        if not Path(str(source)).is_file():
            raise InvalidInput("original", ORIGINAL_WORDS, str(source), hint="No such file.")
        try:
            state = torch.load(str(source), map_location=reference.device, weights_only=True)
        except Exception as exc:  # a pickle of anything but tensors, a corrupt archive, another format
            raise InvalidInput(
                "original",
                ORIGINAL_WORDS,
                str(source),
                hint=f"torch.load(weights_only=True) cannot read it ({type(exc).__name__}).",
            ) from None
    if not isinstance(state, dict) or not all(isinstance(v, Tensor) for v in state.values()):
        raise InvalidInput("original", ORIGINAL_WORDS, type(state).__name__)
    expected = dict(zip(objective.names, objective.shapes))
    missing = [name for name in objective.names if name not in state]
    wrong = [
        f"{name} {tuple(state[name].shape)} (expected {tuple(shape)})"
        for name, shape in expected.items()
        if name in state and tuple(state[name].shape) != tuple(shape)
    ]
    if missing or wrong:
        raise InvalidInput("original", ORIGINAL_WORDS, f"missing {missing[:3]}" if missing else "; ".join(wrong[:3]))
    model = _holding(objective, state)
    with torch.no_grad():
        for name, buffer in model.named_buffers():
            if not buffer.is_floating_point() and name in state:
                buffer.copy_(state[name])
    return model


def challenge(unlearning: Callable[..., Any], batch_size: int = 64, val: TensorDataset | None = None) -> UnlearnFn:
    """An ``unlearn`` function from a NeurIPS 2023 unlearning-challenge submission
    ``unlearning(net, retain_loader, forget_loader, val_loader)``, which changes ``net`` in place.

    The loaders are built from the datasets with the call's generator (shuffled retain and forget
    loaders, as the challenge's starting kit builds them; an unshuffled validation loader).
    ``val_loader``: over ``val`` when given (e.g. held-out records of the caller's own); else over
    the retain set, which the submission may read anyway (the audit keeps its test split for
    scoring, so a submission never sees it). The submission's return value is ignored, as the
    challenge ignores it: the unlearned model is ``net``.
    """
    if not callable(unlearning):
        raise InvalidInput(
            "unlearning",
            "a function unlearning(net, retain_loader, forget_loader, val_loader)",
            type(unlearning).__name__,
        )

    def unlearn(
        model: nn.Module, forget: TensorDataset, retain: TensorDataset, generator: torch.Generator
    ) -> nn.Module:
        retain_loader = DataLoader(retain, batch_size=batch_size, shuffle=True, generator=generator)
        forget_loader = DataLoader(forget, batch_size=batch_size, shuffle=True, generator=generator)
        val_loader = DataLoader(retain if val is None else val, batch_size=batch_size, shuffle=False)
        unlearning(model, retain_loader, forget_loader, val_loader)
        return model

    unlearn.__qualname__ = f"challenge({qualified_name(unlearning)})"
    unlearn.__module__ = getattr(unlearning, "__module__", None) or "?"
    return unlearn


def retrain_with(train: TrainFn) -> UnlearnFn:
    """Exact unlearning by the caller's own training, as an ``unlearn`` function: the model is
    re-initialised as the audit draws θ_0 (each module's ``reset_parameters``, fresh BatchNorm
    statistics, under the call's seeded generators; :func:`unlearners.objective.init_parameters`)
    and ``train`` runs on the retain set. Its unlearned world is A(D \\ Z) with the caller's A,
    distributed as the retrained world: what an attack achieves against it is what it achieves
    against a perfect deletion of the caller's pipeline (``audit compare``'s reference for the
    caller's candidates)."""
    if not callable(train):
        raise InvalidInput("train", "a function train(model, dataset, generator) -> model", type(train).__name__)

    def unlearn(
        model: nn.Module, forget: TensorDataset, retain: TensorDataset, generator: torch.Generator
    ) -> nn.Module:
        reinitialise(model, reset_statistics=True)
        with torch.no_grad():
            for buffer in model.buffers():
                if not buffer.is_floating_point():  # num_batches_tracked: a fresh training starts at 0
                    buffer.zero_()
        return train(model.train(), retain, generator)

    unlearn.__qualname__ = f"retrain_with({qualified_name(train)})"
    unlearn.__module__ = getattr(train, "__module__", None) or "?"
    return unlearn
