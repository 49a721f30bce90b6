"""Declared parameters: a name, a default, a constraint and a sentence of help, declared once.

Method hyperparameters and audit configuration fields are both tables of :class:`Param`. Their
validation, their defaults, the help the CLI shows, the options ``audit methods`` lists and the
invalid values a contract test tries are all read from the declaration (after scikit-learn's
``_parameter_constraints``), so no parameter is described twice.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from certify.errors import Constraint, InvalidInput


@dataclass(frozen=True)
class Param:
    """One declared parameter.

    Parameters
    ----------
    name:
        The keyword (``steps``); options on the command line use it as ``-o steps=...``.
    default:
        The value when none is given (checked against ``constraint`` by the contract test).
    constraint:
        The allowed values (:mod:`certify.errors`).
    help:
        One sentence for ``--help``, ``audit methods`` and the documentation's references.
    section:
        Where the parameter belongs (configuration fields: ``data``, ``forget``, ``method``,
        ``certificate``, ``trials``, ``attacks``, ``run``; method options: empty).
    audit:
        For a method hyperparameter: the audit configuration value that feeds it when the user
        does not set the option (``steps``, ``eta``, ``seed`` ...; see
        :func:`audit.methods.audit_supplied`). None: only the method's default or ``--option``.
    """

    name: str
    default: Any
    constraint: Constraint
    help: str
    section: str = ""
    audit: str | None = None

    def check(self, value: Any, field: str | None = None) -> Any:
        return self.constraint.check(field or self.name, value)

    def describe(self) -> dict[str, Any]:
        """The declaration as JSON-ready data (``audit methods --json``)."""
        return {
            "name": self.name,
            "default": _jsonable(self.default),
            "allowed": self.constraint.words,
            "help": self.help,
            **({"from_audit": self.audit} if self.audit else {}),
        }


def validate(params: Iterable[Param], values: Mapping[str, Any], owner: str) -> dict[str, Any]:
    """Every declared parameter's value: the given one, checked, or the default.

    An unknown name raises :class:`InvalidInput` naming ``owner`` and listing the declared
    names; a value outside its constraint raises naming the parameter.
    """
    declared = {p.name: p for p in params}
    unknown = sorted(set(values) - set(declared))
    if unknown:
        raise InvalidInput(
            owner, "options among " + (", ".join(sorted(declared)) or "(none: it takes no options)"), unknown
        )
    return {name: (p.check(values[name]) if name in values else p.default) for name, p in declared.items()}


def _jsonable(value: Any) -> Any:
    if isinstance(value, tuple):
        return list(value)
    return value
