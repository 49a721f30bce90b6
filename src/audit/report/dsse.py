"""DSSE envelopes around in-toto statements: the pre-authentication encoding, base64, and the
strict parsing a verifier needs (duplicate keys and non-standard tokens refused).

The Ed25519 signature covers :func:`pae` of the payload type and the payload bytes (the RFC 8785
canonical statement, :mod:`audit.report.canonical`)::

    b"DSSEv1 <len(payloadType)> <payloadType> <len(payload)> <payload>"
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from typing import Any

__all__ = ["PAYLOAD_TYPE", "PREDICATE_TYPE", "STATEMENT_TYPE", "VerificationError", "pae"]

PAYLOAD_TYPE = "application/vnd.in-toto+json"
STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE = "https://unlearn-audit.dev/audit-claims/v1"

_B64 = re.compile(r"[A-Za-z0-9+/]*={0,2}")


class VerificationError(Exception):
    """A signed report failed verification; the message is one sentence saying what failed."""


def pae(payload_type: str, payload: bytes) -> bytes:
    """DSSE v1 pre-authentication encoding: the exact bytes that are signed."""
    t = payload_type.encode("utf-8")
    return b"DSSEv1 %d %s %d %s" % (len(t), t, len(payload), payload)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _unb64(text: str, what: str) -> bytes:
    if not isinstance(text, str) or len(text) % 4 or not _B64.fullmatch(text):
        raise VerificationError(f"The envelope's {what} is not valid standard base64.")
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise VerificationError(f"The envelope's {what} is not valid standard base64.") from None


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for k, v in pairs:
        if k in seen:
            raise _DuplicateKey(k)
        seen[k] = v
    return seen


class _DuplicateKey(ValueError):
    pass


def _reject_constant(token: str) -> Any:
    raise ValueError(f"non-standard JSON token {token}")


def _strict_loads(data: bytes, what: str) -> Any:
    try:
        return json.loads(data.decode("utf-8"), object_pairs_hook=_no_duplicates,
                          parse_constant=_reject_constant)
    except UnicodeDecodeError:
        raise VerificationError(f"The {what} is not UTF-8 text.") from None
    except _DuplicateKey as exc:
        raise VerificationError(f"The {what} repeats the key {exc.args[0]!r}, which makes it ambiguous.") from None
    except json.JSONDecodeError as exc:
        raise VerificationError(f"The {what} is not valid JSON ({exc.msg} at line {exc.lineno} "
                                f"column {exc.colno}), so it was truncated or corrupted.") from None
    except ValueError as exc:
        raise VerificationError(f"The {what} is not valid JSON ({exc}).") from None
