"""A CSV table with a header row that the user gives (``csv:<file>``, optionally gzip).

``label_column`` (required) gives the labels and ``group_column`` (optional) ``groups_train``;
numeric columns are kept, other columns one-hot encoded. A column of mostly numbers with some
text is refused, naming the lines (dirty numeric data, not categories).
"""

from __future__ import annotations

import csv
import hashlib
import io
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from audit.datasets._common import one_hot, read_maybe_gzip, refuse_stray_text
from audit.datasets.container import AuditData
from audit.datasets.registry import Loader
from audit.datasets.split import build
from audit.datasets.user import check_ids, parse_ids
from certify.errors import InvalidInput

CSV_MISSING = frozenset({"", "?", "na", "n/a", "nan", "null", "none"})
CSV_MAX_CATEGORIES = 1000
_MAX_LINES_SHOWN = 10  # line numbers listed in a missing-label error before "and N more"
_MISSING_WORDS = "empty, NaN or any of " + ", ".join(repr(t) for t in sorted(CSV_MISSING) if t) + " (any case)"


def _parse_float(s: str) -> float | None:
    """``float(s)``, or None when ``s`` is not a number."""
    try:
        return float(s)
    except ValueError:
        return None


def _is_missing_label(v: str) -> bool:
    """A label cell that holds no label: empty (after stripping), a missing-value token, or any
    spelling of NaN (``NaN``, ``-nan``)."""
    if v.lower() in CSV_MISSING:
        return True
    x = _parse_float(v)
    return x is not None and math.isnan(x)


def _sorted_values(values: Sequence[str]) -> list[str]:
    """Sorted distinct values: numerically when every value is a number, else as text."""
    uniq = set(values)
    if uniq and all(_parse_float(v) is not None for v in uniq):
        return sorted(uniq, key=lambda v: (float(v), v))
    return sorted(uniq)


def load(
    file_str: str,
    /,
    *,
    label_column: str | None = None,
    group_column: str | None = None,
    id_column: str | None = None,
    **common: Any,
) -> AuditData:
    """The table in ``file_str``; ``label_column`` is required, ``id_column`` names each record's
    id (integers when every value is a canonical integer, else text)."""
    path = Path(file_str).expanduser()
    sha, reader, header = _open(path)
    label_column = _check_columns(header, label_column, group_column, id_column)
    rows, line_numbers = _rows(reader, header, path)
    n = len(rows)
    columns = {h: [r[i] for r in rows] for i, h in enumerate(header)}
    classes, y = _labels(columns[label_column], label_column, line_numbers, path)
    X, names, kinds = _features(columns, (label_column, group_column, id_column), line_numbers, path)

    groups = None
    if group_column is not None:
        gvalues = _sorted_values(columns[group_column])
        gindex = {v: i for i, v in enumerate(gvalues)}
        groups = np.fromiter((gindex[v] for v in columns[group_column]), dtype=np.int64, count=n)

    ids = None
    if id_column is not None:
        ids = check_ids(np.asarray(parse_ids(columns[id_column]), dtype=object), id_column)

    source = {
        "name": path.name,
        "citation": None,
        "licence": "that of the file (unknown to the toolkit)",
        "url": str(path),
        "copy_from": str(path),
        "sha256": {path.name: sha},
        "sha256_of": "decompressed file" if path.suffix == ".gz" else "file",
        "verified": False,
    }
    preprocessing: dict[str, Any] = {
        "parse": {
            "file": str(path),
            "records": n,
            "columns": kinds,
            "missing_tokens_numeric": sorted(CSV_MISSING),
            "missing_rule": "a missing value in the label column or a numeric column is an "
            "error; in a non-numeric feature column it is its own category",
            "vocabulary": "sorted distinct values over the whole file",
        },
        "label": {"column": label_column},
    }
    if id_column is not None:
        assert ids is not None  # parsed above whenever id_column is given
        preprocessing["ids"] = {"column": id_column, "type": "integer" if ids.dtype.kind == "i" else "text"}
    if group_column is not None:
        preprocessing["groups"] = {
            "column": group_column,
            "values": gvalues,
            "encoding": "group id k is values[k]; the column is excluded from the features",
        }
    return build(
        name=f"csv:{path}",
        X=X,
        y=y,
        classes=classes,
        feature_names_in=names,
        groups=groups,
        X_test=None,
        y_test=None,
        default_feature_map={"standardize": True, "pca_components": None, "whiten": True, "row_norm": "clip"},
        source=source,
        preprocessing=preprocessing,
        test_source="a random split of the records",
        ids=ids,
        **common,
    )


# the steps of load, in the order it takes them (each check keeps its field and message)


def _open(path: Path) -> tuple[str, Any, list[str]]:
    """The file's sha256, a CSV reader past the header, and the header's column names (checked
    distinct and non-empty)."""
    if path.is_dir():
        raise InvalidInput(
            "dataset", "'csv:<file>' with a CSV file", str(path), hint="This path is a directory, not a file."
        )
    if not path.is_file():
        raise InvalidInput(
            "dataset",
            "'csv:<file>' with an existing file",
            str(path),
            hint="The file does not exist.",
        )
    raw = read_maybe_gzip(path)
    sha = hashlib.sha256(raw).hexdigest()
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InvalidInput("dataset", "a UTF-8 CSV file", str(path)) from None
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = [h.strip() for h in next(reader)]
    except StopIteration:
        raise InvalidInput("dataset", "a CSV file with a header row", f"empty file {path}") from None
    if len(set(header)) != len(header) or any(h == "" for h in header):
        raise InvalidInput("dataset", "a header row of distinct, non-empty column names", header)
    return sha, reader, header


def _check_columns(header: list[str], label_column: str | None, group_column: str | None, id_column: str | None) -> str:
    """The label column, checked in the header; the group and id columns, when given, are too,
    and differ from it and from each other."""
    if label_column is None or label_column not in header:
        raise InvalidInput(
            "label_column",
            "a column of the CSV header: " + ", ".join(map(repr, header)),
            label_column,
        )
    if group_column is not None and (group_column not in header or group_column == label_column):
        raise InvalidInput(
            "group_column",
            "None or a column of the CSV header other than the label: "
            + ", ".join(repr(h) for h in header if h != label_column),
            group_column,
        )
    if id_column is not None and (id_column not in header or id_column in (label_column, group_column)):
        raise InvalidInput(
            "id_column",
            "None or a column of the CSV header other than the label and group: "
            + ", ".join(repr(h) for h in header if h not in (label_column, group_column)),
            id_column,
        )
    return label_column


def _rows(reader: Any, header: list[str], path: Path) -> tuple[list[list[str]], list[int]]:
    """The data rows (cells stripped; blank rows skipped) and each one's line in the file; at
    least one row, each with the header's number of fields."""
    rows: list[list[str]] = []
    line_numbers: list[int] = []
    for row in reader:
        if not row or all(not c.strip() for c in row):
            continue
        if len(row) != len(header):
            raise InvalidInput(
                "dataset",
                f"{len(header)} fields per CSV row (as in the header)",
                f"{len(row)} fields at {path} line {reader.line_num}",
            )
        rows.append([c.strip() for c in row])
        line_numbers.append(reader.line_num)
    if len(rows) == 0:
        raise InvalidInput("dataset", "a CSV file with data rows after the header", str(path))
    return rows, line_numbers


def _labels(labels: list[str], label_column: str, line_numbers: list[int], path: Path) -> tuple[list[str], np.ndarray]:
    """The label column's classes (sorted, at least 2) and each row's class index."""
    # A missing label is not a class: without this check an empty cell or "nan" became a class
    # of its own and the audit ran on labels that were never given.
    holes = [i for i, v in enumerate(labels) if _is_missing_label(v)]
    if holes:
        missing = [line_numbers[i] for i in holes]
        shown = ", ".join(map(str, missing[:_MAX_LINES_SHOWN]))
        more = f" and {len(missing) - _MAX_LINES_SHOWN} more" if len(missing) > _MAX_LINES_SHOWN else ""
        raise InvalidInput(
            label_column,
            f"a label in every row: not {_MISSING_WORDS} (a missing label is not a class)",
            labels[holes[0]],
            hint=f"{len(missing)} missing label(s) at {path} line{'s' if len(missing) > 1 else ''} "
            f"{shown}{more}; fill or drop those rows before loading.",
        )
    classes = _sorted_values(labels)
    if len(classes) < 2:
        raise InvalidInput(label_column, "a label column with at least 2 distinct values", classes)
    class_index = {v: i for i, v in enumerate(classes)}
    return classes, np.fromiter((class_index[v] for v in labels), dtype=np.int64, count=len(labels))


def _features(
    columns: dict[str, list[str]], skipped: tuple[str | None, ...], line_numbers: list[int], path: Path
) -> tuple[np.ndarray, list[str], dict[str, Any]]:
    """The feature matrix of every column but the ``skipped`` ones (numeric columns kept, others
    one-hot encoded), its column names, and how each source column was read."""
    blocks: list[np.ndarray] = []
    names: list[str] = []
    kinds: dict[str, Any] = {}
    for h, values in columns.items():
        if h in skipped:
            continue
        present = [v for v in values if v.lower() not in CSV_MISSING]
        numeric = bool(present) and all(_parse_float(v) is not None for v in present)
        if numeric:
            blocks.append(_numeric_column(h, values, line_numbers, path)[:, None])
            names.append(h)
            kinds[h] = "numeric"
        else:
            refuse_stray_text(
                h,
                [None if v.lower() in CSV_MISSING else v for v in values],
                lambda v: _parse_float(v) is not None,
                lambda i: f"at {path} line {line_numbers[i]}",
            )
            block, labels, vocab = one_hot(np.asarray(values, dtype=object), h, CSV_MAX_CATEGORIES)
            blocks.append(block)
            names += labels
            kinds[h] = {"one_hot": vocab}
    if not blocks:
        raise InvalidInput("dataset", "a CSV with at least one feature column besides label and group", list(columns))
    return np.hstack(blocks), names, kinds


def _numeric_column(h: str, values: list[str], line_numbers: list[int], path: Path) -> np.ndarray:
    """A numeric column as float64, refusing a missing or non-finite cell (naming its line)."""
    col = np.empty(len(values), dtype=np.float64)
    for i, v in enumerate(values):
        x = None if v.lower() in CSV_MISSING else _parse_float(v)
        if x is None or not math.isfinite(x):
            raise InvalidInput(
                h,
                "a finite number in every row (the column is numeric)",
                v,
                hint=f"Missing or non-finite value at {path} line {line_numbers[i]}; "
                "fill or drop missing values before loading.",
            )
        col[i] = x
    return col


LOADER = Loader(
    name="csv:<file>",
    prefix="csv:",
    load=load,
    description="a CSV table with a header row; label_column= required, group_column= and id_column= "
    "optional; numeric columns kept, other columns one-hot; default features: standardise "
    "+ rows clipped to the unit ball",
    source="a file the user gives",
    licence="that of the file",
    citation="that of the file",
    options=("label_column", "group_column", "id_column"),
    order=40,
    title="a CSV table with a header row",
)
