"""Third-party methods and attacks: discovered through entry points, registered in-process, and a
plug-in that fails to import is reported with its error (never silently dropped)."""

import json
import tomllib
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest
from typer.testing import CliRunner

import attacks.registry as attack_registry
import unlearners.models as models
import unlearners.registry as registry
from audit.cli import app
from certify.errors import InvalidInput
from unlearners.retrain import Retrain


class PluginMethod(Retrain):
    name = "plugin-retrain"
    title = "A third-party method"


@pytest.fixture
def plugins(monkeypatch):
    good = EntryPoint("plugin-retrain", f"{__name__}:PluginMethod", registry.ENTRY_POINT_GROUP)
    broken = EntryPoint("broken", "no_such_module_xyz:Nothing", registry.ENTRY_POINT_GROUP)
    bad_attack = EntryPoint("broken-attack", "no_such_attack_xyz:Nothing", attack_registry.ENTRY_POINT_GROUP)
    bad_model = EntryPoint("broken-model", "no_such_model_xyz:build", models.ENTRY_POINT_GROUP)
    table = {
        registry.ENTRY_POINT_GROUP: [good, broken],
        attack_registry.ENTRY_POINT_GROUP: [bad_attack],
        models.ENTRY_POINT_GROUP: [bad_model],
    }
    for where in (registry.METHODS, attack_registry.ATTACKS, models):
        monkeypatch.setattr(where, "entry_points", lambda group: table.get(group, []))


def test_entry_point_plugins_are_registered_and_broken_ones_reported(plugins):
    methods = registry.available_methods()
    assert methods["plugin-retrain"] is PluginMethod and "r2d" in methods
    assert registry.get_method("plugin-retrain") is PluginMethod
    assert "broken" not in methods
    assert "no_such_module_xyz" in registry.unavailable_methods()["broken"]
    with pytest.raises(InvalidInput) as exc:
        registry.get_method("broken")
    assert exc.value.field == "method" and "no_such_module_xyz" in str(exc.value)
    assert "no_such_attack_xyz" in attack_registry.unavailable_attacks()["broken-attack"]


def test_a_broken_plugin_shows_its_error_in_audit_methods_and_audit_run(plugins):
    runner = CliRunner()
    listed = runner.invoke(app, ["methods"])
    assert listed.exit_code == 0 and "broken" in listed.output and "no_such_module_xyz" in listed.output
    unavailable = {
        (u["kind"], u["name"]): u["error"]
        for u in json.loads(runner.invoke(app, ["methods", "--json"]).stdout)["unavailable"]
    }
    assert "no_such_module_xyz" in unavailable[("method", "broken")]
    assert "no_such_attack_xyz" in unavailable[("attack", "broken-attack")]
    assert "no_such_model_xyz" in unavailable[("model", "broken-model")]
    model_run = runner.invoke(app, ["run", "--model", "broken-model", "-q"])
    assert model_run.exit_code == 2 and "no_such_model_xyz" in model_run.stderr
    run = runner.invoke(app, ["run", "--method", "broken", "-q"])
    assert run.exit_code == 2 and "no_such_module_xyz" in run.stderr and "Traceback" not in run.stderr


def test_in_process_registration():
    class Local(Retrain):
        name = "local-retrain"
        title = "A method registered by the calling code"

    registry.register(Local)
    try:
        assert registry.get_method("local-retrain") is Local
    finally:
        registry.unregister("local-retrain")
    with pytest.raises(InvalidInput):
        registry.register(object)


def test_builtin_methods_are_declared_once_in_the_registry(monkeypatch):
    """unlearners/registry.BUILTIN is the one list of built-in methods: the package declares no entry
    point of its own (the group is for third-party methods), and every built-in loads with none."""
    pyproject = tomllib.loads((Path(__file__).resolve().parent.parent / "pyproject.toml").read_text())
    assert registry.ENTRY_POINT_GROUP not in pyproject["project"].get("entry-points", {})
    monkeypatch.setattr(registry.METHODS, "entry_points", lambda group: [])
    assert set(registry.available_methods()) == set(registry.BUILTIN) and not registry.unavailable_methods()
    assert {"r2d", "retrain", "noop"} <= set(registry.BUILTIN)
