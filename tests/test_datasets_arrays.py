"""Tests for audit.datasets.arrays (from_arrays) and the AuditData it returns."""

from __future__ import annotations

import numpy as np
import pytest

from audit.datasets import from_arrays
from certify.errors import InvalidInput


def _arrays(n: int = 200, d: int = 5, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = (X[:, 0] > 0).astype(int)
    return X, y


def test_from_arrays_splits_and_groups() -> None:
    X, y = _arrays()
    groups = np.repeat(np.arange(20), 10)
    data = from_arrays(X, y, groups=groups, seed=4)
    sizes = data.preprocessing["split"]["sizes"]
    assert sizes == {"reference": 10, "test": 30, "unseen": 20, "train": 140, "train_before_max_train": 140}
    assert data.groups_train is not None and data.groups_train.shape == (140,)
    rows = data.source_rows
    assert rows is not None
    np.testing.assert_array_equal(data.groups_train, groups[rows["train"]])
    np.testing.assert_array_equal(data.y_unseen, y[rows["unseen"]])
    assert from_arrays(X, y, seed=4).content_hash() == from_arrays(X, y, seed=4).content_hash()


def test_from_arrays_with_test_set() -> None:
    X, y = _arrays()
    Xt, yt = _arrays(30, seed=1)
    data = from_arrays(X, y, X_test=Xt, y_test=yt, feature_map={"standardize": False})
    assert data.X_test.shape == (30, 5)
    np.testing.assert_array_equal(data.y_test, yt)
    assert data.preprocessing["split"]["sizes"]["train"] == 200 - 10 - 20


def test_from_arrays_validation() -> None:
    X, y = _arrays()
    bad = X.copy()
    bad[3, 2] = np.nan
    with pytest.raises(InvalidInput, match="finite") as info:
        from_arrays(bad, y)
    assert info.value.field == "X"
    bad[3, 2] = np.inf
    with pytest.raises(InvalidInput) as info:
        from_arrays(bad, y)
    assert info.value.field == "X"
    with pytest.raises(InvalidInput) as info:
        from_arrays(X, y[:-1])
    assert info.value.field == "y"
    with pytest.raises(InvalidInput) as info:
        from_arrays(X[:, 0], y)
    assert info.value.field == "X"
    with pytest.raises(InvalidInput, match="2 distinct classes") as info:
        from_arrays(X, np.zeros(len(y)))
    assert info.value.field == "y"
    with pytest.raises(InvalidInput) as info:
        from_arrays(X, y, X_test=X[:5, :3], y_test=y[:5])
    assert info.value.field == "X_test"
    with pytest.raises(InvalidInput) as info:
        from_arrays(X, y, groups=np.arange(5))
    assert info.value.field == "groups"


def test_split_names_a_loaders_bad_feature_names() -> None:
    """A plug-in loader that passes no column names gets one sentence naming the argument (it was a
    TypeError, exit 70); empty names stay allowed for records without columns."""
    import numpy as np
    import pytest

    from audit.datasets.split import _check_feature_names
    from certify.errors import InvalidInput

    for bad in (None, "ab", ["a"], ["a", 2]):
        with pytest.raises(InvalidInput, match="feature_names_in must be a sequence of 2 column names"):
            _check_feature_names(bad, np.zeros((3, 2)))
    _check_feature_names([], np.zeros((3, 2)))
    _check_feature_names(["a", "b"], np.zeros((3, 2)))
    _check_feature_names([f"p{i}" for i in range(12)], np.zeros((3, 3, 4)))
