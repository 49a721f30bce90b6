"""Repeated timings (``timing_repeats``): each repeat on a fresh copy of the trained method, the
report's times the medians, the first run's result the one used."""

from __future__ import annotations

import logging
import statistics

import torch

import audit
from audit import AuditConfig
from audit.timing import timed

CPU = torch.device("cpu")


class Memo:
    """A method that remembers its work per forget set, as NGD and CNS do."""

    def __init__(self) -> None:
        self.cache: dict[str, torch.Tensor] = {}
        self.calls = 0

    def unlearn(self) -> torch.Tensor:
        self.calls += 1
        return self.cache.setdefault("forget set", torch.full((2,), float(self.calls)))


def test_each_repeat_runs_on_a_copy_of_the_method_as_it_was_before_the_first():
    method, seen = Memo(), []

    def call(m: Memo) -> torch.Tensor:
        seen.append((id(m), len(m.cache)))
        return m.unlearn()

    result, seconds = timed(call, method, 3, CPU)
    assert len(seconds) == 3 and all(s >= 0 for s in seconds)
    assert seen[0][0] == id(method) and len({i for i, _ in seen}) == 3  # the first on the method, then copies
    assert [n for _, n in seen] == [0, 0, 0]  # no repeat finds the work of another in its cache
    assert torch.equal(result, torch.ones(2)) and method.calls == 1 and method.cache  # the method's own run is kept
    assert len(timed(call, Memo(), 1, CPU)[1]) == 1


def test_a_repeat_that_gives_another_model_is_logged_and_never_used(caplog):
    outputs = iter([torch.zeros(2), torch.zeros(2), torch.ones(2)])
    with caplog.at_level(logging.WARNING, logger="unlearn_audit.pipeline"):
        result, _ = timed(lambda m: next(outputs), Memo(), 3, CPU)
    assert torch.equal(result, torch.zeros(2))
    assert "timing repeat 3 of 3 gave another model than the first" in caplog.text


def test_a_method_that_cannot_be_copied_is_timed_once_and_the_log_says_so(caplog):
    import threading

    method = Memo()
    method.lock = threading.Lock()  # deepcopy refuses it
    with caplog.at_level(logging.WARNING, logger="unlearn_audit.pipeline"):
        result, seconds = timed(lambda m: m.unlearn(), method, 3, CPU)
    assert len(seconds) == 1 and torch.equal(result, torch.ones(2)) and "timed once" in caplog.text


def test_the_reports_times_are_the_medians_of_every_repeat():
    report = audit.run(
        AuditConfig(
            method="newton", max_train=300, attacks=(), noise_draws=2, curve_points=2, frontier=(), timing_repeats=5
        )
    )
    t = report.timings
    assert len(t.unlearn_repeats_s) == len(t.retrain_repeats_s) == 5 and report.config.timing_repeats == 5
    assert t.unlearn_s == statistics.median(t.unlearn_repeats_s)
    assert t.retrain_s == statistics.median(t.retrain_repeats_s)
    assert t.speedup_vs_retrain == t.retrain_s / t.unlearn_s


def test_repeats_stop_once_the_runs_took_long_enough(monkeypatch):
    """A run of TIMING_ENOUGH_S or more is timed once; shorter runs are repeated until they add up."""
    from audit import timing

    clock = iter(float(t) for t in range(0, 1000, 1))
    monkeypatch.setattr(timing.time, "perf_counter", lambda: next(clock) * 6.0)  # each run: 6 s
    _, seconds = timed(lambda m: m.unlearn(), Memo(), 3, CPU)
    assert seconds == [6.0, 6.0]  # 6 s < 10 s: once more; 12 s >= 10 s: enough
    clock = iter(float(t) for t in range(0, 1000, 1))
    monkeypatch.setattr(timing.time, "perf_counter", lambda: next(clock) * 0.5)
    assert len(timed(lambda m: m.unlearn(), Memo(), 3, CPU)[1]) == 3
