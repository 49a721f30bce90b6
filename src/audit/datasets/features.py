"""The reference-fitted feature map: fixed normalisation, standardisation, PCA, row norm.

A :class:`FeatureMap` is fitted on the **reference** split only, never on train, test or unseen
records, so the features do not depend on the training set *D* (see :mod:`audit.datasets`).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from audit.datasets._common import sha256_array
from certify.errors import Choice, Integer, InvalidInput, require

__all__ = ["FeatureMap", "resolve_feature_map"]

ROW_NORMS = ("none", "clip", "unit")
FEATURE_MAP_KEYS = ("normalize", "standardize", "pca_components", "whiten", "row_norm")


def one_blas_thread() -> Any:
    """Run BLAS single-threaded: results independent of the core count (so content hashes
    agree across machines), and no thread contention on these small matrices."""
    try:
        from threadpoolctl import threadpool_limits  # a scikit-learn dependency
    except ImportError:  # pragma: no cover
        return contextlib.nullcontext()
    return threadpool_limits(limits=1, user_api="blas")


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
       (a zero row stays zero). Stored rows never exceed norm 1 (see :mod:`audit.datasets`).

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
            if (
                len(pair) != 2
                or not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in pair)
                or pair[1] <= 0
            ):
                raise InvalidInput("normalize", "None or [mean, std] with finite mean and std > 0", normalize)
            normalize = (float(pair[0]), float(pair[1]))
        self.normalize = normalize
        if not isinstance(standardize, (bool, np.bool_)):
            raise InvalidInput("standardize", "True or False", standardize)
        if not isinstance(whiten, (bool, np.bool_)):
            raise InvalidInput("whiten", "True or False", whiten)
        if pca_components is not None:
            pca_components = require(Integer(lo=1), "pca_components", pca_components, "None or an integer >= 1")
        row_norm = Choice(ROW_NORMS).check("row_norm", row_norm)
        self.standardize = bool(standardize)
        self.pca_components = pca_components
        self.whiten = bool(whiten)
        self.row_norm = row_norm
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
        unknown = sorted(set(config) - set(FEATURE_MAP_KEYS))
        if unknown:
            raise InvalidInput(
                "feature_map",
                "a mapping with keys among " + ", ".join(repr(k) for k in FEATURE_MAP_KEYS),
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
                "pca_components",
                f"at most the number of input features ({d})",
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
            with one_blas_thread():
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
            raise InvalidInput("feature_map", "fitted on the reference split before transform", "unfitted")
        Z = self._normalized(X)
        if Z.ndim != 2:
            raise InvalidInput("X", "a 2-D array", f"array of shape {Z.shape}")
        if self.n_features_in_ is not None and Z.shape[1] != self.n_features_in_:
            raise InvalidInput("X", f"an array with {self.n_features_in_} columns", f"{Z.shape[1]} columns")
        if self.standardize:
            assert self.mean_ is not None and self.scale_ is not None
            Z = (Z - self.mean_) / self.scale_
        if self.pca_components is not None:
            assert self.pca_mean_ is not None and self._projection is not None
            with one_blas_thread():
                Z = (Z - self.pca_mean_) @ self._projection
        if self.row_norm == "none":
            return np.ascontiguousarray(Z, dtype=np.float32)
        norms = np.linalg.norm(Z, axis=1)
        if self.row_norm == "unit":
            divisor = np.where(norms > 0, norms, 1.0)
        else:  # clip
            divisor = np.maximum(norms, 1.0)
        return bound_rows(Z / divisor[:, None])

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
                f"reference split ({self.n_reference_} records), disjoint from train, test and unseen"
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
                "reference split" + (", whitened (reference covariance = identity, ddof=1)" if self.whiten else "")
            )
            pca: dict[str, Any] = {"components": self.pca_components, "whiten": self.whiten}
            if self.components_ is not None:
                assert self.explained_variance_ is not None
                assert self.explained_variance_ratio_ is not None
                assert self.pca_mean_ is not None
                pca["explained_variance"] = [float(v) for v in self.explained_variance_]
                pca["explained_variance_ratio_total"] = float(np.sum(self.explained_variance_ratio_))
                pca["components_sha256"] = sha256_array(self.components_)
                pca["mean_sha256"] = sha256_array(self.pca_mean_)
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


def bound_rows(Z: np.ndarray) -> np.ndarray:
    """Cast to float32 so that no row exceeds norm 1 after the cast."""
    X32 = np.ascontiguousarray(Z, dtype=np.float32)
    norms = np.linalg.norm(X32.astype(np.float64), axis=1)
    over = norms > 1.0
    if np.any(over):
        fixed = Z[over] / norms[over, None] * (1.0 - 2.0**-22)
        X32[over] = fixed.astype(np.float32)
    return X32


def resolve_feature_map(feature_map: FeatureMap | Mapping[str, Any] | None, default: Mapping[str, Any]) -> FeatureMap:
    """A fresh, unfitted map: ``default`` (a dataset's options), overridden by ``feature_map``."""
    if feature_map is None:
        return FeatureMap.from_config(default)
    if isinstance(feature_map, FeatureMap):
        return FeatureMap(**feature_map.config())  # a fresh, unfitted copy
    if isinstance(feature_map, Mapping):
        unknown = sorted(set(feature_map) - set(FEATURE_MAP_KEYS))
        if unknown:
            raise InvalidInput(
                "feature_map",
                "a FeatureMap or a mapping with keys among " + ", ".join(repr(k) for k in FEATURE_MAP_KEYS),
                unknown,
            )
        return FeatureMap.from_config({**default, **feature_map})
    raise InvalidInput("feature_map", "None, a FeatureMap, or a mapping of FeatureMap options", feature_map)
