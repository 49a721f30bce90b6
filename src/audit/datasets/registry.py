"""The dataset registry: :class:`Loader`, :func:`load_dataset`, and which datasets exist.

Every module in :mod:`audit.datasets.loaders` whose name does not start with ``_`` is a loader
module: it declares ``LOADER = Loader(...)`` and is found with :func:`pkgutil.iter_modules`, so a
new source is one new module there and nothing else. Third-party packages register loaders in
the entry-point group ``unlearn_audit.datasets`` (``name = "package.module:LOADER"``). A loader
that fails to import, is not a :class:`Loader`, or takes a name already taken is never dropped
silently: :func:`unavailable_datasets` returns its error and :func:`load_dataset` names it.
Loader modules are imported on first use, not when :mod:`audit.datasets` is imported.
"""

from __future__ import annotations

import pkgutil
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import partial
from importlib import import_module
from importlib.metadata import entry_points
from typing import Any

from audit.datasets.container import AuditData
from audit.datasets.features import FeatureMap
from certify.errors import InvalidInput

__all__ = [
    "DATASETS",
    "ENTRY_POINT_GROUP",
    "Loader",
    "available_datasets",
    "catalogue",
    "list_datasets",
    "load_dataset",
    "unavailable_datasets",
]

ENTRY_POINT_GROUP = "unlearn_audit.datasets"

#: The loader-specific options of :func:`load_dataset` a :class:`Loader` may accept.
LOADER_OPTIONS = ("label_column", "group_column", "id_column")


@dataclass(frozen=True)
class Loader:
    """One dataset source, as a loader module declares it (``LOADER = Loader(...)``).

    ``name``
        The name users give (``"adult"``), or for a source that takes an argument its pattern
        (``"idx:<dir>"``), which must start with ``prefix``.
    ``load``
        Returns an :class:`AuditData`, normally through :func:`audit.datasets.split.build`. It is
        called as ``load(**kwargs)``, or ``load(argument, **kwargs)`` with the text after
        ``prefix``. ``kwargs`` are ``seed``, ``max_train``, ``feature_map``,
        ``reference_fraction``, ``test_fraction``, ``unseen_fraction`` (unchecked: ``build``
        checks them) and each of ``options``.
    ``description``, ``source``, ``licence``, ``citation``
        What :func:`list_datasets` and the CLI show.
    ``prefix``
        ``None`` for a fixed name, else the prefix (``"idx:"``) that selects this loader.
    ``options``
        Which of ``label_column``, ``group_column``, ``id_column`` it accepts; :func:`load_dataset` refuses the
        others, naming the datasets that do accept them.
    ``order``
        Position in listings and messages (the built-ins use 10 to 40; ties go by name).
    ``aliases``, ``alias_hint``
        Names users may try for this source (compared in lower case with ``_`` read as ``-``)
        and the hint an unknown-dataset error gives for them.
    ``title``, ``url``
        The dataset's name in words and where it comes from (a DOI or home page), for
        :func:`catalogue`; ``None`` for a source that is whatever the user gives.
    ``shape``
        For a dataset that ships with the toolkit: what loading it gives, as a mapping with
        ``records`` (all splits), ``features`` (per record, before the feature map),
        ``classes``, and where they apply ``image`` (the record's image shape), ``files`` (records
        per source file) and ``default_features`` (after the default feature map). A test loads
        every bundled dataset and compares.
    ``known``
        For a source read from the user's files: the public datasets it is made for, each a
        mapping with ``title``, ``url``, ``licence``, ``citation``, ``shape`` (with ``train`` and
        ``test`` records) and, where the loader pins them and names the source by them,
        ``sha256`` (of the decompressed files).
    """

    name: str
    load: Callable[..., AuditData]
    description: str
    source: str
    licence: str
    citation: str
    prefix: str | None = None
    options: tuple[str, ...] = ()
    order: int = 1000
    aliases: tuple[str, ...] = ()
    alias_hint: str | None = None
    title: str | None = None
    url: str | None = None
    # mappings: left out of the generated __eq__/__hash__ (a dict does not hash)
    shape: Mapping[str, Any] | None = field(default=None, compare=False)
    known: tuple[Mapping[str, Any], ...] = field(default=(), compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise InvalidInput("Loader.name", "a non-empty string", self.name)
        if self.prefix is not None and (
            not isinstance(self.prefix, str) or not self.prefix or not self.name.startswith(self.prefix)
        ):
            raise InvalidInput(
                "Loader.prefix",
                f"None or a non-empty prefix of the name {self.name!r}",
                self.prefix,
            )
        if not callable(self.load):
            raise InvalidInput("Loader.load", "a callable returning AuditData", self.load)
        if isinstance(self.options, str) or any(o not in LOADER_OPTIONS for o in self.options):
            raise InvalidInput(
                "Loader.options",
                "a tuple of names among " + ", ".join(repr(o) for o in LOADER_OPTIONS),
                self.options,
            )
        object.__setattr__(self, "options", tuple(self.options))
        if self.shape is not None and not isinstance(self.shape, Mapping):
            raise InvalidInput("Loader.shape", "None or a mapping (records, features, classes, ...)", self.shape)
        if isinstance(self.known, Mapping) or not all(isinstance(k, Mapping) for k in self.known):
            raise InvalidInput("Loader.known", "a tuple of mappings (title, url, licence, shape, ...)", self.known)
        object.__setattr__(self, "known", tuple(self.known))

    def info(self) -> dict[str, str]:
        """``description``, ``source``, ``licence``, ``citation``: one :data:`DATASETS` entry."""
        return {
            "description": self.description,
            "source": self.source,
            "licence": self.licence,
            "citation": self.citation,
        }


# ----------------------------------------------------------------------------------------------
# discovery


def _module_loader(module: str) -> Any:
    """The ``LOADER`` of a built-in loader module (imported when called)."""
    return import_module(module).LOADER


def _as_loader(obj: Any, target: str) -> Loader:
    if not isinstance(obj, Loader):
        raise TypeError(f"{target} is {type(obj).__name__}, not an audit.datasets.Loader")
    return obj


def _clash(loader: Loader, table: Mapping[str, tuple[Loader, str]]) -> str | None:
    """Where an already registered loader takes ``loader``'s name or prefix, say which."""
    for other, origin in table.values():
        if other.name == loader.name or (loader.prefix is not None and loader.prefix == other.prefix):
            return f"the name {loader.name!r} is already taken by {origin}"
    return None


def _scan() -> tuple[dict[str, Loader], dict[str, str]]:
    """Every loader that loads, in listing order, and the error of every one that does not."""
    from audit.datasets import loaders as package

    candidates: list[tuple[str, str, Callable[[], Any]]] = []  # (key, origin, load)
    for info in pkgutil.iter_modules(package.__path__):
        if info.name.startswith("_"):
            continue  # private helpers of the loaders
        module = f"{package.__name__}.{info.name}"
        candidates.append((info.name, f"{module}:LOADER", partial(_module_loader, module)))
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        candidates.append((ep.name, ep.value, ep.load))

    table: dict[str, tuple[Loader, str]] = {}
    broken: dict[str, str] = {}
    for key, origin, load in candidates:
        try:
            loader = _as_loader(load(), origin)
        except Exception as exc:  # a broken loader must not hide the others: it is reported
            broken[key] = f"{origin}: {type(exc).__name__}: {exc}"
            continue
        clash = _clash(loader, table)
        if clash is not None:
            broken[key] = f"{origin}: {clash}"
            continue
        table[loader.name] = (loader, origin)
    ordered = sorted(table.values(), key=lambda entry: (entry[0].order, entry[0].name))
    return {loader.name: loader for loader, _ in ordered}, broken


def available_datasets() -> dict[str, Loader]:
    """Every dataset whose loader imports, built-in and plug-in, by name, in listing order."""
    return _scan()[0]


def unavailable_datasets() -> dict[str, str]:
    """Loaders that failed to import (or clash), with their error, by module or entry-point name."""
    return dict(sorted(_scan()[1].items()))


def list_datasets() -> list[dict[str, str]]:
    """The registry as a list of dicts (``name`` plus the :data:`DATASETS` fields), for the CLI."""
    return [{"name": name, **loader.info()} for name, loader in available_datasets().items()]


def _needs(loader: Loader) -> str | None:
    """What the user must supply: None for a bundled dataset, else the argument's kind."""
    if loader.prefix is None:
        return None
    argument = loader.name[len(loader.prefix) :].strip("<>").lower()
    return {"dir": "a directory", "file": "a file"}.get(argument, argument or "an argument")


def _plain(value: Any) -> Any:
    """A declaration's mappings and tuples as JSON-ready dicts and lists (a copy)."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def catalogue() -> list[dict[str, Any]]:
    """Every available dataset with its source, licence and shape, for ``audit datasets``.

    Each entry: ``name`` (what to pass to :func:`load_dataset`; a pattern such as ``idx:<dir>``
    for a source read from the user's files), ``title``, ``bundled`` (ships with the toolkit or
    its dependencies: nothing to download), ``needs`` (``None``, ``"a directory"`` or
    ``"a file"``), ``source`` (URL or DOI of the data; for a user's files the loader's words),
    ``copy`` (where the toolkit's copy comes from), ``licence``, ``citation``, ``description``,
    ``shape`` (for a bundled dataset: ``records``, ``features``, ``classes``, and where they apply
    ``image``, ``files``, ``default_features``; else ``None``, since it depends on the files) and
    ``known`` (the public datasets a directory loader is made for, each with its title, url,
    licence, citation, shape and, where the loader identifies them by it, SHA-256). Read from
    the loaders' declarations: nothing is loaded, opened or downloaded.
    """
    out = []
    for name, loader in available_datasets().items():
        out.append(
            {
                "name": name,
                "title": loader.title or name,
                "bundled": loader.prefix is None,
                "needs": _needs(loader),
                "source": loader.url or loader.source,
                "copy": loader.source,
                "licence": loader.licence,
                "citation": loader.citation,
                "description": loader.description,
                "shape": _plain(loader.shape) if loader.shape is not None else None,
                "known": [_plain(r) for r in loader.known],
            }
        )
    return out


class _DatasetTable(Mapping[str, dict[str, str]]):
    """name -> description, source, licence, citation of every available dataset (read live)."""

    def __getitem__(self, name: str) -> dict[str, str]:
        return available_datasets()[name].info()

    def __iter__(self) -> Iterator[str]:
        return iter(available_datasets())

    def __len__(self) -> int:
        return len(available_datasets())

    def __repr__(self) -> str:
        return f"DATASETS({dict(self)!r})"


#: Dataset registry for the CLI and reports: name -> description, source, licence, citation.
DATASETS: Mapping[str, dict[str, str]] = _DatasetTable()


# ----------------------------------------------------------------------------------------------
# loading


def _resolve(name: str, table: Mapping[str, Loader]) -> tuple[Loader | None, str | None]:
    """The loader for ``name`` and the argument after its prefix (``None`` for a fixed name)."""
    loader = table.get(name)
    if loader is not None and loader.prefix is None:
        return loader, None
    for loader in table.values():
        if loader.prefix is not None and name.startswith(loader.prefix):
            return loader, name[len(loader.prefix) :]
    return None, None


def _names(loaders: Any) -> str:
    names = [repr(loader.name) for loader in loaders]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def load_dataset(
    name: str,
    *,
    seed: int = 0,
    max_train: int | None = None,
    feature_map: FeatureMap | Mapping[str, Any] | None = None,
    reference_fraction: float | None = None,
    test_fraction: float | None = None,
    unseen_fraction: float | None = None,
    label_column: str | None = None,
    group_column: str | None = None,
    id_column: str | None = None,
) -> AuditData:
    """Load a dataset by name: ``'adult'``, ``'digits'``, ``'idx:<dir>'`` or ``'csv:<file>'``.

    Plug-in datasets are loaded the same way (see :func:`available_datasets`).

    Parameters
    ----------
    seed:
        Seed of the split (``numpy.random.default_rng(seed).permutation``).
    max_train:
        Keep only this many training records (a deterministic random subset, nested across
        values); the reference, test and unseen splits and the feature map do not change.
    feature_map:
        A :class:`FeatureMap` (its configuration is used and fitted afresh on the reference
        split) or a mapping overriding the dataset's default options, e.g.
        ``{"pca_components": 10, "row_norm": "clip", "standardize": False}``.
    reference_fraction, test_fraction, unseen_fraction:
        Fractions of all records (defaults 0.05, 0.15, 0.10); train is the rest. For IDX the
        t10k files are the test set and ``test_fraction`` must be left unset.
    label_column:
        CSV only: the label column (required there).
    group_column:
        CSV or Adult: a column whose values become ``groups_train`` (excluded from features).
    id_column:
        CSV only: a column holding each record's id (excluded from features); forget sets and
        the deletion commitment then use these ids.
    """
    table, broken = _scan()
    choices = "one of " + ", ".join(repr(n) for n in table)
    if not isinstance(name, str):
        raise InvalidInput("dataset", choices, name)
    loader, argument = _resolve(name, table)
    if loader is None:
        error = broken.get(name) or broken.get(name.partition(":")[0])
        if error is not None:
            raise InvalidInput(
                "dataset",
                "a dataset whose loader imports",
                name,
                hint=f"Loading its loader failed: {error}",
            )
    options = {"label_column": label_column, "group_column": group_column, "id_column": id_column}
    for option, value in options.items():
        if value is not None and (loader is None or option not in loader.options):
            accepting = [ld for ld in table.values() if option in ld.options]
            allowed = "None" + (f" except for {_names(accepting)}" if accepting else "")
            raise InvalidInput(option, allowed, value)
    if loader is None:
        key = name.lower().replace("_", "-")
        hint = next((ld.alias_hint for ld in table.values() if key in ld.aliases), None)
        raise InvalidInput("dataset", choices, name, hint=hint)
    kwargs: dict[str, Any] = {
        "seed": seed,
        "max_train": max_train,
        "feature_map": feature_map,
        "reference_fraction": reference_fraction,
        "test_fraction": test_fraction,
        "unseen_fraction": unseen_fraction,
        **{option: options[option] for option in loader.options},
    }
    if argument is None:
        return loader.load(**kwargs)
    return loader.load(argument, **kwargs)
