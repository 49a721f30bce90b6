"""From an audit configuration to a method instance, by the method's own declarations.

A method declares which audit setting feeds each of its options (``Param.audit``); the audit
supplies those settings and the user's ``--option`` values win. Nothing here knows a method
by name or reads its constructor.
"""

from __future__ import annotations

from typing import Any

from unlearners.base import Unlearner
from unlearners.models import default_horizon
from unlearners.objective import Objective
from unlearners.registry import get_method


def audit_supplied(config: Any, seeds: dict[str, int]) -> dict[str, Any]:
    """The audit settings a method option may be fed from (the values of ``Param.audit``)."""
    rewind = config.resolved_rewind()
    return {
        "steps": config.steps,
        "eta": config.eta,
        "horizon": default_horizon(config.model, config.steps) if config.horizon is None else config.horizon,
        "rewind": config.steps if rewind is None else rewind,
        "constants": dict(config.constants),
        "seed": seeds["estimators"],
        "epsilon": config.epsilon,
        "delta": config.delta,
    }


def method_options(config: Any, seeds: dict[str, int]) -> dict[str, Any]:
    """The options the audit passes: declared audit-fed settings, then the user's ``--option``s."""
    cls = get_method(config.method)
    supplied = audit_supplied(config, seeds)
    options = {
        p.name: supplied[p.audit]
        for p in cls.hyperparameters
        if p.audit is not None and supplied.get(p.audit) is not None
    }
    options.update(config.method_options)
    return options


def build_method(
    config: Any, objective: Objective, seeds: dict[str, int], *, train: Any = None, unlearn: Any = None
) -> Unlearner:
    """The configured method, validated by its own declarations; or the caller's own code
    (``config.method == "caller"``, :class:`unlearners.caller.CallerMethod`) from the functions
    passed to ``audit.run`` or named by ``config.train``/``config.unlearn`` (``module:...``).
    Either way the audit then runs the one method it gets through the same stages."""
    from audit.config import CALLER_CODE
    from audit.seeds import child_seed

    if config.method != CALLER_CODE:
        cls = get_method(config.method)
        if train is None:
            return cls(objective, **method_options(config, seeds))
        # a method that takes any training (the configuration checked it): A is the caller's
        return cls.with_training(
            objective, train=train, train_seed=child_seed(seeds["init"], CALLER_CODE), **method_options(config, seeds)
        )
    from unlearners.caller import CallerMethod

    train, unlearn = caller_code(config, train, unlearn)
    return CallerMethod(objective, train=train, unlearn=unlearn, seed=child_seed(seeds["init"], CALLER_CODE))


def run_dtype(config: Any) -> tuple[str, str]:
    """The dtype the run trains and attacks in, and why (for the report's environment).

    ``auto`` reads the method's precision audit (:class:`unlearners.base.Precision`): float32
    only where the certificate reads no trained quantity, so that it stays the same float64 /
    Python-float computation; the caller's own code keeps float64 (what it assumes is unknown)."""
    from audit.config import CALLER_CODE
    from unlearners.caller import CallerMethod

    precision = (CallerMethod if config.method == CALLER_CODE else get_method(config.method)).precision
    if config.dtype != "auto":
        reads = (
            ""
            if precision.float32 or config.dtype == "float64"
            else (
                f"; the certificate of {config.method} is then computed from float32 quantities, which its precision "
                f"audit does not cover ({precision.reads})"
            )
        )
        return config.dtype, f"{config.dtype} as configured (dtype = {config.dtype}){reads}"
    why = "reads no trained quantity" if precision.float32 else "reads quantities float32 would change"
    return (
        precision.auto,
        f"auto: {precision.auto}, because the certificate of {config.method} {why}: {precision.reads}",
    )


def caller_code(config: Any, train: Any = None, unlearn: Any = None) -> tuple[Any, Any]:
    """The caller's ``train`` and ``unlearn`` functions: those passed in memory, else imported from
    ``config.train``/``config.unlearn`` (``module:...``, as ``--model module:`` is); (None, None)
    for a registered method. The audit calls it before loading data, so a missing file is refused
    before any work."""
    from audit.audited_model import load_factory

    if config.unlearn is None:  # a registered method, on the caller's training when train is given
        if config.train is None:
            return None, None
        return (train if train is not None else load_factory(config.train, "train")), None

    def given_or_loaded(field: str, given: Any) -> Any:
        return given if given is not None else load_factory(getattr(config, field), field)

    return given_or_loaded("train", train), given_or_loaded("unlearn", unlearn)
