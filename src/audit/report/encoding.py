"""The report's one encoding of values JSON cannot hold as they are.

RFC 8785 canonical JSON (what the signature covers) has neither non-finite numbers nor integers
beyond ±(2**53 − 1). Non-finite floats are written as the strings ``"inf"``, ``"-inf"`` and
``"nan"``; integers beyond the safe range as decimal strings. The report model
(:mod:`audit.report.schema`) applies this when it serialises, and the HTML page when it embeds
a report it was handed as plain data.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

MAX_SAFE_INT = 2**53 - 1


def encode_float(x: float) -> float | str:
    """A float as JSON holds it: itself when finite, else ``"inf"``, ``"-inf"`` or ``"nan"``."""
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x


def json_safe(value: Any, *, safe_integers: bool = True) -> Any:
    """Normalise data to JSON: non-finite floats as strings, tuples as lists, string keys only;
    integers beyond ±(2**53 − 1) as decimal strings unless ``safe_integers`` is False (data that
    only has to be JSON, not canonical JSON). Anything else that is not JSON data raises
    :class:`ValueError`."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, numbers.Integral):
        x = int(value)
        return x if not safe_integers or -MAX_SAFE_INT <= x <= MAX_SAFE_INT else str(x)
    if isinstance(value, numbers.Real):
        return encode_float(float(value))
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise ValueError("a JSON object (string keys)")
            out[k] = json_safe(v, safe_integers=safe_integers)
        return out
    if isinstance(value, (list, tuple)):
        return [json_safe(v, safe_integers=safe_integers) for v in value]
    raise ValueError("JSON data (objects, arrays, strings, numbers, booleans, null)")
