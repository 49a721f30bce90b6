"""scikit-learn's bundled 8x8 handwritten digits (``sklearn.datasets.load_digits``, offline)."""

from __future__ import annotations

from typing import Any

import numpy as np

from audit.datasets._common import encode_labels, sha256_array
from audit.datasets.container import AuditData
from audit.datasets.registry import Loader
from audit.datasets.split import build

DIGITS_CITATION = (
    "Alpaydin, E. and Kaynak, C. (1998). Optical Recognition of Handwritten Digits. "
    "UCI Machine Learning Repository. https://doi.org/10.24432/C50P49"
)


def load(**common: Any) -> AuditData:
    """The 1,797 digits, pixels scaled to [0, 1]."""
    import sklearn
    from sklearn.datasets import load_digits

    bunch = load_digits()
    X = np.asarray(bunch.data, dtype=np.float64) / 16.0
    y_raw = np.asarray(bunch.target)
    y, classes = encode_labels(y_raw, "y")
    source = {
        "name": "Optical Recognition of Handwritten Digits (8x8, scikit-learn load_digits)",
        "citation": DIGITS_CITATION,
        "licence": "CC BY 4.0 (UCI); scikit-learn BSD-3-Clause",
        "url": "https://doi.org/10.24432/C50P49",
        "copy_from": f"scikit-learn {sklearn.__version__} bundled data (load_digits, offline)",
        "sha256": {
            "data": sha256_array(np.asarray(bunch.data)),
            "target": sha256_array(np.asarray(bunch.target)),
        },
        "sha256_of": "the arrays returned by load_digits (dtype, shape, bytes)",
        "verified": False,
    }
    preprocessing = {
        "parse": {"scale": "pixels / 16 (to [0, 1])", "shape": [int(s) for s in X.shape]},
    }
    return build(
        name="digits",
        X=X,
        y=y,
        classes=classes,
        feature_names_in=[f"pixel_{i // 8}_{i % 8}" for i in range(X.shape[1])],
        groups=None,
        X_test=None,
        y_test=None,
        default_feature_map={"standardize": True, "pca_components": 20, "whiten": True, "row_norm": "unit"},
        source=source,
        preprocessing=preprocessing,
        test_source="a random split of the records",
        **common,
    )


LOADER = Loader(
    name="digits",
    load=load,
    description="8x8 handwritten digits, 1,797 records, 10 classes; pixels/16; default "
    "features: standardise + PCA-whiten to 20 + unit-norm rows, fitted on a reference split",
    source="scikit-learn sklearn.datasets.load_digits (bundled, offline)",
    licence="CC BY 4.0 (UCI); scikit-learn BSD-3-Clause",
    citation=DIGITS_CITATION,
    order=20,
    title="Optical Recognition of Handwritten Digits (8x8, scikit-learn load_digits)",
    url="https://doi.org/10.24432/C50P49",
    shape={"records": 1797, "features": 64, "image": [8, 8], "classes": 10, "default_features": 20},
)
