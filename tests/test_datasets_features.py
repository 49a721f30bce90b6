"""Tests for audit.datasets.features: the reference-fitted feature map."""

from __future__ import annotations

import numpy as np
import pytest

from audit.datasets import FeatureMap, load_dataset
from certify.errors import InvalidInput


def test_feature_map_whitening_and_norms() -> None:
    rng = np.random.default_rng(0)
    ref = rng.normal(size=(200, 8)) @ rng.normal(size=(8, 8)) + 3.0
    fm = FeatureMap(standardize=True, pca_components=5, whiten=True, row_norm="none").fit(ref)
    Z = fm.transform(ref).astype(np.float64)
    np.testing.assert_allclose(np.cov(Z, rowvar=False), np.eye(5), atol=1e-5)
    clipped = FeatureMap(standardize=False, row_norm="clip").transform(np.array([[3.0, 4.0], [0.3, 0.4], [0.0, 0.0]]))
    np.testing.assert_allclose(np.linalg.norm(clipped, axis=1), [1.0, 0.5, 0.0], atol=1e-6)
    with pytest.raises(InvalidInput) as info:
        FeatureMap(pca_components=9).fit(ref)
    assert info.value.field == "pca_components"


def test_feature_map_override() -> None:
    data = load_dataset("digits", feature_map={"pca_components": None, "row_norm": "clip"})
    assert data.X_train.shape[1] == 64
    assert data.feature_names[0] == "pixel_0_0"
    assert np.linalg.norm(data.X_train.astype(np.float64), axis=1).max() <= 1.0


def test_fixed_normalization_is_applied_before_everything_and_validated() -> None:
    fm = FeatureMap(normalize=[1.0, 2.0], standardize=False, row_norm="none")
    assert fm.fit(np.zeros((3, 2))).transform(np.array([[3.0, 5.0]])).tolist() == [[1.0, 2.0]]
    assert "normalize: (x - 1) / 2" in " ".join(fm.describe()["steps"])
    for bad in ([0.0], [0.0, 0.0], [0.0, float("nan")], "0.1,0.3"):
        with pytest.raises(InvalidInput, match="normalize"):
            FeatureMap(normalize=bad)
