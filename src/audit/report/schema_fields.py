"""The report schema's field kit: scalar types, extended floats, seeds, timestamps, the
version rule's readers and the base of every section (:mod:`audit.report.schema` builds the report
from them)."""

from __future__ import annotations

import math
import numbers
import re
from datetime import datetime
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    AllowInfNan,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    Strict,
    ValidationInfo,
    WithJsonSchema,
    model_validator,
)
from pydantic_core import PydanticCustomError

from audit.report.encoding import MAX_SAFE_INT, json_safe
from audit.report.encoding import encode_float as _encode_float

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
