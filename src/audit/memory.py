"""Memory pre-checks: refuse, before the work starts, a trial count that cannot fit in memory.

``audit run --trials 10000000`` used to train, unlearn and measure for minutes and then die in
the trial stage with ``std::bad_alloc``. The memory of the trial stage is predictable from
numbers known before training (the trial count, the parameter count, the dtype, the trial mode,
the shadow models, the forget-set size and the model's widest activation), so it is checked
first, and a refusal says the bytes needed and the bytes available
(:class:`~certify.errors.InvalidInput` naming ``trials``, ``target_ceiling`` or
``shadow_models``).

The estimate is an **upper bound** of what the trial and attack stage holds at its peak with the
built-in attacks (a plug-in attack's own memory is not counted), so a run it lets through fits;
the price is that it may refuse a run that would just have fitted. Its terms, for N trials per
world (shadow models count as trials: a second trial set of the same mode, alive with the
first), d parameters of ``itemsize`` bytes, m forgotten records and an activation width w
(:func:`activation_width`), where the parameters live:

* **parameter stacks** of N·d·itemsize bytes each: held through the attacks,
  :data:`HELD_STACKS` (noise mode: the three released stacks, unlearned, retrained and original,
  the counter-based noise of :mod:`audit.trials` becoming the released stack in place; retrain
  mode: also the initial points and the three noiseless worlds), plus the larger of one
  transient stack (the white-box attack centres the releases) and relearn's
  :data:`RELEARN_STACKS` working stacks for at most :data:`RELEARN_CHUNK` models; in retrain mode
  the batched training before the attacks holds :data:`TRAINING_STACKS` (the initial points, a
  finished world, the rewind checkpoint, a padded copy and four working stacks of a gradient
  step: iterate, gradient chunks then gradient, scaled gradient, next iterate), the larger
  phase counting;
* **activations**, ``ACTIVATION_COPIES·B·r·w·itemsize``: B models evaluated at once on r records
  of w values each. The attacks evaluate the forget set (r = m): relearn fine-tunes
  :data:`RELEARN_CHUNK` models at a time, the other attacks as many as keep one activation within
  :data:`unlearners.batched.CHUNK_ELEMENTS`; retrain-mode training evaluates the training set
  (r = n records) :data:`unlearners.training.ROW_BLOCK` models at a time (fewer when one activation
  would exceed the same budget). B is capped by N; the larger of the two phases counts;
* **per-record values**, ``DEVICE_PER_RECORD·N·m·itemsize`` where the parameters live (the
  membership attack's per-sample losses, gathered chunk by chunk and concatenated) and
  ``HOST_PER_RECORD·N·m·8`` on the host (U-LiRA's float64 φ matrices of both worlds and its
  per-record scores, and the per-record ROC and bounds of its exposure ranking);
* **per-trial values**, ``DEVICE_PER_TRIAL·N·itemsize`` where the parameters live (the attacks'
  score tensors) and ``HOST_PER_TRIAL·N·8`` on the host: the float64 scores of both worlds and,
  dominating, the Clopper-Pearson and GDP bounds and the ROC summary over the 2N pooled scores
  (sorted copies, ranks, cumulative counts and rates in both directions: about 390 bytes a trial);
* the effect size's bootstrap on the host: :data:`BOOTSTRAP_ARRAYS` arrays of min(200·N,
  max(N, 10^6)) float64 values (it resamples a chunk at a time);
* where the parameters live on a GPU, one stack on the host: the noise is drawn on the CPU and
  then moved;
* a **fixed** :data:`FIXED_BYTES` for what does not grow with N (the noise generator's chunk
  buffers, the population membership attack's scikit-learn fits on the forget set, the stage's
  Python objects).

The coefficients were counted from the code and checked against measured peaks
(``tests/test_memory_precheck.py``: the numpy and Python allocations by :mod:`tracemalloc`, the
torch CPU allocations by the profiler's memory events, on the default logistic regression and a
small MLP, both trial modes): the estimate is above every measured peak and within 3x of it.
Beyond the live bytes, a process's resident memory holds what the allocator keeps of freed
blocks (glibc: its trim threshold and fragmentation), so leave some room.

Where parameters live on a GPU the device terms are checked against the GPU's free memory and
the host terms against the host's. Available host memory is ``MemAvailable`` of
``/proc/meminfo`` (else ``os.sysconf`` free pages), capped by the cgroup's limit less its usage
when the process runs in a memory-limited cgroup (a container), whichever is smaller. When none
of these can be read the check is skipped: refusing on a guess would be worse than the old
failure.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from certify.errors import InvalidInput

#: Parameter stacks (N, d) held through the attacks, by trial mode: the released stacks, and in
#: retrain mode the initial points and the noiseless worlds too (see the module docstring).
HELD_STACKS = {"noise": 3, "retrain": 7, "rerun": 7}
#: Working stacks of relearn's fine-tuning (a copy of the chunk, its gradient, the scaled
#: gradient and the next iterate), for at most :data:`RELEARN_CHUNK` models at a time.
RELEARN_STACKS = 4
#: Stacks at the peak of retrain mode's batched training (see the module docstring).
TRAINING_STACKS = 9
#: The most parameter stacks alive at once, by trial mode (when N <= RELEARN_CHUNK).
STACKS = {
    mode: max(held + RELEARN_STACKS, TRAINING_STACKS if mode in ("retrain", "rerun") else 0)
    for mode, held in HELD_STACKS.items()
}
#: Activations of one model on one record that are alive at once (input, pre-activation,
#: activation and their gradients when relearn differentiates), in units of the widest layer:
#: counted about 5 for an MLP (measured: 104 MB of torch tensors for 2,000 MLPs 2-64-1 on 20
#: forgotten records, 4.1 activation copies of 20.5 MB each), 8 with margin.
ACTIVATION_COPIES = 8
#: Models the relearn attack fine-tunes at once (:func:`attacks.relearn.relearn_time`'s chunk).
RELEARN_CHUNK = 4096
#: Values per trial and forgotten record: in the parameters' dtype where they live (the
#: membership attack's per-sample losses, chunks then their concatenation: 2, and 2 of margin),
#: float64 on the host (measured: 147 bytes, 18.4 values, a trial and record; 24 with margin).
DEVICE_PER_RECORD, HOST_PER_RECORD = 4, 24
#: Values per trial that grow with neither d nor m: in the parameters' dtype where they live (the
#: scores and their centring), float64 on the host (measured: 430-475 bytes, 54-59 values, a
#: trial, of which the bounds' 390; 72 with margin).
DEVICE_PER_TRIAL, HOST_PER_TRIAL = 4, 72
#: Bytes that do not grow with the trial count (the noise generator's buffers, up to 0.45 MiB, are
#: freed before the attacks start; the whole host side measured 0.31 MB at 300 trials).
FIXED_BYTES = 1 << 19

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
    for limit_file, usage_file in (
        (_CGROUP_V2 / "memory.max", _CGROUP_V2 / "memory.current"),
        (_CGROUP_V1 / "memory.limit_in_bytes", _CGROUP_V1 / "memory.usage_in_bytes"),
    ):
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
    resolved: torch.dtype = getattr(torch, dtype) if isinstance(dtype, str) else dtype
    return torch.empty((), dtype=resolved).element_size()


def activation_width(objective: Any, X: torch.Tensor) -> int:
    """w: the most values one record produces in any layer of the model, its input included.

    Found by running the model on one record with forward hooks on every module (shapes only
    matter: zero parameters); a model whose layers cannot be hooked falls back to its input
    size, its output count and the widths of its ``nn.Linear`` layers."""
    per_record = max(1, int(X[:1].numel()), int(getattr(objective, "n_outputs", 1)))
    widths = [
        w for m in objective.model.modules() if isinstance(m, torch.nn.Linear) for w in (m.in_features, m.out_features)
    ]
    seen: list[int] = []

    def hook(module: Any, inputs: Any, output: Any) -> None:
        if isinstance(output, torch.Tensor):
            seen.append(int(output.numel()))

    handles = [m.register_forward_hook(hook) for m in objective.model.modules()]
    try:
        with torch.no_grad():
            objective.logits(
                torch.zeros(objective.dim, dtype=X.dtype if X.is_floating_point() else None, device=X.device), X[:1]
            )
    except Exception:  # noqa: BLE001 - a model we cannot run on one record: the static widths
        seen.clear()
    finally:
        for h in handles:
            h.remove()
    return max([per_record, *widths, *seen])


#: Parameter stacks held on the host as features (audit.shards) in retrain mode: the white-box
#: distinguisher reads released and noiseless parameters of two worlds in two games (8 stacks),
#: once as the shards' results and once gathered.
SHIPPED_STACKS = 16


def trial_bytes(
    n_trials: int,
    n_params: int,
    dtype: torch.dtype | str,
    mode: str,
    *,
    forget_size: int = 1,
    width: int = 1,
    train_records: int = 0,
    device: torch.device | str = "cpu",
) -> tuple[int, int]:
    """(bytes where the parameters live, bytes on the host) at the peak of a trial set of
    ``n_trials`` models per world in ``mode`` (``"noise"`` or ``"retrain"``) and its attacks: an
    upper bound (the terms are in the module docstring). ``forget_size`` is m, ``width`` w
    (:func:`activation_width`), ``train_records`` the training-set size (retrain mode's training
    activations). On the CPU both parts share the host's memory."""
    if mode not in STACKS:
        raise InvalidInput("trial_mode", "one of " + ", ".join(map(repr, STACKS)), mode)
    from unlearners.batched import CHUNK_ELEMENTS
    from unlearners.training import ROW_BLOCK

    n, d, b = int(n_trials), int(n_params), _itemsize(dtype)
    m, w = max(1, int(forget_size)), max(1, int(width))
    on_gpu = torch.device(device).type == "cuda"
    budget = CHUNK_ELEMENTS["other" if on_gpu else "cpu"]
    stack = n * d * b
    # the attacks: held stacks, the larger of the white-box centring (one stack) and relearn's
    # working stacks, the activations of the models evaluated at once, per-trial/record values
    transient = max(stack, RELEARN_STACKS * min(n, RELEARN_CHUNK) * d * b)
    attack_models = min(n, max(RELEARN_CHUNK, budget // (m * w)))
    attacks = (
        HELD_STACKS[mode] * stack
        + transient
        + ACTIVATION_COPIES * attack_models * m * w * b
        + n * (DEVICE_PER_TRIAL + DEVICE_PER_RECORD * m) * b
    )
    device_bytes = attacks
    if mode in ("retrain", "rerun"):  # the batched training (rerun: the noisy runs) before the attacks
        records = max(1, int(train_records))
        train_models = min(n, max(1, min(ROW_BLOCK, budget // (records * w))))
        training = TRAINING_STACKS * stack + ACTIVATION_COPIES * train_models * records * w * b
        device_bytes = max(attacks, training)
    host_bytes = n * (HOST_PER_TRIAL + HOST_PER_RECORD * m) * 8 + FIXED_BYTES + (stack if on_gpu else 0)
    host_bytes += _bootstrap_bytes(n)
    if mode in ("retrain", "rerun"):  # the white-box distinguisher's features are parameters in these modes
        host_bytes += SHIPPED_STACKS * n * d * 8
    return device_bytes, host_bytes


#: Arrays of one bootstrap chunk alive at once in the effect size's resampling: two (a world's index
#: array and its gathered scores, then those scores' deviations and squared deviations, one world at
#: a time; 15.3 MiB measured at 50,000 trials, two chunks of 8 MB); counted as four, twice that.
#: Six overstated the default-model retrain run at 300 trials by just over the 3x the estimate is
#: held to (tests/test_memory_precheck.py).
BOOTSTRAP_ARRAYS = 4


def _bootstrap_bytes(n: int) -> int:
    """The effect size's bootstrap (:meth:`attacks.estimates.ScorePair.effect_size`): resamples of n
    scores drawn a chunk at a time, at most ``BOOTSTRAP_CHUNK`` values (or one resample) per array."""
    from attacks.estimates import BOOTSTRAP_CHUNK, DEFAULT_BOOTSTRAP

    values = min(DEFAULT_BOOTSTRAP * n, max(n, BOOTSTRAP_CHUNK))
    return BOOTSTRAP_ARRAYS * values * 8


def _gib(n: float) -> str:
    return f"{n / 2**30:.3g} GiB" if n >= 2**30 else f"{n / 2**20:.3g} MiB"


def _largest(fits: Callable[[int], bool], upper: int) -> int:
    """The largest n in [0, upper] with ``fits(n)`` (monotone: what fits n fits fewer)."""
    lo, hi = 0, upper
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid - 1)
    return lo


def check_trial_memory(
    *,
    trials: int,
    n_params: int,
    dtype: torch.dtype | str,
    mode: str,
    shadow_models: int = 0,
    device: torch.device | str = "cpu",
    forget_size: int = 1,
    width: int = 1,
    train_records: int = 0,
    trials_field: str = "trials",
    ceiling: float | None = None,
    host: Callable[[], int | None] | None = None,
    gpu: Callable[[Any], int | None] | None = None,
) -> None:
    """Raise :class:`InvalidInput` when ``trials`` trials per world (and ``shadow_models``
    shadow models, a second trial set of the same mode) cannot fit in memory.

    The message gives the largest count that fits, the bytes needed and the bytes available.
    ``forget_size``, ``width`` and ``train_records`` size the per-record values and the
    activations (:func:`trial_bytes`). ``trials_field`` is the field the user set the count
    with (``"trials"``, or ``"target_ceiling"`` when the count was sized from ``ceiling``).
    ``host`` and ``gpu`` replace :func:`available_bytes` and :func:`device_available_bytes`
    (tests). Nothing is checked where the available memory cannot be read.
    """
    trials, shadow_models = int(trials), int(shadow_models)
    on_gpu = torch.device(device).type == "cuda"
    host_free = (host or available_bytes)()
    gpu_free = (gpu or device_available_bytes)(device) if on_gpu else None

    def need(where: str, n: int) -> int:
        on_device, on_host = trial_bytes(
            n, n_params, dtype, mode, forget_size=forget_size, width=width, train_records=train_records, device=device
        )
        return on_host + (0 if on_gpu else on_device) if where == "host" else on_device

    budgets = []
    if host_free is not None:
        budgets.append(("host", host_free))
    if gpu_free is not None:
        budgets.append((f"GPU {device}", gpu_free))
    itemsize = _itemsize(dtype)
    for where, free in budgets:
        key = "host" if where == "host" else "gpu"
        total = trials + shadow_models
        if need(key, total) <= free:
            continue
        fits = _largest(lambda n: need(key, n) <= free, total)  # noqa: B023 (called here) trial sets (trials + shadows) that fit
        parts = []
        if key == "gpu" or not on_gpu:
            parts.append(
                f"up to {STACKS[mode]} parameter stacks of {n_params:,} x {itemsize} bytes and model activations"
            )
        if key == "host":
            per_trial = (HOST_PER_TRIAL + HOST_PER_RECORD * max(1, int(forget_size))) * 8
            parts.append(
                f"~{per_trial:,} bytes of scores, bounds and per-record values"
                + (" and a host copy of the noise" if on_gpu else "")
            )
        detail = f"{mode} mode, per trial: " + " + ".join(parts)
        if trials > fits:
            hint = (
                "Lower --target-ceiling (it decides the trial count)"
                if trials_field == "target_ceiling"
                else "Lower --trials"
            ) + ", or run on a machine with more memory."
            allowed = (
                f"at most {fits:,} on this machine"
                if trials_field == "trials"
                else f"a ceiling reachable with at most {fits:,} trials per world on this machine, "
                f"not one that needs {trials:,}"
            )
            raise InvalidInput(
                trials_field,
                f"{allowed} (needs {_gib(need(key, trials))} for {trials:,} trials per world, {detail}; "
                f"{_gib(free)} available on the {where})",
                trials if trials_field == "trials" else ceiling,
                hint=hint,
            )
        raise InvalidInput(
            "shadow_models",
            f"at most {fits - trials:,} on this machine next to {trials:,} trials per world (needs "
            f"{_gib(need(key, total))} for {total:,} trials, {detail}; "
            f"{_gib(free)} available on the {where})",
            shadow_models,
            hint="Lower --shadow-models or --trials, or run on a machine with more memory.",
        )
