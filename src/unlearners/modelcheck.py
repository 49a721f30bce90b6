"""What a theorem needs from the model, checked on the module before any work.

After Opacus's ``ModuleValidator``: a certified method declares the assumptions about the model
that its theorem makes (``Unlearner.model_requirements``); :func:`check_model` walks the module
and returns one :class:`~certify.certificate.Condition` per requirement, met or not, naming every
offending layer. A failed condition refuses the certificate (the audit still measures the
method); a method without a theorem requires nothing.

Requirements
------------
``smooth``
    Every per-sample loss is L-smooth (and, for second-order bounds, has a Lipschitz Hessian):
    no piecewise-linear activation or pooling whose kink breaks the Lipschitz gradient (ReLU and
    its relatives, hard activations, max pooling). Only layers that are modules are visible:
    a kink written as a function inside ``forward`` is not, which the condition says.
``stateless``
    The forward pass is a fixed function of θ and the record alone, as the theorem's learning
    algorithm assumes: no batch statistics (BatchNorm, InstanceNorm with running statistics)
    and no randomness (dropout). The audit evaluates such a model in evaluation mode; the
    certificate would be about a different algorithm than the one the user trains.
"""

from __future__ import annotations

from torch import nn

from certify.certificate import Condition

SMOOTH = "smooth"
STATELESS = "stateless"
REQUIREMENTS = (SMOOTH, STATELESS)

#: Layers whose gradient is not Lipschitz (a kink) in some input direction.
NON_SMOOTH: tuple[type[nn.Module], ...] = (
    nn.ReLU,
    nn.ReLU6,
    nn.LeakyReLU,
    nn.PReLU,
    nn.RReLU,
    nn.SELU,
    nn.Hardtanh,
    nn.Hardswish,
    nn.Hardsigmoid,
    nn.Hardshrink,
    nn.Softshrink,
    nn.Threshold,
    nn.MaxPool1d,
    nn.MaxPool2d,
    nn.MaxPool3d,
    nn.AdaptiveMaxPool1d,
    nn.AdaptiveMaxPool2d,
    nn.AdaptiveMaxPool3d,
    nn.FractionalMaxPool2d,
    nn.FractionalMaxPool3d,
    nn.LPPool1d,
    nn.LPPool2d,
)
#: Layers that carry batch statistics or draw randomness in training.
STATEFUL: tuple[type[nn.Module], ...] = (
    nn.modules.batchnorm._BatchNorm,
    nn.modules.dropout._DropoutNd,
)

_WHY = {
    SMOOTH: "the theorem needs every per-sample loss to be L-smooth (a Lipschitz gradient)",
    STATELESS: "the theorem's learning algorithm has no batch statistics or randomness in the forward pass",
}


def _violates(module: nn.Module, requirement: str) -> bool:
    if requirement == SMOOTH:
        if isinstance(module, nn.ELU) and module.alpha != 1.0:
            return True  # ELU's derivative jumps at 0 unless alpha = 1
        return isinstance(module, NON_SMOOTH)
    if isinstance(module, nn.modules.instancenorm._InstanceNorm):
        return bool(module.track_running_stats)
    return isinstance(module, STATEFUL)


def offending_layers(model: nn.Module, requirement: str) -> list[str]:
    """``"name (Type)"`` of every layer that breaks ``requirement``."""
    return [
        f"{name or 'the model'} ({type(m).__name__})" for name, m in model.named_modules() if _violates(m, requirement)
    ]


def breach(model: nn.Module, requirement: str) -> str | None:
    """Why ``model`` breaks ``requirement``, naming the offending layers (one clause), or None."""
    bad = offending_layers(model, requirement)
    if not bad:
        return None
    return (
        f"model layer{'s' if len(bad) > 1 else ''} "
        + ", ".join(bad[:6])
        + (f" and {len(bad) - 6} more" if len(bad) > 6 else "")
        + f" {'break' if len(bad) > 1 else 'breaks'} the assumption that the model is {requirement}: "
        f"{_WHY[requirement]}"
    )


def exclusion(model: nn.Module, requirements: frozenset[str] | tuple[str, ...]) -> str | None:
    """The first requirement of a theorem that ``model`` breaks, as :func:`breach` says it, or None."""
    return next((why for r in REQUIREMENTS if r in requirements and (why := breach(model, r))), None)


def check_model(model: nn.Module, requirements: frozenset[str] | tuple[str, ...], method: str) -> tuple[Condition, ...]:
    """One condition per requirement of ``method``'s theorem, met or naming the offending layers."""
    out = []
    for requirement in REQUIREMENTS:
        if requirement not in requirements:
            continue
        why = breach(model, requirement)
        if why:
            detail = f"{why}; {method}'s certificate is not issued (the audit still measures it)"
        else:
            detail = (
                f"every layer of the model is {requirement} (checked on the modules; operations written "
                "inside forward are not visible)"
                if requirement == SMOOTH
                else "no layer of the model keeps batch statistics or draws randomness"
            )
        out.append(Condition(f"model is {requirement}", why is None, detail))
    return tuple(out)
