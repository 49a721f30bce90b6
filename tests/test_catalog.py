"""`audit methods` answers from declared metadata (issue 26): src/audit/data/catalog.json holds the
built-ins' declarations, generated from the classes; these tests fail when the two differ and when
the listing imports torch."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from attacks.registry import ATTACKS, get_attack
from audit import catalog
from unlearners.registry import available_methods


def _json(value):
    return json.loads(json.dumps(value, default=str))


def test_the_catalog_file_is_what_the_classes_declare():
    """Regenerate with `python -m audit.catalog` after changing a method's or an attack's declarations."""
    assert catalog.load() == _json(catalog.generate())


def test_the_listing_is_the_one_the_classes_give():
    found = catalog.listing()
    assert found["methods"] == _json([catalog.method_row(n, cls) for n, cls in available_methods().items()])
    assert found["attacks"] == _json([catalog.attack_row(n, get_attack(n)) for n in ATTACKS.names()])
    assert found["unavailable"] == []


def test_a_method_registered_in_process_is_listed_from_its_class(monkeypatch):
    retrain = available_methods()["retrain"]
    mine = type("Mine", (retrain,), {"name": "mine", "title": "my method"})
    from unlearners.registry import METHODS

    monkeypatch.setitem(METHODS.registered, "mine", mine)
    rows = {r["name"]: r for r in catalog.listing()["methods"]}
    assert rows["mine"]["title"] == "my method" and rows["retrain"]["title"] == retrain.title


_NO_TORCH = """
import json, sys
sys.modules["torch"] = None  # importing torch now fails
{body}
"""


def _without_torch(body: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", _NO_TORCH.format(body=body)], capture_output=True, text=True)


def test_the_listing_answers_without_importing_torch():
    proc = _without_torch("from audit.catalog import listing; print(json.dumps(listing()))")
    assert proc.returncode == 0, proc.stderr
    listed = json.loads(proc.stdout)
    assert [m["name"] for m in listed["methods"]] == sorted(catalog.load()["methods"])
    assert [a["name"] for a in listed["attacks"]] == list(ATTACKS.builtin) and listed["unavailable"] == []


@pytest.mark.slow  # the whole command in a fresh interpreter (about 0.7 s of CPU); the listing's test above is fast
def test_audit_methods_answers_without_importing_torch():
    proc = _without_torch('sys.argv = ["audit", "methods", "--json"]\nfrom audit.cli import main\nmain()')
    assert proc.returncode == 0, proc.stderr
    declared = catalog.load()["methods"]
    assert json.loads(proc.stdout)["methods"] == [declared[n]["row"] for n in sorted(declared)]
