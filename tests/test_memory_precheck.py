"""The memory pre-check (issue 13): a trial count that cannot fit is refused before any work,
with the bytes needed and the bytes available; what fits passes."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from audit import memory
from audit.memory import (
    ACTIVATION_COPIES,
    BOOTSTRAP_ARRAYS,
    DEVICE_PER_RECORD,
    DEVICE_PER_TRIAL,
    FIXED_BYTES,
    HELD_STACKS,
    HOST_PER_RECORD,
    HOST_PER_TRIAL,
    RELEARN_CHUNK,
    RELEARN_STACKS,
    TRAINING_STACKS,
    activation_width,
    available_bytes,
    check_trial_memory,
    trial_bytes,
)
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


def test_trial_bytes_counts_every_term() -> None:
    """The formula of the module docstring, term by term (noise mode, logistic-regression size)."""
    n, d, m, w = 1000, 3, 5, 2
    device, host = trial_bytes(n, d, "float64", "noise", forget_size=m, width=w)
    stacks = HELD_STACKS["noise"] * n * d * 8 + max(n * d * 8, RELEARN_STACKS * n * d * 8)
    activations = ACTIVATION_COPIES * n * m * w * 8  # all 1000 models evaluated at once
    assert device == stacks + activations + n * (DEVICE_PER_TRIAL + DEVICE_PER_RECORD * m) * 8
    bootstrap = BOOTSTRAP_ARRAYS * min(200 * n, 1_000_000) * 8  # the effect size's resamples
    assert host == n * (HOST_PER_TRIAL + HOST_PER_RECORD * m) * 8 + FIXED_BYTES + bootstrap
    # float32 parameters halve the device terms, not the host's float64 scores
    device32, host32 = trial_bytes(n, d, torch.float32, "noise", forget_size=m, width=w)
    assert device32 * 2 == device and host32 == host
    # relearn fine-tunes at most RELEARN_CHUNK models at once: its stacks stop growing there
    big = 10 * RELEARN_CHUNK
    grown = trial_bytes(big, 1000, "float64", "noise")[0] - trial_bytes(big - 1, 1000, "float64", "noise")[0]
    # (the white-box stack, not relearn's, grows; and the activations of one more model of width 1)
    per_trial_values = DEVICE_PER_TRIAL + DEVICE_PER_RECORD + ACTIVATION_COPIES
    assert grown == (HELD_STACKS["noise"] + 1) * 1000 * 8 + per_trial_values * 8
    # on a GPU the noise is drawn on the host first: one stack more there
    on_host = trial_bytes(n, d, "float64", "noise")[1]
    assert trial_bytes(n, d, "float64", "noise", device="cuda")[1] == on_host + n * d * 8
    with pytest.raises(InvalidInput) as info:
        trial_bytes(10, 3, "float64", "auto")
    assert info.value.field == "trial_mode"


def test_retrain_mode_counts_the_training_phase() -> None:
    n, d, records, w = 200, 50, 3000, 8
    device, _ = trial_bytes(n, d, "float64", "retrain", width=w, train_records=records)
    training = TRAINING_STACKS * n * d * 8 + ACTIVATION_COPIES * 16 * records * w * 8  # ROW_BLOCK = 16 models
    attacks = trial_bytes(n, d, "float64", "retrain", width=w)[0]  # no training records: the attack phase
    assert device == max(training, attacks) and device > trial_bytes(n, d, "float64", "noise", width=w)[0]


def test_estimate_grows_with_the_forget_set_and_the_width() -> None:
    base = sum(trial_bytes(5000, 10, "float64", "noise"))
    assert sum(trial_bytes(5000, 10, "float64", "noise", forget_size=100)) - base >= 5000 * 99 * HOST_PER_RECORD * 8
    assert sum(trial_bytes(5000, 10, "float64", "noise", width=64)) - base == ACTIVATION_COPIES * 5000 * 63 * 8


def test_activation_width() -> None:
    from unlearners.models import build_model
    from unlearners.objective import Objective

    X = torch.zeros(4, 6, dtype=torch.float64)
    assert activation_width(Objective(build_model("logreg", 6, 2).double()), X) == 6  # the input
    assert activation_width(Objective(build_model("mlp", 6, 2, hidden=(40, 9)).double()), X) == 40
    assert activation_width(Objective(build_model("logreg", 6, 30).double()), X) == 30  # the outputs


def test_estimate_covers_what_a_trial_set_holds() -> None:
    """The estimate's parameter stacks are never below the tensors a trial set really keeps
    (counted exactly by their bytes)."""
    from audit.trials import noise_trials

    n, d = 2000, 200
    ts = noise_trials(torch.zeros(d, dtype=torch.float64), torch.ones(d, dtype=torch.float64), 1.0, n, 0)
    held = sum(t.numel() * t.element_size() for t in (ts.unlearned, ts.retrained, ts.original))
    on_device, on_host = trial_bytes(n, d, "float64", "noise")
    assert held <= HELD_STACKS["noise"] * n * d * 8 <= on_device and on_host > 0


# -- the estimate against measured peaks ------------------------------------------------------


def _torch_cpu_peak(prof) -> int:
    """The largest sum of live bytes of the torch CPU allocations in a profile (its memory events,
    in time order: an allocation adds its bytes, a free subtracts them)."""
    events = [
        e
        for e in prof.profiler.kineto_results.events()
        if e.name() == "[memory]" and e.device_type() == torch.autograd.DeviceType.CPU
    ]
    live = peak = 0
    for e in sorted(events, key=lambda e: e.start_ns()):
        live += e.nbytes()
        peak = max(peak, live)
    return peak


def _measured_stage(config, monkeypatch: pytest.MonkeyPatch) -> tuple[dict, tuple[int, int]]:
    """Peak memory of the trial and attack stage of one audit, and its estimate.

    The audit runs once as usual (its attack stage is the warm-up: imports, scikit-learn, kernels
    and caches are loaded then), then the same stage runs again with its inputs and is measured:
    Python and numpy allocations by tracemalloc (numpy registers its buffers there), torch CPU
    allocations (which tracemalloc does not see) by the profiler's memory events. Both count
    only what is allocated during the stage. Their peaks may fall at different moments, so their
    sum is at least the true combined peak (and at most twice it)."""
    import gc
    import tracemalloc

    from torch.profiler import ProfilerActivity, profile

    import audit.pipeline as pipeline

    captured: dict = {}
    real = pipeline.run_attacks

    def capture(setup, **kwargs):
        captured.update(setup=setup, kwargs=kwargs)
        return real(setup, **kwargs)

    monkeypatch.setattr(pipeline, "run_attacks", capture)
    pipeline.run(config)
    setup, kwargs = captured["setup"], captured["kwargs"]
    gc.collect()
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        tracemalloc.start()  # inside the profiler: its own bookkeeping at exit is not counted
        try:
            real(setup, **kwargs)
            python_peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    plan = kwargs["plan"]
    estimate = trial_bytes(
        plan.n_trials + kwargs["shadow_models_"],
        setup.theta_original.numel(),
        setup.theta_original.dtype,
        plan.mode,
        forget_size=setup.forget.numel(),
        width=activation_width(setup.objective, setup.X),
        train_records=setup.X.shape[0],
    )
    return {"python": python_peak, "torch": _torch_cpu_peak(prof), "mode": plan.mode}, estimate


@pytest.mark.slow
@pytest.mark.parametrize(
    "options",
    [
        pytest.param(dict(trials=2000), id="logreg-2k"),
        pytest.param(dict(trials=20000), id="logreg-20k"),
        pytest.param(dict(trials=4000, forget_count=10), id="logreg-4k-forget-10"),
        pytest.param(dict(trials=2000, model="mlp", hidden=(8,), dtype="float32"), id="mlp8-2k-float32"),
        pytest.param(dict(trials=10000, model="mlp", hidden=(8,)), id="mlp8-10k"),
        pytest.param(dict(trials=300, method="retrain", max_train=300), id="retrain-logreg-300"),
        pytest.param(
            dict(trials=100, method="retrain", max_train=200, model="mlp", hidden=(8,)), id="retrain-mlp8-100"
        ),
    ],
)
def test_estimate_is_an_upper_bound_within_3x_of_the_measured_peak(options, monkeypatch) -> None:
    from audit.config import AuditConfig

    config = AuditConfig(**{"max_train": 2000, "curve_points": 2, "noise_draws": 2, **options})
    measured, (on_device, on_host) = _measured_stage(config, monkeypatch)
    assert measured["mode"] == ("retrain" if options.get("method") == "retrain" else "noise")
    total = measured["python"] + measured["torch"]
    assert on_device + on_host >= total
    assert on_device + on_host <= 3 * total
    # each side on its own, for the GPU split: torch's tensors where the parameters live, the
    # numpy scores and bounds on the host
    assert on_device >= measured["torch"] and on_host >= measured["python"]


# -- refusing and passing -----------------------------------------------------------------------


def test_a_modest_request_passes() -> None:
    check_trial_memory(trials=1000, n_params=3, dtype="float64", mode="noise", host=lambda: 1024 * MIB)
    check_trial_memory(
        trials=200, n_params=10_000, dtype="float32", mode="retrain", shadow_models=16, host=lambda: 1024 * MIB
    )


def _needed(n: int, **kw) -> int:
    return sum(trial_bytes(n, **kw))


def test_too_many_trials_are_refused_with_needed_and_available_bytes() -> None:
    shape = dict(n_params=3, dtype="float64", mode="noise")
    with pytest.raises(InvalidInput) as info:
        check_trial_memory(trials=10_000_000, **shape, host=lambda: 64 * MIB)
    err = info.value
    assert err.field == "trials" and err.got == 10_000_000
    fits = int(err.allowed.split("at most ")[1].split(" on this machine")[0].replace(",", ""))
    assert _needed(fits, **shape) <= 64 * MIB < _needed(fits + 1, **shape)  # the largest count that fits
    assert err.allowed.startswith(f"at most {fits:,} on this machine (needs ")
    # 10 M trials: 3 held stacks and one transient of 24 bytes, activations of 2**20 models of
    # width 1, 8 device values and 96 host values of 8 bytes per trial, 512 KiB fixed, the effect
    # size's bootstrap (6 arrays of one resample of 10^7 float64 scores): 9.37 GiB
    needed = 4 * 24 * 10**7 + ACTIVATION_COPIES * 2**20 * 8 + 8 * 8 * 10**7 + 96 * 8 * 10**7 + FIXED_BYTES
    needed += BOOTSTRAP_ARRAYS * 10**7 * 8
    assert needed == _needed(10_000_000, **shape)
    assert f"{needed / 2**30:.3g} GiB for 10,000,000 trials per world" in err.allowed
    assert "64 MiB available on the host" in err.allowed
    assert "Lower --trials" in str(err)


def test_the_largest_count_that_fits_passes_and_one_more_does_not() -> None:
    shape = dict(n_params=50, dtype="float32", mode="retrain")
    free = (_needed(1000, **shape) + _needed(1001, **shape)) // 2
    check_trial_memory(trials=1000, **shape, host=lambda: free)
    with pytest.raises(InvalidInput, match="at most 1,000 on this machine"):
        check_trial_memory(trials=1001, **shape, host=lambda: free)


def test_shadow_models_share_the_budget() -> None:
    shape = dict(n_params=1000, dtype="float64", mode="noise")
    free = _needed(600, **shape)
    with pytest.raises(InvalidInput) as info:
        check_trial_memory(trials=500, **shape, shadow_models=200, host=lambda: free)
    assert info.value.field == "shadow_models" and info.value.got == 200
    assert info.value.allowed.startswith("at most 100 on this machine next to 500 trials per world")
    check_trial_memory(trials=500, **shape, shadow_models=100, host=lambda: free)


def test_the_forget_set_size_is_part_of_the_check() -> None:
    shape = dict(n_params=3, dtype="float64", mode="noise")
    free = _needed(100_000, **shape)
    check_trial_memory(trials=100_000, **shape, host=lambda: free)
    with pytest.raises(InvalidInput, match="per-record values"):  # 500 forgotten records: ~100 KB a trial more
        check_trial_memory(trials=100_000, **shape, forget_size=500, host=lambda: free)


def test_a_count_sized_from_the_ceiling_names_target_ceiling() -> None:
    with pytest.raises(InvalidInput) as info:
        check_trial_memory(
            trials=50_000,
            n_params=3,
            dtype="float64",
            mode="noise",
            host=lambda: MIB,
            trials_field="target_ceiling",
            ceiling=12.0,
        )
    assert info.value.field == "target_ceiling" and info.value.got == 12.0
    assert "not one that needs 50,000" in info.value.allowed and "Lower --target-ceiling" in str(info.value)


def test_gpu_stacks_are_checked_against_the_gpu() -> None:
    # stacks on the GPU, scores on the host: 1e6 params x 4 bytes, 3 held stacks and relearn's 4
    # working ones for up to 4,096 models: 28 MB a trial on the GPU
    with pytest.raises(InvalidInput) as info:
        check_trial_memory(
            trials=1000,
            n_params=10**6,
            dtype="float32",
            mode="noise",
            device="cuda",
            host=lambda: 10**12,
            gpu=lambda device: 8 * 2**30,
        )
    fits = int(info.value.allowed.split("at most ")[1].split(" on this machine")[0].replace(",", ""))
    on_gpu = [trial_bytes(n, 10**6, "float32", "noise", device="cuda")[0] for n in (fits, fits + 1)]
    assert on_gpu[0] <= 8 * 2**30 < on_gpu[1] and 250 < fits < 320
    assert "on the GPU cuda" in info.value.allowed
    # the same request on the CPU fits in the host's terabyte
    check_trial_memory(
        trials=1000,
        n_params=10**6,
        dtype="float32",
        mode="noise",
        device="cpu",
        host=lambda: 10**12,
        gpu=lambda device: 8 * 2**30,
    )


# -- before training, and before the trial stage ----------------------------------------------


def test_precheck_run_before_training(monkeypatch: pytest.MonkeyPatch) -> None:
    from audit.attacking import precheck_run
    from audit.config import AuditConfig

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
    import audit.trials
    from audit.config import AuditConfig
    from audit.pipeline import run

    def no_trials(*args: object, **kwargs: object) -> None:
        raise AssertionError("trials were drawn before the memory check")

    monkeypatch.setattr(memory, "available_bytes", lambda: 16 * MIB)
    monkeypatch.setattr(audit.trials, "make_trials", no_trials)
    config = AuditConfig(trials=1_000_000, attacks=("mia",), max_train=200, curve_points=2, noise_draws=2)
    with pytest.raises(InvalidInput) as info:
        run(config)
    assert info.value.field == "trials" and "16 MiB available" in info.value.allowed
