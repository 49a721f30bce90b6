"""The CIFAR-10 loader on small synthetic batches in both distributed formats."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import numpy as np
import pytest

from audit.datasets import load_dataset
from certify.errors import InvalidInput

NAMES = [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]


def _batches(n=12, seed=0):
    rng = np.random.default_rng(seed)
    return {name: (rng.integers(0, 256, (n, 3072), dtype=np.uint8), rng.integers(0, 10, n)) for name in NAMES}


def _write_python(folder: Path, batches) -> None:
    for name, (data, labels) in batches.items():
        with open(folder / name, "wb") as fh:
            pickle.dump({b"batch_label": name.encode(), b"labels": labels.tolist(), b"data": data}, fh, protocol=2)


def _write_binary(folder: Path, batches) -> None:
    for name, (data, labels) in batches.items():
        (folder / f"{name}.bin").write_bytes(np.hstack([labels[:, None].astype(np.uint8), data]).tobytes())


@pytest.mark.parametrize("fmt", ["python", "binary"])
def test_both_formats_give_the_same_images(tmp_path: Path, fmt):
    batches = _batches()
    sub = tmp_path / ("cifar-10-batches-py" if fmt == "python" else "cifar-10-batches-bin")
    sub.mkdir()
    (_write_python if fmt == "python" else _write_binary)(sub, batches)
    data = load_dataset(f"cifar10:{tmp_path}", seed=0, feature_map={"row_norm": "none"})
    assert data.input_shape == (3, 32, 32) and data.X_test.shape == (12, 3, 32, 32)
    assert data.source["format"] == fmt and len(data.source["sha256"]) == 6
    # test_batch is the test split, pixel for pixel: red plane first, row-major
    pixels, labels = batches["test_batch"]
    np.testing.assert_allclose(data.X_test[0, 0, 0, :4], pixels[0, :4] / 255.0, rtol=1e-6)
    np.testing.assert_allclose(data.X_test[0, 2, 31, 31], pixels[0, 3071] / 255.0, rtol=1e-6)
    assert (
        data.n_train
        + data.preprocessing["split"]["sizes"]["unseen"]
        + data.preprocessing["split"]["sizes"]["reference"]
        == 60
    )


def test_a_pickle_that_would_run_code_is_refused(tmp_path: Path):
    _write_python(tmp_path, _batches())

    class Hostile:
        def __reduce__(self):
            return (os.system, ("echo owned",))

    with open(tmp_path / "test_batch", "wb") as fh:
        pickle.dump({b"data": Hostile(), b"labels": [1]}, fh)
    with pytest.raises(InvalidInput, match="not allowed in a CIFAR batch") as info:
        load_dataset(f"cifar10:{tmp_path}")
    assert info.value.field == "dataset"


def test_missing_and_truncated_batches_are_named(tmp_path: Path):
    with pytest.raises(InvalidInput, match="data_batch_1..5"):
        load_dataset(f"cifar10:{tmp_path}")
    _write_binary(tmp_path, _batches())
    path = tmp_path / "test_batch.bin"
    path.write_bytes(path.read_bytes()[:-5])
    with pytest.raises(InvalidInput, match="3073-byte records"):
        load_dataset(f"cifar10:{tmp_path}")
    with pytest.raises(InvalidInput, match="not bundled"):
        load_dataset("cifar10")
