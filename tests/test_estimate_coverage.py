"""Coverage of the TPR-at-low-FPR intervals (attacks.estimates.ScorePair.tpr_at_fpr), simulated
where the truth is known, at the fewest retrained trials the estimate accepts (5 false positives),
on a Gaussian and a heavy-tailed shape: the interval is distribution-free, so both must cover."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import binom, laplace, norm

from attacks.estimates import ScorePair

REPS = 200
#: misses allowed: the 99.9 % quantile of Bin(REPS, 5 %), so a valid 95 % interval fails this one time in 1,000
SLACK = int(binom.ppf(0.999, REPS, 0.05))


@pytest.mark.parametrize(
    "draw, truth",
    [
        (lambda rng, n, mu: rng.normal(mu, 1.0, n), lambda mu, f: norm.sf(norm.isf(f) - mu)),
        (lambda rng, n, mu: rng.laplace(mu, 1.0, n), lambda mu, f: laplace.sf(laplace.isf(f) - mu)),
    ],
    ids=["gaussian", "laplace"],
)
def test_tpr_interval_covers_the_true_tpr_at_its_fpr(draw, truth):
    fpr, n, mu = 0.01, 500, 2.0  # n * fpr = 5: the fewest false positives estimated
    target = truth(mu, fpr)
    misses, widths = 0, []
    for rep in range(REPS):
        rng = np.random.default_rng(rep)
        interval = ScorePair(draw(rng, n, mu), draw(rng, n, 0.0)).tpr_at_fpr(fpr)
        misses += not interval.contains(target)
        widths.append(interval.upper - interval.lower)
    assert misses <= SLACK
    assert np.mean(widths) < 0.5  # and it says something: not [0, 1]
