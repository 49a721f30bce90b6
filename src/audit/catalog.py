"""What ``audit methods`` lists, answered from declared metadata: the built-in methods' and
attacks' declarations, written once to ``data/catalog.json`` from the classes themselves.

Importing every method and attack to read a few class attributes costs torch's import (4.7 s of
wall time on a loaded machine, issue 26); the listing of the built-ins does not change between
releases, so it is generated from the classes (``python -m audit.catalog`` writes
:data:`CATALOG_FILE`) and ``tests/test_catalog.py`` fails when a declaration and the file differ.
Plug-ins (entry points, classes registered in this process) are not in the file: they are
imported as before, and one that fails to import is listed with its error.
"""

from __future__ import annotations

import json
import sys
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

CATALOG_FILE = Path(__file__).resolve().parent / "data" / "catalog.json"


# -- rows, from the classes ------------------------------------------------------------------------
def method_row(name: str, cls: Any) -> dict[str, Any]:
    """One method's row of the listing (``audit methods --json``'s ``methods``)."""
    return {
        "name": name,
        "title": cls.title,
        "paper": cls.paper,
        "certified": cls.certified,
        "assumptions": list(cls.assumptions),
        "deviations": list(cls.deviations),
        "options": {
            p.name: p.default if not isinstance(p.default, tuple) else list(p.default) for p in cls.hyperparameters
        },
        "option_declarations": [p.describe() for p in cls.hyperparameters],
        "capabilities": cls.capabilities.describe(),
    }


def attack_row(name: str, cls: Any) -> dict[str, Any]:
    """One attack's row of the listing (``attacks``)."""
    return {"name": name, "title": cls.title, "description": cls.description, "needs": sorted(cls.needs)}


def generate() -> dict[str, Any]:
    """The catalog of the built-ins, from their classes (imports every one of them, and torch)."""
    from attacks.registry import ATTACKS
    from unlearners.models import ENTRY_POINT_GROUP as MODEL_GROUP
    from unlearners.registry import METHODS

    def rows(registry: Any, row: Any) -> dict[str, Any]:
        return {
            name: {"target": target, "row": json.loads(json.dumps(row(name, registry.load(target)), default=str))}
            for name, target in registry.builtin.items()
        }

    return {"methods": rows(METHODS, method_row), "attacks": rows(ATTACKS, attack_row), "model_group": MODEL_GROUP}


def load() -> dict[str, Any]:
    """The catalog as written (see :func:`generate`)."""
    return json.loads(CATALOG_FILE.read_text())


# -- the listing -----------------------------------------------------------------------------------
def _entries(registry: Any, declared: dict[str, Any], row: Any) -> tuple[dict[str, dict], dict[str, str]]:
    """name -> row of every entry that loads (in the registry's order: built-ins, entry points, then
    classes registered in this process), and name -> error of every one that does not: a built-in
    from its declaration, a plug-in (or a built-in the catalog does not describe) imported."""
    rows: dict[str, dict] = {}
    broken: dict[str, str] = {}
    for name, target in registry.targets().items():
        if name in registry.registered:
            continue
        if name in declared and declared[name]["target"] == target:
            rows[name] = declared[name]["row"]
            continue
        try:
            rows[name] = row(name, registry.load(target))
        except Exception as exc:  # a broken plug-in must not break the listing: it is reported
            broken[name] = f"{target}: {type(exc).__name__}: {exc}"
    rows.update({name: row(name, cls) for name, cls in registry.registered.items()})
    return rows, broken


def listing() -> dict[str, list[dict[str, Any]]]:
    """``audit methods --json``: ``methods`` (by name), ``attacks`` (in ``--attacks`` order) and
    ``unavailable`` (plug-ins that failed to import, with their error). Imports torch only for a
    plug-in."""
    from attacks.registry import ATTACKS
    from audit.datasets import unavailable_datasets
    from unlearners.registry import METHODS

    catalog = load()
    methods, broken_methods = _entries(METHODS, catalog["methods"], method_row)
    attacks, broken_attacks = _entries(ATTACKS, catalog["attacks"], attack_row)
    unavailable = [{"kind": "method", "name": n, "error": e} for n, e in sorted(broken_methods.items())]
    unavailable += [{"kind": "attack", "name": n, "error": e} for n, e in sorted(broken_attacks.items())]
    unavailable += [{"kind": "dataset", "name": n, "error": e} for n, e in unavailable_datasets().items()]
    # plug-in models: importing them needs torch (asked of the models module where it is loaded already)
    if "unlearners.models" in sys.modules or entry_points(group=catalog["model_group"]):
        from unlearners.models import unavailable_models

        unavailable += [{"kind": "model", "name": n, "error": e} for n, e in unavailable_models().items()]
    return {
        "methods": [methods[n] for n in sorted(methods)],
        "attacks": list(attacks.values()),
        "unavailable": unavailable,
    }


if __name__ == "__main__":
    CATALOG_FILE.write_text(json.dumps(generate(), indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {CATALOG_FILE}")
