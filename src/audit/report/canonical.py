"""Canonical JSON (RFC 8785, JCS): the exact bytes a signature covers.

:func:`canonical_json` uses the ``rfc8785`` package and falls back to :func:`_jcs_fallback`, a
minimal canonicaliser for statements. Non-finite floats and integers beyond ±(2**53 − 1) are
not representable (the report encodes them as strings, :mod:`audit.report.encoding`).
"""

from __future__ import annotations

import json
import math
from typing import Any

from audit.report.encoding import MAX_SAFE_INT as _MAX_SAFE_INT
from certify.errors import InvalidInput

__all__ = ["canonical_json"]


def canonical_json(obj: Any) -> bytes:
    """RFC 8785 (JCS) canonical UTF-8 bytes of ``obj``.

    Uses the ``rfc8785`` package when it is installed, otherwise :func:`_jcs_fallback`.
    Non-finite floats and integers beyond ±(2**53 - 1) are not representable and raise
    :class:`~certify.errors.InvalidInput`.
    """
    try:
        import rfc8785
    except ImportError:  # pragma: no cover - exercised through _jcs_fallback directly
        return _jcs_fallback(obj)
    try:
        return rfc8785.dumps(obj)
    except rfc8785.CanonicalizationError as exc:
        raise InvalidInput("predicate", "JSON with finite numbers and integers within ±(2**53 - 1)",
                           type(exc).__name__) from None


def _jcs_fallback(obj: Any) -> bytes:
    """Minimal RFC 8785 canonicaliser, adequate for statements (dicts, lists, str, bool, None,
    integers within ±(2**53 - 1), finite floats).

    Keys are sorted by UTF-16 code units; strings are escaped as ``json.dumps(...,
    ensure_ascii=False)`` does, which matches JCS (short escapes for ``\\b\\t\\n\\f\\r``,
    lowercase ``\\u00xx`` for other control characters, everything else literal); numbers
    use the ECMAScript ``Number.prototype.toString`` form built from Python's shortest
    round-trip ``repr``.
    """
    out: list[str] = []

    def emit(v: Any) -> None:
        if v is None:
            out.append("null")
        elif v is True:
            out.append("true")
        elif v is False:
            out.append("false")
        elif isinstance(v, int):
            if abs(v) > _MAX_SAFE_INT:
                raise InvalidInput("predicate", "integers within ±(2**53 - 1)", v,
                                   "Encode large integers (seeds, counters) as strings.")
            out.append(str(v))
        elif isinstance(v, float):
            out.append(_es_number(v))
        elif isinstance(v, str):
            out.append(json.dumps(v, ensure_ascii=False))
        elif isinstance(v, dict):
            for k in v:
                if not isinstance(k, str):
                    raise InvalidInput("predicate", "an object with string keys", k)
            out.append("{")
            for i, k in enumerate(sorted(v, key=lambda s: s.encode("utf-16-be", "surrogatepass"))):
                if i:
                    out.append(",")
                out.append(json.dumps(k, ensure_ascii=False))
                out.append(":")
                emit(v[k])
            out.append("}")
        elif isinstance(v, (list, tuple)):
            out.append("[")
            for i, item in enumerate(v):
                if i:
                    out.append(",")
                emit(item)
            out.append("]")
        else:
            raise InvalidInput("predicate", "JSON-serialisable values", type(v).__name__)

    emit(obj)
    try:
        return "".join(out).encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput("predicate", "strings without lone surrogates", "a lone surrogate") from None


def _es_number(x: float) -> str:
    """ECMAScript Number::toString of a finite double (RFC 8785 §3.2.2.3)."""
    if not math.isfinite(x):
        raise InvalidInput("predicate", "finite numbers", x, 'Encode ∞ and NaN as strings ("inf", "nan").')
    if x == 0:
        return "0"
    if x < 0:
        return "-" + _es_number(-x)
    mant, _, exp = repr(x).partition("e")
    ip, _, fp = mant.partition(".")
    digits = (ip + fp).lstrip("0")
    e10 = (int(exp) if exp else 0) - len(fp)
    stripped = digits.rstrip("0")
    e10 += len(digits) - len(stripped)
    s, k = stripped, len(stripped)
    n = e10 + k  # x = 0.s × 10**n
    if k <= n <= 21:
        return s + "0" * (n - k)
    if 0 < n <= 21:
        return s[:n] + "." + s[n:]
    if -6 < n <= 0:
        return "0." + "0" * (-n) + s
    e = n - 1
    sign = "+" if e >= 0 else "-"
    return (s if k == 1 else s[0] + "." + s[1:]) + "e" + sign + str(abs(e))
