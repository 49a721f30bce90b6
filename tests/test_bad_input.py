"""Bad input, table-driven (issue 13): every case ends with exit code 2 (3 for verification), one
sentence on stderr that starts with ``error:`` and names the field as the user wrote it, no
traceback, and nothing written. Library cases raise one InvalidInput naming the field."""

from __future__ import annotations

import json
import os
import shutil
import socket
from pathlib import Path

import pytest
from typer.testing import CliRunner

from audit.cli import app
from certify.errors import InvalidInput

DATA = Path(__file__).parent / "data"
FAST = ["--max-train", "300", "--curve-points", "2", "--noise-draws", "2", "--attacks", "none"]


def _fixtures(root: Path) -> dict[str, str]:
    """Files the cases point at, made fresh in each test's directory."""
    from audit.report.keys import generate_keypair

    (root / "adir").mkdir()
    (root / "afile").write_text("x\n")
    (root / "bad.toml").write_text("epsilon = [unclosed\n")
    (root / "audit5.toml").write_text("audit = 5\n")
    (root / "constants5.toml").write_text("constants = 5\n")
    (root / "options_text.toml").write_text('method_options = "abc"\n')
    (root / "unknown.toml").write_text("[audit]\nepsilonn = 1\n")
    (root / "eps_text.toml").write_text('[audit]\nepsilon = "x"\n')
    (root / "nonhex.salt").write_text("not hex at all\n")
    (root / "short.salt").write_text("00ff\n")
    (root / "good.salt").write_text("11" * 32 + "\n")
    (root / "array.json").write_text("[1, 2]\n")
    (root / "not.json").write_text("{nope\n")
    (root / "schema_bad.json").write_text(json.dumps({"verdict": 1}))
    (root / "nested.json").write_text("[" * 100_000 + "]" * 100_000)
    shutil.copy(DATA / "sample-report.json", root / "report.json")
    (root / "ids.txt").write_text("1\n2\n")
    (root / "model.txt").write_text("def build(shape, classes):\n    pass\n")
    (root / "sleepy.py").write_text(
        "import time\n\ndef train(model, dataset, generator):\n    time.sleep(0.02)\n"
        "    return model\n\ndef unlearn(model, forget, retain, generator):\n"
        "    return model\n"
    )
    rows = [f"{150 + i},{i % 2}" for i in range(40)]
    rows[7] = "17O,1"  # a typo in a numeric column
    (root / "typo.csv").write_text("height,outcome\n" + "\n".join(rows) + "\n")
    keys = root / "keys"
    generate_keypair(keys)
    loose = root / "loose.pem"
    loose.write_bytes((keys / "private.pem").read_bytes())
    loose.chmod(0o644)
    (root / "norep").mkdir()
    (root / "ceiling_trials.toml").write_text("trials = 64\ntarget_ceiling = 2.0\n")
    (root / "rewind_list.toml").write_text("rewind = [1]\n")
    (root / "runs").mkdir()
    (root / "readonly").mkdir()  # read-only and full only as _machine answers for them (root writes anywhere)
    (root / "fulldisk").mkdir()
    # a signed directory whose envelope is deeply nested JSON, and one whose report was tampered with
    for name, envelope in (("nested_env", "[" * 100_000 + "]" * 100_000), ("garbage_env", '{"payload": 5}')):
        d = root / name
        d.mkdir()
        shutil.copy(DATA / "sample-report.json", d / "report.json")
        (d / "report.dsse.json").write_text(envelope)
    with socket.socket() as s:  # a port nothing listens on once this socket is closed
        s.bind(("127.0.0.1", 0))
        closed_port = s.getsockname()[1]
    # a signed report with an unsigned file added after signing
    from audit.report.signing import sign_report

    (root / "extra_signed").mkdir()
    shutil.copy(DATA / "sample-report.json", root / "extra_signed" / "report.json")
    sign_report(root / "extra_signed", keys / "private.pem")
    (root / "extra_signed" / "notes.txt").write_text("added later\n")
    # a comparison's run directory whose r2d shards belong to another configuration, and one audit's run directory
    from audit.runstore import FORMAT, MANIFEST

    for run_dir in (root / "stale" / "r2d", root / "arun"):
        run_dir.mkdir(parents=True)
        (run_dir / MANIFEST).write_text(json.dumps({"format": FORMAT, "key": "0" * 64}))
    # the caller's pipeline (outside root: importing it writes __pycache__) and a state dict of another model
    code = root.parent / (root.name + "-code")
    code.mkdir(exist_ok=True)
    (code / "pipeline.py").write_text(
        "from torch import nn\n"
        "def build(shape, classes):\n    return nn.Linear(shape[0], classes)\n"
        "def train(model, dataset, generator):\n    return model\n"
        "def unlearn(model, forget, retain, generator):\n    return model\n"
    )
    import torch

    torch.save({"weight": torch.zeros(3)}, root / "other.pt")
    return {"root": str(root), "closed_port": str(closed_port), "code": str(code)}


R = "{root}"
# (case id, argv, expected exit code, text the one sentence must contain)
CLI_CASES = [
    # -- audit run: values
    ("epsilon-zero", ["run", "--epsilon", "0"], 2, "--epsilon"),
    ("epsilon-negative", ["run", "--epsilon", "-2"], 2, "--epsilon"),
    ("epsilon-nan", ["run", "--epsilon", "nan"], 2, "--epsilon"),
    ("epsilon-inf", ["run", "--epsilon", "inf"], 2, "--epsilon"),
    ("epsilon-text", ["run", "--epsilon", "abc"], 2, "--epsilon"),
    ("delta-zero", ["run", "--delta", "0"], 2, "--delta"),
    ("delta-one", ["run", "--delta", "1"], 2, "--delta"),
    ("delta-above-one", ["run", "--delta", "1.5"], 2, "--delta"),
    ("method-unknown", ["run", "--method", "nope"], 2, "--method"),
    ("mechanism-unknown", ["run", "--mechanism", "foo"], 2, "--mechanism"),
    ("classic-epsilon-above-1", ["run", "--mechanism", "classic", "--epsilon", "3"], 2, "--epsilon"),
    ("forget-count-zero", ["run", "--forget-count", "0"], 2, "--forget-count"),
    ("forget-count-too-many", ["run", "--forget-count", "1500", *FAST], 2, "forget"),
    ("forget-fraction-high", ["run", "--forget-fraction", "0.9"], 2, "--forget-fraction"),
    ("forget-two-ways", ["run", "--forget-count", "2", "--forget-fraction", "0.1"], 2, "--forget-fraction"),
    ("rewind-above-steps", ["run", "--rewind", "200", "--steps", "100"], 2, "--rewind"),
    ("rewind-two-ways", ["run", "--rewind", "5", "--rewind-fraction", "0.5"], 2, "--rewind-fraction"),
    ("steps-zero", ["run", "--steps", "0"], 2, "--steps"),
    ("hidden-text", ["run", "--hidden", "a,b", "--model", "mlp"], 2, "--hidden"),
    ("model-unknown", ["run", "--model", "nope"], 2, "--model"),
    (
        "model-text-file",
        ["run", "--model", "module:" + R + "/afile:build", *FAST],
        2,
        "--model must be a registered model ('logreg', 'mlp', 'cnn' or a plug-in), 'module:<package.module>:<factory>' or",
    ),
    (
        "model-text-file-with-suffix",
        ["run", "--model", "module:" + R + "/model.txt:build", *FAST],
        2,
        "(a Python source file ending in .py)",
    ),
    ("dataset-unknown", ["run", "--dataset", "nope"], 2, "--dataset"),
    ("dataset-csv-missing", ["run", "--dataset", "csv:/does/not/exist.csv"], 2, "--dataset"),
    (
        "dataset-csv-directory",
        ["run", "--dataset", "csv:" + R + "/adir", "--label-column", "outcome"],
        2,
        "This path is a directory",
    ),
    (
        "dataset-csv-text-in-numeric-column",
        ["run", "--dataset", "csv:" + R + "/typo.csv", "--label-column", "outcome", *FAST],
        2,
        "height must be a number in every row",
    ),
    ("dataset-idx-missing", ["run", "--dataset", "idx:/does/not/exist"], 2, "--dataset"),
    ("trials-too-few", ["run", "--trials", "5"], 2, "--trials"),
    (
        "trials-beyond-memory",
        ["run", "--trials", "10000000", "--max-train", "300", "--curve-points", "2", "--noise-draws", "2"],
        2,
        "--trials",
    ),
    ("confidence-one", ["run", "--confidence", "1"], 2, "--confidence"),
    ("seed-negative", ["run", "--seed", "-1"], 2, "--seed"),
    ("one-run-whitebox-too-few", ["run", "--one-run-whitebox", "5"], 2, "--one-run-whitebox"),
    ("one-run-whitebox-text", ["run", "--one-run-whitebox", "many"], 2, "--one-run-whitebox"),
    ("utility-records-too-few", ["run", "--utility-records", "5"], 2, "--utility-records"),
    ("utility-records-not-a-number", ["run", "--utility-records", "many"], 2, "--utility-records"),
    ("attack-unknown", ["run", "--attacks", "nope"], 2, "--attacks"),
    ("feature-no-equals", ["run", "--feature", "bad"], 2, "--feature"),
    ("option-no-equals", ["run", "-o", "bad"], 2, "--option"),
    ("option-twice", ["run", "-o", "l2=0.1", "-o", "l2=0.2"], 2, "--option"),
    ("eta-given-twice", ["run", "--eta", "0.1", "-o", "eta=0.2"], 2, "--eta"),
    ("steps-as-option", ["run", "-o", "steps=10"], 2, "--steps"),
    ("budget-without-requests", ["run", "--budget-epsilon", "5"], 2, "--budget-epsilon"),
    ("requests-zero", ["run", "--requests", "0"], 2, "--requests"),
    ("sigma-budget-no-knob", ["run", "--sigma-budget", "1", "--method", "finetune"], 2, "--sigma-budget"),
    ("report-mode-777", ["run", "--report-mode", "777"], 2, "--report-mode"),
    ("device-unknown", ["run", "--device", "quantum"], 2, "--device"),
    ("dtype-unknown", ["run", "--dtype", "float16"], 2, "--dtype"),
    ("unknown-flag", ["run", "--bogus"], 2, "--bogus"),
    ("executor-unknown", ["run", "--executor", "threads"], 2, "--executor"),
    ("ray-address-without-ray", ["run", "--ray-address", "127.0.0.1:6379"], 2, "--ray-address"),
    (
        "ray-address-port-out-of-range",
        ["run", "--executor", "ray", "--ray-address", "127.0.0.1:99999"],
        2,
        "--ray-address",
    ),
    ("ray-address-auto", ["run", "--executor", "ray", "--ray-address", "auto"], 2, "--ray-address"),
    # refused before the data stage: a closed port answers at once (a silent host within 5 s)
    (
        "ray-address-unreachable",
        ["run", "--executor", "ray", "--ray-address", "127.0.0.1:{closed_port}", *FAST],
        2,
        "No Ray head answered at 127.0.0.1:",
    ),
    ("workers-with-local", ["run", "--workers", "2"], 2, "--workers"),
    ("workers-zero", ["run", "--executor", "processes", "--workers", "0"], 2, "--workers"),
    ("shard-size-zero", ["run", "--shard-size", "0"], 2, "--shard-size"),
    ("resume-is-a-file", ["run", "--resume", R + "/afile"], 2, "--resume"),
    ("resume-under-a-file", ["run", "--resume", R + "/afile/run"], 2, "--resume"),
    ("resume-holds-other-files", ["run", "--resume", R + "/keys"], 2, "--resume"),
    ("resume-is-out", ["run", "--resume", R + "/out", "--out", R + "/out"], 2, "--resume"),
    ("resume-inside-out", ["run", "--resume", R + "/out/shards", "--out", R + "/out"], 2, "--resume"),
    ("out-inside-resume", ["run", "--resume", R + "/runs", "--out", R + "/runs/out"], 2, "--resume"),
    ("resume-read-only", ["run", "--resume", R + "/readonly/run"], 2, "--resume"),
    ("resume-disk-full", ["run", "--resume", R + "/fulldisk/run"], 2, "--resume"),
    ("compare-resume-disk-full", ["compare", "--resume", R + "/fulldisk/run"], 2, "--resume"),
    ("compare-resume-is-out", ["compare", "--resume", R + "/out", "--out", R + "/out"], 2, "--resume"),
    ("target-ceiling-with-trials", ["run", "--trials", "64", "--target-ceiling", "2"], 2, "--target-ceiling"),
    ("config-target-ceiling-with-trials", ["run", "--config", R + "/ceiling_trials.toml"], 2, "--target-ceiling"),
    ("config-rewind-list", ["run", "--config", R + "/rewind_list.toml"], 2, "rewind (in"),
    (
        "trial-mode-noise-without-noise",
        [
            "run",
            "--method",
            "retrain",
            "--trial-mode",
            "noise",
            "--quiet",
            "--max-train",
            "300",
            "--curve-points",
            "2",
            "--noise-draws",
            "2",
            "--attacks",
            "mia",
        ],
        2,
        "--trial-mode",
    ),
    ("request-id-space", ["run", "--request-id", "REQ 42"], 2, "--request-id"),
    ("request-id-too-long", ["run", "--request-id", "R" * 129], 2, "--request-id"),
    # -- audit run: files and paths
    ("config-missing", ["run", "--config", R + "/missing.toml"], 2, "--config"),
    ("config-directory", ["run", "--config", R + "/adir"], 2, "--config"),
    ("config-bad-toml", ["run", "--config", R + "/bad.toml"], 2, "--config"),
    ("config-audit-integer", ["run", "--config", R + "/audit5.toml"], 2, "[audit]"),
    ("config-constants-integer", ["run", "--config", R + "/constants5.toml"], 2, "constants"),
    ("config-options-text", ["run", "--config", R + "/options_text.toml"], 2, "method_options"),
    ("config-unknown-key", ["run", "--config", R + "/unknown.toml"], 2, "epsilonn"),
    ("config-epsilon-text", ["run", "--config", R + "/eps_text.toml"], 2, "epsilon (in"),
    ("out-is-a-file", ["run", "--out", R + "/afile"], 2, "--out"),
    ("out-under-a-file", ["run", "--out", R + "/afile/out"], 2, "--out"),
    ("out-holds-other-files", ["run", "--out", R + "/keys"], 2, "--out"),
    ("out-read-only", ["run", "--out", R + "/readonly/out"], 2, "--out"),
    ("out-disk-full", ["run", "--out", R + "/fulldisk/out"], 2, "--out"),
    ("sign-key-missing", ["run", "--out", R + "/out", "--sign-key", R + "/missing.pem"], 2, "--sign-key"),
    ("sign-key-without-out", ["run", "--sign-key", R + "/keys/private.pem"], 2, "--sign-key"),
    ("sign-key-group-readable", ["run", "--out", R + "/out", "--sign-key", R + "/loose.pem"], 2, "chmod 600"),
    ("salt-directory", ["run", "--commitment-salt", R + "/adir"], 2, "--commitment-salt"),
    ("salt-missing", ["run", "--commitment-salt", R + "/missing.salt"], 2, "--commitment-salt"),
    ("salt-not-hex", ["run", "--commitment-salt", R + "/nonhex.salt"], 2, "--commitment-salt"),
    ("salt-too-short", ["run", "--commitment-salt", R + "/short.salt"], 2, "--commitment-salt"),
    ("forget-ids-missing", ["run", "--forget-ids", R + "/missing.txt", *FAST], 2, "--forget-ids"),
    # -- audit calibrate
    ("calibrate-delta-zero", ["calibrate", "--delta", "0", "--epsilon", "1"], 2, "delta"),
    ("calibrate-neither", ["calibrate", "--delta", "1e-5"], 2, "--epsilon"),
    ("calibrate-both", ["calibrate", "--delta", "1e-5", "--epsilon", "1", "--sigma", "1"], 2, "--sigma"),
    ("calibrate-negative-sigma", ["calibrate", "--delta", "1e-5", "--sigma", "-1"], 2, "sigma"),
    (
        "calibrate-huge-sensitivity",
        ["calibrate", "--delta", "1e-5", "--epsilon", "1", "--sensitivity", "1e308"],
        2,
        "sensitivity",
    ),
    ("calibrate-negative-epsilon", ["calibrate", "--delta", "1e-5", "--epsilon", "-1"], 2, "epsilon"),
    (
        "calibrate-negative-sensitivity",
        ["calibrate", "--delta", "1e-5", "--epsilon", "1", "--sensitivity", "-1"],
        2,
        "sensitivity",
    ),
    (
        "calibrate-classic-above-1",
        ["calibrate", "--delta", "1e-5", "--epsilon", "3", "--mechanism", "classic"],
        2,
        "epsilon",
    ),
    (
        "calibrate-mechanism-unknown",
        ["calibrate", "--delta", "1e-5", "--epsilon", "1", "--mechanism", "x"],
        2,
        "--mechanism",
    ),
    # -- audit report
    ("report-directory", ["report", R + "/adir", "--html", R + "/page.html"], 2, "REPORT_JSON"),
    ("report-missing", ["report", R + "/missing.json", "--html", R + "/page.html"], 2, "REPORT_JSON"),
    ("report-not-json", ["report", R + "/not.json", "--html", R + "/page.html"], 2, "REPORT_JSON"),
    ("report-json-array", ["report", R + "/array.json", "--html", R + "/page.html"], 2, "REPORT_JSON"),
    ("report-nested-json", ["report", R + "/nested.json", "--html", R + "/page.html"], 2, "REPORT_JSON"),
    ("report-schema", ["report", R + "/schema_bad.json", "--html", R + "/page.html"], 2, "schema_version"),
    ("report-html-directory", ["report", R + "/report.json", "--html", R + "/adir"], 2, "--html"),
    ("report-html-under-file", ["report", R + "/report.json", "--html", R + "/afile/page.html"], 2, "--html"),
    # -- keys, signatures, commitments
    ("keygen-under-a-file", ["keygen", "--out", R + "/afile/keys"], 2, "--out"),
    ("sign-no-report", ["sign", R + "/norep", "--key", R + "/keys/private.pem"], 2, "report"),
    ("sign-key-loose", ["sign", R + "/garbage_env", "--key", R + "/loose.pem"], 2, "chmod 600"),
    ("verify-key-missing", ["verify", R + "/garbage_env", "--key", R + "/missing.pem"], 2, "--key"),
    (
        "verify-nested-envelope",
        ["verify", R + "/nested_env", "--key", R + "/keys/public.pem"],
        3,
        "verification failed",
    ),
    (
        "verify-garbage-envelope",
        ["verify", R + "/garbage_env", "--key", R + "/keys/public.pem"],
        3,
        "verification failed",
    ),
    (
        "verify-uncovered-file",
        ["verify", R + "/extra_signed", "--key", R + "/keys/public.pem"],
        3,
        "The signature does not cover notes.txt",
    ),
    ("verify-unsigned", ["verify", R + "/norep", "--key", R + "/keys/public.pem"], 3, "verification failed"),
    (
        "commitment-wrong-salt",
        ["commitment", "verify", R + "/report.json", "--salt", R + "/good.salt", "--ids", R + "/ids.txt"],
        3,
        "does not open",
    ),
    (
        "commitment-salt-directory",
        ["commitment", "verify", R + "/report.json", "--salt", R + "/adir", "--ids", R + "/ids.txt"],
        2,
        "--salt",
    ),
    (
        "commitment-ids-missing",
        ["commitment", "verify", R + "/report.json", "--salt", R + "/good.salt", "--ids", R + "/missing.txt"],
        2,
        "--ids",
    ),
    # -- audit compare: a run directory is the caller's input, never one method's refusal
    (
        "compare-resume-stale",
        [
            "compare",
            "--methods",
            "r2d,retrain",
            "--resume",
            R + "/stale",
            "--out",
            R + "/out",
            "--max-train",
            "200",
            "--attacks",
            "mia",
            "--trials",
            "10",
            "--curve-points",
            "2",
            "--noise-draws",
            "2",
            "--frontier",
            "none",
            "-q",
        ],
        2,
        "another configuration",
    ),
    (
        "compare-resume-is-a-run-directory",
        ["compare", "--methods", "r2d,retrain", "--resume", R + "/arun", "--out", R + "/out"],
        2,
        "--resume",
    ),
    (
        "compare-resume-is-a-file",
        ["compare", "--methods", "r2d", "--resume", R + "/afile", "--out", R + "/out"],
        2,
        "--resume",
    ),
    ("unlearn-without-train", ["run", "--unlearn", "module:pipeline.py:unlearn"], 2, "--train must be"),
    (
        "train-not-a-module-ref",
        ["run", "--train", "pipeline.py:train", "--unlearn", "module:pipeline.py:u"],
        2,
        "--train must be",
    ),
    (
        "unlearn-with-method",
        ["run", "--method", "finetune", "--train", "module:p.py:t", "--unlearn", "module:p.py:u"],
        2,
        "--method must be left unset with unlearn",
    ),
    (
        "train-file-missing",
        ["run", "--train", "module:" + R + "/nofile.py:t", "--unlearn", "module:" + R + "/nofile.py:u", *FAST],
        2,
        "--train must be",
    ),
    # -- audit compare with your own candidates: refused before any data is read
    ("compare-candidate-not-a-pair", ["compare", "--candidate", "mine"], 2, "--candidate must be NAME=module:"),
    (
        "compare-candidate-is-a-method",
        ["compare", "--candidate", "r2d=module:p.py:u", "--train", "module:p.py:t"],
        2,
        "--candidate must be names of your own",
    ),
    ("compare-candidate-without-train", ["compare", "--candidate", "mine=module:p.py:u"], 2, "--train must be"),
    (
        "compare-candidate-file-missing",
        ["compare", "--candidate", "mine=module:" + R + "/nofile.py:u", "--train", "module:" + R + "/nofile.py:t"],
        2,
        "--train must be",
    ),
    ("original-without-unlearn", ["run", "--original", R + "/other.pt", *FAST], 2, "--original must be used with"),
    (
        "original-not-a-state-dict",
        [
            "run",
            "--model",
            "module:{code}/pipeline.py:build",
            "--train",
            "module:{code}/pipeline.py:train",
            "--unlearn",
            "module:{code}/pipeline.py:unlearn",
            "--original",
            R + "/afile",
            *FAST,
        ],
        2,
        "--original must be the model",
    ),
    (
        "original-of-another-model",
        [
            "run",
            "--model",
            "module:{code}/pipeline.py:build",
            "--train",
            "module:{code}/pipeline.py:train",
            "--unlearn",
            "module:{code}/pipeline.py:unlearn",
            "--original",
            R + "/other.pt",
            *FAST,
        ],
        2,
        "--original must be the model",
    ),
    ("time-budget-zero", ["run", "--time-budget", "0"], 2, "--time-budget"),
    (
        "time-budget-over",
        [
            "run",
            "--train",
            "module:" + R + "/sleepy.py:train",
            "--unlearn",
            "module:" + R + "/sleepy.py:unlearn",
            "--max-train",
            "300",
            "--curve-points",
            "2",
            "--noise-draws",
            "2",
            "--frontier",
            "none",
            "--attacks",
            "mia",
            "--trials",
            "10",
            "--timing-repeats",
            "1",
            "--time-budget",
            "0.1",
            "--resume",
            R + "/new",
            "-q",
        ],
        2,
        "--time-budget must be at least what the trials would take: about ",
    ),
    ("trial-budget-zero", ["run", "--trial-budget", "0"], 2, "--trial-budget"),
    ("trial-budget-text", ["run", "--trial-budget", "fast"], 2, "--trial-budget"),
]


def _listing(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def _machine(monkeypatch, root: Path) -> None:
    """A read-only directory (root/readonly) and a full disk (root/fulldisk) on any machine: the
    system's answers for paths under them (chmod does not stop root, and no test may fill a disk)."""
    access, usage = os.access, shutil.disk_usage

    def under(path, name: str) -> bool:
        return Path(path).absolute().is_relative_to(root / name)

    monkeypatch.setattr(
        os,
        "access",
        lambda path, mode, **kw: not (mode & os.W_OK and under(path, "readonly")) and access(path, mode, **kw),
    )
    monkeypatch.setattr(
        shutil, "disk_usage", lambda path: usage(path)._replace(free=0) if under(path, "fulldisk") else usage(path)
    )


@pytest.mark.parametrize(("argv", "code", "names"), [c[1:] for c in CLI_CASES], ids=[c[0] for c in CLI_CASES])
def test_cli_bad_input(tmp_path, monkeypatch, argv, code, names):
    fixtures = _fixtures(tmp_path)
    monkeypatch.chdir(tmp_path)
    if "--trials" in argv and "10000000" in argv:  # the same refusal on any machine: 4 GiB available
        monkeypatch.setattr("audit.memory.available_bytes", lambda: 4 * 2**30)
    _machine(monkeypatch, tmp_path)
    argv = [a.format(**fixtures) for a in argv]
    if argv[0] == "run" and "--out" not in argv and "--sign-key" not in argv:
        argv += ["--out", str(tmp_path / "out")]
    before = _listing(tmp_path)
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == code, (result.exit_code, result.stderr, result.exception)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ") and names in lines[0], lines[0]
    assert "Traceback" not in result.output and "internal error" not in result.output
    assert _listing(tmp_path) == before  # nothing written, nothing half-written, nothing hidden left


def test_the_table_covers_at_least_60_cli_and_library_cases():
    assert len(CLI_CASES) + len(LIBRARY_CASES) >= 60 and len({c[0] for c in CLI_CASES}) == len(CLI_CASES)


# -- the library: one InvalidInput naming the field ----------------------------------------------
LIBRARY_CASES = [
    ("hidden-int", {"hidden": 5}, "hidden"),
    ("attacks-none", {"attacks": None}, "attacks"),
    ("attacks-int", {"attacks": 5}, "attacks"),
    ("attacks-unknown", {"attacks": ("nope",)}, "attacks"),
    ("constants-int", {"constants": 5}, "constants"),
    ("constants-text-value", {"constants": {"L": "3"}}, "constants.L"),
    ("constants-unknown-key", {"constants": {"Q": 3.0}}, "constants"),
    ("method-list", {"method": ["r2d"]}, "method"),
    ("method-unknown", {"method": "nope"}, "method"),
    ("forget-fraction-text", {"forget_fraction": "0.1"}, "forget_fraction"),
    ("trials-fractional", {"trials": 10.5}, "trials"),
    ("trials-bool", {"trials": True}, "trials"),
    ("epsilon-bool", {"epsilon": True}, "epsilon"),
    ("epsilon-text", {"epsilon": "1"}, "epsilon"),
    ("delta-text", {"delta": "1e-5"}, "delta"),
    ("seed-negative", {"seed": -1}, "seed"),
    ("requests-zero", {"requests": 0}, "requests"),
    ("method-options-text", {"method_options": "x"}, "method_options"),
    ("method-options-audit-fed", {"method_options": {"eta": 0.2}}, "method_options.eta"),
    ("feature-map-int", {"feature_map": 3}, "feature_map"),
    ("dtype-unknown", {"dtype": "float16"}, "dtype"),
    ("device-list", {"device": ["cpu"]}, "device"),
    ("unknown-field", {"epsilonn": 1.0}, "config"),
    ("trials-and-target-ceiling", {"trials": 64, "target_ceiling": 2.0}, "trial_count"),
    ("request-id-int", {"request_id": 42}, "request_id"),
    ("request-id-slash", {"request_id": "REQ/42"}, "request_id"),
    ("timing-repeats-zero", {"timing_repeats": 0}, "timing_repeats"),
    ("original-with-a-registered-method", {"method": "retrain", "original": "prod.pt"}, "original"),
    ("original-not-text", {"original": 5, "train": "module:p.py:t", "unlearn": "module:p.py:u"}, "original"),
    ("time-budget-negative", {"time_budget": -1.0}, "time_budget"),
    ("diagnostic-budget-zero", {"diagnostic_budget": 0}, "diagnostic_budget"),
    ("trial-budget-negative", {"trial_budget": -1.0}, "trial_budget"),
    ("trial-budget-over-a-day", {"trial_budget": 1e6}, "trial_budget"),
]


@pytest.mark.parametrize(("kwargs", "field"), [c[1:] for c in LIBRARY_CASES], ids=[c[0] for c in LIBRARY_CASES])
def test_library_bad_input(kwargs, field):
    from audit.config import AuditConfig

    with pytest.raises(InvalidInput) as info:
        AuditConfig.from_dict(kwargs)
    assert info.value.field == field and field in str(info.value)


def test_a_whole_float_is_normalised_to_an_integer():
    """trials=10.0 is the integer 10, stored as an int (not kept as the float given)."""
    from audit.config import AuditConfig

    cfg = AuditConfig(trials=10.0)
    assert cfg.trials == 10 and type(cfg.trials) is int


def test_a_short_salt_is_refused_by_the_library():
    from audit import AuditConfig, run

    with pytest.raises(InvalidInput) as info:
        run(AuditConfig(max_train=300, attacks=()), salt=b"short")
    assert info.value.field == "salt"


def test_the_library_refuses_what_is_not_a_configuration():
    """audit.run(dict) and an unknown AuditConfig keyword: one InvalidInput naming what to pass."""
    import dataclasses

    from audit import AuditConfig, run

    with pytest.raises(InvalidInput) as info:
        AuditConfig(epsilonn=1.0)
    assert info.value.field == "config" and info.value.got == ["epsilonn"] and "Did you mean epsilon" in str(info.value)
    for bad in ({"epsilon": 1.0}, None):
        with pytest.raises(InvalidInput) as info:
            run(bad)
        assert info.value.field == "config" and "AuditConfig(**options)" in info.value.allowed
    assert dataclasses.replace(AuditConfig(), epsilon=2.0).epsilon == 2.0  # replace still builds through __init__


def test_a_disk_that_fills_during_the_run_names_the_run_directory(tmp_path, monkeypatch):
    """A shard that cannot be kept (ENOSPC) is one InvalidInput naming resume, not an OSError
    (exit 70); the shards kept before it stay."""
    import errno

    import numpy as np

    from audit.runstore import RunStore
    from audit.shards import Shard

    store = RunStore(tmp_path / "run", "a" * 64)
    store.save(Shard("trials", 0, 64), {"x": np.zeros(64)})

    def full(path, data):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))

    monkeypatch.setattr("audit.runstore._atomic_write", full)
    with pytest.raises(InvalidInput) as info:
        store.save(Shard("trials", 64, 128), {"x": np.zeros(64)})
    assert info.value.field == "resume" and "No space left on device" in str(info.value)
    assert store.load(Shard("trials", 0, 64)) is not None


def test_cli_a_disk_that_fills_during_the_run_is_one_sentence_naming_resume(tmp_path, monkeypatch):
    """The start-up checks pass, then the first shard cannot be kept (ENOSPC): exit 2 and one
    sentence naming --resume (not exit 70), no report written, the run directory's manifest kept."""
    import errno

    from audit.runstore import MANIFEST, _atomic_write

    def full_for_shards(path, data):
        if path.suffix == ".npz":
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        _atomic_write(path, data)

    monkeypatch.setattr("audit.runstore._atomic_write", full_for_shards)
    argv = [
        "run",
        *FAST[:-2],
        "--attacks",
        "mia",
        "--trials",
        "64",
        "--quiet",
        "--resume",
        str(tmp_path / "run"),
        "--out",
        str(tmp_path / "out"),
    ]
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 2, (result.stderr, result.exception)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: --resume ") and "No space left on device" in lines[0]
    assert _listing(tmp_path) == ["run", f"run/{MANIFEST}"]


@pytest.mark.parametrize(
    ("address", "endpoint"),
    [
        ("127.0.0.1:6379", ("127.0.0.1", 6379)),
        ("head.example:65535", ("head.example", 65535)),
        ("[::1]:6379", ("::1", 6379)),
        ("ray://10.0.0.2:10001", ("10.0.0.2", 10001)),
        ("127.0.0.1:99999", None),
        ("127.0.0.1:0", None),
        ("127.0.0.1", None),
        ("auto", None),
        ("local", None),
        ("::1:6379", None),
        ("ray://host", None),
        ("http://h:80", None),
        ("h :1", None),
        ("h:-1", None),
    ],
)
def test_a_ray_address_is_host_and_port(address, endpoint):
    from audit.config import ray_endpoint

    assert ray_endpoint(address) == endpoint


def test_a_port_that_answers_but_not_as_a_ray_head_is_refused_at_once():
    """The dashboard's port (HTTP/1.1) given instead of the head's: refused, not hung on."""
    import threading

    from audit.executors import check_ray_cluster

    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)

        def answer() -> None:
            conn, _ = server.accept()
            with conn:
                conn.recv(64)
                conn.sendall(b"HTTP/1.1 400 Bad Request\r\n\r\n")

        thread = threading.Thread(target=answer)
        thread.start()
        with pytest.raises(InvalidInput, match="something answered, but not a gRPC server") as info:
            check_ray_cluster(f"127.0.0.1:{server.getsockname()[1]}", timeout=2)
        thread.join()
    assert info.value.field == "ray_address"


# -- method options read at construction (the CLI reaches them after loading the data, ~1 s a row) ----
METHOD_OPTION_CASES = [
    ("noisy-ft-post-fraction-zero", {"post_train": True, "post_fraction": 0}, "post_fraction"),
    ("noisy-ft-post-fraction-above-one", {"post_train": True, "post_fraction": 1.5}, "post_fraction"),
    ("noisy-ft-post-fraction-text", {"post_train": True, "post_fraction": "half"}, "post_fraction"),
    ("noisy-ft-post-fraction-none", {"post_train": True, "post_fraction": None}, "post_fraction"),
    ("noisy-ft-restart-unknown", {"restart": "bogus"}, "restart"),
    ("noisy-ft-schedule-unknown", {"schedule": "sequential"}, "schedule"),
    ("noisy-ft-blockwise-model-clip", {"schedule": "blockwise", "blocks": 2}, "schedule"),
    ("noisy-ft-blocks-without-blockwise", {"variant": "gradient-clip", "blocks": 2}, "blocks"),
    ("noisy-ft-blocks-zero", {"variant": "gradient-clip", "schedule": "blockwise", "blocks": 0}, "blocks"),
    ("noisy-ft-blocks-empty", {"variant": "gradient-clip", "schedule": "blockwise", "blocks": 4}, "blocks"),
]


@pytest.mark.parametrize(
    ("options", "field"), [c[1:] for c in METHOD_OPTION_CASES], ids=[c[0] for c in METHOD_OPTION_CASES]
)
def test_noisy_ft_bad_option(options, field):
    import torch

    from unlearners.noisyft import NoisyFineTune
    from unlearners.objective import Objective

    model = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.BatchNorm1d(3), torch.nn.ReLU(), torch.nn.Linear(3, 2))
    with pytest.raises(InvalidInput) as info:
        NoisyFineTune.from_training(Objective(model, with_buffers=True), train=lambda m, d, g: m, **options)
    assert info.value.field == field and field in str(info.value)
