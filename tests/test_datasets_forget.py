"""Tests for audit.datasets.forget: select_forget."""

from __future__ import annotations

import numpy as np
import pytest

from audit.datasets import AuditData, from_arrays, select_forget
from certify.errors import InvalidInput


def _arrays(n: int = 200, d: int = 5, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = (X[:, 0] > 0).astype(int)
    return X, y


@pytest.fixture(scope="module")
def grouped() -> AuditData:
    X, y = _arrays(400)
    y = np.arange(400) % 3  # three classes
    groups = np.repeat(np.arange(40), 10)
    return from_arrays(X, y, groups=groups, seed=0)


def _valid(idx: np.ndarray, data: AuditData) -> None:
    assert idx.dtype == np.int64
    assert np.all(np.diff(idx) > 0)  # sorted, no repeats
    assert idx.min() >= 0 and idx.max() < data.n_train


def test_select_forget_each_selector(grouped: AuditData) -> None:
    n = grouped.n_train  # 280
    idx = select_forget(grouped, count=25, seed=1)
    _valid(idx, grouped)
    assert idx.size == 25
    np.testing.assert_array_equal(idx, select_forget(grouped, count=25, seed=1))
    assert not np.array_equal(idx, select_forget(grouped, count=25, seed=2))

    idx = select_forget(grouped, fraction=0.1)
    assert idx.size == round(0.1 * n)
    assert select_forget(grouped, fraction=1e-6).size == 1

    assert grouped.groups_train is not None
    idx = select_forget(grouped, groups=[3, 7])
    _valid(idx, grouped)
    np.testing.assert_array_equal(idx, np.flatnonzero(np.isin(grouped.groups_train, [3, 7])))

    idx = select_forget(grouped, n_groups=4, seed=5)
    _valid(idx, grouped)
    assert np.unique(grouped.groups_train[idx]).size == 4
    chosen = np.unique(grouped.groups_train[idx])
    np.testing.assert_array_equal(idx, np.flatnonzero(np.isin(grouped.groups_train, chosen)))

    idx = select_forget(grouped, classes=[2])
    _valid(idx, grouped)
    np.testing.assert_array_equal(idx, np.flatnonzero(grouped.y_train == 2))


def test_select_forget_errors(grouped: AuditData) -> None:
    n = grouped.n_train
    with pytest.raises(InvalidInput, match="exactly one") as info:
        select_forget(grouped)
    assert info.value.field == "forget"
    with pytest.raises(InvalidInput, match="exactly one") as info:
        select_forget(grouped, count=3, classes=[0])
    assert info.value.field == "forget"
    with pytest.raises(InvalidInput, match=rf"at most n//2 records \({n // 2} of") as info:
        select_forget(grouped, count=n // 2 + 1)
    assert info.value.field == "forget"
    assert "retrain" in str(info.value)
    assert select_forget(grouped, count=n // 2).size == n // 2
    with pytest.raises(InvalidInput, match="n//2") as info:
        select_forget(grouped, fraction=0.6)
    assert info.value.field == "forget"
    with pytest.raises(InvalidInput, match="n//2") as info:
        select_forget(grouped, classes=[0, 1])
    assert info.value.field == "forget"
    with pytest.raises(InvalidInput) as info:
        select_forget(grouped, count=0)
    assert info.value.field == "count"
    with pytest.raises(InvalidInput) as info:
        select_forget(grouped, fraction=1.5)
    assert info.value.field == "fraction"
    with pytest.raises(InvalidInput, match="selected no record") as info:
        select_forget(grouped, groups=[999])
    assert info.value.field == "groups"
    with pytest.raises(InvalidInput) as info:
        select_forget(grouped, n_groups=1000)
    assert info.value.field == "n_groups"
    with pytest.raises(InvalidInput) as info:
        select_forget(grouped, classes=[7])
    assert info.value.field == "classes"


def test_select_forget_needs_groups_and_reports_empty_classes() -> None:
    X, y = _arrays()
    Xt = X[:6]
    yt = np.array([0, 1, 2, 0, 1, 2])  # class 2 exists only in the test set
    data = from_arrays(X, y, X_test=Xt, y_test=yt)
    assert data.n_classes == 3
    with pytest.raises(InvalidInput, match="selected no record") as info:
        select_forget(data, classes=[2])
    assert info.value.field == "classes"
    with pytest.raises(InvalidInput, match="groups_train is None") as info:
        select_forget(data, groups=[0])
    assert info.value.field == "groups"
    with pytest.raises(InvalidInput) as info:
        select_forget(data, n_groups=2)
    assert info.value.field == "n_groups"
