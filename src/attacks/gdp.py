"""The μ-GDP reading of attack scores: a point estimate of μ and ε, and a lower bound on μ.

:func:`gdp_epsilon_estimate` reads the scores as a μ-GDP trade-off curve (Dong, Roth & Su 2022;
Nasr et al. 2023), but only where that reading is tested: :func:`attacks.gaussian_shape.gdp_goodness_of_fit`
checks that the empirical trade-off curve is consistent with a Gaussian one, and the reading is
refused for scores that fail the test or are discrete (integer relearn steps, randomized
response). When it is given, it has two numbers: the point fit of μ (an **estimate**) and a
Clopper–Pearson lower bound on μ, which is a valid lower bound on ε **only under the hypothesis**
that the release's trade-off curve is Gaussian.

**Gate.** :func:`~attacks.gaussian_shape.gdp_goodness_of_fit` first tests whether the empirical trade-off curve is
Gaussian-shaped. Unless its verdict is "accepted", the reading is refused: μ, ε and their
bounds are NaN and ``note`` says why (the test rejected the shape, the scores are discrete,
or there is too little overlap or data to test it). Applied without this gate, the fit
overshoots the truth several-fold on integer relearn steps, randomized response and
Laplace-noise scores, whose curves are not Gaussian.

**Point estimate** (``mu``, ``epsilon_estimate``; NOT a bound). Under μ-GDP the optimal
test's ROC curve is Φ⁻¹(TPR) = Φ⁻¹(FPR) + μ at every threshold (Dong, Roth & Su 2022,
Eq. (6): G_μ(α) = Φ(Φ⁻¹(1 − α) − μ)). The per-threshold differences
d_t = Φ⁻¹(TPR̂_t) − Φ⁻¹(FPR̂_t) are averaged with inverse-variance weights (delta method:
Var d_t ≈ TPR(1−TPR)/(n_u φ(Φ⁻¹ TPR)²) + FPR(1−FPR)/(n_r φ(Φ⁻¹ FPR)²)), over thresholds with
at least ``min_count`` trials in each confusion cell (the jax_privacy ``min_count``
convention). μ is the absolute value; its sign gives the direction. It is converted with the
exact analytic-Gaussian curve: ε is the root of δ_μ(ε) = δ, i.e.
:func:`certify.mechanisms.epsilon_for` with σ = 1/μ and Δ = 1.

**Lower bound under the Gaussian hypothesis** (``mu_lower``, ``epsilon_lower``). For every
test, μ-GDP implies μ ≥ Φ⁻¹(1 − FPR) − Φ⁻¹(FNR); with Clopper–Pearson upper bounds on both
rates, chosen and corrected by the threshold strategy ``split`` exactly as
:func:`attacks.epsilon.clopper_pearson_epsilon` does, the maximum over the counted tests is a lower bound on
μ at ``confidence`` (jax_privacy ``epsilon_from_gdp``, Nasr et al. 2023). Its ε at δ bounds
the release's ε **if** the release's trade-off curve is Gaussian; labelled
:data:`GAUSSIAN_HYPOTHESIS`, it is reported only when the shape test accepts, which can
only lower the chance of reporting a value above the truth. Measured on Gaussian scores
(1,000 repetitions at 1,000 trials per world, α = 0.05): ``mu_lower`` exceeded the true μ
in at most 1 repetition in 1,000 (ε = 0.5, 1, 3, 8), the shape test accepting 93.5–94.6 %
of them. With the split or the 200-threshold grid instead of the frontier it is lower
(mean ε_LB at ε = 3: 1.88 and 1.81 against 2.13; at ε = 1: 0.02 and 0.09 against 0.32). For a
planted ε = 3 (δ = 1e-5, μ = 0.719) it gives ε_LB = 2.12 ± 0.23 (mean ± sd over 200 repetitions, minimum 1.62; refused by the shape test in 10 of the 200)
where the (ε, δ) Clopper–Pearson bound gives 0.86 ± 0.13. Where the hypothesis is false
and the test cannot see it, the bound is not a bound: on Laplace scores that passed the
test (a third to a half of the repetitions at 200 trials per world, hence
:data:`~attacks.gaussian_shape.MIN_GOF_TRIALS`; 6 % at ε = 5 with 1,000) it exceeded the true ε every time.

**The GDP bound is valid in noise mode** (:func:`gdp_bound`, ``kind = "bound"``). There the two
worlds are the toolkit's own Gaussian mechanism on two fixed models: trial i releases
θ_u + σ·ξ_i in world U and θ_r + σ·ξ'_i in world R, with θ_u and θ_r the noiseless unlearned and
retrained models, fixed across trials, and ξ_i, ξ'_i independent N(0, I_d)
(:func:`audit.trials.noise_trials`). The trade-off function of N(θ_u, σ²I) against
N(θ_r, σ²I) is exactly G_μ⋆ with μ⋆ = ‖θ_u − θ_r‖/σ (Dong, Roth & Su 2022, Eq. (6): the
likelihood ratio is monotone in the projection on θ_u − θ_r, a one-dimensional N(0, 1) against
N(μ⋆, 1)). An attack's score of a trial is a function of that trial's release (and of
randomness independent of the trials' noise: its seed, shadow models drawn under their own
role), so every test of U against R on the scores is a (randomised) post-processing of one
release, and its rates satisfy FNR ≥ G_μ⋆(FPR) = Φ(Φ⁻¹(1 − FPR) − μ⋆), that is
μ⋆ ≥ Φ⁻¹(1 − FPR) − Φ⁻¹(FNR), whatever the distribution of the scores. The right side is
non-increasing in both rates, so Clopper–Pearson upper bounds on them, chosen and corrected by
the same threshold strategy as the (ε, δ) bound, give μ_lo ≤ μ⋆ with probability ≥ 1 − α.
The release's privacy curve is exactly δ_μ⋆(ε) (Dong, Roth & Su 2022, Corollary 2.13), which
increases in μ, so the smallest ε at δ is ε_GDP(μ⋆, δ) ≥ ε_GDP(μ_lo, δ) =: ε_lo: if ε_lo exceeds
the certified ε, the release is not (ε_cert, δ)-DP, at confidence 1 − α. This is the μ-GDP
auditing of Nasr et al. 2023, exact here because the mechanism is Gaussian by construction rather
than asymptotically. It assumes nothing about the scores' distribution beyond what the
Clopper–Pearson bound assumes (one independent score per trial); the Box–Muller noise is
truncated at |ξ| ≤ 8.57 (probability about 1e-17 per coordinate) and rounded to the parameter
dtype, both neglected. Elsewhere (retrain mode, re-run mode) the release's curve is whatever
training makes it, and the same number is an estimate under the Gaussian hypothesis
(``kind = "estimate"``, :data:`GAUSSIAN_HYPOTHESIS`): on Laplace-mechanism scores it exceeds
the true ε (``bench/bench_gdp_bound.py``).

References
----------
.. [1] M. Nasr, J. Hayes, T. Steinke, B. Balle, F. Tramèr, M. Jagielski, N. Carlini and
   A. Terzis, "Tight Auditing of Differentially Private Machine Learning", USENIX Security 2023.
.. [2] J. Dong, A. Roth and W. Su, "Gaussian Differential Privacy", JRSS-B 84(1), 2022, Eq. (6)
   and Corollary 2.13 (μ-GDP ⇔ (ε, δ_μ(ε))-DP for all ε).
.. [3] B. Balle and Y.-X. Wang, "Improving the Gaussian mechanism for differential privacy",
   ICML 2018, Theorem 8 (the same curve with μ = Δ/σ).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.special import ndtri

from attacks.epsilon import DEFAULT_STRATEGY, ceiling_counts
from attacks.gaussian_shape import DEFAULT_GOF_BINS, DEFAULT_GOF_LEVEL, GaussianFit, gdp_goodness_of_fit
from attacks.protocol import _n_thresholds, run_protocol
from attacks.rates import _confidence, _cp_upper, _delta, _scores
from attacks.thresholds import DEFAULT_N_THRESHOLDS, ThresholdStrategy, as_strategy, candidate_thresholds, errors
from certify.errors import Integer, InvalidInput
from certify.mechanisms import epsilon_for

__all__ = [
    "GAUSSIAN_HYPOTHESIS",
    "GAUSSIAN_RELEASE",
    "GDPBound",
    "GDPEstimate",
    "gdp_bound",
    "gdp_ceiling",
    "gdp_epsilon_estimate",
    "gdp_fit_from_counts",
]

GAUSSIAN_HYPOTHESIS = "bound under the Gaussian (mu-GDP) hypothesis"
"""``GDPEstimate.lower_kind``: what the GDP lower bound is, and on what it rests."""


@dataclass(frozen=True)
class GDPEstimate:
    """The μ-GDP reading of the scores: a point fit (**not a bound**) and a conditional bound.

    Attributes
    ----------
    mu : float
        Fitted μ ≥ 0 of the Gaussian trade-off curve G_μ; NaN when no threshold was usable
        (``n_points == 0``) or the reading was refused (``gof`` is not "accepted"); see
        ``note``.
    epsilon_estimate : float
        ε at which the μ-GDP privacy curve reaches ``delta`` (the analytic-Gaussian curve with
        σ = 1/μ, Δ = 1); ``inf`` when ``delta == 0`` and μ > 0, 0 when μ = 0, NaN with μ.
    delta : float
        The δ used for the conversion.
    direction : {"U>R", "R>U"}
        Orientation in which the scores separate the worlds (the sign of the fitted shift).
    n_points : int
        Thresholds that entered the fit (those with at least ``min_count`` trials in each of
        the four confusion cells).
    min_count : int
        The per-cell minimum that was applied.
    n_trials : (int, int)
        Trials per world, (n_u, n_r).
    note : str
        Empty, or why no estimate could be formed or the reading was refused.
    method : str
        Description of the fit.
    kind : str
        Always ``"estimate"``: the point fit is valid only if the trade-off curve really is
        Gaussian, and even then it is not a bound.
    gof : str
        Verdict of :func:`gdp_goodness_of_fit`: "accepted" (the reading is given), "rejected",
        "discrete" or "untestable" (refused: every μ and ε here is NaN).
    gof_statistic, gof_df, gof_p_value : float, int, float
        The likelihood-ratio statistic G², its degrees of freedom and p-value (NaN, 0, NaN
        when no test could be run).
    gof_level : float
        Level below which the p-value rejects the Gaussian shape.
    mu_lower : float
        Clopper–Pearson lower bound on μ: the largest Φ⁻¹(1 − FPR_u) − Φ⁻¹(FNR_u) over the
        tests of the threshold strategy, with the rates bounded as for the ε bound. If the
        release is μ⋆-GDP, then μ⋆ ≥ ``mu_lower`` with probability ≥ ``confidence``. NaN when
        refused.
    epsilon_lower : float
        ε at ``delta`` of G_{mu_lower}: a lower bound on the release's ε **only under the
        hypothesis** that its trade-off curve is Gaussian (``lower_kind``); ``inf`` when
        ``delta == 0`` and ``mu_lower > 0``. NaN when refused.
    confidence : float
        Confidence of ``mu_lower``.
    lower_method : str
        ``"clopper-pearson/<strategy name> on mu"``.
    lower_kind : str
        Always :data:`GAUSSIAN_HYPOTHESIS`.
    """

    mu: float
    epsilon_estimate: float
    delta: float
    direction: str
    n_points: int
    min_count: int
    n_trials: tuple[int, int]
    note: str = ""
    method: str = "gdp-fit (Nasr et al. 2023): assumes a Gaussian trade-off curve; not a bound"
    kind: str = "estimate"
    gof: str = "untestable"
    gof_statistic: float = math.nan
    gof_df: int = 0
    gof_p_value: float = math.nan
    gof_level: float = DEFAULT_GOF_LEVEL
    mu_lower: float = math.nan
    epsilon_lower: float = math.nan
    confidence: float = 0.95
    lower_method: str = ""
    lower_kind: str = GAUSSIAN_HYPOTHESIS

    def to_dict(self) -> dict:
        """Plain-Python (JSON-ready) dictionary of the fields."""
        d = dataclasses.asdict(self)
        d["n_trials"] = list(self.n_trials)
        return d


def _min_count(value: object, n_u: int, n_r: int) -> int:
    if value is None:
        return max(1, min(50, min(n_u, n_r) // 20))
    return Integer(1).check("min_count", value)


def _gdp_epsilon(mu: float, delta: float) -> float:
    """ε at ``delta`` of the μ-GDP curve (σ = 1/μ, Δ = 1); NaN stays NaN."""
    if math.isnan(mu):
        return math.nan
    if mu == 0.0:
        return 0.0
    if delta == 0.0:
        return math.inf  # a Gaussian trade-off curve is not (ε, 0)-DP for any finite ε
    return float(epsilon_for(1.0 / mu, delta, 1.0))


def _mu_from_rates(fpr: np.ndarray, fnr: np.ndarray) -> np.ndarray:
    """max(0, Φ⁻¹(1 − FPR) − Φ⁻¹(FNR)): the smallest μ whose curve G_μ admits these rates.

    μ-GDP means FNR ≥ Φ(Φ⁻¹(1 − FPR) − μ) for every test (Dong, Roth & Su 2022, Eq. (6)); the
    expression is non-increasing in both rates, so upper bounds on them bound μ from below.
    """
    with np.errstate(invalid="ignore"):
        mu = -ndtri(np.asarray(fpr, dtype=float)) - ndtri(np.asarray(fnr, dtype=float))
    return np.maximum(0.0, np.nan_to_num(mu, nan=0.0, neginf=0.0))


def _gdp_point_fit(u: np.ndarray, r: np.ndarray, n_thresholds: int | None, k_min: int) -> tuple[float, int]:
    """(signed μ̂, points used) of the inverse-variance weighted probit fit; μ̂ NaN if none."""
    cands = candidate_thresholds(np.concatenate([u, r]), n_thresholds)
    fp_all, fn_all = errors(np.sort(u), np.sort(r), cands)
    return gdp_fit_from_counts(fp_all[0], fn_all[0], u.size, r.size, k_min)  # direction "U>R"


def gdp_fit_from_counts(fp: np.ndarray, fn: np.ndarray, n_u: int, n_r: int, k_min: int) -> tuple[float, int]:
    """:func:`_gdp_point_fit` from the error counts of direction "U>R" at its thresholds (so that a
    bootstrap can count resamples at fixed thresholds without sorting them)."""
    fp, fn = np.asarray(fp, dtype=float), np.asarray(fn, dtype=float)
    tp, tn = n_u - fn, n_r - fp
    ok = np.minimum(np.minimum(tp, fp), np.minimum(tn, fn)) >= k_min
    if not np.any(ok):
        return math.nan, 0
    tpr, fpr = tp[ok] / n_u, fp[ok] / n_r
    z1, z0 = ndtri(tpr), ndtri(fpr)
    phi1 = np.exp(-0.5 * z1 * z1) / math.sqrt(2.0 * math.pi)
    phi0 = np.exp(-0.5 * z0 * z0) / math.sqrt(2.0 * math.pi)
    var = tpr * (1.0 - tpr) / (n_u * phi1**2) + fpr * (1.0 - fpr) / (n_r * phi0**2)
    w = 1.0 / var
    return float(np.sum(w * (z1 - z0)) / np.sum(w)), int(np.count_nonzero(ok))


def gdp_epsilon_estimate(
    scores_u: np.ndarray,
    scores_r: np.ndarray,
    delta: float,
    *,
    n_thresholds: int | None = DEFAULT_N_THRESHOLDS,
    min_count: int | None = None,
    confidence: float = 0.95,
    split: str | ThresholdStrategy = DEFAULT_STRATEGY,
    seed: int = 0,
    n_bins: int = DEFAULT_GOF_BINS,
    gof_level: float = DEFAULT_GOF_LEVEL,
) -> GDPEstimate:
    """Read the scores as a μ-GDP trade-off curve, where that reading is tested.

    The gate, the point estimate and the lower bound, with their measured validity, are in the
    module docstring. The point estimate is NOT a bound; the lower bound bounds the release's ε
    only if its trade-off curve is Gaussian (labelled :data:`GAUSSIAN_HYPOTHESIS`).

    Parameters
    ----------
    scores_u, scores_r : array_like, shape (n_u,), (n_r,)
        Attack scores in worlds U and R; finite, non-empty.
    delta : float
        δ at which to express ε, in [0, 1).
    n_thresholds : int or None, default 200
        Thresholds (midpoints between pooled distinct scores at evenly spaced ranks) for the
        point fit; None uses every gap.
    min_count : int or None, default None
        Minimum of (tp, fp, tn, fn) for a threshold to enter the point fit. None: 50
        (jax_privacy's default) when each world has ≥ 1 000 trials, otherwise 5 % of the smaller
        world (at least 1), so that small audits still get an estimate.
    confidence : float, default 0.95
        Confidence of ``mu_lower``, in (0, 1).
    split : str or ThresholdStrategy, default ParetoBonferroni()
        Threshold strategy of the lower bound (as in :func:`clopper_pearson_epsilon`; a name
        gets the default 200-threshold grid).
    seed : int, default 0
        Seed of a :class:`Split`.
    n_bins, gof_level : int, float
        Bins and level of the shape test (:func:`gdp_goodness_of_fit`).

    Returns
    -------
    GDPEstimate
        The point fit (``kind="estimate"``), the shape test, and the lower bound
        (``lower_kind`` = :data:`GAUSSIAN_HYPOTHESIS`). When no threshold has ``min_count``
        trials in every cell the point fit is NaN with ``n_points == 0``: undefined, and no
        number is better than an invented one.

    Raises
    ------
    InvalidInput
        Bad scores, ``delta`` outside [0, 1), ``n_thresholds`` not an integer ≥ 1 or None,
        ``min_count`` not an integer ≥ 1 or None, ``confidence`` outside (0, 1), an unknown
        ``split``, ``seed`` not an integer ≥ 0, or bad ``n_bins``/``gof_level``.

    References
    ----------
    .. [1] Nasr et al., USENIX Security 2023; Dong, Roth & Su, JRSS-B 2022, Eq. (6), Cor. 2.13.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> g = gdp_epsilon_estimate(rng.normal(1.0, 1.0, 20000), rng.normal(0.0, 1.0, 20000), 1e-5)
    >>> g.kind, g.gof, round(g.mu, 1), 0.9 < g.mu_lower < g.mu
    ('estimate', 'accepted', 1.0, True)
    """
    u = _scores(scores_u, "scores_u")
    r = _scores(scores_r, "scores_r")
    dlt = _delta(delta)
    m = _n_thresholds(n_thresholds)
    k_min = _min_count(min_count, u.size, r.size)
    conf = _confidence(confidence)
    strategy = as_strategy(split)
    seed = Integer(0).check("seed", seed)
    fit = gdp_goodness_of_fit(u, r, n_bins=n_bins, level=gof_level)

    mu_signed, n_points = _gdp_point_fit(u, r, m, k_min)
    common = _shared_fields(fit, mu_signed, n_points, k_min, (int(u.size), int(r.size)), dlt, conf, strategy.name)
    notes = [] if n_points else [_NO_FIT.format(k_min=k_min)]
    if fit.verdict != "accepted":
        notes.append(f"GDP reading refused: {fit.note}")
        return GDPEstimate(mu=math.nan, epsilon_estimate=math.nan, note="; ".join(notes), **common)
    mu_lower = run_protocol(u, r, strategy, 1.0 - conf, _mu_from_rates, fixed=None, seed=seed).value
    mu = abs(mu_signed)
    return GDPEstimate(
        mu=mu,
        epsilon_estimate=_gdp_epsilon(mu, dlt),
        note="; ".join(notes),
        mu_lower=mu_lower,
        epsilon_lower=_gdp_epsilon(mu_lower, dlt),
        **common,
    )


_NO_FIT = (
    "no threshold has at least {k_min} trials in each of TP, FP, TN and FN "
    "(too few trials, or perfectly separated worlds): the fit is undefined"
)


def _shared_fields(
    fit: GaussianFit,
    mu_signed: float,
    n_points: int,
    k_min: int,
    n_trials: tuple[int, int],
    delta: float,
    confidence: float,
    strategy: str,
) -> dict[str, Any]:
    """The fields every :class:`GDPEstimate` has, whether the reading is given or refused."""
    sign = mu_signed if not math.isnan(mu_signed) else fit.mu
    return dict(
        delta=delta,
        direction="R>U" if sign < 0 else "U>R",
        n_points=n_points,
        min_count=k_min,
        n_trials=n_trials,
        gof=fit.verdict,
        gof_statistic=fit.statistic,
        gof_df=fit.df,
        gof_p_value=fit.p_value,
        gof_level=fit.level,
        confidence=confidence,
        lower_method=f"clopper-pearson/{strategy} on mu",
    )


# ----------------------------------------------------------------------------------------------
# The GDP bound: valid where the release is the Gaussian mechanism on fixed models

GAUSSIAN_RELEASE = "bound: the release is the Gaussian mechanism on two fixed models (noise mode)"
"""``GDPBound.basis`` where the bound is valid: why, in the module docstring."""


@dataclass(frozen=True)
class GDPBound:
    """The Clopper–Pearson lower bound on μ of the scores, and its ε at δ.

    ``kind`` is "bound" when the release is the Gaussian mechanism on two fixed models (noise
    mode; ``basis`` = :data:`GAUSSIAN_RELEASE`) and "estimate" otherwise (``basis`` =
    :data:`GAUSSIAN_HYPOTHESIS`). ``threshold``, ``direction``, ``fpr_upper``, ``fnr_upper``,
    ``rate_confidence`` and ``n_tests`` describe the counted test, as in
    :class:`attacks.epsilon.EpsilonBound`; ``ceiling`` is the ε_lo of a perfectly separating
    attack at these trial counts.
    """

    mu_lower: float
    epsilon_lower: float
    kind: str
    basis: str
    threshold: float
    direction: str
    fpr_upper: float
    fnr_upper: float
    rate_confidence: float
    n_tests: int
    ceiling: float
    confidence: float
    delta: float
    method: str

    def to_dict(self) -> dict:
        """Plain-Python (JSON-ready) dictionary of the fields."""
        return dataclasses.asdict(self)


def gdp_bound(
    scores_u: np.ndarray,
    scores_r: np.ndarray,
    delta: float,
    *,
    gaussian_release: bool,
    confidence: float = 0.95,
    split: str | ThresholdStrategy = DEFAULT_STRATEGY,
    seed: int = 0,
) -> GDPBound:
    """μ_lo = max over the strategy's counted tests of Φ⁻¹(1 − FPR_u) − Φ⁻¹(FNR_u), and ε_GDP(μ_lo, δ).

    A valid lower bound on the release's μ and ε at ``confidence`` when ``gaussian_release``
    (the two worlds are N(θ_u, σ²I) and N(θ_r, σ²I) with θ_u, θ_r fixed: noise mode); the
    argument is in the module docstring. Otherwise it is an estimate under the Gaussian
    hypothesis, and no shape test gates it here (:func:`gdp_epsilon_estimate` gives the gated
    reading).

    Parameters
    ----------
    scores_u, scores_r : array_like, shape (n_u,), (n_r,)
        Attack scores in worlds U and R, one per independent trial; finite, non-empty.
    delta : float
        δ at which to express ε, in [0, 1).
    gaussian_release : bool
        Whether the release is the Gaussian mechanism on two fixed models (the caller knows: the
        audit passes ``trial mode in audit.trials.GAUSSIAN_RELEASE_MODES``).
    confidence, split, seed
        As in :func:`attacks.epsilon.clopper_pearson_epsilon`.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> b = gdp_bound(rng.normal(0.719, 1, 1000), rng.normal(0, 1, 1000), 1e-5, gaussian_release=True)
    >>> b.kind, 0.4 < b.mu_lower < 0.719
    ('bound', True)
    """
    if not isinstance(gaussian_release, bool):
        raise InvalidInput("gaussian_release", "True or False", gaussian_release)
    u, r = _scores(scores_u, "scores_u"), _scores(scores_r, "scores_r")
    dlt, conf = _delta(delta), _confidence(confidence)
    strategy = as_strategy(split)
    run = run_protocol(u, r, strategy, 1.0 - conf, _mu_from_rates, fixed=None, seed=Integer(0).check("seed", seed))
    return GDPBound(
        mu_lower=run.value,
        epsilon_lower=_gdp_epsilon(run.value, dlt),
        kind="bound" if gaussian_release else "estimate",
        basis=GAUSSIAN_RELEASE if gaussian_release else GAUSSIAN_HYPOTHESIS,
        threshold=run.threshold,
        direction=run.direction,
        fpr_upper=run.fpr_upper,
        fnr_upper=run.fnr_upper,
        rate_confidence=run.level,
        n_tests=run.n_tests,
        ceiling=_perfect_epsilon(*run.n_evaluated, run.ceiling_level, dlt),
        confidence=conf,
        delta=dlt,
        method=f"clopper-pearson/{strategy.name} on mu",
    )


def gdp_ceiling(
    n_trials: int | tuple[int, int],
    delta: float = 0.0,
    confidence: float = 0.95,
    *,
    split: str | ThresholdStrategy = DEFAULT_STRATEGY,
) -> float:
    """The GDP bound's ceiling before any score is seen (``GDPBound.ceiling``), for sizing an audit.

    A perfectly separating attack has no error on the trials it is counted on, so each rate's
    upper bound is the Clopper–Pearson bound on 0 errors, 1 − (1 − level)^(1/n), at the level and
    counts of the strategy (:func:`attacks.epsilon.ceiling_counts`, as for the (ε, δ) bound's
    :func:`~attacks.epsilon.strategy_ceiling`); μ_lo = Φ⁻¹(1 − FPR_u) − Φ⁻¹(FNR_u) and its ε at δ.
    The Gaussian tail makes it much higher than the (ε, δ) ceiling at the same trials: at 300
    trials per world and δ = 1e-5, 27.5 against 4.22 for one attack's bounds (level 0.975), 25.6
    against 3.94 for four attacks' (0.99375); it grows like 2·Φ⁻¹(1 − ln(2/α)/n) in μ, not ln n.

    Examples
    --------
    >>> round(gdp_ceiling(300, 1e-5, 0.975), 1), round(gdp_ceiling(300, 1e-5, 0.99375), 1)
    (27.5, 25.6)
    """
    n_u, n_r, level = ceiling_counts(n_trials, confidence, split=split)
    return _perfect_epsilon(n_u, n_r, level, _delta(delta))


def _perfect_epsilon(n_u: int, n_r: int, level: float, delta: float) -> float:
    """ε at ``delta`` of μ_lo for no error on ``n_u`` and ``n_r`` trials, each rate bounded at ``level``."""
    zero = np.zeros(())
    return _gdp_epsilon(float(_mu_from_rates(_cp_upper(zero, n_r, level), _cp_upper(zero, n_u, level))), delta)
