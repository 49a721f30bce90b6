"""The dataset container: :class:`AuditData`, its description and its content hash."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from audit.datasets.features import FeatureMap
from certify.errors import Integer, InvalidInput

__all__ = ["AuditData"]

ARRAY_FIELDS = ("X_train", "y_train", "X_test", "y_test", "X_unseen", "y_unseen")


@dataclass(frozen=True, eq=False)
class AuditData:
    """A dataset ready for an unlearning audit.

    ``X_*`` are float32 ``(n, *input_shape)``: ``(n, d)`` for tabular features, ``(n, C, H, W)``
    for images (every split has the same record shape); ``y_*`` are int64 labels in ``0..n_classes-1``;
    ``groups_train`` holds one int64 group id per training record, or is ``None``.
    ``X_unseen`` are records never trained on (the non-member pool for membership inference);
    train, test, unseen (and the reference split the feature map was fitted on) are disjoint.
    ``source_rows`` maps each split (``reference``, ``train``, ``test``, ``unseen``) to the
    positions of its records in the source's record order (for a source with its own test
    file, ``test`` positions are into that file), so a forgotten record can be traced back.
    ``feature_map`` is the fitted :class:`FeatureMap`, to transform new records the same way.
    ``record_ids`` maps ``train``, ``test`` and ``unseen`` (and ``reference`` when there is one)
    to the user's own id of each record (integers or strings, unique across splits), or is
    ``None`` when the records have no ids but their source positions (``source_rows``).
    """

    name: str
    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    X_unseen: np.ndarray
    y_unseen: np.ndarray
    n_classes: int
    groups_train: np.ndarray | None = None
    feature_names: tuple[str, ...] = ()
    source: dict[str, Any] = field(default_factory=dict)
    preprocessing: dict[str, Any] = field(default_factory=dict)
    feature_map: FeatureMap | None = None
    source_rows: dict[str, np.ndarray] | None = None
    record_ids: dict[str, np.ndarray] | None = None

    def __post_init__(self) -> None:
        shape: tuple[int, ...] | None = None
        for split in ("train", "test", "unseen"):
            X = np.ascontiguousarray(getattr(self, f"X_{split}"), dtype=np.float32)
            y = np.ascontiguousarray(getattr(self, f"y_{split}"), dtype=np.int64)
            if X.ndim < 2:
                raise InvalidInput(
                    f"X_{split}", "an array of records (n, features) or (n, C, H, W)", f"shape {X.shape}"
                )
            if y.ndim != 1 or y.shape[0] != X.shape[0]:
                raise InvalidInput(f"y_{split}", f"a 1-D array of length {X.shape[0]}", f"shape {y.shape}")
            if shape is None:
                shape = tuple(int(s) for s in X.shape[1:])
            elif X.shape[1:] != shape:
                raise InvalidInput(f"X_{split}", f"records of shape {shape} (as X_train)", X.shape[1:])
            object.__setattr__(self, f"X_{split}", X)
            object.__setattr__(self, f"y_{split}", y)
        n_classes = Integer(lo=2).check("n_classes", self.n_classes)
        object.__setattr__(self, "n_classes", n_classes)
        for split in ("train", "test", "unseen"):
            y = getattr(self, f"y_{split}")
            if y.size and (y.min() < 0 or y.max() >= n_classes):
                raise InvalidInput(f"y_{split}", f"labels in 0..{n_classes - 1}", (int(y.min()), int(y.max())))
        if self.groups_train is not None:
            g = np.ascontiguousarray(self.groups_train, dtype=np.int64)
            if g.shape != self.y_train.shape:
                raise InvalidInput("groups_train", f"a 1-D array of length {self.y_train.shape[0]}", g.shape)
            object.__setattr__(self, "groups_train", g)
        assert shape is not None
        d = int(np.prod(shape))
        if self.record_ids is not None:
            ids = {split: np.asarray(a) for split, a in self.record_ids.items()}
            for split in ("train", "test", "unseen"):
                a, n_split = ids.get(split, np.asarray(None)), getattr(self, f"y_{split}").shape[0]
                if a.shape != (n_split,):
                    raise InvalidInput("record_ids", f"one id per {split} record ({n_split})", a.shape)
            object.__setattr__(self, "record_ids", ids)
        names = tuple(str(s) for s in self.feature_names) or tuple(f"x{i}" for i in range(d))
        if len(names) != d:
            raise InvalidInput("feature_names", f"{d} names", len(names))
        object.__setattr__(self, "feature_names", names)

    @property
    def n_train(self) -> int:
        return int(self.X_train.shape[0])

    @property
    def input_shape(self) -> tuple[int, ...]:
        """The shape of one record: ``(d,)`` for tabular features, ``(C, H, W)`` for images."""
        return tuple(int(s) for s in self.X_train.shape[1:])

    @property
    def n_features(self) -> int:
        """Values per record (the product of :attr:`input_shape`)."""
        return int(np.prod(self.input_shape))

    def train_ids(self) -> np.ndarray:
        """The id of every training record: the user's ids, or the source positions."""
        if self.record_ids is not None:
            return self.record_ids["train"]
        if self.source_rows is not None:
            return self.source_rows["train"]
        return np.arange(self.n_train, dtype=np.int64)

    def content_hash(self) -> str:
        """SHA-256 (hex) over every array's name, dtype, shape and bytes (and the record ids, if any)."""
        h = hashlib.sha256()
        for key in (*ARRAY_FIELDS, "groups_train"):
            a = getattr(self, key)
            h.update(key.encode())
            if a is None:
                h.update(b"None")
                continue
            h.update(str(a.dtype).encode())
            h.update(str(a.shape).encode())
            h.update(np.ascontiguousarray(a).tobytes())
        if self.record_ids is not None:  # left out when absent, so hashes of id-less data stay as they were
            for split in ("train", "test", "unseen"):
                h.update(f"record_ids_{split}".encode())
                h.update("\x1f".join(map(str, self.record_ids[split].tolist())).encode())
        return h.hexdigest()

    def describe(self) -> dict[str, Any]:
        """Sizes, dimension, classes, class balance per split, max row norm and content hash."""

        def balance(y: np.ndarray) -> list[float]:
            counts = np.bincount(y, minlength=self.n_classes)
            return [float(c) / max(1, y.size) for c in counts]

        max_norm = max(
            (float(np.max(np.linalg.norm(X.reshape(X.shape[0], -1).astype(np.float64), axis=1))) if X.size else 0.0)
            for X in (self.X_train, self.X_test, self.X_unseen)
        )
        return {
            "name": self.name,
            "n_train": self.n_train,
            "n_test": int(self.X_test.shape[0]),
            "n_unseen": int(self.X_unseen.shape[0]),
            "d": self.n_features,
            "input_shape": list(self.input_shape),
            "n_classes": self.n_classes,
            "class_balance": {
                "train": balance(self.y_train),
                "test": balance(self.y_test),
                "unseen": balance(self.y_unseen),
            },
            "n_groups": None if self.groups_train is None else int(np.unique(self.groups_train).size),
            "max_row_norm": max_norm,
            "content_hash": self.content_hash(),
        }
