"""How many CPU threads an audit uses (torch's, and the BLAS threads of NumPy/SciPy behind
scikit-learn), chosen deliberately and recorded in the report.

Most audits solve tiny problems: the default one is a 3-parameter logistic regression on
34,190 records, whose full-batch gradient is well under a millisecond of work. Splitting such a
product over two OpenMP threads gains nothing and, on a machine with other busy processes, the
idle thread spin-waits for the busy one. Measured here (2 cores, load average 5) on 34,190
records: a 101-parameter logistic regression's gradient took 13 ms wall / 6.5 ms CPU at one
thread and 64 ms / 35 ms at two; a 3,265-parameter MLP 111 ms / 54 ms against 564 ms / 334 ms.
With ``OMP_WAIT_POLICY=PASSIVE`` the two counts cost the same (11 ms and 117–128 ms). Issue 14
measured ``--attacks none`` at 139 s CPU with two threads against 8.3 s with one.

So ``threads = "auto"`` (the default) uses **one** thread when one pass over the data is small,
``n_records × n_params < AUTO_PARALLEL_WORK``, and otherwise every CPU this process may use
(its affinity mask and cgroup quota, not the host's count). The command line also sets
``OMP_WAIT_POLICY=PASSIVE`` before torch is imported (unless the user set it), so threads that
wait sleep instead of spinning; a library caller controls that variable themselves (it must be
set before torch is imported), and the report records it either way.

The pipeline applies the choice for the run and restores the caller's count after it.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Any

from certify.errors import Choice, Constraint, Integer, OneOf

#: Records × parameters of one data pass above which ``auto`` uses every available CPU: 2^25
#: (≈ 3.4e7). The default logistic regression (3.5e6) stays at one thread; an MLP of a few
#: thousand parameters on Adult (1.1e8) or the built-in CNN on MNIST gets them all, where a
#: gradient takes tens of milliseconds and the second core pays for its synchronisation.
AUTO_PARALLEL_WORK = 2**25


@dataclass(frozen=True)
class ThreadCount(OneOf):
    """``"auto"`` or a whole number of threads ≥ 1; the command line's digit string is a number."""

    alternatives: tuple[Constraint, ...] = (Choice(("auto",)), Integer(1, 4096))

    def check(self, field: str, value: Any) -> Any:
        if isinstance(value, str) and value.strip().isdigit():
            value = int(value)
        return super().check(field, value)

    def invalid(self) -> tuple:
        return (0, -1, "two", 1.5, None, True, "")


def available_cpus() -> int:
    """CPUs this process may run on: the affinity mask, capped by a cgroup v2 CPU quota."""
    try:
        count = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        count = os.cpu_count() or 1
    try:
        with open("/sys/fs/cgroup/cpu.max", encoding="ascii") as fh:
            quota, period = fh.read().split()[:2]
        if quota != "max":
            count = min(count, max(1, math.floor(int(quota) / int(period))))
    except (OSError, ValueError):
        pass
    return max(1, count)


def choose(requested: Any, n_records: int, n_params: int) -> tuple[int, str]:
    """The thread count for ``requested`` (``"auto"`` or a count) and why, for the report."""
    if requested != "auto":
        return int(requested), f"{int(requested)} as configured (threads = {int(requested)})"
    work = int(n_records) * int(n_params)
    if work < AUTO_PARALLEL_WORK:
        return 1, (
            f"auto: 1 thread, because one pass over the data is small ({n_records:,} records x "
            f"{n_params:,} parameters < {AUTO_PARALLEL_WORK:,}): a second thread gains nothing there "
            "and spin-waits on a busy machine"
        )
    cpus = available_cpus()
    return cpus, (
        f"auto: {cpus} thread(s), every CPU this process may use ({n_records:,} records x "
        f"{n_params:,} parameters >= {AUTO_PARALLEL_WORK:,})"
    )


def use_threads(count: int) -> None:
    """torch's intra-op threads and NumPy/SciPy's BLAS threads (through threadpoolctl, which
    scikit-learn depends on) set to ``count``. BLAS threads spin too: with one per core on a busy
    2-core machine, one L-BFGS fit of the membership-inference attack took 4 ms per iteration
    instead of 0.1 ms (measured while building the test suite's fast lane)."""
    import torch
    from threadpoolctl import threadpool_limits

    torch.set_num_threads(int(count))
    threadpool_limits(limits=int(count), user_api="blas")


def wait_policy() -> str | None:
    """``OMP_WAIT_POLICY`` as this process sees it (None when unset: the runtime's default)."""
    return os.environ.get("OMP_WAIT_POLICY")
