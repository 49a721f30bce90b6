"""From an audit configuration to a method instance, by the method's own declarations.

A method declares which audit setting feeds each of its options (``Param.audit``); the audit
supplies those settings and the user's ``--option`` values win. Nothing here knows a method
by name or reads its constructor.
"""

from __future__ import annotations

from typing import Any

from unlearners.base import Unlearner
from unlearners.objective import Objective
from unlearners.registry import get_method


def audit_supplied(config: Any, seeds: dict[str, int]) -> dict[str, Any]:
    """The audit settings a method option may be fed from (the values of ``Param.audit``)."""
    rewind = config.resolved_rewind()
    return {
        "steps": config.steps, "eta": config.eta, "horizon": config.horizon,
        "rewind": config.steps if rewind is None else rewind,
        "constants": dict(config.constants), "seed": seeds["estimators"],
        "epsilon": config.epsilon, "delta": config.delta,
    }


def method_options(config: Any, seeds: dict[str, int]) -> dict[str, Any]:
    """The options the audit passes: declared audit-fed settings, then the user's ``--option``s."""
    cls = get_method(config.method)
    supplied = audit_supplied(config, seeds)
    options = {p.name: supplied[p.audit] for p in cls.hyperparameters
               if p.audit is not None and supplied.get(p.audit) is not None}
    options.update(config.method_options)
    return options


def build_method(config: Any, objective: Objective, seeds: dict[str, int]) -> Unlearner:
    """The configured method, validated by its own declarations."""
    return get_method(config.method)(objective, **method_options(config, seeds))
