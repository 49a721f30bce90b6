"""End to end: `audit run --out --sign-key`, `audit verify`, tampering, determinism."""

import json
import os
import re
import stat

import pytest
from typer.testing import CliRunner

from audit.cli import app

runner = CliRunner()
FAST = [
    "--max-train",
    "2000",
    "--curve-points",
    "3",
    "--noise-draws",
    "2",
    "--trials",
    "100",
    "--attacks",
    "whitebox,mia,relearn",
    "--forget-count",
    "5",
    "-q",
]


def _keys(tmp_path):
    result = runner.invoke(app, ["keygen", "--out", str(tmp_path / "keys")])
    assert result.exit_code == 0, result.output
    private, public = tmp_path / "keys" / "private.pem", tmp_path / "keys" / "public.pem"
    assert stat.S_IMODE(os.stat(private).st_mode) == 0o600
    return private, public


@pytest.mark.slow
def test_signed_run_verifies_and_tampering_is_rejected(tmp_path):
    private, public = _keys(tmp_path)
    out = tmp_path / "run"
    result = runner.invoke(app, ["run", *FAST, "--out", str(out), "--sign-key", str(private)])
    assert result.exit_code == 0, result.output
    names = sorted(p.name for p in out.iterdir())
    assert names == ["deletion-commitment.salt", "report.dsse.json", "report.html", "report.json"]
    assert stat.S_IMODE(os.stat(out / "deletion-commitment.salt").st_mode) == 0o600
    key_text = private.read_text()
    for name in ("report.json", "report.html", "report.dsse.json"):
        assert "PRIVATE KEY" not in (out / name).read_text() and key_text not in (out / name).read_text()
    ok = runner.invoke(app, ["verify", str(out), "--key", str(public)])
    assert ok.exit_code == 0 and "report.json" in ok.output and "report.html" in ok.output
    # one changed byte in each signed file
    for name in ("report.json", "report.html"):
        original = (out / name).read_bytes()
        (out / name).write_bytes(original[:-2] + bytes([original[-2] ^ 1]) + original[-1:])
        bad = runner.invoke(app, ["verify", str(out), "--key", str(public)])
        assert bad.exit_code == 3 and name in bad.stderr
        (out / name).write_bytes(original)
    # another key
    other_private, other_public = _keys(tmp_path / "other")
    assert runner.invoke(app, ["verify", str(out), "--key", str(other_public)]).exit_code == 3
    # truncated envelope
    env = (out / "report.dsse.json").read_bytes()
    (out / "report.dsse.json").write_bytes(env[: len(env) // 2])
    bad = runner.invoke(app, ["verify", str(out), "--key", str(public)])
    assert bad.exit_code == 3 and len([ln for ln in bad.stderr.splitlines() if ln.strip()]) == 1


def _signed_dir(tmp_path, private, html=True):
    """A report directory signed by the library (no audit run needed)."""
    from audit.report.signing import sign_report

    out = tmp_path / "signed"
    out.mkdir()
    (out / "report.json").write_text(json.dumps({"method": {"name": "r2d"}, "verdict": "consistent"}))
    if html:
        (out / "report.html").write_text("<!doctype html><p>report</p>\n")
    sign_report(out, private)
    return out


def _stderr_lines(result):
    return [ln for ln in result.stderr.splitlines() if ln.strip()]


@pytest.mark.parametrize("envelope", ["[" * 100_000, '{"a":' * 100_000, "not json", '{"payload": 5}'])
def test_verify_exits_3_with_one_line_on_a_malformed_envelope(tmp_path, envelope):
    private, public = _keys(tmp_path)
    out = _signed_dir(tmp_path, private)
    (out / "report.dsse.json").write_text(envelope)
    result = runner.invoke(app, ["verify", str(out), "--key", str(public)])
    assert result.exit_code == 3, result.output
    assert len(_stderr_lines(result)) == 1 and "Traceback" not in result.output
    assert "report.dsse.json" in result.stderr or "envelope" in result.stderr


def test_verify_refuses_a_page_written_after_signing(tmp_path):
    private, public = _keys(tmp_path)
    out = _signed_dir(tmp_path, private, html=False)
    ok = runner.invoke(app, ["verify", str(out), "--key", str(public), "--json"])
    assert ok.exit_code == 0 and [s["name"] for s in json.loads(ok.stdout)["subjects"]] == ["report.json"]
    (out / "report.html").write_text("<!doctype html><p>added later</p>\n")
    bad = runner.invoke(app, ["verify", str(out), "--key", str(public)])
    assert bad.exit_code == 3 and _stderr_lines(bad) == [
        f"error: verification failed: The signature does not cover report.html in {out}: remove it or sign the "
        "directory again (only deletion-commitment.salt may sit unsigned beside a report)."
    ]


@pytest.mark.skipif(os.name == "nt", reason="POSIX mode bits")
def test_private_key_readable_by_others_is_refused_naming_the_flag(tmp_path):
    private, public = _keys(tmp_path)
    out = _signed_dir(tmp_path, private)
    os.chmod(private, 0o644)
    before = (out / "report.dsse.json").read_bytes()
    signed = runner.invoke(app, ["sign", str(out), "--key", str(private)])
    assert signed.exit_code == 2 and len(_stderr_lines(signed)) == 1
    assert "--key must be a private key file" in signed.stderr and f"chmod 600 {private}" in signed.stderr
    assert "(mode 0644)" in signed.stderr and (out / "report.dsse.json").read_bytes() == before
    run_out = tmp_path / "run"
    ran = runner.invoke(app, ["run", *FAST, "--out", str(run_out), "--sign-key", str(private)])
    assert ran.exit_code == 2 and "--sign-key must be a private key file" in ran.stderr
    assert f"chmod 600 {private}" in ran.stderr and not run_out.exists()


def test_keygen_into_an_unwritable_place_is_bad_input(tmp_path):
    (tmp_path / "file").write_text("x")
    result = runner.invoke(app, ["keygen", "--out", str(tmp_path / "file" / "keys")])
    assert result.exit_code == 2 and len(_stderr_lines(result)) == 1
    assert "--out must be" in result.stderr and "Traceback" not in result.output


def test_sign_key_problems_fail_before_anything_is_written(tmp_path):
    out = tmp_path / "run"
    result = runner.invoke(app, ["run", *FAST, "--out", str(out), "--sign-key", str(tmp_path / "missing.pem")])
    assert result.exit_code == 2 and not out.exists()
    result = runner.invoke(app, ["run", *FAST, "--sign-key", str(tmp_path / "missing.pem")])
    assert result.exit_code == 2


@pytest.mark.slow
def test_same_config_seed_and_salt_give_identical_reports_apart_from_timestamps(tmp_path):
    salt = tmp_path / "salt.hex"
    salt.write_text("00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n")
    dirs = [tmp_path / "a", tmp_path / "b"]
    for d in dirs:
        result = runner.invoke(app, ["run", *FAST, "--out", str(d), "--commitment-salt", str(salt)])
        assert result.exit_code == 0, result.output
    a, b = ((d / "report.json").read_text().splitlines() for d in dirs)
    assert len(a) == len(b)
    timing = re.compile(
        r'^\s*"(created_at|started_at|learn_s|unlearn_s|retrain_s|attacks_s|frontier_s|utility_s|tradeoff_s|speedup_vs_retrain)"'
    )
    repeats = re.compile(r'^\s*"(unlearn|retrain)_repeats_s": \[')  # each line of these arrays is a timing too
    starts = [i for i, line in enumerate(a) if repeats.match(line)]
    ends = [next(k for k in range(i, len(a)) if a[k].strip().startswith("]")) for i in starts]
    in_repeats = {j for i, end in zip(starts, ends) for j in range(i + 1, end)}
    differing = [x for i, (x, y) in enumerate(zip(a, b)) if x != y and i not in in_repeats]
    assert all(timing.match(line) for line in differing), differing
    assert not (dirs[0] / "deletion-commitment.salt").exists()  # the user keeps their own salt
    ja, jb = (json.loads((d / "report.json").read_text()) for d in dirs)
    assert ja["deletion_request"]["commitment"] == jb["deletion_request"]["commitment"]
    svg = re.compile(r"<svg.*?</svg>", re.S)
    pa, pb = (svg.findall((d / "report.html").read_text()) for d in dirs)
    assert pa and pa == pb  # byte-identical plots


@pytest.mark.slow
def test_report_command_rerenders_and_rejects_corrupt_reports(tmp_path):
    out = tmp_path / "run"
    assert runner.invoke(app, ["run", *FAST, "--out", str(out)]).exit_code == 0
    page = tmp_path / "again.html"
    result = runner.invoke(app, ["report", str(out / "report.json"), "--html", str(page)])
    assert result.exit_code == 0, result.output
    # the same page but for its signature line: no signature covers a re-rendered page
    again, written = page.read_text(), (out / "report.html").read_text()
    assert "not signed: re-rendered" in again and "<dd>unsigned</dd>" in written

    def unsigned(html):
        start = html.index("<dt>signature</dt>")
        return html[:start] + html[html.index("</div>", start) :]

    assert unsigned(again) == unsigned(written)
    data = json.loads((out / "report.json").read_text())
    data["certificate"]["epsilon"] = "abc"
    corrupt = tmp_path / "corrupt.json"
    corrupt.write_text(json.dumps(data))
    result = runner.invoke(app, ["report", str(corrupt), "--html", str(tmp_path / "x.html")])
    assert result.exit_code == 2 and "certificate.epsilon" in result.stderr
    assert not (tmp_path / "x.html").exists()
    (tmp_path / "junk.json").write_text("{not json")
    assert runner.invoke(app, ["report", str(tmp_path / "junk.json"), "--html", str(page)]).exit_code == 2
