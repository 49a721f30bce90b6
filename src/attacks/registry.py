"""The attack registry: a table of names, apart from the implementations.

Built-in attacks are listed by import path (``module:Class``) and imported only when asked for;
third-party attacks register through the entry-point group ``unlearn_audit.attacks``
(``name = "package.module:Class"``), and code in the same process can call :func:`register`.
An attack that fails to import is reported with its error (:func:`unavailable_attacks`), never
dropped silently.
"""

from __future__ import annotations

from importlib import import_module
from importlib.metadata import entry_points

from attacks.base import Attack
from certify.errors import InvalidInput

ENTRY_POINT_GROUP = "unlearn_audit.attacks"

#: name -> "module:Class" of every built-in attack, in the default order of ``--attacks``.
BUILTIN: dict[str, str] = {
    "mia": "attacks.mia:MembershipInference",
    "ulira": "attacks.lira:ULiRA",
    "relearn": "attacks.relearn:RelearnTime",
    "whitebox": "attacks.whitebox:WhiteBox",
}

_REGISTERED: dict[str, type[Attack]] = {}


def register(cls: type[Attack]) -> type[Attack]:
    """Make an attack available under ``cls.name`` in this process (usable as a decorator)."""
    if not (isinstance(cls, type) and issubclass(cls, Attack)):
        raise InvalidInput("attack", "a subclass of attacks.base.Attack", cls)
    _REGISTERED[cls.name] = cls
    return cls


def unregister(name: str) -> None:
    """Remove an attack registered with :func:`register` (for tests and notebooks)."""
    _REGISTERED.pop(name, None)


def _targets() -> dict[str, str]:
    targets = dict(BUILTIN)
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        targets.setdefault(ep.name, ep.value)
    return targets


def _load(target: str) -> type[Attack]:
    module, _, attr = target.partition(":")
    cls = getattr(import_module(module), attr)
    if not (isinstance(cls, type) and issubclass(cls, Attack)):
        raise TypeError(f"{target} is not a subclass of attacks.base.Attack")
    return cls


def attack_names() -> tuple[str, ...]:
    """Every attack name, built-in first, without importing any attack."""
    return tuple(dict.fromkeys([*_targets(), *_REGISTERED]))


def unavailable_attacks() -> dict[str, str]:
    """Attacks that failed to import, with their error, by name."""
    broken = {}
    for name, target in _targets().items():
        if name in _REGISTERED:
            continue
        try:
            _load(target)
        except Exception as exc:  # reported, never dropped
            broken[name] = f"{target}: {type(exc).__name__}: {exc}"
    return broken


def get_attack(name: str) -> type[Attack]:
    """Look an attack up by name; an unknown or broken one raises :class:`InvalidInput`."""
    if name in _REGISTERED:
        return _REGISTERED[name]
    target = _targets().get(name)
    if target is None:
        raise InvalidInput("attacks", "a comma-separated subset of " + ", ".join(attack_names())
                           + " (or 'none')", name)
    try:
        return _load(target)
    except Exception as exc:
        raise InvalidInput("attacks", "attacks whose plug-in imports", name,
                           hint=f"Importing {target} failed: {type(exc).__name__}: {exc}") from None
