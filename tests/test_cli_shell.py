"""The shell around the commands (issue 13): --version, defaults and choices in --help, exit
codes a CI gate can branch on, signals, output fit for a CI log, and what is (not) saved."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from audit.cli import app
from audit.cli.exits import EXIT_MEANING, VERDICT_EXIT, ExitCode

ROOT = Path(__file__).resolve().parent.parent
FAST = ["--max-train", "300", "--curve-points", "2", "--noise-draws", "2", "--attacks", "none"]
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "COLUMNS": "200"}


def invoke(*args: str, **kwargs):
    return CliRunner().invoke(app, list(args), **kwargs)


def test_version_prints_the_installed_version():
    from audit.report import tool_version

    result = invoke("--version")
    assert result.exit_code == 0 and result.stdout.strip() == f"unlearn-audit {tool_version()}"


def test_help_shows_every_default_choice_and_panel():
    from audit.config import FIELDS

    result = invoke("run", "--help", env={"COLUMNS": "400"}, terminal_width=400)
    text = re.sub(r"\s+", " ", result.stdout.replace("│", " "))
    assert result.exit_code == 0
    assert "<bool>" not in text  # a flag takes no value
    for panel in ("Method and certificate", "Data", "Forget set", "Training", "Trials and attacks", "Output"):
        assert f"─ {panel} " in result.stdout
    for f in FIELDS:
        if f.spelling in ("keys", "pairs"):
            continue
        if f.default not in (None, (), {}):
            shown = ", ".join(map(str, f.default)) if isinstance(f.default, tuple) else str(f.default)
            assert f"[default: {shown}]" in text, f.name
        if hasattr(f.constraint, "options"):
            assert "<" + "|".join(map(str, f.constraint.options)) + ">" in text, f.name
    assert "[default: 1000+ in noise mode (sized by cost: --trial-budget), 200 in retrain mode]" in text
    assert "[audit]" in text  # not eaten as markup


def _commands(group, path=()):
    for name, cmd in group.commands.items():
        yield (*path, name)
        if hasattr(cmd, "commands"):
            yield from _commands(cmd, (*path, name))


def test_help_on_an_80_column_terminal_cuts_no_word():
    """Rich ends a word too long for its column with "…": that text is lost to the reader (a default
    list joined without spaces, a slash-joined phrase). Every command's help at 80 columns keeps it."""
    import typer.main

    group = typer.main.get_command(app)
    commands = [(), *_commands(group)]
    assert ("run",) in commands and ("commitment", "verify") in commands
    for path in commands:
        result = invoke(*path, "--help", env={"COLUMNS": "80"}, terminal_width=80)
        assert result.exit_code == 0, path
        assert "…" not in result.stdout, (path, [line for line in result.stdout.splitlines() if "…" in line])


def test_shell_completion_is_offered_and_completes_a_command():
    result = invoke("--show-completion", "bash", env={"COLUMNS": "80"})
    assert result.exit_code == 0 and "_AUDIT_COMPLETE=complete_bash" in result.stdout
    # what the installed script does on <TAB>: the completion variable set, the words typed so far
    done = invoke(
        env={"_AUDIT_COMPLETE": "complete_bash", "COMP_WORDS": "audit cal", "COMP_CWORD": "1"}, prog_name="audit"
    )
    assert done.exit_code == 0 and done.stdout.split() == ["calibrate"]


def test_every_verdict_has_its_own_exit_code():
    from audit.findings import VERDICTS

    assert set(VERDICT_EXIT) == set(VERDICTS)
    codes = list(VERDICT_EXIT.values())
    assert len(set(codes)) == len(codes) and VERDICT_EXIT["consistent"] == 0
    assert VERDICT_EXIT["not-certified"] != VERDICT_EXIT["violated"]
    assert not set(codes) & {ExitCode.USAGE, ExitCode.VERIFY_FAILED, ExitCode.INTERNAL}


def test_readme_exit_code_table_matches_the_enum():
    readme = (ROOT / "docs" / "cli.md").read_text()
    rows = dict(re.findall(r"^\| `(\d+)` \| (.+?) \|$", readme, flags=re.M))
    assert {int(k) for k in rows} == {int(c) for c in ExitCode}
    for code, meaning in EXIT_MEANING.items():
        assert rows[str(int(code))] == meaning


@pytest.mark.parametrize(
    ("args", "code"),
    [
        ([], ExitCode.CONSISTENT),
        (["--method", "finetune", "--trial-mode", "retrain"], ExitCode.NOT_CERTIFIED),
        (["--forget-count", "20", "--G", "1e-7"], ExitCode.VIOLATED),
    ],
)
def test_exit_code_follows_the_verdict(args, code):
    result = invoke("run", *FAST, *args, "--json", "-q")
    assert result.exit_code == code, result.stderr
    assert VERDICT_EXIT[json.loads(result.stdout)["verdict"]] == code


def test_the_summary_opens_with_the_headline_and_strict_refuses_a_vacuous_pass():
    """Issue 24: the first line names the warning; --strict exits 7 where exit 0 would be a pass
    that proves nothing (epsilon 0.01 on 300 records: the certifying noise puts the release at chance)."""
    from audit.findings import CODES

    # the whole checkpoint-recovery check (the default budget cuts it: a fourth warning, diagnostic-cut)
    result = invoke("run", *FAST, "--epsilon", "0.01", "--strict", "--diagnostic-budget", "10", env={"COLUMNS": "200"})
    assert result.exit_code == ExitCode.VACUOUS, result.stderr
    lines = [line for line in result.stderr.splitlines() if not line.startswith("[")]  # after the stages' lines
    # the noise that puts the release at chance also hides the deletion: a no-op would pass too
    assert lines[0].startswith(
        "CONSISTENT — 3 warnings: " + CODES["no-op-passes"].short + "; " + CODES["released-at-chance"].short + "; "
    ), lines[0]
    assert lines[-1] == (
        "refused by --strict: the verdict is consistent, but the pass proves little "
        "(no-op-passes, released-at-chance): exit 7"
    )


#: The CLI started with a signal that arrives during its start-up and is swallowed there (as a library's
#: ``except BaseException`` around an import would): deterministic, and the hardest start-up case.
SWALLOWED_AT_START_UP = """
import signal, sys
import audit.cli
from audit.cli.exits import install_signal_handlers

def install_then_swallow():
    install_signal_handlers()
    try:
        signal.raise_signal({sig})  # delivered to this thread before raise_signal returns
    except BaseException:
        pass

audit.cli.install_signal_handlers = install_then_swallow
sys.argv = ["audit", *{argv!r}]
audit.cli.main()
"""


def _working(proc: subprocess.Popen) -> str:
    """Wait for the first stage's line on stderr: the run is past its imports and into the work. (A fixed
    delay is not enough: the whole default audit has taken under 2 s after its imports.)"""
    seen = []
    for line in proc.stderr:
        seen.append(line)
        if " done in " in line:
            return "".join(seen)
    raise AssertionError("the run ended before its first stage: " + "".join(seen))


@pytest.mark.parametrize(
    ("sig", "word"),
    [
        (signal.SIGINT, "interrupted"),  # SIGTERM: slow (fast-lane budget)
        pytest.param(signal.SIGTERM, "terminated", marks=pytest.mark.slow),
    ],
)
# during start-up (swallowed there: it must not be lost), and during the work (after the data stage; a
# subprocess that trains: slow)
@pytest.mark.parametrize("when", ["start-up", pytest.param("work", marks=pytest.mark.slow)])
def test_a_signal_ends_with_one_line_and_the_conventional_status(tmp_path, sig, word, when):
    argv = ["run", "--trials", "2000", "--out", str(tmp_path / "out")]
    swallowed = ["-c", SWALLOWED_AT_START_UP.format(sig=int(sig), argv=argv)]
    command = ["-m", "audit", *argv] if when == "work" else swallowed
    proc = subprocess.Popen(
        [sys.executable, *command], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV, cwd=tmp_path
    )
    seen = ""
    if when == "work":
        seen = _working(proc)
        proc.send_signal(sig)
    _, rest = proc.communicate(timeout=120)
    stderr = seen + rest
    assert proc.returncode == -sig, stderr  # killed by the signal after clean-up: a shell shows 128 + sig
    assert "Traceback" not in stderr and stderr.strip().splitlines()[-1].startswith(word)
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no report, no lock, no staging left


def test_a_ctrl_c_swallowed_during_the_work_ends_the_run_at_its_next_step_with_nothing_written(tmp_path, monkeypatch):
    import audit.pipeline
    from audit.cli import exits

    def swallowed(*args, **kwargs):  # a Ctrl-C while the data was prepared, swallowed on the way
        monkeypatch.setattr(exits, "received", [signal.SIGINT])

    monkeypatch.setattr(audit.pipeline, "precheck_run", swallowed)
    result = invoke("run", *FAST, "--out", str(tmp_path / "out"))
    assert result.exit_code == ExitCode.INTERRUPTED, result.stderr
    assert result.stderr.strip().splitlines()[-1] == "interrupted; nothing was written"
    assert " learn done" not in result.stderr and sorted(p.name for p in tmp_path.iterdir()) == []


def test_a_signal_swallowed_after_the_last_check_still_ends_the_process_by_it(monkeypatch, capsys):
    import audit.cli as cli

    died = []
    monkeypatch.setattr(cli, "install_signal_handlers", lambda: None)  # this test process keeps its own
    monkeypatch.setattr(cli, "_die_by", died.append)
    monkeypatch.setattr(cli, "received", [signal.SIGINT])
    monkeypatch.setattr(sys, "argv", ["audit", "--version"])  # a command whose work is done at once
    with pytest.raises(SystemExit):
        cli.main()
    assert died == [signal.SIGINT] and capsys.readouterr().err == "interrupted after the work was done\n"


@pytest.mark.slow  # a subprocess audit end to end
def test_piped_output_prints_a_line_per_stage_and_does_not_wrap(tmp_path):
    env = {k: v for k, v in ENV.items() if k != "COLUMNS"}
    proc = subprocess.run(
        [sys.executable, "-m", "audit", "run", *FAST, "--method", "finetune", "--trial-mode", "retrain"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    lines = proc.stderr.splitlines()
    for stage in ("data", "learn", "unlearn", "retrain", "certify", "utility"):
        assert any(re.fullmatch(rf"\[\s*[\d.]+s\] {stage} done in [\d.]+s", line) for line in lines), stage
    assert "\x1b[" not in proc.stderr  # no progress-bar escape codes in a log
    # each finding is one line however long (Rich would wrap at 80 columns for a file)
    findings = [line for line in lines if line.startswith(("warning: ", "error: "))]
    assert findings and any(len(line) > 80 for line in findings)
    assert all(not line.startswith(" ") for line in lines if "warning" in line)
    table = [line for line in lines if line.startswith(("│", "┃"))]
    assert table and len({len(line) for line in table}) == 1  # rows laid out at one width, none wrapped
    assert "nothing was saved (no --out)" in proc.stderr and "--out DIR" in proc.stderr


@pytest.mark.slow
def test_a_sequence_shows_its_ledger_in_the_summary_and_the_page_headline(tmp_path):
    result = invoke(
        "run", "--method", "hf", "--requests", "3", "--budget-epsilon", "1.5", *FAST, "--out", str(tmp_path / "out")
    )
    assert result.exit_code == 0, result.stderr
    text = re.sub(r"\s+", " ", result.stderr.replace("│", " "))
    assert re.search(r"cumulative epsilon over 3 releases \(delta\) [\d.]+ \(1e-05\)", text)
    assert "budget epsilon 1.5" in text and "retrain due YES, since release" in text
    page = (tmp_path / "out" / "report.html").read_text()
    headline = page[page.index('id="verdict"') : page.index("</section>")]
    assert "cumulative ε, 3 releases" in headline and "budget ε = 1.5" in headline and "retrain due" in headline
    assert "written: " in result.stderr


def test_an_uncertified_method_shows_no_certified_epsilon_on_the_page(tmp_path):
    result = invoke("run", *FAST, "--method", "finetune", "--trial-mode", "retrain", "--out", str(tmp_path / "o"))
    assert result.exit_code == ExitCode.NOT_CERTIFIED
    page = (tmp_path / "o" / "report.html").read_text()
    headline = page[page.index('id="verdict"') : page.index("</section>")]
    assert "certified ε" not in headline and "no certificate (the method has no theorem)" in headline


def test_datasets_lists_the_built_in_data_with_source_licence_and_shape():
    result = invoke("datasets", "--json")
    assert result.exit_code == 0
    rows = {r["name"]: r for r in json.loads(result.stdout)}
    assert rows["adult"]["licence"] == "CC BY 4.0" and rows["adult"]["shape"]["records"] == 48842
    assert {"idx:<dir>", "cifar10:<dir>", "csv:<file>"} <= set(rows)
    table = invoke("datasets", terminal_width=200)
    assert "48,842 records, 108 features, 2 classes" in table.stdout and "CC BY 4.0" in table.stdout


def test_calibrate_json_writes_an_infinite_epsilon_as_inf():
    result = invoke("calibrate", "--delta", "1e-5", "--sigma", "1e-300", "--json")
    assert result.exit_code == 0 and json.loads(result.stdout)["epsilon"] == "inf"
