"""Models for which the certified methods' smoothness assumptions hold.

The theorems behind certified unlearning assume every per-sample loss is L-smooth, so models use
smooth activations only (no ReLU kinks).
"""

from __future__ import annotations

from torch import nn

MODELS = ("logreg", "mlp")
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
        raise ValueError(f"activation must be one of {sorted(ACTIVATIONS)}; got {activation!r}")
    layers: list[nn.Module] = []
    width = n_features
    for h in hidden:
        layers += [nn.Linear(width, h), ACTIVATIONS[activation]()]
        width = h
    layers.append(nn.Linear(width, output_units(n_classes)))
    return nn.Sequential(*layers)


def build_model(name: str, n_features: int, n_classes: int, **options) -> nn.Module:
    """Build a registered model by name (``logreg`` or ``mlp``)."""
    if name == "logreg":
        return logistic_regression(n_features, n_classes)
    if name == "mlp":
        return mlp(n_features, n_classes, **options)
    raise ValueError(f"model must be one of {MODELS}; got {name!r}")
