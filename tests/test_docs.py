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
  of ``src/`` at the line named (inserted before it, or replacing it); the command then runs there
  (tests/test_docs_site.py).
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

from docblocks import ROOT, code_blocks, commands

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
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
                continue  # tests/test_docs_site.py applies the recipe
            assert b["note"] in ("", "slow", "loader"), f"{where}: unknown test marker {b['note']!r}"
            assert b["language"] in ("python", "bash"), (
                f"{where}: a {b['language'] or 'plain'} block is run "
                "only as python or bash: mark it illustrative with a reason"
            )
            if b["language"] == "bash":
                for line in commands(b["text"]):
                    assert line[0] == "audit", f"{where}: a run bash block holds audit commands only: {line}"


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

        for command in commands(block["text"]):
            result = CliRunner().invoke(app, command[1:])
            assert result.exit_code == 0, f"{shlex.join(command)}: exit {result.exit_code}\n{result.output}"
    if block["text"] == "audit run --method r2d --epsilon 1 --out runs/adult\n" and block["page"] == "README.md":
        _readme_numbers_are_this_run(tmp_path / "runs" / "adult")
    if block["text"].startswith("audit compare --methods r2d,newton,retrain") and block["page"] == "README.md":
        _readme_comparison_is_this_comparison(tmp_path / "runs" / "which-method")


def _readme_comparison_is_this_comparison(out: Path) -> None:
    """The README's comparison quotes σ and the accuracy loss of R2D and Newton removal, and says
    what the rule recommends: Newton removal, or retraining when Newton's step is within its spread."""
    import json

    document = json.loads((out / "report.json").read_text(encoding="utf-8"))
    rows = {row["name"]: row for row in document["methods"]}
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    r2d, newton = rows["r2d"], rows["newton"]
    for fact in (
        f"R2D's certified noise on 2,000 records (σ = {r2d['sigma']:.3g}) puts its released model "
        f"{r2d['loss_vs_retrained_points']:.1f} points below",
        f"Newton removal's (σ = {newton['sigma']:.2g}) costs {newton['loss_vs_retrained_points']:.2f} points",
    ):
        assert fact in readme, f"the README says otherwise than this comparison: {fact!r}"
    assert (
        document["recommendation"]["method"] in ("newton", "retrain")
        and "r2d" in document["recommendation"]["excluded"]
    )


def _readme_numbers_are_this_run(out: Path) -> None:
    """ "One run, explained" quotes the numbers of the run it shows: they are this run's."""
    from audit.findings import headline
    from audit.report.schema import load_report

    report = load_report(out / "report.json")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = " ".join(readme[readme.index("## One run, explained") : readme.index("## Which method?")].split())
    ceilings = {a.bound.ceiling for a in report.attacks.attacks.values()}
    quoted = [
        f"Δ = {report.certificate.sensitivity:.3g}",
        f"σ = {report.certificate.sigma:.3g}",
        f"is {report.realized.distance_unlearned_retrained:.2g}".replace("e-06", " × 10⁻⁶"),
        f"ε = {report.realized.epsilon:.2g}".replace("e-05", " × 10⁻⁵"),
        f"only ε = {report.realized.no_op_epsilon:.2g}",
        f"the {ceilings.pop():.3g} that 1,000 trials",
        headline(report.verdict, report.findings).text(),
    ]
    for fact in quoted:
        assert fact in section, f"the README says otherwise than this run: {fact!r}"
    assert not ceilings and all(a.bound.epsilon_lower == 0 for a in report.attacks.attacks.values())


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


def test_the_readme_stays_a_first_page():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 300
    assert not re.search(r"\bissue \d+|\b20\d\d-\d\d-\d\d\b", readme), "nothing dated, no issue numbers"
    for link in re.findall(r"\]\((docs/[^)#]+)", readme):
        assert (ROOT / link).exists(), f"the README links to {link}, which does not exist"


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
    used = {name for page in PAGES for name in re.findall(r"<!-- generated: ([\w-]+) -->", page.read_text())}
    assert used == set(reference.GENERATORS), "every generator is used on a page, every marker has a generator"
