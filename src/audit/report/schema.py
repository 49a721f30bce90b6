"""The report model: the single source of truth for ``report.json`` and its JSON Schema.

Every section of the report is a pydantic v2 model here. The JSON Schema shipped with the
package (``audit/report/schemas/report-<version>.schema.json``) is generated from these models
by ``python -m audit.report.schema`` and a test fails if the committed file drifts from them.

API
---
* :class:`ReportModel`: the whole report. ``ReportModel.from_report_dict(d)`` validates a dict
  as loaded from ``report.json`` (raises :class:`pydantic.ValidationError`);
  ``model.to_json_dict()`` gives the JSON-ready dict the producer writes (every explicit
  encoding below applied); ``model.to_json_text()`` the exact text (sorted keys, indent 2).
* :func:`validate_report`: the same validation, but a corrupt report raises one
  :class:`certify.errors.InvalidInput` naming the dotted path of the first bad field
  (``certificate.epsilon``, ``attacks.attacks.mia.bound.counts.tp``).
* :func:`load_report`: read and validate a ``report.json`` file (bare ``NaN``/``Infinity``
  literals are rejected: they are not JSON).
* :func:`json_schema`: the JSON Schema (draft 2020-12) with ``$id``, ``title`` and ``version``;
  :func:`schema_path` is where the generated file is shipped.

Explicit encodings (RFC 8785 canonical JSON has neither non-finite numbers nor integers
beyond ±(2**53 − 1))
----------------------------------------------------------------------------------------
* :data:`ExtFloat` ("extended float"): a real number that may legitimately be ``+inf``,
  ``-inf`` or ``nan`` (an unbounded ε, σ = ∞ when no finite noise certifies a run, a GDP fit
  that is undefined, the std of a single noise draw, a diverged run's losses). JSON: a number,
  or one of the strings ``"inf"``, ``"-inf"``, ``"nan"`` (only those the field allows; e.g.
  ``certificate.sigma`` allows ``"inf"`` but never ``"nan"`` or a negative number). Python:
  ``float``. Used for every *measured or derived* real quantity: ε's, σ's, sensitivities,
  distances, norms, losses, accuracies, slack, GDP estimates, thresholds, standard deviations,
  relearn losses.
* Finite floats (plain JSON numbers, non-finite values rejected) are used for inputs and for
  values that cannot be non-finite by construction: configuration values, δ, confidences,
  ROC points, AUROCs and TPRs, Clopper-Pearson rate bounds, class balances, histogram edges,
  timings, certificate constant values, relearn step statistics.
* :data:`Seed`: every seed (``seeds.*``, ``config.seed``, ``attacks.trials.seed`` and
  ``root_seed``, each bound's ``seed``, the population MIA ``protocol.seed``) is an unsigned
  64-bit integer written as a canonical decimal string (``"6716946102996081540"``; pattern
  ``^(0|[1-9][0-9]*)$``) and parsed back to ``int``. Reading also accepts a JSON integer
  (reports written before the producer switched); writing always emits the string.
* Every other integer is a count (records, trials, steps, bins) and must lie in
  [−(2**53 − 1), 2**53 − 1]; the schema says so with ``minimum``/``maximum``.
* Open sections (``dict[str, Any]``: dataset ``source`` and ``preprocessing``, config
  ``feature_map`` and ``method_options``, each attack's ``details``, method
  ``hyperparameters``, constant ``diagnostics``) have no per-field schema, so values are
  normalised generically: non-finite floats become ``"inf"``/``"-inf"``/``"nan"``, integers
  beyond ±(2**53 − 1) become decimal strings (they cannot be parsed back: no schema says they
  were integers), tuples become lists; anything that is not JSON data is rejected.
* Timestamps (``created_at``, ``started_at``) are RFC 3339 strings in UTC (``Z`` or
  ``+00:00``), kept verbatim.

Keys that may be left out (never written as ``null``)
-----------------------------------------------------
``utility.<model>.<split>.noisy_*`` (σ not finite), ``tradeoff.rows[i].test_accuracy_released``
and ``realized_epsilon`` (σ not finite), ``timings.attacks_s`` (no attack ran),
``timings.unlearn_repeats_s``/``retrain_repeats_s`` (a report written before timings were repeated),
``environment.cuda_device``/``cuda_version`` (not on CUDA), ``ledger`` (a single request). Every
other key is required; ``null`` is allowed only where the type says so (``attacks``,
``tradeoff``, ``checkpoint_recovery``, ``started_at``, a ``none`` certificate's ``epsilon`` and
``sensitivity``, config options left unset, ...). ``attacks.attacks`` holds one entry per attack
that ran, by name (built-in or plug-in).
:meth:`ReportModel.to_json_dict` writes an optional key only when it was given.

``extra="forbid"``
------------------
Every model here forbids unknown keys (a typo or an injected field is an error), except
:class:`Timings`, which accepts additional ``<stage>_s``-style entries as long as they are
finite numbers ≥ 0 (the producer adds stages as it grows). Openness is confined to the
``dict[str, Any]`` sections listed above (and each attack's ``details``), each documented where
it is declared.

Cross-field checks (pydantic only; the JSON Schema checks shape, types and ranges)
----------------------------------------------------------------------------------
``verdict`` agrees with the findings (:func:`audit.findings.verdict_of`), and each finding's
severity with its code; ``certificate.conditional`` agrees with the constants' provenance; a
``none`` certificate states no ε and is not valid; ``deletion_request.n_records == dataset.forget_size``;
``started_at <= created_at``; ROC curves have as many FPR as TPR points; every loss histogram
has ``len(edges) - 1`` bins; the four ``noisy_*`` utility fields come all or none; a tradeoff
row has ``test_accuracy_released`` and ``realized_epsilon`` exactly when its σ is finite.

Versions: the rule (report ``schema_version`` and the comparison's, ``MAJOR.MINOR``)
---------------------------------------------------------------------------------
* A new optional key (declared with ``Absent()`` or a default, so a document without it still
  validates) is a **minor** version: 2.2 → 2.3. Every document of an older minor version of the
  same major still validates against the newer models.
* A **reader** (:meth:`ReportModel.from_report_dict`, :func:`validate_report`, :func:`load_report`,
  ``audit report``, ``audit compare`` reading its methods' reports) accepts a document of its own
  major version: when the document's minor version is newer than the reader's, keys the reader does
  not know are ignored (:func:`read_context`); when it is the reader's own or older, an unknown key
  is an error as before (a typo, an injected field). Another major version is refused.
* A **writer** (the pipeline, ``audit compare``: the models built directly) stays strict: it writes
  its own version exactly and refuses unknown keys.
* Anything else (a key removed or renamed, a type, unit or meaning changed, an optional key made
  required) is a breaking change: a **major** version, 2.x → 3.0. The JSON Schema shipped for a
  version describes that version exactly (``additionalProperties: false``).
"""

from __future__ import annotations

import json
import math
import numbers
import re
import sys
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any, Literal, Union

from pydantic import (
    AfterValidator,
    AllowInfNan,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    PrivateAttr,
    Strict,
    ValidationError,
    ValidationInfo,
    WithJsonSchema,
    model_validator,
)
from pydantic_core import PydanticCustomError

from audit.commitment import REQUEST_ID_PATTERN, REQUEST_ID_WORDS
from audit.findings import CODES, VERDICTS
from audit.findings import verdict_of as _verdict_of
from audit.report import SCHEMA_VERSION, TOOL
from audit.report.encoding import MAX_SAFE_INT, json_safe
from audit.report.encoding import encode_float as _encode_float
from certify.errors import (
    Anything,
    Boolean,
    Choice,
    Constraint,
    Integer,
    InvalidInput,
    ListOf,
    MappingOf,
    OneOf,
    Optional,
    Real,
)
from certify.errors import Text as TextConstraint

__all__ = [
    "SCHEMA_ID",
    "SCHEMA_VERSION",
    "ExtFloat",
    "ReportModel",
    "Seed",
    "json_schema",
    "load_report",
    "schema_path",
    "validate_report",
    "verdict_of",
]

SCHEMA_ID = f"https://unlearn-audit.dev/schemas/report-{SCHEMA_VERSION}.schema.json"
JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
NONFINITE = ("inf", "-inf", "nan")

# ----------------------------------------------------------------------------------------------
# Scalar types


Count = Annotated[int, Strict(), Field(ge=0, le=MAX_SAFE_INT)]
PosCount = Annotated[int, Strict(), Field(ge=1, le=MAX_SAFE_INT)]
Str = Annotated[str, Strict()]
Text = Annotated[str, Strict(), Field(min_length=1)]
Bool = Annotated[bool, Strict()]
Float = Annotated[float, Strict(), AllowInfNan(False)]
NonNegFloat = Annotated[float, Strict(), AllowInfNan(False), Field(ge=0)]
PosFloat = Annotated[float, Strict(), AllowInfNan(False), Field(gt=0)]
Probability = Annotated[float, Strict(), AllowInfNan(False), Field(ge=0, le=1)]
OpenUnit = Annotated[float, Strict(), AllowInfNan(False), Field(gt=0, lt=1)]
Delta = Annotated[float, Strict(), AllowInfNan(False), Field(ge=0, lt=1)]


def pattern_str(pattern: str, words: str, **schema: Any) -> Any:
    """A string matching ``pattern``; errors say ``words`` instead of the regular expression."""
    regex = re.compile(pattern)

    def check(v: str) -> str:
        if not regex.match(v):
            raise PydanticCustomError("string_pattern", words)
        return v

    return Annotated[
        str, Strict(), AfterValidator(check), WithJsonSchema({"type": "string", "pattern": pattern, **schema})
    ]


Sha256 = pattern_str(r"^[0-9a-f]{64}$", "a SHA-256 digest (64 lowercase hex digits)")
Pair = Annotated[tuple[Count, Count], Strict(False)]
"""(unlearned world, retrained world) counts; a JSON array of two integers."""


def ext_float(
    *,
    ge: float | None = None,
    gt: float | None = None,
    le: float | None = None,
    nan: bool = True,
    description: str | None = None,
) -> Any:
    """An annotated float that may be ±inf or nan, encoded in JSON as ``"inf"``/``"-inf"``/``"nan"``.

    ``ge``/``gt``/``le`` bound every non-nan value (so ``ge=0`` admits ``"inf"`` but not
    ``"-inf"``); ``nan=False`` rejects nan. The JSON Schema lists exactly the admitted strings.
    """
    allowed = [s for s in NONFINITE if (nan if s == "nan" else _within(float(s), ge, gt, le))]
    words = ", ".join(repr(s).replace("'", '"') for s in allowed)
    bounds = _bounds_text(ge, gt, le)
    expected = f"a number{bounds}" + (f" or one of {words}" if allowed else "")

    def parse(v: Any) -> float:
        if isinstance(v, str) and v in allowed:
            return float(v)
        if isinstance(v, numbers.Real) and not isinstance(v, bool):
            x = float(v)
            if math.isnan(x) and nan or not math.isnan(x) and _within(x, ge, gt, le):
                return x
        raise PydanticCustomError("ext_float", expected)

    number: dict[str, Any] = {"type": "number"}
    if ge is not None:
        number["minimum"] = ge
    if gt is not None:
        number["exclusiveMinimum"] = gt
    if le is not None:
        number["maximum"] = le
    schema: dict[str, Any] = {"anyOf": [number, {"enum": allowed, "type": "string"}]} if allowed else number
    schema["description"] = description or (
        "A real number" + bounds + (f"; non-finite values are written as {words}" if allowed else "")
    )
    return Annotated[
        float,
        BeforeValidator(parse),
        PlainSerializer(_encode_float, when_used="json"),
        WithJsonSchema(schema),
    ]


def _within(x: float, ge: float | None, gt: float | None, le: float | None) -> bool:
    if math.isnan(x):
        return False
    return (ge is None or x >= ge) and (gt is None or x > gt) and (le is None or x <= le)


def _bounds_text(ge: float | None, gt: float | None, le: float | None) -> str:
    parts = []
    if ge is not None:
        parts.append(f">= {ge:g}")
    if gt is not None:
        parts.append(f"> {gt:g}")
    if le is not None:
        parts.append(f"<= {le:g}")
    return (" " + " and ".join(parts)) if parts else ""


ExtFloat = ext_float()
"""Any real number, ±inf or nan."""
ExtNonNeg = ext_float(ge=0)
"""≥ 0, +inf or nan."""
ExtNonNegNoNan = ext_float(ge=0, nan=False)
"""≥ 0 or +inf (never nan): σ, sensitivities, certified ε."""
ExtPosNoNan = ext_float(gt=0, nan=False)
ExtProbability = ext_float(ge=0, le=1)
"""In [0, 1], or nan (a rate that is undefined)."""

_SEED_PATTERN = re.compile(r"^(0|[1-9][0-9]*)$")
_SEED_WORDS = 'an unsigned 64-bit integer written as a decimal string (e.g. "42")'


def _parse_seed(v: Any) -> int:
    if isinstance(v, str) and _SEED_PATTERN.match(v) and len(v) <= 20:
        x = int(v)
    elif isinstance(v, int) and not isinstance(v, bool):
        x = v
    else:
        raise PydanticCustomError("seed", _SEED_WORDS)
    if not 0 <= x < 2**64:
        raise PydanticCustomError("seed", _SEED_WORDS)
    return x


Seed = Annotated[
    int,
    BeforeValidator(_parse_seed),
    PlainSerializer(lambda x: str(x), when_used="json"),
    WithJsonSchema(
        {
            "type": "string",
            "pattern": _SEED_PATTERN.pattern,
            "maxLength": 20,
            "description": "A seed: an unsigned 64-bit integer as a canonical decimal "
            "string (JSON numbers lose integers above 2**53).",
        }
    ),
]
"""A seed: ``int`` in Python, canonical decimal string in JSON (JSON integer accepted on input)."""

_TIMESTAMP = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]00:00)$")
_TIMESTAMP_WORDS = 'an RFC 3339 timestamp in UTC (e.g. "2026-01-31T12:00:00+00:00" or "...Z")'


def _check_timestamp(v: str) -> str:
    try:
        if not _TIMESTAMP.match(v):
            raise ValueError(v)
        datetime.fromisoformat(v.replace("Z", "+00:00"))
    except ValueError:
        raise PydanticCustomError("timestamp", _TIMESTAMP_WORDS) from None
    return v


Timestamp = Annotated[
    str,
    Strict(),
    AfterValidator(_check_timestamp),
    WithJsonSchema(
        {
            "type": "string",
            "format": "date-time",
            "pattern": _TIMESTAMP.pattern,
            "description": "RFC 3339 timestamp in UTC (Z or +00:00).",
        }
    ),
]


def _json_safe(value: Any) -> Any:
    try:
        return json_safe(value)
    except ValueError as exc:
        raise PydanticCustomError("json_data", str(exc)) from None


OpenDict = Annotated[
    dict[str, Any],
    AfterValidator(_json_safe),
    WithJsonSchema(
        {
            "type": "object",
            "description": "An open section (no per-field schema). Numbers are finite or "
            'the strings "inf", "-inf", "nan"; integers beyond '
            "2**53 - 1 are decimal strings.",
        }
    ),
]
"""An open section: any JSON object, normalised by :func:`_json_safe`."""


def _absent_ok(schema: dict[str, Any]) -> None:
    schema.pop("default", None)


def Absent(**kwargs: Any) -> Any:  # noqa: N802 (reads like a type in the field declarations)
    """A key the producer may leave out (never written as ``null``)."""
    return Field(default=None, json_schema_extra=_absent_ok, **kwargs)


#: The validation context's key under which a reader marks a document of a newer minor version.
NEWER_MINOR = "newer_minor"


def _version(text: Any) -> tuple[int, int] | None:
    major, dot, minor = str(text).partition(".")
    return (int(major), int(minor)) if dot and major.isdigit() and minor.isdigit() else None


def read_context(document: Any, ours: str) -> dict[str, bool]:
    """The validation context a reader of version ``ours`` uses for ``document`` (module docstring,
    "Versions"): ``{NEWER_MINOR: True}`` when the document is a newer minor version of our major,
    so that its sections' unknown keys are ignored; else strict."""
    theirs = _version(document.get("schema_version")) if isinstance(document, dict) else None
    mine = _version(ours)
    assert mine is not None, ours
    newer = theirs is not None and theirs[0] == mine[0] and theirs[1] > mine[1]
    return {NEWER_MINOR: newer}


def schema_version_field(ours: str) -> Any:
    """``schema_version``: exactly ``ours`` for a writer; any minor version of its major for a
    reader (:func:`read_context`; the JSON Schema keeps the const of this version)."""
    major = ours.split(".")[0]

    def check(v: str, info: ValidationInfo) -> str:
        theirs = _version(v)
        if v == ours or (info.context is not None and theirs is not None and str(theirs[0]) == major):
            return v
        raise PydanticCustomError(
            "schema_version", "'{ours}' (a reader also reads {major}.x)", {"ours": ours, "major": major}
        )

    return Annotated[str, AfterValidator(check), WithJsonSchema({"const": ours, "type": "string"})]


class _Section(BaseModel):
    model_config = ConfigDict(
        extra="forbid", strict=True, use_attribute_docstrings=True, frozen=False, validate_default=False
    )

    @model_validator(mode="before")
    @classmethod
    def _newer_minor_keys(cls, data: Any, info: ValidationInfo) -> Any:
        """A reader of a newer minor version's document drops the keys this version does not know."""
        if isinstance(data, dict) and (info.context or {}).get(NEWER_MINOR):
            return {k: v for k, v in data.items() if k in cls.model_fields}
        return data


# ----------------------------------------------------------------------------------------------
# Sections


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


class SplitUtility(_Section):
    """Accuracy and loss of one model on one split; ``noisy_*`` over released (noisy) draws.

    The ``noisy_*`` keys are absent when σ is not finite (no release is possible).
    """

    accuracy: ExtProbability
    loss: ExtNonNeg
    noisy_accuracy_mean: ExtProbability = Absent()
    noisy_accuracy_std: ExtNonNeg = Absent()
    noisy_loss_mean: ExtNonNeg = Absent()
    noisy_loss_std: ExtNonNeg = Absent()
    noisy_records: PosCount | None = None
    """Records the released draws were scored on: a seeded random subsample when fewer than the
    split's (None: every record, or no draws)."""
    noisy_accuracy_se: ExtNonNeg | None = None
    """Standard error of ``noisy_accuracy_mean`` as the mean released accuracy on the whole split:
    the draws' spread and, for a subsample, the records' (conservative)."""

    @model_validator(mode="after")
    def _noisy_all_or_none(self) -> SplitUtility:
        keys = ("noisy_accuracy_mean", "noisy_accuracy_std", "noisy_loss_mean", "noisy_loss_std")
        present = [k for k in keys if k in self.model_fields_set]
        if present and len(present) != len(keys):
            missing = next(k for k in keys if k not in present)
            raise PydanticCustomError(
                "inconsistent", "present with the other noisy_* fields (all four or none)", {"field": missing}
            )
        return self


class ModelUtility(_Section):
    retain: SplitUtility
    forget: SplitUtility
    test: SplitUtility
    noise_draws: Count
    """Released draws behind the ``noisy_*`` values (0 when σ is 0 or not finite)."""
    noisy_dtype: Str | None = None
    """Precision the released draws were scored in (float32 in a float64 run: no certificate reads them)."""


class SplitCounts(_Section):
    forget: list[Count]
    retain: list[Count]
    unseen: list[Count]


class HistogramCounts(_Section):
    original: SplitCounts
    unlearned: SplitCounts
    retrained: SplitCounts


class LossHistograms(_Section):
    """Per-record loss histograms of each noiseless model on each split, shared bin edges."""

    edges: Annotated[list[Float], Field(min_length=2)]
    counts: HistogramCounts
    note: Str

    @model_validator(mode="after")
    def _bins_match_edges(self) -> LossHistograms:
        bins = len(self.edges) - 1
        for model in ("original", "unlearned", "retrained"):
            for split in ("forget", "retain", "unseen"):
                if len(getattr(getattr(self.counts, model), split)) != bins:
                    raise PydanticCustomError(
                        "inconsistent",
                        "{bins} bin counts (len(edges) - 1)",
                        {"bins": bins, "field": f"counts.{model}.{split}"},
                    )
        return self


class UnlearnedVsRetrained(_Section):
    """The noiseless unlearned and retrained models on the test split, record by record."""

    n: PosCount
    unlearned_wrong_retrained_right: Count
    retrained_wrong_unlearned_right: Count
    accuracy_gap: Float
    """Retrained minus unlearned test accuracy (positive: the unlearned model is worse)."""
    p_value: Probability
    """One-sided exact binomial test on the records where they disagree (H0: the unlearned model
    is no more often the wrong one): small means the unlearned model is significantly worse."""


class Utility(_Section):
    original: ModelUtility
    unlearned: ModelUtility
    retrained: ModelUtility
    loss_histograms: LossHistograms
    test_chance_accuracy: Probability
    """The majority-class rate of the test split: the accuracy of a model that learned nothing."""
    unlearned_vs_retrained: UnlearnedVsRetrained


class TradeoffRow(_Section):
    """One value of the method's knob on the tradeoff curve."""

    value: Float
    """The knob's value (R2D: the rewind K in steps)."""
    sensitivity: ExtNonNegNoNan
    sigma: ExtNonNegNoNan
    distance: ExtNonNeg
    test_accuracy_noiseless: ExtProbability
    test_accuracy_released: ExtProbability = Absent()
    """Absent when sigma is not finite."""
    realized_epsilon: ExtNonNeg = Absent()
    """Absent when sigma is not finite."""

    @model_validator(mode="after")
    def _released_iff_finite_sigma(self) -> TradeoffRow:
        finite = math.isfinite(self.sigma)
        for key in ("test_accuracy_released", "realized_epsilon"):
            if (key in self.model_fields_set) != finite:
                raise PydanticCustomError("inconsistent", "present exactly when sigma is finite", {"field": key})
        return self


class Knob(_Section):
    """A hyperparameter that trades noise against compute or utility (declared by the method)."""

    option: Text
    symbol: Text
    description: Text
    refits: Bool
    """True when every value is a different learning algorithm (each point refits and retrains)."""
    sigma_budget: Bool


class Tradeoff(_Section):
    """The knob–sigma–epsilon tradeoff: for each value of the method's knob, the bound, the sigma
    it needs at the certified epsilon, and what it buys."""

    knob: Knob
    chosen: Float
    """The value this audit used."""
    rows: Annotated[list[TradeoffRow], Field(min_length=1)]
    work: NonNegFloat = Absent()
    """The curve's own work in trainings of the audited model (a refit: 1; an R2D replay: K/T; the
    chosen value reuses the audit's own models: 0), within ``config.diagnostic_budget``."""
    left_out: list[Float] = Absent()
    """Values of the knob's grid the diagnostic budget left out (finding ``diagnostic-cut``)."""


class FrontierPoint(_Section):
    """The released model at one epsilon of the frontier."""

    epsilon: PosFloat
    sigma: ExtNonNegNoNan
    """The noise the method's certificate needs at this epsilon (its own ``certify``, same delta)."""
    test_accuracy_mean: ExtProbability
    """Test accuracy of the unlearned model plus that noise, mean over ``noise_draws`` draws."""
    test_accuracy_std: ExtNonNeg
    """Its standard deviation over the draws (0 without noise)."""
    test_accuracy_se: ExtNonNeg | None = None
    """Standard error of ``test_accuracy_mean`` (the draws' and, for a subsample, the records' spread)."""


class Frontier(_Section):
    """The privacy-utility frontier: released test accuracy as a function of epsilon, from this
    run's one fitted and unlearned model (the noise is the only thing that changes)."""

    applicable: Literal[True]
    delta: Delta
    mechanism: Literal["analytic", "classic"]
    noise_draws: PosCount
    test_accuracy_noiseless: ExtProbability
    """The unlearned model without noise: the frontier's ceiling."""
    points: Annotated[list[FrontierPoint], Field(min_length=1)]
    note: Str
    """What the curve is and, where some requested epsilons are left out, why."""
    test_records: PosCount | None = None
    """Test records the released models were scored on (a seeded subsample when below the split's size)."""


class FrontierNotApplicable(_Section):
    """No frontier from one trained model: the reason (training noise, no certificate, ...)."""

    applicable: Literal[False]
    reason: Text


FrontierSection = Annotated[Frontier | FrontierNotApplicable, Field(discriminator="applicable")]


class CheckpointRecovered(_Section):
    """Algorithm 3 (recover the checkpoint from the final parameters) ran."""

    applicable: Literal[True]
    distance_to_checkpoint: ExtNonNeg
    checkpoint_norm: ExtNonNeg
    steps: Count
    max_iterations: Count
    max_residual: ExtNonNeg
    converged: Bool
    tolerance: PosFloat
    rewind: Count = Absent()
    """K, the steps Algorithm 3 was asked to recover; ``steps`` < K when the diagnostic budget cut the
    check short (``distance_to_checkpoint`` is then to the stored θ_{T−steps}; finding ``diagnostic-cut``)."""
    gradients: Count = Absent()
    """Full-data gradients the check evaluated (its budget: ``config.diagnostic_budget`` × T)."""


class CheckpointNotApplicable(_Section):
    """Algorithm 3 does not apply (e.g. eta >= 1/L)."""

    applicable: Literal[False]
    reason: Text


CheckpointRecovery = Annotated[CheckpointRecovered | CheckpointNotApplicable, Field(discriminator="applicable")]


class Parameters(_Section):
    """Content hashes and norms of the original, unlearned and retrained parameters."""

    dimension: PosCount
    norm_original: ExtNonNeg
    norm_unlearned: ExtNonNeg
    norm_retrained: ExtNonNeg
    sha256_original: Sha256
    sha256_unlearned: Sha256
    sha256_retrained: Sha256


class Capabilities(_Section):
    """What the method declares it can do beyond the algorithm pair."""

    knob: Knob | None
    checkpoint_recovery: Bool
    batched_training: Bool
    deletable_before_training: Bool
    data_dependent_certificate: Bool
    any_training: Bool = False
    """The guarantee does not depend on how A trained: A may be the caller's training or weights (noisy-ft)."""
    reruns: Bool = False
    """The release is a noisy run the method re-runs from fixed starts (noisy-ft; trial mode ``rerun``)."""


class Method(_Section):
    """The unlearning method and its paper."""

    name: Text
    title: Text
    paper: Text
    certified: Bool
    """Whether the method has a theorem at all (the certificate says whether it was issued)."""
    capabilities: Capabilities
    hyperparameters: OpenDict
    """Open: each method (built-in or plug-in) has its own hyperparameters."""


class Timings(BaseModel):
    """Wall-clock seconds per stage. Further finite, non-negative entries are accepted."""

    model_config = ConfigDict(extra="allow", strict=True, use_attribute_docstrings=True)
    __pydantic_extra__: dict[str, NonNegFloat] = Field(init=False)

    learn_s: NonNegFloat
    unlearn_s: NonNegFloat
    """The unlearning's time: the median of ``unlearn_repeats_s`` (a single timing in reports without it)."""
    retrain_s: NonNegFloat
    """Retraining without the forgotten records: the median of ``retrain_repeats_s``."""
    speedup_vs_retrain: NonNegFloat
    """``retrain_s / unlearn_s``: medians over medians."""
    attacks_s: NonNegFloat = Absent()
    """Absent when no attack ran."""
    unlearn_repeats_s: Annotated[list[NonNegFloat], Field(min_length=1)] = Absent()
    """Every timing of the unlearning (``config.timing_repeats``), in order: the first on the audited method, each
    further one on a copy of it as trained (no repeat reuses work cached by another); min to max is the spread."""
    retrain_repeats_s: Annotated[list[NonNegFloat], Field(min_length=1)] = Absent()
    """Every timing of the retraining, as for ``unlearn_repeats_s``."""


class Seeds(_Section):
    """Every seed of the run, derived from ``root``."""

    root: Seed
    data: Seed
    forget: Seed
    init: Seed
    estimators: Seed
    noise: Seed
    attacks: Seed


class Environment(_Section):
    """Where the audit ran: Python, package versions (torch among them) and the device."""

    python: Text
    platform: Text
    packages: dict[str, Str | None]
    """Installed version of each numerical dependency (null when not installed); has ``torch``."""
    device: Text
    threads: PosCount
    """torch's CPU threads during the run (:mod:`audit.threads`)."""
    threads_reason: Text
    """Why that many: ``auto``'s rule with the problem's size, or the configured count."""
    omp_wait_policy: Str | None
    """``OMP_WAIT_POLICY`` of the process (the CLI sets ``PASSIVE``; null: the runtime's default)."""
    dtype: Literal["float64", "float32"] = Absent()
    """The dtype the audit trained, drew noise and attacked in (``dtype = auto`` resolved); absent from a
    comparison's environment and from reports written before it was recorded."""
    dtype_reason: Text = Absent()
    """Why that dtype: as configured, or ``auto``'s reading of the method's precision audit."""
    cuda_device: Text = Absent()
    """Present on CUDA only."""
    cuda_version: Str | None = Absent()
    """Present on CUDA only."""

    @model_validator(mode="after")
    def _torch_recorded(self) -> Environment:
        if "torch" not in self.packages:
            raise PydanticCustomError("inconsistent", "an object with a torch entry", {"field": "packages"})
        return self


# -- attacks -------------------------------------------------------------------------------------


class Counts(_Section):
    tp: Count
    fp: Count
    tn: Count
    fn: Count


class RocCurve(_Section):
    fpr: list[Probability]
    tpr: list[Probability]

    @model_validator(mode="after")
    def _same_length(self) -> RocCurve:
        if len(self.fpr) != len(self.tpr):
            raise PydanticCustomError(
                "inconsistent", "as many points as fpr ({n})", {"n": len(self.fpr), "field": "tpr"}
            )
        return self


class Roc(_Section):
    """Exact empirical ROC (world U positive): AUROC, TPR at low FPR, a downsampled curve."""

    auroc: Probability
    tpr_at_1pct_fpr: Probability
    tpr_at_0_1pct_fpr: Probability
    n_pos: PosCount
    n_neg: PosCount
    curve: RocCurve


Direction = Literal["U>R", "R>U"]


class GdpEstimate(_Section):
    """The mu-GDP reading of an attack's scores: a point fit (not a bound) and a lower bound that
    holds only under the hypothesis that the trade-off curve is Gaussian. Given only when the
    goodness-of-fit test accepts the Gaussian shape (``gof``); otherwise every mu and epsilon is
    nan and ``note`` says why."""

    mu: ExtNonNeg
    """nan when no threshold had enough trials, or the reading was refused (see ``note``)."""
    epsilon_estimate: ExtNonNeg
    delta: Delta
    direction: Direction
    n_points: Count
    min_count: PosCount
    n_trials: Pair
    note: Str
    method: Text
    kind: Literal["estimate"]
    gof: Literal["accepted", "rejected", "discrete", "untestable"] | None = Absent()
    """Verdict of the Gaussian-shape test (absent in reports written before it existed)."""
    gof_statistic: ExtNonNeg | None = Absent()
    """Likelihood-ratio statistic G2 of the equal-variance binormal fit; nan when not run."""
    gof_df: Count | None = Absent()
    """Its degrees of freedom (0 when not run)."""
    gof_p_value: ExtProbability | None = Absent()
    gof_level: OpenUnit | None = Absent()
    mu_lower: ExtNonNeg | None = Absent()
    """Clopper-Pearson lower bound on mu; nan when the reading was refused."""
    epsilon_lower: ExtNonNeg | None = Absent()
    """Epsilon at delta of mu_lower: a lower bound only under the Gaussian hypothesis."""
    confidence: OpenUnit | None = Absent()
    lower_method: Text | None = Absent()
    lower_kind: Literal["bound under the Gaussian (mu-GDP) hypothesis"] | None = Absent()


class GdpBound(_Section):
    """The Clopper-Pearson lower bound on mu of an attack's scores and its epsilon at delta, reported in
    noise mode only: there the release is the Gaussian mechanism on two fixed models, its trade-off
    curve is G_mu by construction, and this is a valid bound that can refute the certificate
    (attacks.gdp, Nasr et al. 2023). Elsewhere the GDP lower bound is ``gdp_estimate.epsilon_lower``,
    an estimate under the Gaussian hypothesis."""

    mu_lower: ExtNonNegNoNan
    epsilon_lower: ExtNonNegNoNan
    """Epsilon at delta of mu_lower (exact GDP conversion); inf when delta is 0 and mu_lower > 0."""
    kind: Literal["bound", "estimate"]
    basis: Literal[
        "bound: the release is the Gaussian mechanism on two fixed models (noise mode)",
        "bound under the Gaussian (mu-GDP) hypothesis",
    ]
    threshold: ExtFloat
    direction: Direction
    fpr_upper: Probability
    fnr_upper: Probability
    rate_confidence: OpenUnit
    n_tests: PosCount
    ceiling: ExtNonNegNoNan
    """The epsilon_lower of a perfectly separating attack at these trial counts."""
    confidence: OpenUnit
    delta: Delta
    method: Text


class EpsilonBound(_Section):
    """Clopper-Pearson lower bound on epsilon from an attack's scores on both worlds' releases."""

    epsilon_lower: ExtNonNegNoNan
    threshold: ExtFloat
    direction: Direction
    counts: Counts
    fpr_upper: Probability
    fnr_upper: Probability
    rate_confidence: OpenUnit
    n_trials: Pair
    n_evaluated: Pair
    n_thresholds: PosCount
    confidence: OpenUnit
    delta: Delta
    method: Literal[
        "clopper-pearson/half",
        "clopper-pearson/split",
        "clopper-pearson/bonferroni",
        "clopper-pearson/pareto-bonferroni",
        "clopper-pearson/explicit",
    ]
    """The threshold strategy: a calibration split (half or another fraction), Bonferroni over a
    grid, Bonferroni over the ROC's Pareto frontier, or a pre-registered threshold."""
    ceiling: ExtNonNegNoNan
    """The largest bound the protocol could give with the evaluated counts (perfect separation)."""
    seed: Seed | None
    """Seed of the calibration/evaluation split; null for the strategies that do not split."""
    kind: Literal["bound"]
    roc: Roc
    gdp_estimate: GdpEstimate
    gdp_bound: GdpBound | None = Absent()
    """Noise mode only: the GDP bound, valid there (absent in other modes and in older reports)."""
    n_tests: PosCount | None = Absent()
    """(threshold, direction) tests the error was shared among (absent in older reports)."""
    can_test: Bool | None = Absent()
    """Whether the ceiling exceeds the certified epsilon (0 when nothing is certified): if not, the bound
    cannot refute the certificate at this size, and its value is reported as "cannot test"."""
    size_to_test: PosCount | None = Absent()
    """When it cannot: the fewest trials per world whose ceiling would exceed the certified epsilon
    (:func:`audit.sizing.trials_to_test`); null when it can, or when no count up to the configuration's
    limit can."""


class EstimateInterval(_Section):
    """A point estimate and its two-sided interval (``Estimates.confidence``); inf only as the
    upper end of an epsilon whose worlds are nearly separated."""

    point: ExtNonNeg
    lower: ExtNonNeg
    upper: ExtNonNeg


class Estimates(_Section):
    """How much the attack's scores separate the worlds, and which way (:mod:`attacks.estimates`):
    estimates with intervals, never bounds. They rank methods; the bound tests the certificate."""

    kind: Literal["estimate"]
    auroc: EstimateInterval
    """DeLong interval around the AUROC (world U positive)."""
    tpr_at_fpr: dict[Str, EstimateInterval | None]
    """TPR at each low FPR ("0.01", "0.001") with a bootstrap interval; null: cannot estimate."""
    tpr_min_negatives: dict[Str, PosCount]
    """Retrained-world trials each FPR needs before its TPR is estimated."""
    epsilon: EstimateInterval | None
    """null when it cannot be estimated (fewer than 2 trials in a world, or no test to read)."""
    epsilon_method: Literal["gdp", "trade-off"]
    """gdp: mu-hat of the Gaussian trade-off curve (its shape test accepted); trade-off: the
    empirical test chosen on half the trials and read on the other half."""
    delta: Delta
    direction: Literal["under-unlearning", "over-unlearning", "undetermined", "not-oriented"]
    """under-unlearning: the unlearned model is closer to the original than retraining is (AUROC
    interval above 0.5); over-unlearning: farther (below 0.5); not-oriented: the attack's score
    cannot tell which way."""
    orientation: Literal["memory", "worlds"]
    confidence: OpenUnit
    n_bootstrap: PosCount
    seed: Seed
    n_trials: Pair
    note: Str


class AttackResult(_Section):
    """One attack: its bound from the released models' scores, and its own facts."""

    title: Text
    description: Text
    bound: EpsilonBound
    details: OpenDict
    """Open: what this attack reports beyond its bound (e.g. the population MIA's AUROCs,
    relearn-time summaries, the white-box distance)."""
    estimates: Estimates | None = Absent()
    """Estimates with intervals next to the bound (absent in older reports)."""


class TrialSizing(_Section):
    """Who chose the trial count and why (:mod:`audit.trial_budget`). In noise mode, unless the user chose,
    the count is sized by cost: the smallest of the bound's plateau (from the release's mu, known before any
    trial), the count a pilot's measured cost per trial fits in ``budget_s``, and the memory. The count depends
    on the machine's speed only through the budget: rerun with ``--trials`` at ``n_per_world`` (and the seed)
    for the same trials, bounds and verdict anywhere."""

    chosen_by: Literal["user", "target-ceiling", "mode-default", "cost"]
    """user: config.trials; target-ceiling: the fewest reaching config.target_ceiling; mode-default: the
    mode's constant (retrain and rerun modes); cost: sized by the rule above (noise mode)."""
    why: Text
    """One sentence, shown in the CLI and HTML reports."""
    stopped_by: Literal["plateau", "decided", "budget", "memory", "cap"] | None = Absent()
    """cost only: what ended the doubling: the bound's plateau, the decision (the predicted bound above the
    certified epsilon by a margin), the budget, the memory, or the cap of doublings."""
    budget_s: PosFloat | None = Absent()
    """cost only: config.trial_budget, seconds the sized attack stage may take by the pilot's rate."""
    clock: Literal["process-cpu", "wall"] | None = Absent()
    """cost only, with a pilot: this process's CPU time (local executor) or wall time (workers)."""
    pilot_trials: PosCount | None = Absent()
    """cost only, with a pilot: trials per world of the pilot (the attack stage at the floor count)."""
    pilot_s: NonNegFloat | None = Absent()
    """cost only, with a pilot: the pilot's measured seconds on ``clock`` (after an untimed run of 16 trials
    that pays the attacks' first use in the process)."""
    seconds_per_trial: NonNegFloat | None = Absent()
    """cost only, with a pilot: pilot_s / pilot_trials (fixed costs counted per trial: an upper estimate)."""
    predicted_s: NonNegFloat | None = Absent()
    """cost only, with a pilot: n_per_world x seconds_per_trial."""
    release_mu: ExtNonNeg | None = Absent()
    """cost only: ||theta_U - theta_R|| / sigma, the Gaussian release's mu (the realized epsilon's)."""
    predicted_bound: NonNegFloat | None = Absent()
    """cost only: the best attack's Clopper-Pearson bound predicted at this count (a sizing aid, not a bound)."""
    plateau_trials: PosCount | None = Absent()
    """cost only: the first count of floor x 2^k whose doubling adds less than ``plateau_gain`` to the
    predicted bound, or whose predicted bound exceeds the certified epsilon by the margin."""
    plateau_gain: PosFloat | None = Absent()


class Trials(_Section):
    """The released models the attacks scored: N per world."""

    mode: Literal["noise", "retrain", "rerun"]
    mode_reason: Text
    """Why this mode: the randomness an adversary faces (output noise, or training randomness)."""
    n_trials: PosCount
    seed: Seed
    sigma: ExtNonNegNoNan
    path: Literal["noise", "vmap", "loop"]
    seed_scheme: Text
    dim: PosCount
    device: Text
    dtype: Literal["float64", "float32"]
    spread_unlearned: NonNegFloat
    """Root-mean-square distance of the unlearned world's releases from that world's own noiseless model (the
    audit's U(A(D), D, Z): in noise mode the centre of the releases, so about sigma * sqrt(d))."""
    spread_retrained: NonNegFloat
    ceiling: ExtNonNegNoNan
    """The largest bound a perfectly separating attack could prove with these trials (default strategy)."""
    sized_for_ceiling: ExtPosNoNan | None
    """The target ceiling the trial count was sized for; null when the count was given."""
    n_per_world: PosCount
    root_seed: Seed
    confidence: OpenUnit
    """The level at which every attack's bound holds together (so the best one does too)."""
    per_attack_confidence: OpenUnit
    """Each bound's own level: 1 - (1 - confidence)/(2k) for k attacks with two statements each (Bonferroni)."""
    delta: Delta
    sizing: TrialSizing | None = Absent()
    """How the trial count was chosen (absent in older reports)."""


class Comparison(_Section):
    """Certified >= realized >= empirical: the audit's central check."""

    certified_epsilon: ExtNonNegNoNan | None
    """null when no certificate was issued (nothing can then be violated); 0 for an exact certificate."""
    realized_epsilon: ExtNonNeg
    empirical_epsilon_lower: dict[AttackName, ExtNonNegNoNan]
    best_empirical_epsilon: ExtNonNegNoNan
    best_attack: AttackName | None
    certificate_violated: Bool
    gaussian_epsilon_lower: dict[AttackName, ExtNonNegNoNan]
    """GDP lower bounds (Clopper-Pearson on mu) of the attacks whose trade-off passed the
    Gaussian goodness-of-fit test: valid under the Gaussian hypothesis only."""
    best_gaussian_attack: AttackName | None
    best_gaussian_epsilon_lower: ExtNonNegNoNan | None
    gaussian_above_certified: Bool
    """The best GDP lower bound exceeds the certified epsilon (evidence under the Gaussian hypothesis)."""
    realized_below_empirical: Bool
    ordering_holds: Bool | None
    """null when no certificate was issued."""
    gdp_bound_epsilon_lower: dict[AttackName, ExtNonNegNoNan] | None = Absent()
    """Noise mode only: every attack's GDP bound (valid there: the release is the Gaussian mechanism
    on two fixed models), which can refute the certificate like the Clopper-Pearson bound."""
    best_gdp_bound_attack: AttackName | None = Absent()
    best_gdp_bound_epsilon_lower: ExtNonNegNoNan | None = Absent()
    violated_by: Literal["clopper-pearson", "gdp-bound"] | None = Absent()
    """Which bound refuted the certificate (the Clopper-Pearson one when both did); null when none did."""


class PositiveControl(_Section):
    """The same attacks on the original model A(D) against the retrained one: their power."""

    epsilon_lower: dict[AttackName, ExtNonNegNoNan]
    auroc: dict[AttackName, Probability]
    best_attack: AttackName | None
    best_epsilon_lower: ExtNonNegNoNan
    has_power: Bool
    """False when no attack proves anything about the original model: a pass then means nothing."""


class TrialCost(_Section):
    """What the trials would take, estimated before they ran from the audit's own run: only where every
    trial is trainings run one at a time (retrain mode, a method without batched training: the caller's
    code); batched trials cost far less than the audit's single timing suggests, and none is estimated."""

    seconds_per_training: NonNegFloat
    """The slower of the audit's own learning on D and retraining on D minus Z (timings.learn_s, retrain_s;
    with production weights nothing is learned and learn_s is about 0)."""
    seconds_per_unlearning: NonNegFloat
    """The audit's own unlearning (timings.unlearn_s)."""
    trainings: Count
    """Two per model still to make (learning and retraining) over the trials and shadow models; those read
    back from the run directory are not counted."""
    unlearnings: Count
    """One per model still to make."""
    workers: PosCount
    estimated_s: NonNegFloat
    """(trainings x seconds_per_training + unlearnings x seconds_per_unlearning) / workers."""
    time_budget_s: PosFloat | None
    """config.time_budget: a run estimated over it was refused before its trials (null: no budget)."""


class Execution(_Section):
    """Where the trials and shadow models ran (audit.executors); the scores do not depend on it."""

    executor: Literal["local", "processes", "ray"]
    workers: PosCount
    shard_size: PosCount
    """Trials per shard (a multiple of the block of models computed together)."""
    shards: PosCount
    resumed: list[Text]
    """Shards read back from the run directory instead of computed, e.g. trials[0:64)."""
    run_directory: Text | None
    """The run directory (resume), or null."""
    cost: TrialCost | None = Absent()
    """The trials' estimated cost (absent where it is not estimated: batched or noise-mode trials)."""


class ProductionModel(_Section):
    """Where the production model (``original=``/``--original``) sits among the trials' original
    models A(D) (fresh trainings by the same ``train``): its mean loss on the training set D against
    theirs. ``z`` is on the logarithm of the loss (a training loss spans orders of magnitude). An
    outlier (|z| > ``z_limit``; by Chebyshev at most 1/z_limit² of any population lies that far
    out) is not modelled by the trials (finding ``original-outlier``)."""

    loss: ExtFloat
    """The production model's mean loss on D (eval mode)."""
    trials_mean: ExtFloat
    trials_std: ExtNonNeg
    trials_min: ExtFloat
    trials_max: ExtFloat
    z: ExtFloat
    """(log loss - mean of the trials' log losses) / their standard deviation; 0 or ±inf when the
    trials' losses are all equal."""
    percentile: Probability
    """The fraction of the trials' original models with a lower loss."""
    z_limit: PosFloat
    outlier: Bool


class Attacks(_Section):
    trials: Trials
    attacks: dict[AttackName, AttackResult]
    """One entry per attack that ran, by name (built-in or plug-in)."""
    comparison: Comparison
    positive_control: PositiveControl
    execution: Execution | None = None
    """Where the trials ran (absent from reports written before sharded execution)."""
    production: ProductionModel | None = Absent()
    """Present when the audited release is the production model (``original=``), in retrain mode."""


class Reproducibility(_Section):
    """The determinism check of the caller's ``train`` (before the trials): two trainings on the
    first ``records`` records of D with one seed and one θ_0, compared bit for bit."""

    records: PosCount
    seed: Seed
    """The seed both calls received (the audit's own run's ``train`` call seed)."""
    equal: Bool
    max_abs_difference: ExtNonNeg


# ----------------------------------------------------------------------------------------------
# The report

Verdict = Literal[VERDICTS]  # type: ignore[valid-type]
verdict_of = _verdict_of


class ReportModel(_Section):
    """An unlearn-audit report (``report.json``), schema version 2.3."""

    model_config = ConfigDict(
        extra="forbid",
        strict=True,
        use_attribute_docstrings=True,
        title="unlearn-audit report",
    )

    schema_version: schema_version_field(SCHEMA_VERSION)  # type: ignore[valid-type]
    """Version of this schema; a major version change breaks readers."""
    tool: Tool
    created_at: Timestamp
    """When the report was written."""
    started_at: Timestamp | None
    """When the audit started (null only for reports assembled by hand)."""
    verdict: Verdict
    """``violated`` when a finding shows a violation, ``not-certified`` when no certificate was
    issued (no theorem, or a failed condition), ``unusable`` when the unlearned model failed (it
    departs from the retrained model, or is itself at chance), else ``consistent``
    (:func:`audit.findings.verdict_of`)."""
    findings: list[Finding]
    config: Config
    method: Method
    dataset: Dataset
    model: Model
    deletion_request: DeletionRequest
    certificate: Certificate
    realized: Realized
    parameters: Parameters
    utility: Utility
    tradeoff: Tradeoff | None
    """null when the method declares no knob."""
    checkpoint_recovery: CheckpointRecovery | None
    """null when the method has no checkpoint recovery."""
    attacks: Attacks | None
    """null when no attack ran."""
    ledger: Ledger | None = Absent()
    """Present when the audit served several requests (``config.requests`` > 1)."""
    frontier: FrontierSection | None = Absent()
    """The privacy-utility frontier (``config.frontier``); absent when no epsilon was asked for."""
    reproducibility: Reproducibility | None = Absent()
    """The determinism check of the caller's training code (``train``/``unlearn`` audits only)."""
    one_run: OpenDict | None = Absent()
    """The one-run audit (Steinke et al. 2023 adapted to deletion), when one_run_canaries is set:
    a lower bound on the certificate's epsilon for deleting the inserted canaries. ``control``
    (optional; absent from reports before it): the game's positive control, its original model
    released at the same sigma and noise draw, with ``v`` of ``r`` guesses right, its
    ``epsilon_lower`` and ``has_power`` (that bound exceeds the certified epsilon, 0 without one)."""
    one_run_whitebox: OpenDict | None = Absent()
    """The white-box one-run audit (:mod:`audit.onerun_whitebox`), when one_run_whitebox_canaries is
    set: a lower bound on the certificate's epsilon for deleting the inserted canaries, from
    parameter-space canary scores (f-DP one-run bound on the guesses, and one test against the
    reference A(D)), its ``ceiling`` (computed before the run), ``control`` and ``seed``; or
    ``skipped`` with the reason when the certificate is not a finite Gaussian output noise."""
    timings: Timings
    seeds: Seeds
    environment: Environment

    @model_validator(mode="after")
    def _consistent(self) -> ReportModel:
        expected = verdict_of(self.findings)
        if self.verdict != expected:
            raise PydanticCustomError(
                "inconsistent",
                "'{expected}' (the verdict the findings imply)",
                {"expected": expected, "field": "verdict"},
            )
        if self.deletion_request.n_records != self.dataset.forget_size:
            raise PydanticCustomError(
                "inconsistent",
                "equal to dataset.forget_size = {m}",
                {"m": self.dataset.forget_size, "field": "deletion_request.n_records"},
            )
        if self.started_at is not None and _utc(self.started_at) > _utc(self.created_at):
            raise PydanticCustomError(
                "inconsistent", "not after created_at ({created})", {"created": self.created_at, "field": "started_at"}
            )
        return self

    #: the secret salt of the deletion commitment: held in memory, never serialised
    _commitment_salt: bytes | None = PrivateAttr(default=None)

    # -- API ---------------------------------------------------------------------------------
    @property
    def commitment_salt(self) -> bytes | None:
        """The deletion commitment's secret salt (never in the JSON): keep it with the operator."""
        return self._commitment_salt

    def with_salt(self, salt: bytes) -> ReportModel:
        self._commitment_salt = salt
        return self

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON data (alias of :meth:`to_json_dict`)."""
        return self.to_json_dict()

    def to_json(self) -> str:
        """``report.json`` text (alias of :meth:`to_json_text`)."""
        return self.to_json_text()

    def write(
        self, out_dir: str | Path, *, sign_key: str | Path | None = None, save_salt: bool = True, file_mode: int = 0o644
    ) -> Path:
        """Write the report directory as one set, as ``audit run --out`` does: ``report.json``,
        ``report.html``, the commitment salt (mode 0600, unless ``save_salt=False``) and with
        ``sign_key`` the signature; public files get ``file_mode``. Returns the ``report.json`` path.
        See :mod:`audit.report.directory`."""
        from audit.report.directory import write_report

        write_report(self, out_dir, sign_key=sign_key, save_salt=save_salt, file_mode=file_mode)
        return Path(out_dir).absolute() / "report.json"

    @classmethod
    def from_report_dict(cls, d: dict[str, Any]) -> ReportModel:
        """Validate a dict as loaded from ``report.json``; raises :class:`pydantic.ValidationError`.

        Use :func:`validate_report` for one :class:`~certify.errors.InvalidInput` naming the field.
        A report of a newer minor version of this major is read without the keys this version
        does not know (module docstring, "Versions").
        """
        return cls.model_validate(d, context=read_context(d, SCHEMA_VERSION))

    def to_json_dict(self) -> dict[str, Any]:
        """The JSON-ready dict: seeds as strings, non-finite floats as ``"inf"``/``"nan"``.

        Keys the producer may leave out (``Absent``) are written only when they were given.
        """
        return self.model_dump(mode="json", exclude_unset=True)

    def to_json_text(self) -> str:
        """``report.json`` text: sorted keys, indent 2, trailing newline, standard JSON."""
        return json.dumps(self.to_json_dict(), indent=2, sort_keys=True, allow_nan=False) + "\n"


def _utc(ts: str) -> datetime:
    return datetime.fromisoformat(ts.replace("Z", "+00:00"))


# ----------------------------------------------------------------------------------------------
# Validation with one clear sentence


_TAGS = {"applicable": "true or false"}
"""The discriminators of the report's tagged unions, and their values in words."""


class _Missing:
    def __repr__(self) -> str:
        return "nothing (the field is missing)"


MISSING = _Missing()
_MAX_GOT = 80


def validate_report(d: Any) -> ReportModel:
    """Validate a report dict; a corrupt one raises one :class:`InvalidInput` naming the field.

    ``InvalidInput.field`` is the dotted path of the first error (``certificate.epsilon``,
    ``certificate.constants[1].value``), ``allowed`` what the schema expects there, ``got`` the
    value found (truncated); ``hint`` counts further problems.
    """
    if not isinstance(d, dict):
        raise InvalidInput("report", "a JSON object (an unlearn-audit report.json)", type(d).__name__)
    try:
        return ReportModel.from_report_dict(d)
    except ValidationError as exc:
        raise _invalid_input(exc, d) from None


def _invalid_input(exc: ValidationError, data: Any) -> InvalidInput:
    errors = exc.errors(include_url=False)
    first = errors[0]
    kind, ctx = first["type"], first.get("ctx") or {}
    loc = tuple(first["loc"])
    if kind == "inconsistent":  # a cross-field rule: the model validator names its field
        loc += tuple(ctx["field"].split("."))
    path, value = _locate(loc, data)
    path = path or "report"
    if kind == "missing":
        allowed, got = "present (a required field of the report)", MISSING
    elif kind == "extra_forbidden":
        allowed = f"absent (not a field of the unlearn-audit report schema {SCHEMA_VERSION})"
        got = _short(first.get("input"))
    elif kind in ("union_tag_invalid", "union_tag_not_found"):  # the discriminator key
        key = str(ctx.get("discriminator", "")).strip("'\"")
        path = f"{path}.{key}" if key else path
        tags = _TAGS.get(key, "a known tag")
        if kind == "union_tag_invalid":
            allowed, got = tags, ctx.get("tag")
        else:
            allowed, got = f"present ({tags})", MISSING
    elif kind == "literal_error" and len(ctx.get("expected", "")) > 200:  # a long table: name it, not all of it
        allowed = (
            f"one of the {ctx['expected'].count(',') + 1} values of the report schema's table "
            f"({ctx['expected'].split(',')[0]}, ...)"
        )
        got = _short(value)
    else:
        allowed, got = _words(first["msg"]), _short(value)
    more = len(errors) - 1
    hint = f"({more} further problem{'s' if more > 1 else ''} in the report.)" if more else None
    return InvalidInput(path, allowed, got, hint)


def _locate(loc: tuple[Any, ...], data: Any) -> tuple[str, Any]:
    """Render a pydantic location as ``a.b[0].c`` and find the value there.

    Segments that are not part of the data (a discriminator tag, a validator's name) are
    dropped. The value is :data:`MISSING` when the last key is absent.
    """
    parts: list[str] = []
    node = data
    loc = tuple(seg for seg in loc if seg != "[key]")  # a mapping's key that failed: name the entry
    for i, seg in enumerate(loc):
        last = i == len(loc) - 1
        if isinstance(node, dict):
            if isinstance(seg, str) and (seg in node or last):
                parts.append(seg if not parts else f".{seg}")
                node = node.get(seg, MISSING)
            continue
        if isinstance(node, (list, tuple)):
            if isinstance(seg, int) and not isinstance(seg, bool) and 0 <= seg < len(node):
                parts.append(f"[{seg}]")
                node = node[seg]
            continue
        break
    return "".join(parts), node


def _words(msg: str) -> str:
    for prefix in ("Input should be ", "Value error, ", "Assertion failed, "):
        if msg.startswith(prefix):
            msg = msg[len(prefix) :]
    msg = re.sub(r" or instance of \w+", "", msg)
    if msg[:1].isupper() and not msg[1:2].isupper():
        msg = msg[:1].lower() + msg[1:]
    return msg


def _short(value: Any) -> Any:
    if value is MISSING:
        return value
    if isinstance(value, dict):
        return f"an object with keys {sorted(map(str, value))[:6]}" if len(repr(value)) > _MAX_GOT else value
    if isinstance(value, (list, tuple)) and len(repr(value)) > _MAX_GOT:
        return f"an array of {len(value)} items"
    if isinstance(value, str) and len(value) > _MAX_GOT:
        return value[: _MAX_GOT - 3] + "..."
    return value


def load_report(path: str | Path) -> ReportModel:
    """Read and validate a ``report.json`` (bare ``NaN``/``Infinity`` are not JSON: rejected)."""
    p = Path(path)

    def reject(token: str) -> Any:
        raise InvalidInput("report", f"standard JSON (write {token} as a string)", token)

    try:
        data = json.loads(p.read_text(encoding="utf-8"), parse_constant=reject)
    except FileNotFoundError:
        raise InvalidInput("report", "an existing report.json", str(p)) from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InvalidInput("report", "a JSON document written by `audit run`", f"{p}: {exc}") from None
    return validate_report(data)


# ----------------------------------------------------------------------------------------------
# JSON Schema


def json_schema() -> dict[str, Any]:
    """The report's JSON Schema (draft 2020-12), generated from :class:`ReportModel`."""
    body = ReportModel.model_json_schema(mode="validation")
    return {
        "$schema": JSON_SCHEMA_DIALECT,
        "$id": SCHEMA_ID,
        "title": "unlearn-audit report",
        "version": SCHEMA_VERSION,
        "description": (
            f"report.json written by {TOOL} (schema {SCHEMA_VERSION}). Generated from "
            "audit.report.schema.ReportModel by `python -m audit.report.schema`; do not edit. "
            'Non-finite numbers are the strings "inf", "-inf", "nan" where a field allows '
            "them; seeds are decimal strings; timestamps are RFC 3339 UTC. Cross-field rules "
            "(verdict vs findings, histogram bin counts, ...) are checked by the pydantic model."
        ),
        **{k: v for k, v in body.items() if k not in ("title", "description")},
    }


def schema_text() -> str:
    """The schema file's exact text: sorted keys, indent 2, trailing newline."""
    return json.dumps(json_schema(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def schema_path() -> Path:
    """Where the generated schema is shipped (package data)."""
    return Path(__file__).resolve().parent / "schemas" / f"report-{SCHEMA_VERSION}.schema.json"


def schema_file(path: Path, text: str, args: list[str], command: str) -> int:
    """Write the generated schema ``text`` to ``path``, or with ``--check`` say whether it is current."""
    if "--check" in args:
        current = path.read_text(encoding="utf-8") if path.exists() else ""
        if current != text:
            print(f"{path} is out of date: run {command}", file=sys.stderr)
            return 1
        return 0
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    print(f"written: {path}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python -m audit.report.schema [--check | --stdout]``: write, check or print the schema
    (``python -m audit.report.comparison`` does the same for the comparison's)."""
    args = sys.argv[1:] if argv is None else argv
    if "--stdout" in args:
        sys.stdout.write(schema_text())
        return 0
    return schema_file(schema_path(), schema_text(), args, "python -m audit.report.schema")


if __name__ == "__main__":
    raise SystemExit(main())
