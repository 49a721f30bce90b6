"""Exact ROC curves, AUROC and TPR at a fixed FPR for membership-inference scores.

Every attack in :mod:`attacks` reduces to two samples of real-valued scores: one per *positive*
(a member, or a model from the unlearned world U) and one per *negative* (a non-member, or a model
from the retrained world R). By convention a **higher score means "positive"**. This module turns
the two samples into the numbers the audit reports:

* :func:`roc_curve`: the exact empirical ROC curve, one point per distinct threshold, with tied
  scores kept together (no arbitrary order inside a tie): :func:`sklearn.metrics.roc_curve` with
  ``drop_intermediate=False``;
* :func:`auroc`: the area under that curve (:func:`sklearn.metrics.roc_auc_score`), which is the
  Mann–Whitney statistic ``P(S_pos > S_neg) + ½·P(S_pos = S_neg)`` (Hanley & McNeil 1982), so a
  tie counts one half;
* :func:`tpr_at_fpr`: the largest TPR among ROC points whose FPR does not exceed the target.
  No interpolation between points, so the value is *achievable* by one threshold and is never
  optimistic. With ``n_neg`` negatives the smallest non-zero FPR is ``1/n_neg``: below that the
  value is the TPR at FPR = 0;
* :class:`RocSummary`: AUROC, TPR at 1 % and 0.1 % FPR (the low-FPR regime that Carlini et al.
  2022 argue is the one that matters), the sample sizes, and a downsampled curve for log–log
  plots.

AUROC is reported as measured. A value far *below* ½ is as much leakage as one far above it
(``anchors-auditing.md`` §2.12, pitfall 6): the attacker only has to flip its decision. The
ε lower bound in :mod:`attacks.epsilon` considers both directions; this module does not flip.

These rates are **point estimates** on finite samples. They are not confidence bounds; see
:mod:`attacks.epsilon` for the Clopper–Pearson bound.

References
----------
.. [1] J. A. Hanley and B. J. McNeil, "The meaning and use of the area under a receiver operating
   characteristic (ROC) curve", Radiology 143(1), 1982.
.. [2] T. Fawcett, "An introduction to ROC analysis", Pattern Recognition Letters 27(8), 2006
   (Algorithm 2: the curve with tied scores handled as one step).
.. [3] N. Carlini, S. Chien, M. Nasr, S. Song, A. Terzis and F. Tramèr, "Membership Inference
   Attacks From First Principles", IEEE S&P 2022 (TPR at low FPR on log–log ROC axes).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from attacks.rates import _scores
from certify.errors import InvalidInput, Real

__all__ = [
    "DEFAULT_CURVE_POINTS",
    "RocSummary",
    "auroc",
    "roc_curve",
    "summarize_roc",
    "tpr_at_fpr",
]

DEFAULT_CURVE_POINTS = 200
"""Most curve points kept by :class:`RocSummary` for plotting."""

_COUNT_TOL = 1e-9
"""Relative slack when turning a target FPR into a count of false positives (float rounding)."""


def _labelled(pos: np.ndarray, neg: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(y_true, y_score) in scikit-learn's form: label 1 for the positives, 0 for the negatives."""
    return np.r_[np.ones(pos.size), np.zeros(neg.size)], np.r_[pos, neg]


def _curve(pos: np.ndarray, neg: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(fpr, tpr, thresholds), one entry per distinct score, highest first.

    Entry ``k`` is the rule "positive iff score >= thresholds[k]"; entry 0 is the empty rule
    (threshold +inf, nothing positive; scikit-learn >= 1.3). ``drop_intermediate=False`` keeps
    every point: dropping collinear ones would remove thresholds that :func:`tpr_at_fpr` may need.
    """
    import sklearn.metrics  # on first use: listing attacks must not import scikit-learn

    return sklearn.metrics.roc_curve(*_labelled(pos, neg), drop_intermediate=False)


def _auroc(pos: np.ndarray, neg: np.ndarray) -> float:
    # clipped because a trapezoidal sum of rates in [0, 1] can round a hair past either end
    import sklearn.metrics

    return float(min(1.0, max(0.0, sklearn.metrics.roc_auc_score(*_labelled(pos, neg)))))


def roc_curve(
    scores_pos: object, scores_neg: object, *, return_thresholds: bool = False
) -> tuple[np.ndarray, np.ndarray] | tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Exact empirical ROC curve of "positive iff score >= threshold".

    Parameters
    ----------
    scores_pos, scores_neg:
        1-D arrays of finite scores of the positives (members, world U) and negatives
        (non-members, world R); higher means "positive". At least one of each.
    return_thresholds:
        Also return the threshold of every point.

    Returns
    -------
    fpr, tpr : numpy.ndarray
        Non-decreasing rates, one point per distinct score plus the origin: the curve starts at
        (0, 0) (threshold +inf) and ends at (1, 1) (threshold = the lowest score). Equal scores
        are one step, which may move diagonally when a tie mixes positives and negatives
        (Fawcett 2006, Algorithm 2), so the trapezoidal area under the curve is :func:`auroc`
        (to rounding).
    thresholds : numpy.ndarray
        Only with ``return_thresholds=True``: decreasing, ``thresholds[0] = +inf``.

    Raises
    ------
    certify.errors.InvalidInput
        If either sample is empty, not 1-D, or holds a NaN or infinite score.
    """
    pos = _scores(scores_pos, "scores_pos")
    neg = _scores(scores_neg, "scores_neg")
    fpr, tpr, thresholds = _curve(pos, neg)
    if return_thresholds:
        return fpr, tpr, thresholds
    return fpr, tpr


def auroc(scores_pos: object, scores_neg: object) -> float:
    """Area under the ROC curve, ties counting one half (:func:`sklearn.metrics.roc_auc_score`).

    The trapezoidal area under :func:`roc_curve` equals the Mann–Whitney statistic
    ``P(S_pos > S_neg) + ½·P(S_pos = S_neg)`` over all (positive, negative) pairs (Hanley &
    McNeil 1982), because a tie mixing both classes is one diagonal step. ½ means no separation;
    0 means perfect separation in the *reverse* direction, which is leakage too.

    Parameters
    ----------
    scores_pos, scores_neg:
        1-D arrays of finite scores, at least one each; higher means "positive".

    Returns
    -------
    float
        In [0, 1].
    """
    pos = _scores(scores_pos, "scores_pos")
    neg = _scores(scores_neg, "scores_neg")
    return _auroc(pos, neg)


def _false_positives(fpr: np.ndarray, n_neg: int) -> np.ndarray:
    """Counts of false positives back from rates ``fp / n_neg`` (exact: they are within an ulp)."""
    return np.rint(fpr * n_neg)


def _tpr_at_fpr_curve(fpr: np.ndarray, tpr: np.ndarray, n_neg: int, target: float) -> float:
    # compared as counts, so that e.g. 0.29 * 100 = 28.999... still allows 29 false positives
    allowed = np.floor(target * n_neg * (1.0 + _COUNT_TOL) + _COUNT_TOL)
    # fpr and tpr are non-decreasing along the curve, so the last admissible point has the max TPR
    k = int(np.searchsorted(_false_positives(fpr, n_neg), allowed, side="right")) - 1
    return float(tpr[k])


def _target_fpr(value: object, field: str = "fpr") -> float:
    return Real(ge=0, le=1).check(field, value)


def tpr_at_fpr(scores_pos: object, scores_neg: object, fpr: float) -> float:
    """Largest TPR of a single threshold whose FPR is at most ``fpr`` (conservative).

    The maximum is taken over the points of :func:`roc_curve` only, never over interpolated
    points, so the value is attained by an actual threshold: "positive iff score >= t". When the
    target lies between two achievable FPRs the lower point is used. With ``n_neg`` negatives an
    FPR below ``1/n_neg`` can only be met with zero false positives.

    Parameters
    ----------
    scores_pos, scores_neg:
        1-D arrays of finite scores, at least one each; higher means "positive".
    fpr:
        Target false-positive rate in [0, 1] (``0.01`` for 1 %).

    Returns
    -------
    float
        The TPR, in [0, 1].
    """
    target = _target_fpr(fpr)
    pos = _scores(scores_pos, "scores_pos")
    neg = _scores(scores_neg, "scores_neg")
    curve_fpr, curve_tpr, _ = _curve(pos, neg)
    return _tpr_at_fpr_curve(curve_fpr, curve_tpr, neg.size, target)


def _downsample(fp: np.ndarray, n_neg: int, max_points: int) -> np.ndarray:
    """Indices of at most ``max_points`` curve points, dense at low FPR (for log–log axes)."""
    n = fp.size
    if n <= max_points:
        return np.arange(n)
    n_log = max(1, (3 * (max_points - 2)) // 4)
    n_lin = max(1, max_points - 2 - n_log)
    # log-spaced FPR targets from 1/n_neg to 1, plus linear ones so the upper part is not empty
    targets = np.r_[np.geomspace(1.0 / n_neg, 1.0, n_log), np.linspace(0.0, 1.0, n_lin)]
    allowed = np.floor(targets * n_neg * (1.0 + _COUNT_TOL) + _COUNT_TOL)
    idx = np.searchsorted(fp, allowed, side="right") - 1
    return np.unique(np.r_[0, idx, n - 1])  # at most n_log + n_lin + 2 = max_points


@dataclass(frozen=True)
class RocSummary:
    """What the report shows of one ROC curve.

    Attributes
    ----------
    auroc:
        Mann–Whitney AUROC (:func:`auroc`); below ½ is reverse-direction leakage.
    tpr_at_1pct_fpr, tpr_at_0_1pct_fpr:
        :func:`tpr_at_fpr` at 1 % and 0.1 % (Carlini et al. 2022). With fewer than 100 (1 000)
        negatives these are the TPR at zero false positives.
    n_pos, n_neg:
        Sample sizes; the FPR resolution is ``1/n_neg``.
    fpr, tpr:
        At most :data:`DEFAULT_CURVE_POINTS` points of the exact curve, always including the
        first (0, 0) and last (1, 1) points and dense at small FPR, so the curve reads on
        log–log axes (points with FPR = 0 or TPR = 0 fall off such axes). Each kept point is an
        exact curve point, never interpolated.
    """

    auroc: float
    tpr_at_1pct_fpr: float
    tpr_at_0_1pct_fpr: float
    n_pos: int
    n_neg: int
    fpr: tuple[float, ...]
    tpr: tuple[float, ...]

    @classmethod
    def from_scores(
        cls, scores_pos: object, scores_neg: object, *, max_points: int = DEFAULT_CURVE_POINTS
    ) -> RocSummary:
        """Summarise the scores of positives and negatives (higher means "positive")."""
        if isinstance(max_points, bool) or not isinstance(max_points, (int, np.integer)) or max_points < 2:
            raise InvalidInput("max_points", "an integer >= 2", max_points)
        pos = _scores(scores_pos, "scores_pos")
        neg = _scores(scores_neg, "scores_neg")
        fpr, tpr, _ = _curve(pos, neg)
        keep = _downsample(_false_positives(fpr, neg.size), neg.size, int(max_points))
        return cls(
            auroc=_auroc(pos, neg),
            tpr_at_1pct_fpr=_tpr_at_fpr_curve(fpr, tpr, neg.size, 0.01),
            tpr_at_0_1pct_fpr=_tpr_at_fpr_curve(fpr, tpr, neg.size, 0.001),
            n_pos=int(pos.size),
            n_neg=int(neg.size),
            fpr=tuple(float(v) for v in fpr[keep]),
            tpr=tuple(float(v) for v in tpr[keep]),
        )

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dictionary (floats, ints and lists only)."""
        return {
            "auroc": self.auroc,
            "tpr_at_1pct_fpr": self.tpr_at_1pct_fpr,
            "tpr_at_0_1pct_fpr": self.tpr_at_0_1pct_fpr,
            "n_pos": self.n_pos,
            "n_neg": self.n_neg,
            "curve": {"fpr": list(self.fpr), "tpr": list(self.tpr)},
        }


def summarize_roc(scores_pos: object, scores_neg: object, *, max_points: int = DEFAULT_CURVE_POINTS) -> RocSummary:
    """Shorthand for :meth:`RocSummary.from_scores`."""
    return RocSummary.from_scores(scores_pos, scores_neg, max_points=max_points)
