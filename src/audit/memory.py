"""Memory pre-checks: refuse, before the work starts, a trial count that cannot fit in memory.

``audit run --trials 10000000`` used to train, unlearn and measure for minutes and then die in
the trial stage with ``std::bad_alloc``. The memory of the trial stage is predictable from
numbers known before training (the trial count, the parameter count, the dtype, the trial mode
and the shadow models), so it is checked first, and a refusal says the bytes needed and the
bytes available (:class:`~certify.errors.InvalidInput` naming ``trials``, ``target_ceiling`` or
``shadow_models``).

What a trial holds (:mod:`audit.trials`, :mod:`audit.attacking`), per trial of a world set:

* **noise mode**: the three released stacks (unlearned, retrained, original), each (N, d), plus
  one row list while a stack is assembled: ``4·d·itemsize`` bytes;
* **retrain mode**: the initial points, the three noiseless worlds, the rewind checkpoint of the
  batched training, the three released stacks and a row list: ``9·d·itemsize`` bytes;

plus a per-trial bookkeeping cost that does not depend on d (per-row tensors and generators, the
attacks' score arrays, allocator slack). It was measured on CPU with the default attacks
(logistic regression on Adult, d = 3, 2k-100k trials): about 1.2-1.8 KiB per trial in noise
mode and 11-12 KiB in retrain mode; the constants below are rounded *down*, so the estimate
is a lower bound and the check never refuses a run that would have fitted. Shadow models are a
second trial set of the same mode, alive together with the first.

Where parameters live on a GPU the stacks are checked against the GPU's free memory and the
bookkeeping against the host's. Available host memory is ``MemAvailable`` of ``/proc/meminfo``
(else ``os.sysconf`` free pages), capped by the cgroup's limit less its usage when the process
runs in a memory-limited cgroup (a container), whichever is smaller. When none of these can be
read the check is skipped: refusing on a guess would be worse than the old failure.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from certify.errors import InvalidInput

#: Parameter stacks (N, d) alive at the peak of one trial set, by trial mode (see the module
#: docstring for what they are).
STACKS = {"noise": 4, "retrain": 9}
#: Bytes per trial that do not scale with d, rounded down from the measurements above.
PER_TRIAL_OVERHEAD = {"noise": 1024, "retrain": 10 * 1024}

_MEMINFO = Path("/proc/meminfo")
_CGROUP_V2 = Path("/sys/fs/cgroup")
_CGROUP_V1 = Path("/sys/fs/cgroup/memory")


def _read_int(path: Path) -> int | None:
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None  # "max" (no limit) and unreadable files: None


def _cgroup_room() -> int | None:
    """Bytes this cgroup may still allocate (its limit less its usage), or None without a limit."""
    for limit_file, usage_file in ((_CGROUP_V2 / "memory.max", _CGROUP_V2 / "memory.current"),
                                   (_CGROUP_V1 / "memory.limit_in_bytes", _CGROUP_V1 / "memory.usage_in_bytes")):
        limit = _read_int(limit_file)
        # cgroup v1 reports "no limit" as a huge number (a page-rounded 2**63 - 1)
        if limit is not None and limit < 2**60:
            usage = _read_int(usage_file) or 0
            return max(0, limit - usage)
    return None


def _host_available() -> int | None:
    """MemAvailable from /proc/meminfo, else the free physical pages from sysconf, else None."""
    try:
        for line in _MEMINFO.read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024  # the file says kB and means KiB
    except (OSError, ValueError, IndexError):
        pass
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (OSError, ValueError, AttributeError):
        return None


def available_bytes() -> int | None:
    """Host memory this process can still allocate, or None when it cannot be read (the caller
    then skips its check)."""
    known = [b for b in (_host_available(), _cgroup_room()) if b is not None]
    return min(known) if known else None


def device_available_bytes(device: torch.device | str) -> int | None:
    """Free memory of a CUDA device, or None for the CPU or when it cannot be read."""
    device = torch.device(device)
    if device.type != "cuda":
        return None
    try:
        return int(torch.cuda.mem_get_info(device)[0])
    except (RuntimeError, AssertionError):  # no driver, or a device that vanished
        return None


def _itemsize(dtype: torch.dtype | str) -> int:
    if isinstance(dtype, str):
        dtype = getattr(torch, dtype)
    return torch.empty((), dtype=dtype).element_size()


def trial_bytes(n_trials: int, n_params: int, dtype: torch.dtype | str, mode: str) -> tuple[int, int]:
    """(bytes of the parameter stacks, bytes of per-trial bookkeeping) of one trial set of
    ``n_trials`` trials in ``mode`` (``"noise"`` or ``"retrain"``): a lower estimate."""
    if mode not in STACKS:
        raise InvalidInput("trial_mode", "one of " + ", ".join(map(repr, STACKS)), mode)
    stacks = STACKS[mode] * int(n_trials) * int(n_params) * _itemsize(dtype)
    return stacks, PER_TRIAL_OVERHEAD[mode] * int(n_trials)


def _gib(n: float) -> str:
    return f"{n / 2**30:.3g} GiB" if n >= 2**30 else f"{n / 2**20:.3g} MiB"


def check_trial_memory(*, trials: int, n_params: int, dtype: torch.dtype | str, mode: str,
                       shadow_models: int = 0, device: torch.device | str = "cpu",
                       trials_field: str = "trials", ceiling: float | None = None,
                       host: Callable[[], int | None] | None = None,
                       gpu: Callable[[Any], int | None] | None = None) -> None:
    """Raise :class:`InvalidInput` when ``trials`` trials per world (and ``shadow_models``
    shadow models, a second trial set of the same mode) cannot fit in memory.

    The message gives the largest count that fits, the bytes needed and the bytes available.
    ``trials_field`` is the field the user set the count with (``"trials"``, or
    ``"target_ceiling"`` when the count was sized from ``ceiling``). ``host`` and ``gpu`` replace
    :func:`available_bytes` and :func:`device_available_bytes` (tests). Nothing is checked where
    the available memory cannot be read.
    """
    trials, shadow_models = int(trials), int(shadow_models)
    on_gpu = torch.device(device).type == "cuda"
    host_free = (host or available_bytes)()
    gpu_free = (gpu or device_available_bytes)(device) if on_gpu else None
    stack_1, book_1 = trial_bytes(1, n_params, dtype, mode)
    # the budget each trial draws on: stacks and bookkeeping on the host, or stacks on the GPU
    budgets = []
    if host_free is not None:
        budgets.append(("host", host_free, book_1 + (0 if on_gpu else stack_1)))
    if gpu_free is not None:
        budgets.append((f"GPU {device}", gpu_free, stack_1))
    itemsize = _itemsize(dtype)
    for where, free, per_trial in budgets:
        if per_trial <= 0:
            continue
        fits = free // per_trial  # trial sets (trials + shadows) that fit
        what = (f"{STACKS[mode]} parameter stacks of {n_params:,} x {itemsize} bytes"
                if where != "host" or not on_gpu else "")
        if where == "host":
            what = (what + " + " if what else "") + f"~{PER_TRIAL_OVERHEAD[mode] // 1024} KiB of bookkeeping"
        detail = f"{mode} mode, per trial: {what}"
        if trials > fits:
            hint = ("Lower --target-ceiling (it decides the trial count)" if trials_field == "target_ceiling"
                    else "Lower --trials") + ", or run on a machine with more memory."
            allowed = (f"at most {fits:,} on this machine" if trials_field == "trials"
                       else f"a ceiling reachable with at most {fits:,} trials per world on this machine, "
                       f"not one that needs {trials:,}")
            raise InvalidInput(
                trials_field,
                f"{allowed} (needs {_gib(trials * per_trial)} for {trials:,} trials per world, {detail}; "
                f"{_gib(free)} available on the {where})",
                trials if trials_field == "trials" else ceiling,
                hint=hint,
            )
        if trials + shadow_models > fits:
            raise InvalidInput(
                "shadow_models",
                f"at most {fits - trials:,} on this machine next to {trials:,} trials per world (needs "
                f"{_gib((trials + shadow_models) * per_trial)} for {trials + shadow_models:,} trials, {detail}; "
                f"{_gib(free)} available on the {where})",
                shadow_models,
                hint="Lower --shadow-models or --trials, or run on a machine with more memory.",
            )
