"""The memory plan of :class:`unlearners.hessian_free.HessianFree`: what its precomputation holds,
bounded before training on meta tensors, and the refusal that names a number of deletable records
that fits ``memory_cap``. See :func:`memory_estimate` for what is counted."""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor
from torch.func import grad, jvp

from certify.errors import InvalidInput
from unlearners.footprint import meta, peak_bytes, with_margin
from unlearners.smoothness import ConstantSampler

# Every function takes ``hf``, the unlearners.hessian_free.HessianFree whose fit it plans; typed
# as a name only (HessianFree imports this module, and the architecture allows no import circle).
HessianFree = Any

#: Steps at which a non-linear model's curvature is estimated (evenly spaced); their iterates are
#: part of the stored state.
CURVATURE_PROBES = 12

__all__ = ["CURVATURE_PROBES", "check_memory", "memory_estimate", "memory_plan"]


def memory_estimate(hf: HessianFree, X: Tensor, y: Tensor, theta0: Tensor, tracked: int) -> dict[str, int]:
    """An upper bound of the bytes ``fit`` holds beyond its inputs, with ``tracked`` deletable
    records: the stored state plus the peak working memory of its largest step.

    Stored: the table (tracked × d), the batch schedule and row map (int64 per record and
    epoch), the curvature probes' iterates and a few d-vectors. Working memory, whichever phase
    is largest, each run on meta tensors of the real shapes (:func:`unlearners.footprint.peak_bytes`)
    for the largest batch |B| with every tracked record active (the worst step):

    * the clipped per-record gradients of the batch (|B| × d and their vmap intermediates);
    * the transition (I − η H̄) A: the batched Hessian-vector products over all approximators
      (their per-chunk intermediates grow with chunk × |B| × activations), while the batch's
      gradients (|B| × d), the injected rows and, when a step can find only part of the
      table active (mini-batches), the copy of the active rows are held;
    * non-linear models: the curvature estimation after training (a batch product, the
      per-record power iteration of L).

    Returns ``{"stored", "working", "bound"}``; ``bound`` adds the margins of
    :func:`unlearners.footprint.with_margin` (the allocator's share of the process's peak).
    """
    key = (tuple(X.shape), X.dtype, y.dtype, theta0.dtype, tracked, repr(sorted(hf.options.items())))
    cache = hf.__dict__.setdefault("_memory_plans", {})  # a worker refitted per trial asks again
    if key not in cache:
        cache[key] = memory_plan(hf, X, y, theta0, tracked)
    return dict(cache[key])


def memory_plan(hf: HessianFree, X: Tensor, y: Tensor, theta0: Tensor, tracked: int) -> dict[str, int]:
    """The stored state and working memory of ``hf.fit`` with ``tracked`` deletable records (see
    :func:`memory_estimate`, which caches it)."""
    n, d = int(X.shape[0]), hf.objective.dim
    es, dt = theta0.element_size(), theta0.dtype
    B = n if hf.batch_size is None else min(hf.batch_size, n)
    key = (n, B, tuple(X.shape[1:]), X.dtype, y.dtype, dt, hf.chunk)
    phases = hf.__dict__.get("_phases", (None, None))
    if phases[0] != key:  # the phases that do not depend on tracked
        phases = hf.__dict__["_phases"] = (key, _fixed_phases(hf, n, B, X, y, dt))
    fixed = phases[1]
    epochs_index = hf.epochs * n * 8 + n * 8 + 2 * n  # schedule, row map, active/deleted flags
    stored = tracked * d * es + epochs_index + (CURVATURE_PROBES + 6) * d * es
    held = B * d * es + 2 * min(tracked, B) * d * es  # g, and the injected rows (selected, scaled)
    if B < n:
        held += tracked * d * es  # A[idx]: the active rows, copied
    w, Xb, yb = meta((d,), dt), meta((B, *X.shape[1:]), X.dtype), meta((B,), y.dtype)
    transition = held + (peak_bytes(hf._transition, w, Xb, yb, meta((tracked, d), dt), 0.1) if tracked else 0)
    working = max(transition, *fixed)
    return {"stored": stored, "working": working, "bound": with_margin(stored + working)}


def _fixed_phases(hf: HessianFree, n: int, B: int, X: Tensor, y: Tensor, dt: torch.dtype) -> tuple[int, int]:
    """Peaks of the phases whose size does not depend on the deletable records: the batch's
    clipped gradients, and (non-linear models) the curvature estimation."""
    d = hf.objective.dim
    w, Xb, yb = meta((d,), dt), meta((B, *X.shape[1:]), X.dtype), meta((B,), y.dtype)
    grads = peak_bytes(hf._clipped_grads, w, Xb, yb)
    if hf.objective.is_linear:
        return grads, 0
    product = lambda v: jvp(lambda u: grad(hf._batch_loss)(u, Xb, yb), (w,), (v,))[1]  # noqa: E731
    # One power-iteration step: each step frees the previous one's tensors, so the peak of
    # the first is the peak of all (and simulating 30 would only cost time).
    sampler = ConstantSampler(
        hf.objective,
        meta((n, *X.shape[1:]), X.dtype),
        meta((n,), y.dtype),
        generator=torch.Generator(),
        power_iterations=1,
    )
    return grads, max(peak_bytes(product, meta((d,), dt)), peak_bytes(sampler._hessian_norms, w))


def check_memory(hf: HessianFree, X: Tensor, y: Tensor, theta0: Tensor, tracked: int) -> dict[str, int]:
    """Refuse, before training, a configuration whose bound exceeds ``memory_cap``, naming a
    number of deletable records that fits."""
    plan = memory_estimate(hf, X, y, theta0, tracked)
    if plan["bound"] <= hf.memory_cap:
        return plan
    fits = _deletable_that_fit(hf, X, y, theta0, tracked, plan["bound"])
    allowed = (
        f"at most {fits} records at memory_cap = {hf.memory_cap} bytes"
        if fits
        else f"a configuration that fits memory_cap = {hf.memory_cap} bytes (none does with these "
        "options, even with a single deletable record)"
    )
    chunk = hf.chunk // 2  # fewer approximators per batched product: the same statistics, less memory
    while chunk >= 1 and hf.replica(chunk=chunk).memory_estimate(X, y, theta0, tracked)["bound"] > hf.memory_cap:
        chunk //= 2
    smaller = (
        f"-o chunk={chunk} keeps all {tracked} records within the cap; "
        if chunk >= 1
        else "lower -o chunk or set -o batch_size (the products' working memory grows with chunk x batch size); "
    )
    raise InvalidInput(
        "deletable",
        allowed,
        f"{tracked} records, whose precomputation would hold up to {plan['bound']} bytes (table "
        f"{hf.table_bytes_}, other state {plan['stored'] - hf.table_bytes_}, working memory "
        f"{plan['working']} before margins)",
        hint=f"Declare fewer deletable records (-o deletable=...); {smaller}or raise -o memory_cap to at "
        f"least {plan['bound']}.",
    )


def _deletable_that_fit(hf: HessianFree, X: Tensor, y: Tensor, theta0: Tensor, tracked: int, bound: int) -> int:
    """A number of deletable records whose bound fits the cap (0: none). The bound is nearly
    affine in the count (table, outputs of the products), so the affine guess between one
    record and ``tracked`` comes first; then bisection, a few steps, between a count that fits
    and one that does not (at most 16 steps). Every returned count was checked by :meth:`HessianFree.memory_estimate`."""
    cap = hf.memory_cap

    def fits(k: int) -> bool:
        return memory_estimate(hf, X, y, theta0, k)["bound"] <= cap

    one = memory_estimate(hf, X, y, theta0, 1)["bound"]
    if one > cap:
        return 0
    lo, hi = 1, tracked
    guess = 1 + int((cap - one) * (tracked - 1) / max(bound - one, 1))
    for k in (guess, int(guess * 0.9), int(guess * 0.5)):
        if lo < k < hi:
            lo, hi = (k, hi) if fits(k) else (lo, k)
            if lo == k:
                break
    for _ in range(16):
        if hi - lo <= 1:
            break
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo
