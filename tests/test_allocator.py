"""The allocator set at start-up (issue 26): glibc's thresholds raised only where glibc is the
allocator and nobody else chose; the benchmark (bench/bench_allocator.py) shows the effect and
that the trials are the same bytes."""

from __future__ import annotations

import ctypes
import sys

import pytest

from audit import allocator


@pytest.mark.parametrize(
    ("environ", "platform", "why"),
    [
        ({"AUDIT_MALLOC": "default"}, "linux", "AUDIT_MALLOC=default"),
        ({}, "darwin", "not Linux"),
        ({}, "win32", "not Linux"),
        ({"MALLOC_MMAP_THRESHOLD_": "65536"}, "linux", "the environment sets glibc's malloc"),
        ({"GLIBC_TUNABLES": "glibc.malloc.trim_threshold=1"}, "linux", "the environment sets glibc's malloc"),
        ({"LD_PRELOAD": "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"}, "linux", "jemalloc is preloaded"),
        ({"LD_PRELOAD": "libtcmalloc_minimal.so.4"}, "linux", "tcmalloc is preloaded"),
    ],
)
def test_the_allocator_is_left_alone_where_it_is_not_ours_to_set(environ, platform, why):
    assert why in allocator._decide(environ, platform)


def test_plain_linux_is_tuned_and_other_settings_do_not_count():
    assert allocator._decide({"LD_PRELOAD": "libfoo.so", "GLIBC_TUNABLES": "glibc.pthread.x=1"}, "linux") is None


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc only")
def test_importing_audit_tuned_glibc_once_and_says_so():
    libc = ctypes.CDLL(None)
    if not hasattr(libc, "gnu_get_libc_version") or allocator._decide(__import__("os").environ, sys.platform):
        pytest.skip("not glibc, or this environment opts out")
    assert allocator.state == "tuned: glibc mmap and trim thresholds 1 GiB"
    assert allocator.tune() is allocator.state  # idempotent: mallopt is not called again
