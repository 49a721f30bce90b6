"""One module per method's theorem: the sensitivity Δ a certificate calibrates noise to.

Each function cites its paper, theorem and equation, and states the assumptions; methods call
these and never re-derive a bound inline.
"""

from certify.bounds.cns import BOUND_VERSIONS as CNS_BOUND_VERSIONS
from certify.bounds.cns import (
    cns_depth_required,
    cns_exact_newton_bound,
    cns_forget_trick_term,
    cns_lissa_error,
    cns_sensitivity,
    logistic_hessian_lipschitz,
)
from certify.bounds.guo import (
    GUO_GAMMA_LOGISTIC,
    guo_accumulated_residual,
    guo_budget,
    guo_c,
    guo_delta,
    guo_loss_noise,
    guo_parameter_sensitivity,
    guo_residual_bound,
    guo_worst_case_residual,
)
from certify.bounds.ngd import (
    ngd_full_fisher_step_bound,
    ngd_logistic_constants,
    ngd_newton_step_bound,
    ngd_optimum_radius,
    ngd_sensitivity,
)
from certify.bounds.r2d import (
    r2d_bound,
    r2d_corollary_rewind_bound,
    r2d_h,
    r2d_rewind_for_sigma,
    r2d_sensitivity,
    r2d_step_size_limit,
    r2d_step_size_ok,
)

__all__ = [
    "CNS_BOUND_VERSIONS",
    "cns_depth_required",
    "cns_exact_newton_bound",
    "cns_forget_trick_term",
    "cns_lissa_error",
    "cns_sensitivity",
    "logistic_hessian_lipschitz",
    "GUO_GAMMA_LOGISTIC",
    "guo_accumulated_residual",
    "guo_budget",
    "guo_c",
    "guo_delta",
    "guo_loss_noise",
    "guo_parameter_sensitivity",
    "guo_residual_bound",
    "guo_worst_case_residual",
    "ngd_full_fisher_step_bound",
    "ngd_logistic_constants",
    "ngd_newton_step_bound",
    "ngd_optimum_radius",
    "ngd_sensitivity",
    "r2d_bound",
    "r2d_corollary_rewind_bound",
    "r2d_h",
    "r2d_rewind_for_sigma",
    "r2d_sensitivity",
    "r2d_step_size_limit",
    "r2d_step_size_ok",
]
