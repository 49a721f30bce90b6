"""The caller's own data: arrays, tensors, a DataFrame or a map-style Dataset, with record ids.

:func:`from_user_data` turns what a pipeline holds into an :class:`AuditData` without writing a
file. One *part* of data is any of

* ``(X, y)`` or ``(X, y, ids)``: numpy arrays or torch tensors; ``X`` has one record per row and
  any record shape (``n x d`` features, ``n x C x H x W`` images);
* a pandas ``DataFrame`` (recognised by its ``columns``; pandas itself is not imported):
  ``label_column`` holds the labels, ``id_column`` the ids, ``group_column`` the groups; the
  other columns are features, numeric ones kept and the others one-hot encoded (a missing value
  in a numeric column is an error, in another column its own category; a column of mostly
  numbers with some text is refused, naming the rows: dirty numeric data, not categories);
* a map-style ``torch.utils.data.Dataset`` (``len`` and integer indexing) whose items are
  ``(x, y)`` or ``(x, y, id)``.

``data`` is one part (the seeded split then draws reference, test, unseen and train from it), or
the caller's own split ``{"train": part, "test": part}``: the training split is then exactly the
caller's training records (``max_train`` still keeps a seeded subset of them), and the test part
is split into reference (only when the feature map must be fitted), unseen (the non-member pool
of the attacks) and test.

Ids are the caller's record identifiers (integers or strings, unique over every record); the
forget set is given by them (:func:`audit.datasets.forget.indices_of_ids`) and the deletion
commitment is over them. Without ids a record's id is its position in the data (for a split,
training records first).

Feature map: tabular records are standardised on the reference split and clipped to the unit
ball (as :func:`~audit.datasets.from_arrays`); records with several axes (images) are used as
given. ``feature_map`` overrides either.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from audit.datasets._common import encode_labels, jsonable, one_hot, refuse_stray_text, sha256_array
from audit.datasets.container import AuditData
from audit.datasets.features import FeatureMap, resolve_feature_map
from audit.datasets.split import build
from certify.errors import InvalidInput

__all__ = ["check_ids", "from_user_data", "parse_ids", "read_ids"]

TABULAR_FEATURE_MAP = {"standardize": True, "pca_components": None, "whiten": True, "row_norm": "clip"}
SHAPED_FEATURE_MAP = {"standardize": False, "pca_components": None, "whiten": True, "row_norm": "none"}
_MISSING_TEXT = frozenset({"", "nan", "none", "null", "na", "n/a", "<na>"})


class _Part:
    """One part of the caller's data, in a common form: float64 records, raw labels, ids."""

    def __init__(
        self,
        X: np.ndarray,
        y: np.ndarray,
        ids: np.ndarray | None,
        groups: np.ndarray | None,
        kind: str,
        columns: dict[str, Any] | None = None,
    ):
        self.X, self.y, self.ids, self.groups, self.kind, self.columns = X, y, ids, groups, kind, columns


def from_user_data(
    data: Any,
    *,
    seed: int = 0,
    max_train: int | None = None,
    label_column: str | None = None,
    id_column: str | None = None,
    group_column: str | None = None,
    feature_map: FeatureMap | Mapping[str, Any] | None = None,
    name: str = "caller",
) -> AuditData:
    """The caller's data as an :class:`AuditData` (see the module docstring for the forms)."""
    ordered = _parts(data, label_column, id_column, group_column)
    kind = ordered[0].kind
    X, feature_names, columns = _joined_records(ordered, label_column, id_column, group_column)
    n_train = ordered[0].X.shape[0]
    y_raw = np.concatenate([p.y for p in ordered])
    if y_raw.dtype.kind == "f" and not np.all(np.isfinite(y_raw)):
        raise InvalidInput("y", "finite labels (no NaN)", "non-finite labels")
    y, classes = encode_labels(y_raw, "y")
    if len(classes) < 2:
        raise InvalidInput("y", "labels with at least 2 distinct classes", classes)
    ids = _joined_ids(ordered)
    groups = _groups(ordered, group_column)

    shaped = X.ndim > 2
    fm = resolve_feature_map(feature_map, SHAPED_FEATURE_MAP if shaped else TABULAR_FEATURE_MAP)
    source = {
        "name": name,
        "citation": None,
        "licence": "the caller's data",
        "url": f"in memory ({kind}, passed to audit.run)",
        "copy_from": f"in memory ({kind}, passed to audit.run)",
        "sha256": {"X": sha256_array(X), "y": sha256_array(y_raw.astype(str) if y_raw.dtype.kind == "O" else y_raw)},
        "sha256_of": "the records as float64 (X) and the labels as given (y): dtype, shape, bytes",
        "verified": False,
    }
    preprocessing: dict[str, Any] = {
        "parse": {
            "input": kind,
            "records": int(X.shape[0]),
            "record_shape": [int(s) for s in X.shape[1:]],
            "ids": (f"column {id_column!r}" if id_column else "given with the records")
            if ids is not None
            else "none given: a record's id is its position (training records first for a split)",
            **({"columns": columns} if columns is not None else {}),
        }
    }
    if label_column is not None:
        preprocessing["label"] = {"column": label_column}
    return build(
        name=name,
        X=X,
        y=y,
        classes=classes,
        feature_names_in=feature_names,
        groups=groups,
        X_test=None,
        y_test=None,
        seed=seed,
        max_train=max_train,
        feature_map=fm,
        default_feature_map=TABULAR_FEATURE_MAP,
        reference_fraction=None if fm.needs_fit_rows else 0.0,
        test_fraction=None,
        unseen_fraction=None,
        source=source,
        preprocessing=preprocessing,
        test_source="the caller's test records" if len(ordered) > 1 else "a random split of the records",
        source_records="records of the caller's data" + (" (training records first)" if len(ordered) > 1 else ""),
        ids=ids,
        train_rows=np.arange(n_train, dtype=np.int64) if len(ordered) > 1 else None,
    )


# -- the steps of from_user_data, in its order (each check keeps its field and message) --------
def _parts(data: Any, label_column: str | None, id_column: str | None, group_column: str | None) -> list[_Part]:
    """The data's parts: one, or the caller's training then test part (checked of one kind)."""
    if isinstance(data, Mapping):
        unknown = sorted(set(data) - {"train", "test"})
        if unknown or "train" not in data or "test" not in data:
            raise InvalidInput(
                "data",
                "one part of data, or {'train': part, 'test': part} (the caller's own split)",
                sorted(map(str, data)),
            )
        parts = {
            split: _part(data[split], f"data['{split}']", label_column, id_column, group_column)
            for split in ("train", "test")
        }
        if parts["train"].kind != parts["test"].kind:
            raise InvalidInput(
                "data['test']", f"the same kind of data as data['train'] ({parts['train'].kind})", parts["test"].kind
            )
        return [parts["train"], parts["test"]]
    return [_part(data, "data", label_column, id_column, group_column)]


def _joined_records(
    ordered: list[_Part], label_column: str | None, id_column: str | None, group_column: str | None
) -> tuple[np.ndarray, list[str], dict[str, Any] | None]:
    """The parts' records joined (training records first), their feature names, and how a
    DataFrame's columns were encoded (None for arrays); the parts' records have one shape."""
    if ordered[0].kind == "DataFrame":
        return _encode_frames(ordered, label_column, id_column, group_column)
    shapes = {p.X.shape[1:] for p in ordered}
    if len(shapes) > 1:
        raise InvalidInput(
            "data['test']",
            f"records of the training records' shape {ordered[0].X.shape[1:]}",
            ordered[1].X.shape[1:],
        )
    X = np.concatenate([p.X for p in ordered])
    return X, [f"x{i}" for i in range(int(np.prod(X.shape[1:])))], None


def _groups(ordered: list[_Part], group_column: str | None) -> np.ndarray | None:
    """The groups encoded as ints, when the data has them (never with the caller's own split)."""
    if not any(p.groups is not None for p in ordered):
        return None
    if len(ordered) > 1:
        raise InvalidInput(
            "group_column",
            "None with the caller's own split (groups select records to forget from a single table)",
            group_column,
        )
    assert ordered[0].groups is not None  # the only part, and some part has groups (checked above)
    groups, _ = encode_labels(ordered[0].groups, "groups")
    return groups


# -- one part ------------------------------------------------------------------------------------
def _part(obj: Any, field: str, label_column: str | None, id_column: str | None, group_column: str | None) -> _Part:
    if hasattr(obj, "columns") and hasattr(obj, "__getitem__") and not isinstance(obj, (tuple, list)):
        return _frame_part(obj, field, label_column, id_column, group_column)
    for option, value in (("label_column", label_column), ("id_column", id_column), ("group_column", group_column)):
        if value is not None:
            raise InvalidInput(option, "None unless the data is a DataFrame (columns are named only there)", value)
    if isinstance(obj, (tuple, list)):
        if len(obj) not in (2, 3):
            raise InvalidInput(field, "(X, y) or (X, y, ids)", f"a sequence of {len(obj)} items")
        X = _records(obj[0], f"{field}[0] (X)")
        y = _labels(obj[1], f"{field}[1] (y)", X.shape[0])
        ids = _id_array(obj[2], f"{field}[2] (ids)", X.shape[0]) if len(obj) == 3 else None
        return _Part(X, y, ids, None, "arrays")
    if hasattr(obj, "__getitem__") and hasattr(obj, "__len__"):
        return _dataset_part(obj, field)
    raise InvalidInput(
        field,
        "(X, y[, ids]) arrays or tensors, a DataFrame, a map-style torch Dataset, or {'train': ..., 'test': ...}",
        type(obj).__name__,
    )


def _numpy(value: Any) -> np.ndarray:
    if hasattr(value, "detach") and hasattr(value, "cpu"):  # a torch tensor
        return value.detach().cpu().numpy()
    if isinstance(value, (list, tuple)) and value and not isinstance(value[0], (list, tuple, np.ndarray)):
        return np.asarray(value, dtype=object)  # numpy would turn [1, "x"] into ["1", "x"] silently
    return np.asarray(value)


def _records(value: Any, field: str) -> np.ndarray:
    try:
        X = _numpy(value).astype(np.float64)
    except (TypeError, ValueError):
        raise InvalidInput(
            field, "numeric records (an array or tensor of shape n x ...)", type(value).__name__
        ) from None
    if X.ndim < 2 or X.shape[0] == 0 or 0 in X.shape[1:]:
        raise InvalidInput(field, "a non-empty array of records, shape (n, features) or (n, C, H, W)", X.shape)
    if not np.all(np.isfinite(X)):
        raise InvalidInput(
            field, "finite values (no NaN or inf)", f"{int(np.count_nonzero(~np.isfinite(X)))} non-finite values"
        )
    return X


def _labels(value: Any, field: str, n: int) -> np.ndarray:
    y = _numpy(value)
    if y.ndim != 1 or y.shape[0] != n:
        raise InvalidInput(field, f"one label per record ({n})", y.shape)
    if y.dtype.kind not in "biufUSO":
        raise InvalidInput(field, "labels of integer, float or string type", str(y.dtype))
    return y


def _id_array(value: Any, field: str, n: int) -> np.ndarray:
    ids = _numpy(value)
    if ids.ndim != 1 or ids.shape[0] != n:
        raise InvalidInput(field, f"one id per record ({n})", ids.shape)
    return ids


def _dataset_part(dataset: Any, field: str) -> _Part:
    n = len(dataset)
    if n == 0:
        raise InvalidInput(field, "a non-empty Dataset", "0 items")
    xs, ys, ids = [], [], []
    width = None
    for i in range(n):
        item = dataset[i]
        if not isinstance(item, (tuple, list)) or len(item) not in (2, 3) or len(item) != (width or len(item)):
            raise InvalidInput(
                field,
                "a Dataset whose items are all (x, y) or all (x, y, id)",
                f"item {i}: {type(item).__name__}" + (f" of {len(item)}" if isinstance(item, (tuple, list)) else ""),
            )
        width = len(item)
        xs.append(_numpy(item[0]))
        ys.append(_scalar(item[1], f"{field} item {i} label"))
        if width == 3:
            ids.append(_scalar(item[2], f"{field} item {i} id"))
    shapes = {x.shape for x in xs}
    if len(shapes) > 1:
        raise InvalidInput(field, "items whose x all have one shape", sorted(map(str, shapes))[:3])
    stacked = np.stack(xs)
    X = _records(stacked[:, None] if stacked.ndim == 1 else stacked, f"{field} (x)")
    return _Part(X, np.asarray(ys), np.asarray(ids, dtype=object) if ids else None, None, "Dataset")


def _scalar(value: Any, field: str) -> Any:
    a = _numpy(value)
    if a.size != 1:
        raise InvalidInput(field, "one value", a.shape)
    return jsonable(a.reshape(-1)[0]) if not isinstance(value, str) else value


def _frame_part(
    frame: Any, field: str, label_column: str | None, id_column: str | None, group_column: str | None
) -> _Part:
    names = [str(c) for c in frame.columns]
    if len(set(names)) != len(names):
        raise InvalidInput(field, "a DataFrame with distinct column names", names)
    if label_column is None or label_column not in names:
        raise InvalidInput("label_column", "a column of the DataFrame: " + ", ".join(map(repr, names)), label_column)
    for option, value in (("id_column", id_column), ("group_column", group_column)):
        if value is not None and (value not in names or value == label_column):
            raise InvalidInput(
                option,
                "None or a column of the DataFrame other than the label: "
                + ", ".join(repr(c) for c in names if c != label_column),
                value,
            )
    columns = {name: np.asarray(frame[column]) for name, column in zip(names, frame.columns)}
    n = len(columns[label_column])
    if n == 0:
        raise InvalidInput(field, "a DataFrame with at least one row", "0 rows")
    return _Part(
        np.empty((n, 0)),
        columns[label_column],
        columns[id_column] if id_column else None,
        columns[group_column] if group_column else None,
        "DataFrame",
        {c: v for c, v in columns.items() if c not in (label_column, id_column, group_column)},
    )


def _encode_frames(parts: list[_Part], label_column, id_column, group_column) -> tuple[np.ndarray, list[str], dict]:
    """Feature columns of one or two frames, encoded together (one vocabulary per column)."""
    frames = []
    for p in parts:
        assert p.columns is not None  # every part is a DataFrame part (same kind, checked by the caller)
        frames.append(p.columns)
    names = list(frames[0])
    for frame in frames[1:]:
        if list(frame) != names:
            raise InvalidInput(
                "data['test']", "the training DataFrame's feature columns: " + ", ".join(names), list(frame)
            )
    if not names:
        raise InvalidInput(
            "data",
            "a DataFrame with at least one feature column besides label, id and group",
            [label_column, id_column, group_column],
        )
    blocks: list[np.ndarray] = []
    feature_names: list[str] = []
    kinds: dict[str, Any] = {}
    for name in names:
        values = np.concatenate([frame[name] for frame in frames])
        if values.dtype.kind in "biuf":
            col = values.astype(np.float64)
            if not np.all(np.isfinite(col)):
                bad = int(np.flatnonzero(~np.isfinite(col))[0])
                raise InvalidInput(
                    name,
                    "a finite number in every row (the column is numeric)",
                    f"missing or non-finite value in row {bad}",
                    hint="Fill or drop missing values first.",
                )
            blocks.append(col[:, None])
            feature_names.append(name)
            kinds[name] = "numeric"
        else:
            refuse_stray_text(name, [None if _missing(v) else v for v in values], _is_number, lambda i: f"in row {i}")
            text = np.array(["" if _missing(v) else str(v) for v in values], dtype=object)
            block, labels, vocab = one_hot(text, name)
            blocks.append(block)
            feature_names += labels
            kinds[name] = {"one_hot": vocab}
    return np.hstack(blocks), feature_names, kinds


def _is_number(value: Any) -> bool:
    """A number, or text that reads as one (a column read as text keeps its numbers as strings)."""
    if isinstance(value, str):
        try:
            float(value)
        except ValueError:
            return False
        return True
    return isinstance(value, (int, float, np.number)) and not isinstance(value, (bool, np.bool_))


def _missing(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, float) and math.isnan(value):
        return True
    return isinstance(value, str) and value.strip().lower() in _MISSING_TEXT


# -- ids -----------------------------------------------------------------------------------------
def _joined_ids(parts: list[_Part]) -> np.ndarray | None:
    given = [p.ids is not None for p in parts]
    if not any(given):
        return None
    if not all(given):
        raise InvalidInput("ids", "ids for every part of the data or for none", "ids for some parts only")
    return check_ids(np.concatenate([p.ids for p in parts]), "ids")


def parse_ids(texts: list[str]) -> list[int] | list[str]:
    """Ids read from text (a CSV column, a file of ids): integers when every one is written as a
    canonical integer (``17``, ``-3``; not ``007`` or ``1.0``), else the texts themselves."""
    try:
        ints = [int(t) for t in texts]
    except ValueError:
        return list(texts)
    return ints if all(str(i) == t for i, t in zip(ints, texts)) else list(texts)


def read_ids(path_text: str, field: str = "forget_ids") -> list:
    """The ids in a file, one per line (blank lines and lines starting with # are skipped);
    integers when every one is written as an integer, else text."""
    path = Path(path_text).expanduser()
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInput(
            field, "a readable UTF-8 file of record ids, one per line", str(path), hint=str(exc)
        ) from None
    ids = [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]
    if not ids:
        raise InvalidInput(field, "a file with at least one record id", str(path))
    return parse_ids(ids)


def check_ids(values: Any, field: str) -> np.ndarray:
    """Record ids as a 1-D array of Python ints or of strings, unique; else one sentence naming
    the first bad or repeated id."""
    a = _numpy(values)
    if a.ndim != 1:
        raise InvalidInput(field, "a 1-D sequence of ids", a.shape)
    items = [jsonable(v) for v in a.tolist()]
    if all(isinstance(v, int) and not isinstance(v, bool) for v in items):
        out = np.asarray(items, dtype=np.int64)
    elif all(isinstance(v, float) and v.is_integer() for v in items):
        out = np.asarray(items, dtype=np.int64)
    elif all(isinstance(v, str) for v in items):
        out = np.asarray(items, dtype=object)
    else:
        odd = next((v for v in items if not isinstance(v, (int, str)) or isinstance(v, bool)), items[0])
        raise InvalidInput(field, "ids that are all integers or all strings", f"{odd!r} ({type(odd).__name__})")
    seen: set = set()
    for v in out.tolist():
        if v in seen:
            raise InvalidInput(field, "unique ids (one per record)", f"id {v!r} appears more than once")
        seen.add(v)
    return out
