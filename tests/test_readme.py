"""The README and the documentation tell the truth about what is tested (tests/test_docs.py runs
their code blocks)."""

import base64
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from audit.report.signing import (
    OPENSSL_VERIFY_SCRIPT,
    PAYLOAD_TYPE,
    VerificationError,
    generate_keypair,
    keyid,
    pae,
    sign_report,
    verify_report,
)

ROOT = Path(__file__).resolve().parent.parent


def readme_openssl_script() -> str:
    """The plain-openssl verifier as docs/verify.md prints it (generated from the package when the site
    is built: docs/hooks/reference.py)."""
    page = (ROOT / "docs" / "verify.md").read_text()
    assert "<!-- generated: openssl-script -->" in page
    return OPENSSL_VERIFY_SCRIPT


def test_readme_links_the_verification_page_that_prints_the_shipped_script():
    assert "(docs/verify.md)" in (ROOT / "README.md").read_text()
    assert readme_openssl_script() == OPENSSL_VERIFY_SCRIPT


def printed_script() -> str:
    """What `audit verify --print-script` prints: the script shipped in the package."""
    from typer.testing import CliRunner

    from audit.cli import app

    result = CliRunner().invoke(app, ["verify", "--print-script"])  # no REPORT_DIR, no --key needed
    assert result.exit_code == 0, result.output
    return result.stdout


def test_the_verifier_script_ships_in_the_package_and_is_printed():
    import audit.report
    from audit.report.signing import VERIFY_SCRIPT_FILE

    # inside the installed package (a wheel in CI, the source tree in an editable install): the wheel has it,
    # and it is the file in the source tree
    assert VERIFY_SCRIPT_FILE.parent == Path(audit.report.__file__).parent
    source = ROOT / "src" / "audit" / "report" / VERIFY_SCRIPT_FILE.name
    assert printed_script() == VERIFY_SCRIPT_FILE.read_text() == OPENSSL_VERIFY_SCRIPT == source.read_text()
    assert printed_script().startswith("#!/usr/bin/env bash\n")


def _openssl_ok() -> bool:
    if not all(shutil.which(tool) for tool in ("bash", "base64", "sha256sum", "openssl")):
        return False
    out = subprocess.run(["openssl", "version"], capture_output=True, text=True)
    parts = out.stdout.split()
    return out.returncode == 0 and len(parts) > 1 and parts[0] == "OpenSSL" and int(parts[1].split(".")[0]) >= 3


def _make_case(case: str, tmp_path: Path, keys, other_keys) -> Path:
    """A signed report directory in the state ``case`` names."""
    rdir = tmp_path / "run"
    rdir.mkdir()
    (rdir / "report.json").write_text(json.dumps({"method": {"name": "r2d"}, "verdict": "consistent"}, indent=2))
    (rdir / "report.html").write_text("<!doctype html><p>ε = 1</p>\n")
    sign_report(rdir, keys[0])
    env_path = rdir / "report.dsse.json"
    env = json.loads(env_path.read_text())
    if case == "tampered":
        data = bytearray((rdir / "report.json").read_bytes())
        data[5] ^= 1
        (rdir / "report.json").write_bytes(bytes(data))
    elif case == "report-json-symlinked-outside":
        # The same bytes outside the directory: only refusing the symlink catches it.
        outside = tmp_path / "elsewhere.json"
        os.replace(rdir / "report.json", outside)
        (rdir / "report.json").symlink_to(outside)
    elif case == "extra-file":  # a file added after signing sits in the set looking signed
        (rdir / "notes.txt").write_text("added later\n")
    elif case in ("comparison", "comparison-with-added-noop"):
        _make_comparison(rdir, keys, add_noop=case.endswith("noop"))
    elif case == "minified":
        env_path.write_text(json.dumps(env, separators=(",", ":")))
    elif case in ("multi-signature", "multi-signature-none-by-key"):
        from cryptography.hazmat.primitives import serialization

        other = serialization.load_pem_private_key(other_keys[0].read_bytes(), password=None)
        sig = other.sign(pae(PAYLOAD_TYPE, base64.b64decode(env["payload"])))
        # The countersignature comes last, so a reader that keeps only one "sig" checks the wrong one.
        env["signatures"].append({"keyid": keyid(other_keys[1]), "sig": base64.b64encode(sig).decode()})
        if case == "multi-signature-none-by-key":  # ours replaced by 64 zero bytes under our keyid
            env["signatures"][0]["sig"] = base64.b64encode(bytes(64)).decode()
        env_path.write_text(json.dumps(env, indent=4))
    return rdir


def _make_comparison(rdir: Path, keys, *, add_noop: bool) -> None:
    """``rdir`` as a signed comparison (one method under methods/r2d/, signed on its own and by the
    comparison's envelope), and with ``add_noop`` a methods/noop/ copied in after signing: a report
    signed by the same key, so it verifies on its own, but not part of the signed set."""
    from audit.report.dsse import COMPARISON_PREDICATE_TYPE

    method = rdir / "methods" / "r2d"
    method.mkdir(parents=True)
    for name in ("report.json", "report.html"):
        shutil.copy(rdir / name, method / name)
    sign_report(method, keys[0])
    subjects = ["report.json", "report.html"] + [
        f"methods/r2d/{n}" for n in ("report.json", "report.html", "report.dsse.json")
    ]
    sign_report(
        rdir, keys[0], subjects=subjects, predicate={"kind": "comparison"}, predicate_type=COMPARISON_PREDICATE_TYPE
    )
    if add_noop:
        shutil.copytree(method, rdir / "methods" / "noop")
        verify_report(rdir / "methods" / "noop", keys[1])


AGREEMENT = {  # case: whether both must accept it
    "valid": True,
    "tampered": False,
    "report-json-symlinked-outside": False,
    "minified": True,
    "multi-signature": True,
    "multi-signature-none-by-key": False,
    "extra-file": False,
    "comparison": True,
    "comparison-with-added-noop": False,
}


@pytest.mark.skipif(not _openssl_ok(), reason="needs bash, base64, sha256sum and OpenSSL >= 3")
@pytest.mark.parametrize("case", list(AGREEMENT))
def test_readme_openssl_script_agrees_with_verify_report(case, tmp_path):
    keys = generate_keypair(tmp_path / "keys")
    other_keys = generate_keypair(tmp_path / "other-keys")
    rdir = _make_case(case, tmp_path, keys, other_keys)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    (scratch / "verify-report.sh").write_text(printed_script())
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "DIR": str(rdir), "PUB": str(keys[1])}
    script = subprocess.run(
        ["bash", "verify-report.sh"], cwd=scratch, env=env, capture_output=True, text=True, timeout=60
    )
    try:
        result = verify_report(rdir, keys[1])
    except VerificationError:
        result = None
    assert (script.returncode == 0) is (result is not None) is AGREEMENT[case], script.stdout + script.stderr
    if result is not None:
        assert "Signature Verified Successfully" in script.stdout
        for name, digest in result.subjects:
            assert f"OK {name} {digest}" in script.stdout
    else:
        assert "FAIL: " in script.stderr
    if case in ("extra-file", "comparison-with-added-noop"):  # both name what is not signed
        named = "notes.txt" if case == "extra-file" else "methods/noop/"
        assert f"FAIL: the signature does not cover '{named}'" in script.stderr
        with pytest.raises(VerificationError, match=f"does not cover {named} in"):
            verify_report(rdir, keys[1])


def test_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text()
    command = 'python3 -m venv .venv && . .venv/bin/activate && pip install torch==2.13.0 && pip install ".[test]" && python -m pytest'
    assert command in readme and command in (ROOT / ".ci" / "run").read_text()


def test_readme_fast_lane_deselects_a_declared_marker_with_plugins_the_test_extra_installs():
    import re
    import tomllib

    readme = (ROOT / "README.md").read_text()
    lane = re.search(r"\n(python -m pytest -m \"not slow\"[^\n]*)\n", readme)
    assert lane, "the README's fast-lane command"
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    ini = pyproject["tool"]["pytest"]["ini_options"]
    assert any(m.startswith("slow:") for m in ini["markers"]) and "--strict-markers" in ini["addopts"]
    if re.search(r" -n ", lane.group(1)):
        test_extra = pyproject["project"]["optional-dependencies"]["test"]
        assert any(re.match(r"pytest-xdist\b", r) for r in test_extra), "-n needs pytest-xdist in .[test]"


def test_readme_documents_every_audit_compare_flag():
    """The comparison's own flags, and that it takes every run flag but the per-method ones (docs/compare.md,
    docs/cli.md; the run flags are in the CLI reference generated from FIELDS: tests/test_docs.py)."""
    import typer.main

    from audit.cli import app

    readme = (ROOT / "docs" / "compare.md").read_text() + (ROOT / "docs" / "cli.md").read_text()
    command = typer.main.get_command(app).commands["compare"]
    flags = {o for p in command.params for o in p.opts if o.startswith("--")} - {"--help"}
    run = {o for p in typer.main.get_command(app).commands["run"].params for o in p.opts if o.startswith("--")}
    assert run - flags == {"--method", "--sigma-budget", "--strict", "--unlearn"}
    assert flags - run == {"--methods", "--max-accuracy-loss", "--candidate"}
    for flag in flags - run:  # the run's flags: tests/test_docs.py (the generated CLI reference)
        assert f"`{flag}" in readme, f"docs/compare.md and docs/cli.md do not mention {flag}"
    assert "every `audit run` option but `--method`, `--sigma-budget` and `--unlearn`" in readme
