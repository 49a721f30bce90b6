"""Start-up: a command imports what it needs (issue 14). `audit --help`, `audit calibrate` and
`audit verify` must not load torch, scikit-learn, scipy.stats or matplotlib; their wall time
against `python -c pass` is measured in bench/bench_startup.py, not here."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("torch", "sklearn", "scipy.stats", "matplotlib", "opacus", "pandas")

# printed by an exit handler: a finished command ends with os._exit once the exit handlers have run
_PROBE = """
import atexit, json, sys
sys.argv = ["audit", *json.loads(sys.argv[1])]
atexit.register(lambda: print(json.dumps(sorted(m for m in {heavy} if m in sys.modules)), file=sys.stderr))
from audit.cli import main
main()
"""


def _loaded(args: list[str]) -> list[str]:
    code = _PROBE.format(heavy=HEAVY)
    proc = subprocess.run([sys.executable, "-c", code, json.dumps(args)], capture_output=True, text=True)
    return json.loads(proc.stderr.strip().splitlines()[-1])


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        pytest.param(["run", "--help"], marks=pytest.mark.slow),  # fast-lane budget: --help and verify stay fast
        pytest.param(["calibrate", "--epsilon", "1", "--delta", "1e-5", "--sensitivity", "1"], marks=pytest.mark.slow),
        ["verify", "no-such-directory", "--key", "no-such-key.pem"],
        pytest.param(["methods", "--help"], marks=pytest.mark.slow),
    ],
)
def test_light_commands_do_not_import_the_numerical_stack(args):
    assert _loaded(args) == []


@pytest.mark.slow  # fast-lane budget (README): 3.3 s; the light commands' test below keeps import discipline in the fast lane
def test_a_run_imports_torch_but_not_matplotlib_or_opacus(tmp_path):
    """The control: the probe does see what a real (small) run loads."""
    loaded = _loaded(
        [
            "run",
            "--method",
            "r2d",
            "--epsilon",
            "1",
            "--max-train",
            "300",
            "--attacks",
            "none",
            "--curve-points",
            "2",
            "--quiet",
            "--out",
            str(tmp_path / "r"),
        ]
    )
    assert "torch" in loaded
    assert "matplotlib" not in loaded and "opacus" not in loaded


_EXITING = """
import atexit, sys
sys.argv = ["audit", *sys.argv[1:]]
atexit.register(lambda: print("exit handlers ran", file=sys.stderr))
from audit.cli import main
main()
"""


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["calibrate", "--epsilon", "1", "--delta", "1e-5", "--sensitivity", "1"], 0),
        (["calibrate", "--epsilon", "-1", "--delta", "1e-5", "--sensitivity", "1"], 2),
    ],
)
def test_a_finished_command_skips_the_teardown_but_keeps_its_exit_code_output_and_exit_handlers(args, code):
    """The CLI ends with os._exit after the exit handlers and a flush (issue 26: the interpreter's
    teardown cost 0.55-0.73 s): nothing printed is lost, the exit code is the command's."""
    proc = subprocess.run([sys.executable, "-c", _EXITING, *args], capture_output=True, text=True)
    assert proc.returncode == code, proc.stderr
    assert proc.stderr.endswith("exit handlers ran\n")
    if code == 0:
        assert proc.stdout.startswith("sigma=3.73063") and proc.stdout.endswith("mechanism=analytic\n")
    else:
        assert proc.stderr.startswith("error: --epsilon must be a finite number > 0")
