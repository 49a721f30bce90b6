"""The audited model: which module, checked before any work, and described for the report.

The model comes from one of three places:

* a built-in or plug-in name (``config.model``: ``logreg``, ``mlp``, ``cnn``), built for the
  data's record shape;
* ``config.model = "module:<import path or file.py>:<attribute>"``: a factory (or a module
  instance) in the caller's code, as the CLI's ``--model`` names it;
* ``audit.run(config, model=...)``: an ``nn.Module`` instance or a factory (the configuration
  then records ``model = "caller"``).

A factory is called as ``factory(input_shape, n_classes)`` (``input_shape`` the shape of one
record, e.g. ``(1, 28, 28)``); a module instance is used as it is. The module is deep-copied (the caller's object is never
modified), moved to the audit's dtype and device, and *probed* on two records before any
training: it must accept the records' shape, give one output per class (or one for a binary
problem), and be differentiable record by record through ``torch.func`` (``functional_call``
and ``vmap``), which every method relies on. Each failure is one sentence naming the field
``model``.
"""

from __future__ import annotations

import copy
import hashlib
import importlib
import importlib.util
import inspect
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn

from audit.measurements import tensor_sha
from certify.errors import InvalidInput
from unlearners.models import MODELS, build_model, output_units
from unlearners.objective import Objective

CALLER = "caller"
MODULE_PREFIX = "module:"
#: Leaf layers listed one by one in the report (the counts by type cover every layer).
MAX_LISTED_LAYERS = 200


def resolve(spec: Any, config: Any, input_shape: tuple[int, ...], n_classes: int) -> tuple[nn.Module, dict[str, str]]:
    """The module to audit and where it came from: ``source`` (a sentence for the report) and
    ``origin`` (whose model it is, one of :data:`audit.report.schema.MODEL_ORIGINS`)."""
    if spec is None:
        name = config.model
        if name == CALLER:
            raise InvalidInput(
                "model", "a registered model, 'module:<path>:<factory>', or model= passed to audit.run", name
            )
        if name.startswith(MODULE_PREFIX):
            return (
                _built(load_factory(name), input_shape, n_classes, name),
                {"source": f"factory {name}", "origin": "module"},
            )
        options = {"hidden": tuple(config.hidden)} if name == "mlp" else {}
        kind = "built-in" if name in MODELS else "plug-in"
        module = build_model(name, input_shape, n_classes, **options)
        return module, {"source": f"{kind} model {name!r}", "origin": kind}
    if isinstance(spec, nn.Module):
        return copy.deepcopy(spec), {"source": f"the caller's module ({_qualname(spec)})", "origin": CALLER}
    if callable(spec):
        return (
            _built(spec, input_shape, n_classes, _qualname(spec)),
            {"source": f"the caller's factory {_qualname(spec)}", "origin": CALLER},
        )
    raise InvalidInput("model", "an nn.Module or a factory that builds one", type(spec).__name__)


def load_factory(text: str, field: str = "model") -> Callable[..., Any]:
    """The object named by ``module:<dotted.module or path/file.py>:<attribute>``; errors name
    ``field`` (``model``, or ``train``/``unlearn`` for the caller's functions)."""
    noun = "factory" if field == "model" else "function"
    where, _, attribute = text[len(MODULE_PREFIX) :].rpartition(":")
    if not where or not attribute:
        raise InvalidInput(field, f"'module:<package.module or file.py>:<{noun}>'", text)
    try:
        if where.endswith(".py") or "/" in where:
            path = Path(where).expanduser()
            if not path.is_file():
                raise InvalidInput(field, f"'module:<file.py>:<{noun}>' with an existing file", str(path))
            spec = importlib.util.spec_from_file_location(f"unlearn_audit_user_model_{path.stem}", path)
            if spec is None or spec.loader is None:  # not Python source (.txt, .pt): nothing can import it
                raise InvalidInput(
                    field,
                    ("a registered model ('logreg', 'mlp', 'cnn' or a plug-in), " if field == "model" else "")
                    + f"'module:<package.module>:<{noun}>' or "
                    f"'module:<path/to/file.py>:<{noun}>' (a Python source file ending in .py)",
                    text,
                )
            module = importlib.util.module_from_spec(spec)
            sys.modules[spec.name] = module
            # the audit writes nothing beside the caller's file (no __pycache__ in their project): what it
            # writes goes to --out and --resume only
            writes, sys.dont_write_bytecode = sys.dont_write_bytecode, True
            try:
                spec.loader.exec_module(module)
            finally:
                sys.dont_write_bytecode = writes
            import cloudpickle

            # a worker process (executor processes or ray) cannot import a file loaded by path: what
            # it defines (the model class, the train and unlearn functions) travels by value
            cloudpickle.register_pickle_by_value(module)
        else:
            module = importlib.import_module(where)
    except InvalidInput:
        raise
    except Exception as exc:  # the caller's code failed to import: say so in one sentence
        raise InvalidInput(field, f"an importable module in {text!r}", f"{type(exc).__name__}: {exc}") from None
    factory = getattr(module, attribute, None)
    if factory is None:
        raise InvalidInput(field, f"an attribute {attribute!r} of {where}", "no such attribute")
    return factory


def _built(factory: Any, input_shape: tuple[int, ...], n_classes: int, name: str) -> nn.Module:
    if isinstance(factory, nn.Module):
        return copy.deepcopy(factory)
    if not callable(factory):
        raise InvalidInput("model", "a factory (callable) or an nn.Module", f"{name}: {type(factory).__name__}")
    try:
        model = factory(tuple(input_shape), n_classes)
    except InvalidInput:
        raise
    except Exception as exc:  # the caller's code: one sentence, never a traceback
        raise InvalidInput(
            "model",
            "a factory called as factory(input_shape, n_classes) that builds a module for "
            f"records of shape {tuple(input_shape)} and {n_classes} classes",
            f"{type(exc).__name__}: {exc}",
        ) from None
    if not isinstance(model, nn.Module):
        raise InvalidInput("model", "a factory that returns an nn.Module", type(model).__name__)
    return model


def _qualname(obj: Any) -> str:
    target = obj if inspect.isclass(obj) or inspect.isfunction(obj) else type(obj)
    return f"{getattr(target, '__module__', '?')}.{getattr(target, '__qualname__', type(obj).__name__)}"


def prepare(
    model: nn.Module,
    X: Tensor,
    y: Tensor,
    n_classes: int,
    dtype: torch.dtype,
    device: torch.device,
    *,
    own_training: bool = False,
) -> Objective:
    """The objective over the checked module: probed on two records (see the module docstring).

    ``own_training``: the caller's own code trains the model (:mod:`unlearners.caller`): θ holds
    its BatchNorm statistics too (``Objective(with_buffers=True)``), and a module that ``torch.func``
    cannot differentiate record by record is still audited by the attacks that only read outputs;
    the reason is kept in ``objective.gradient_failure`` (None when the probe passed) for the
    attacks that need gradients to refuse."""
    try:
        model = model.to(device=device, dtype=dtype)
    except Exception as exc:
        raise InvalidInput(
            "model", f"a module that can move to {device} in {dtype}", f"{type(exc).__name__}: {exc}"
        ) from None
    if not any(True for _ in model.parameters()):
        raise InvalidInput("model", "a module with trainable parameters", f"{type(model).__name__} has none")
    model.eval()
    sample = X[:2]
    try:
        with torch.no_grad():
            out = model(sample)
    except Exception as exc:
        raise InvalidInput(
            "model", f"a module that takes records of shape {tuple(X.shape[1:])}", f"{type(exc).__name__}: {exc}"
        ) from None
    if not isinstance(out, Tensor) or out.shape[0] != sample.shape[0] or out.dim() > 2:
        raise InvalidInput(
            "model",
            "a module whose output is (batch, outputs) or (batch,)",
            tuple(out.shape) if isinstance(out, Tensor) else type(out).__name__,
        )
    width = 1 if out.dim() == 1 else int(out.shape[1])
    expected = output_units(n_classes)
    if width != expected and not (width == n_classes == 2):
        raise InvalidInput(
            "model",
            f"{expected} output{'s' if expected > 1 else ''} for the data's {n_classes} "
            "classes" + (" (one logit for a binary problem, or two)" if n_classes == 2 else ""),
            f"{width} outputs",
        )
    objective = Objective(model, n_outputs=width, with_buffers=own_training)
    state = {**dict(model.named_parameters()), **dict(model.named_buffers())}
    theta = torch.cat([state[name].detach().reshape(-1) for name in objective.names]).to(dtype)
    try:
        g = objective.per_sample_grads(theta, sample, y[:2])
    except Exception as exc:
        failure = InvalidInput(
            "model",
            "a module that torch.func can differentiate record by record "
            "(functional_call and vmap; no in-place buffer updates, no data-dependent control "
            "flow)",
            f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}",
        )
        if not own_training:
            raise failure from None
        objective.gradient_failure = str(failure)
        return objective
    if not bool(torch.isfinite(g).all()):
        raise InvalidInput(
            "model", "a module with finite per-record gradients at its initial parameters", "non-finite gradients"
        )
    return objective


def describe(
    objective: Objective,
    provenance: dict[str, str],
    input_shape: tuple[int, ...],
    theta0: Tensor,
    conditions: tuple = (),
) -> dict[str, Any]:
    """What was audited: the layers, the parameter count, SHA-256 of the architecture and of θ_0
    (the trained parameters' digests are the report's ``parameters.sha256_*``)."""
    model = objective.model
    leaves = [(name, m) for name, m in model.named_modules() if not any(True for _ in m.children())]
    layers = [
        {
            "name": name or type(model).__name__,
            "type": type(m).__name__,
            "parameters": int(sum(p.numel() for p in m.parameters(recurse=False))),
        }
        for name, m in leaves
    ]
    architecture = architecture_text(objective)
    return {
        **provenance,  # source and origin (resolve)
        "module_class": _qualname(model),
        "input_shape": [int(s) for s in input_shape],
        "outputs": int(objective.n_outputs),
        "parameters": int(objective.dim),
        "layer_types": dict(sorted(Counter(type(m).__name__ for _, m in leaves).items())),
        "layers": layers[:MAX_LISTED_LAYERS],
        "layers_not_listed": max(0, len(layers) - MAX_LISTED_LAYERS),
        "architecture_sha256": hashlib.sha256(architecture.encode("utf-8")).hexdigest(),
        "architecture_sha256_of": "the module's repr() and its parameters' names and shapes, UTF-8",
        "initial_theta_sha256": tensor_sha(theta0),
        "checks": [{"name": c.name, "met": bool(c.met), "detail": c.detail} for c in conditions],
    }


def architecture_text(objective: Objective) -> str:
    """The text the architecture hash covers: ``repr`` of the module, then every parameter's
    name and shape (the parameter values are covered by θ's hash)."""
    shapes = "\n".join(f"{n} {tuple(s)}" for n, s in zip(objective.names, objective.shapes))
    return repr(objective.model) + "\n" + shapes
