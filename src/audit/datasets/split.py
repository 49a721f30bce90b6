"""Splitting shared by every loader: reference | test | unseen | train, then the feature map.

:func:`build` turns a source's raw records (float64 features, int64 labels) into an
:class:`~audit.datasets.container.AuditData`; every loader, and :func:`from_arrays`, ends with it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from audit.datasets._common import jsonable
from audit.datasets.container import AuditData
from audit.datasets.features import FeatureMap, resolve_feature_map
from certify.errors import PROBABILITY, Integer, InvalidInput, Real, require

__all__ = ["DEFAULT_FRACTIONS", "HELD_OUT_FRACTIONS", "build", "check_fraction", "round_count"]

DEFAULT_FRACTIONS = {"reference": 0.05, "test": 0.15, "unseen": 0.10}
#: With the user's own split: fractions of the held-out records (the test split is the rest).
HELD_OUT_FRACTIONS = {"reference": 0.05, "unseen": 0.40}

_SEED = Integer(lo=0)
_FRACTION_OR_ZERO = Real(ge=0, lt=1)


def check_fraction(name: str, value: object, *, allow_zero: bool = False) -> float:
    """A fraction in (0, 1), or in [0, 1) with ``allow_zero``."""
    return (_FRACTION_OR_ZERO if allow_zero else PROBABILITY).check(name, value)


def round_count(fraction: float, n: int) -> int:
    """``fraction * n`` rounded half up."""
    return int(math.floor(fraction * n + 0.5))


def _check_feature_names(names: object, X: np.ndarray) -> None:
    """A loader's ``feature_names_in`` is one name per raw column, or empty for records without column
    names (CIFAR-10's images); a plug-in author's mistake here would otherwise surface as a TypeError
    deep in the split."""
    width = int(np.prod(X.shape[1:])) if X.ndim > 1 else 1
    if (
        isinstance(names, (str, bytes))
        or not isinstance(names, Sequence)
        or not all(isinstance(x, str) for x in names)
        or len(names) not in (0, width)
    ):
        got = f"{len(names)} names" if isinstance(names, (list, tuple)) else names
        raise InvalidInput(
            "feature_names_in", f"a sequence of {width} column names (one str per feature) or empty", got
        )


def build(
    *,
    name: str,
    X: np.ndarray,
    y: np.ndarray,
    classes: Sequence[Any],
    feature_names_in: Sequence[str],
    groups: np.ndarray | None,
    X_test: np.ndarray | None,
    y_test: np.ndarray | None,
    seed: object,
    max_train: object,
    feature_map: FeatureMap | Mapping[str, Any] | None,
    default_feature_map: Mapping[str, Any],
    reference_fraction: object,
    test_fraction: object,
    unseen_fraction: object,
    source: dict[str, Any],
    preprocessing: dict[str, Any],
    test_source: str,
    source_records: str = "records",
    ids: np.ndarray | None = None,
    ids_test: np.ndarray | None = None,
    train_rows: np.ndarray | None = None,
) -> AuditData:
    """Split ``X, y`` (raw float64 records of any shape, int64 labels) and apply a
    reference-fitted map.

    ``X_test, y_test`` (both or neither) are the source's own test set, described by
    ``test_source``; ``source_records`` names what ``source_rows`` positions index (e.g.
    ``"records (adult: adult.data then adult.test)"``). ``ids`` (and ``ids_test``) are the
    user's record ids, one per record. ``train_rows`` are the positions of the user's own
    training records: they are the training split (before ``max_train``), and the other
    records are split into reference | test | unseen with the fractions taken of them
    (:data:`HELD_OUT_FRACTIONS` by default). The remaining arguments are those of
    :func:`audit.datasets.load_dataset`, unchecked until here.

    Records with more than one axis (images ``C x H x W``) keep their shape unless the feature
    map projects them (PCA); the feature map sees them flattened row-major.
    """
    seed_i = _SEED.check("seed", seed)
    fm = resolve_feature_map(feature_map, default_feature_map)
    n = int(X.shape[0])
    _check_feature_names(feature_names_in, X)
    explicit_test = X_test is not None
    user_split = train_rows is not None
    fractions = _fractions(reference_fraction, test_fraction, unseen_fraction, explicit_test, user_split, test_source)
    rng = np.random.default_rng(seed_i)
    perm, n_held = _permutation(rng, n, train_rows)
    n_ref, n_test, n_uns, n_train_full = _sizes(
        n, n_held, fractions, fm.needs_fit_rows, reference_fraction, explicit_test, user_split
    )

    ref_idx = perm[:n_ref]
    test_idx = perm[n_ref : n_ref + n_test]
    uns_idx = perm[n_ref + n_test : n_ref + n_test + n_uns]
    train_idx, max_train_i, y_train = _cap_training(perm[n_ref + n_test + n_uns :], y, max_train)

    record_shape = tuple(int(v) for v in X.shape[1:])
    flat = len(record_shape) == 1
    _fit(fm, X[ref_idx] if fm.needs_fit_rows else None, record_shape)
    keep_shape = not flat and fm.pca_components is None

    def transform(rows: np.ndarray) -> np.ndarray:
        out = fm.transform(rows.reshape(rows.shape[0], -1))
        return out.reshape(rows.shape[0], *record_shape) if keep_shape else out

    Xte_raw, yte = _test_records(X, y, test_idx, X_test, y_test)

    split = _split_description(
        seed=seed_i,
        user_split=user_split,
        explicit_test=explicit_test,
        fractions=fractions,
        test_source=test_source,
        n=n,
        sizes=(n_ref, len(yte), n_uns, len(train_idx), n_train_full),
        max_train=max_train_i,
        source_records=source_records,
    )
    data_pre = _preprocessing(preprocessing, classes, split, fm, feature_names_in, record_shape, keep_shape)
    record_ids = None
    if ids is not None:
        record_ids = {"train": ids[train_idx], "unseen": ids[uns_idx], "reference": ids[ref_idx]}
        record_ids["test"] = ids_test if explicit_test else ids[test_idx]
        data_pre["ids"] = "every record carries the user's id (AuditData.record_ids)"

    return AuditData(
        name=name,
        X_train=transform(X[train_idx]),
        y_train=y_train,
        X_test=transform(Xte_raw),
        y_test=yte,
        X_unseen=transform(X[uns_idx]),
        y_unseen=y[uns_idx],
        n_classes=len(classes),
        groups_train=None if groups is None else groups[train_idx],
        feature_names=_output_names(fm, feature_names_in) if flat or not keep_shape else (),
        record_ids=record_ids,
        source=source,
        preprocessing=data_pre,
        feature_map=fm,
        source_rows={
            "reference": np.asarray(ref_idx, dtype=np.int64),
            "train": np.asarray(train_idx, dtype=np.int64),
            "test": np.arange(len(yte), dtype=np.int64) if explicit_test else np.asarray(test_idx, dtype=np.int64),
            "unseen": np.asarray(uns_idx, dtype=np.int64),
        },
    )


# the steps of build, in the order it takes them (each check keeps its field and message)


def _fractions(
    reference_fraction: object,
    test_fraction: object,
    unseen_fraction: object,
    explicit_test: bool,
    user_split: bool,
    test_source: str,
) -> tuple[float, float, float]:
    """The checked reference, test and unseen fractions (the test one derived, or 0, when the
    source or the user's split fixes the test records)."""
    defaults = HELD_OUT_FRACTIONS if user_split else DEFAULT_FRACTIONS
    f_ref = check_fraction(
        "reference_fraction",
        defaults["reference"] if reference_fraction is None else reference_fraction,
        allow_zero=True,
    )
    f_uns = check_fraction(
        "unseen_fraction",
        defaults["unseen"] if unseen_fraction is None else unseen_fraction,
    )
    if explicit_test or user_split:
        if test_fraction is not None:
            raise InvalidInput(
                "test_fraction",
                "left unset when the source has its own test set"
                if explicit_test
                else "left unset with the user's own split (the test split is the rest of the held-out records)",
                test_fraction,
                hint=f"The test split comes from {test_source}.",
            )
        f_test = 0.0 if explicit_test else 1.0 - f_ref - f_uns
    else:
        f_test = check_fraction(
            "test_fraction",
            DEFAULT_FRACTIONS["test"] if test_fraction is None else test_fraction,
        )
    if f_ref + f_uns + (0.0 if user_split else f_test) >= 1.0:
        raise InvalidInput(
            "fractions",
            "reference_fraction + unseen_fraction < 1"
            if user_split
            else "reference_fraction + test_fraction + unseen_fraction < 1",
            {"reference": f_ref, "test": f_test, "unseen": f_uns},
        )
    return f_ref, f_test, f_uns


def _permutation(rng: np.random.Generator, n: int, train_rows: np.ndarray | None) -> tuple[np.ndarray, int]:
    """The order of the records (held-out ones first, the user's training records last with a
    user split) and how many are held out."""
    if train_rows is not None:
        rows = np.asarray(train_rows, dtype=np.int64)
        pool = np.setdiff1d(np.arange(n, dtype=np.int64), rows)
        pool = pool[rng.permutation(pool.size)]
        return np.concatenate([pool, rows[rng.permutation(rows.size)]]), int(pool.size)
    return rng.permutation(n), n


def _sizes(
    n: int,
    n_held: int,
    fractions: tuple[float, float, float],
    needs_fit_rows: int,
    reference_fraction: object,
    explicit_test: bool,
    user_split: bool,
) -> tuple[int, int, int, int]:
    """The reference, test and unseen sizes and the training size before ``max_train``, each
    checked large enough."""
    f_ref, f_test, f_uns = fractions
    n_ref = round_count(f_ref, n_held)
    n_uns = round_count(f_uns, n_held)
    n_test = 0 if explicit_test else (n_held - n_ref - n_uns if user_split else round_count(f_test, n_held))
    if n_ref < needs_fit_rows:
        raise InvalidInput(
            "reference_fraction",
            f"large enough for at least {needs_fit_rows} reference records for this feature "
            f"map (it gives {n_ref} of {n_held})",
            reference_fraction if reference_fraction is not None else f_ref,
            hint="Raise reference_fraction, or use a feature map without standardize/PCA.",
        )
    if not explicit_test and n_test < 1:
        raise InvalidInput("test_fraction", f"large enough for at least 1 test record of {n_held}", f_test)
    if n_uns < 1:
        raise InvalidInput("unseen_fraction", f"large enough for at least 1 unseen record of {n_held}", f_uns)
    n_train_full = n - n_ref - n_test - n_uns
    if n_train_full < 2:
        raise InvalidInput(
            "fractions",
            f"small enough to leave at least 2 training records of {n}",
            {"reference": f_ref, "test": f_test, "unseen": f_uns},
        )
    return n_ref, n_test, n_uns, n_train_full


def _cap_training(train_idx: np.ndarray, y: np.ndarray, max_train: object) -> tuple[np.ndarray, int | None, np.ndarray]:
    """The training split cut to ``max_train`` (checked), that ``max_train`` as an int, and the
    split's labels, checked to hold at least 2 classes."""
    max_train_i: int | None = None
    if max_train is not None:
        max_train_i = require(Integer(lo=2), "max_train", max_train, "None or an integer >= 2")
        # the training split is already in random order: its prefix is a random subset, nested
        # in every larger max_train, and the other splits do not move
        train_idx = train_idx[:max_train_i]

    y_train = y[train_idx]
    if np.unique(y_train).size < 2:
        raise InvalidInput(
            "max_train" if max_train is not None else "y",
            "large enough that the training split holds at least 2 classes",
            max_train if max_train is not None else f"{np.unique(y).size} class(es)",
        )
    return train_idx, max_train_i, y_train


def _split_description(
    *,
    seed: int,
    user_split: bool,
    explicit_test: bool,
    fractions: tuple[float, float, float],
    test_source: str,
    n: int,
    sizes: tuple[int, int, int, int, int],
    max_train: int | None,
    source_records: str,
) -> dict[str, Any]:
    """The ``split`` entry of the preprocessing record; ``sizes``: reference, test, unseen, train
    and train before ``max_train``."""
    f_ref, f_test, f_uns = fractions
    n_ref, n_test, n_uns, n_train, n_train_full = sizes
    return {
        "seed": seed,
        "method": (
            "the user's training records are the training split; the other records, permuted by "
            "numpy.random.default_rng(seed), give reference | test | unseen in that order"
            if user_split
            else "numpy.random.default_rng(seed).permutation of all records, then reference | "
            + ("" if explicit_test else "test | ")
            + "unseen | train in that order"
        ),
        "user_split": user_split,
        "fractions": {
            "reference": f_ref,
            **({} if explicit_test else {"test": f_test}),
            "unseen": f_uns,
        },
        "fractions_of": "the held-out records (all but the user's training records)" if user_split else "all records",
        "test_source": test_source,
        "n_records": n,
        "sizes": {
            "reference": int(n_ref),
            "test": int(n_test),
            "unseen": int(n_uns),
            "train": int(n_train),
            "train_before_max_train": int(n_train_full),
        },
        "max_train": max_train,
        "max_train_rule": "the first max_train records of the shuffled training split",
        "disjoint": "reference, train, test and unseen share no record",
        "source_rows": "AuditData.source_rows gives each split's positions in the source "
        + source_records
        + ("; test positions are into the separate test source" if explicit_test else ""),
    }


def _preprocessing(
    preprocessing: dict[str, Any],
    classes: Sequence[Any],
    split: dict[str, Any],
    fm: FeatureMap,
    feature_names_in: Sequence[str],
    record_shape: tuple[int, ...],
    keep_shape: bool,
) -> dict[str, Any]:
    """The loader's preprocessing record with the labels, the split, the feature map and the
    records' layout added."""
    data_pre = dict(preprocessing)
    data_pre["label"] = {
        **data_pre.get("label", {}),
        "classes": [jsonable(c) for c in classes],
        "encoding": "label k is classes[k] (sorted unique values)",
    }
    data_pre["split"] = split
    data_pre["feature_map"] = fm.describe()
    if len(record_shape) == 1:
        data_pre["feature_names_in"] = list(feature_names_in)
    else:
        data_pre["record_shape"] = list(record_shape)
        data_pre["layout"] = (
            "records keep their shape; the feature map acts on them flattened row-major"
            if keep_shape
            else "records flattened row-major, then projected by PCA"
        )
    data_pre["dtypes"] = {"X": "float32", "y": "int64", "groups": "int64"}
    return data_pre


def _test_records(
    X: np.ndarray, y: np.ndarray, test_idx: np.ndarray, X_test: np.ndarray | None, y_test: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    """The raw test records and labels: the source's own test set, else the test split's records."""
    if X_test is not None:
        assert y_test is not None  # X_test and y_test come together (both or neither)
        return X_test, y_test
    return X[test_idx], y[test_idx]


def _fit(fm: FeatureMap, reference: np.ndarray | None, record_shape: tuple[int, ...]) -> None:
    """Fit the feature map on the reference records (flattened row-major) when it needs them."""
    if reference is not None:
        fm.fit(reference.reshape(reference.shape[0], -1))
    else:
        fm.n_features_in_ = int(np.prod(record_shape))  # nothing data-dependent to fit


def _output_names(fm: FeatureMap, feature_names_in: Sequence[str]) -> tuple[str, ...]:
    """The names of the mapped features: the principal components under PCA, else the input's."""
    if fm.pca_components is not None:
        return tuple(f"pc{i + 1}" for i in range(fm.pca_components))
    return tuple(feature_names_in)
