"""The method registry: a table of names, apart from the implementations.

Built-in methods are listed here by import path (``module:Class``) and imported only when
asked for; third-party methods register through the packaging entry-point group
``unlearn_audit.unlearners`` (``name = "package.module:Class"``), and code in the same process
(a notebook, a test) can call :func:`register`. A plug-in that fails to import is never
dropped silently: :func:`unavailable_methods` returns its error, ``audit methods`` shows it,
and :func:`get_method` names it when the method is asked for.
"""

from __future__ import annotations

from certify.registry import Registry

ENTRY_POINT_GROUP = "unlearn_audit.unlearners"

#: name -> "module:Class" of every built-in method.
BUILTIN: dict[str, str] = {
    "r2d": "unlearners.r2d:RewindToDelete",
    "retrain": "unlearners.retrain:Retrain",
    "cns": "unlearners.cns:ConstrainedNewtonStep",
    "curenewton": "unlearners.curenewton:CureNewton",
    "newton": "unlearners.newton:NewtonRemoval",
    "ngd": "unlearners.ngd:NaturalGradientUnlearning",
    "ngd-minmax": "unlearners.ngd:MinMaxNGD",
    "finetune": "unlearners.finetune:FineTune",
    "neggrad": "unlearners.neggrad:NegativeGradient",
    "noop": "unlearners.noop:NoOp",
    "dpsgd": "unlearners.dpsgd:DPSGD",
    "hf": "unlearners.hessian_free:HessianFree",
    "noisy-ft": "unlearners.noisyft:NoisyFineTune",
}

# the interface by path: listing the names (audit methods answers from audit/data/catalog.json) must not import torch
METHODS: Registry = Registry("unlearners.base:Unlearner", ENTRY_POINT_GROUP, BUILTIN, "method")

register = METHODS.register
unregister = METHODS.unregister
available_methods = METHODS.available
unavailable_methods = METHODS.unavailable
get_method = METHODS.get
