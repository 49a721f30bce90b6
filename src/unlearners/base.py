"""The one interface every unlearning method implements, and the method registry.

A method is a pair (A, U) of a learning algorithm and an unlearning algorithm:

* ``fit(X, y, theta0)`` runs A on the training set D and keeps what U needs (a checkpoint,
  statistics, ...); it returns A(D) **before** any output noise;
* ``unlearn(forget)`` runs U(A(D), D, Z) for the forget set Z (indices into D), before noise;
* ``retrain(forget)`` runs A on D \\ Z from the same starting point: the reference world;
* ``certify(forget_size, epsilon, delta, mechanism)`` returns the method's certificate.

Noise is added by :meth:`Unlearner.release` so that the audit can draw many releases of the
same noiseless parameters. Third-party methods register through the packaging entry-point group
``unlearn_audit.unlearners`` (``name = "package.module:Class"``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from importlib.metadata import entry_points
from typing import ClassVar

import torch
from torch import Tensor

from certify.certificate import Certificate
from certify.errors import InvalidInput
from unlearners.objective import Objective

ENTRY_POINT_GROUP = "unlearn_audit.unlearners"


class Unlearner(ABC):
    """Base class of a learning/unlearning algorithm pair.

    Class attributes describe the method for ``audit methods`` and the README's method table.
    """

    name: ClassVar[str]
    title: ClassVar[str]
    paper: ClassVar[str]
    certified: ClassVar[bool]
    assumptions: ClassVar[tuple[str, ...]] = ()
    deviations: ClassVar[tuple[str, ...]] = ()

    def __init__(self, objective: Objective):
        self.objective = objective
        self.X_: Tensor | None = None
        self.y_: Tensor | None = None

    # -- the algorithm pair ------------------------------------------------------------
    @abstractmethod
    def fit(self, X: Tensor, y: Tensor, theta0: Tensor) -> Tensor:
        """Run A on D = (X, y) from θ_0; return A(D) before noise."""

    @abstractmethod
    def unlearn(self, forget: Tensor) -> Tensor:
        """Run U(A(D), D, Z) for forget indices Z; return the parameters before noise."""

    @abstractmethod
    def retrain(self, forget: Tensor) -> Tensor:
        """Run A on D \\ Z from the same θ_0; return the parameters before noise."""

    @abstractmethod
    def certify(self, forget_size: int, epsilon: float, delta: float, mechanism: str) -> Certificate:
        """The certificate for deleting ``forget_size`` records at (ε, δ)."""

    def hyperparameters(self) -> dict:
        """The method's effective hyperparameters, for the report."""
        return {}

    def serve_requests(self, requests: Sequence[Tensor], epsilon: float, delta: float,
                       mechanism: str = "analytic") -> list[tuple[Tensor, Certificate]]:
        """Serve deletion requests one after another: the model and certificate of every release.

        Release k is the noiseless model after requests 1..k and its certificate against
        retraining on D \\ (Z_1 ∪ ... ∪ Z_k). This default is the rule of methods that unlearn
        from the trained model (R2D: rewind and replay with the grown forget set; retrain and
        the baselines: rerun with it); methods with an online rule override it.
        """
        served: list[Tensor] = []
        out = []
        for request in requests:
            served.append(torch.as_tensor(request))
            union = torch.cat(served)
            out.append((self.unlearn(union), self.certify(int(union.numel()), epsilon, delta, mechanism)))
        return out

    # -- helpers shared by all methods -------------------------------------------------
    def _remember(self, X: Tensor, y: Tensor) -> None:
        self.X_, self.y_ = X, y

    def retained(self, forget: Tensor) -> tuple[Tensor, Tensor]:
        """The retained data D' = D \\ Z, in the original record order."""
        if self.X_ is None or self.y_ is None:
            raise RuntimeError(f"{type(self).__name__}.fit must be called before unlearning")
        keep = torch.ones(self.X_.shape[0], dtype=torch.bool, device=self.X_.device)
        keep[forget] = False
        return self.X_[keep], self.y_[keep]

    @staticmethod
    def release(theta: Tensor, sigma: float, generator: torch.Generator) -> Tensor:
        """Publish θ + ξ with ξ ~ N(0, σ² I_d), drawn from ``generator``.

        The sampler is torch's ordinary Gaussian generator, not a floating-point-hardened one
        (see the README's security notes).
        """
        if sigma == 0:
            return theta.clone()
        noise = torch.randn(theta.shape, generator=generator, dtype=theta.dtype, device="cpu")
        return theta + sigma * noise.to(theta.device)


def record_indices(value: object, n: int, field: str, device: torch.device | str | None = None) -> Tensor:
    """Validate record indices into a training set of n records: a non-empty 1-D integer tensor
    (or sequence) of distinct values in [0, n); raise :class:`InvalidInput` naming ``field``."""
    idx = torch.as_tensor(value, device=device)
    if idx.dtype == torch.bool:
        raise InvalidInput(field, "integer indices into the training set", "a boolean mask")
    if idx.is_floating_point() or idx.is_complex() or idx.dim() != 1 or idx.numel() == 0:
        raise InvalidInput(field, "a non-empty 1-D tensor of integer indices", tuple(idx.shape))
    idx = idx.long()
    if int(idx.min()) < 0 or int(idx.max()) >= n:
        raise InvalidInput(field, f"indices in [0, {n})", (int(idx.min()), int(idx.max())))
    if torch.unique(idx).numel() != idx.numel():
        raise InvalidInput(field, "distinct indices", "repeated indices")
    return idx


_REGISTRY: dict[str, type[Unlearner]] = {}


def register(cls: type[Unlearner]) -> type[Unlearner]:
    """Class decorator: make a method available under ``cls.name``."""
    _REGISTRY[cls.name] = cls
    return cls


def _discover() -> None:
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name not in _REGISTRY:
            try:
                cls = ep.load()
            except Exception:  # a broken third-party plug-in must not break the built-ins
                continue
            if isinstance(cls, type) and issubclass(cls, Unlearner):
                _REGISTRY.setdefault(ep.name, cls)


def available_methods() -> dict[str, type[Unlearner]]:
    """Every registered method, built-in and plug-in, by name."""
    import unlearners.cns  # noqa: F401  (registers the built-ins)
    import unlearners.curenewton  # noqa: F401
    import unlearners.dpsgd  # noqa: F401
    import unlearners.finetune  # noqa: F401
    import unlearners.hessian_free  # noqa: F401
    import unlearners.newton  # noqa: F401
    import unlearners.neggrad  # noqa: F401
    import unlearners.ngd  # noqa: F401
    import unlearners.r2d  # noqa: F401
    import unlearners.retrain  # noqa: F401

    _discover()
    return dict(sorted(_REGISTRY.items()))


def get_method(name: str) -> type[Unlearner]:
    """Look a method up by name; an unknown name raises :class:`InvalidInput`."""
    methods = available_methods()
    if name not in methods:
        raise InvalidInput("method", "one of " + ", ".join(repr(m) for m in methods), name)
    return methods[name]
