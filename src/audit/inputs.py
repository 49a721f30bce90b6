"""The audit's inputs, before any training: the configuration with the caller's in-memory
inputs recorded, the data, the forget set Z and the model's objective (the pipeline's data stage).

Errors name the configuration field the user set, never a loader's argument.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import torch
from torch import Tensor

from audit.attacking import gradient_attacks
from audit.audited_model import CALLER, prepare, resolve
from audit.config import AuditConfig
from audit.datasets import AuditData, load_dataset, select_forget
from audit.datasets.forget import indices_of_ids, mislabel_records
from audit.datasets.user import from_user_data, read_ids
from certify.errors import InvalidInput
from unlearners.models import KEEP_IMAGE_SCALE


def with_caller_inputs(
    config: AuditConfig,
    *,
    model: Any,
    data: Any,
    forget_ids: Any,
    train: Any = None,
    unlearn: Any = None,
    original: Any = None,
) -> AuditConfig:
    """The configuration the report records: ``caller`` where the library call passed the model,
    the data or the forget ids in memory (validated: they cannot be combined with another
    selection of the same thing)."""
    config.validate()
    updates: dict[str, Any] = {}
    if model is not None:
        updates["model"] = CALLER
    if data is not None:
        updates["dataset"] = CALLER
    if forget_ids is not None:
        chosen = [
            name for name in ("forget_fraction", "forget_class", "forget_groups") if getattr(config, name) is not None
        ]
        if chosen or config.forget_count not in (None, 1) or config.forget_ids not in (None, CALLER):
            raise InvalidInput(
                "forget_ids",
                "given without another forget selection (forget_count, forget_fraction, "
                "forget_class, forget_groups, forget_ids)",
                chosen or "another selection",
            )
        updates.update(forget_ids=CALLER, forget_count=None)
    updates.update(
        {
            field: CALLER
            for field, given in (("train", train), ("unlearn", unlearn), ("original", original))
            if given is not None
        }
    )
    if "train" in updates or "unlearn" in updates or "original" in updates:  # validated: the pair, and no other method
        dataclasses.replace(config, **updates).validate()
    if "unlearn" in updates or config.unlearn is not None:  # the caller's code is the audited method
        updates["method"] = CALLER
    for field, given in (
        ("dataset", data),
        ("forget_ids", forget_ids),
        ("train", train),
        ("unlearn", unlearn),
        ("original", original),
    ):
        if getattr(config, field) == CALLER and given is None and field not in updates:
            raise InvalidInput(
                field, f"a value of its own, or {field.replace('dataset', 'data')}= passed to audit.run", CALLER
            )
    return dataclasses.replace(config, **updates) if updates else config


def load_inputs(
    config: AuditConfig,
    model: Any,
    data: Any,
    forget_ids: Any,
    seeds: dict[str, int],
    dtype: torch.dtype,
    device: torch.device,
) -> tuple:
    """The data, the forget set (positions), X and y as tensors, the model's source and its objective."""
    data = _load_data(config, data, seeds["data"])
    if config.forget_strategy == "outlying" and config.forget_ids is not None:
        raise InvalidInput("forget_strategy", "random or mislabelled when the forget set is given by id", "outlying")
    forget_np = (
        indices_of_ids(data, read_ids(config.forget_ids) if forget_ids is None else forget_ids)
        if config.forget_ids is not None
        else forget_positions(data, config, seeds["forget"])
    )
    labels = (
        mislabel_records(data.y_train, forget_np, data.n_classes, seeds["forget"])
        if config.forget_strategy == "mislabelled"
        else data.y_train
    )
    X, y = to_tensor(data.X_train, dtype, device), torch.as_tensor(labels, device=device)
    module, model_source = resolve(model, config, data.input_shape, data.n_classes)
    objective = prepare(module, X, y, data.n_classes, dtype, device, own_training=config.train is not None)
    gradient_attacks(config.attacks, objective)
    return data, forget_np, X, y, model_source, objective


def _load_data(config: AuditConfig, data: Any, seed: int) -> AuditData:
    options = dataset_options(config)
    if data is None:
        return load_dataset(config.dataset, seed=seed, max_train=config.max_train, **options)
    return from_user_data(data, seed=seed, max_train=config.max_train, **options)


def identifier(data: AuditData, config: AuditConfig) -> str:
    """What the deletion request's ids are (the commitment records it)."""
    if data.record_ids is None:
        return (
            "position of the record in the caller's data (0-based; training records first for a split)"
            if config.dataset == CALLER
            else "position of the record in the dataset source (0-based)"
        )
    if config.id_column is not None:
        return f"the record's id in column {config.id_column!r}"
    return "the caller's record id"


def dataset_options(config: AuditConfig) -> dict:
    """The loader options the configuration sets (columns, feature map)."""
    opts = {}
    if config.label_column is not None:
        opts["label_column"] = config.label_column
    if config.group_column is not None:
        opts["group_column"] = config.group_column
    if config.id_column is not None:
        opts["id_column"] = config.id_column
    feature_map = dict(config.feature_map)
    if config.model in KEEP_IMAGE_SCALE:  # the caller's row_norm, when given, wins
        feature_map.setdefault("row_norm", "none")
    if config.pca_components is not None:
        feature_map["pca_components"] = int(config.pca_components)
    if feature_map:
        opts["feature_map"] = feature_map
    return opts


_FORGET_FIELDS = {
    "count": "forget_count",
    "fraction": "forget_fraction",
    "classes": "forget_class",
    "n_groups": "forget_groups",
    "groups": "forget_groups",
}


def forget_positions(data: AuditData, config: AuditConfig, seed: int) -> np.ndarray:
    """Select Z; errors name the configuration field the user set, not the loader's argument."""
    options = _forget_options(config)
    try:
        return select_forget(data, seed=seed, strategy=config.forget_strategy, **options)
    except InvalidInput as exc:
        used = _FORGET_FIELDS[next(iter(options))]
        field = (
            "forget_strategy" if exc.field == "strategy" else used if exc.field in ("forget", *options) else exc.field
        )
        raise InvalidInput(field, exc.allowed, exc.got, exc.hint) from None


def _forget_options(config: AuditConfig) -> dict:
    if config.forget_count is not None:  # per request
        return {"count": int(config.forget_count) * int(config.requests)}
    if config.forget_fraction is not None:
        return {"fraction": float(config.forget_fraction)}
    if config.forget_class is not None:
        return {"classes": [int(config.forget_class)]}
    return {"n_groups": int(config.forget_groups)}


def split_requests(forget: Tensor, n_requests: int, seed: int) -> list[Tensor]:
    """Split Z into the requests served one after another, in a seeded random order."""
    if n_requests > forget.numel():
        raise InvalidInput("requests", f"at most the number of forgotten records ({forget.numel()})", n_requests)
    if n_requests == 1:
        return [forget]
    order = torch.randperm(forget.numel(), generator=torch.Generator().manual_seed(seed)).to(forget.device)
    return list(forget[order].chunk(n_requests))


def resolve_device(name: str) -> torch.device:
    """The run's device: ``auto`` is CUDA where there is one."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise InvalidInput("device", "'cpu' or 'auto' on a machine without CUDA", name)
    return torch.device(name)


def to_tensor(a: np.ndarray, dtype: torch.dtype, device: torch.device) -> Tensor:
    """An array as a contiguous tensor of the run's dtype on its device."""
    return torch.as_tensor(np.ascontiguousarray(a), dtype=dtype, device=device)


def applicability(
    configs: dict[str, Any], *, model: Any = None, data: Any = None, forget_ids: Any = None
) -> dict[str, str | None]:
    """For each method (name → its configuration), why its theorem excludes this model and data
    (one sentence), or None.

    The data and the model are prepared once, as :func:`run` prepares them (the configurations
    differ only in their method and its options); each method is then built on them, which is
    where a method refuses a model it cannot run on (Newton removal on anything but binary
    logistic regression), and the model is checked against the theorem's requirements (a ReLU
    where smoothness is needed). Nothing is trained.
    """
    from audit.methods import build_method, run_dtype
    from unlearners.modelcheck import exclusion

    first = with_caller_inputs(next(iter(configs.values())), model=model, data=data, forget_ids=forget_ids)
    seeds = first.seeds()
    device, dtype = resolve_device(first.device), getattr(torch, run_dtype(first)[0])
    *_, objective = load_inputs(first, model, data, forget_ids, seeds, dtype, device)
    reasons: dict[str, str | None] = {}
    for name, config in configs.items():
        try:
            method = build_method(config, objective, seeds)
        except InvalidInput as exc:
            reasons[name] = str(exc)
            continue
        reasons[name] = exclusion(objective.model, type(method).model_requirements)
    return reasons
