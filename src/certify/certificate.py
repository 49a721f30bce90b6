"""The certificate: what was guaranteed, under which theorem, resting on which constants."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

Provenance = Literal["analytic", "enforced", "estimated", "assumed"]
PROVENANCES: tuple[str, ...] = ("analytic", "enforced", "estimated", "assumed")


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


@dataclass
class Certificate:
    """An (ε, δ) unlearning certificate with everything needed to re-check it.

    ``valid`` is False when a condition of the theorem fails (the numbers are then reported but
    not issued as a guarantee); ``conditional`` is True when some constant is estimated or
    assumed rather than analytic or enforced.
    """

    method: str
    epsilon: float
    delta: float
    sigma: float
    sensitivity: float
    mechanism: str
    theorem: str
    constants: list[Constant] = field(default_factory=list)
    assumptions: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    valid: bool = True

    @property
    def conditional(self) -> bool:
        return any(c.provenance in ("estimated", "assumed") for c in self.constants)

    def constant(self, name: str) -> Constant:
        for c in self.constants:
            if c.name == name:
                return c
        raise KeyError(name)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["conditional"] = self.conditional
        return _finite_json(d)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Certificate:
        d = _decode_nonfinite(dict(d))
        d.pop("conditional", None)
        d["constants"] = [Constant(**c) for c in d.get("constants", [])]
        return cls(**d)


def _finite_json(obj: Any) -> Any:
    """Encode non-finite floats as strings ("inf", "-inf", "nan") so the JSON stays standard."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return "nan" if math.isnan(obj) else ("inf" if obj > 0 else "-inf")
    if isinstance(obj, dict):
        return {k: _finite_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite_json(v) for v in obj]
    return obj


def _decode_nonfinite(obj: Any) -> Any:
    if obj in ("inf", "-inf", "nan"):
        return float(obj)
    if isinstance(obj, dict):
        return {k: _decode_nonfinite(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_decode_nonfinite(v) for v in obj]
    return obj
