"""One object per (unlearned, retrained) pair of score samples: the bound, the estimates, the ROC.

The audit turns every attack's scores into the same numbers, and :class:`ScorePair` is where they
are all asked for, in the shape of jax_privacy's ``CanaryScoreAuditor`` (one object per score
set, every metric a method, the bootstrap's draws and seed parameters):

* :meth:`ScorePair.bound`: the Clopper–Pearson lower bound on ε (:mod:`attacks.epsilon`), the
  only number that assumes nothing about the release;
* :meth:`ScorePair.gdp`: the μ-GDP reading (:mod:`attacks.gdp`), given where the Gaussian shape
  test accepts, and :meth:`ScorePair.gdp_bound`, its lower bound on μ, which is a valid bound
  in noise mode and an estimate under the Gaussian hypothesis elsewhere;
* :meth:`ScorePair.roc`: the ROC curve, its AUROC and TPR at low FPR (:mod:`attacks.roc`);
* :meth:`ScorePair.estimates`: how much the worlds differ, with intervals, and which way;
* :meth:`ScorePair.effect_size`: how far apart the worlds' scores lie in units of their own spread
  (a distance, not a privacy number: it orders methods the others leave at the trial ceiling).

The bound is a hypothesis test: it says whether the scores *prove* a leak, and a no-op, a weak
fine-tune and a strong one all reach the trial ceiling together. The estimates say *how much*
the worlds differ, with an interval at the given confidence, so that methods can be ranked; they
are **estimates, never bounds**, and the report labels them so (``kind = "estimate"``):

* AUROC with a DeLong interval (DeLong, DeLong & Clarke-Pearson 1988; the variance of the
  Mann–Whitney statistic from its placement values, ties counted one half);
* TPR at 1 % and 0.1 % FPR with distribution-free intervals (order statistics of the retrained
  world and Clopper–Pearson ends, :meth:`ScorePair.tpr_at_fpr`); "cannot estimate" when the
  retrained world holds fewer than :data:`MIN_FALSE_POSITIVES` / FPR trials, with that count;
* ε with a bootstrap interval: the μ-GDP reading (μ̂ of :func:`attacks.gdp.gdp_epsilon_estimate`,
  interval on the signed μ) where :func:`attacks.gaussian_shape.gdp_goodness_of_fit` accepts the
  Gaussian shape; otherwise the empirical trade-off curve: the test (threshold, direction, side
  of Eq. (1) of :mod:`attacks.epsilon`) with the largest ε at the observed rates is chosen on a
  random half of each world and read, with a percentile bootstrap, on the other half (choosing
  and reading on the same trials reports the largest of many noisy values);
* the effect size (:meth:`ScorePair.effect_size`): (mean U − mean R) / pooled s.d. with a
  studentized bootstrap interval [4]_. It is **not a privacy number** (it assumes nothing and bounds
  nothing, :data:`EFFECT_SIZE_MEANING`): where every trial separates the worlds, the AUROC is 1 and
  the ε estimate is what the trials can show (about ln n) for a no-op and a strong fine-tune
  alike, and only a distance still says which lies farther from retraining. Its sign follows the
  direction's: positive where U's scores are larger (toward under-unlearning for an attack of
  orientation "memory"), negative where smaller;
* the direction of the evidence (:meth:`ScorePair.direction`): an attack whose larger score means
  "behaves like a model that saw Z" (orientation ``"memory"``) reads an AUROC interval above ½ as
  *under-unlearning* (the unlearned model is closer to the original than retraining is) and one
  below ½ as *over-unlearning* (farther from it than retraining: the Streisand effect). An attack
  whose score only points toward the unlearned world's models (orientation ``"worlds"``: the
  white-box projection, U-LiRA's shadows) cannot say which way.

The ε bound stays two-sided; only these words take a side.

References
----------
.. [1] E. R. DeLong, D. M. DeLong and D. L. Clarke-Pearson, "Comparing the areas under two or
   more correlated receiver operating characteristic curves: a nonparametric approach",
   Biometrics 44(3), 1988.
.. [2] B. Efron and R. Tibshirani, "An Introduction to the Bootstrap", 1993, §13.3 (percentile)
   and A. C. Davison and D. V. Hinkley, "Bootstrap Methods and their Application", 1997, §5.2
   (the basic interval).
.. [3] M. Nasr et al., "Tight Auditing of Differentially Private Machine Learning", USENIX
   Security 2023 (the GDP reading).
.. [4] Efron and Tibshirani 1993 (above), ch. 12 (the bootstrap-t), and T. J. DiCiccio and B. Efron,
   "Bootstrap confidence intervals", Statistical Science 11(3), 1996; the BCa interval it was
   measured against: B. Efron, "Better bootstrap confidence intervals", JASA 82(397):171-185, 1987.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from scipy.special import ndtri
from scipy.stats import beta, binom

from attacks.epsilon import DEFAULT_STRATEGY, EpsilonBound, clopper_pearson_epsilon
from attacks.gaussian_shape import gdp_goodness_of_fit
from attacks.gdp import (
    GDPBound,
    GDPEstimate,
    _gdp_epsilon,
    _gdp_point_fit,
    _min_count,
    gdp_bound,
    gdp_epsilon_estimate,
    gdp_fit_from_counts,
)
from attacks.roc import DEFAULT_CURVE_POINTS, RocSummary, _scores
from attacks.thresholds import DEFAULT_N_THRESHOLDS, ThresholdStrategy, candidate_thresholds, errors
from certify.errors import PROBABILITY, Choice, Integer, Real

__all__ = [
    "DEFAULT_BOOTSTRAP",
    "DIRECTIONS",
    "EFFECT_SIZE_MEANING",
    "LOW_FPRS",
    "MIN_FALSE_POSITIVES",
    "ORIENTATIONS",
    "EffectSize",
    "Estimates",
    "Interval",
    "ScorePair",
]

DEFAULT_BOOTSTRAP = 200
"""Bootstrap resamples: enough for a 95 % percentile interval to move by under a tenth of its
width between seeds (measured on 100-1,000 trials per world), and cheap (one sort per world and
resample)."""

LOW_FPRS: tuple[float, ...] = (0.01, 0.001)
"""The false-positive rates at which the TPR is estimated (Carlini et al. 2022's low-FPR regime)."""

MIN_FALSE_POSITIVES = 5
"""A TPR at FPR f is estimated only where the retrained world has at least this many trials
above the threshold (n_r·f ≥ 5): below, the threshold is one of the few most extreme retrained
scores and neither the point nor its bootstrap says anything (at n_r·f < 1 it is the TPR at
FPR 0)."""

ORIENTATIONS: tuple[str, ...] = ("memory", "worlds")
"""What a larger score means: "memory" (behaves more like a model that saw Z: the attack can tell
under- from over-unlearning) or "worlds" (looks more like the unlearned world's models, whichever
side of the original they lie: it cannot)."""

DIRECTIONS: tuple[str, ...] = ("under-unlearning", "over-unlearning", "undetermined", "not-oriented")
"""Which way the evidence points (:meth:`ScorePair.direction`)."""

EFFECT_SIZE_MEANING = "a distance in units of the trials' own spread; bounds nothing"

#: Scores resampled at once by the effect size's bootstrap (it holds a few arrays of this many
#: values, whatever the trial count: :func:`audit.memory.trial_bytes` counts them).
BOOTSTRAP_CHUNK = 1_000_000
"""What the effect size is, in the report next to it: never read as a leak or an ε."""

_BOOTSTRAP = Integer(20)
_FPR = Real(gt=0, lt=1)


@dataclass(frozen=True)
class Interval:
    """A point estimate and its two-sided interval at ``Estimates.confidence``."""

    point: float
    lower: float
    upper: float

    def contains(self, value: float) -> bool:
        return self.lower <= value <= self.upper

    def overlaps(self, other: Interval) -> bool:
        return self.lower <= other.upper and other.lower <= self.upper


@dataclass(frozen=True)
class EffectSize(Interval):
    """(mean U − mean R) / pooled s.d. and its interval (:meth:`ScorePair.effect_size`), with what
    it is (:data:`EFFECT_SIZE_MEANING`); ±inf where both worlds' scores are constant and differ."""

    meaning: str = EFFECT_SIZE_MEANING

    def magnitude(self) -> Interval:
        """|effect size| and its interval: the distance whichever way (0 where the interval straddles 0)."""
        if self.lower >= 0.0:
            return Interval(self.point, self.lower, self.upper)
        if self.upper <= 0.0:
            return Interval(-self.point, -self.upper, -self.lower)
        return Interval(abs(self.point), 0.0, max(-self.lower, self.upper))


@dataclass(frozen=True)
class Estimates:
    """Everything :meth:`ScorePair.estimates` reports for one attack (``to_dict`` for the report)."""

    auroc: Interval
    tpr_at_fpr: dict[str, Interval | None]
    """Keyed by the FPR as text ("0.01", "0.001"); None where it cannot be estimated."""
    tpr_min_negatives: dict[str, int]
    """The retrained-world trials each FPR needs (``MIN_FALSE_POSITIVES`` / FPR)."""
    epsilon: Interval | None
    epsilon_method: str
    delta: float
    direction: str
    orientation: str
    confidence: float
    n_bootstrap: int
    seed: int
    n_trials: tuple[int, int]
    note: str = ""
    kind: str = "estimate"
    effect_size: EffectSize | None = None

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["n_trials"] = list(self.n_trials)
        return d


def _placements(u: np.ndarray, r: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """DeLong's placement values: for each U score the fraction of R scores below it (ties ½),
    and for each R score the fraction of U scores above it."""
    su, sr = np.sort(u), np.sort(r)
    below_r = (np.searchsorted(sr, u, side="left") + np.searchsorted(sr, u, side="right")) / (2.0 * r.size)
    above_u = 1.0 - (np.searchsorted(su, r, side="left") + np.searchsorted(su, r, side="right")) / (2.0 * u.size)
    return below_r, above_u


class _Sample:
    """One world's scores, sorted, with how often each appears in a resample (``cum``: cumulative
    counts), so that a bootstrap counts scores above fixed thresholds in O(n) without sorting."""

    def __init__(self, sorted_scores: np.ndarray, counts: np.ndarray | None = None) -> None:
        self.s = sorted_scores
        self.n = int(sorted_scores.size)
        self.cum = np.arange(1, self.n + 1) if counts is None else np.cumsum(counts)

    def above(self, thresholds: np.ndarray | float) -> np.ndarray:
        """Scores strictly above each threshold."""
        i = np.searchsorted(self.s, thresholds, side="right")
        return self.n - np.where(i > 0, self.cum[np.maximum(i - 1, 0)], 0)

    def kth_largest(self, k: int) -> float:
        """The (k + 1)-th largest score (k = 0: the maximum)."""
        return float(self.s[int(np.searchsorted(self.cum, self.n - k, side="left"))])


def _tpr(u: _Sample, r: _Sample, fpr: float) -> float:
    """The TPR of :func:`attacks.roc.tpr_at_fpr`: with k = ⌊fpr·n_r⌋ false positives allowed,
    "U iff score > the (k+1)-th largest R score"."""
    k = math.floor(fpr * r.n * (1.0 + 1e-9) + 1e-9)
    return 1.0 if k >= r.n else float(u.above(r.kth_largest(k))) / u.n


class ScorePair:
    """The scores of one attack in world U (unlearned) and world R (retrained), and everything read from them.

    Parameters
    ----------
    scores_u, scores_r : array_like, shape (n_u,), (n_r,)
        Finite scores; a larger score says "world U" (:mod:`attacks.base`).
    confidence : float, default 0.95
        The level of every statement, in (0, 1): the joint level of each bound, the two-sided
        level of every interval.
    n_bootstrap : int, default 200
        Bootstrap resamples (≥ 20) of the ε interval.
    seed : int, default 0
        Seed of the bootstrap (the report records it).
    """

    def __init__(
        self,
        scores_u: object,
        scores_r: object,
        *,
        confidence: float = 0.95,
        n_bootstrap: int = DEFAULT_BOOTSTRAP,
        seed: int = 0,
    ) -> None:
        self.u = _scores(scores_u, "scores_u")
        self.r = _scores(scores_r, "scores_r")
        self.confidence = PROBABILITY.check("confidence", confidence)
        self.n_bootstrap = _BOOTSTRAP.check("n_bootstrap", n_bootstrap)
        self.seed = Integer(0).check("seed", seed)
        self._z = float(ndtri(0.5 + self.confidence / 2.0))

    # -- the bounds and the ROC -----------------------------------------------------------------

    def bound(
        self,
        delta: float,
        *,
        split: str | ThresholdStrategy = DEFAULT_STRATEGY,
        n_thresholds: int | None = DEFAULT_N_THRESHOLDS,
        thresholds: np.ndarray | None = None,
    ) -> EpsilonBound:
        """The Clopper–Pearson lower bound on ε at this pair's confidence and seed
        (:func:`attacks.epsilon.clopper_pearson_epsilon`)."""
        return clopper_pearson_epsilon(
            self.u,
            self.r,
            delta=delta,
            confidence=self.confidence,
            split=split,
            n_thresholds=n_thresholds,
            thresholds=thresholds,
            seed=self.seed,
        )

    def gdp(self, delta: float, *, split: str | ThresholdStrategy = DEFAULT_STRATEGY) -> GDPEstimate:
        """The μ-GDP reading where the Gaussian shape is accepted (:func:`attacks.gdp.gdp_epsilon_estimate`)."""
        return gdp_epsilon_estimate(self.u, self.r, delta, confidence=self.confidence, split=split, seed=self.seed)

    def gdp_bound(
        self, delta: float, *, gaussian_release: bool, split: str | ThresholdStrategy = DEFAULT_STRATEGY
    ) -> GDPBound:
        """The lower bound on μ and its ε (:func:`attacks.gdp.gdp_bound`): a valid bound when
        ``gaussian_release`` (noise mode), an estimate under the Gaussian hypothesis otherwise."""
        return gdp_bound(
            self.u,
            self.r,
            delta,
            gaussian_release=gaussian_release,
            confidence=self.confidence,
            split=split,
            seed=self.seed,
        )

    def roc(self, *, max_points: int = DEFAULT_CURVE_POINTS) -> RocSummary:
        """The ROC curve (at most ``max_points`` exact points), its AUROC and TPR at low FPR."""
        return RocSummary.from_scores(self.u, self.r, max_points=max_points)

    # -- AUROC ---------------------------------------------------------------------------------

    def auroc(self) -> float:
        """P(S_U > S_R) + ½·P(S_U = S_R): the Mann–Whitney statistic (= roc_auc_score)."""
        return float(np.mean(_placements(self.u, self.r)[0]))

    def auroc_interval(self) -> Interval:
        """AUROC ± z·SE, DeLong's variance var(V10)/n_u + var(V01)/n_r, clipped to [0, 1].

        At perfect separation every placement is 0 or 1 and the interval collapses to the point:
        the sample cannot say how far from perfect the attack is."""
        v10, v01 = _placements(self.u, self.r)
        point = float(np.mean(v10))
        var = (np.var(v10, ddof=1) / v10.size if v10.size > 1 else 0.0) + (
            np.var(v01, ddof=1) / v01.size if v01.size > 1 else 0.0
        )
        half = self._z * math.sqrt(var)
        return Interval(point, max(0.0, point - half), min(1.0, point + half))

    # -- TPR at low FPR ------------------------------------------------------------------------

    @staticmethod
    def min_negatives(fpr: float) -> int:
        """Retrained-world trials needed to estimate the TPR at ``fpr``."""
        return math.ceil(MIN_FALSE_POSITIVES / _FPR.check("fpr", fpr) - 1e-9)

    def tpr_at_fpr(self, fpr: float) -> Interval | None:
        """TPR at ``fpr`` (the achievable point of :func:`attacks.roc.tpr_at_fpr`) with a
        distribution-free interval; None when fewer than :meth:`min_negatives` retrained trials.

        The retrained scores above the threshold whose FPR is ``fpr`` number K ~ Bin(n_r, fpr).
        With K in [k_lo, k_hi] (each tail at most α/4), that threshold lies between the
        (k_hi + 1)-th and the k_lo-th largest retrained score, so the TPR lies between world U's
        rates above those two scores, each read with a one-sided Clopper–Pearson end at α/4
        (U is independent of R): coverage at least the confidence by a union bound, whatever the
        scores' shape; 98.7-100 % in simulation. A percentile bootstrap of the same order
        statistic covered 91-93 % at 5 false positives (its threshold sits above the true one)."""
        if self.r.size < self.min_negatives(fpr):
            return None
        su, sr = _Sample(np.sort(self.u)), _Sample(np.sort(self.r))
        tail = (1.0 - self.confidence) / 4.0
        k_lo, k_hi = (int(binom.ppf(q, sr.n, fpr)) for q in (tail, 1.0 - tail))
        above_low = su.n if k_hi >= sr.n else int(su.above(sr.kth_largest(k_hi)))
        above_high = 0 if k_lo == 0 else int(su.above(sr.kth_largest(k_lo - 1)))
        lower = float(beta.ppf(tail, above_high, su.n - above_high + 1)) if above_high > 0 else 0.0
        upper = float(beta.ppf(1.0 - tail, above_low + 1, su.n - above_low)) if above_low < su.n else 1.0
        point = _tpr(su, sr, fpr)
        return Interval(point, min(lower, point), max(upper, point))

    # -- epsilon -------------------------------------------------------------------------------

    def epsilon(self, delta: float, *, n_thresholds: int | None = DEFAULT_N_THRESHOLDS) -> tuple[Interval | None, str]:
        """(ε estimate with its interval, how it was read): "gdp" where the Gaussian shape is
        accepted and the fit is defined, "trade-off" otherwise; None when it cannot be read (fewer
        than 2 trials in a world, or no test to read)."""
        k_min = _min_count(None, self.u.size, self.r.size)
        if gdp_goodness_of_fit(self.u, self.r).verdict == "accepted":
            mu, n = _gdp_point_fit(self.u, self.r, n_thresholds, k_min)
            if n > 0:
                cands = candidate_thresholds(np.concatenate([self.u, self.r]), n_thresholds)
                signed = self._bootstrap(
                    lambda su, sr: gdp_fit_from_counts(sr.above(cands), su.n - su.above(cands), su.n, sr.n, k_min)[0]
                )  # "U>R", fixed thresholds
                lo, hi = np.nanquantile(signed, [(1 - self.confidence) / 2, (1 + self.confidence) / 2])
                mu_lo = 0.0 if lo <= 0.0 <= hi else min(abs(lo), abs(hi))
                point = _gdp_epsilon(abs(mu), delta)
                return Interval(
                    point,
                    min(point, _gdp_epsilon(mu_lo, delta)),
                    max(point, _gdp_epsilon(max(abs(lo), abs(hi)), delta)),
                ), "gdp"
        return self._tradeoff(delta, n_thresholds), "trade-off"

    def _tradeoff(self, delta: float, n_thresholds: int | None) -> Interval | None:
        """The empirical trade-off curve's ε: the test (threshold, direction, side of Eq. (1)) with
        the largest ε at the observed rates is chosen on a random half of each world, and its ε is
        read on the other half, with a percentile bootstrap of that half. Choosing and reading on
        the same trials would report the largest of many noisy values: on identical worlds at 100
        trials that reads ε ≈ 0.8 with an interval excluding 0."""
        rng = np.random.default_rng([self.seed, 1])
        pu, pr = rng.permutation(self.u.size), rng.permutation(self.r.size)
        cu, eu = self.u[pu[: self.u.size // 2]], self.u[pu[self.u.size // 2 :]]
        cr, er = self.r[pr[: self.r.size // 2]], self.r[pr[self.r.size // 2 :]]
        if min(cu.size, cr.size) < 1:
            return None
        # a test read from fewer than 5 errors of a kind is mostly noise (ln of a count of 1 or 2);
        # thinner tests only where there is no other
        test = _best_test(
            cu, cr, delta, n_thresholds, max(MIN_FALSE_POSITIVES, _min_count(None, cu.size, cr.size))
        ) or _best_test(cu, cr, delta, n_thresholds, 1)
        separated = False
        if test is None:  # every test misses some kind of error: separated worlds, or ties everywhere
            separated = bool(cu.min() > cr.max() or cr.min() > cu.max())
            test = _best_test(cu, cr, delta, n_thresholds, 0)
        if test is None:
            return None
        point = _signed_epsilon(_Sample(np.sort(eu)), _Sample(np.sort(er)), test, delta)
        draws = self._bootstrap(lambda su, sr: _signed_epsilon(su, sr, test, delta), eu, er)
        lo, hi = np.quantile(draws, [(1 - self.confidence) / 2, (1 + self.confidence) / 2])
        # separated worlds: the observed ε is set by the trial count (about ln n), the truth may be any larger
        upper = math.inf if separated else max(0.0, float(hi), point)
        return Interval(max(0.0, point), max(0.0, min(float(lo), point)), upper)

    # -- effect size ---------------------------------------------------------------------------

    def effect_size(self) -> EffectSize:
        """(mean U − mean R) / √(½(var U + var R)) (variances over n) with a studentized bootstrap
        interval at this pair's confidence, seeded with the pair's seed (its own stream [seed, 2],
        so that it draws the same resamples whatever else is asked): the gap between the worlds' scores in
        units of their own spread. A distance, not a privacy number (:data:`EFFECT_SIZE_MEANING`).

        The interval is the bootstrap-t (Efron & Tibshirani 1993, ch. 12; DiCiccio & Efron
        1996): each resample's gap is studentized by its own delta-method standard error
        (:func:`_effect_size_se`, from the resample's first four moments, so O(n) per resample
        and assumption-free about the scores' shape), and the quantiles of those t values,
        scaled by the sample's standard error, set the ends. Over 1,000 samples per cell at 30-100
        trials per world (``bench/bench_effect_size_coverage.py``) it covered 93.1-94.8 % on
        Gaussian scores and 90.1-92.5 % on skewed ones at a gap of 2 spreads, where the
        percentile interval it replaced covered 90.8-92.9 % and 82.9-89.2 %, and BCa (Efron
        1987) 93.3-95.9 % and 87.8-91.0 %; 84.5-86.7 % on Student t(3) scores (infinite fourth moment).

        Unlike the AUROC it does not saturate when every trial separates the worlds: two
        fine-tunes both at AUROC 1 lie 50 and 85 spreads from retraining. It reads the scores'
        scale, so it compares releases scored by the same attack, and it is +inf (−inf) only when
        both worlds' scores are constant and U's are larger (smaller)."""
        u, r = self.u, self.r
        point = float(_gap_over_spread(u.mean(), u.var(), r.mean(), r.var()))
        # the gap and its s.e. are unchanged by one affine map of both worlds: centred and scaled into
        # [-1, 1], the fourth powers stay finite for any finite scores
        center = 0.5 * (u.mean() + r.mean())
        scale = max(float(np.abs(u - center).max()), float(np.abs(r - center).max())) or 1.0
        u, r = (u - center) / scale, (r - center) / scale
        se = float(_effect_size_se(point, _moments(u[None].copy()), u.size, _moments(r[None].copy()), r.size)[0])
        if not se > 0.0:  # both worlds constant: every resample is the sample, nothing varies
            return EffectSize(point, point, point)
        # its own stream [seed, 2]; resamples drawn as index arrays, a chunk of at most ~10^6 scores at a time
        rng, t = np.random.default_rng([self.seed, 2]), np.empty(self.n_bootstrap)
        step = max(1, BOOTSTRAP_CHUNK // max(u.size, r.size))
        for start in range(0, self.n_bootstrap, step):
            b = min(step, self.n_bootstrap - start)
            mu = _moments(u[rng.integers(0, u.size, (b, u.size))])
            mr = _moments(r[rng.integers(0, r.size, (b, r.size))])
            draws = _gap_over_spread(mu[0], mu[1], mr[0], mr[1])
            t[start : start + b] = _studentized(draws - point, _effect_size_se(draws, mu, u.size, mr, r.size))
        tail = (1.0 - self.confidence) / 2.0
        # inverted_cdf: no interpolation, so that an infinite t stays infinite rather than nan
        t_lo, t_hi = np.quantile(t, [tail, 1.0 - tail], method="inverted_cdf")
        # an infinite t gives an unbounded end (point and se are finite here)
        lower, upper = point - float(t_hi) * se, point - float(t_lo) * se
        return EffectSize(point, min(lower, point), max(upper, point))

    # -- direction -----------------------------------------------------------------------------

    def direction(self, orientation: str = "memory", auroc: Interval | None = None) -> str:
        """Which way the evidence points (one of :data:`DIRECTIONS`): under-unlearning when the
        AUROC interval lies above ½, over-unlearning below, undetermined when it contains ½;
        not-oriented for an attack of orientation "worlds"."""
        if Choice(ORIENTATIONS).check("orientation", orientation) == "worlds":
            return "not-oriented"
        auroc = auroc or self.auroc_interval()
        if auroc.lower > 0.5:
            return "under-unlearning"
        if auroc.upper < 0.5:
            return "over-unlearning"
        return "undetermined"

    def estimates(self, delta: float, orientation: str = "memory") -> Estimates:
        """Every estimate of this pair, for the report."""
        auroc = self.auroc_interval()
        eps, how = self.epsilon(delta)
        tprs = {f"{f:g}": self.tpr_at_fpr(f) for f in LOW_FPRS}
        notes = [
            f"TPR at {100 * f:g}% FPR: cannot estimate with {self.r.size} retrained trials "
            f"({self.min_negatives(f):,} could)"
            for f in LOW_FPRS
            if tprs[f"{f:g}"] is None
        ]
        if eps is None:
            notes.append("epsilon: cannot estimate (fewer than 2 trials in a world, or no test to read)")
        elif math.isinf(eps.upper):
            notes.append(
                "epsilon: the worlds are nearly separated at this trial count; the estimate is "
                "what the trials can show (about ln n), the truth may be any larger"
            )
        return Estimates(
            auroc=auroc,
            tpr_at_fpr=tprs,
            tpr_min_negatives={f"{f:g}": self.min_negatives(f) for f in LOW_FPRS},
            epsilon=eps,
            epsilon_method=how,
            delta=float(delta),
            direction=self.direction(orientation, auroc),
            orientation=orientation,
            confidence=self.confidence,
            n_bootstrap=self.n_bootstrap,
            seed=self.seed,
            n_trials=(int(self.u.size), int(self.r.size)),
            note="; ".join(notes),
            effect_size=self.effect_size(),
        )

    # -- bootstrap -----------------------------------------------------------------------------

    def _bootstrap(self, statistic, u: np.ndarray | None = None, r: np.ndarray | None = None) -> np.ndarray:
        """``statistic(U resample, R resample)`` (each a :class:`_Sample`) over the resamples
        (worlds apart) of ``u`` and ``r`` (default: all the scores)."""
        su, sr = np.sort(self.u if u is None else u), np.sort(self.r if r is None else r)
        rng = np.random.default_rng(self.seed)
        out = np.empty(self.n_bootstrap)
        for b in range(self.n_bootstrap):
            out[b] = statistic(
                _Sample(su, np.bincount(rng.integers(0, su.size, su.size), minlength=su.size)),
                _Sample(sr, np.bincount(rng.integers(0, sr.size, sr.size), minlength=sr.size)),
            )
        return out


def _gap_over_spread(mean_u: np.ndarray, var_u: np.ndarray, mean_r: np.ndarray, var_r: np.ndarray) -> np.ndarray:
    """(mean U − mean R) / √(½(var U + var R)), elementwise; 0 where the means are equal, ±inf where
    they differ and both worlds are constant."""
    gap, sd = mean_u - mean_r, np.sqrt(0.5 * (var_u + var_r))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(gap == 0.0, 0.0, np.where(sd > 0.0, gap / sd, np.copysign(np.inf, gap)))


def _moments(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Each row's mean and central moments 2, 3, 4 (over n), for rows of resampled scores; ``x``
    is overwritten (so that a chunk holds two arrays of its size, not five)."""
    mean = x.mean(1)
    x -= mean[:, None]
    sq = x * x
    x *= sq
    m3 = x.mean(1)
    m2 = sq.mean(1)
    sq *= sq
    return mean, m2, m3, sq.mean(1)


def _effect_size_se(
    theta: np.ndarray | float, mu: tuple[np.ndarray, ...], n_u: int, mr: tuple[np.ndarray, ...], n_r: int
) -> np.ndarray:
    """The delta-method standard error of :func:`_gap_over_spread` at ``theta``, from each world's
    (mean, m2, m3, m4) (:func:`_moments`) and size; nan or 0 where both worlds are constant.

    θ = (m_U − m_R)/s with s² = ½(v_U + v_R); a U score x moves it by its influence
    [(x − m_U) − k((x − m_U)² − v_U)]/s with k = θ/(4s) (an R score: −(y − m_R) in place of
    (x − m_U)), so Var θ̂ ≈ Σ_worlds E[influence²]/n = Σ [v ∓ 2k·m3 + k²(m4 − v²)]/(s²·n), minus
    for U and plus for R: right to first order for any scores with four moments."""
    (_, v_u, m3_u, m4_u), (_, v_r, m3_r, m4_r) = mu, mr
    s2 = 0.5 * (v_u + v_r)
    with np.errstate(divide="ignore", invalid="ignore"):
        k = theta / (4.0 * np.sqrt(s2))
        var_u = (v_u - 2.0 * k * m3_u + k * k * (m4_u - v_u * v_u)) / (s2 * n_u)
        var_r = (v_r + 2.0 * k * m3_r + k * k * (m4_r - v_r * v_r)) / (s2 * n_r)
        return np.sqrt(np.maximum(var_u + var_r, 0.0))


def _studentized(deviation: np.ndarray, se: np.ndarray) -> np.ndarray:
    """deviation / se; where se is 0 or nan (a resample with both worlds constant), ±inf, or 0 where
    the resample's gap is the sample's."""
    with np.errstate(divide="ignore", invalid="ignore"):
        inf = np.where(deviation == 0.0, 0.0, np.copysign(np.inf, deviation))
        return np.where(se > 0.0, deviation / se, inf)


def _rates(u: _Sample, r: _Sample, threshold: float, direction: int) -> tuple[float, float]:
    """(FPR, FNR) of one test (direction 0: "U>R", 1: "R>U", as :func:`attacks.thresholds.errors`),
    with half a count added (Haldane–Anscombe) so that log ratios stay finite on a sample where
    one error does not occur."""
    above_u, above_r = float(u.above(threshold)), float(r.above(threshold))
    fp, fn = (above_r, u.n - above_u) if direction == 0 else (r.n - above_r, above_u)
    return (fp + 0.5) / (r.n + 1.0), (fn + 0.5) / (u.n + 1.0)


def _signed_epsilon(su: _Sample, sr: _Sample, test: tuple[float, int, int], delta: float) -> float:
    """The chosen side of Eq. (1) at ``test`` = (threshold, direction, side), not clipped at 0:
    negative when these trials point the other way, so that an interval can straddle "no leak"."""
    threshold, direction, side = test
    fpr, fnr = _rates(su, sr, threshold, direction)
    first, second = (fpr, fnr) if side == 0 else (fnr, fpr)
    return math.log(max(1.0 - delta - first, 1e-300)) - math.log(second)


def _best_test(
    u: np.ndarray, r: np.ndarray, delta: float, n_thresholds: int | None, k_min: int
) -> tuple[float, int, int] | None:
    """(threshold, direction, side) of the largest ε of Eq. (1) at the observed rates over the
    thresholds with at least ``k_min`` trials in each confusion cell; None when there is none."""
    cands = candidate_thresholds(np.concatenate([u, r]), n_thresholds)
    if cands.size == 0:
        return None
    fp, fn = errors(np.sort(u), np.sort(r), cands)
    tp, tn = u.size - fn, r.size - fp
    fpr, fnr = (fp + 0.5) / (r.size + 1.0), (fn + 0.5) / (u.size + 1.0)
    with np.errstate(invalid="ignore"):
        sides = np.stack(
            [
                np.log(np.maximum(1.0 - delta - fpr, 1e-300)) - np.log(fnr),
                np.log(np.maximum(1.0 - delta - fnr, 1e-300)) - np.log(fpr),
            ]
        )
    ok = np.minimum(np.minimum(tp, fp), np.minimum(tn, fn)) >= k_min
    if not np.any(ok):
        return None
    sides = np.where(ok[None], sides, -np.inf)
    side, direction, index = np.unravel_index(int(np.argmax(sides)), sides.shape)
    return float(cands[index]), int(direction), int(side)
