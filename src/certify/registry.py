"""A registry of named plug-ins: a table of import paths, apart from the implementations.

Methods (:mod:`unlearners.registry`) and attacks (:mod:`attacks.registry`) are each one
:class:`Registry`: built-ins listed as ``name -> "module:Class"`` and imported only when asked
for, third-party entries from a packaging entry-point group, and classes registered in-process
(a notebook, a test). An entry that fails to import is never dropped silently: :meth:`unavailable`
returns its error, and :meth:`get` names it.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from importlib.metadata import entry_points
from typing import ClassVar, Generic, Protocol, TypeVar, cast

from certify.errors import InvalidInput


class Named(Protocol):
    """What every entry's class has: the name it is listed under."""

    name: ClassVar[str]


T = TypeVar("T", bound=type[Named])


class Registry(Generic[T]):
    """Named subclasses of ``base``.

    Parameters
    ----------
    base:
        The interface every entry subclasses, or its ``"module:Class"`` path: a registry is
        consulted by commands that never load an entry (``audit --help``), so the interface's
        module (and what it imports, e.g. torch) is imported only when an entry is checked.
    group:
        The entry-point group third-party packages register in.
    builtin:
        ``name -> "module:Class"`` of the built-ins, in their listing order.
    field:
        The input field an unknown or broken name is reported under (``method``).
    noun:
        What one entry is called in messages (``method``); default ``field``.
    allowed:
        How the allowed values are described, given the known names (``"one of 'a', 'b'"``).
    """

    def __init__(
        self,
        base: T | str,
        group: str,
        builtin: dict[str, str],
        field: str,
        allowed: Callable[[tuple[str, ...]], str] | None = None,
        noun: str | None = None,
    ):
        self._base, self.group, self.builtin, self.field = base, group, dict(builtin), field
        self.noun = noun or field
        self.allowed = allowed or (lambda names: "one of " + ", ".join(repr(n) for n in names))
        self.registered: dict[str, T] = {}
        self.entry_points = entry_points  # looked up at call time, so tests can replace it

    @property
    def base(self) -> T:
        """The interface class (imported on first use when given by path)."""
        base = self._base
        if isinstance(base, str):
            module, _, attr = base.partition(":")
            base = self._base = getattr(import_module(module), attr)
        return base

    def register(self, cls: T) -> T:
        """Make ``cls`` available under ``cls.name`` in this process (usable as a decorator)."""
        if not (isinstance(cls, type) and issubclass(cls, self.base)):
            raise InvalidInput(self.field, f"a subclass of {self.base.__module__}.{self.base.__name__}", cls)
        self.registered[cls.name] = cls
        return cls

    def unregister(self, name: str) -> None:
        """Remove an entry registered with :meth:`register`."""
        self.registered.pop(name, None)

    def targets(self) -> dict[str, str]:
        """name -> "module:Class" of the built-ins and the entry points (built-ins win)."""
        out = dict(self.builtin)
        for ep in self.entry_points(group=self.group):
            out.setdefault(ep.name, ep.value)
        return out

    def names(self) -> tuple[str, ...]:
        """Every name, built-ins first, without importing anything."""
        return tuple(dict.fromkeys([*self.targets(), *self.registered]))

    def load(self, target: str) -> T:
        module, _, attr = target.partition(":")
        cls = getattr(import_module(module), attr)
        if not (isinstance(cls, type) and issubclass(cls, self.base)):
            raise TypeError(f"{target} is not a subclass of {self.base.__module__}.{self.base.__name__}")
        return cast(T, cls)  # checked just above: a subclass of the interface class T

    def scan(self) -> tuple[dict[str, T], dict[str, str]]:
        """Every entry that loads, and the error of every one that does not."""
        found: dict[str, T] = {}
        broken: dict[str, str] = {}
        for name, target in self.targets().items():
            if name in self.registered:
                continue
            try:
                found[name] = self.load(target)
            except Exception as exc:  # a broken plug-in must not break the others: it is reported
                broken[name] = f"{target}: {type(exc).__name__}: {exc}"
        found.update(self.registered)
        return found, broken

    def available(self) -> dict[str, T]:
        """Every entry that loads, by name (sorted)."""
        return dict(sorted(self.scan()[0].items()))

    def unavailable(self) -> dict[str, str]:
        """Entries that failed to import, with their error, by name."""
        return dict(sorted(self.scan()[1].items()))

    def get(self, name: str) -> T:
        """The entry called ``name``; an unknown or broken one raises :class:`InvalidInput`."""
        if name in self.registered:
            return self.registered[name]
        # built-ins first: scanning the installed distributions' entry points costs milliseconds
        target = self.builtin.get(name) or self.targets().get(name)
        if target is None:
            raise InvalidInput(self.field, self.allowed(self.names()), name)
        try:
            return self.load(target)
        except Exception as exc:
            raise InvalidInput(
                self.field,
                f"a {self.noun} whose plug-in imports",
                name,
                hint=f"Importing {target} failed: {type(exc).__name__}: {exc}",
            ) from None
