"""A report directory is written as one set or not at all (issue 13): staging + one swap, a lock,
an earlier report replaced whole, secrets 0600 whatever the umask, nothing left by an interruption."""

from __future__ import annotations

import errno
import json
import os
import signal
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from audit.report.directory import REPORT_FILES, ReportDirectory, check_target
from certify.errors import InvalidInput


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _leftovers(parent: Path, name: str) -> list[str]:
    return sorted(p.name for p in parent.iterdir() if p.name.startswith(f".{name}"))


def _write_set(target: Path, tag: str, *, salt: bool = True, signed: bool = False, mode: int = 0o644) -> list[Path]:
    with ReportDirectory(target, file_mode=mode) as rd:
        rd.write("report.json", json.dumps({"run": tag}))
        rd.write("report.html", f"<p>{tag}</p>")
        if salt:
            rd.write("deletion-commitment.salt", tag.encode().hex() + "\n")
        if signed:
            rd.write("report.dsse.json", json.dumps({"signed": tag}))
        return rd.commit()


def _tags(target: Path) -> set[str]:
    """Which run each file came from (one tag means one set)."""
    tags = {json.loads((target / "report.json").read_text())["run"], (target / "report.html").read_text()[3:-4]}
    if (target / "deletion-commitment.salt").exists():
        tags.add(bytes.fromhex((target / "deletion-commitment.salt").read_text()).decode())
    if (target / "report.dsse.json").exists():
        tags.add(json.loads((target / "report.dsse.json").read_text())["signed"])
    return tags


def test_a_new_directory_gets_the_whole_set_with_documented_modes(tmp_path):
    old = os.umask(0o000)  # a permissive umask must not widen the salt
    try:
        files = _write_set(tmp_path / "out", "a")
    finally:
        os.umask(old)
    assert sorted(p.name for p in files) == ["deletion-commitment.salt", "report.html", "report.json"]
    out = tmp_path / "out"
    assert _mode(out / "deletion-commitment.salt") == 0o600
    assert _mode(out / "report.json") == _mode(out / "report.html") == 0o644
    assert _mode(out) == 0o755
    assert _leftovers(tmp_path, "out") == []


@pytest.mark.parametrize(("mode", "dir_mode"), [(0o640, 0o750), (0o600, 0o700)])
def test_group_or_owner_only_modes(tmp_path, mode, dir_mode):
    old = os.umask(0o077)  # a strict umask must not narrow a documented 0640 either
    try:
        _write_set(tmp_path / "out", "a", mode=mode)
    finally:
        os.umask(old)
    assert _mode(tmp_path / "out" / "report.json") == mode
    assert _mode(tmp_path / "out") == dir_mode
    assert _mode(tmp_path / "out" / "deletion-commitment.salt") == 0o600


def test_a_new_run_replaces_the_earlier_set_whole(tmp_path):
    out = tmp_path / "out"
    _write_set(out, "old", signed=True)
    (out / "deletion-commitment.salt").chmod(0o644)  # an old salt with a loose mode
    _write_set(out, "new", salt=True, signed=False)
    assert _tags(out) == {"new"}
    assert not (out / "report.dsse.json").exists()  # the old signature does not survive an unsigned run
    assert _mode(out / "deletion-commitment.salt") == 0o600
    _write_set(out, "newer", salt=False)
    assert not (out / "deletion-commitment.salt").exists()  # nor an old salt a run with its own salt
    assert _tags(out) == {"newer"}
    assert _leftovers(tmp_path, "out") == []


def test_a_second_writer_is_refused_while_the_first_holds_the_lock(tmp_path):
    out = tmp_path / "out"
    _write_set(out, "old")
    with ReportDirectory(out) as first:
        first.write("report.json", json.dumps({"run": "first"}))
        with pytest.raises(InvalidInput, match="no other audit is writing"):
            with ReportDirectory(out):
                pass
        first.write("report.html", "<p>first</p>")
        first.write("deletion-commitment.salt", b"first".hex())
        first.commit()
    assert _tags(out) == {"first"}
    _write_set(out, "after")  # the lock is released
    assert _tags(out) == {"after"}


@pytest.mark.parametrize("interruption", [KeyboardInterrupt, SystemExit, RuntimeError])
def test_an_interruption_after_report_json_leaves_the_earlier_set(tmp_path, interruption):
    out = tmp_path / "out"
    _write_set(out, "old", signed=True)
    with pytest.raises(interruption):
        with ReportDirectory(out) as rd:
            rd.write("report.json", json.dumps({"run": "new"}))
            raise interruption()
    assert _tags(out) == {"old"} and sorted(p.name for p in out.iterdir()) == sorted(REPORT_FILES)
    assert _leftovers(tmp_path, "out") == []


def test_a_full_disk_leaves_the_earlier_set_and_says_so(tmp_path, monkeypatch):
    out = tmp_path / "out"
    _write_set(out, "old")

    def full(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(InvalidInput, match="No space left on device") as info:
        _write_set(out, "new")
    assert info.value.field == "out"
    monkeypatch.undo()
    assert _tags(out) == {"old"} and _leftovers(tmp_path, "out") == []


def test_sigterm_while_writing_cleans_up(tmp_path):
    out = tmp_path / "out"
    _write_set(out, "old")
    script = textwrap.dedent(f"""
        import json, sys, time
        from audit.cli.exits import install_signal_handlers, Terminated
        from audit.report.directory import ReportDirectory
        install_signal_handlers()
        try:
            with ReportDirectory({str(out)!r}) as rd:
                rd.write("report.json", json.dumps({{"run": "new"}}))
                print("ready", flush=True)
                time.sleep(30)
        except Terminated:
            sys.exit(143)
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 143
    assert _tags(out) == {"old"} and _leftovers(tmp_path, "out") == []


def test_an_interrupted_swap_is_undone_by_the_next_run(tmp_path):
    """The two-rename fallback: killed between its renames, the earlier set waits in a backup."""
    out = tmp_path / "out"
    _write_set(out, "old")
    os.rename(out, tmp_path / ".out.replaced-abc")
    (tmp_path / ".out.staging-xyz").mkdir()  # a kill -9 leaves a staging directory too
    with ReportDirectory(out) as rd:
        assert rd.replaced  # the restored earlier report is there to be replaced
    assert _tags(out) == {"old"} and _leftovers(tmp_path, "out") == []


def test_the_two_rename_fallback_swaps_too(tmp_path, monkeypatch):
    import audit.report.directory as directory

    out = tmp_path / "out"
    _write_set(out, "old", signed=True)
    monkeypatch.setattr(directory, "_exchange", lambda a, b: False)
    _write_set(out, "new")
    assert _tags(out) == {"new"} and _leftovers(tmp_path, "out") == []


@pytest.mark.parametrize("setup", ["file", "foreign", "under-file"])
def test_targets_that_are_not_report_directories_are_refused(tmp_path, setup):
    target = tmp_path / "out"
    if setup == "file":
        target.write_text("x")
    elif setup == "foreign":
        target.mkdir()
        (target / "notes.txt").write_text("mine")
    else:
        (tmp_path / "afile").write_text("x")
        target = tmp_path / "afile" / "out"
    before = sorted(p.name for p in tmp_path.iterdir())
    with pytest.raises(InvalidInput) as info:
        _write_set(target, "new")
    assert info.value.field == "out"
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    if setup == "foreign":
        assert (target / "notes.txt").read_text() == "mine" and "notes.txt" in str(info.value)


def test_an_unwritable_parent_is_one_sentence(tmp_path, monkeypatch):
    def denied(*args, **kwargs):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES))

    monkeypatch.setattr(ReportDirectory, "_acquire", denied)
    with pytest.raises(InvalidInput, match="Permission denied"):
        _write_set(tmp_path / "out", "new")
    assert not (tmp_path / "out").exists()


def test_check_target_reports_an_earlier_report(tmp_path):
    assert check_target(tmp_path / "none") is False
    (tmp_path / "empty").mkdir()
    assert check_target(tmp_path / "empty") is False
    _write_set(tmp_path / "r", "a")
    assert check_target(tmp_path / "r") is True


@pytest.fixture(scope="module")
def library_report():
    """One cheap audit of a caller's model (a factory) with a request id."""
    from torch import nn

    from audit import AuditConfig, run

    return run(
        AuditConfig(max_train=300, attacks=(), curve_points=2, noise_draws=2, request_id="REQ-7"),
        model=lambda shape, n_classes: nn.Sequential(nn.Linear(shape[0], 1)),
    )


def test_the_library_writes_the_same_set(tmp_path, monkeypatch, library_report):
    """report.write(out) is `audit run --out`: the page, and the salt at 0600 under any umask."""
    report = library_report
    old = os.umask(0o000)
    try:
        path = report.write(tmp_path / "out")
    finally:
        os.umask(old)
    out = tmp_path / "out"
    assert path == out / "report.json" and json.loads(path.read_text())["verdict"] == report.verdict
    assert sorted(p.name for p in out.iterdir()) == ["deletion-commitment.salt", "report.html", "report.json"]
    assert _mode(out / "deletion-commitment.salt") == 0o600
    assert bytes.fromhex((out / "deletion-commitment.salt").read_text()) == report.commitment_salt


def test_the_request_id_is_recorded_named_on_the_page_and_signed(tmp_path, library_report):
    """The request box of a caller's model: its request id, no demonstration tag, and the key the
    page was signed with (named, never claimed verified); the signed claims carry the request."""
    from audit.report.keys import generate_keypair, keyid
    from audit.report.signing import verify_report

    d = library_report.to_json_dict()
    assert d["deletion_request"]["request_id"] == d["config"]["request_id"] == "REQ-7"
    assert d["model"]["origin"] == "caller" and "caller's factory" in d["model"]["source"]
    private, public = generate_keypair(tmp_path / "keys")
    library_report.write(tmp_path / "plain")
    library_report.write(tmp_path / "signed", sign_key=private)
    pages = [(tmp_path / name / "report.html").read_text() for name in ("plain", "signed")]
    plain, signed = (page[page.index('<section id="request"') : page.index('<nav class="toc"')] for page in pages)
    for page, box in zip(pages, (plain, signed)):
        assert "<code>REQ-7</code>" in box and d["deletion_request"]["commitment"] in box
        assert "demonstration" not in page and "caller&#39;s factory" in box
    assert "<dd>unsigned</dd>" in plain and "signed by key" not in plain
    assert f"signed by key <code>{keyid(public)}</code>" in signed
    assert "verified" not in signed and "valid" not in signed  # the page cannot check its own signature
    result = verify_report(tmp_path / "signed", public)
    assert result.predicate["deletion_request"] == {
        "request_id": "REQ-7",
        "commitment": d["deletion_request"]["commitment"],
        "n_records": 1,
        "identifier": d["deletion_request"]["identifier"],
    }
    assert "Deletion request: id=REQ-7 records=1" in result.describe()


def test_cli_refuses_a_second_run_into_a_locked_out_before_any_work(tmp_path):
    from typer.testing import CliRunner

    from audit.cli import app

    out = tmp_path / "out"
    with ReportDirectory(out):
        t0 = time.perf_counter()
        result = CliRunner().invoke(app, ["run", "--out", str(out), "-q"])
        elapsed = time.perf_counter() - t0
    assert result.exit_code == 2 and "--out" in result.stderr and "no other audit" in result.stderr
    assert elapsed < 10  # refused at start-up, not after the audit's work


def test_cli_carries_a_salt_given_from_the_directory_it_replaces(tmp_path):
    from typer.testing import CliRunner

    from audit.cli import app

    out = tmp_path / "out"
    fast = ["run", "--max-train", "300", "--curve-points", "2", "--noise-draws", "2", "--attacks", "none", "-q"]
    assert CliRunner().invoke(app, [*fast, "--out", str(out)]).exit_code == 0
    salt = (out / "deletion-commitment.salt").read_text()
    again = CliRunner().invoke(
        app, [*fast, "--out", str(out), "--commitment-salt", str(out / "deletion-commitment.salt")]
    )
    assert again.exit_code == 0, again.stderr
    assert (out / "deletion-commitment.salt").read_text() == salt and _mode(out / "deletion-commitment.salt") == 0o600
    commitment = json.loads((out / "report.json").read_text())["deletion_request"]["commitment"]
    assert commitment  # the new report commits with the same salt that was kept


def test_room_is_checked_where_the_files_go(tmp_path, monkeypatch):
    """A report set is staged beside its target and swapped in: an earlier report's directory that
    is itself read-only does not stop a run whose parent is writable; a run directory, written
    into, does. A full file system stops both (os.access and disk_usage answer as a read-only
    directory and a full disk would: root writes through chmod, and no test may fill a disk)."""
    import shutil

    from audit.report.directory import MIN_FREE_BYTES, check_room

    earlier = tmp_path / "earlier"
    earlier.mkdir()
    access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode, **kw: Path(p) != earlier and access(p, mode, **kw))
    check_room(earlier, "out", beside=True)
    with pytest.raises(InvalidInput, match="resume must be a directory path this user can create and write"):
        check_room(earlier, "resume")
    usage = shutil.disk_usage
    monkeypatch.setattr(shutil, "disk_usage", lambda p: usage(p)._replace(free=MIN_FREE_BYTES - 1))
    with pytest.raises(InvalidInput, match="out must be a directory on a file system with at least 16 MiB free"):
        check_room(earlier, "out", beside=True)
