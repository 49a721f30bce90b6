"""The Clopper–Pearson lower bound on ε from attack scores, and its ceilings.

The audit plays a distinguishing game between two worlds and records one attack score per
independent trial in each:

* world **U**: the model is trained, the forget set is unlearned, and the result is released;
* world **R**: the model is retrained without the forget set and released.

If releasing is (ε, δ)-indistinguishable between the worlds (the certificate's claim), every test
of U against R satisfies both hypothesis-testing inequalities of differential privacy
(Wasserman & Zhou 2010; Kairouz, Oh & Viswanath 2015, Theorem 2.1)::

    FPR + e^ε · FNR ≥ 1 − δ      and      FNR + e^ε · FPR ≥ 1 − δ,

where a *positive* is "world U", FPR = P(test says U | world R) and FNR = P(test says R | world
U). Hence (Eq. (1) of ``anchors-auditing.md`` §2.1; :func:`attacks.rates.epsilon_from_rates`)::

    ε ≥ max{ ln((1 − δ − FPR)/FNR),  ln((1 − δ − FNR)/FPR) }.

Replacing FPR and FNR by one-sided Clopper–Pearson *upper* confidence bounds, each at level
1 − α/2, gives a statement that holds with probability ≥ 1 − α (one union bound over the two
rates; both terms decrease in both rates, so one pair of upper bounds covers the maximum). This
is :func:`clopper_pearson_epsilon`, the one bound of :mod:`attacks` that assumes nothing about
the release (the GDP bound of :mod:`attacks.gdp` is a bound in noise mode only).

Choosing the threshold (and the direction of the test) on the data that are then counted
inflates the bound. The protocol is a *threshold strategy* (:mod:`attacks.thresholds`, run by
:func:`attacks.protocol.run_protocol`):

* :class:`~attacks.thresholds.ParetoBonferroni` (the default, ``"pareto-bonferroni"``, as
  jax_privacy): all trials are used; the tests are those on the Pareto frontier of the
  empirical ROC curve in both directions (the vertices of its convex hull; every other test is
  dominated by a mixture of two of them), K of them, each rate bounded at 1 − α/(2K). K is
  about 15–25 at 1,000 trials per world.
* :class:`~attacks.thresholds.Split` (``"half"``): each world is split at random (``seed``)
  into a calibration part (⌊n·f⌋ trials) and an evaluation part (the rest). The test that
  maximises Eq. (1) on the calibration part, with the rates at the stricter level 1 − α/(4m),
  is counted once on the evaluation part at 1 − α/2. Valid by construction.
* :class:`~attacks.thresholds.Bonferroni` (``"bonferroni"``): every threshold of an
  m-quantile grid (200) in both directions on all trials, 2·m tests, each rate at 1 − α/(4m).
* :class:`~attacks.thresholds.Explicit`: one pre-registered threshold (and direction),
  nothing to correct for but the directions.

The union bound is exact for tests fixed in advance (``thresholds``, ``Explicit``). The
Bonferroni grid and the Pareto frontier are taken from the scores themselves, as in
jax_privacy, so their validity is checked by simulation rather than proven.

Two directions are always considered: "U>R" (say U when the score is above the threshold) and
"R>U" (say U when the score is at or below it). An attack whose AUC is far below ½ leaks just as
much as one far above it (``anchors-auditing.md`` §2.12, pitfall 6).

With n trials per world even a perfect attack cannot certify more than about ln n; that
*ceiling* (:func:`epsilon_ceiling`, :func:`strategy_ceiling`) is returned with every bound and
must be reported next to it.

**Why Pareto-Bonferroni is the default** (measured, α = 0.05, 1,000 trials per world, mean over
500 repetitions; the oracle is the single pre-registered threshold with the highest expected
bound for the true distributions, counted at 1 − α/2):

==========================  ======  ============  ============  =================
scores                      oracle  half          bonferroni    pareto-bonferroni
==========================  ======  ============  ============  =================
Gaussian, ε = 1, δ = 1e-5   0.125   0.005 (4 %)   0.032 (26 %)  0.129 (103 %)
Gaussian, ε = 3, δ = 1e-5   0.898   0.636 (71 %)  0.663 (74 %)  0.872 (97 %)
Laplace, ε = 1              0.812   0.718 (88 %)  0.693 (85 %)  0.779 (96 %)
Laplace, ε = 3              2.573   2.389 (93 %)  2.371 (92 %)  2.533 (98 %)
randomized response, ε = 1  0.876   0.823 (94 %)  0.855 (98 %)  0.875 (100 %)
randomized response, ε = 3  2.779   2.684 (97 %)  2.738 (99 %)  2.778 (100 %)
==========================  ======  ============  ============  =================

In every row it is stronger than the split and the grid, and reaches 96–103 % of the oracle
(the split: 4–97 %), because it keeps every trial and pays for K ≈ 15–25 tests instead of
2 × 200. Validity (fraction of repetitions where the bound exceeds the true ε, which a valid
95 % bound keeps ≤ 5 %), 1,000 repetitions at 200 and at 1,000 trials per world (two
independent sets of seeds): Gaussian ε = 1 and 3 (δ = 1e-5) 0 %; Laplace ε = 1 and 3 (δ = 0)
≤ 0.4 %; randomized response ε = 1 and 3 0.6–3.7 % (one test on the frontier, so this is
Clopper–Pearson's own slack); identical worlds 0.3–0.4 %; two-sided geometric ε = 0.5, 1, 3,
also with 300 against 3,000 trials, ≤ 1.1 %. A planted ε = 3 (Gaussian, δ = 1e-5) is bounded
at 0.86 ± 0.13 (mean ± sd over 200 repetitions; the split: 0.62); the mean bound passes 1 from
a planted ε ≈ 3.4 (the split: ≈ 4.1), and the bound exceeds 1 in 97 % of repetitions at ε = 4
(the split: 42 %; it needs ε ≈ 5 for 95 %).

**A bound far below ε is expected.** Trials must be independent (one score per independently
trained model pair); several forget examples scored on one model are not independent Bernoulli
trials (``anchors-auditing.md`` §2.12, pitfall 4). Even the optimal test on the bare Gaussian
mechanism recovers only about half of ε with 10⁵ trials per world under this (ε, δ) estimator
(§2.12 self-test table), and at 1,000 trials even the oracle threshold certifies only about 0.9
of a planted ε = 3: "ε_LB ≪ ε" is not evidence that the release is more private than claimed.
The GDP bound of :mod:`attacks.gdp` is much tighter where the trade-off curve is Gaussian.

References
----------
.. [1] C. J. Clopper and E. S. Pearson, "The use of confidence or fiducial limits illustrated in
   the case of the binomial", Biometrika 26(4), 1934.
.. [2] L. Wasserman and S. Zhou, "A statistical framework for differential privacy", JASA
   105(489), 2010.
.. [3] P. Kairouz, S. Oh and P. Viswanath, "The composition theorem for differential privacy",
   ICML 2015, Theorem 2.1.
.. [4] M. Jagielski, J. Ullman and A. Oprea, "Auditing Differentially Private Machine Learning:
   How Private is Private SGD?", NeurIPS 2020.
.. [5] M. Nasr, S. Song, A. Thakurta, N. Papernot and N. Carlini, "Adversary Instantiation:
   Lower Bounds for Differentially Private Machine Learning", IEEE S&P 2021.
.. [6] M. Nasr, J. Hayes, T. Steinke, B. Balle, F. Tramèr, M. Jagielski, N. Carlini and
   A. Terzis, "Tight Auditing of Differentially Private Machine Learning", USENIX Security 2023.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from attacks.protocol import Counted, Counts, _n_thresholds, run_protocol
from attacks.rates import _confidence, _cp_upper, _delta, _eps_from_rates, _scores
from attacks.thresholds import (
    DEFAULT_N_THRESHOLDS,
    STRATEGY_NAMES,
    Bonferroni,
    Explicit,
    ParetoBonferroni,
    Split,
    Strategy,
    ThresholdStrategy,
    as_strategy,
    calibration_size,
)
from certify.errors import Integer, InvalidInput

__all__ = [
    "DEFAULT_STRATEGY",
    "SPLITS",
    "EpsilonBound",
    "ceiling_counts",
    "clopper_pearson_epsilon",
    "epsilon_ceiling",
    "strategy_ceiling",
]

SPLITS: tuple[str, ...] = STRATEGY_NAMES
"""Threshold strategies :func:`clopper_pearson_epsilon` accepts by name."""

DEFAULT_STRATEGY: Strategy = ParetoBonferroni()
"""The default threshold strategy; why, in the module docstring."""

# ----------------------------------------------------------------------------------------------
# Ceilings


def _trial_counts(n_trials: object) -> tuple[int, int]:
    if isinstance(n_trials, (tuple, list, np.ndarray)):
        if len(n_trials) != 2:
            raise InvalidInput("n_trials", "an integer >= 1 or a pair (n_u, n_r) of them", n_trials)
        pair = tuple(n_trials)
    else:
        pair = (n_trials, n_trials)
    try:
        n_u, n_r = (Integer(1).check("n_trials", v) for v in pair)
    except InvalidInput:
        raise InvalidInput("n_trials", "an integer >= 1 or a pair (n_u, n_r) of them", n_trials) from None
    return n_u, n_r


def epsilon_ceiling(
    n_trials: int | tuple[int, int],
    delta: float = 0.0,
    confidence: float = 0.95,
    *,
    n_comparisons: int = 1,
) -> float:
    """Largest ε lower bound that ``n_trials`` per world can ever certify.

    It is the Clopper–Pearson bound of a perfect attack (FP = FN = 0). With the per-rate level
    1 − α' where α' = α/(2·``n_comparisons``), the CP upper bound at zero errors is
    p = 1 − α'^(1/n), so with n trials in both worlds

        ε_max = ln((1 − δ − p)/p) ≈ ln(n / ln(1/α')).

    Parameters
    ----------
    n_trials : int or (int, int)
        Trials per world, or the pair ``(n_u, n_r)`` when the worlds differ. For
        ``split="half"`` this is the size of the *evaluation* half.
    delta : float, default 0.0
        δ of the audited claim, in [0, 1).
    confidence : float, default 0.95
        Joint confidence 1 − α of the bound, in (0, 1).
    n_comparisons : int, default 1
        Number of (threshold, direction) tests the error α is shared among: 1 for a single
        pre-chosen test, 2·m for ``split="bonferroni"`` with m thresholds.

    Returns
    -------
    float
        ε_max ≥ 0. Report it next to every ε lower bound: "ε_LB = 4.9 vs ε = 8" with 1 000
        trials per world is the sample size talking, not a loose attack.

    Raises
    ------
    InvalidInput
        If ``n_trials`` or ``n_comparisons`` is not an integer ≥ 1, ``delta`` is outside
        [0, 1), or ``confidence`` is outside (0, 1).

    References
    ----------
    ``anchors-auditing.md`` §2.1 (ceiling table: 50 trials per side give 2.57 at α = 0.05,
    δ = 1e-5; 50 000 per side give 9.51).

    Examples
    --------
    >>> round(epsilon_ceiling(500, delta=1e-5), 2)
    4.91
    """
    n_u, n_r = _trial_counts(n_trials)
    dlt = _delta(delta)
    conf = _confidence(confidence)
    n_comparisons = Integer(1).check("n_comparisons", n_comparisons)
    level = 1.0 - (1.0 - conf) / (2.0 * n_comparisons)
    return _ceiling(n_u, n_r, dlt, level)


def strategy_ceiling(
    n_trials: int | tuple[int, int],
    delta: float = 0.0,
    confidence: float = 0.95,
    *,
    split: str | ThresholdStrategy = "pareto-bonferroni",
) -> float:
    """The ceiling of a threshold strategy: the bound a perfectly separating attack gets.

    This is ``EpsilonBound.ceiling`` before any score is seen, for sizing an audit: a split
    evaluates n − ⌊n·f⌋ trials per world at 1 − α/2 per rate; Pareto-Bonferroni all n trials
    at 1 − α/2 (a perfect separation leaves one test on the frontier); Bonferroni all n at
    1 − α/(4m) with m = min(grid, n_u + n_r − 1); an explicit threshold all n at 1 − α/2, or
    1 − α/4 without a direction.

    Parameters
    ----------
    n_trials : int or (int, int)
        Trials per world supplied to the bound.
    delta, confidence : float
        As in :func:`clopper_pearson_epsilon`.
    split : str or ThresholdStrategy, default "pareto-bonferroni"
        The strategy (a name gets the default grid), as in :func:`clopper_pearson_epsilon`.

    Returns
    -------
    float
        ε_max ≥ 0.

    Examples
    --------
    >>> round(strategy_ceiling(1000, 1e-5), 2), round(strategy_ceiling(1000, 1e-5, split="half"), 2)
    (5.6, 4.91)
    """
    dlt = _delta(delta)
    n_u, n_r, level = ceiling_counts(n_trials, confidence, split=split)
    return _ceiling(n_u, n_r, dlt, level)


def ceiling_counts(
    n_trials: int | tuple[int, int], confidence: float = 0.95, *, split: str | ThresholdStrategy = "pareto-bonferroni"
) -> tuple[int, int, float]:
    """(n_u, n_r, level): the trials a perfectly separating attack is counted on under ``split``
    and the level of each rate's bound (:func:`strategy_ceiling`). Every bound built on the
    strategy's rates has its ceiling there: the GDP bound's too (:func:`attacks.gdp.gdp_ceiling`)."""
    n_u, n_r = _trial_counts(n_trials)
    alpha = 1.0 - _confidence(confidence)
    strategy = as_strategy(split)
    if isinstance(strategy, Split):
        f = strategy.calibration_fraction
        n_u, n_r = n_u - calibration_size(n_u, f), n_r - calibration_size(n_r, f)
        tests = 1
    elif isinstance(strategy, Bonferroni):
        gaps = n_u + n_r - 1
        tests = 2 * (gaps if strategy.n_thresholds is None else min(strategy.n_thresholds, gaps))
    elif isinstance(strategy, Explicit):
        tests = 2 if strategy.direction is None else 1
    else:
        tests = 1
    return n_u, n_r, 1.0 - alpha / (2.0 * max(tests, 1))


def _ceiling(n_u: int, n_r: int, delta: float, level: float) -> float:
    fpr = _cp_upper(np.zeros(()), n_r, level)
    fnr = _cp_upper(np.zeros(()), n_u, level)
    return float(_eps_from_rates(fpr, fnr, delta))


# ----------------------------------------------------------------------------------------------
# The bound


@dataclass(frozen=True)
class EpsilonBound:
    """A Clopper–Pearson lower bound on ε and everything needed to report it.

    Attributes
    ----------
    epsilon_lower : float
        ε_LB ≥ 0: with probability ≥ ``confidence`` over the trials, the true ε (at ``delta``)
        of the U-versus-R release is at least this large.
    threshold : float
        The score threshold of the evaluated test.
    direction : {"U>R", "R>U"}
        "U>R": the test says U when ``score > threshold``; "R>U": when ``score <= threshold``.
    counts : Counts
        (tp, fp, tn, fn) of that test on the evaluated trials (the evaluation part for a
        :class:`Split`, all trials otherwise).
    fpr_upper, fnr_upper : float
        The Clopper–Pearson upper bounds on FPR and FNR that enter Eq. (1).
    rate_confidence : float
        One-sided level of each of those two bounds: 1 − α/(2·``n_tests``).
    n_trials : (int, int)
        Trials supplied per world, (n_u, n_r).
    n_evaluated : (int, int)
        Trials per world that ``counts`` are taken on.
    n_thresholds : int
        Distinct thresholds considered: the grid of a split or of Bonferroni, the thresholds on
        the Pareto frontier, 1 for an explicit threshold.
    confidence : float
        Joint confidence 1 − α of the bound.
    delta : float
        δ carried through Eq. (1).
    method : str
        ``"clopper-pearson/<strategy name>"``: ``half`` (or ``split`` for another calibration
        fraction), ``bonferroni``, ``pareto-bonferroni`` or ``explicit``.
    ceiling : float
        The largest ε_LB this protocol can give with the evaluated trial counts (perfect
        separation); see :func:`epsilon_ceiling`.
    seed : int or None
        Seed of the calibration/evaluation split (None for the strategies that do not split).
    kind : str
        Always ``"bound"``, as opposed to :class:`GDPEstimate`'s ``"estimate"``.
    n_tests : int
        (threshold, direction) tests the error α was shared among: 1 for a split, 2·m for
        Bonferroni over m thresholds, the frontier size K for Pareto-Bonferroni, 1 or 2 for an
        explicit threshold (with or without its direction).
    """

    epsilon_lower: float
    threshold: float
    direction: str
    counts: Counts
    fpr_upper: float
    fnr_upper: float
    rate_confidence: float
    n_trials: tuple[int, int]
    n_evaluated: tuple[int, int]
    n_thresholds: int
    confidence: float
    delta: float
    method: str
    ceiling: float
    seed: int | None
    kind: str = "bound"
    n_tests: int = 1

    def to_dict(self) -> dict:
        """Plain-Python (JSON-ready) dictionary of the fields; ``counts`` keeps its names."""
        d = dataclasses.asdict(self)
        d["counts"] = self.counts._asdict()
        d["n_trials"] = list(self.n_trials)
        d["n_evaluated"] = list(self.n_evaluated)
        return d


def _explicit_thresholds(value: object) -> np.ndarray:
    try:
        arr = np.asarray(value, dtype=float).ravel()
    except (TypeError, ValueError):
        raise InvalidInput("thresholds", "a non-empty array of finite numbers", value) from None
    if arr.size == 0 or not np.all(np.isfinite(arr)):
        raise InvalidInput("thresholds", "a non-empty array of finite numbers", value)
    return np.unique(arr)


def _strategy(split: object, n_thresholds: object) -> Strategy:
    """The strategy of ``split``; a grid size other than the default needs a named strategy."""
    grid = _n_thresholds(n_thresholds)
    if not isinstance(split, str) and grid != DEFAULT_N_THRESHOLDS:
        # the object carries its own grid; silently overriding either one would hide a mistake
        raise InvalidInput(
            "n_thresholds",
            "left at its default when split is a strategy object (set the strategy's own n_thresholds)",
            n_thresholds,
        )
    return as_strategy(split, grid)


def clopper_pearson_epsilon(
    scores_u: np.ndarray,
    scores_r: np.ndarray,
    *,
    delta: float = 0.0,
    confidence: float = 0.95,
    split: str | ThresholdStrategy = DEFAULT_STRATEGY,
    n_thresholds: int | None = DEFAULT_N_THRESHOLDS,
    thresholds: np.ndarray | None = None,
    seed: int = 0,
) -> EpsilonBound:
    """Clopper–Pearson lower bound on ε from attack scores in world U and world R.

    Each score is one independent trial: one independently trained (and unlearned or retrained)
    release scored by the attack. Both test directions are considered. The bound is

        ε_LB = max{0, ln((1 − δ − FPR_u)/FNR_u), ln((1 − δ − FNR_u)/FPR_u)}      (Eq. (2))

    where FPR_u and FNR_u are one-sided CP upper bounds. **Simultaneous confidence:** the
    statement "FPR ≤ FPR_u and FNR ≤ FNR_u" must hold jointly for Eq. (2) to bound ε, so with
    K tests counted each rate is bounded at one-sided level 1 − α/(2K) (α = 1 − ``confidence``)
    and the union bound gives the joint level 1 − α; one pair of upper bounds covers both terms
    of the maximum because both terms decrease in both rates. Threshold selection is handled by
    ``split``: the strategies, their measured power and their validity are in the module
    docstring.

    Parameters
    ----------
    scores_u : array_like, shape (n_u,)
        Attack scores in world U (unlearned, then released); finite.
    scores_r : array_like, shape (n_r,)
        Attack scores in world R (retrained, then released); finite.
    delta : float, default 0.0
        δ of the audited claim, in [0, 1). Use the certificate's δ.
    confidence : float, default 0.95
        Joint confidence 1 − α of the bound, in (0, 1).
    split : str or ThresholdStrategy, default ParetoBonferroni()
        The threshold strategy, or its name: ``"half"``, ``"bonferroni"``,
        ``"pareto-bonferroni"`` (see :func:`attacks.thresholds.as_strategy`).
    n_thresholds : int or None, default 200
        Grid size for a strategy given by name (``"half"``, ``"bonferroni"``): midpoints
        between consecutive distinct pooled scores (of the calibration part for a split),
        thinned to this many at evenly spaced ranks. ``None`` keeps every gap. A strategy
        object carries its own grid, and then this must stay at its default.
    thresholds : array_like, optional
        Candidate thresholds fixed before seeing the scores (pre-registered), replacing the
        grid of a split, Bonferroni or Pareto-Bonferroni. With ``split="bonferroni"`` and a
        single threshold this is the fixed-test protocol (only the two directions are
        corrected for). Not with :class:`Explicit`.
    seed : int, default 0
        Seed of the random calibration/evaluation split (:class:`Split` only).

    Returns
    -------
    EpsilonBound
        The bound, the chosen threshold and direction, the counts it was computed from, the
        trial counts, the number of tests, the ceiling those counts allow, and the settings.

    Raises
    ------
    InvalidInput
        If a score array is not 1-D, is empty (too small to split for :class:`Split`) or holds
        NaN/inf; ``delta`` is outside [0, 1); ``confidence`` is outside (0, 1); ``split`` is
        unknown; ``n_thresholds`` is not an integer ≥ 1 or None, or is set with a strategy
        object; ``thresholds`` is empty, not finite, or given with :class:`Explicit`; or
        ``seed`` is not an integer ≥ 0.


    References
    ----------
    .. [1] Clopper & Pearson 1934; Kairouz, Oh & Viswanath, ICML 2015, Theorem 2.1.
    .. [2] Jagielski, Ullman & Oprea, NeurIPS 2020 (held-out threshold: ``fmnist_audit.py``).
    .. [3] Nasr, Song, Thakurta, Papernot & Carlini, IEEE S&P 2021 (two-sided Eq. (1) + CP).
    .. [4] Nasr et al., USENIX Security 2023 (Bonferroni over thresholds); jax_privacy
       ``auditing.py`` (Bonferroni over the Pareto frontier of the ROC, its default).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> b = clopper_pearson_epsilon(rng.normal(3.0, 1.0, 2000), rng.normal(0.0, 1.0, 2000))
    >>> b.direction, b.method, 0 < b.epsilon_lower < b.ceiling
    ('U>R', 'clopper-pearson/pareto-bonferroni', True)
    """
    u = _scores(scores_u, "scores_u")
    r = _scores(scores_r, "scores_r")
    dlt = _delta(delta)
    conf = _confidence(confidence)
    strategy = _strategy(split, n_thresholds)
    fixed = None if thresholds is None else _explicit_thresholds(thresholds)
    seed = Integer(0).check("seed", seed)

    def objective(fpr: np.ndarray, fnr: np.ndarray) -> np.ndarray:
        return _eps_from_rates(fpr, fnr, dlt)

    run = run_protocol(u, r, strategy, 1.0 - conf, objective, fixed=fixed, seed=seed)
    return _bound(run, (int(u.size), int(r.size)), conf, dlt, strategy.name)


def _bound(run: Counted, n_trials: tuple[int, int], confidence: float, delta: float, strategy: str) -> EpsilonBound:
    """The :class:`EpsilonBound` of a protocol run whose objective was Eq. (1)."""
    return EpsilonBound(
        epsilon_lower=run.value,
        threshold=run.threshold,
        direction=run.direction,
        counts=run.counts,
        fpr_upper=run.fpr_upper,
        fnr_upper=run.fnr_upper,
        rate_confidence=run.level,
        n_trials=n_trials,
        n_evaluated=(int(run.n_evaluated[0]), int(run.n_evaluated[1])),
        n_thresholds=run.n_thresholds,
        confidence=confidence,
        delta=delta,
        method=f"clopper-pearson/{strategy}",
        ceiling=_ceiling(run.n_evaluated[0], run.n_evaluated[1], delta, run.ceiling_level),
        seed=run.seed,
        n_tests=run.n_tests,
    )
