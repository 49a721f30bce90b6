"""Third-party methods are discovered through the `unlearn_audit.unlearners` entry-point group."""

from importlib.metadata import EntryPoint, PackageNotFoundError, version

import pytest

import unlearners.base as base
from unlearners.retrain import Retrain


class PluginMethod(Retrain):
    name = "plugin-retrain"
    title = "A third-party method"


def test_entry_point_plugins_are_registered_and_broken_ones_ignored(monkeypatch):
    good = EntryPoint("plugin-retrain", f"{__name__}:PluginMethod", base.ENTRY_POINT_GROUP)
    broken = EntryPoint("broken", "no_such_module_xyz:Nothing", base.ENTRY_POINT_GROUP)
    monkeypatch.setattr(base, "entry_points", lambda group: [good, broken] if group == base.ENTRY_POINT_GROUP else [])
    monkeypatch.setattr(base, "_REGISTRY", dict(base._REGISTRY))
    methods = base.available_methods()
    assert methods["plugin-retrain"] is PluginMethod
    assert "broken" not in methods and "r2d" in methods
    assert base.get_method("plugin-retrain") is PluginMethod


def test_installed_entry_points_name_the_builtins():
    try:
        version("unlearn-audit")
    except PackageNotFoundError:
        pytest.skip("unlearn-audit is not installed (running from a bare checkout): no entry points to read")
    names = {ep.name for ep in base.entry_points(group=base.ENTRY_POINT_GROUP)}
    assert {"r2d", "retrain"} <= names
