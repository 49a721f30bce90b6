"""Seeds of the stages and roles of an audit, each a pure function of a parent seed and a name."""

from __future__ import annotations

import zlib

import numpy as np


def child_seed(seed: int, role: str) -> int:
    """A pure function of (seed, role): the seed of one stage or one attack."""
    state = np.random.SeedSequence([int(seed), zlib.crc32(role.encode())]).generate_state(1, dtype=np.uint64)
    return int(state[0] >> 1)
