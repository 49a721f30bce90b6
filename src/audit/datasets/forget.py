"""Forget-set selection: :func:`select_forget` picks the training records to forget."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from audit.datasets.container import AuditData
from audit.datasets.split import check_fraction, round_count
from certify.errors import Integer, InvalidInput, require

__all__ = ["STRATEGIES", "mislabel_records", "select_forget"]

_INTEGER = Integer()

#: How ``count``/``fraction`` records are picked: at random, the worst case for the attacks
#: (records far from their class), or random records turned into canaries by a wrong label.
STRATEGIES = ("random", "outlying", "mislabelled")


def select_forget(
    data: AuditData,
    *,
    count: int | None = None,
    fraction: float | None = None,
    groups: Sequence[int] | None = None,
    n_groups: int | None = None,
    classes: Sequence[int] | None = None,
    seed: int = 0,
    strategy: str = "random",
) -> np.ndarray:
    """Indices (sorted int64, into the training split) of the records to forget.

    ``strategy`` picks the ``count``/``fraction`` records: ``"random"``; ``"outlying"``, the
    records farthest (standardised Euclidean distance) from their class's mean, which a model
    memorises most and attacks see best (a worst case next to random records); or
    ``"mislabelled"``, random records that the caller then relabels with
    :func:`mislabel_records` (canaries). Class and group selections are random by definition.

    Give exactly one selector:

    ``count``
        ``count`` random training records.
    ``fraction``
        ``round(fraction * n_train)`` random records (at least 1).
    ``groups``
        Every record whose group id (``data.groups_train``) is in the list.
    ``n_groups``
        Every record of ``n_groups`` random groups.
    ``classes``
        Every record whose label is in the list.

    At most ``n_train // 2`` records may be selected: forgetting more than half of the training
    set is a retrain, and should be done (and audited) as one. Deterministic given ``seed``.
    """
    n = data.n_train
    limit = n // 2
    given = {
        k: v
        for k, v in (
            ("count", count),
            ("fraction", fraction),
            ("groups", groups),
            ("n_groups", n_groups),
            ("classes", classes),
        )
        if v is not None
    }
    if len(given) != 1:
        raise InvalidInput(
            "forget",
            "exactly one of count, fraction, groups, n_groups, classes",
            given or None,
        )
    seed_i = Integer(lo=0).check("seed", seed)
    rng = np.random.default_rng(seed_i)
    if strategy not in STRATEGIES:
        raise InvalidInput("strategy", "one of " + ", ".join(STRATEGIES), strategy)
    if strategy != "random" and count is None and fraction is None:
        raise InvalidInput("strategy", "'random' when the forget set is chosen by class or group", strategy)

    def too_many(got: object) -> InvalidInput:
        return InvalidInput(
            "forget",
            f"at most n//2 records ({limit} of the {n} training records)",
            got,
            hint="Beyond half of the training set a retrain from scratch is the honest answer.",
        )

    def nothing(field_name: str, got: object) -> InvalidInput:
        return InvalidInput(
            field_name,
            "a selection that matches at least one training record",
            got,
            hint="It selected no record.",
        )

    if count is not None:
        m = Integer(lo=1).check("count", count)
        if m > limit:
            raise too_many(f"count={count}")
        idx = _pick(data, m, strategy, rng)
    elif fraction is not None:
        f = check_fraction("fraction", fraction)
        m = max(1, round_count(f, n))
        if m > limit:
            raise too_many(f"fraction={fraction} ({m} records)")
        idx = _pick(data, m, strategy, rng)
    elif classes is not None:
        cls = _int_list("classes", classes)
        bad = [c for c in cls if not 0 <= c < data.n_classes]
        if bad:
            raise InvalidInput("classes", f"class labels in 0..{data.n_classes - 1}", bad)
        idx = np.flatnonzero(np.isin(data.y_train, cls))
        if idx.size == 0:
            raise nothing("classes", cls)
        if idx.size > limit:
            raise too_many(f"classes={cls} ({idx.size} records)")
    else:
        if data.groups_train is None:
            field_name = "groups" if groups is not None else "n_groups"
            raise InvalidInput(
                field_name,
                "used only with data that has groups (groups_train is None here)",
                groups if groups is not None else n_groups,
                hint="Load with group_column=... or from_arrays(..., groups=...).",
            )
        present = np.unique(data.groups_train)
        if groups is not None:
            chosen = _int_list("groups", groups)
            absent = [g for g in chosen if g not in set(present.tolist())]
            if absent:
                raise nothing("groups", absent)
        else:
            k = require(
                Integer(lo=1, hi=int(present.size)),
                "n_groups",
                n_groups,
                f"an integer in 1..{present.size} (groups present in the training split)",
            )
            chosen = sorted(int(g) for g in rng.choice(present, size=k, replace=False))
        idx = np.flatnonzero(np.isin(data.groups_train, chosen))
        if idx.size == 0:
            raise nothing("groups" if groups is not None else "n_groups", chosen)
        if idx.size > limit:
            what = f"groups={chosen}" if groups is not None else f"n_groups={n_groups}"
            raise too_many(f"{what} ({idx.size} records)")
    return np.sort(np.asarray(idx, dtype=np.int64))


def _pick(data: AuditData, m: int, strategy: str, rng: np.random.Generator) -> np.ndarray:
    if strategy != "outlying":
        return rng.choice(data.n_train, size=m, replace=False)
    X = data.X_train.reshape(data.n_train, -1).astype(np.float64)
    X = (X - X.mean(0)) / np.where(X.std(0) > 0, X.std(0), 1.0)
    distance = np.zeros(data.n_train)
    for c in np.unique(data.y_train):
        rows = data.y_train == c
        distance[rows] = np.linalg.norm(X[rows] - X[rows].mean(0), axis=1)
    order = np.lexsort((rng.random(data.n_train), -distance))  # farthest first; ties at random
    return order[:m]


def mislabel_records(y: np.ndarray, idx: np.ndarray, n_classes: int, seed: int | np.random.Generator) -> np.ndarray:
    """A copy of the labels ``y`` in which every record of ``idx`` has another class: its label
    shifted by a random non-zero offset mod ``n_classes`` (from ``seed``, or a generator the
    caller derived for its own role). Canaries that a model can only fit by memorising them."""
    if n_classes < 2:
        raise InvalidInput("forget_strategy", "random or outlying for data with a single class", "mislabelled")
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(Integer(lo=0).check("seed", seed))
    out = np.array(y, copy=True)
    out[idx] = (out[idx] + rng.integers(1, n_classes, size=len(idx))) % n_classes
    return out


def _is_integer(value: object) -> bool:
    try:
        _INTEGER.check("value", value)
    except InvalidInput:
        return False
    return True


def _int_list(field_name: str, values: Any) -> list[int]:
    """Sorted distinct integers from one integer or an iterable of them."""
    if isinstance(values, (str, bytes)) or _is_integer(values):
        values = [values]
    try:
        out = list(values)
    except TypeError:
        raise InvalidInput(field_name, "a list of integers", values) from None
    try:
        ints = [_INTEGER.check(field_name, v) for v in out]
    except InvalidInput:
        ints = []
    if not ints:
        raise InvalidInput(field_name, "a non-empty list of integers", values)
    return sorted(set(ints))


def indices_of_ids(data: AuditData, ids: Any, field: str = "forget_ids") -> np.ndarray:
    """Indices (sorted int64, into the training split) of the records with the caller's ``ids``.

    Every id must name a training record: an id of a held-out record (test, unseen or the
    reference split) or of no record is an error that names it, never silently dropped. At
    most ``n_train // 2`` records, as for :func:`select_forget`.
    """
    from audit.datasets.user import check_ids

    wanted = check_ids(ids, field)
    if wanted.size == 0:
        raise InvalidInput(field, "at least one record id", "no ids")
    train = data.train_ids()
    if (train.dtype.kind == "i") != (wanted.dtype.kind == "i"):
        kind = "integers" if train.dtype.kind == "i" else "strings"
        raise InvalidInput(field, f"ids of the data's id type ({kind})", f"{wanted.tolist()[0]!r}")
    position = {v: i for i, v in enumerate(train.tolist())}
    missing = [v for v in wanted.tolist() if v not in position]
    if missing:
        raise InvalidInput(
            field,
            "ids of training records",
            missing[:5],
            hint=_where(data, missing[0])
            + (f" ({len(missing)} ids are not training records.)" if len(missing) > 1 else ""),
        )
    n = data.n_train
    if wanted.size > n // 2:
        raise InvalidInput(
            field,
            f"at most n//2 records ({n // 2} of the {n} training records)",
            f"{wanted.size} ids",
            hint="Beyond half of the training set a retrain from scratch is the honest answer.",
        )
    return np.sort(np.asarray([position[v] for v in wanted.tolist()], dtype=np.int64))


def _where(data: AuditData, missing: Any) -> str:
    """Why an id is not a training record: which split holds it, if any."""
    if data.record_ids is None:
        return (
            f"{missing!r} is not the position of a training record; without ids a record's id is its "
            "position in the source, and the split drew the training records at random."
        )
    split = next(
        (
            s
            for s in ("reference", "test", "unseen")
            if s in data.record_ids and missing in set(data.record_ids[s].tolist())
        ),
        None,
    )
    if split is not None:
        return (
            f"{missing!r} is in the {split} split, not in training; pass your own split "
            "({'train': ..., 'test': ...}) to choose which records are trained on."
        )
    cut = data.preprocessing.get("split", {}).get("max_train")
    if cut is not None:
        return f"{missing!r} is not among the {data.n_train} training records kept by max_train={cut}."
    return f"{missing!r} is not the id of any record of the data."
