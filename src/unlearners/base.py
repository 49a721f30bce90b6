"""The one interface every unlearning method implements.

A method is a pair (A, U) of a learning algorithm and an unlearning algorithm. It **declares**
what it is and what it can do, and the audit only asks:

* ``hyperparameters``: a table of :class:`certify.params.Param` (name, default, constraint,
  help, and which audit setting feeds it). The constructor validates options against it once;
  ``audit methods`` lists it; the contract test tries values each constraint refuses.
* ``model_requirements``: what the theorem assumes about the model that the module shows
  (smooth layers, no batch statistics or randomness); checked once at construction
  (:mod:`unlearners.modelcheck`), and a failed one withdraws every certificate;
* ``capabilities``: a :class:`Capabilities` record (a knob for the tradeoff curve and its σ
  budget search, checkpoint recovery, batched training of many models, a deletable set that
  must be known before training, a certificate that depends on which records are deleted).

The public calls are template methods that validate once and then delegate to the method's
own step:

* ``fit(X, y, theta0)`` runs A on D and keeps what U needs; returns A(D) **before** noise
  (the method implements ``_fit``);
* ``unlearn(forget)`` validates the forget indices (distinct in-range integers; boolean masks
  refused) and runs U(A(D), D, Z) before noise (``_unlearn``);
* ``retrain(forget)`` runs A on D \\ Z from the same starting point: the reference world
  (``_retrain``);
* ``certify(forget, epsilon, delta, mechanism)`` returns the certificate for deleting exactly
  this forget set (``_certify``): it never depends on which call came before it;
* ``serve_requests(requests, ...)`` serves deletion requests one after another (``_serve``;
  the default unlearns the growing union from the trained model).

Noise is added by :meth:`Unlearner.release`, so the audit can draw many releases of the same
noiseless parameters. Methods are found by name through :mod:`unlearners.registry`; this
module imports no implementation.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple, Self

import torch
from torch import Tensor

from certify.certificate import Certificate
from certify.errors import InvalidInput, require_choice, require_positive, require_probability
from certify.mechanisms import MECHANISMS
from certify.params import Param, validate
from unlearners.modelcheck import check_model
from unlearners.objective import Objective


@dataclass(frozen=True)
class Knob:
    """A hyperparameter that trades noise against compute or utility (the tradeoff curve's axis).

    Parameters
    ----------
    option:
        The hyperparameter it varies (``rewind``).
    symbol:
        How the paper writes it (``K``).
    description:
        What a larger value buys and costs, in words.
    refits:
        False: ``unlearn(forget, **{option: v})`` and ``certify(..., **{option: v})`` take the
        value from the fitted state, and the retrained reference does not change. True: every
        value is a different learning algorithm, so each point of the curve refits and retrains.
    sigma_budget:
        True when the method implements :meth:`Unlearner.knob_for_sigma` (the value that meets
        a noise budget, chosen after fitting).
    """

    option: str
    symbol: str
    description: str
    refits: bool = False
    sigma_budget: bool = False


class Worlds(NamedTuple):
    """The noiseless models of N runs, stacked (N, d): A(D), U(A(D), D, Z) and A(D \\ Z).

    The original model is the positive control of an audit: attacks that cannot tell A(D)
    from A(D \\ Z) have no power to judge the unlearned model either."""

    original: Tensor
    unlearned: Tensor
    retrained: Tensor


@dataclass(frozen=True)
class Capabilities:
    """What the audit may ask a method for, beyond the algorithm pair (default: nothing).

    Parameters
    ----------
    knob:
        The tradeoff curve's knob, if any (:class:`Knob`).
    checkpoint_recovery:
        The method can rebuild its stored state from the trained model alone and check the
        result (:meth:`Unlearner.checkpoint_recovery`).
    batched_training:
        The method trains many models at once from a stack of initial points
        (:meth:`Unlearner.train_many`), for retrain-mode trials.
    deletable_before_training:
        The method keeps per-record state only for records declared before ``fit``
        (:meth:`Unlearner.declare_deletable`); the audit declares its forget set.
    data_dependent_certificate:
        The certificate depends on *which* records are deleted, not only on how many.
    any_training:
        The guarantee does not depend on how A trained, so A may be the caller's own training
        (:meth:`Unlearner.with_training`) and A(D) the production weights (``adopt``).
    reruns:
        The release is itself a noisy run from a start (noisy fine-tuning): the method re-runs it
        from fixed starts with given generators (:meth:`Unlearner.rerun_starts`,
        :meth:`Unlearner.rerun`), for the trials that test exactly its certificate.
    """

    knob: Knob | None = None
    checkpoint_recovery: bool = False
    batched_training: bool = False
    deletable_before_training: bool = False
    data_dependent_certificate: bool = False
    any_training: bool = False
    reruns: bool = False

    def describe(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Precision:
    """The method's precision audit: may ``--dtype auto`` train it (and run its attacks) in float32?

    Parameters
    ----------
    float32:
        True only when the certificate reads no quantity computed from the trained model or from
        the data in the run's dtype (no residual, gradient norm, solve, Hessian spectrum or
        estimated constant): it is then the same float64/Python-float computation at either
        precision, and float32 changes only the models, their utility and the attacks' scores.
    reads:
        What the certificate is computed from, in words (the audit table's column).
    """

    float32: bool
    reads: str

    @property
    def auto(self) -> str:
        """The dtype ``--dtype auto`` trains this method in."""
        return "float32" if self.float32 else "float64"


def check_training_data(X: object, y: object) -> None:
    """Records X (n, ...) and labels y (n,) as tensors, n >= 2: the shape every training reads."""
    if (
        not isinstance(X, Tensor)
        or not isinstance(y, Tensor)
        or X.ndim < 2
        or y.ndim != 1
        or X.shape[0] != y.shape[0]
        or X.shape[0] < 2
    ):
        raise InvalidInput(
            "X, y",
            "tensors with X of shape (n, ...) and y of shape (n,), n >= 2",
            (tuple(getattr(X, "shape", ())), tuple(getattr(y, "shape", ()))),
        )


class Unlearner(ABC):
    """Base class of a learning/unlearning algorithm pair.

    Class attributes describe the method for ``audit methods``, the documentation's method pages and
    the audit (see the module docstring). Subclasses implement ``_fit``, ``_unlearn``,
    ``_retrain`` and ``_certify``; the capability methods only when they declare them.
    """

    name: ClassVar[str]
    title: ClassVar[str]
    paper: ClassVar[str]
    certified: ClassVar[bool]
    assumptions: ClassVar[tuple[str, ...]] = ()
    deviations: ClassVar[tuple[str, ...]] = ()
    hyperparameters: ClassVar[tuple[Param, ...]] = ()
    capabilities: ClassVar[Capabilities] = Capabilities()
    #: What the theorem assumes about the model that can be checked on its modules
    #: (:data:`unlearners.modelcheck.REQUIREMENTS`); a method without a theorem assumes nothing.
    model_requirements: ClassVar[frozenset[str]] = frozenset()
    #: Attributes fitting sets that are not options but that a replica must reuse, as it reuses
    #: :meth:`pinned_options`: estimated constants, which keep their provenance (an option such as
    #: R2D's ``constants`` would turn them into user-assumed values). See :meth:`replica`.
    pinned_state: ClassVar[tuple[str, ...]] = ()
    #: Retrain-mode trials run one per task on the executor (a shard granule of one trial): each
    #: trial is trainings of code the audit cannot batch and whose cost it does not know (the
    #: caller's own), so a few trials are shared by every worker and progress comes per trial. The
    #: built-in methods keep the batched path's granule (:func:`audit.trials.progress_group`).
    trials_one_per_task: ClassVar[bool] = False
    #: The precision audit (:class:`Precision`); a method that does not declare one is trained in
    #: float64 by ``--dtype auto``.
    precision: ClassVar[Precision] = Precision(False, "not audited for float32")

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Batched training re-implements the algorithm it batches: a subclass that changes the
        algorithm (``_fit``, ``_unlearn`` or ``_retrain``) without its own ``train_many`` does not
        inherit the capability."""
        super().__init_subclass__(**kwargs)
        changed = any(name in cls.__dict__ for name in ("_fit", "_unlearn", "_retrain"))
        if cls.capabilities.batched_training and changed and "train_many" not in cls.__dict__:
            cls.capabilities = replace(cls.capabilities, batched_training=False)

    #: The records (X, y) of the fit a replica's ``pinned_`` came from; set only on replicas
    #: (read with ``getattr(..., None)``), so an instance built directly has none.
    _pinned_on: tuple[Tensor, Tensor] | None

    if TYPE_CHECKING:  # each declared option becomes an attribute (below): self.steps, self.l2 ...

        def __getattr__(self, name: str) -> Any: ...

    def __init__(self, objective: Objective, **options: Any):
        self.objective = objective
        self.options = validate(type(self).hyperparameters, options, "method_options")
        for key, value in self.options.items():
            setattr(self, key, value)
        self.X_: Tensor | None = None
        self.y_: Tensor | None = None
        #: What a replica inherited from the fitted instance it was made from (``pinned_state``);
        #: empty for an instance built directly.
        self.pinned_: dict[str, Any] = {}
        self._check_options()
        #: The model checked against ``model_requirements`` once, before any work: every
        #: certificate carries these conditions, and a failed one withdraws it.
        self.model_conditions = check_model(objective.model, type(self).model_requirements, self.name)

    def _check_options(self) -> None:  # noqa: B027 (a hook: most methods have no joint constraint)
        """Constraints that tie several options together (``rewind <= steps``); raise
        :class:`InvalidInput`. Single-option constraints are declared in ``hyperparameters``."""

    def set_option(self, name: str, value: Any) -> None:
        """Change one declared option (checked against its constraint and the cross-checks)."""
        declared = {p.name: p for p in type(self).hyperparameters}
        if name not in declared:
            raise InvalidInput("method_options", "options among " + ", ".join(sorted(declared)), name)
        checked = declared[name].check(value)
        old = self.options[name]
        self.options[name] = checked
        setattr(self, name, checked)
        try:
            self._check_options()
        except InvalidInput:
            self.options[name] = old
            setattr(self, name, old)
            raise

    def pinned_options(self) -> dict[str, Any]:
        """Options chosen while fitting (e.g. a step size computed from the data) that a replica
        must reuse to run the same algorithm the certificate was computed for."""
        return {}

    def replica(self, **overrides: Any) -> Self:
        """A new, unfitted instance running the same algorithm (options pinned at fit), with
        ``overrides`` applied: for trials, shadow models and knobs that refit.

        The replica also carries the fitted values named in ``pinned_state`` (in ``pinned_``):
        the certificate and every trial use the constants of one fit, and estimating them again
        per replica cost most of each replica's fit (R2D on an MLP). Mu & Klabjan likewise
        estimated L and G once (seed 1) and reused them for every seed (digest seed-003 §2.5)."""
        twin = type(self)(self.objective, **{**self.options, **self.pinned_options(), **overrides})
        twin.pinned_ = {
            **self.pinned_,
            **{name: getattr(self, name) for name in type(self).pinned_state if getattr(self, name, None) is not None},
        }
        # fit() sets X_ and y_ together, so y_ is set whenever X_ is
        twin._pinned_on = (
            (self.X_, self.y_) if self.X_ is not None and self.y_ is not None else getattr(self, "_pinned_on", None)
        )
        return twin

    # -- the algorithm pair (template methods) ---------------------------------------------
    def fit(self, X: Tensor, y: Tensor, theta0: Tensor) -> Tensor:
        """Run A on D = (X, y) from θ_0; return A(D) before noise."""
        check_training_data(X, y)
        if not isinstance(theta0, Tensor) or theta0.shape != (self.objective.dim,):
            raise InvalidInput(
                "theta0", f"a parameter vector of shape ({self.objective.dim},)", tuple(getattr(theta0, "shape", ()))
            )
        on = getattr(self, "_pinned_on", None)
        if self.pinned_ and not (on is not None and _same_records(on, (X, y))):
            # constants estimated on other records (e.g. D without the one-run audit's canaries)
            # need not cover these: this fit estimates its own
            self.pinned_ = {}
        self.X_, self.y_ = X, y
        return self._fit(X, y, theta0)

    def unlearn(self, forget: Tensor | Sequence[int], **knob: Any) -> Tensor:
        """U(A(D), D, Z) for forget indices Z, before noise (``knob``: the declared knob's value)."""
        return self._unlearn(self.forget_indices(forget), **self._knob_arguments(knob))

    def retrain(self, forget: Tensor | Sequence[int]) -> Tensor:
        """A(D \\ Z) from the same θ_0, before noise."""
        return self._retrain(self.forget_indices(forget))

    def certify(
        self, forget: Tensor | Sequence[int], epsilon: float, delta: float, mechanism: str = "analytic", **knob: Any
    ) -> Certificate:
        """The certificate for deleting exactly ``forget`` at (ε, δ)."""
        idx = self.forget_indices(forget)
        epsilon = require_positive("epsilon", epsilon)
        delta = require_probability("delta", delta)
        mechanism = require_choice("mechanism", mechanism, MECHANISMS)
        return self._certify(idx, epsilon, delta, mechanism, **self._knob_arguments(knob)).under(self.model_conditions)

    def serve_requests(
        self, requests: Sequence[Tensor | Sequence[int]], epsilon: float, delta: float, mechanism: str = "analytic"
    ) -> list[tuple[Tensor, Certificate]]:
        """Serve deletion requests one after another: the model and certificate of every release.

        Release k is the noiseless model after requests 1..k and its certificate against
        retraining on D \\ (Z_1 ∪ ... ∪ Z_k). Requests must be disjoint (a record is deleted
        once).
        """
        if len(requests) == 0:
            raise InvalidInput("requests", "a non-empty list of index sets", requests)
        checked = [self.forget_indices(r, field=f"requests[{k}]") for k, r in enumerate(requests)]
        union = torch.cat(checked)
        if torch.unique(union).numel() != union.numel():
            raise InvalidInput("requests", "disjoint index sets (a record is deleted once)", "repeated records")
        epsilon = require_positive("epsilon", epsilon)
        delta = require_probability("delta", delta)
        mechanism = require_choice("mechanism", mechanism, MECHANISMS)
        return [
            (theta, certificate.under(self.model_conditions))
            for theta, certificate in self._serve(checked, epsilon, delta, mechanism)
        ]

    @abstractmethod
    def _fit(self, X: Tensor, y: Tensor, theta0: Tensor) -> Tensor:
        """A(D) before noise (``self.X_``, ``self.y_`` are set)."""

    @abstractmethod
    def _unlearn(self, forget: Tensor) -> Tensor:
        """U(A(D), D, Z) for validated indices ``forget`` (a 1-D long tensor on X's device). A
        method with a knob it can vary after fitting adds it as a keyword with a default
        (R2D's ``rewind``): ``unlearn`` passes it only when the caller gave it."""

    @abstractmethod
    def _retrain(self, forget: Tensor) -> Tensor:
        """A(D \\ Z) for validated indices ``forget``."""

    @abstractmethod
    def _certify(self, forget: Tensor, epsilon: float, delta: float, mechanism: str) -> Certificate:
        """The certificate for validated indices and a checked (ε, δ, mechanism) (a knob as in
        ``_unlearn``)."""

    def _serve(
        self, requests: list[Tensor], epsilon: float, delta: float, mechanism: str
    ) -> list[tuple[Tensor, Certificate]]:
        """The sequential rule of methods that unlearn from the trained model (R2D: rewind and
        replay with the grown forget set; retrain and the baselines: rerun with it); methods
        with an online rule override it."""
        out = []
        for k in range(1, len(requests) + 1):
            union = torch.cat(requests[:k])
            out.append((self._unlearn(union), self._certify(union, epsilon, delta, mechanism)))
        return out

    def report_hyperparameters(self) -> dict[str, Any]:
        """The method's effective hyperparameters, for the report (options plus what fitting
        chose); methods extend it."""
        return dict(self.options)

    def code_identity(self) -> tuple[str, ...]:
        """What identifies the code of this method beyond its class and reported options, for the
        key of a resumable run directory (:meth:`audit.shards.ShardContext.key`): nothing for a
        method of the tool (its code is the tool's version); the caller's functions for
        :class:`unlearners.caller.CallerMethod`."""
        return ()

    # -- capabilities (implemented by the methods that declare them) -------------------------
    def knob_grid(self, points: int) -> list:
        """``points`` values of the knob across its useful range, for the tradeoff curve."""
        raise NotImplementedError(f"{self.name} declares no knob")

    def unlearn_sweep(self, forget: Tensor | Sequence[int], values: Sequence[Any]) -> Tensor:
        """U(A(D), D, Z) before noise at each value of the declared knob (a knob that does not
        refit), stacked (len(values), d): the tradeoff curve. A method that can compute the values
        together overrides it (R2D replays every rewind from its one stored trajectory at once)."""
        knob = type(self).capabilities.knob
        assert knob is not None, "the tradeoff curve sweeps only methods that declare a knob"
        option = knob.option
        return torch.stack([self.unlearn(forget, **{option: value}) for value in values])

    def knob_cost(self, value: Any) -> float:
        """The work of one knob value on the tradeoff curve, in trainings of this model: a refitting
        knob trains once per value (1); a knob swept from the fitted state costs nothing extra unless
        the method says what its replay costs (R2D: K/T)."""
        knob = type(self).capabilities.knob
        assert knob is not None, "the tradeoff curve prices only methods that declare a knob"
        return 1.0 if knob.refits else 0.0

    def knob_is_retrain(self, value: Any) -> bool:
        """Whether unlearning at this knob value is the retrain itself (R2D's K = T): the tradeoff
        curve then reuses the audit's retrained model instead of computing it again."""
        return False

    def knob_for_sigma(self, sigma: float, forget: Tensor, epsilon: float, delta: float, mechanism: str) -> Any:
        """The knob value whose calibrated σ meets the budget ``sigma`` (``Knob.sigma_budget``)."""
        raise NotImplementedError(f"{self.name} declares no sigma budget search")

    def checkpoint_recovery(self, theta_T: Tensor, budget: float = float("inf")) -> dict[str, Any]:
        """Rebuild the stored state from θ_T alone and compare it with the stored one (report block),
        within ``budget`` trainings of work (a diagnostic: no certificate depends on it)."""
        raise NotImplementedError(f"{self.name} declares no checkpoint recovery")

    def train_many(self, thetas0: Tensor, forget: Tensor, *, chunk: int | None = None) -> Worlds:
        """Original, unlearned and retrained parameters (N, d) of N runs from the initial points
        ``thetas0`` (N, d), on the fitted data, all at once (``Capabilities.batched_training``);
        row i equals ``fit``/``unlearn``/``retrain`` of a replica fitted from ``thetas0[i]``."""
        raise NotImplementedError(f"{self.name} declares no batched training")

    @classmethod
    def with_training(cls, objective: Objective, *, train: Any, train_seed: int = 0, **options: Any) -> Unlearner:
        """The method with the caller's ``train(model, dataset, generator)`` as A
        (``Capabilities.any_training``; :mod:`unlearners.caller` for the signature and the seeds)."""
        raise NotImplementedError(f"{cls.name} takes no training of the caller's")

    def rerun_starts(self, forget: Tensor | Sequence[int]) -> tuple[Tensor, Tensor]:
        """The two fixed starts of the re-run trials: (A(D), A(D \\ Z)) (``Capabilities.reruns``)."""
        raise NotImplementedError(f"{self.name} declares no re-runs")

    def rerun(
        self,
        start: Tensor,
        forget: Tensor | Sequence[int],
        generators: list[torch.Generator],
        *,
        batched: bool | None = None,
    ) -> tuple[Tensor, str]:
        """N releases (N, d) of the method's noisy run from ``start`` on D \\ Z, run i drawing from
        ``generators[i]``, and the path (``"vmap"`` or ``"loop"``; ``batched`` None: whichever the
        method can) (``Capabilities.reruns``)."""
        raise NotImplementedError(f"{self.name} declares no re-runs")

    def seed_trial(self, seed: int, trial: int) -> None:  # noqa: B027 (a hook: only the caller's code uses it)
        """Before a retrain-mode trial's ``fit``: the role's seed and the trial's index, for a method
        whose training draws randomness beyond θ_0 (the caller's code, :mod:`unlearners.caller`).
        Every built-in method's training is a function of θ_0 alone, so the default ignores them."""

    def declare_deletable(self, forget: Tensor) -> None:
        """Before ``fit``: the records that may be deleted later (``deletable_before_training``)."""
        raise NotImplementedError(f"{self.name} keeps no per-record state")

    # -- helpers shared by all methods -------------------------------------------------------
    def fitted_data(self) -> tuple[Tensor, Tensor]:
        """The training set D = (X, y) of the last ``fit``; every step after fitting reads it here."""
        if self.X_ is None or self.y_ is None:
            raise RuntimeError(f"{type(self).__name__}.fit must be called before unlearning")
        return self.X_, self.y_

    def forget_indices(self, forget: Any, field: str = "forget") -> Tensor:
        """Validated record indices into the fitted training set."""
        X, _ = self.fitted_data()
        return record_indices(forget, int(X.shape[0]), field, X.device)

    def retained(self, forget: Tensor) -> tuple[Tensor, Tensor]:
        """The retained data D' = D \\ Z, in the original record order."""
        X, y = self.fitted_data()
        keep = torch.ones(X.shape[0], dtype=torch.bool, device=X.device)
        keep[forget] = False
        return X[keep], y[keep]

    def _knob_arguments(self, knob: dict[str, Any]) -> dict[str, Any]:
        if not knob:
            return {}
        declared = type(self).capabilities.knob
        if declared is None or declared.refits or set(knob) != {declared.option}:
            allowed = (
                f"the keyword {declared.option}"
                if declared is not None and not declared.refits
                else "no keyword (this method declares no knob it can vary after fitting)"
            )
            raise InvalidInput("knob", allowed, sorted(knob))
        param = next(p for p in type(self).hyperparameters if p.name == declared.option)
        return {declared.option: param.check(knob[declared.option])}

    @staticmethod
    def release(theta: Tensor, sigma: float, generator: torch.Generator) -> Tensor:
        """Publish θ + ξ with ξ ~ N(0, σ² I_d), drawn from ``generator``.

        The sampler is torch's ordinary Gaussian generator, not a floating-point-hardened one
        (see docs/security.md). ξ is drawn in float64 and scaled there, then rounded
        to θ's dtype: a float32 run releases the float64 run's draws, rounded.
        """
        if sigma == 0:
            return theta.clone()
        noise = torch.randn(theta.shape, generator=generator, dtype=torch.float64, device="cpu")
        return theta + (sigma * noise).to(device=theta.device, dtype=theta.dtype)


def record_indices(value: object, n: int, field: str, device: torch.device | str | None = None) -> Tensor:
    """Validate record indices into a training set of n records: a non-empty 1-D integer tensor
    (or sequence) of distinct values in [0, n); raise :class:`InvalidInput` naming ``field``."""
    try:
        idx = torch.as_tensor(value, device=device)
    except (TypeError, ValueError, RuntimeError):
        raise InvalidInput(field, "a non-empty 1-D sequence of integer indices", type(value).__name__) from None
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


def _same_records(a: tuple[Tensor, Tensor], b: tuple[Tensor, Tensor]) -> bool:
    """The same training set: the same tensors (the trials' case), or equal values."""
    if a[0] is b[0] and a[1] is b[1]:
        return True
    return (
        a[0].shape == b[0].shape
        and a[1].shape == b[1].shape
        and a[0].device == b[0].device
        and bool(torch.equal(a[0], b[0]))
        and bool(torch.equal(a[1], b[1]))
    )
