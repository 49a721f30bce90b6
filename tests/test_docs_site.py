"""The documentation site builds strictly, and the report-section recipe of docs/extending.md runs
as written (apart from tests/test_docs.py, whose blocks run on one worker: --dist loadfile)."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys

import pytest

from docblocks import ROOT, code_blocks, commands


def _patches() -> list[tuple[str, str, str, str]]:
    """(file, before|replace, line, text) of every edit in the report-section recipe, in order."""
    out = []
    for b in code_blocks(ROOT / "docs" / "extending.md"):
        if b["note"].startswith("patch "):
            _, file, how, line = shlex.split(b["note"])
            out.append((file, how, line, b["text"]))
    return out


def test_the_report_section_recipe_names_lines_that_exist_once():
    """The fast lane's check of the recipe: every line it edits is in the package, once."""
    patches = _patches()
    assert len(patches) == 5
    for file, how, line, _ in patches:
        assert how in ("before", "replace")
        assert (ROOT / file).read_text(encoding="utf-8").splitlines().count(line) == 1, (file, line)


@pytest.mark.slow  # a copy of src/, the schema regenerated and a small audit in a subprocess: about 8 s
def test_report_section_recipe_runs_as_written(tmp_path):
    copy = tmp_path / "src"
    shutil.copytree(ROOT / "src", copy, ignore=shutil.ignore_patterns("__pycache__"))
    for file, how, line, text in _patches():
        path = tmp_path / file
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
        at = [i for i, x in enumerate(lines) if x.rstrip("\n") == line][0]
        lines[at : at + (how == "replace")] = [text]
        path.write_text("".join(lines), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(copy)}
    regenerate = [b for b in code_blocks(ROOT / "docs" / "extending.md") if b["note"] == "patch-command"]
    for command in commands(regenerate[0]["text"]):
        subprocess.run([sys.executable, *command[1:]], cwd=tmp_path, env=env, check=True, timeout=300)
    assert (
        "ForgetClasses"
        in (copy / "audit" / "report" / "schemas")
        .joinpath(next(p.name for p in (copy / "audit" / "report" / "schemas").glob("report-*.json")))
        .read_text()
    )
    out = tmp_path / "out"
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "audit",
            "run",
            "--max-train",
            "300",
            "--steps",
            "20",
            "--trials",
            "100",
            "--curve-points",
            "2",
            "--noise-draws",
            "2",
            "--attacks",
            "mia",
            "--forget-count",
            "3",
            "--frontier",
            "none",
            "-q",
            "--out",
            str(out),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode in (0, 4, 5), run.stderr
    report = json.loads((out / "report.json").read_text())
    assert sum(report["forget_classes"]["counts"].values()) == 3
    assert "Deleted records by label" in (out / "report.html").read_text()


@pytest.mark.slow  # about 20 s: it imports every method and attack and renders every page
def test_the_documentation_site_builds_strictly(tmp_path):
    import importlib.util

    missing = [m for m in ("mkdocs", "material", "mkdocstrings") if importlib.util.find_spec(m) is None]
    if missing:  # .[test] installs them, so CI (.ci/run sets CI) builds the site; elsewhere a skip says why
        message = f"the site needs {', '.join(missing)}: pip install '.[docs]'"
        pytest.fail(message) if os.environ.get("CI") else pytest.skip(message)

    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    page = (tmp_path / "site" / "methods" / "r2d" / "index.html").read_text(encoding="utf-8")
    assert "Theorem 3.1" in page and "Deviations from the paper" in page
