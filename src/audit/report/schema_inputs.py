"""Report sections about what was audited: the tool, the findings, the configuration, the
dataset, the deletion request and the model (:mod:`audit.report.schema`)."""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import (
    AllowInfNan,
    BaseModel,
    Field,
    Strict,
    model_validator,
)
from pydantic_core import PydanticCustomError

from audit.commitment import REQUEST_ID_PATTERN, REQUEST_ID_WORDS
from audit.findings import CODES
from audit.report.encoding import MAX_SAFE_INT
from audit.report.schema_fields import (
    Bool,
    Count,
    NonNegFloat,
    OpenDict,
    PosCount,
    Probability,
    Seed,
    Sha256,
    Str,
    Text,
    _Section,
    pattern_str,
)
from certify.errors import (
    Anything,
    Boolean,
    Choice,
    Constraint,
    Integer,
    ListOf,
    MappingOf,
    OneOf,
    Optional,
    Real,
)
from certify.errors import Text as TextConstraint


class Tool(_Section):
    """The program that wrote the report."""

    name: Literal["unlearn-audit"]
    version: Text
    """The installed distribution's version (``0+unknown`` when run from a source tree)."""


FindingCode = Literal[tuple(CODES)]  # type: ignore[valid-type]


class Finding(_Section):
    """One conclusion of the audit; its code decides its severity and its effect on the verdict
    (the table :data:`audit.findings.CODES`)."""

    severity: Literal["error", "warning"]
    code: FindingCode
    """Stable kebab-case code from :data:`audit.findings.CODES`."""
    message: Text

    @model_validator(mode="after")
    def _severity_of_code(self) -> Finding:
        expected = CODES[self.code].severity
        if self.severity != expected:
            raise PydanticCustomError(
                "inconsistent",
                "'{expected}' (the severity of code {code})",
                {"expected": expected, "code": self.code, "field": "severity"},
            )
        return self


AttackName = pattern_str(r"^[a-z0-9]+([-_][a-z0-9]+)*$", 'an attack name (lowercase, e.g. "mia")')
RequestId = pattern_str(REQUEST_ID_PATTERN, REQUEST_ID_WORDS)


def _annotation(c: Constraint, name: str) -> Any:
    """The report type of a configuration field, derived from its declared constraint."""
    if isinstance(c, Optional):
        return _annotation(c.inner, name) | None
    if isinstance(c, Integer):
        if c.hi is not None and c.hi > MAX_SAFE_INT:
            return Seed  # beyond JSON's exact integers: a decimal string
        return Annotated[
            int,
            Strict(),
            Field(ge=c.lo if c.lo is not None else -MAX_SAFE_INT, le=c.hi if c.hi is not None else MAX_SAFE_INT),
        ]
    if isinstance(c, Real):
        return Annotated[float, Strict(), AllowInfNan(False), Field(gt=c.gt, ge=c.ge, lt=c.lt, le=c.le)]
    if isinstance(c, Choice):
        return Literal[tuple(c.options)]  # type: ignore[valid-type]
    if isinstance(c, Boolean):
        return Bool
    if isinstance(c, ListOf):
        return Annotated[list[_annotation(c.item, name)], Field(min_length=c.min_len)]
    if isinstance(c, MappingOf):
        if isinstance(c.value, Anything):
            return OpenDict
        key = Literal[tuple(c.keys)] if c.keys else Str  # type: ignore[valid-type]
        return dict[key, _annotation(c.value, name)]
    if isinstance(c, TextConstraint):
        return Text
    if isinstance(c, OneOf):
        return Union[tuple(_annotation(a, name) for a in c.alternatives)]  # noqa: UP007 (a runtime tuple)
    if name == "attacks":
        return list[AttackName]
    if name == "request_id":
        return RequestId
    return Text  # a registry name (method, model)


#: Configuration fields that reports of this schema written before them do not hold (absent: None).
CONFIG_ADDED_LATER = (
    "train",
    "unlearn",
    "original",
    "time_budget",
    "utility_records",
    "diagnostic_budget",
    "one_run_whitebox_canaries",
    "trial_budget",
)


def _config_model() -> type[BaseModel]:
    from pydantic import create_model

    from audit.config import FIELDS

    fields = {
        f.name: (
            _annotation(f.constraint, f.name),
            Field(description=f.help) if f.name not in CONFIG_ADDED_LATER else Field(None, description=f.help),
        )
        for f in FIELDS
    }
    return create_model(
        "Config", __base__=_Section, __doc__="The audit's configuration (declared in audit.config.FIELDS).", **fields
    )


Config = _config_model()


class ClassBalance(_Section):
    """Fraction of each class (index = label) per split."""

    train: list[Probability]
    test: list[Probability]
    unseen: list[Probability]


class Dataset(_Section):
    """The data the audit ran on, and its content hash (GDPR evidence: which data)."""

    name: Text
    n_train: PosCount
    n_test: Count
    n_unseen: Count
    d: PosCount
    """Values per record after preprocessing (the product of ``input_shape``)."""
    input_shape: list[PosCount]
    """The shape of one record: ``[d]`` for features, ``[C, H, W]`` for images."""
    n_classes: Annotated[int, Strict(), Field(ge=2, le=MAX_SAFE_INT)]
    class_balance: ClassBalance
    n_groups: Count | None
    max_row_norm: NonNegFloat
    content_hash: Sha256
    """SHA-256 (hex) over every array's name, dtype, shape and bytes."""
    forget_size: PosCount
    """|Z|: records deleted."""
    source: OpenDict
    """Open: provenance differs per dataset (citation, licence, file SHA-256s, URL)."""
    preprocessing: OpenDict
    """Open: every preprocessing step and its fitted parameters differ per dataset."""


class DeletionRequest(_Section):
    """The deletion request as a salted hash commitment: never the raw record identifiers."""

    scheme: Text
    """How ``commitment`` is computed from the salt and the identifiers."""
    identifier: Text
    """What a record identifier is (the caller's id column, or a position in the source)."""
    identifier_type: Literal["integer", "text"]
    """Integer ids sort numerically and are JSON integers; text ids sort by code point."""
    commitment: Sha256
    n_records: PosCount
    salt: Literal["kept by the operator, not in this report"]
    """A fixed sentence: the secret salt itself must never appear in a report."""
    request_id: RequestId | None
    """The caller's id of the request (``--request-id``, e.g. a ticket number); null when none was given."""


class Layer(_Section):
    name: Text
    type: Text
    parameters: Count
    """Parameters held by this layer itself."""


class ModelCheck(_Section):
    """One assumption of the method's theorem checked on the module's layers."""

    name: Text
    met: Bool
    detail: Str


#: Whose model an audit ran on (``model.origin``); only ``built-in`` is this toolkit's own.
MODEL_ORIGINS = ("built-in", "plug-in", "module", "caller")


class Model(_Section):
    """What was audited: the module, its layers, and SHA-256 digests of its architecture and θ."""

    source: Text
    """Where the module came from: a built-in name, a factory, or the caller's module."""
    origin: Literal[MODEL_ORIGINS]  # type: ignore[valid-type]
    """Whose model it is: ``built-in`` (a demonstration model of this toolkit, not the caller's),
    ``plug-in`` (registered by an installed package), ``module`` (``module:<path>:<factory>``) or
    ``caller`` (passed to ``audit.run``)."""
    module_class: Text
    """The module's class (``package.module.QualifiedName``)."""
    input_shape: list[PosCount]
    outputs: PosCount
    parameters: PosCount
    """d: the number of trained parameters (the length of θ)."""
    layer_types: dict[Text, PosCount]
    """Leaf layers counted by type."""
    layers: list[Layer]
    """Leaf layers in order (the first 200)."""
    layers_not_listed: Count
    architecture_sha256: Sha256
    architecture_sha256_of: Text
    initial_theta_sha256: Sha256
    """SHA-256 of θ_0 (its bytes, as ``parameters.sha256_*`` digests the trained parameters)."""
    checks: list[ModelCheck]
    """The method's assumptions about the model, checked on its layers (empty for a method without
    a theorem); a failed one withdraws the certificate."""
