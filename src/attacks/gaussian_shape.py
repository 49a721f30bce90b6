"""Is the trade-off curve of two score samples Gaussian? A goodness-of-fit test of the shape.

The GDP reading of :mod:`attacks.gdp` extrapolates a Gaussian trade-off curve G_μ far into its
tail; its estimate is given only where :func:`gdp_goodness_of_fit` accepts that shape. (In noise
mode the release's trade-off curve is Gaussian by construction, and the GDP *bound* of
:mod:`attacks.gdp` needs no test there.)

Measured at 1,000 trials per world (1,000 repetitions, level 0.05): the bare Gaussian
mechanism is accepted in 93.5–94.6 % of repetitions (μ from 0.14 to 1.67, i.e. ε = 0.5 to 8
at δ = 1e-5); the Laplace mechanism is rejected in 100 % of repetitions at ε = 1 and 3
and 93.9 % at ε = 5 (nearly separated worlds leave little of the curve to test). With 500
trials per world: Laplace ε = 1 and 3 rejected in 99.3–99.7 %, Gaussian accepted in 93 %.

References
----------
.. [1] D. D. Dorfman and E. Alf, "Maximum-likelihood estimation of parameters of signal-detection
   theory and determination of confidence intervals — rating-method data", J. Math. Psychol.
   6(3), 1969 (the binormal model for binned ROC data).
.. [2] J. Dong, A. Roth and W. Su, "Gaussian Differential Privacy", JRSS-B 84(1), 2022, Eq. (6)
   (G_μ is the binormal ROC).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from scipy.optimize import minimize
from scipy.special import ndtr, ndtri

from attacks.rates import _scores
from certify.errors import PROBABILITY, Integer

__all__ = [
    "DEFAULT_GOF_BINS",
    "DEFAULT_GOF_LEVEL",
    "GOF_VERDICTS",
    "MIN_GOF_TRIALS",
    "GaussianFit",
    "gdp_goodness_of_fit",
]

GOF_VERDICTS: tuple[str, ...] = ("accepted", "rejected", "discrete", "untestable")
"""Outcomes of :func:`gdp_goodness_of_fit`; only "accepted" lets the GDP reading through."""

DEFAULT_GOF_BINS = 10
"""Bins of :func:`gdp_goodness_of_fit`: pooled deciles, 8 degrees of freedom."""

DEFAULT_GOF_LEVEL = 0.05
"""Significance level at which :func:`gdp_goodness_of_fit` rejects the Gaussian shape.

The errors are not symmetric: a false rejection only withholds a reading, while a false
acceptance lets through a bound that is far above the truth (on Laplace scores every repetition
that passed the test gave a Gaussian-hypothesis bound above the true ε). Hence 5 % rather than
1 %, at the price of refusing about one Gaussian reading in twenty."""

MIN_GOF_TRIALS = 500
"""Trials per world below which the Gaussian shape is "untestable" (no GDP reading).

With 200 trials per world the test misses the Laplace mechanism at ε = 1 and 3 in a third to
half of the repetitions, and every miss gave a bound above the true ε; from 500 it misses
under 1 %."""

_MIN_PER_BIN = 5  # trials per world per bin on average, the usual floor of a χ² approximation


class GaussianFit(NamedTuple):
    """Outcome of :func:`gdp_goodness_of_fit`.

    ``verdict`` is one of :data:`GOF_VERDICTS`; ``statistic`` (G²), ``df`` and ``p_value`` are
    NaN, 0 and NaN unless the test ran; ``mu`` is the maximum-likelihood shift of the binormal
    fit (signed: negative when U scores lower), NaN unless the test ran; ``note`` says why a
    verdict other than "accepted" was reached.
    """

    verdict: str
    statistic: float
    df: int
    p_value: float
    mu: float
    n_bins: int
    level: float
    note: str


def _is_discrete(pooled: np.ndarray) -> bool:
    """Integer-valued, or fewer distinct values than half the scores (ties are the rule)."""
    n_distinct = np.unique(pooled).size
    return bool(np.all(pooled == np.round(pooled))) or n_distinct < pooled.size / 2


def _rating_counts(u: np.ndarray, r: np.ndarray, n_bins: int) -> tuple[np.ndarray, np.ndarray]:
    """Counts of each world in bins cut at the pooled ``n_bins``-quantiles (ties merge bins)."""
    pooled = np.sort(np.concatenate([u, r]))
    ranks = np.ceil(np.arange(1, n_bins) * pooled.size / n_bins).astype(np.int64) - 1
    edges = np.unique(pooled[ranks])
    edges = edges[edges < pooled[-1]]  # an edge at the maximum would leave the last bin empty
    bins = edges.size + 1
    return (
        np.bincount(np.searchsorted(edges, u, side="left"), minlength=bins),
        np.bincount(np.searchsorted(edges, r, side="left"), minlength=bins),
    )


def _interval_probs(cuts: np.ndarray) -> np.ndarray:
    """Φ(c_j) − Φ(c_{j−1}) for the bins between ±∞ and ``cuts``, accurate in both tails."""
    lo = np.concatenate([[-np.inf], cuts])
    hi = np.concatenate([cuts, [np.inf]])
    p = np.where(lo > 0, ndtr(-lo) - ndtr(-hi), ndtr(hi) - ndtr(lo))
    return np.maximum(p, 1e-300)


def _binormal_nll(theta: np.ndarray, cu: np.ndarray, cr: np.ndarray) -> tuple[float, np.ndarray]:
    """Negative log-likelihood of the equal-variance binormal model and its gradient.

    θ = (c₁, ln(c₂ − c₁), …, ln(c_{k−1} − c_{k−2}), μ): the cut points on the latent scale,
    increasing by construction, and the shift. World R is N(0, 1), world U is N(μ, 1).
    """
    k = cu.size
    steps = np.exp(theta[1 : k - 1])
    cuts = theta[0] + np.concatenate([[0.0], np.cumsum(steps)])
    mu = theta[k - 1]
    pr, pu = _interval_probs(cuts), _interval_probs(cuts - mu)
    nll = -float(np.sum(cr * np.log(pr)) + np.sum(cu * np.log(pu)))
    dens_r = np.exp(-0.5 * cuts**2) / math.sqrt(2 * math.pi)
    dens_u = np.exp(-0.5 * (cuts - mu) ** 2) / math.sqrt(2 * math.pi)
    wr, wu = cr / pr, cu / pu
    # a cut is the upper edge of bin j and the lower edge of bin j + 1
    grad_cuts = -(dens_r * (wr[:-1] - wr[1:]) + dens_u * (wu[:-1] - wu[1:]))
    grad_mu = float(np.sum(dens_u * (wu[:-1] - wu[1:])))
    tail = np.cumsum(grad_cuts[::-1])[::-1]  # cut i moves with θ_m for every m ≤ i
    grad = np.concatenate([[tail[0]], steps * tail[1:], [grad_mu]])
    return nll, grad


def _fit_binormal(cu: np.ndarray, cr: np.ndarray) -> tuple[float, float]:
    """(minimal negative log-likelihood, μ̂) of the equal-variance binormal model."""
    # start from the R-world cumulative probits and the mean probit gap between the worlds
    fr = np.clip(np.cumsum(cr)[:-1] / cr.sum(), 0.5 / cr.sum(), 1 - 0.5 / cr.sum())
    fu = np.clip(np.cumsum(cu)[:-1] / cu.sum(), 0.5 / cu.sum(), 1 - 0.5 / cu.sum())
    cuts = np.maximum.accumulate(ndtri(fr))
    steps = np.maximum(np.diff(cuts), 1e-3)
    theta0 = np.concatenate([[cuts[0]], np.log(steps), [float(np.mean(ndtri(fr) - ndtri(fu)))]])
    res = minimize(_binormal_nll, theta0, args=(cu, cr), jac=True, method="BFGS")
    return float(res.fun), float(res.x[-1])


def _multinomial_nll(counts: np.ndarray) -> float:
    """Negative log-likelihood of the saturated model (each bin its own probability)."""
    c = counts[counts > 0]
    return -float(np.sum(c * np.log(c / counts.sum())))


def gdp_goodness_of_fit(
    scores_u: np.ndarray,
    scores_r: np.ndarray,
    *,
    n_bins: int = DEFAULT_GOF_BINS,
    level: float = DEFAULT_GOF_LEVEL,
) -> GaussianFit:
    """Test whether the empirical trade-off curve of the scores is a Gaussian one (G_μ).

    A trade-off curve is Gaussian exactly when, after some increasing transform of the score,
    world R is N(0, 1) and world U is N(μ, 1): the *equal-variance binormal* model of signal
    detection theory (slope 1 in probit space; Dong, Roth & Su 2022, Eq. (6)). The test is the
    classical one for binned ROC data (Dorfman & Alf 1969): cut the pooled scores at their
    ``n_bins``-quantiles, fit the k − 1 latent cut points and μ by maximum likelihood to the two
    worlds' bin counts, and compare with the saturated model by the likelihood-ratio statistic
    G² = 2·(ℓ_saturated − ℓ_binormal), asymptotically χ² with 2(k − 1) − k = k − 2 degrees of
    freedom. The fitted transform is free, so any increasing transform of Gaussian scores
    passes, and only the *shape* of the curve is tested.

    No test is run, and the verdict is not "accepted", when the shape cannot be tested:

    * ``"discrete"``: the scores are integer-valued (relearn steps) or take fewer distinct
      values than half their number (randomized response, heavily tied scores). The trade-off
      curve of a discrete score is a polygon, never the strictly convex G_μ, and a μ fitted
      through its few vertices extrapolates a Gaussian tail that is not there (binary
      randomized response at ε = 1 reads as μ = 1.23, i.e. ε = 5.6 at δ = 1e-5);
    * ``"untestable"``: fewer than :data:`MIN_GOF_TRIALS` (500) trials in a world, where the
      test is too weak to see a Laplace-shaped curve, fewer than three bins, or fewer than
      three bins holding trials of both worlds (nearly separated worlds: any curve fits).

    A test can only see the curve where there are data. The GDP reading at δ = 1e-5
    extrapolates it far into the tail, so passing this test makes the Gaussian hypothesis
    plausible, not true.

    Parameters
    ----------
    scores_u, scores_r : array_like, shape (n_u,), (n_r,)
        Attack scores in worlds U and R; finite, non-empty.
    n_bins : int, default 10
        Number of pooled-quantile bins, ≥ 3. Ten deciles leave 8 degrees of freedom and at
        least 50 trials per bin from 250 per world.
    level : float, default 0.05
        The shape is rejected when the p-value is below this, in (0, 1).

    Returns
    -------
    GaussianFit
        Verdict, G², degrees of freedom, p-value, the fitted μ, the bins used, and a note.

    Raises
    ------
    InvalidInput
        Bad scores, ``n_bins`` not an integer ≥ 3, ``level`` outside (0, 1).

    References
    ----------
    .. [1] D. D. Dorfman and E. Alf, J. Math. Psychol. 6(3), 1969.
    .. [2] J. Dong, A. Roth and W. Su, JRSS-B 84(1), 2022, Eq. (6) (G_μ is the binormal ROC).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> gdp_goodness_of_fit(rng.normal(1, 1, 2000), rng.normal(0, 1, 2000)).verdict
    'accepted'
    >>> gdp_goodness_of_fit(rng.laplace(1, 1 / 3, 2000), rng.laplace(0, 1 / 3, 2000)).verdict
    'rejected'
    """
    u = _scores(scores_u, "scores_u")
    r = _scores(scores_r, "scores_r")
    k_req = Integer(3).check("n_bins", n_bins)
    lvl = PROBABILITY.check("level", level)

    pooled = np.concatenate([u, r])
    refused = _refusal(pooled, min(u.size, r.size), k_req)
    if refused is None:
        cu, cr = _rating_counts(u, r, k_req)
        refused = _overlap_refusal(cu, cr)
    if refused is not None:
        return GaussianFit(refused[0], math.nan, 0, math.nan, math.nan, 0, lvl, refused[1])
    nll, mu = _fit_binormal(cu, cr)
    g2 = max(0.0, 2.0 * (nll - _multinomial_nll(cu) - _multinomial_nll(cr)))
    df = cu.size - 2
    from scipy.stats import chi2  # scipy.stats costs 0.5 s to import: only for this test

    p = float(chi2.sf(g2, df))
    if p < lvl:
        return GaussianFit(
            "rejected",
            g2,
            df,
            p,
            mu,
            int(cu.size),
            lvl,
            (f"the trade-off curve is not Gaussian-shaped (G² = {g2:.1f} on {df} df, p = {p:.2g} < {lvl:g})"),
        )
    return GaussianFit("accepted", g2, df, p, mu, int(cu.size), lvl, "")


def _refusal(pooled: np.ndarray, n_smaller: int, k_req: int) -> tuple[str, str] | None:
    """(verdict, note) when the shape cannot be tested for discrete scores or too few trials in
    the smaller world; None otherwise."""
    if _is_discrete(pooled):
        kind = "integer-valued" if np.all(pooled == np.round(pooled)) else "heavily tied"
        return (
            "discrete",
            (
                f"the scores are {kind} ({np.unique(pooled).size} distinct values among "
                f"{pooled.size}): the trade-off curve of a discrete score is a polygon, not a "
                "Gaussian curve"
            ),
        )
    need = max(MIN_GOF_TRIALS, _MIN_PER_BIN * k_req)
    if n_smaller < need:
        return "untestable", (f"too few trials to test the Gaussian shape (at least {need} per world)")
    return None


def _overlap_refusal(cu: np.ndarray, cr: np.ndarray) -> tuple[str, str] | None:
    """(verdict, note) when too few bins hold trials of both worlds to test the shape; None otherwise."""
    shared = int(np.count_nonzero((cu > 0) & (cr > 0)))
    if cu.size < 3 or shared < 3:
        return (
            "untestable",
            (
                f"only {shared} of {cu.size} score bins hold trials of both worlds: nearly "
                "separated worlds fit any trade-off curve, so the Gaussian shape cannot be tested"
            ),
        )
    return None
