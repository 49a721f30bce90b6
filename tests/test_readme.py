"""The README tells the truth about what is tested."""

from pathlib import Path

from audit.report.signing import OPENSSL_VERIFY_SCRIPT

ROOT = Path(__file__).resolve().parent.parent


def test_readme_openssl_recipe_is_the_tested_script():
    assert OPENSSL_VERIFY_SCRIPT.rstrip("\n") in (ROOT / "README.md").read_text()


def test_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text()
    command = 'python3 -m venv .venv && . .venv/bin/activate && pip install torch==2.13.0 && pip install ".[test]" && python -m pytest'
    assert command in readme and command in (ROOT / ".ci" / "run").read_text()


def test_readme_method_table_has_a_row_for_every_built_in_method():
    from unlearners.registry import available_methods

    readme = (ROOT / "README.md").read_text()
    for name in available_methods():
        assert f"\n| `{name}` | " in readme, f"no README method-table row for {name}"


def test_readme_documents_every_audit_run_flag():
    """The CLI reference names every flag the configuration declaration derives."""
    from audit.config import FIELDS

    readme = (ROOT / "README.md").read_text()
    for f in FIELDS:
        flags = ["--" + key for key in f.constraint.keys] if f.spelling == "keys" else list(f.flags or (f.flag,))
        for flag in flags:
            assert f"`{flag}" in readme, f"the README's CLI reference does not mention {flag}"
