"""Small helpers shared by the dataset modules and the loaders (not part of the public API)."""

from __future__ import annotations

import gzip
import hashlib
import zlib
from collections.abc import Callable, Sequence
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


#: Locations of stray text named in the refusal before "and N more".
_MAX_STRAY_SHOWN = 5


def refuse_stray_text(
    column: str, values: Sequence[Any], is_number: Callable[[Any], bool], where: Callable[[int], str]
) -> None:
    """Refuse a column that holds mostly numbers and some text (``values``: None where missing).

    Such a column is dirty numeric data (a typo, a unit, a note), not categories: one-hot encoding
    it would turn one feature into one per distinct number (3 features became 52) and audit a model
    the user never meant. A column with fewer numbers than text stays categorical. ``where(i)``
    says where row ``i`` is (``"at FILE line 7"``)."""
    present = [i for i, v in enumerate(values) if v is not None]
    text = [i for i in present if not is_number(values[i])]
    if not text or 2 * len(text) > len(present):
        return
    shown = ", ".join(f"{values[i]!r} {where(i)}" for i in text[:_MAX_STRAY_SHOWN])
    more = f" and {len(text) - _MAX_STRAY_SHOWN} more" if len(text) > _MAX_STRAY_SHOWN else ""
    raise InvalidInput(
        column,
        f"a number in every row (the column is numeric: {len(present) - len(text)} of "
        f"{len(present)} values are numbers)",
        values[text[0]],
        hint=f"Text {shown}{more}; fix or drop those rows (text in a mostly numeric column is "
        "taken for a data error, not for categories).",
    )


def one_hot(values: np.ndarray, column: str, max_categories: int = 1000) -> tuple[np.ndarray, list[str], list[str]]:
    """One-hot columns of a text column (sorted vocabulary): the block, its column names, the
    vocabulary. More than ``max_categories`` values is an error (an identifier-like column)."""
    vocab = sorted(set(values.tolist()))
    if len(vocab) > max_categories:
        raise InvalidInput(
            column,
            f"a categorical column with at most {max_categories} distinct values",
            f"{len(vocab)} distinct values",
            hint="Drop identifier-like columns (or name them as the id column) before loading.",
        )
    index = {v: i for i, v in enumerate(vocab)}
    codes = np.fromiter((index[v] for v in values.tolist()), dtype=np.int64, count=len(values))
    block = np.zeros((len(values), len(vocab)), dtype=np.float64)
    block[np.arange(len(values)), codes] = 1.0
    return block, [f"{column}={v}" for v in vocab], vocab
