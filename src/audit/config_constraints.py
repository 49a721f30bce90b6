"""The configuration's constraints that read the registries or parse an address.

Each is a :class:`certify.errors.Constraint` used by one field of :data:`audit.config.FIELDS`
(a method, the attacks, a model, the caller's functions, a request id, a Ray address); they live
apart from the declaration so that it reads as one table. The registries are imported inside
``check``, when a value is checked, not when the configuration is imported.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from audit.commitment import REQUEST_ID_PATTERN, REQUEST_ID_WORDS
from certify.errors import Constraint, InvalidInput

#: ``method`` of an audit of the caller's own training and unlearning code (``train``/``unlearn``).
CALLER_CODE = "caller"


@dataclass(frozen=True)
class MethodName(Constraint):
    """A method known to :mod:`unlearners.registry` (an unknown or broken one names the error)."""

    words: str = "a registered method (see `audit methods`)"

    def check(self, field: str, value: Any) -> str:
        from unlearners.registry import get_method

        if not isinstance(value, str):
            raise self.fail(field, value)
        if value != CALLER_CODE:  # the caller's own code (unlearn): checked with it in audit.config._validate
            get_method(value)
        return value

    def invalid(self) -> tuple:
        return ("no-such-method", 3, None)

    def example(self) -> str:
        return "r2d"


@dataclass(frozen=True)
class AttackNames(Constraint):
    """Attacks known to :mod:`attacks.registry`: a sequence or comma-separated text; ``none`` or
    empty for no attack. Duplicates are dropped, order kept."""

    words: str = "a comma-separated subset of the registered attacks (or 'none')"

    def check(self, field: str, value: Any) -> tuple[str, ...]:
        from attacks.registry import get_attack

        if isinstance(value, str):
            value = [a for a in value.split(",") if a.strip() and a.strip() != "none"]
        if not isinstance(value, (list, tuple)) or not all(isinstance(a, str) for a in value):
            raise self.fail(field, value)
        names = tuple(dict.fromkeys(a.strip() for a in value))
        for name in names:
            get_attack(name)
        return names

    def invalid(self) -> tuple:
        return ("no-such-attack", 3, [1])

    def example(self) -> tuple:
        return ()


@dataclass(frozen=True)
class ModelName(Constraint):
    """A model known to :mod:`unlearners.models` (built-in or plug-in; a broken one names its
    error), ``module:<package.module or file.py>:<factory>`` (imported when the audit runs), or
    ``caller`` (the module passed to ``audit.run(model=...)``)."""

    words: str = (
        "a registered model ('logreg', 'mlp', 'cnn' or a plug-in), 'module:<package.module or "
        "file.py>:<factory>', or 'caller'"
    )

    def check(self, field: str, value: Any) -> str:
        from unlearners.models import MODELS, available_models, unavailable_models

        if not isinstance(value, str):
            raise self.fail(field, value)
        if value.startswith("module:"):
            where, _, attribute = value[len("module:") :].rpartition(":")
            if not where or not attribute:
                raise InvalidInput(field, "'module:<package.module or file.py>:<factory>'", value)
            return value
        if value == "caller":
            return value
        if value not in MODELS and value not in available_models():
            broken = unavailable_models()
            if value in broken:
                raise InvalidInput(
                    field, "a model whose plug-in imports", value, hint=f"Importing failed: {broken[value]}"
                )
            raise InvalidInput(
                field,
                "one of "
                + ", ".join(repr(m) for m in available_models())
                + ", 'module:<package.module or file.py>:<factory>'",
                value,
            )
        return value

    def invalid(self) -> tuple:
        return ("no-such-model", 3, None)

    def example(self) -> str:
        return "logreg"


@dataclass(frozen=True)
class CodeRef(Constraint):
    """The caller's function: ``module:<package.module or file.py>:<function>`` (imported when the
    audit runs, as ``--model module:`` is), or ``caller`` (passed to ``audit.run`` in memory)."""

    role: str = ""
    words: str = "'module:<package.module or file.py>:<function>', or 'caller' (passed to audit.run)"

    def check(self, field: str, value: Any) -> str:
        if not isinstance(value, str):
            raise self.fail(field, value)
        if value == CALLER_CODE:
            return value
        where, _, attribute = value[len("module:") :].rpartition(":")
        if not value.startswith("module:") or not where or not attribute:
            raise InvalidInput(field, "'module:<package.module or file.py>:<function>'", value)
        return value

    def invalid(self) -> tuple:
        return ("pkg.file:fn", "module:fn", 3)

    def example(self) -> str:
        return "module:my_pipeline:" + (self.role or "fn")


@dataclass(frozen=True)
class RequestId(Constraint):
    """The caller's name for the deletion request: short printable text (:data:`REQUEST_ID_PATTERN`)."""

    words: str = REQUEST_ID_WORDS

    def check(self, field: str, value: Any) -> str:
        if not isinstance(value, str) or not re.fullmatch(REQUEST_ID_PATTERN, value):
            raise self.fail(field, value)
        return value

    def invalid(self) -> tuple:
        return ("", "REQ 42", "x" * 129, "REQ/42", "Ω-1", 42)

    def example(self) -> str:
        return "REQ-2026-0042"


RAY_CLIENT = "ray://"


def ray_endpoint(text: str) -> tuple[str, int] | None:
    """``(host, port)`` of a Ray address ``host:port``, ``[IPv6]:port`` or ``ray://host:port``
    (Ray Client); None if ``text`` is none of these or the port is outside 1-65535."""
    rest = text[len(RAY_CLIENT) :] if text.startswith(RAY_CLIENT) else text
    host, sep, port = rest.rpartition(":")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    elif ":" in host:  # an IPv6 address without its brackets: where the port starts is a guess
        return None
    if (
        not sep
        or not host
        or any(c.isspace() or c in "/[]@?#" for c in host)
        or not port.isdigit()
        or not 1 <= int(port) <= 65535
    ):
        return None
    return host, int(port)


@dataclass(frozen=True)
class RayAddress(Constraint):
    """The address of a running Ray cluster, as ``ray start --head`` or ``ray status`` prints it.
    Ray's ``auto`` and ``local`` are refused: ``auto`` reads whichever cluster this machine started
    last (a stale one hangs ``ray.init``), ``local`` is what no address does."""

    words: str = (
        "the host:port of a running Ray cluster's head (as `ray status` prints it; port 1-65535) or "
        "ray://host:port for Ray Client"
    )

    def check(self, field: str, value: Any) -> str:
        if not isinstance(value, str) or ray_endpoint(value) is None:
            raise self.fail(field, value)
        return value

    def invalid(self) -> tuple:
        return ("127.0.0.1:99999", "127.0.0.1:0", "127.0.0.1", "auto", "ray://host", ":6379", "", 6379)

    def example(self) -> str:
        return "127.0.0.1:6379"
