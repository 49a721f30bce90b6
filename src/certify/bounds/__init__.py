"""One module per method's theorem: the sensitivity Δ a certificate calibrates noise to.

Each function cites its paper, theorem and equation, and states the assumptions; methods call
these and never re-derive a bound inline.
"""

from certify.bounds.r2d import (
    r2d_corollary_rewind_bound,
    r2d_h,
    r2d_rewind_for_sigma,
    r2d_sensitivity,
    r2d_step_size_limit,
    r2d_step_size_ok,
)

__all__ = [
    "r2d_corollary_rewind_bound",
    "r2d_h",
    "r2d_rewind_for_sigma",
    "r2d_sensitivity",
    "r2d_step_size_limit",
    "r2d_step_size_ok",
]
