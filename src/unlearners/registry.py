"""The method registry: a table of names, apart from the implementations.

Built-in methods are listed here by import path (``module:Class``) and imported only when
asked for; third-party methods register through the packaging entry-point group
``unlearn_audit.unlearners`` (``name = "package.module:Class"``), and code in the same process
(a notebook, a test) can call :func:`register`. A plug-in that fails to import is never
dropped silently: :func:`unavailable_methods` returns its error, ``audit methods`` shows it,
and :func:`get_method` names it when the method is asked for.
"""

from __future__ import annotations

from importlib import import_module
from importlib.metadata import entry_points

from certify.errors import InvalidInput
from unlearners.base import Unlearner

ENTRY_POINT_GROUP = "unlearn_audit.unlearners"

#: name -> "module:Class" of every built-in method.
BUILTIN: dict[str, str] = {
    "r2d": "unlearners.r2d:RewindToDelete",
    "retrain": "unlearners.retrain:Retrain",
    "cns": "unlearners.cns:ConstrainedNewtonStep",
    "curenewton": "unlearners.curenewton:CureNewton",
    "newton": "unlearners.newton:NewtonRemoval",
    "ngd": "unlearners.ngd:NaturalGradientUnlearning",
    "ngd-minmax": "unlearners.ngd:MinMaxNGD",
    "finetune": "unlearners.finetune:FineTune",
    "neggrad": "unlearners.neggrad:NegativeGradient",
    "dpsgd": "unlearners.dpsgd:DPSGD",
    "hf": "unlearners.hessian_free:HessianFree",
}

_REGISTERED: dict[str, type[Unlearner]] = {}


def register(cls: type[Unlearner]) -> type[Unlearner]:
    """Make a method available under ``cls.name`` in this process (usable as a decorator)."""
    if not (isinstance(cls, type) and issubclass(cls, Unlearner)):
        raise InvalidInput("method", "a subclass of unlearners.base.Unlearner", cls)
    _REGISTERED[cls.name] = cls
    return cls


def _load(target: str) -> type[Unlearner]:
    module, _, attr = target.partition(":")
    cls = getattr(import_module(module), attr)
    if not (isinstance(cls, type) and issubclass(cls, Unlearner)):
        raise TypeError(f"{target} is not a subclass of unlearners.base.Unlearner")
    return cls


def _scan() -> tuple[dict[str, type[Unlearner]], dict[str, str]]:
    """Every method that loads, and the error of every one that does not."""
    found: dict[str, type[Unlearner]] = {}
    broken: dict[str, str] = {}
    targets = dict(BUILTIN)
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        targets.setdefault(ep.name, ep.value)
    for name, target in targets.items():
        try:
            found[name] = _load(target)
        except Exception as exc:  # a broken plug-in must not break the others: it is reported instead
            broken[name] = f"{target}: {type(exc).__name__}: {exc}"
    found.update(_REGISTERED)
    for name in _REGISTERED:
        broken.pop(name, None)
    return found, broken


def available_methods() -> dict[str, type[Unlearner]]:
    """Every method that loads, built-in and plug-in, by name."""
    return dict(sorted(_scan()[0].items()))


def unavailable_methods() -> dict[str, str]:
    """Plug-ins (or built-ins) that failed to import, with their error, by name."""
    return dict(sorted(_scan()[1].items()))


def get_method(name: str) -> type[Unlearner]:
    """Look a method up by name; an unknown or broken one raises :class:`InvalidInput`."""
    if name in _REGISTERED:
        return _REGISTERED[name]
    target = BUILTIN.get(name)
    if target is None:
        target = next((ep.value for ep in entry_points(group=ENTRY_POINT_GROUP) if ep.name == name), None)
    if target is None:
        methods = available_methods()
        raise InvalidInput("method", "one of " + ", ".join(repr(m) for m in methods), name)
    try:
        return _load(target)
    except Exception as exc:
        raise InvalidInput("method", "a method whose plug-in imports", name,
                           hint=f"Importing {target} failed: {type(exc).__name__}: {exc}") from None
