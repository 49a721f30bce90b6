"""The command line: exit codes, one-sentence errors, nothing half-written."""

import json
import os
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from audit.cli import app

runner = CliRunner()
FAST = ["--max-train", "2000", "--curve-points", "2", "--noise-draws", "2", "--attacks", "none"]


def invoke(*args):
    return runner.invoke(app, list(args))


def test_run_writes_report_and_prints_json(tmp_path):
    # K = 0.99 T: the noise leaves the released model useful on 2,000 records (at 0.95 T it is at chance)
    result = invoke(
        "run", "--method", "r2d", "--epsilon", "1", *FAST, "--rewind-fraction", "0.99", "--out", str(tmp_path), "--json"
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["certificate"]["epsilon"] == 1.0 and report["verdict"] == "consistent"
    assert json.loads((tmp_path / "report.json").read_text()) == report


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (["--epsilon", "0"], "--epsilon"),
        (["--epsilon", "-2"], "--epsilon"),
        (["--delta", "1.5"], "--delta"),
        (["--method", "nope"], "--method"),
        (["--forget-count", "0"], "--forget-count"),
        (["--forget-count", "1500"], "--forget-count"),
        (["--mechanism", "classic", "--epsilon", "3"], "--epsilon"),
        (["--dataset", "csv:/does/not/exist.csv"], "--dataset"),
        (["--hidden", "a,b", "--model", "mlp"], "--hidden"),
    ],
)
def test_bad_input_exits_2_with_one_sentence_and_no_file(tmp_path, args, field):
    out = tmp_path / "out"
    result = invoke("run", *args, *FAST, "--out", str(out))
    assert result.exit_code == 2
    assert "Traceback" not in result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:") and field in lines[0]
    assert not out.exists()


@pytest.mark.slow
def test_config_file_with_flag_precedence(tmp_path):
    cfg = tmp_path / "audit.toml"
    cfg.write_text("[audit]\nepsilon = 0.5\nforget_count = 3\nmax_train = 2000\n")
    result = invoke(
        "run", "--config", str(cfg), "--epsilon", "2", "--curve-points", "2", "--noise-draws", "2", "--json", "-q"
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["config"]["epsilon"] == 2.0 and report["dataset"]["forget_size"] == 3
    bad = tmp_path / "bad.toml"
    bad.write_text("epsilon = [")
    assert invoke("run", "--config", str(bad)).exit_code == 2


def test_violated_certificate_exits_1():
    result = invoke("run", *FAST, "--forget-count", "20", "--G", "1e-7", "-q")
    assert result.exit_code == 1


def test_calibrate_known_values():
    result = invoke("calibrate", "--epsilon", "1", "--delta", "1e-5", "--json")
    assert result.exit_code == 0
    assert json.loads(result.stdout)["sigma"] == pytest.approx(3.730632, rel=1e-6)
    result = invoke("calibrate", "--sigma", "1", "--delta", "1e-5", "--json")
    assert json.loads(result.stdout)["epsilon"] == pytest.approx(4.377178, rel=1e-6)
    result = invoke("calibrate", "--epsilon", "1", "--delta", "1e-5", "--mechanism", "classic", "--json")
    assert json.loads(result.stdout)["sigma"] == pytest.approx(4.844805, rel=1e-6)
    result = invoke("calibrate", "--epsilon", "2", "--delta", "1e-5", "--mechanism", "classic")
    assert result.exit_code == 2 and "analytic" in result.stderr
    assert invoke("calibrate", "--delta", "1e-5").exit_code == 2


def test_methods_lists_r2d_its_declared_options_and_the_attacks():
    result = invoke("methods", "--json")
    listing = json.loads(result.stdout)
    rows = {r["name"]: r for r in listing["methods"]}
    assert rows["r2d"]["certified"] and "Rewind-to-Delete" in rows["r2d"]["paper"]
    assert "retrain" in rows
    assert rows["r2d"]["options"]["rewind"] == 95 and rows["r2d"]["options"]["eta"] is None
    declared = {p["name"]: p for p in rows["r2d"]["option_declarations"]}
    assert declared["steps"]["allowed"] == "an integer in [1, 1000000]" and declared["steps"]["from_audit"] == "steps"
    assert rows["r2d"]["capabilities"]["knob"]["option"] == "rewind"
    assert {a["name"] for a in listing["attacks"]} >= {"mia", "ulira", "relearn", "whitebox"}
    assert listing["unavailable"] == []


@pytest.mark.slow
def test_console_script_never_prints_a_traceback(tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.run(
        [sys.executable, "-m", "audit", "run", "--epsilon", "nan"], capture_output=True, text=True, env=env, timeout=120
    )
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr and "epsilon" in proc.stderr


def test_cli_summary_of_a_method_without_a_theorem_states_no_certified_epsilon():
    result = invoke("run", "--method", "finetune", *FAST, "--attacks", "whitebox", "--trials", "20")
    assert result.exit_code == 4  # not certified
    assert "none: the method has no theorem (nothing is certified)" in result.stderr
    assert "certified epsilon" not in result.stderr and "certified >= realized" not in result.stderr
    assert "warning: no certificate: finetune has no theorem" in result.stderr


def test_an_optional_number_with_a_default_takes_the_word_none():
    """--utility-records defaults to 2,000 records, so every record has to be chosen by typing none
    (the command line and the config file spell it the same way); any other word is refused."""
    from audit.cli.run import settings
    from certify.errors import InvalidInput

    assert settings({"utility_records": "none"}, {})["utility_records"] is None
    assert settings({"utility_records": " None "}, {})["utility_records"] is None
    assert settings({"utility_records": "500"}, {})["utility_records"] == 500
    assert settings({}, {"utility_records": "none"})["utility_records"] is None
    assert settings({}, {"utility_records": 300})["utility_records"] == 300
    with pytest.raises(InvalidInput, match="--utility-records"):
        settings({"utility_records": "many"}, {})
