"""Throughput of a long audit: models per second and the time left, from the progress callback.

The pipeline reports ``progress(stage, done, total)``; while the trials run it reports stage
``"shards"`` (finished shards of all) after every shard, and stages ``"trials"`` and
``"shadows"`` with the models made so far. :class:`Throughput` turns those calls into a rate
and an ETA, for the command line's progress display and for a library caller's own::

    meter = Throughput()
    def progress(stage, done, total):
        meter.update(stage, done, total)
        if stage == "shards":
            print(meter.line())
    audit.run(config, progress)

Shards read back from a run directory (``resume``) arrive at once before any is computed; the
rate counts only models computed in this run.
"""

from __future__ import annotations

import time
from collections.abc import Callable

#: The stages that count models.
MODEL_STAGES = ("trials", "shadows")


class Throughput:
    """Models per second and the ETA of the shard stage."""

    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        self.clock = clock
        self.done = {stage: 0 for stage in MODEL_STAGES}
        self.total = {stage: 0 for stage in MODEL_STAGES}
        self.shards = (0, 0)
        self.started: float | None = None
        self.baseline = 0

    def update(self, stage: str, done: int, total: int) -> None:
        if stage in MODEL_STAGES:
            self.done[stage], self.total[stage] = int(done), int(total)
        elif stage == "shards":
            if self.started is None:  # the first report: resumed shards are already counted
                self.started, self.baseline = self.clock(), self.models_done
            self.shards = (int(done), int(total))

    @property
    def models_done(self) -> int:
        return sum(self.done.values())

    @property
    def models_total(self) -> int:
        return sum(self.total.values())

    @property
    def rate(self) -> float | None:
        """Models computed per second in this run (None before the first shard is computed)."""
        if self.started is None:
            return None
        made, elapsed = self.models_done - self.baseline, self.clock() - self.started
        return made / elapsed if made > 0 and elapsed > 0 else None

    @property
    def eta(self) -> float | None:
        """Seconds until every model is made, at the current rate."""
        rate = self.rate
        return None if rate is None else (self.models_total - self.models_done) / rate

    def line(self) -> str:
        """``shards 3/16 · models 192/1016 · 41.2 models/s · eta 20s``."""
        parts = [f"shards {self.shards[0]}/{self.shards[1]}", f"models {self.models_done}/{self.models_total}"]
        rate, eta = self.rate, self.eta
        if rate is not None:
            parts.append(f"{rate:.3g} models/s")
        if eta is not None:
            parts.append(f"eta {eta:.0f}s")
        return " · ".join(parts)
