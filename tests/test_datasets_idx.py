"""Tests for audit.datasets.loaders.idx: MNIST-style IDX files in a directory."""

from __future__ import annotations

import gzip
import struct
from pathlib import Path

import numpy as np
import pytest

from audit.datasets import load_dataset, read_idx
from certify.errors import InvalidInput

SHARED_MNIST = Path(__file__).resolve().parents[1].parent / "shared" / "datasets" / "mnist"


def _write_idx(path: Path, array: np.ndarray, *, magic: int | None = None, gz: bool = False) -> None:
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
    assert data.X_test.shape == (20, 1, 4, 5)  # t10k is the test split, kept as 1 x 4 x 5 images
    assert data.input_shape == (1, 4, 5) and data.n_features == 20
    sizes = data.preprocessing["split"]["sizes"]
    assert sizes == {"reference": 4, "test": 20, "unseen": 8, "train": 68, "train_before_max_train": 68}
    assert data.source["verified"] is False and len(data.source["sha256"]) == 4
    # default: raw pixels / 255, rows clipped into the unit ball
    assert data.preprocessing["feature_map"]["config"]["pca_components"] is None
    assert np.linalg.norm(data.X_train.reshape(68, -1).astype(np.float64), axis=1).max() <= 1.0
    raw = read_idx(tmp_path / "t10k-images-idx3-ubyte")
    x = raw[0] / 255.0
    np.testing.assert_allclose(data.X_test[0, 0], x / max(1.0, np.linalg.norm(x)), rtol=1e-5)
    # PCA projects the flattened images: records become feature vectors
    assert load_dataset(f"idx:{tmp_path}", feature_map={"pca_components": 3}).X_train.shape == (68, 3)
    with pytest.raises(InvalidInput) as info:
        load_dataset(f"idx:{tmp_path}", test_fraction=0.2)
    assert info.value.field == "test_fraction"
    assert load_dataset(f"idx:{tmp_path}", max_train=10).X_train.shape == (10, 1, 4, 5)


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


@pytest.mark.slow  # reads and verifies the real 70,000-image MNIST files
@pytest.mark.skipif(
    not (SHARED_MNIST / "train-images-idx3-ubyte.gz").is_file(),
    reason=f"MNIST IDX files not found at {SHARED_MNIST} (only the CI checkout has ../shared)",
)
def test_idx_reads_real_mnist() -> None:
    data = load_dataset(f"idx:{SHARED_MNIST}", max_train=1000)
    assert data.source["name"] == "MNIST" and data.source["verified"] is True
    assert data.X_train.shape == (1000, 1, 28, 28)
    assert data.X_test.shape == (10000, 1, 28, 28)
    assert data.X_unseen.shape == (6000, 1, 28, 28)
    assert data.n_classes == 10
    assert data.preprocessing["split"]["sizes"]["train_before_max_train"] == 51000


def _write_header(path: Path, magic: int, dims: tuple[int, ...], data: bytes = b"", *, gz: bool = False) -> Path:
    """An IDX file with a header stating ``dims`` followed by ``data`` (which may disagree)."""
    payload = struct.pack(">I", magic) + b"".join(struct.pack(">I", d) for d in dims) + data
    path.write_bytes(gzip.compress(payload) if gz else payload)
    return path


@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gzip"])
@pytest.mark.parametrize(
    ("magic", "dims", "data", "words"),
    [
        (0x803, (0, 28, 28), b"", "dimensions are all at least 1"),  # 0 images
        (0x803, (5, 0, 28), b"", "dimensions are all at least 1"),  # 0 x 28 images
        (0x803, (5, 28, 0), b"", "dimensions are all at least 1"),
        (0x801, (0,), b"", "dimensions are all at least 1"),  # 0 labels
        (0x803, (5, 4, 5), bytes(99), "100 data bytes"),  # one byte short: truncated
        (0x803, (5, 4, 5), bytes(101), "more than 100 data bytes"),  # trailing data
        (0x803, (10, 28, 28), bytes(100), "7840 data bytes"),  # dims product > bytes in file
        (0x803, (2**31 - 1, 28, 28), bytes(784), f"{(2**31 - 1) * 784} data bytes"),
        # the product overflows int64 (np.prod wrapped it to a wrong size before)
        (0x803, (2**31 - 1,) * 3, bytes(16), f"{(2**31 - 1) ** 3} data bytes"),
        (0x803, (2**32 - 1,) * 3, b"", f"{(2**32 - 1) ** 3} data bytes"),
        (0x801, (2**31 - 1,), bytes(3), f"{2**31 - 1} data bytes"),
    ],
    ids=[
        "zero-images",
        "zero-rows",
        "zero-cols",
        "zero-labels",
        "truncated",
        "trailing",
        "product-exceeds-file",
        "huge-count",
        "int64-overflow",
        "uint32-max",
        "huge-labels",
    ],
)
def test_idx_header_is_checked_against_the_file(tmp_path: Path, magic, dims, data, words, gz) -> None:
    path = _write_header(tmp_path / "f-idx-ubyte", magic, dims, data, gz=gz)
    with pytest.raises(InvalidInput) as info:
        read_idx(path)
    err = info.value
    assert err.field == "dataset"
    assert words in str(err) and str(path) in str(err)


def test_idx_header_cut_short_and_wrong_magic(tmp_path: Path) -> None:
    path = tmp_path / "short"
    path.write_bytes(struct.pack(">I", 0x803) + struct.pack(">I", 5))  # two of three dims
    with pytest.raises(InvalidInput, match="an IDX header of 16 bytes; got '8 bytes in") as info:
        read_idx(path)
    assert info.value.field == "dataset"
    path.write_bytes(b"\x00\x08")
    with pytest.raises(InvalidInput, match="4-byte magic number"):
        read_idx(path)
    _write_header(path, 0x00000802, (5,), bytes(5))  # an IDX type the loader does not read
    with pytest.raises(InvalidInput, match="magic 0x00000802 in"):
        read_idx(path)
    _write_header(path, 0x801, (5,), bytes(5))
    with pytest.raises(InvalidInput, match="magic 0x00000803"):  # labels where images belong
        read_idx(path, expect_magic=0x803)
    assert read_idx(path).shape == (5,)  # the same file read as labels is fine


def test_idx_corrupt_gzip(tmp_path: Path) -> None:
    path = tmp_path / "cut.gz"
    blob = gzip.compress(struct.pack(">III", 0x801, 1000, 0) + bytes(1000))
    path.write_bytes(blob[: len(blob) // 2])  # a gzip stream cut in the middle
    with pytest.raises(InvalidInput) as info:
        read_idx(path)
    assert info.value.field == "dataset" and "intact" in info.value.allowed


def test_idx_loader_names_the_bad_file(tmp_path: Path) -> None:
    # the crash of issue 13: a train file stating 0 images loaded and failed later on reshape
    _tiny_idx(tmp_path)
    bad = tmp_path / "train-images-idx3-ubyte.gz"
    _write_header(bad, 0x803, (0, 4, 5), gz=True)
    with pytest.raises(InvalidInput) as info:
        load_dataset(f"idx:{tmp_path}")
    assert info.value.field == "dataset"
    assert "train-images-idx3-ubyte.gz" in str(info.value) and "(0, 4, 5)" in str(info.value)
