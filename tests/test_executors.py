"""The executors end to end: worker processes and a Ray cluster give the local executor's scores
and bounds, and a run killed half-way through its trials resumes to the uninterrupted report.

These start processes or a cluster (seconds each), so they are marked slow; CI runs them."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

import audit
from audit.config import AuditConfig

pytestmark = pytest.mark.slow
SALT = b"e" * 32
SMALL = dict(max_train=400, steps=20, trials=150, curve_points=2, noise_draws=2, trial_mode="retrain", shadow_models=8)
#: The same audit on the command line (retrain mode: every trial is a training).
FLAGS = [
    "--max-train",
    "400",
    "--steps",
    "20",
    "--curve-points",
    "2",
    "--noise-draws",
    "2",
    "--trial-mode",
    "retrain",
    "--shadow-models",
    "8",
    "--seed",
    "3",
    "--json",
]


def _scored(report: dict) -> str:
    """What must not depend on the executor: the attacks section without its execution block."""
    section = dict(report["attacks"])
    section.pop("execution")
    return json.dumps(section, sort_keys=True)


@pytest.fixture(scope="module")
def local_report():
    return audit.run(AuditConfig(**SMALL), salt=SALT).to_json_dict()


def test_worker_processes_give_the_local_scores_and_bounds(local_report):
    report = audit.run(AuditConfig(**SMALL, executor="processes", workers=2, shard_size=64), salt=SALT).to_json_dict()
    assert report["attacks"]["execution"]["executor"] == "processes"
    assert report["attacks"]["execution"]["shards"] == 4
    assert _scored(report) == _scored(local_report)


def test_a_local_ray_cluster_started_for_the_run_gives_the_local_scores_and_bounds(local_report):
    pytest.importorskip("ray", reason="Ray is the optional extra unlearn-audit[ray]")
    report = audit.run(AuditConfig(**SMALL, executor="ray", workers=2, shard_size=64), salt=SALT).to_json_dict()
    assert report["attacks"]["execution"]["executor"] == "ray"
    assert _scored(report) == _scored(local_report)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _cli(*args: str, **options) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "audit", "run", *args], capture_output=True, text=True, timeout=600, **options
    )


def test_an_existing_two_cpu_ray_cluster_runs_the_audit_of_the_command_line():
    """docs/scale-out.md's lines: ray start --head, audit run --executor ray --ray-address."""
    pytest.importorskip("ray", reason="Ray is the optional extra unlearn-audit[ray]")
    ray_cli = shutil.which("ray", path=str(Path(sys.executable).parent)) or shutil.which("ray")
    port = _free_port()
    # Ray's socket paths must stay under 108 bytes: a short directory of our own; and the head is
    # stopped by ending its process group (`ray stop` would stop every cluster on the machine)
    temp = tempfile.mkdtemp(prefix="ray", dir="/tmp")
    # a loopback test cluster without Ray's token authentication (a shared ~/.ray/auth_token could be
    # rewritten by another cluster on this machine meanwhile); real clusters keep theirs
    env = dict(os.environ, RAY_AUTH_MODE="disabled")
    head = subprocess.Popen(
        [
            ray_cli,
            "start",
            "--head",
            "--block",
            "--num-cpus",
            "2",
            "--port",
            str(port),
            "--include-dashboard",
            "false",
            "--disable-usage-stats",
            "--temp-dir",
            temp,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        env=env,
    )
    try:
        deadline = time.monotonic() + 120
        while True:
            assert head.poll() is None and time.monotonic() < deadline, "the Ray head did not start"
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.2)
        on_ray = _cli(*FLAGS, "-q", "--executor", "ray", "--ray-address", f"127.0.0.1:{port}", env=env)
    finally:
        os.killpg(head.pid, signal.SIGTERM)
        head.wait(timeout=60)
        shutil.rmtree(temp, ignore_errors=True)
    local = _cli(*FLAGS, "-q")
    assert on_ray.returncode == local.returncode, on_ray.stderr
    ray_report, local_report = json.loads(on_ray.stdout), json.loads(local.stdout)
    assert ray_report["attacks"]["execution"]["executor"] == "ray"
    assert ray_report["attacks"]["execution"]["workers"] == 2
    assert _scored(ray_report) == _scored(local_report)


def test_a_run_killed_half_way_resumes_to_the_uninterrupted_report(tmp_path):
    run_dir = tmp_path / "run"
    flags = [*FLAGS, "--trials", "600", "--shard-size", "64", "--resume", str(run_dir)]
    proc = subprocess.Popen(
        [sys.executable, "-m", "audit", "run", *flags], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    deadline = time.monotonic() + 300
    while len(list(run_dir.glob("*-trials-*.npz"))) < 3:  # a few shards of eight are done
        assert proc.poll() is None, proc.stderr.read()
        assert time.monotonic() < deadline
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)  # no clean-up at all: a lost node, the OOM killer
    proc.wait(timeout=60)
    done = sorted(p.name for p in run_dir.glob("*.npz"))
    assert 3 <= len(done) < 9

    resumed = _cli(*flags)  # not quiet: the log names the skipped shards
    assert not list(run_dir.glob(".partial-*"))  # what the kill left half-written was removed, never read
    uninterrupted = _cli(*FLAGS, "--trials", "600", "-q")
    assert resumed.returncode == uninterrupted.returncode, resumed.stderr
    assert _scored(json.loads(resumed.stdout)) == _scored(json.loads(uninterrupted.stdout))
    skipped = json.loads(resumed.stdout)["attacks"]["execution"]["resumed"]
    assert len(skipped) == len(done)
    assert "skipped: " + ", ".join(skipped) in resumed.stderr


def test_a_killed_worker_process_is_replaced_and_its_shards_run_again(local_report, caplog):
    """SIGKILL one worker as soon as the first shard is back: the pool breaks, the shards it held
    are run again in a new pool, and the report is the uninterrupted one."""
    import logging
    import multiprocessing

    killed = []

    def progress(stage, done, total):
        if stage == "shards" and done >= 1 and not killed:
            workers = multiprocessing.active_children()
            if workers:
                workers[0].kill()
                killed.append(workers[0].pid)

    with caplog.at_level(logging.WARNING, logger="unlearn_audit"):
        report = audit.run(
            AuditConfig(**SMALL, executor="processes", workers=2, shard_size=64), progress, salt=SALT
        ).to_json_dict()
    assert killed and "running it again (attempt 2 of 2)" in caplog.text
    assert _scored(report) == _scored(local_report)
