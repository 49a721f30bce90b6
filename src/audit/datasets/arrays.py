"""A user's own arrays as a dataset: :func:`from_arrays` (the standard split and feature map)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from audit.datasets._common import encode_labels, sha256_array
from audit.datasets.container import AuditData
from audit.datasets.features import FeatureMap
from audit.datasets.split import build
from certify.errors import InvalidInput

__all__ = ["from_arrays"]


def _as_2d_finite(name: str, X: Any) -> np.ndarray:
    try:
        A = np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError):
        raise InvalidInput(name, "a 2-D numeric array", type(X).__name__) from None
    if A.ndim != 2 or A.shape[0] == 0 or A.shape[1] == 0:
        raise InvalidInput(name, "a non-empty 2-D numeric array (records x features)", A.shape)
    if not np.all(np.isfinite(A)):
        bad = int(np.count_nonzero(~np.isfinite(A)))
        raise InvalidInput(name, "finite values (no NaN or inf)", f"{bad} non-finite values")
    return A


def _as_labels(name: str, y: Any, n: int, x_name: str) -> np.ndarray:
    a = np.asarray(y)
    if a.ndim != 1:
        raise InvalidInput(name, "a 1-D array of labels", a.shape)
    if a.shape[0] != n:
        raise InvalidInput(name, f"as long as {x_name} ({n} records)", f"{a.shape[0]} labels")
    if a.dtype.kind == "f" and not np.all(np.isfinite(a)):
        raise InvalidInput(name, "finite labels (no NaN or inf)", "non-finite labels")
    if a.dtype.kind not in "biufUSO":
        raise InvalidInput(name, "labels of integer, float or string type", str(a.dtype))
    return a


def from_arrays(
    X: Any,
    y: Any,
    *,
    groups: Any = None,
    X_test: Any = None,
    y_test: Any = None,
    seed: int = 0,
    name: str = "arrays",
    feature_names: Sequence[str] | None = None,
    max_train: int | None = None,
    feature_map: FeatureMap | Mapping[str, Any] | None = None,
    reference_fraction: float | None = None,
    test_fraction: float | None = None,
    unseen_fraction: float | None = None,
) -> AuditData:
    """Wrap a user's own arrays in :class:`AuditData` with the standard split and feature map.

    ``X`` (records x features, finite) and ``y`` (one label per record, at least 2 distinct)
    are split into reference / test / unseen / train; if ``X_test, y_test`` are given they are
    the test split and only reference / unseen / train come out of ``X``. Labels are mapped to
    ``0..C-1`` by sorted unique value over ``y`` and ``y_test``. ``groups`` (one id per record
    of ``X``, any sortable values) become ``groups_train`` as ``0..G-1`` codes. The default
    feature map standardises (fitted on the reference split) and clips rows to the unit ball.
    """
    Xa = _as_2d_finite("X", X)
    ya = _as_labels("y", y, Xa.shape[0], "X")
    if (X_test is None) != (y_test is None):
        raise InvalidInput(
            "X_test" if X_test is None else "y_test",
            "given together with " + ("y_test" if X_test is None else "X_test"),
            None,
        )
    Xt = yt = None
    if X_test is not None:
        Xt = _as_2d_finite("X_test", X_test)
        if Xt.shape[1] != Xa.shape[1]:
            raise InvalidInput("X_test", f"an array with {Xa.shape[1]} columns like X", f"{Xt.shape[1]} columns")
        yt = _as_labels("y_test", y_test, Xt.shape[0], "X_test")
    all_y = ya if yt is None else np.concatenate([ya, yt])
    codes, classes = encode_labels(all_y, "y")
    if len(classes) < 2:
        raise InvalidInput("y", "labels with at least 2 distinct classes", classes)
    y_codes = codes[: ya.shape[0]]
    yt_codes = None if yt is None else codes[ya.shape[0] :]
    if np.unique(y_codes).size < 2:
        raise InvalidInput("y", "labels with at least 2 distinct classes", np.unique(ya).tolist())

    g_codes = None
    groups_info = None
    if groups is not None:
        g = np.asarray(groups)
        if g.ndim != 1 or g.shape[0] != Xa.shape[0]:
            raise InvalidInput("groups", f"a 1-D array of length {Xa.shape[0]} (like X)", g.shape)
        if g.dtype.kind == "f" and not np.all(np.isfinite(g)):
            raise InvalidInput("groups", "finite group ids (no NaN)", "non-finite group ids")
        g_codes, gvals = encode_labels(g, "groups")
        groups_info = {
            "values": gvals,
            "encoding": "group id k is values[k] (sorted unique values of groups)",
        }

    names = [str(s) for s in feature_names] if feature_names is not None else [f"x{i}" for i in range(Xa.shape[1])]
    if len(names) != Xa.shape[1]:
        raise InvalidInput("feature_names", f"{Xa.shape[1]} names (one per column of X)", len(names))
    shas = {"X": sha256_array(Xa), "y": sha256_array(ya)}
    if Xt is not None and yt is not None:
        shas.update(X_test=sha256_array(Xt), y_test=sha256_array(yt))
    source = {
        "name": name,
        "citation": None,
        "licence": "the user's data",
        "url": "in-memory arrays (from_arrays)",
        "copy_from": "in-memory arrays (from_arrays)",
        "sha256": shas,
        "sha256_of": "the arrays as float64 (X) and as given (y): dtype, shape, bytes",
        "verified": False,
    }
    preprocessing: dict[str, Any] = {"parse": {"input": "arrays, cast to float64 then float32"}}
    if groups_info is not None:
        preprocessing["groups"] = groups_info
    return build(
        name=name,
        X=Xa,
        y=y_codes,
        classes=classes,
        feature_names_in=names,
        groups=g_codes,
        X_test=Xt,
        y_test=yt_codes,
        seed=seed,
        max_train=max_train,
        feature_map=feature_map,
        default_feature_map={"standardize": True, "pca_components": None, "whiten": True, "row_norm": "clip"},
        reference_fraction=reference_fraction,
        test_fraction=test_fraction,
        unseen_fraction=unseen_fraction,
        source=source,
        preprocessing=preprocessing,
        test_source="X_test, y_test" if Xt is not None else "a random split of the records",
    )
