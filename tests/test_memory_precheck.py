"""The memory pre-check (issue 13): a trial count that cannot fit is refused before any work,
with the bytes needed and the bytes available; what fits passes."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from audit import memory
from audit.memory import PER_TRIAL_OVERHEAD, STACKS, available_bytes, check_trial_memory, trial_bytes
from certify.errors import InvalidInput

MIB = 2**20


# -- reading the available memory ------------------------------------------------------------


@pytest.fixture
def fake_system(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """/proc/meminfo and the cgroup files redirected into tmp_path (none exist until written)."""
    monkeypatch.setattr(memory, "_MEMINFO", tmp_path / "meminfo")
    monkeypatch.setattr(memory, "_CGROUP_V2", tmp_path / "cg2")
    monkeypatch.setattr(memory, "_CGROUP_V1", tmp_path / "cg1")
    (tmp_path / "cg2").mkdir()
    (tmp_path / "cg1").mkdir()
    return tmp_path


def test_meminfo_is_read_in_kib(fake_system: Path) -> None:
    (fake_system / "meminfo").write_text("MemTotal:  8000 kB\nMemFree:  100 kB\nMemAvailable:   2048 kB\n")
    assert available_bytes() == 2048 * 1024


def test_cgroup_limit_caps_the_host(fake_system: Path) -> None:
    (fake_system / "meminfo").write_text("MemAvailable:   2048 kB\n")
    (fake_system / "cg2" / "memory.max").write_text("1000000\n")
    (fake_system / "cg2" / "memory.current").write_text("400000\n")
    assert available_bytes() == 600000  # the container's room, below the host's 2 MiB
    (fake_system / "cg2" / "memory.max").write_text("max\n")  # no limit: the host decides
    assert available_bytes() == 2048 * 1024


def test_cgroup_v1_and_its_no_limit_value(fake_system: Path) -> None:
    (fake_system / "meminfo").write_text("MemAvailable:   2048 kB\n")
    (fake_system / "cg1" / "memory.limit_in_bytes").write_text("9223372036854771712\n")  # v1's "unlimited"
    assert available_bytes() == 2048 * 1024
    (fake_system / "cg1" / "memory.limit_in_bytes").write_text("500000\n")
    (fake_system / "cg1" / "memory.usage_in_bytes").write_text("100000\n")
    assert available_bytes() == 400000


def test_sysconf_fallback_and_nothing_readable(fake_system: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pages = {"SC_AVPHYS_PAGES": 10, "SC_PAGE_SIZE": 4096}
    monkeypatch.setattr(memory.os, "sysconf", lambda name: pages[name])
    assert available_bytes() == 40960  # no meminfo file
    def broken(name: str) -> int:
        raise ValueError(name)
    monkeypatch.setattr(memory.os, "sysconf", broken)
    assert available_bytes() is None
    # nothing readable: the check is skipped rather than refusing on a guess
    check_trial_memory(trials=10_000_000, n_params=10**6, dtype="float64", mode="retrain")


# -- the estimate ------------------------------------------------------------------------------


def test_trial_bytes_counts_stacks_and_bookkeeping() -> None:
    assert trial_bytes(1000, 3, "float64", "noise") == (4 * 1000 * 3 * 8, 1024 * 1000)
    assert trial_bytes(1000, 3, torch.float32, "retrain") == (9 * 1000 * 3 * 4, 10 * 1024 * 1000)
    with pytest.raises(InvalidInput) as info:
        trial_bytes(10, 3, "float64", "auto")
    assert info.value.field == "trial_mode"


def test_estimate_covers_what_a_trial_set_holds() -> None:
    """The estimate's parameter stacks are never below the tensors a trial set really keeps
    (counted exactly by their bytes; a process's peak RSS is too noisy to test against)."""
    from audit.trials import noise_trials

    n, d = 2000, 200
    ts = noise_trials(torch.zeros(d, dtype=torch.float64), torch.ones(d, dtype=torch.float64), 1.0, n, 0)
    held = sum(t.numel() * t.element_size() for t in (ts.unlearned, ts.retrained, ts.original))
    stacks, bookkeeping = trial_bytes(n, d, "float64", "noise")
    assert held <= stacks and bookkeeping > 0


# -- refusing and passing -----------------------------------------------------------------------


def test_a_modest_request_passes() -> None:
    check_trial_memory(trials=1000, n_params=3, dtype="float64", mode="noise", host=lambda: 1024 * MIB)
    check_trial_memory(trials=200, n_params=10_000, dtype="float32", mode="retrain", shadow_models=16,
                       host=lambda: 1024 * MIB)


def test_too_many_trials_are_refused_with_needed_and_available_bytes() -> None:
    per_trial = STACKS["noise"] * 3 * 8 + PER_TRIAL_OVERHEAD["noise"]  # 1,120 bytes
    with pytest.raises(InvalidInput) as info:
        check_trial_memory(trials=10_000_000, n_params=3, dtype="float64", mode="noise", host=lambda: 64 * MIB)
    err = info.value
    assert err.field == "trials" and err.got == 10_000_000
    assert err.allowed.startswith(f"at most {64 * MIB // per_trial:,} on this machine (needs ")
    assert "10.4 GiB for 10,000,000 trials per world" in err.allowed  # 1e7 x 1,120 bytes
    assert "64 MiB available on the host" in err.allowed
    assert "Lower --trials" in str(err)


def test_the_largest_count_that_fits_passes_and_one_more_does_not() -> None:
    per_trial = sum(trial_bytes(1, 50, "float32", "retrain"))
    free = 1000 * per_trial + per_trial // 2
    check_trial_memory(trials=1000, n_params=50, dtype="float32", mode="retrain", host=lambda: free)
    with pytest.raises(InvalidInput, match="at most 1,000 on this machine"):
        check_trial_memory(trials=1001, n_params=50, dtype="float32", mode="retrain", host=lambda: free)


def test_shadow_models_share_the_budget() -> None:
    per_trial = sum(trial_bytes(1, 1000, "float64", "noise"))
    free = 600 * per_trial
    with pytest.raises(InvalidInput) as info:
        check_trial_memory(trials=500, n_params=1000, dtype="float64", mode="noise", shadow_models=200,
                           host=lambda: free)
    assert info.value.field == "shadow_models" and info.value.got == 200
    assert info.value.allowed.startswith("at most 100 on this machine next to 500 trials per world")
    check_trial_memory(trials=500, n_params=1000, dtype="float64", mode="noise", shadow_models=100,
                       host=lambda: free)


def test_a_count_sized_from_the_ceiling_names_target_ceiling() -> None:
    with pytest.raises(InvalidInput) as info:
        check_trial_memory(trials=50_000, n_params=3, dtype="float64", mode="noise", host=lambda: MIB,
                           trials_field="target_ceiling", ceiling=12.0)
    assert info.value.field == "target_ceiling" and info.value.got == 12.0
    assert "not one that needs 50,000" in info.value.allowed and "Lower --target-ceiling" in str(info.value)


def test_gpu_stacks_are_checked_against_the_gpu() -> None:
    # stacks on the GPU, bookkeeping on the host: 1e6 params x 4 stacks x 4 bytes = 16 MB a trial
    with pytest.raises(InvalidInput) as info:
        check_trial_memory(trials=1000, n_params=10**6, dtype="float32", mode="noise", device="cuda",
                           host=lambda: 10**12, gpu=lambda device: 8 * 2**30)
    assert "at most 536 on this machine" in info.value.allowed and "on the GPU cuda" in info.value.allowed
    # the same request on the CPU fits in the host's terabyte
    check_trial_memory(trials=1000, n_params=10**6, dtype="float32", mode="noise", device="cpu",
                       host=lambda: 10**12, gpu=lambda device: 8 * 2**30)


# -- before training, and before the trial stage ----------------------------------------------


def test_precheck_run_before_training(monkeypatch: pytest.MonkeyPatch) -> None:
    from audit.config import AuditConfig
    from audit.attacking import precheck_run

    monkeypatch.setattr(memory, "available_bytes", lambda: 64 * MIB)
    with pytest.raises(InvalidInput) as info:
        precheck_run(AuditConfig(trials=10_000_000), n_params=3)
    assert info.value.field == "trials"
    precheck_run(AuditConfig(trials=1000), n_params=3)  # the defaults fit in 64 MiB
    precheck_run(AuditConfig(trials=10_000_000, attacks=()), n_params=3)  # no attack: no trials
    with pytest.raises(InvalidInput) as info:
        precheck_run(AuditConfig(target_ceiling=15.0), n_params=10**5)
    assert info.value.field == "target_ceiling"


def test_run_refuses_before_any_trial_is_drawn(monkeypatch: pytest.MonkeyPatch) -> None:
    import audit.attacking
    from audit.config import AuditConfig
    from audit.pipeline import run

    def no_trials(*args: object, **kwargs: object) -> None:
        raise AssertionError("trials were drawn before the memory check")

    monkeypatch.setattr(memory, "available_bytes", lambda: 16 * MIB)
    monkeypatch.setattr(audit.attacking, "make_trials", no_trials)
    config = AuditConfig(trials=1_000_000, attacks=("mia",), max_train=200, curve_points=2, noise_draws=2)
    with pytest.raises(InvalidInput) as info:
        run(config)
    assert info.value.field == "trials" and "16 MiB available" in info.value.allowed
