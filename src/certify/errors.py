"""The one error type for bad input, and the one family of validators that raise it.

Every validation failure names the field and the values it allows, so the CLI can print one
sentence and exit with code 2, and a library caller can catch a single exception type.

Validators are *constraints*: small frozen dataclasses (after scikit-learn's
``_param_validation``) that check and normalise one value, describe the values they allow in
words, and generate values they refuse, so that one contract test can try every declared
parameter of every method and every configuration field with values that must fail. The
``require_*`` functions are the same constraints as one-line calls.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Mapping as _Mapping
from collections.abc import Sequence as _Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np


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


# ----------------------------------------------------------------------------------------------
# constraints


class Constraint:
    """The values one parameter allows.

    ``check(field, value)`` returns the normalised value or raises :class:`InvalidInput` naming
    ``field``; ``words`` says what is allowed; ``invalid()`` gives values that must be refused and
    ``example()`` one that must be accepted (both for contract tests).
    """

    words: str = "a valid value"

    def check(self, field: str, value: Any) -> Any:  # pragma: no cover - every subclass overrides
        raise NotImplementedError

    def invalid(self) -> tuple:
        return ()

    def example(self) -> Any:  # pragma: no cover - every subclass overrides
        raise NotImplementedError

    def fail(self, field: str, value: Any) -> InvalidInput:
        return InvalidInput(field, self.words, value)


def _fmt(x: float) -> str:
    return str(int(x)) if float(x).is_integer() and abs(x) < 1e15 else f"{x:g}"


@dataclass(frozen=True)
class Real(Constraint):
    """A real number (bools refused, whole or not) within optional bounds; finite unless ``allow_inf``."""

    gt: float | None = None
    ge: float | None = None
    lt: float | None = None
    le: float | None = None
    allow_inf: bool = False

    @property
    def words(self) -> str:  # type: ignore[override]
        lo = (self.gt, "(") if self.gt is not None else ((self.ge, "[") if self.ge is not None else None)
        hi = (self.lt, ")") if self.lt is not None else ((self.le, "]") if self.le is not None else None)
        kind = "a number" if self.allow_inf else "a finite number"
        if lo and hi:
            if (lo, hi) == ((0, "("), (1, ")")):
                return "a number in the open interval (0, 1)"
            return f"a number in {lo[1]}{_fmt(lo[0])}, {_fmt(hi[0])}{hi[1]}"
        if lo:
            return f"{kind} {'>' if lo[1] == '(' else '>='} {_fmt(lo[0])}"
        if hi:
            return f"{kind} {'<' if hi[1] == ')' else '<='} {_fmt(hi[0])}"
        return kind

    def check(self, field: str, value: Any) -> float:
        if value is None or isinstance(value, (bool, np.bool_, str, bytes)):
            raise self.fail(field, value)
        try:
            x = float(value)  # Python and numpy reals, 0-d arrays and tensors
        except (TypeError, ValueError, RuntimeError):
            raise self.fail(field, value) from None
        if math.isnan(x) or (math.isinf(x) and not self.allow_inf):
            raise self.fail(field, value)
        if (
            (self.gt is not None and not x > self.gt)
            or (self.ge is not None and not x >= self.ge)
            or (self.lt is not None and not x < self.lt)
            or (self.le is not None and not x <= self.le)
        ):
            raise self.fail(field, value)
        return x

    def invalid(self) -> tuple:
        out: list[Any] = [math.nan, True, "1", None]
        if not self.allow_inf:
            out.append(math.inf)
        if self.gt is not None:
            out.append(self.gt)
        if self.ge is not None:
            out.append(self.ge - max(1.0, abs(self.ge)))
        if self.lt is not None:
            out.append(self.lt)
        if self.le is not None:
            out.append(self.le + max(1.0, abs(self.le)))
        return tuple(out)

    def example(self) -> float:
        lo = self.gt if self.gt is not None else self.ge
        hi = self.lt if self.lt is not None else self.le
        if lo is not None and hi is not None:
            return (lo + hi) / 2
        if lo is not None:
            return lo + 1.0
        if hi is not None:
            return hi - 1.0
        return 0.0


@dataclass(frozen=True)
class Integer(Constraint):
    """A whole number (Python or numpy integer, or a whole float; bools refused) in [lo, hi]."""

    lo: int | None = None
    hi: int | None = None

    @property
    def words(self) -> str:  # type: ignore[override]
        if self.lo is not None and self.hi is not None:
            return f"an integer in [{self.lo}, {self.hi}]"
        if self.lo is not None:
            return f"an integer >= {self.lo}"
        if self.hi is not None:
            return f"an integer <= {self.hi}"
        return "an integer"

    def check(self, field: str, value: Any) -> int:
        if isinstance(value, (bool, np.bool_)):
            raise self.fail(field, value)
        if isinstance(value, float):  # a float must be finite and whole
            if not math.isfinite(value) or not value.is_integer():
                raise self.fail(field, value)
        else:  # a Python int is exact at any size; numpy integers and 0-d integer tensors index
            try:
                value = operator.index(value)
            except TypeError:
                raise self.fail(field, value) from None
        n = int(value)
        if (self.lo is not None and n < self.lo) or (self.hi is not None and n > self.hi):
            raise self.fail(field, value)
        return n

    def invalid(self) -> tuple:
        out: list[Any] = [1.5, math.nan, True, "1", None]
        if self.lo is not None:
            out.append(self.lo - 1)
        if self.hi is not None:
            out.append(self.hi + 1)
        return tuple(out)

    def example(self) -> int:
        return self.lo if self.lo is not None else (self.hi if self.hi is not None else 0)


@dataclass(frozen=True)
class Choice(Constraint):
    """One of a fixed set of values (compared with ``==``; bools never match numbers)."""

    options: tuple

    @property
    def words(self) -> str:  # type: ignore[override]
        return "one of " + ", ".join(repr(o) for o in self.options)

    def check(self, field: str, value: Any) -> Any:
        for option in self.options:
            try:
                same = bool(value == option) and isinstance(value, bool) == isinstance(option, bool)
            except (TypeError, ValueError):  # an array compared element-wise
                same = False
            if same:
                return option
        raise self.fail(field, value)

    def invalid(self) -> tuple:
        return ("not-a-choice-xyz", None, 12345)

    def example(self) -> Any:
        return self.options[0]


@dataclass(frozen=True)
class Boolean(Constraint):
    """``True`` or ``False`` (numpy bools too; never 0/1 or strings)."""

    words: str = "true or false"

    def check(self, field: str, value: Any) -> bool:
        if isinstance(value, (bool, np.bool_)):
            return bool(value)
        raise self.fail(field, value)

    def invalid(self) -> tuple:
        return (1, 0, "true", None)

    def example(self) -> bool:
        return True


@dataclass(frozen=True)
class Text(Constraint):
    """A non-empty string."""

    words: str = "a non-empty string"

    def check(self, field: str, value: Any) -> str:
        if not isinstance(value, str) or not value.strip():
            raise self.fail(field, value)
        return value

    def invalid(self) -> tuple:
        return ("", "  ", 3, None)

    def example(self) -> str:
        return "x"


@dataclass(frozen=True)
class Optional(Constraint):
    """``None`` (with the meaning ``none``, e.g. "for the dataset's default") or ``inner``."""

    inner: Constraint
    none: str = ""

    @property
    def words(self) -> str:  # type: ignore[override]
        return f"{self.inner.words}, or None" + (f" {self.none}" if self.none else "")

    def check(self, field: str, value: Any) -> Any:
        if value is None:
            return None
        try:
            return self.inner.check(field, value)
        except InvalidInput:
            raise self.fail(field, value) from None

    def invalid(self) -> tuple:
        return tuple(v for v in self.inner.invalid() if v is not None)

    def example(self) -> Any:
        return None


@dataclass(frozen=True)
class OneOf(Constraint):
    """The first of several constraints that accepts the value (e.g. ``"all"`` or index lists)."""

    alternatives: tuple[Constraint, ...]

    @property
    def words(self) -> str:  # type: ignore[override]
        return " or ".join(a.words for a in self.alternatives)

    def check(self, field: str, value: Any) -> Any:
        for alternative in self.alternatives:
            try:
                return alternative.check(field, value)
            except InvalidInput:
                continue
        raise self.fail(field, value)

    def invalid(self) -> tuple:
        out = []
        for v in (None, math.nan, "not-a-choice-xyz", True):
            try:
                self.check("probe", v)
            except InvalidInput:
                out.append(v)
        return tuple(out)

    def example(self) -> Any:
        return self.alternatives[0].example()


@dataclass(frozen=True)
class ListOf(Constraint):
    """A list or tuple of ``item`` values (at least ``min_len``; ``distinct`` if asked); a tuple back."""

    item: Constraint
    min_len: int = 1
    distinct: bool = False

    @property
    def words(self) -> str:  # type: ignore[override]
        many = {0: "zero or more", 1: "one or more"}.get(self.min_len, f"at least {self.min_len}")
        return f"a list of {many}{' distinct' if self.distinct else ''} values, each {self.item.words}"

    def check(self, field: str, value: Any) -> tuple:
        if isinstance(value, (str, bytes)) or not isinstance(value, _Sequence) or len(value) < self.min_len:
            raise self.fail(field, value)
        try:
            items = tuple(self.item.check(field, v) for v in value)
        except InvalidInput:
            raise self.fail(field, value) from None
        if self.distinct and len(set(items)) != len(items):
            raise self.fail(field, value)
        return items

    def invalid(self) -> tuple:
        bad = next(iter(self.item.invalid()), None)
        return ("x", [bad], None) if self.min_len == 0 else ([], "x", [bad], None)

    def example(self) -> tuple:
        return (self.item.example(),) * max(self.min_len, 1)


@dataclass(frozen=True)
class MappingOf(Constraint):
    """A mapping with string keys (among ``keys`` when given) to ``value`` values; a dict back."""

    value: Constraint
    keys: tuple[str, ...] | None = None

    @property
    def words(self) -> str:  # type: ignore[override]
        keys = ("keys among " + ", ".join(repr(k) for k in self.keys)) if self.keys else "string keys"
        return f"a mapping with {keys}, each value {self.value.words}"

    def check(self, field: str, value: Any) -> dict:
        if not isinstance(value, _Mapping) or not all(isinstance(k, str) for k in value):
            raise self.fail(field, value)
        out = {}
        for key, item in value.items():
            if self.keys is not None and key not in self.keys:
                raise InvalidInput(field, "a mapping with keys among " + ", ".join(repr(k) for k in self.keys), key)
            out[key] = self.value.check(f"{field}.{key}", item)
        return out

    def invalid(self) -> tuple:
        return ([1], "x", {1: 1}) + (({"not-a-key-xyz": self.value.example()},) if self.keys else ())

    def example(self) -> dict:
        return {}


@dataclass(frozen=True)
class Anything(Constraint):
    """Any value (for open mappings whose entries the consumer checks)."""

    words: str = "any value"

    def check(self, field: str, value: Any) -> Any:
        return value

    def example(self) -> Any:
        return None


# ----------------------------------------------------------------------------------------------
# the same constraints as one-line calls


def require(constraint: Constraint, field: str, value: Any, allowed: str | None = None) -> Any:
    """``constraint.check(field, value)``; a refusal says ``allowed`` when given (a caller's own
    wording of the same range, e.g. "an integer with 0 < m < n (n=10)")."""
    if allowed is None:
        return constraint.check(field, value)
    try:
        return constraint.check(field, value)
    except InvalidInput:
        raise InvalidInput(field, allowed, value) from None


POSITIVE = Real(gt=0)
NONNEGATIVE = Real(ge=0)
FINITE = Real()
PROBABILITY = Real(gt=0, lt=1)


def require_positive(field: str, value: object) -> float:
    """Return ``float(value)`` if it is finite and > 0, else raise :class:`InvalidInput`."""
    return POSITIVE.check(field, value)


def require_nonnegative(field: str, value: object) -> float:
    """Return ``float(value)`` if it is finite and >= 0, else raise :class:`InvalidInput`."""
    return NONNEGATIVE.check(field, value)


def require_finite(field: str, value: object) -> float:
    """Return ``float(value)`` if it is a finite number (not a bool), else raise."""
    return FINITE.check(field, value)


def require_integer(field: str, value: object, lo: int | None = None, hi: int | None = None) -> int:
    """Return ``int(value)`` for a whole number in [lo, hi] (not a bool), else raise."""
    return Integer(lo, hi).check(field, value)


def require_probability(field: str, value: object) -> float:
    """Return ``float(value)`` if it lies in the open interval (0, 1), else raise."""
    return PROBABILITY.check(field, value)


def require_choice(field: str, value: object, options: tuple) -> Any:
    """Return ``value`` if it is one of ``options``, else raise."""
    return Choice(tuple(options)).check(field, value)


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
