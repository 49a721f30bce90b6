"""Canonical JSON (RFC 8785, JCS): the exact bytes a signature covers.

:func:`canonical_json` is the ``rfc8785`` package (a hard dependency). Non-finite floats and
integers beyond ±(2**53 − 1) are not representable in JCS; the report encodes them as strings
(:mod:`audit.report.encoding`).
"""

from __future__ import annotations

from typing import Any

import rfc8785

from certify.errors import InvalidInput

__all__ = ["canonical_json"]


def canonical_json(obj: Any) -> bytes:
    """RFC 8785 (JCS) canonical UTF-8 bytes of ``obj``.

    Values JCS cannot represent (non-finite floats, integers beyond ±(2**53 - 1), non-string
    keys, lone surrogates, non-JSON types) and structures nested beyond Python's recursion
    limit raise :class:`~certify.errors.InvalidInput`.
    """
    try:
        return rfc8785.dumps(obj)
    except rfc8785.CanonicalizationError as exc:
        raise InvalidInput(
            "predicate",
            "JSON with finite numbers and integers within ±(2**53 - 1)",
            str(exc),
            'Encode ∞ and NaN as strings ("inf", "nan") and large integers (seeds, counters) as strings.',
        ) from None
    except RecursionError:  # rfc8785 recurses once per level of nesting
        raise InvalidInput(
            "predicate", "JSON nested less deeply than Python's recursion limit", "a deeper structure"
        ) from None
