"""The one error type for bad input, shared by every layer.

Every validation failure names the field and the values it allows, so the CLI can print one
sentence and exit with code 2, and a library caller can catch a single exception type.
"""

from __future__ import annotations

import math


class InvalidInput(ValueError):
    """A parameter outside its allowed values.

    Parameters
    ----------
    field:
        The name of the offending parameter as the user spelled it (``epsilon``, ``forget``).
    allowed:
        What the field accepts, in words (``a finite number > 0``).
    got:
        The value received; shown with ``repr`` in the message.
    hint:
        Optional extra sentence (e.g. which mechanism to use instead).
    """

    def __init__(self, field: str, allowed: str, got: object = None, hint: str | None = None):
        self.field = field
        self.allowed = allowed
        self.got = got
        self.hint = hint
        message = f"{field} must be {allowed}; got {got!r}."
        if hint:
            message = f"{message} {hint}"
        super().__init__(message)


def require_positive(field: str, value: float) -> float:
    """Return ``float(value)`` if it is finite and > 0, else raise :class:`InvalidInput`."""
    if isinstance(value, bool):
        raise InvalidInput(field, "a finite number > 0", value)
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise InvalidInput(field, "a finite number > 0", value) from None
    if not (x > 0 and x < float("inf")):
        raise InvalidInput(field, "a finite number > 0", value)
    return x


def require_nonnegative(field: str, value: float) -> float:
    """Return ``float(value)`` if it is finite and >= 0, else raise :class:`InvalidInput`."""
    if isinstance(value, bool):
        raise InvalidInput(field, "a finite number >= 0", value)
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise InvalidInput(field, "a finite number >= 0", value) from None
    if not (x >= 0 and x < float("inf")):
        raise InvalidInput(field, "a finite number >= 0", value)
    return x


def require_finite(field: str, value: float) -> float:
    """Return ``float(value)`` if it is a finite number (not a bool), else raise."""
    if isinstance(value, bool):
        raise InvalidInput(field, "a finite number", value)
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise InvalidInput(field, "a finite number", value) from None
    if not math.isfinite(x):
        raise InvalidInput(field, "a finite number", value)
    return x


def require_integer(field: str, value: object, lo: int) -> int:
    """Return ``int(value)`` for a whole number >= ``lo`` (not a bool), else raise."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidInput(field, f"an integer >= {lo}", value)
    # a Python int is exact at any size; a float must be finite and whole
    if isinstance(value, float) and (not math.isfinite(value) or not value.is_integer()):
        raise InvalidInput(field, f"an integer >= {lo}", value)
    if int(value) < lo:
        raise InvalidInput(field, f"an integer >= {lo}", value)
    return int(value)


def require_probability(field: str, value: float) -> float:
    """Return ``float(value)`` if it lies in the open interval (0, 1), else raise."""
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise InvalidInput(field, "a number in the open interval (0, 1)", value) from None
    if not (0.0 < x < 1.0):
        raise InvalidInput(field, "a number in the open interval (0, 1)", value)
    return x


def require_finite_array(field: str, value: object, allowed: str):
    """``numpy.asarray(value, float)`` if every entry is finite, else :class:`InvalidInput`.

    The message counts the NaN or infinite entries instead of echoing a large array.
    """
    import numpy as np

    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise InvalidInput(field, allowed, value) from None
    if not np.all(np.isfinite(arr)):
        bad = int(np.count_nonzero(~np.isfinite(arr)))
        raise InvalidInput(field, allowed, f"{bad} NaN or infinite value(s)")
    return arr
