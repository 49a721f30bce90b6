"""The certificate: what was guaranteed, under which theorem, resting on which constants.

A method's bound (one module per theorem under :mod:`certify.bounds`) returns a :class:`Bound`:
its value Δ, the formula it evaluated, the theorem's conditions (met or not, with the measured
numbers) and the constants it used. :func:`issue` is the one place that turns a bound into a
:class:`Certificate`: it calibrates σ, handles Δ = 0 and Δ = ∞, refuses the certificate when a
condition fails, marks it *conditional* when a constant is estimated or assumed, and writes the
noise clause. A method's ``certify`` is its bound call and one :func:`issue` call.

Every certificate has a :data:`Kind`, so no reader decodes a guarantee from σ and Δ:

``exact``
    The release *is* the reference (retraining): Δ = 0, σ = 0 and ε = 0 (the two releases are
    identical, so it certifies ε = 0, whatever ε was requested: every requested ε holds).
``output-noise``
    Gaussian noise on the released parameters, calibrated to a sensitivity bound Δ.
``training-noise``
    The privacy comes from randomness inside training (DP-SGD, Guo et al.'s loss perturbation);
    the release adds no output noise (σ = 0), so output-noise trials cannot test it.
``none``
    The method has no theorem: no ε is certified (ε and Δ are None); σ is whatever
    uncalibrated output noise the user asked for.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal

from certify.errors import InvalidInput

Provenance = Literal["analytic", "enforced", "estimated", "assumed"]
PROVENANCES: tuple[str, ...] = ("analytic", "enforced", "estimated", "assumed")
Kind = Literal["exact", "output-noise", "training-noise", "none"]
KINDS: tuple[str, ...] = ("exact", "output-noise", "training-noise", "none")


@dataclass(frozen=True)
class Constant:
    """One constant a bound depends on, and where its value came from.

    Parameters
    ----------
    name:
        Symbol as the paper writes it (``L``, ``G``, ``eta``).
    value:
        The value used in the bound.
    provenance:
        ``analytic``: a closed-form global bound for this model and data (holds for every θ);
        ``enforced``: made true by construction (clipping, projection, a chosen step size);
        ``estimated``: measured by sampling, so the certificate is conditional on it;
        ``assumed``: supplied by the user without evidence.
    description:
        What the constant bounds, in words, and how it was obtained.
    diagnostics:
        Estimator details (number of samples, spread, safety factor), empty when analytic.
    """

    name: str
    value: float
    provenance: Provenance
    description: str
    diagnostics: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.provenance not in PROVENANCES:
            raise ValueError(f"provenance must be one of {PROVENANCES}; got {self.provenance!r}")


@dataclass(frozen=True)
class Condition:
    """One condition of a theorem, checked: ``detail`` carries the measured numbers, and is the
    warning the certificate shows when the condition fails."""

    name: str
    met: bool
    detail: str


@dataclass(frozen=True)
class Bound:
    """What a theorem's bound evaluated to: Δ, the formula, its conditions and its constants."""

    value: float
    formula: str
    conditions: tuple[Condition, ...] = ()
    constants: tuple[Constant, ...] = ()


@dataclass
class Certificate:
    """An (ε, δ) unlearning certificate with everything needed to re-check it.

    ``valid`` is False when a condition of the theorem fails or the method has no theorem (the
    numbers are then reported but not issued as a guarantee); ``conditional`` is True when some
    constant is estimated or assumed rather than analytic or enforced. ``epsilon`` and
    ``sensitivity`` are None when there is nothing to state (``kind == "none"``; a
    ``training-noise`` guarantee with no parameter-space bound).
    """

    method: str
    kind: Kind
    epsilon: float | None
    delta: float
    sigma: float
    sensitivity: float | None
    mechanism: str
    theorem: str
    constants: list[Constant] = field(default_factory=list)
    assumptions: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    conditions: list[Condition] = field(default_factory=list)
    valid: bool = True

    @property
    def conditional(self) -> bool:
        return any(c.provenance in ("estimated", "assumed") for c in self.constants)

    @property
    def certified(self) -> bool:
        """Whether a guarantee is stated at all (a theorem exists and its conditions hold)."""
        return self.kind != "none" and self.valid

    def constant(self, name: str) -> Constant:
        for c in self.constants:
            if c.name == name:
                return c
        raise KeyError(name)

    def under(self, conditions: Iterable[Condition]) -> Certificate:
        """This certificate with conditions of its theorem checked outside the bound (on the
        model's layers, :mod:`unlearners.modelcheck`): they join ``conditions``, and a failed one
        withdraws the certificate (``valid`` False) with its detail as the first warning. A
        certificate of kind ``none`` states nothing to withdraw and is returned unchanged."""
        extra = list(conditions)
        if not extra or self.kind == "none":
            return self
        failed = [c.detail for c in extra if not c.met]
        return replace(
            self,
            conditions=[*extra, *self.conditions],
            warnings=[*failed, *self.warnings],
            valid=self.valid and not failed,
        )

    def to_dict(self) -> dict[str, Any]:
        """Plain Python data (floats may be ``inf``; the report layer encodes them)."""
        d = asdict(self)
        d["conditional"] = self.conditional
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Certificate:
        d = dict(d)
        d.pop("conditional", None)
        d["constants"] = [Constant(**c) for c in d.get("constants", [])]
        d["conditions"] = [Condition(**c) for c in d.get("conditions", [])]
        return cls(**d)


def issue(
    method: str,
    kind: Kind,
    *,
    epsilon: float,
    delta: float,
    mechanism: str = "analytic",
    bound: Bound | None = None,
    theorem: str = "",
    constants: Iterable[Constant] = (),
    conditions: Iterable[Condition] = (),
    assumptions: Iterable[str] = (),
    warnings: Iterable[str] = (),
    reserved_delta: float = 0.0,
    certified_epsilon: float | None = None,
    output_noise: float = 0.0,
) -> Certificate:
    """The one place a certificate is issued.

    Parameters
    ----------
    method, kind:
        The method's name and the kind of guarantee (see the module docstring).
    epsilon, delta, mechanism:
        The requested guarantee and the Gaussian calibration (output noise only).
    bound:
        The theorem's bound: required for ``output-noise``; optional for ``training-noise``
        (a parameter-space sensitivity reported for information). Its formula opens the
        theorem text, its conditions and constants join ``conditions`` and ``constants``.
    theorem:
        The theorem in words when there is no bound (``exact``, ``training-noise``, ``none``),
        or text appended to the bound's formula.
    reserved_delta:
        Part of δ spent elsewhere (a randomised solver's failure probability): the Gaussian is
        calibrated at δ − reserved_delta.
    certified_epsilon:
        ``training-noise`` only: the ε the training noise gives (DP-SGD's group ε), when it is
        not the requested one.
    output_noise:
        ``none`` only: uncalibrated Gaussian output noise the user asked for.

    Rules
    -----
    * A failed condition, or a non-finite Δ or ε, leaves ``valid`` False and says why in
      ``warnings``; the numbers are still computed where they exist.
    * ``exact`` certifies ε = 0 (the requested ε is met, and more).
    * Δ = 0 needs no noise (σ = 0); Δ = ∞ (or δ − reserved ≤ 0) needs infinite noise (σ = ∞).
    * Estimated or assumed constants make the certificate *conditional* and say so.
    """
    from certify.mechanisms import noise_clause, sigma_for

    if kind not in KINDS:
        raise InvalidInput("kind", "one of " + ", ".join(map(repr, KINDS)), kind)
    constants = [*(bound.constants if bound else ()), *constants]
    conditions = [*(bound.conditions if bound else ()), *conditions]
    notes = list(warnings)
    valid = True
    for c in conditions:
        if not c.met:
            valid = False
            notes.append(c.detail)
    sensitivity = None if bound is None else float(bound.value)
    text = (bound.formula + ("; " + theorem if theorem else "")) if bound else theorem
    cert_epsilon: float | None
    cert_epsilon = float(epsilon)  # assigned apart from its declaration so the checker narrows it to float
    sigma = 0.0

    if kind == "exact":  # identical releases: epsilon 0, not the (weaker) epsilon that was asked for
        sensitivity, cert_epsilon = 0.0, 0.0
    elif kind == "output-noise":
        if bound is None:
            raise InvalidInput("bound", "a Bound for an output-noise certificate", None)
        assert sensitivity is not None  # the bound's value (bound is given, checked above)
        usable = delta - reserved_delta
        if not math.isfinite(sensitivity):
            valid, sigma = False, math.inf
            notes.append("the sensitivity bound is not finite: no finite noise certifies this run")
        elif not usable > 0:
            valid, sigma = False, math.inf
            notes.append(
                f"the reserved delta {reserved_delta:g} is not below delta = {delta:g}: no room "
                "for the Gaussian mechanism"
            )
        else:
            sigma = sigma_for(epsilon, usable, sensitivity, mechanism)
        text += "; " + noise_clause(mechanism) + (" at delta - rho" if reserved_delta else "")
    elif kind == "training-noise":
        if certified_epsilon is not None:
            cert_epsilon = float(certified_epsilon)
        if not math.isfinite(cert_epsilon):
            valid = False
            notes.append(f"no finite epsilon holds at delta = {delta:g}: the certificate is not issued")
        notes.append(
            "sigma = 0: the privacy comes from noise inside training, not from noise on the "
            "released parameters, so the realized epsilon and output-noise attacks do not test "
            "this certificate (trial_mode='retrain' redraws the training noise)"
        )
    else:  # none
        valid, cert_epsilon, sensitivity, sigma = False, None, None, float(output_noise)
        notes.append(f"{method} carries no certificate: the audit measures it empirically only")

    if kind != "none":
        conditional = [c.name for c in constants if c.provenance in ("estimated", "assumed")]
        if conditional:
            notes.append(
                "the certificate is conditional on estimated or assumed constants ("
                + ", ".join(conditional)
                + "): a sampled maximum can under-estimate a supremum"
            )
    return Certificate(
        method=method,
        kind=kind,
        epsilon=cert_epsilon,
        delta=float(delta),
        sigma=float(sigma),
        sensitivity=sensitivity,
        mechanism=mechanism,
        theorem=text,
        constants=constants,
        assumptions=list(assumptions),
        warnings=notes,
        conditions=conditions,
        valid=valid,
    )
