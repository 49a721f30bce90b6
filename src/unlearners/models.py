"""The model registry, and the built-in models for which the certified methods' smoothness
assumptions hold.

The theorems behind certified unlearning assume every per-sample loss is L-smooth, so the
built-in models use smooth activations only (no ReLU kinks). A model is a builder
``build(n_features, n_classes, **options) -> nn.Module`` registered by name in :data:`MODELS`;
third-party builders register through the entry-point group ``unlearn_audit.models``
(``name = "package.module:builder"``), and one that fails to import is reported with its error
(:func:`unavailable_models`), never dropped silently.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from importlib.metadata import entry_points

from torch import nn

from certify.errors import InvalidInput

ENTRY_POINT_GROUP = "unlearn_audit.models"
ACTIVATIONS = {"softplus": nn.Softplus, "tanh": nn.Tanh, "gelu": nn.GELU, "silu": nn.SiLU}


def output_units(n_classes: int) -> int:
    """One logit for a binary problem (logistic loss), C logits otherwise (softmax)."""
    return 1 if n_classes == 2 else n_classes


def logistic_regression(n_features: int, n_classes: int) -> nn.Module:
    """Linear model with bias: binary logistic regression, or multinomial for C > 2."""
    return nn.Sequential(nn.Linear(n_features, output_units(n_classes)))


def mlp(
    n_features: int,
    n_classes: int,
    hidden: tuple[int, ...] = (64,),
    activation: str = "softplus",
) -> nn.Module:
    """A multilayer perceptron with a smooth activation (softplus by default)."""
    if activation not in ACTIVATIONS:
        raise InvalidInput("activation", "one of " + ", ".join(map(repr, sorted(ACTIVATIONS))), activation)
    layers: list[nn.Module] = []
    width = n_features
    for h in hidden:
        layers += [nn.Linear(width, h), ACTIVATIONS[activation]()]
        width = h
    layers.append(nn.Linear(width, output_units(n_classes)))
    return nn.Sequential(*layers)


#: name -> builder of every built-in model.
MODELS: dict[str, Callable[..., nn.Module]] = {"logreg": logistic_regression, "mlp": mlp}


def _plugins() -> tuple[dict[str, Callable[..., nn.Module]], dict[str, str]]:
    found, broken = {}, {}
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name in MODELS:
            continue
        try:
            module, _, attr = ep.value.partition(":")
            builder = getattr(import_module(module), attr)
            if not callable(builder):
                raise TypeError(f"{ep.value} is not callable")
            found[ep.name] = builder
        except Exception as exc:  # reported, never dropped
            broken[ep.name] = f"{ep.value}: {type(exc).__name__}: {exc}"
    return found, broken


def available_models() -> dict[str, Callable[..., nn.Module]]:
    """Every model that loads, built-in and plug-in, by name."""
    return {**MODELS, **_plugins()[0]}


def unavailable_models() -> dict[str, str]:
    """Plug-in models that failed to import, with their error, by name."""
    return _plugins()[1]


def build_model(name: str, n_features: int, n_classes: int, **options) -> nn.Module:
    """Build a registered model by name."""
    if name in MODELS:
        return MODELS[name](n_features, n_classes, **options)
    builders = available_models()
    if name not in builders:
        broken = unavailable_models()
        if name in broken:
            raise InvalidInput("model", "a model whose plug-in imports", name, hint=f"Importing failed: {broken[name]}")
        raise InvalidInput("model", "one of " + ", ".join(repr(m) for m in builders), name)
    return builders[name](n_features, n_classes, **options)
