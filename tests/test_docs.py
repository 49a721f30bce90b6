"""Every code block of the README and the documentation runs as printed, or says why it cannot.

A fenced block is preceded (on the line just above its fence) by at most one marker:

* none, or ``<!-- test: slow -->``: the block is run, in the fast lane or the slow one. A
  ``python`` block is executed in a fresh namespace; a ``bash`` block is a list of ``audit``
  commands, each run through the CLI (one per line, ``# comments`` dropped) and expected to exit
  0. Blocks run in a fresh working directory; identical blocks (the README repeats some of the
  pages' examples) run once.
* ``<!-- test: loader -->``: a dataset loader module, written to a file in a loaders directory
  and loaded by name (the extension recipe).
* ``<!-- test: patch FILE before|replace "LINE" -->`` (and ``<!-- test: patch-command -->``): one
  edit of a recipe that changes the package (the report section), applied in page order to a copy
  of ``src/`` at the line named (inserted before it, or replacing it); the command then runs there.
* ``<!-- ci: REASON -->``: every line of the block is a line of ``.ci/run``.
* ``<!-- illustrative: REASON -->``: not run; the reason says why (an install, a diagram, a
  run too long for the suite and where it is measured instead).
"""

from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
MARKER = re.compile(r"<!-- (test|ci|illustrative)(?::\s*(.*?))? -->")
FENCE = re.compile(r"^```([\w-]*)\s*$")


def code_blocks(path: Path) -> list[dict]:
    """The fenced blocks of one page: language, text, line, and the marker above the fence."""
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks, i = [], 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
        marker = MARKER.fullmatch(lines[i - 1].strip()) if i else None
        blocks.append({"page": path.relative_to(ROOT).as_posix(), "line": i + 1, "language": opening.group(1),
                       "text": "\n".join(lines[i + 1:end]) + "\n",
                       "kind": marker.group(1) if marker else "test", "note": (marker.group(2) or "") if marker else ""})
        i = end + 1
    return blocks


BLOCKS = [b for page in PAGES for b in code_blocks(page)]


def _runnable() -> list:
    seen: set[str] = set()
    params = []
    for b in BLOCKS:
        if b["kind"] != "test" or b["note"].startswith("patch") or b["text"] in seen:
            continue
        seen.add(b["text"])
        marks = [pytest.mark.slow] if b["note"] == "slow" else []
        params.append(pytest.param(b, id=f"{b['page']}:{b['line']}", marks=marks))
    return params


def test_every_block_is_run_or_says_why_not():
    assert len(BLOCKS) > 15, "the pages' code blocks were not found"
    for b in BLOCKS:
        where = f"{b['page']}:{b['line']}"
        if b["kind"] == "illustrative":
            assert len(b["note"].split()) >= 3, f"{where}: an illustrative block says why in a few words"
        elif b["kind"] == "ci":
            ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
            assert all(line in ci for line in b["text"].splitlines()), f"{where}: not a line of .ci/run"
        else:
            if b["note"].startswith("patch"):
                continue  # test_report_section_recipe
            assert b["note"] in ("", "slow", "loader"), f"{where}: unknown test marker {b['note']!r}"
            assert b["language"] in ("python", "bash"), f"{where}: a {b['language'] or 'plain'} block is run " \
                                                        "only as python or bash: mark it illustrative with a reason"
            if b["language"] == "bash":
                for line in _commands(b["text"]):
                    assert line[0] == "audit", f"{where}: a run bash block holds audit commands only: {line}"


def _commands(text: str) -> list[list[str]]:
    return [shlex.split(line, comments=True) for line in text.splitlines() if shlex.split(line, comments=True)]


@pytest.fixture
def registries():
    """Anything a block registers in-process is unregistered afterwards."""
    from attacks.registry import ATTACKS
    from unlearners.registry import METHODS

    before = {id(r): dict(r.registered) for r in (ATTACKS, METHODS)}
    yield
    for r in (ATTACKS, METHODS):
        r.registered.clear()
        r.registered.update(before[id(r)])


@pytest.mark.parametrize("block", _runnable())
def test_block_runs_as_printed(block, tmp_path, monkeypatch, registries):
    monkeypatch.chdir(tmp_path)
    if block["note"] == "loader":
        _load_as_dataset(block["text"], tmp_path, monkeypatch)
    elif block["language"] == "python":
        namespace = {"__name__": "docs_example"}
        exec(compile(block["text"], f"{block['page']}:{block['line']}", "exec"), namespace)
    else:
        from typer.testing import CliRunner

        from audit.cli import app

        for command in _commands(block["text"]):
            result = CliRunner().invoke(app, command[1:])
            assert result.exit_code == 0, f"{shlex.join(command)}: exit {result.exit_code}\n{result.output}"


def _load_as_dataset(text: str, tmp_path: Path, monkeypatch) -> None:
    """The recipe as a loader module: `audit datasets` lists it and it loads by name."""
    import audit.datasets.loaders as loaders
    from audit.datasets import available_datasets, load_dataset

    name = re.search(r'Loader\(name="([\w-]+)"', text).group(1)
    folder = tmp_path / "loaders"
    folder.mkdir()
    (folder / f"{name}.py").write_text(text, encoding="utf-8")
    monkeypatch.setattr(loaders, "__path__", [*loaders.__path__, str(folder)])
    monkeypatch.delitem(sys.modules, f"audit.datasets.loaders.{name}", raising=False)
    assert name in available_datasets()
    data = load_dataset(name, seed=0, max_train=300)
    assert len(data.y_train) == 300 and data.X_train.shape[1] == 5


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
    import json
    import shutil
    import subprocess

    copy = tmp_path / "src"
    shutil.copytree(ROOT / "src", copy, ignore=shutil.ignore_patterns("__pycache__"))
    for file, how, line, text in _patches():
        path = tmp_path / file
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
        at = [i for i, x in enumerate(lines) if x.rstrip("\n") == line][0]
        lines[at:at + (how == "replace")] = [text]
        path.write_text("".join(lines), encoding="utf-8")
    env = {**__import__("os").environ, "PYTHONPATH": str(copy)}
    commands = [b for b in code_blocks(ROOT / "docs" / "extending.md") if b["note"] == "patch-command"]
    for command in _commands(commands[0]["text"]):
        subprocess.run([sys.executable, *command[1:]], cwd=tmp_path, env=env, check=True, timeout=300)
    assert "ForgetClasses" in (copy / "audit" / "report" / "schemas").joinpath(
        next(p.name for p in (copy / "audit" / "report" / "schemas").glob("report-*.json"))).read_text()
    out = tmp_path / "out"
    run = subprocess.run([sys.executable, "-m", "audit", "run", "--max-train", "300", "--steps", "20", "--trials", "100",
                          "--curve-points", "2", "--noise-draws", "2", "--attacks", "mia", "--forget-count", "3",
                          "--frontier", "none", "-q", "--out", str(out)], cwd=tmp_path, env=env, capture_output=True,
                         text=True, timeout=300)
    assert run.returncode in (0, 4, 5), run.stderr
    report = json.loads((out / "report.json").read_text())
    assert sum(report["forget_classes"]["counts"].values()) == 3
    assert "Deleted records by label" in (out / "report.html").read_text()


def test_the_readme_stays_a_first_page():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 300
    assert not re.search(r"\bissue \d+|\b20\d\d-\d\d-\d\d\b", readme), "nothing dated, no issue numbers"
    for link in re.findall(r"\]\((docs/[^)#]+)", readme):
        assert (ROOT / link).exists(), f"the README links to {link}, which does not exist"


@pytest.mark.slow  # about 20 s: it imports every method and attack and renders every page
def test_the_documentation_site_builds_strictly(tmp_path):
    import importlib.util
    import os
    import subprocess

    missing = [m for m in ("mkdocs", "material", "mkdocstrings") if importlib.util.find_spec(m) is None]
    if missing:  # .[test] installs them, so CI (.ci/run sets CI) builds the site; elsewhere a skip says why
        message = f"the site needs {', '.join(missing)}: pip install '.[docs]'"
        pytest.fail(message) if os.environ.get("CI") else pytest.skip(message)

    result = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                            cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-4000:]
    page = (tmp_path / "site" / "methods" / "r2d" / "index.html").read_text(encoding="utf-8")
    assert "Theorem 3.1" in page and "Deviations from the paper" in page


def test_generated_references_name_every_method_attack_and_flag():
    """The generators the site build runs (docs/hooks/reference.py), without mkdocs."""
    sys.path.insert(0, str(ROOT / "docs" / "hooks"))
    try:
        import reference
    finally:
        sys.path.remove(str(ROOT / "docs" / "hooks"))
    from attacks.registry import ATTACKS
    from audit.config import FIELDS
    from unlearners.registry import available_methods

    table = reference.method_table()
    assert all(f"[`{name}`]({name}.md)" in table for name in available_methods())
    attacks = reference.attack_table()
    assert all(f"| `{name}` |" in attacks for name in ATTACKS.names())
    options = reference.cli_options()
    for field in FIELDS:
        assert all(f"`{flag}`" in options for flag in reference._flags(field)), field.name
    assert reference.openssl_script().count("```") == 2
