"""The deletion request as a salted hash commitment: evidence of *which* records were deleted,
never the records themselves.

The commitment is ``sha256(salt || canonical JSON array of the sorted record ids)``: the ids are
the caller's own (a column or an array) or, without ids, the records' positions in the source.
Integer ids sort numerically and are written as JSON integers, text ids sort by code point and
are written as JSON strings (UTF-8, no escaping beyond JSON's own, no spaces). Whoever holds the
salt and the list of ids opens it (:func:`opens`, ``audit commitment verify``); nobody else
learns the ids from it.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from collections.abc import Iterable
from typing import Any

import numpy as np

from certify.errors import InvalidInput

SCHEME = "sha256(salt || JSON array of the sorted record ids, no spaces, UTF-8)"
ID_TYPES = ("integer", "text")
#: The caller's name for a deletion request (``--request-id``): short and printable, so that it
#: can sit in a file name, a ticket system and a signed claim unchanged.
REQUEST_ID_PATTERN = r"^[A-Za-z0-9._:-]{1,128}$"
REQUEST_ID_WORDS = "1 to 128 characters of A-Z, a-z, 0-9 and . _ : - (e.g. REQ-2026-0042)"


def check_salt(salt: bytes | None) -> bytes:
    """The given salt (at least 16 bytes), or 32 fresh random bytes."""
    if salt is None:
        return secrets.token_bytes(32)
    if not isinstance(salt, (bytes, bytearray)) or len(salt) < 16:
        got = f"{len(salt)} bytes" if isinstance(salt, (bytes, bytearray)) else type(salt).__name__
        raise InvalidInput("salt", "at least 16 secret bytes", got)
    return bytes(salt)


def digest(ids: Iterable[Any], salt: bytes) -> tuple[str, str, int]:
    """(commitment hex, id type, count) of a set of record ids (all integers or all strings)."""
    from audit.datasets.user import check_ids

    checked = check_ids(np.asarray(list(ids), dtype=object), "ids")
    id_type = "integer" if checked.dtype.kind == "i" else "text"
    values = sorted(int(v) for v in checked.tolist()) if id_type == "integer" else sorted(checked.tolist())
    message = salt + json.dumps(values, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    return hashlib.sha256(message).hexdigest(), id_type, len(values)


def commitment(ids: np.ndarray, salt: bytes, identifier: str, request_id: str | None = None) -> dict:
    """A hiding, binding commitment to the deleted records' ids.

    ``identifier`` says what an id is (the caller's id column, or the position in the source);
    ``request_id`` is the caller's name for the request (``--request-id``), None when not given.
    Positions are a small space, so the salt must stay secret: whoever holds it can open the
    commitment (recompute it from the claimed ids); nobody else learns them.
    """
    value, id_type, count = digest(ids, salt)
    return {
        "scheme": SCHEME,
        "identifier": identifier,
        "identifier_type": id_type,
        "commitment": value,
        "n_records": count,
        "salt": "kept by the operator, not in this report",
        "request_id": request_id,
    }


def opens(deletion_request: Any, salt: bytes, ids: Iterable[Any]) -> bool:
    """Whether ``ids`` and ``salt`` open a report's ``deletion_request`` commitment (the block as
    a dict, the report as a dict, or the report object ``audit.run`` returned). Ids read from text are compared as the report's
    ``identifier_type`` says (``"17"`` is the integer 17 for integer ids)."""
    if hasattr(deletion_request, "to_dict"):  # a report object
        deletion_request = deletion_request.to_dict()
    block = deletion_request.get("deletion_request", deletion_request)
    if not isinstance(block, dict) or "commitment" not in block:
        raise InvalidInput("report", "a report with a deletion_request commitment", type(block).__name__)
    salt = check_salt(salt)
    values = list(ids)
    if block.get("identifier_type") == "integer":
        try:
            values = [int(v) if isinstance(v, str) else v for v in values]
        except ValueError:
            return False
    elif block.get("identifier_type") == "text":
        values = [str(v) for v in values]
    value, _, _ = digest(values, salt)
    return hmac.compare_digest(value, str(block["commitment"]))
