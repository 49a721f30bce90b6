"""The model registry, and the built-in models for which the certified methods' smoothness
assumptions hold.

The theorems behind certified unlearning assume every per-sample loss is L-smooth, so the
built-in models use smooth activations only (no ReLU kinks, no max pooling). A model is a
builder ``build(input_shape, n_classes, **options) -> nn.Module`` registered by name in
:data:`MODELS`, where ``input_shape`` is the shape of one record (an int ``d`` stands for
``(d,)``: tabular features; ``(C, H, W)`` for images);
third-party builders register through the entry-point group ``unlearn_audit.models``
(``name = "package.module:builder"``), and one that fails to import is reported with its error
(:func:`unavailable_models`), never dropped silently.
"""

from __future__ import annotations

import math
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


InputShape = int | tuple[int, ...]


def record_shape(input_shape: InputShape) -> tuple[int, ...]:
    """``(d,)`` for an int ``d``; a tuple unchanged (checked: positive sizes)."""
    shape = (input_shape,) if isinstance(input_shape, int) else tuple(input_shape)
    if not shape or not all(isinstance(s, int) and s > 0 for s in shape):
        raise InvalidInput("input_shape", "positive sizes of one record, e.g. 14 or (1, 28, 28)", input_shape)
    return shape


def _flat_input(input_shape: InputShape) -> tuple[list[nn.Module], int]:
    """A flat model's first layers: ``nn.Flatten`` for records with several axes, and its width."""
    shape = record_shape(input_shape)
    return ([nn.Flatten()] if len(shape) > 1 else []), math.prod(shape)


def logistic_regression(input_shape: InputShape, n_classes: int) -> nn.Module:
    """Linear model with bias: binary logistic regression, or multinomial for C > 2."""
    head, width = _flat_input(input_shape)
    return nn.Sequential(*head, nn.Linear(width, output_units(n_classes)))


def mlp(
    input_shape: InputShape,
    n_classes: int,
    hidden: tuple[int, ...] = (64,),
    activation: str = "softplus",
) -> nn.Module:
    """A multilayer perceptron with a smooth activation (softplus by default)."""
    if activation not in ACTIVATIONS:
        raise InvalidInput("activation", "one of " + ", ".join(map(repr, sorted(ACTIVATIONS))), activation)
    layers, width = _flat_input(input_shape)
    for h in hidden:
        layers += [nn.Linear(width, h), ACTIVATIONS[activation]()]
        width = h
    layers.append(nn.Linear(width, output_units(n_classes)))
    return nn.Sequential(*layers)


def cnn(
    input_shape: InputShape,
    n_classes: int,
    channels: tuple[int, int] = (6, 12),
    kernel: int = 5,
    activation: str = "tanh",
) -> nn.Module:
    """A small LeNet-style convolutional network with smooth layers only.

    Two blocks of convolution (``kernel`` x ``kernel``, no padding), a smooth activation (tanh by
    default) and 2 x 2 average pooling, then a linear layer to the outputs: the shape of the
    seed papers' MNIST / Fashion-MNIST CNNs with their ReLU and max pooling replaced by smooth
    operations, so that the L-smoothness the certified methods assume holds. For 1 x 28 x 28
    images and the default channels it has 3,898 parameters (10 classes).
    """
    if activation not in ACTIVATIONS:
        raise InvalidInput("activation", "one of " + ", ".join(map(repr, sorted(ACTIVATIONS))), activation)
    shape = record_shape(input_shape)
    if len(shape) == 2:
        shape = (1, *shape)
    if len(shape) != 3:
        raise InvalidInput(
            "model",
            "'cnn' on image records (C x H x W or H x W), e.g. 'idx:<dir>'",
            f"records of shape {record_shape(input_shape)}",
            hint="Use 'logreg' or 'mlp' for tabular features.",
        )
    c, h, w = shape
    layers: list[nn.Module] = [] if len(record_shape(input_shape)) == 3 else [nn.Unflatten(1, (1, h, w))]
    for out in channels:
        h, w = (h - kernel + 1) // 2, (w - kernel + 1) // 2
        if h < 1 or w < 1:
            raise InvalidInput(
                "model",
                f"'cnn' on images of at least {3 * kernel + 1} x {3 * kernel + 1} pixels "
                f"(two {kernel} x {kernel} convolutions, each followed by 2 x 2 pooling)",
                f"images of {shape[1]} x {shape[2]}",
            )
        layers += [nn.Conv2d(c, out, kernel), ACTIVATIONS[activation](), nn.AvgPool2d(2)]
        c = out
    layers += [nn.Flatten(), nn.Linear(c * h * w, output_units(n_classes))]
    return nn.Sequential(*layers)


#: name -> builder of every built-in model.
MODELS: dict[str, Callable[..., nn.Module]] = {"logreg": logistic_regression, "mlp": mlp, "cnn": cnn}

#: The horizon η·L·T of the step size η = horizon/(L·T) when neither --eta nor --horizon is given.
DEFAULT_HORIZON = 6.0
#: Built-in models whose default step is this multiple of 1/L at every step (horizon = multiple·T)
#: rather than the fixed horizon: the built-in cnn at η·L·T = 6 barely moves from its
#: initialisation (0.175 test accuracy; at 100 full-batch steps on 2,000 MNIST images η is
#: 1/17 of 1/L), while η = 1/(2L) learns. Half of 1/L keeps Algorithm 3's ηL < 1 (R2D) with a
#: margin for L measured along the run above L at θ_0. The price is the first-order certificates'
#: exp(ηLT): honest noise, reported, instead of an audit of a model that learned nothing.
STEP_OVER_L = {"cnn": 0.5}


def default_horizon(model: str, steps: int) -> float:
    """η·L·T of the default step for ``model`` trained ``steps`` steps (:data:`STEP_OVER_L`)."""
    return STEP_OVER_L[model] * steps if model in STEP_OVER_L else DEFAULT_HORIZON


#: Built-in models that take images as images: their records keep the pixels' scale by default
#: (the loaders' clipping of every record to the unit ball, which gives flat models their analytic
#: constants, left MNIST pixels below 0.25 and the CNN at the majority rate).
KEEP_IMAGE_SCALE = frozenset({"cnn"})


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


def build_model(name: str, input_shape: InputShape, n_classes: int, **options) -> nn.Module:
    """Build a registered model by name for records of ``input_shape``."""
    if name in MODELS:
        return MODELS[name](input_shape, n_classes, **options)
    builders = available_models()
    if name not in builders:
        broken = unavailable_models()
        if name in broken:
            raise InvalidInput("model", "a model whose plug-in imports", name, hint=f"Importing failed: {broken[name]}")
        raise InvalidInput("model", "one of " + ", ".join(repr(m) for m in builders), name)
    return builders[name](input_shape, n_classes, **options)
