"""Threshold strategies: which (threshold, direction) tests an ε bound counts, and at what level.

An attack gives one score per released model in world U and in world R. A *test* says "world U"
when the score is above a threshold (direction "U>R") or at or below it ("R>U"). Choosing the
test on the data that are then counted inflates any bound computed from it, so every bound in
:mod:`attacks.epsilon` is computed under one of these protocols, each a small frozen value:

:class:`Split`
    Choose the test on a random calibration part, count it once on the rest (Jagielski et al.
    2020, ``fmnist_audit.py``). Valid by construction; pays with the calibration trials.
:class:`Bonferroni`
    Count every test of a grid of ``n_thresholds`` pooled-score quantiles in both directions on
    all trials, sharing α among the 2·m tests (Nasr et al. 2023).
:class:`ParetoBonferroni`
    The same, but only over the tests on the *Pareto frontier* of the empirical ROC curve (the
    vertices of its upper convex hull, and of the reflected curve for "R>U"), with α shared
    among those K tests. This is jax_privacy's default (``auditing.py``: Bonferroni over the
    frontier of every distinct score). Every other test is dominated: a point under the hull is
    beaten by a mixture of two frontier tests, and the ε of Eq. (1) is a linear-fractional
    function of the two rates, maximised at a hull vertex. K is about 15–25 at 1,000 trials per
    world (against 400 tests for a 200-threshold Bonferroni grid), so each rate is bounded at a
    much milder level.
:class:`Explicit`
    One pre-registered threshold (and direction): the only protocol with no selection at all.

The frontier, like the Bonferroni grid, is chosen from the same scores it is evaluated on, so the
union bound is not a proof for either; their validity is checked by simulation on mechanisms of
known ε (``tests/test_thresholds.py``, ``tests/test_epsilon.py``; numbers in
:func:`attacks.epsilon.clopper_pearson_epsilon`).

This module only counts: it knows the strategies, the candidate thresholds and the frontier. The
Clopper–Pearson arithmetic is in :mod:`attacks.epsilon`.

References
----------
.. [1] M. Jagielski, J. Ullman and A. Oprea, NeurIPS 2020 (held-out threshold).
.. [2] M. Nasr et al., "Tight Auditing of Differentially Private Machine Learning", USENIX
   Security 2023 (Bonferroni over thresholds).
.. [3] google-deepmind/jax_privacy ``jax_privacy/auditing.py`` (``Split``, ``Bonferroni``,
   ``Explicit``; Bonferroni over the Pareto frontier of the ROC), used as a behavioural spec.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from certify.errors import Integer, InvalidInput, Optional, Real

__all__ = [
    "DEFAULT_N_THRESHOLDS",
    "DIRECTIONS",
    "STRATEGY_NAMES",
    "Bonferroni",
    "Explicit",
    "ParetoBonferroni",
    "Split",
    "Strategy",
    "ThresholdStrategy",
    "above",
    "as_strategy",
    "calibration_size",
    "candidate_thresholds",
    "errors",
    "frontier_tests",
]

DIRECTIONS: tuple[str, ...] = ("U>R", "R>U")
"""Test directions: "U>R" says U when ``score > threshold``, "R>U" when ``score <= threshold``."""

DEFAULT_N_THRESHOLDS = 200
"""Default grid size of :class:`Split` and :class:`Bonferroni` (``anchors-auditing.md`` §2.12)."""

_GRID = Optional(Integer(1), "(every gap between distinct scores)")
_FRACTION = Real(gt=0, lt=1)


class ThresholdStrategy:
    """Base of the threshold strategies; ``name`` is the suffix of ``EpsilonBound.method``."""

    name: ClassVar[str] = ""


@dataclass(frozen=True)
class Split(ThresholdStrategy):
    """Choose the test on a random calibration part of each world, count it on the rest.

    Attributes
    ----------
    calibration_fraction : float, default 0.5
        Share of each world's trials (⌊n·f⌋ of them) used to choose the test, in (0, 1).
    n_thresholds : int or None, default 200
        Candidate grid on the calibration part (see :func:`candidate_thresholds`).
    """

    calibration_fraction: float = 0.5
    n_thresholds: int | None = DEFAULT_N_THRESHOLDS

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "calibration_fraction", _FRACTION.check("calibration_fraction", self.calibration_fraction)
        )
        object.__setattr__(self, "n_thresholds", _GRID.check("n_thresholds", self.n_thresholds))

    @property
    def name(self) -> str:  # type: ignore[override]
        # "half" is the name reports have always carried for the 50/50 split
        return "half" if self.calibration_fraction == 0.5 else "split"


@dataclass(frozen=True)
class Bonferroni(ThresholdStrategy):
    """Every threshold of a grid, both directions, α shared among the 2·m tests.

    Attributes
    ----------
    n_thresholds : int or None, default 200
        Grid size (see :func:`candidate_thresholds`); None keeps every gap.
    """

    name: ClassVar[str] = "bonferroni"
    n_thresholds: int | None = DEFAULT_N_THRESHOLDS

    def __post_init__(self) -> None:
        object.__setattr__(self, "n_thresholds", _GRID.check("n_thresholds", self.n_thresholds))


@dataclass(frozen=True)
class ParetoBonferroni(ThresholdStrategy):
    """The tests on the Pareto frontier of the empirical ROC, both directions, α shared among them.

    Attributes
    ----------
    n_thresholds : int or None, default None
        Grid the frontier is taken from; None (the default, as in jax_privacy) uses every gap
        between distinct scores, which only adds vertices where they help.
    """

    name: ClassVar[str] = "pareto-bonferroni"
    n_thresholds: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "n_thresholds", _GRID.check("n_thresholds", self.n_thresholds))


@dataclass(frozen=True)
class Explicit(ThresholdStrategy):
    """One threshold fixed before the scores were seen (pre-registered).

    Attributes
    ----------
    threshold : float
        The threshold, finite.
    direction : {"U>R", "R>U"} or None, default None
        The pre-registered direction; None tests both and pays a factor 2 in α.
    """

    name: ClassVar[str] = "explicit"
    threshold: float
    direction: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "threshold", Real().check("threshold", self.threshold))
        if self.direction is not None and self.direction not in DIRECTIONS:
            raise InvalidInput("direction", f"one of {DIRECTIONS} or None", self.direction)


Strategy = Split | Bonferroni | ParetoBonferroni | Explicit

STRATEGY_NAMES: tuple[str, ...] = ("half", "bonferroni", "pareto-bonferroni")
"""Strategies that may be named by a string (``Explicit`` needs its threshold)."""


def as_strategy(value: object, n_thresholds: int | None = DEFAULT_N_THRESHOLDS) -> Strategy:
    """The strategy ``value`` names: a strategy object as is, or one of :data:`STRATEGY_NAMES`.

    Parameters
    ----------
    value : str or ThresholdStrategy
        ``"half"`` → ``Split(0.5, n_thresholds)``, ``"bonferroni"`` →
        ``Bonferroni(n_thresholds)``, ``"pareto-bonferroni"`` → ``ParetoBonferroni()`` (its
        frontier is taken over every gap: ``n_thresholds`` is ignored), or a strategy object.
    n_thresholds : int or None, default 200
        Grid size for the named strategies.

    Raises
    ------
    InvalidInput
        (field ``split``) for anything else; (``n_thresholds``) for a bad grid size.
    """
    if isinstance(value, (Split, Bonferroni, ParetoBonferroni, Explicit)):
        return value
    if isinstance(value, str) and value in STRATEGY_NAMES:
        if value == "half":
            return Split(0.5, n_thresholds)
        if value == "bonferroni":
            return Bonferroni(n_thresholds)
        return ParetoBonferroni()
    raise InvalidInput(
        "split",
        f"one of {STRATEGY_NAMES} or a threshold strategy (Split, Bonferroni, ParetoBonferroni, Explicit)",
        value,
    )


def calibration_size(n: int, fraction: float) -> int:
    """Calibration trials ⌊n·f⌋ of one world (n // 2 for the 50/50 split, as it always was)."""
    return int(math.floor(n * fraction))


# ----------------------------------------------------------------------------------------------
# Candidate thresholds and counts


def candidate_thresholds(pooled: np.ndarray, n_thresholds: int | None) -> np.ndarray:
    """Midpoints between consecutive distinct pooled scores, at most ``n_thresholds`` of them.

    With more gaps than ``n_thresholds`` the gaps are taken evenly spaced in rank, so the
    thresholds sit at (approximately) evenly spaced quantiles of the pooled scores.
    """
    values = np.unique(pooled)
    if values.size < 2:
        return np.empty(0)
    lo, hi = values[:-1], values[1:]
    mids = lo + (hi - lo) / 2.0
    mids = np.where(mids >= hi, lo, mids)  # guard against rounding up onto the next score
    if n_thresholds is not None and mids.size > n_thresholds:
        idx = np.unique(np.round(np.linspace(0, mids.size - 1, n_thresholds)).astype(np.int64))
        mids = mids[idx]
    return mids


def above(sorted_scores: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    """Number of scores strictly above each threshold."""
    return sorted_scores.size - np.searchsorted(sorted_scores, thresholds, side="right")


def errors(su: np.ndarray, sr: np.ndarray, thresholds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(fp, fn) counts, shape (2, m): row 0 direction "U>R", row 1 direction "R>U"."""
    above_u = above(su, thresholds)
    above_r = above(sr, thresholds)
    fp = np.stack([above_r, sr.size - above_r])
    fn = np.stack([su.size - above_u, above_u])
    return fp, fn


# ----------------------------------------------------------------------------------------------
# The Pareto frontier of the ROC


def _upper_hull(x: list[int], y: list[int]) -> list[int]:
    """Indices of the strict upper convex hull of points sorted by (x, then y) (monotone chain).

    Integer counts keep the orientation test exact; collinear points are dropped, since a test
    on a segment between two vertices is a mixture of them and never the best one. Only the
    staircase's corners (:func:`_corners`) can be vertices, so the chain walks those alone.
    """
    corners = _corners(x, y)
    return [int(corners[k]) for k in _chain([x[i] for i in corners], [y[i] for i in corners])]


def _corners(x: list[int], y: list[int]) -> np.ndarray:
    """The end points and every point the ROC enters upwards and leaves rightwards.

    Both coordinates never decrease along an ROC. A point followed by one at the same x lies
    under it (or on it: a duplicate keeps its last copy, as the chain does); a point reached from
    one further left at the same y lies on or under the chord from that one to any later point. Neither is a
    strict vertex, and at 50,000 trials per world they are most of the 100,000 points whose
    Python loop dominated the attack stage's bounds (issue 26).
    """
    xs, ys = np.asarray(x), np.asarray(y)
    inner = (xs[2:] != xs[1:-1]) & ((ys[1:-1] != ys[:-2]) | (xs[1:-1] == xs[:-2]))
    return np.concatenate([[0], 1 + np.flatnonzero(inner), [len(xs) - 1]]) if len(xs) > 2 else np.arange(len(xs))


def _chain(x: list[int], y: list[int]) -> list[int]:
    """The monotone chain over points sorted by (x, then y): positions of its strict upper hull."""
    hull: list[int] = []
    for i in range(len(x)):
        while len(hull) >= 2:
            o, a = hull[-2], hull[-1]
            if (x[a] - x[o]) * (y[i] - y[o]) - (y[a] - y[o]) * (x[i] - x[o]) >= 0:
                hull.pop()  # a is on or under the chord from o to i
            else:
                break
        hull.append(i)
    return hull


def frontier_tests(su: np.ndarray, sr: np.ndarray, thresholds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The (direction, threshold) tests on the Pareto frontier of the empirical ROC.

    For "U>R" the ROC points (FP, TP) at the thresholds, from the highest threshold to the
    lowest, run from (0, 0) to (n_r, n_u); the frontier is the set of vertices of their upper
    convex hull other than those two trivial end points (they never bound ε above 0). For "R>U"
    the same is done on the reflected curve (n_r − FP, n_u − TP), i.e. the lower hull.

    Parameters
    ----------
    su, sr : numpy arrays
        Sorted scores of worlds U and R.
    thresholds : numpy array, shape (m,)
        Candidate thresholds, ascending.

    Returns
    -------
    (direction_index, threshold_index) : pair of int arrays of equal length K
        Row (0 for "U>R", 1 for "R>U") and column of each frontier test in the (2, m) grid of
        :func:`errors`. K is 0 when no test separates the worlds at all.
    """
    m = thresholds.size
    tp = above(su, thresholds)[::-1]  # highest threshold first: counts increase
    fp = above(sr, thresholds)[::-1]
    n_u, n_r = su.size, sr.size
    x = [0, *fp.tolist(), n_r]
    y = [0, *tp.tolist(), n_u]
    upper = [m - i for i in _upper_hull(x, y) if 0 < i <= m]  # point i is threshold m - i
    # the reflected curve, walked from its own origin: the lowest threshold first
    xr = [n_r - v for v in reversed(x)]
    yr = [n_u - v for v in reversed(y)]
    lower = [i - 1 for i in _upper_hull(xr, yr) if 0 < i <= m]
    d_idx = np.array([0] * len(upper) + [1] * len(lower), dtype=np.int64)
    t_idx = np.array(upper + lower, dtype=np.int64)
    return d_idx, t_idx
