"""The peak memory of a computation, found by running it on the meta device before the real run.

A method that must refuse a configuration before training (a memory cap) needs the peak of its
largest step, working memory included: the per-record intermediates of a vmapped Hessian-vector
product or of per-sample gradients, which a count of the stored state misses (HF's check once
passed at 2 GiB for a run that was killed at 20.8 GB). Deriving that peak by hand for every model
and code path is error-prone, so the step itself is run on *meta* tensors (shapes and dtypes, no
data, no arithmetic: milliseconds) under a dispatch mode that sees every tensor the operators
allocate and frees it when its last reference dies. The largest sum of live bytes is the step's
peak working memory, its outputs included and its inputs excluded.

What it does not see: scratch buffers a kernel allocates internally (BLAS packing, contiguous
copies inside one operator) and what the allocator keeps of freed memory. Callers add
:data:`MARGIN` and :data:`OVERHEAD` for them (:func:`with_margin`); the tests compare the result
with the process's measured peak RSS.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

#: Relative margin over the simulated peak, and a fixed allowance for what the allocator keeps.
#: The simulation matches the tensors' real peak (a tracker on the real run of HF's
#: precomputation: 247.7 MB against 251.2 MB simulated), but the process's peak RSS also holds
#: freed blocks glibc has not returned: blocks below its dynamic mmap threshold (up to 32 MiB)
#: come from the heap, which keeps up to its trim threshold (64 MiB) free and fragments. Measured
#: (``bench/bench_hf_memory.py``, 1 and 2 threads): up to 182 MiB above the tensors' peak when
#: the step's blocks are near 32 MiB (mini-batches, small chunks), within 3 % of it for working
#: sets of 1 GB and more; none of it shows with ``MALLOC_MMAP_THRESHOLD_`` fixed at 64 KiB.
MARGIN = 1.25
OVERHEAD = 256 * 2**20


class _Tracker(TorchDispatchMode):
    """Live bytes of the tensors created by operators since entering, and their maximum."""

    def __init__(self) -> None:
        super().__init__()
        self.sizes: dict[int, int] = {}
        self.refs: dict[int, int] = {}
        self.now = 0
        self.peak = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        inputs = {t.untyped_storage()._cdata for t in tree_flatten((args, kwargs))[0] if isinstance(t, Tensor)}
        for t in tree_flatten(out)[0]:
            if isinstance(t, Tensor):
                self._hold(t, inputs)
        return out

    def _hold(self, t: Tensor, inputs: set[int]) -> None:
        key = t.untyped_storage()._cdata
        if key not in self.sizes:
            if key in inputs:  # a view of, or an in-place write into, memory that existed before
                return
            self.sizes[key] = t.untyped_storage().nbytes()
            self.refs[key] = 0
            self.now += self.sizes[key]
            self.peak = max(self.peak, self.now)
        self.refs[key] += 1
        weakref.finalize(t, self._release, key)

    def _release(self, key: int) -> None:
        self.refs[key] -= 1
        if self.refs[key] == 0:
            self.now -= self.sizes.pop(key)
            del self.refs[key]


def peak_bytes(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> int:
    """The peak bytes of the tensors ``fn(*args, **kwargs)`` allocates while it runs (outputs
    included, the arguments excluded). Pass meta tensors (:func:`meta`) to run it without data."""
    tracker = _Tracker()
    with tracker:
        out = fn(*args, **kwargs)
    del out
    return tracker.peak


def meta(shape: tuple[int, ...], dtype: torch.dtype) -> Tensor:
    """A meta tensor: the shape and dtype of a tensor, no storage."""
    return torch.empty(shape, dtype=dtype, device="meta")


def with_margin(simulated: int) -> int:
    """The simulated peak with :data:`MARGIN` and :data:`OVERHEAD` added (an upper bound). The
    allowance never exceeds the simulated peak itself: what the allocator keeps is memory the
    step once held (measured: at most 0.72x of it), so a tiny step is not charged 256 MiB."""
    return int(MARGIN * simulated) + min(OVERHEAD, int(simulated))
