"""glibc's allocator set for tensor work: big freed buffers stay in the process instead of going
back to the operating system after every use.

By default glibc serves a block over its dynamic mmap threshold (at most 32 MiB) with a fresh
``mmap`` and unmaps it when freed, and trims the heap's free top above its trim threshold (twice
the mmap threshold, at most 64 MiB). ``vmap`` and batched training allocate and free buffers of
several MB many times per step, so each use page-faults them in again: 40 % of a retrain-mode
audit's CPU was kernel time (issue 26). With both thresholds at :data:`THRESHOLD` (1 GiB) the
buffers are reused; the results are the same bytes, only the time changes
(``bench/bench_allocator.py``). The price: freed memory up to that threshold stays with the
process until it exits.

:func:`tune` is called once, before torch allocates, by the command line (:func:`audit.cli.main`)
and by the library's entry (``import audit``). It changes nothing where the allocator is not
glibc's (macOS, Windows, musl), where another allocator is preloaded or linked in (jemalloc,
tcmalloc, mimalloc: they manage their own caches), where the user set glibc's malloc variables or
tunables themselves, or with ``AUDIT_MALLOC=default``.
"""

from __future__ import annotations

import os
import sys

#: Both thresholds, in bytes: above the multi-MB buffers of batched work, so they come from (and
#: return to) the heap; a value set this way also stops glibc's own adjustment of the thresholds.
THRESHOLD = 2**30
#: mallopt parameter numbers, from glibc's malloc.h.
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
#: Allocators that replace glibc's malloc when preloaded or linked in, by a symbol only they export.
REPLACEMENTS = {"jemalloc": "mallctl", "tcmalloc": "tc_malloc", "mimalloc": "mi_malloc"}
#: The user's own settings of glibc's malloc, which are left as they are.
USER_SETTINGS = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_", "MALLOC_MMAP_MAX_")

#: What :func:`tune` did in this process (None until it ran): "tuned", or why it left malloc alone.
state: str | None = None


def _decide(environ: dict[str, str] | os._Environ, platform: str) -> str | None:
    """Why the allocator is left alone (None: tune it), from the environment alone."""
    if environ.get("AUDIT_MALLOC", "").strip().lower() == "default":
        return "left as is: AUDIT_MALLOC=default"
    if not platform.startswith("linux"):
        return f"left as is: not Linux ({platform})"
    if any(name in environ for name in USER_SETTINGS) or "glibc.malloc" in environ.get("GLIBC_TUNABLES", ""):
        return "left as is: the environment sets glibc's malloc"
    preload = environ.get("LD_PRELOAD", "").lower()
    for name in REPLACEMENTS:
        if name in preload:
            return f"left as is: {name} is preloaded"
    return None


def tune() -> str:
    """Raise glibc's mmap and trim thresholds to :data:`THRESHOLD` unless :func:`_decide` says
    not to; idempotent. Returns (and keeps in :data:`state`) what was done."""
    global state
    if state is not None:
        return state
    state = _decide(os.environ, sys.platform) or _apply()
    return state


def _apply() -> str:
    import ctypes

    try:
        libc = ctypes.CDLL(None)
    except OSError as exc:  # pragma: no cover - a Linux without a loadable libc
        return f"left as is: {exc}"
    for name, symbol in REPLACEMENTS.items():
        if hasattr(libc, symbol):
            return f"left as is: {name} is linked in"
    if not hasattr(libc, "gnu_get_libc_version") or not hasattr(libc, "mallopt"):
        return "left as is: not glibc"
    ok = libc.mallopt(M_MMAP_THRESHOLD, THRESHOLD) == 1 and libc.mallopt(M_TRIM_THRESHOLD, THRESHOLD) == 1
    return "tuned: glibc mmap and trim thresholds 1 GiB" if ok else "left as is: mallopt refused"
