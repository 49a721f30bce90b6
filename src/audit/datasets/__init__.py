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

Third-party sources register a :class:`Loader` in the entry-point group
``unlearn_audit.datasets``; :func:`available_datasets` lists every source that loads and
:func:`unavailable_datasets` every one that does not, with its error.

:func:`catalogue` lists every source with its licence and shape (``audit datasets``).
:func:`from_arrays` wraps a user's own arrays with the same splitting and feature map.
:func:`select_forget` picks the records to forget.

Modules
-------
:mod:`~audit.datasets.features`
    :class:`FeatureMap`, the reference-fitted feature map.
:mod:`~audit.datasets.container`
    :class:`AuditData`, its description and content hash.
:mod:`~audit.datasets.split`
    The split shared by every loader (:func:`~audit.datasets.split.build`).
:mod:`~audit.datasets.arrays`
    :func:`from_arrays`.
:mod:`~audit.datasets.forget`
    :func:`select_forget`.
:mod:`~audit.datasets.registry`
    :class:`Loader`, :func:`load_dataset` and the discovery of loaders.
:mod:`audit.datasets.loaders`
    One module per source (``adult``, ``digits``, ``idx``, ``csv``); a new source is a new module.

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

from importlib import import_module
from typing import Any

from audit.datasets.arrays import from_arrays
from audit.datasets.container import AuditData
from audit.datasets.features import FeatureMap
from audit.datasets.forget import select_forget
from audit.datasets.registry import (
    DATASETS,
    Loader,
    available_datasets,
    catalogue,
    list_datasets,
    load_dataset,
    unavailable_datasets,
)

__all__ = [
    "ADULT_SHA256",
    "DATASETS",
    "AuditData",
    "FeatureMap",
    "Loader",
    "available_datasets",
    "catalogue",
    "from_arrays",
    "list_datasets",
    "load_dataset",
    "read_idx",
    "select_forget",
    "unavailable_datasets",
]

#: Names kept here for callers of the one-module ``audit.datasets``, read from their loader
#: module on first access so that importing this package imports no loader (a broken loader is
#: then reported by :func:`unavailable_datasets` instead of breaking the import).
_FROM_LOADERS = {
    "ADULT_SHA256": "audit.datasets.loaders.adult",
    "read_idx": "audit.datasets.loaders.idx",
}


def __getattr__(name: str) -> Any:
    module = _FROM_LOADERS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(module), name)
