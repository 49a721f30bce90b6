"""Sharded trials (audit.shards, audit.runstore, audit.executors): the same scores and bounds
whatever the shard size, a resumable run directory, and bad execution settings refused."""

from __future__ import annotations

import json
import logging

import numpy as np
import pytest

import audit
from audit.config import AuditConfig
from audit.executors import LocalExecutor, ShardFailed, execute, make_executor
from audit.progress import Throughput
from audit.runstore import MANIFEST, RunStore
from audit.shards import Shard, plan_shards, round_to_granule
from certify.errors import InvalidInput

SALT = b"s" * 32
#: Small audits: noise mode (R2D's output noise) and retrain mode (every trial a training, with
#: U-LiRA's shadow models), on 400 Adult records.
NOISE = dict(max_train=400, steps=20, trials=150, curve_points=2, noise_draws=2)
RETRAIN = dict(NOISE, trials=100, trial_mode="retrain", shadow_models=8)


def _attacks(**config) -> tuple[str, dict]:
    """The attacks section without its execution block (as sorted JSON), and that block."""
    section = audit.run(AuditConfig(**config), salt=SALT).to_json_dict()["attacks"]
    execution = section.pop("execution")
    return json.dumps(section, sort_keys=True), execution


@pytest.fixture(scope="module")
def noise_reference():
    return _attacks(**NOISE)


@pytest.fixture(scope="module")
def retrain_reference():
    return _attacks(**RETRAIN)


def test_one_shard_by_default_locally(noise_reference):
    _, execution = noise_reference
    assert execution["executor"] == "local" and execution["workers"] == 1 and execution["resumed"] == []
    assert execution["shards"] == 2  # trials and U-LiRA's shadows, one shard each
    assert "cost" not in execution  # noise draws: no trainings to estimate


@pytest.mark.parametrize("size", [1, 64, 100])
def test_noise_mode_scores_and_bounds_do_not_depend_on_the_shard_size(noise_reference, size, monkeypatch):
    """Blocks of 64 models (the reference computes its 150 in one block of NOISE_GRANULE): neither the
    shard layout nor the block size changes a byte."""
    monkeypatch.setattr("audit.attacking.NOISE_GRANULE", 64)
    got, execution = _attacks(**NOISE, shard_size=size)
    assert execution["shard_size"] % 64 == 0 or execution["shard_size"] % 75 == 0
    assert execution["shards"] > 2
    assert got == noise_reference[0]


def test_retrain_mode_scores_and_bounds_do_not_depend_on_the_shard_size(retrain_reference):
    got, execution = _attacks(**RETRAIN, shard_size=64)
    assert execution["shards"] == 3  # trials [0, 75) and [75, 100), shadows [0, 8)
    assert "cost" not in execution  # batched trainings: the single timing does not price a trial
    assert got == retrain_reference[0]


def test_a_resumed_run_skips_finished_shards_and_equals_an_uninterrupted_one(tmp_path, retrain_reference, caplog):
    run_dir = tmp_path / "run"
    first, execution = _attacks(**RETRAIN, shard_size=64, resume=str(run_dir))
    assert first == retrain_reference[0] and execution["resumed"] == []
    files = sorted(p.name for p in run_dir.glob("*.npz"))
    assert len(files) == 3 and (run_dir / MANIFEST).exists()
    (run_dir / files[0]).unlink()  # as if the run had been killed before this shard finished
    with caplog.at_level(logging.INFO, logger="unlearn_audit"):
        again, execution = _attacks(**RETRAIN, shard_size=64, resume=str(run_dir))
    assert again == retrain_reference[0]
    assert len(execution["resumed"]) == 2
    assert "skipped: " + ", ".join(execution["resumed"]) in caplog.text


def test_a_run_directory_of_another_configuration_is_refused(tmp_path):
    run_dir = tmp_path / "run"
    _attacks(**NOISE, resume=str(run_dir))
    with pytest.raises(InvalidInput, match="resume must be the run directory of this configuration"):
        _attacks(**dict(NOISE, seed=1), resume=str(run_dir))


def test_an_unreadable_shard_is_computed_again(tmp_path, noise_reference, caplog):
    run_dir = tmp_path / "run"
    _attacks(**NOISE, shard_size=64, resume=str(run_dir))
    victim = sorted(run_dir.glob("*trials-0-*.npz"))[0]
    victim.write_bytes(b"not a zip file")
    with caplog.at_level(logging.INFO, logger="unlearn_audit"):
        got, execution = _attacks(**NOISE, shard_size=64, resume=str(run_dir))
    assert got == noise_reference[0]
    assert "could not be read back" in caplog.text and victim.name not in execution["resumed"]
    assert np.load(victim)  # replaced by a whole shard


def test_run_store_refusals(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(InvalidInput, match="resume must be a directory"):
        RunStore(tmp_path / "file", "k" * 64)
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "notes.txt").write_text("mine")
    with pytest.raises(InvalidInput, match="a new or empty directory"):
        RunStore(busy, "k" * 64)
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / MANIFEST).write_text("{")
    with pytest.raises(InvalidInput, match="unreadable or of another format"):
        RunStore(broken, "k" * 64)


def test_run_store_round_trip_is_atomic_and_exact(tmp_path):
    store = RunStore(tmp_path / "run", "a" * 64)
    shard = Shard("trials", 64, 128)
    result = {"path": np.array("vmap"), "mia|game|unlearned|loss": np.arange(64, dtype=np.float64) / 3}
    assert store.load(shard) is None
    store.save(shard, result)
    back = store.load(shard)
    assert set(back) == set(result) and all(np.array_equal(back[k], result[k]) for k in result)
    assert [p.name for p in (tmp_path / "run").iterdir() if p.name.startswith(".partial")] == []


def test_shard_plan():
    assert plan_shards("trials", 150, 64, 64) == [
        Shard("trials", 0, 64),
        Shard("trials", 64, 128),
        Shard("trials", 128, 150),
    ]
    assert round_to_granule(1, 75) == 75 and round_to_granule(76, 75) == 150
    with pytest.raises(InvalidInput, match="shard_size must be a positive multiple of 64"):
        plan_shards("trials", 150, 100, 64)


@pytest.mark.parametrize(
    "config, field",
    [
        (dict(executor="threads"), "executor"),
        (dict(ray_address="127.0.0.1:6379"), "ray_address"),
        (dict(executor="local", workers=2), "workers"),
        (dict(executor="processes", workers=0), "workers"),
        (dict(shard_size=0), "shard_size"),
    ],
)
def test_bad_execution_settings_name_the_field(config, field):
    with pytest.raises(InvalidInput) as caught:
        AuditConfig(**config)
    assert caught.value.field == field


def test_make_executor():
    assert make_executor("local", None).workers == 1
    assert make_executor("processes", 3).workers == 3
    assert make_executor("ray", 2, device="cuda").gpus_per_shard == 1.0
    with pytest.raises(InvalidInput, match="ray_address must be used only with executor = ray"):
        make_executor("processes", 2, address="auto")


class _Flaky:
    """An executor whose worker fails a set number of times on one shard."""

    workers = 1

    def __init__(self, shard: Shard, failures: int) -> None:
        self.shard, self.failures = shard, failures

    def run(self, ctx, shards, done):
        from audit.executors import _retry_or_fail

        for shard in shards:
            attempts = 0
            while shard == self.shard and attempts < self.failures:
                attempts += 1
                _retry_or_fail(shard, attempts, RuntimeError("worker lost"))
            done(shard, {"path": np.array("noise"), "x": np.zeros(shard.size)})


def test_a_failed_shard_is_retried_then_reported_by_name(caplog):
    shards = plan_shards("trials", 128, 64, 64)
    with caplog.at_level(logging.WARNING, logger="unlearn_audit"):
        results, _ = execute(None, shards, _Flaky(shards[1], failures=1))
    assert (
        set(results) == set(shards)
        and "trials[64:128) failed (RuntimeError: worker lost); running it again" in caplog.text
    )
    with pytest.raises(ShardFailed, match=r"shard trials\[64:128\) failed 2 times; last error: RuntimeError"):
        execute(None, shards, _Flaky(shards[1], failures=2))


def test_progress_reports_shards_and_a_rate():
    clock = iter([0.0, 2.0, 2.0, 4.0, 4.0])
    meter = Throughput(clock=lambda: next(clock))
    calls = []

    def tick(stage, done, total):
        meter.update(stage, done, total)
        calls.append((stage, done, total))

    shards = plan_shards("trials", 128, 64, 64)
    execute(None, shards, _Flaky(None, 0), tick=tick)
    assert calls == [("shards", 0, 2), ("trials", 64, 128), ("shards", 1, 2), ("trials", 128, 128), ("shards", 2, 2)]
    assert meter.line().startswith("shards 2/2 · models 128/128 · ")
    assert meter.eta == 0


def test_resumed_shards_are_reported_once_and_the_rate_counts_only_computed_ones(tmp_path):
    shards = plan_shards("trials", 4, 1, 1)  # one trial per shard, as the caller's code runs
    store = RunStore(tmp_path / "run", "k" * 64)
    for shard in shards[:3]:
        store.save(shard, {"path": np.array("loop"), "x": np.zeros(1)})
    clock = iter([0.0, 5.0])
    meter = Throughput(clock=lambda: next(clock))
    calls = []

    def tick(stage, done, total):
        meter.update(stage, done, total)
        calls.append((stage, done, total))

    execute(None, shards, _Flaky(None, 0), store=store, tick=tick)
    assert [c for c in calls if c[0] == "shards"] == [("shards", 3, 4), ("shards", 4, 4)]
    assert meter.rate == 1 / 5  # the one computed trial in 5 s, not the three read back


def test_local_executor_is_the_default_path():
    assert isinstance(make_executor("local", 1), LocalExecutor)
