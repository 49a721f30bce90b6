"""Timing a method's runs: the first run is the audit's, repeats run on copies and stop once enough
seconds are measured (:func:`timed`, used by the pipeline's unlearn and retrain stages)."""

from __future__ import annotations

import copy
import logging
import time
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor

from unlearners.base import Unlearner

log = logging.getLogger("unlearn_audit.pipeline")  # the pipeline's log: a user filters one name

__all__ = ["TIMING_ENOUGH_S", "timed"]

#: Repeated timings stop once a method's runs have taken this many seconds together: a run that long
#: is timed to a small fraction of its length (the report lists every repeat), and repeating a CNN's
#: 50 s retraining twice more made it 40 % of a 2,000-image audit.
TIMING_ENOUGH_S = 10.0


def timed(
    call: Callable[[Unlearner], Any], method: Unlearner, repeats: int, device: torch.device
) -> tuple[Any, list[float]]:
    """``call(method)``'s result and the wall-clock seconds of up to ``repeats`` runs of it (fewer
    once the runs have taken :data:`TIMING_ENOUGH_S` together).

    The first run is on ``method`` itself and its result is the one the audit uses. Every further
    run is on a deep copy of ``method`` as it was before the first (its per-record state included,
    so for a large model ``timing_repeats = 1`` saves that memory), because methods remember work
    per forget set (NGD's and CNS's retrains, NGD's step): a repeat on the same object would time a
    dictionary lookup. The runs are deterministic functions of the seeds; a repeat whose result
    differs (a nondeterministic GPU kernel) is logged, and never used. A method that cannot be
    copied (a plug-in holding a lock, a tensor inside an autograd graph) is timed once, and the log
    says so.
    """
    try:
        spare = copy.deepcopy(method) if repeats > 1 else None
    except (TypeError, RuntimeError, copy.Error) as exc:
        log.warning("%s cannot be copied for repeated timings (%s): timed once", type(method).__name__, exc)
        repeats, spare = 1, None
    result, seconds = None, []
    for k in range(repeats):
        if k == 0:
            target = method
        else:
            assert spare is not None  # copied above whenever repeats > 1
            target = spare if k == repeats - 1 else copy.deepcopy(spare)
        t0 = time.perf_counter()
        out = call(target)
        if device.type == "cuda":  # kernels run asynchronously: time them, not their launch
            torch.cuda.synchronize(device)
        seconds.append(time.perf_counter() - t0)
        if k == 0:
            result = out
        elif not _same_models(out, result):
            log.warning(
                "timing repeat %d of %d gave another model than the first (only the first is used)", k + 1, repeats
            )
        if k + 1 < repeats and sum(seconds) >= TIMING_ENOUGH_S:
            log.info("timed %d of %d times: the runs took %.1f s together", k + 1, repeats, sum(seconds))
            break
    return result, seconds


def _same_models(a: Any, b: Any) -> bool:
    """The same parameters: one vector, or the models of a sequence of (model, certificate) releases."""
    if isinstance(a, Tensor):
        return torch.equal(a, b)
    return len(a) == len(b) and all(torch.equal(x[0], y[0]) for x, y in zip(a, b))
