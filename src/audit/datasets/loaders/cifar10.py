"""CIFAR-10 in its distributed batch formats, from a directory the user gives (``cifar10:<dir>``).

Either format of Krizhevsky's distribution is read, found in ``<dir>`` or in its
``cifar-10-batches-py`` / ``cifar-10-batches-bin`` subdirectory:

* the **python** version: ``data_batch_1`` … ``data_batch_5`` and ``test_batch``, each a pickled
  dict with ``data`` (n x 3072 uint8, the red, green and blue planes of 32 x 32 pixels, row-major)
  and ``labels``. Pickle can run code on load, so these files are read by an unpickler that
  builds only dicts, lists, strings, numbers and numpy arrays and refuses anything else;
* the **binary** version: ``data_batch_1.bin`` … ``data_batch_5.bin`` and ``test_batch.bin``,
  records of 1 label byte followed by 3072 pixel bytes.

Images keep their shape 3 x 32 x 32 (pixels / 255); ``test_batch`` is the test split and the
training batches give reference, unseen and train. The files' SHA-256 are recorded; the toolkit
ships no checksums of CIFAR-10 to compare them with (``verified`` is false).
"""

from __future__ import annotations

import hashlib
import io
import pickle
from pathlib import Path
from typing import Any

import numpy as np

from audit.datasets._common import encode_labels, read_maybe_gzip
from audit.datasets.container import AuditData
from audit.datasets.registry import Loader
from audit.datasets.split import build
from certify.errors import InvalidInput

CITATION = "Krizhevsky, A. (2009). Learning Multiple Layers of Features from Tiny Images. Technical report, University of Toronto."
SHAPE = (3, 32, 32)
RECORD = 1 + 3 * 32 * 32
TRAIN = tuple(f"data_batch_{i}" for i in range(1, 6))
TEST = "test_batch"
#: What a CIFAR batch pickle may build: numpy's array reconstruction and nothing else.
_ALLOWED = {
    ("numpy.core.multiarray", "_reconstruct"),
    ("numpy._core.multiarray", "_reconstruct"),
    ("numpy", "ndarray"),
    ("numpy", "dtype"),
    ("numpy.core.multiarray", "scalar"),
    ("numpy._core.multiarray", "scalar"),
    ("_codecs", "encode"),
}


class _BatchUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _ALLOWED:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"{module}.{name} is not allowed in a CIFAR batch")


def _python_batch(path: Path) -> tuple[np.ndarray, np.ndarray, bytes]:
    raw = read_maybe_gzip(path)
    try:
        batch = _BatchUnpickler(io.BytesIO(raw), encoding="bytes").load()
        data = np.asarray(batch[b"data"] if b"data" in batch else batch["data"], dtype=np.uint8)
        labels = np.asarray(batch[b"labels"] if b"labels" in batch else batch["labels"], dtype=np.int64)
    except Exception as exc:  # a malformed or hostile file: one sentence naming it
        raise InvalidInput(
            "dataset",
            "a CIFAR-10 python batch (a pickled dict with data and labels)",
            str(path),
            hint=f"Reading it failed: {type(exc).__name__}: {exc}",
        ) from None
    if data.ndim != 2 or data.shape[1] != RECORD - 1 or labels.shape != (data.shape[0],):
        raise InvalidInput(
            "dataset",
            "a CIFAR-10 batch of n x 3072 pixels and n labels",
            str(path),
            hint=f"It holds data of shape {data.shape} and {labels.shape[0]} labels.",
        )
    return data, labels, raw


def _binary_batch(path: Path) -> tuple[np.ndarray, np.ndarray, bytes]:
    raw = read_maybe_gzip(path)
    if len(raw) == 0 or len(raw) % RECORD:
        raise InvalidInput(
            "dataset",
            f"a CIFAR-10 binary batch of {RECORD}-byte records",
            str(path),
            hint=f"It holds {len(raw)} bytes.",
        )
    records = np.frombuffer(raw, dtype=np.uint8).reshape(-1, RECORD)
    return records[:, 1:].copy(), records[:, 0].astype(np.int64), raw


def _find(folder: Path) -> tuple[str, dict[str, Path]]:
    for where in (folder, folder / "cifar-10-batches-py", folder / "cifar-10-batches-bin"):
        python = {stem: where / stem for stem in (*TRAIN, TEST)}
        if all(p.is_file() for p in python.values()):
            return "python", python
        binary = {stem: where / f"{stem}.bin" for stem in (*TRAIN, TEST)}
        if all(p.is_file() for p in binary.values()):
            return "binary", binary
    raise InvalidInput(
        "dataset",
        "'cifar10:<dir>' where <dir> (or its cifar-10-batches-py or -bin subdirectory) "
        "holds data_batch_1..5 and test_batch (python) or the same names with .bin",
        str(folder),
    )


def load(folder_str: str, /, **common: Any) -> AuditData:
    """The CIFAR-10 batches in ``folder_str``."""
    folder = Path(folder_str).expanduser()
    if not folder.is_dir():
        raise InvalidInput(
            "dataset", "'cifar10:<dir>' with an existing directory", str(folder), hint="The directory does not exist."
        )
    fmt, paths = _find(folder)
    read = _python_batch if fmt == "python" else _binary_batch
    parts = {stem: read(p) for stem, p in paths.items()}
    shas = {paths[stem].name: hashlib.sha256(raw).hexdigest() for stem, (_, _, raw) in parts.items()}
    train_pixels = np.concatenate([parts[s][0] for s in TRAIN])
    train_labels = np.concatenate([parts[s][1] for s in TRAIN])
    test_pixels, test_labels = parts[TEST][0], parts[TEST][1]
    labels, classes = encode_labels(np.concatenate([train_labels, test_labels]), "y")
    X = train_pixels.reshape(-1, *SHAPE).astype(np.float64) / 255.0
    X_test = test_pixels.reshape(-1, *SHAPE).astype(np.float64) / 255.0
    source = {
        "name": "CIFAR-10",
        "citation": CITATION,
        "licence": "that of the files (CIFAR-10 is distributed by its authors without a stated licence)",
        "url": str(folder),
        "copy_from": str(folder),
        "sha256": shas,
        "sha256_of": "decompressed files",
        "verified": False,
        "format": fmt,
    }
    preprocessing = {
        "parse": {
            "format": f"CIFAR-10 {fmt} batches" + (" (restricted unpickler: arrays only)" if fmt == "python" else ""),
            "image_shape": list(SHAPE),
            "records": {"training batches": int(X.shape[0]), "test_batch": int(X_test.shape[0])},
            "scale": "pixels / 255 (to [0, 1]); records are 3 x 32 x 32 images (R, G, B planes)",
            "reference_and_unseen": "drawn from the training batches",
        }
    }
    return build(
        name=f"cifar10:{folder}",
        X=X,
        y=labels[: train_labels.size],
        classes=classes,
        feature_names_in=[],
        groups=None,
        X_test=X_test,
        y_test=labels[train_labels.size :],
        default_feature_map={"standardize": False, "pca_components": None, "whiten": True, "row_norm": "clip"},
        source=source,
        preprocessing=preprocessing,
        test_source="test_batch",
        **common,
    )


LOADER = Loader(
    name="cifar10:<dir>",
    prefix="cifar10:",
    load=load,
    description="CIFAR-10 python or binary batches in <dir> (data_batch_1..5, test_batch); test_batch gives "
    "the test split; pixels/255 as 3 x 32 x 32 images; default features: raw pixels with each image clipped "
    "to the unit ball",
    source="a directory the user gives (the toolkit downloads nothing)",
    licence="that of the files",
    citation=CITATION,
    order=35,
    title="CIFAR-10 batches (python or binary) in a directory",
    known=(
        {
            "title": "CIFAR-10",
            "url": "https://www.cs.toronto.edu/~kriz/cifar.html",
            "licence": "no licence stated by its authors",
            "citation": CITATION,
            "shape": {
                "records": 60000,
                "train": 50000,
                "test": 10000,
                "features": 3072,
                "image": list(SHAPE),
                "classes": 10,
            },
        },
    ),
    aliases=("cifar10", "cifar-10", "cifar"),
    alias_hint="CIFAR-10 is not bundled; pass 'cifar10:<dir>' with a directory holding the python or binary "
    "batches (data_batch_1..5, test_batch).",
)
