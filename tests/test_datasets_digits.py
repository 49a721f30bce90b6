"""Tests for audit.datasets.loaders.digits: scikit-learn's bundled digits."""

from __future__ import annotations

import numpy as np

from audit.datasets import load_dataset


def test_digits_loads() -> None:
    data = load_dataset("digits", seed=3)
    d = data.describe()
    sizes = data.preprocessing["split"]["sizes"]
    assert sizes["reference"] + sizes["test"] + sizes["unseen"] + sizes["train"] == 1797
    assert d["n_classes"] == 10 and d["d"] == 20
    assert d["n_train"] == 1257 and d["n_test"] == 270 and d["n_unseen"] == 180
    assert set(np.unique(data.y_train)) == set(range(10))
    assert data.source["licence"].startswith("CC BY 4.0")
