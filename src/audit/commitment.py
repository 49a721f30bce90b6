"""The deletion request as a salted hash commitment: evidence of *which* records were deleted,
never the records themselves."""

from __future__ import annotations

import hashlib
import json
import secrets

import numpy as np

from certify.errors import InvalidInput

SCHEME = "sha256(salt || JSON array of the sorted source-row identifiers, no spaces)"


def check_salt(salt: bytes | None) -> bytes:
    """The given salt (at least 16 bytes), or 32 fresh random bytes."""
    if salt is None:
        return secrets.token_bytes(32)
    if not isinstance(salt, (bytes, bytearray)) or len(salt) < 16:
        got = f"{len(salt)} bytes" if isinstance(salt, (bytes, bytearray)) else type(salt).__name__
        raise InvalidInput("salt", "at least 16 secret bytes", got)
    return bytes(salt)


def commitment(source_rows: np.ndarray | None, forget: np.ndarray, salt: bytes) -> dict:
    """A hiding, binding commitment to the deleted records' identifiers.

    The identifiers are the records' positions in the dataset's source (stable across splits and
    seeds). Row numbers are a small space, so the salt must stay secret: whoever holds it can
    open the commitment (recompute it from the claimed identifiers); nobody else learns them.
    """
    rows = source_rows[forget] if source_rows is not None else forget
    identifiers = sorted(int(r) for r in rows)
    message = salt + json.dumps(identifiers, separators=(",", ":")).encode()
    return {
        "scheme": SCHEME,
        "identifier": "position of the record in the dataset source (0-based)",
        "commitment": hashlib.sha256(message).hexdigest(),
        "n_records": len(identifiers),
        "salt": "kept by the operator, not in this report",
    }
