"""Small helpers shared by the dataset modules and the loaders (not part of the public API)."""

from __future__ import annotations

import gzip
import hashlib
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from certify.errors import InvalidInput


def sha256_array(a: np.ndarray) -> str:
    """SHA-256 (hex) of an array's dtype, shape and bytes."""
    h = hashlib.sha256()
    h.update(str(a.dtype).encode())
    h.update(str(a.shape).encode())
    h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()


def jsonable(v: Any) -> Any:
    """A numpy scalar as the Python value it holds; anything else unchanged."""
    if isinstance(v, np.generic):
        return v.item()
    return v


def encode_labels(values: np.ndarray, field_name: str) -> tuple[np.ndarray, list[Any]]:
    """Map labels to 0..C-1 by sorted unique value."""
    try:
        classes, codes = np.unique(values, return_inverse=True)
    except TypeError:
        raise InvalidInput(field_name, "labels of one comparable type", values[:5]) from None
    return codes.astype(np.int64).reshape(-1), [jsonable(c) for c in classes]


def read_maybe_gzip(path: Path) -> bytes:
    """The bytes of a file, decompressed when it is gzip (recognised by its magic bytes)."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise InvalidInput("dataset", "a readable file", str(path), hint=str(exc)) from None
    if raw[:2] == b"\x1f\x8b":
        try:
            return gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as exc:
            raise InvalidInput(
                "dataset", "an intact gzip file", str(path), hint=f"Decompression failed: {exc}"
            ) from None
    return raw


def one_hot(values: np.ndarray, column: str, max_categories: int = 1000) -> tuple[np.ndarray, list[str], list[str]]:
    """One-hot columns of a text column (sorted vocabulary): the block, its column names, the
    vocabulary. More than ``max_categories`` values is an error (an identifier-like column)."""
    vocab = sorted(set(values.tolist()))
    if len(vocab) > max_categories:
        raise InvalidInput(column, f"a categorical column with at most {max_categories} distinct values",
                           f"{len(vocab)} distinct values", hint="Drop identifier-like columns (or name them "
                           "as the id column) before loading.")
    index = {v: i for i, v in enumerate(vocab)}
    codes = np.fromiter((index[v] for v in values.tolist()), dtype=np.int64, count=len(values))
    block = np.zeros((len(values), len(vocab)), dtype=np.float64)
    block[np.arange(len(values)), codes] = 1.0
    return block, [f"{column}={v}" for v in vocab], vocab
