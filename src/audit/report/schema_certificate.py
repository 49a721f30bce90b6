"""Report sections of the guarantee: the certificate with its constants and conditions, the
realized ε and the ledger of releases (:mod:`audit.report.schema`)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    ConfigDict,
    Field,
    model_validator,
)
from pydantic_core import PydanticCustomError

from audit.report.schema_fields import (
    Absent,
    Bool,
    Delta,
    ExtNonNeg,
    ExtNonNegNoNan,
    Float,
    NonNegFloat,
    OpenDict,
    OpenUnit,
    PosCount,
    PosFloat,
    Str,
    Text,
    _Section,
)


class Constant(_Section):
    """One constant the certificate's bound depends on, with its provenance."""

    name: Text
    value: Float
    provenance: Literal["analytic", "enforced", "estimated", "assumed"]
    description: Str
    diagnostics: OpenDict
    """Open: estimator details differ per constant and estimator (empty when analytic)."""


class Condition(_Section):
    """One condition of the theorem, checked, with the measured numbers."""

    name: Text
    met: Bool
    detail: Str


CertificateKind = Literal["exact", "output-noise", "training-noise", "none"]


class Certificate(_Section):
    """The (epsilon, delta) unlearning certificate and everything needed to re-check it."""

    # epsilon 0 only for an exact certificate: the JSON Schema says it too (the validator below)
    model_config = ConfigDict(
        **_Section.model_config,
        json_schema_extra={
            "if": {"not": {"properties": {"kind": {"const": "exact"}}}},
            "then": {"properties": {"epsilon": {"not": {"const": 0}}}},
        },
    )

    method: Text
    kind: CertificateKind
    """``exact`` (the release is the reference), ``output-noise`` (Gaussian noise calibrated to a
    sensitivity bound), ``training-noise`` (the privacy comes from noise inside training) or
    ``none`` (the method has no theorem: no epsilon is certified)."""
    epsilon: ExtNonNegNoNan | None
    """The certified epsilon; null when the method has no theorem (kind ``none``); 0 only for ``exact``
    (the release is the retrained model itself: identical releases)."""
    delta: Delta
    sigma: ExtNonNegNoNan
    """Gaussian noise std of each release; "inf" when no finite noise certifies the run."""
    sensitivity: ExtNonNegNoNan | None
    """The bound on ||theta_U - theta_R||; null when there is none."""
    mechanism: Literal["analytic", "classic"]
    theorem: Text
    constants: list[Constant]
    conditions: list[Condition]
    assumptions: list[Str]
    warnings: list[Str]
    valid: Bool
    """False when a condition of the theorem fails or there is no theorem: reported, not issued."""
    conditional: Bool
    """True when some constant is estimated or assumed."""

    @model_validator(mode="after")
    def _consistent(self) -> Certificate:
        expected = any(c.provenance in ("estimated", "assumed") for c in self.constants)
        if self.conditional != expected:
            raise PydanticCustomError(
                "inconsistent",
                "{expected} (whether some constant is estimated or assumed)",
                {"expected": str(expected).lower(), "field": "conditional"},
            )
        if self.kind == "none" and (self.epsilon is not None or self.valid):
            raise PydanticCustomError(
                "inconsistent",
                "null (a method without a theorem certifies nothing)",
                {"field": "epsilon" if self.epsilon is not None else "valid"},
            )
        if self.kind != "none" and self.epsilon is None:
            raise PydanticCustomError(
                "inconsistent",
                "a number (the certified epsilon of a {kind} certificate)",
                {"kind": self.kind, "field": "epsilon"},
            )
        if self.kind != "exact" and self.epsilon == 0:
            raise PydanticCustomError(
                "inconsistent", "above 0 (only an exact certificate states epsilon 0)", {"field": "epsilon"}
            )
        return self

    @classmethod
    def of(cls, certificate: Any) -> Certificate:
        """The report section of a :class:`certify.certificate.Certificate`."""
        return cls(
            method=certificate.method,
            kind=certificate.kind,
            epsilon=certificate.epsilon,
            delta=certificate.delta,
            sigma=certificate.sigma,
            sensitivity=certificate.sensitivity,
            mechanism=certificate.mechanism,
            theorem=certificate.theorem,
            constants=[
                Constant(
                    name=c.name,
                    value=float(c.value),
                    provenance=c.provenance,
                    description=c.description,
                    diagnostics=dict(c.diagnostics),
                )
                for c in certificate.constants
            ],
            conditions=[Condition(name=c.name, met=bool(c.met), detail=c.detail) for c in certificate.conditions],
            assumptions=list(certificate.assumptions),
            warnings=list(certificate.warnings),
            valid=bool(certificate.valid),
            conditional=certificate.conditional,
        )


class Realized(_Section):
    """The epsilon this very deletion spends (Gaussian mechanism with the measured distance)."""

    distance_unlearned_retrained: ExtNonNeg
    sensitivity_bound: ExtNonNegNoNan | None
    """The certificate's sensitivity; null when it states none."""
    bound_slack: ExtNonNeg | None
    """sensitivity / distance ("inf" when the distance is 0; null without a sensitivity)."""
    epsilon: ExtNonNeg
    mechanism: Literal["analytic", "classic"]
    exceeds_certified: Bool
    bound_violated: Bool
    no_op_distance: ExtNonNeg | None = Absent()
    """||theta_original - theta_R||: how far doing nothing (releasing the original model) is from
    retraining. null where the no-op reference does not apply: no certificate, noise inside training
    (DP-SGD), or no finite noise."""
    no_op_epsilon: ExtNonNeg | None = Absent()
    """The realized epsilon of that no-op: the same Gaussian mechanism at the same sigma and delta with
    no_op_distance. At or below the certified epsilon, the noise alone hides the deletion (finding
    ``no-op-passes``). null where no_op_distance is."""


class LedgerRelease(_Section):
    """One published release of a sequence of deletion requests."""

    index: PosCount
    """k: the release after requests 1..k."""
    epsilon: ExtNonNegNoNan
    """Certified epsilon of this release against retraining on D minus every request so far (0 when exact)."""
    delta: Delta
    sigma: ExtNonNegNoNan
    sensitivity: ExtNonNegNoNan
    noise_multiplier: ExtNonNeg
    """sigma / sensitivity ("inf" when the sensitivity is 0)."""
    forget_total: PosCount
    """Records deleted by requests 1..k."""
    certificate_valid: Bool
    cumulative_epsilon: ExtNonNeg
    """Epsilon for an adversary who sees releases 1..k (exact composition, at the ledger's delta)."""
    cumulative_mu: ExtNonNeg
    """mu = sqrt(sum over releases 1..k of (sensitivity/sigma)^2): the composed Gaussian-DP parameter."""
    rdp_epsilon: ExtNonNeg
    """The Renyi-DP cross-check of cumulative_epsilon (valid, never smaller)."""
    cumulative_order: PosFloat | None
    """The RDP order achieving rdp_epsilon (null when it is 0 or infinite)."""
    budget_spent: Bool
    distance: ExtNonNeg | None
    """Measured ||theta_k - retrained_k||."""
    realized_epsilon: ExtNonNeg | None
    """The epsilon this release spends at the measured distance."""
    label: Str | None
    kind: CertificateKind
    """The kind of the release's certificate: only output-noise and exact releases compose as
    Gaussian releases."""


class LedgerOrders(_Section):
    min: PosFloat
    max: PosFloat
    count: PosCount


class BasicComposition(_Section):
    epsilon: ExtNonNeg
    delta: NonNegFloat
    """The sum of the per-release deltas (may exceed 1: then it says nothing)."""


class Ledger(_Section):
    """Every release of a sequence of deletion requests, and their composed guarantee."""

    composition: Text
    orders: LedgerOrders
    delta: OpenUnit
    budget_epsilon: PosFloat | None
    cumulative_epsilon: ExtNonNeg
    """Exact composition of every release (mu-GDP on the analytic Gaussian curve)."""
    cumulative_mu: ExtNonNeg
    rdp_epsilon: ExtNonNeg
    """The Renyi-DP cross-check."""
    cumulative_order: PosFloat | None
    basic_composition: BasicComposition
    budget_spent: Bool
    retrain_due: Bool
    """True once the cumulative epsilon exceeds the budget: retrain from scratch."""
    first_release_over_budget: PosCount | None
    releases: Annotated[list[LedgerRelease], Field(min_length=1)]
    warnings: list[Str]
    consecutive: list[OpenDict] = Absent()
    """The optimal attack on each pair of consecutive releases k, k+1 (what request k+1 removed):
    its Clopper-Pearson bound, jointly valid over the steps, and the pair's exact epsilon."""
