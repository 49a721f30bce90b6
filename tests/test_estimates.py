"""Estimates with intervals (attacks.estimates): checked against independent computations,
simulated coverage, and the properties the comparison relies on (strength orders the estimates,
over-unlearning is named, identical worlds' intervals contain "no leak")."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import ndtr
from sklearn.metrics import roc_auc_score

from attacks.estimates import LOW_FPRS, ScorePair, _effect_size_se, _gap_over_spread, _moments, _Sample, _tpr
from attacks.roc import tpr_at_fpr
from certify.errors import InvalidInput

DELTA = 1e-5


def _pair(mu: float, n: int, seed: int, **kw) -> ScorePair:
    rng = np.random.default_rng(seed)
    return ScorePair(rng.normal(mu, 1.0, n), rng.normal(0.0, 1.0, n), seed=seed, **kw)


def test_auroc_is_scikit_learns_including_ties():
    rng = np.random.default_rng(0)
    u, r = rng.integers(0, 6, 80).astype(float), rng.integers(0, 5, 60).astype(float)  # many ties
    expected = roc_auc_score(np.r_[np.ones(80), np.zeros(60)], np.r_[u, r])
    assert ScorePair(u, r).auroc() == pytest.approx(expected, abs=1e-12)
    assert ScorePair(u, r).auroc_interval().point == pytest.approx(expected, abs=1e-12)


def test_delong_interval_covers_the_true_auroc_at_its_level():
    # U ~ N(1, 1), R ~ N(0, 1): AUROC = Phi(1/sqrt(2)); a 95 % interval should cover ~95 % of samples
    truth = float(ndtr(1 / math.sqrt(2)))
    covered = sum(_pair(1.0, 100, seed).auroc_interval().contains(truth) for seed in range(300))
    assert 0.92 <= covered / 300 <= 0.98


def test_tpr_matches_the_roc_module_and_is_refused_below_its_negatives():
    rng = np.random.default_rng(1)
    u, r = rng.normal(1, 1, 700), rng.normal(0, 1, 600)
    pair = ScorePair(u, r, n_bootstrap=50)
    est = pair.tpr_at_fpr(0.01)
    assert est.point == tpr_at_fpr(u, r, 0.01) == _tpr(_Sample(np.sort(u)), _Sample(np.sort(r)), 0.01)
    assert est.lower <= est.point <= est.upper
    assert pair.tpr_at_fpr(0.001) is None and pair.min_negatives(0.001) == 5000
    note = pair.estimates(DELTA).note
    assert "TPR at 0.1% FPR: cannot estimate with 600 retrained trials (5,000 could)" in note


def test_estimates_order_strengths_with_separable_intervals():
    weak, middle, strong = (_pair(mu, 300, 3).estimates(DELTA) for mu in (0.2, 0.8, 2.0))
    assert weak.auroc.point < middle.auroc.point < strong.auroc.point
    assert weak.epsilon.point < middle.epsilon.point < strong.epsilon.point
    assert not weak.auroc.overlaps(strong.auroc)
    assert strong.direction == "under-unlearning"


def test_over_unlearning_is_named_and_a_worlds_attack_takes_no_side():
    pair = _pair(-2.0, 100, 4)
    assert pair.estimates(DELTA).direction == "over-unlearning"
    assert pair.estimates(DELTA).epsilon.point > 1  # a leak all the same: the bound is two-sided
    assert pair.direction("worlds") == "not-oriented"


def test_identical_worlds_intervals_contain_no_leak():
    contain = 0
    for seed in range(20):
        est = _pair(0.0, 100, seed).estimates(DELTA)
        contain += est.auroc.contains(0.5) and est.epsilon.lower == 0.0 and est.direction == "undetermined"
    assert contain >= 17


def test_gdp_reading_where_the_shape_is_gaussian_and_it_covers_the_truth():
    # mu = 0.5: epsilon at delta 1e-5 of G_0.5
    from attacks.gdp import _gdp_epsilon

    pair = _pair(0.5, 1000, 5, n_bootstrap=50)
    eps, how = pair.epsilon(DELTA)
    assert how == "gdp" and eps.contains(_gdp_epsilon(0.5, DELTA))


def test_separated_worlds_read_as_at_least_what_the_trials_show():
    est = _pair(6.0, 100, 6).estimates(DELTA)
    assert math.isinf(est.epsilon.upper) and est.epsilon.lower > 3
    assert "nearly separated" in est.note


@pytest.mark.parametrize(
    "kw, field", [({"n_bootstrap": 5}, "n_bootstrap"), ({"confidence": 1.0}, "confidence"), ({"seed": -1}, "seed")]
)
def test_bad_parameters_name_their_field(kw, field):
    with pytest.raises(InvalidInput, match=field):
        ScorePair([0.0, 1.0], [0.5, 2.0], **kw)


def test_unknown_orientation_is_refused():
    with pytest.raises(InvalidInput, match="orientation"):
        ScorePair([0.0, 1.0], [0.5, 2.0]).direction("sideways")


def test_report_form_has_every_low_fpr():
    d = _pair(1.0, 100, 7, n_bootstrap=20).estimates(DELTA).to_dict()
    assert d["kind"] == "estimate" and set(d["tpr_at_fpr"]) == {f"{f:g}" for f in LOW_FPRS}
    assert d["n_trials"] == [100, 100]


# -- the findings name the direction ---------------------------------------------------------
def _attacks(certified, **attacks):
    from types import SimpleNamespace as NS

    from audit.report.schema import Estimates

    def result(bound, mu, orientation):
        est = Estimates(**_pair(mu, 100, 8, n_bootstrap=20).estimates(DELTA, orientation).to_dict())
        return NS(bound=NS(epsilon_lower=bound), estimates=est)

    return NS(
        comparison=NS(certified_epsilon=certified), attacks={name: result(*spec) for name, spec in attacks.items()}
    )


def test_findings_name_the_direction_of_attacks_that_prove_a_leak():
    from audit.findings import CODES, direction_findings

    found = direction_findings(
        _attacks(None, mia=(1.2, -3.0, "memory"), relearn=(0.8, 3.0, "memory"), whitebox=(2.0, 3.0, "worlds"))
    )
    assert {f["code"] for f in found} == {"over-unlearning", "under-unlearning"}
    over = next(f for f in found if f["code"] == "over-unlearning")
    assert over["message"].startswith("mia (AUROC 0.0") and "whitebox" not in " ".join(f["message"] for f in found)
    assert CODES["over-unlearning"].short and CODES["under-unlearning"].short


def test_no_direction_finding_within_the_certificate_or_an_undetermined_interval():
    from audit.findings import direction_findings

    assert direction_findings(_attacks(1.0, mia=(0.9, -3.0, "memory"))) == []  # the certificate allows it
    assert direction_findings(_attacks(None, mia=(0.4, 0.0, "memory"))) == []  # interval contains 0.5


def test_the_page_shows_the_estimates_next_to_the_bound():
    import json
    from pathlib import Path

    from audit.report.html import render_html

    report = json.loads((Path(__file__).parent / "data" / "sample-report.json").read_text())
    name = min(report["attacks"]["attacks"])
    report["attacks"]["attacks"][name]["estimates"] = _pair(-3.0, 100, 9, n_bootstrap=20).estimates(DELTA).to_dict()
    page = " ".join(render_html(report).split())
    assert "Estimates, not bounds" in page and "direction: <b>over-unlearning</b>" in page
    assert page.index("TPR at 1% FPR cannot estimate (500 retrained") < page.index("TPR at 0.1% FPR cannot estimate")
    # the effect size, negative like the direction, and said to be a distance that bounds nothing
    assert "Effect size -" in page and "own spread; bounds nothing (mean score U minus R" in page


# -- audit compare: a ranking by the estimates -----------------------------------------------
def _row(name: str, mu: float, mode: str = "retrain"):
    from types import SimpleNamespace as NS

    from audit.report.schema import Estimates

    est = Estimates(**_pair(mu, 100, 10, n_bootstrap=50).estimates(DELTA).to_dict())
    return NS(name=name, leakage=NS(trial_mode=mode, estimates={"mia": est}))


def test_compare_ranks_by_the_estimates_and_names_what_it_cannot_separate():
    from audit.comparing import estimated_ranking

    ranking = estimated_ranking(
        [
            _row("noop", 3.0),
            _row("retrain", 0.0),
            _row("finetune", 0.1),
            _row("neggrad", -3.0),
            _row("r2d", 3.0, mode="noise"),
        ]
    )
    assert ranking.order[0] in {"retrain", "finetune"} and set(ranking.order) == {
        "noop",
        "retrain",
        "finetune",
        "neggrad",
    }
    pairs = [set(p) for p in ranking.not_separable]
    assert {"retrain", "finetune"} in pairs and {"noop", "neggrad"} in pairs  # no leak vs a 0.1 shift; both separated
    assert set(ranking.order[:2]) == {"retrain", "finetune"} and {"finetune", "noop"} not in pairs
    assert "Not separable at this trial count (intervals overlap): " in ranking.sentence
    assert ranking.direction["neggrad"] == "over-unlearning" and ranking.direction["noop"] == "under-unlearning"
    assert estimated_ranking([_row("noop", 3.0)]) is None  # nothing to rank against


@pytest.mark.slow  # four small audits (about 15 s on 2 cores); the fast tests above check each property
def test_compare_end_to_end_names_over_unlearning_and_retrain_contains_no_leak(tmp_path):
    from audit.comparing import compare
    from audit.config import AuditConfig

    result = compare(
        AuditConfig(
            max_train=300,
            trials=100,
            attacks=("mia", "relearn"),
            noise_draws=2,
            curve_points=2,
            frontier=(1.0,),
            seed=1,
        ),
        ("noop", "finetune", "neggrad", "retrain"),
    )
    rows = {r.name: r for r in result.document.methods}
    assert "over-unlearning" in {f.code for f in rows["neggrad"].findings}
    assert rows["neggrad"].leakage.estimates["mia"].direction == "over-unlearning"
    for est in rows["retrain"].leakage.estimates.values():
        assert est.auroc.lower <= 0.5 <= est.auroc.upper and est.epsilon.lower == 0.0
    ranking = result.document.estimated_ranking
    assert set(ranking.order) | set(ranking.not_ranked) == set(rows)  # not ranked: no power, an estimate of no leak
    assert ranking.sentence.startswith("Estimated epsilon, least first")
    result.write(tmp_path / "cmp")
    assert ranking.sentence in " ".join((tmp_path / "cmp" / "report.html").read_text().split())


def test_a_counted_resample_is_the_materialised_one():
    rng = np.random.default_rng(11)
    s = np.sort(rng.normal(size=50).round(1))  # ties included
    idx = rng.integers(0, 50, 50)
    counted, materialised = _Sample(s, np.bincount(idx, minlength=50)), np.sort(s[idx])
    thresholds = np.linspace(-2.5, 2.5, 41)
    assert np.array_equal(counted.above(thresholds), (materialised[None] > thresholds[:, None]).sum(1))
    assert [counted.kth_largest(k) for k in range(50)] == list(materialised[::-1])


def test_effect_size_reads_the_known_gap_in_units_of_the_spread_with_the_directions_sign():
    # U ~ N(3, 2^2), R ~ N(0, 2^2): the gap is 1.5 spreads; swapped worlds read -1.5 and over-unlearning
    rng = np.random.default_rng(30)
    u, r = rng.normal(3.0, 2.0, 2000), rng.normal(0.0, 2.0, 2000)
    pair = ScorePair(u, r, n_bootstrap=50, seed=4)
    est = pair.effect_size()
    assert est.point == pytest.approx(1.5, abs=0.08) and est.lower < 1.5 < est.upper < est.lower + 0.3
    assert "bounds nothing" in est.meaning and pair.estimates(DELTA).effect_size == est
    swapped = ScorePair(r, u, n_bootstrap=50, seed=4).estimates(DELTA)
    assert swapped.effect_size.point == pytest.approx(-est.point) and swapped.effect_size.upper < 0
    assert swapped.direction == "over-unlearning" and pair.estimates(DELTA).direction == "under-unlearning"
    assert swapped.effect_size.magnitude().lower == pytest.approx(-swapped.effect_size.upper)
    assert ScorePair(u, r, n_bootstrap=50, seed=4).effect_size() == est  # a function of the scores and the seed
    assert ScorePair(u, r, n_bootstrap=50, seed=5).effect_size() != est
    assert ScorePair(np.full(5, 2.0), np.full(5, 1.0)).effect_size().point == math.inf
    assert ScorePair(np.full(5, 1.0), np.full(5, 1.0)).effect_size().point == 0.0


def test_effect_size_interval_covers_the_true_gap_up_to_binomial_slack():
    # studentized bootstrap at 60 trials per world: measured coverage 94-95 % on Gaussian scores
    # (bench/results/effect_size_coverage.json); a correct interval stays above the 0.1 % quantile of
    # Bin(reps, 0.9); a point or a half-width interval does not
    from scipy.stats import binom

    reps = 40
    covered = 0
    for seed in range(reps):
        rng = np.random.default_rng(seed)
        pair = ScorePair(rng.normal(1.5, 3.0, 60), rng.normal(0.0, 3.0, 60), seed=seed, n_bootstrap=40)
        covered += pair.effect_size().contains(0.5)
    assert covered >= binom.ppf(0.001, reps, 0.9)


def test_effect_size_interval_is_the_bootstrap_t_that_scipys_resampling_gives():
    # independent resampling (scipy.stats.bootstrap) of the same studentized gap, on a small skewed sample:
    # the ends agree within Monte-Carlo error (4,000 resamples each) and the standard error with scipy's
    # bootstrap s.e. to first order; the percentile interval it replaced lies 0.1-0.2 away
    from scipy.stats import bootstrap

    def gap(a, b, axis=-1):
        return _gap_over_spread(a.mean(axis), a.var(axis), b.mean(axis), b.var(axis))

    def se(a, b):
        rows_a, rows_b = a.reshape(-1, a.shape[-1]).astype(float), b.reshape(-1, b.shape[-1]).astype(float)
        moments = _moments(rows_a.copy()), a.shape[-1], _moments(rows_b.copy()), b.shape[-1]
        return _effect_size_se(gap(rows_a, rows_b), *moments).reshape(a.shape[:-1])

    rng = np.random.default_rng(8)
    u, r = rng.exponential(1.0, 25) + 1.5, rng.exponential(1.0, 30)
    point, s = float(gap(u, r)), float(se(u, r))
    t = bootstrap(
        (u, r), lambda a, b, axis=-1: (gap(a, b) - point) / se(a, b), n_resamples=4000, method="percentile", rng=2
    )
    ours = ScorePair(u, r, n_bootstrap=4000, seed=3).effect_size()
    assert ours.point == point
    assert ours.lower == pytest.approx(point - t.confidence_interval.high * s, abs=0.05)
    assert ours.upper == pytest.approx(point - t.confidence_interval.low * s, abs=0.05)
    percentile = bootstrap((u, r), gap, n_resamples=4000, method="percentile", rng=1)
    assert s == pytest.approx(percentile.standard_error, rel=0.15)
    assert abs(percentile.confidence_interval.low - ours.lower) > 0.08
    assert abs(percentile.confidence_interval.high - ours.upper) > 0.15


def test_effect_size_interval_is_the_same_at_any_scale_of_the_scores():
    # the gap is scale-free, and so is its interval: fourth moments of scores near 1e100 would overflow unscaled
    rng = np.random.default_rng(12)
    u, r = rng.normal(0.5, 1.0, 80), rng.normal(0.0, 1.0, 80)
    est = ScorePair(u, r, seed=2).effect_size()
    for scaled in (ScorePair(u * 1e100, r * 1e100, seed=2), ScorePair(u * 1e-100 + 3e-99, r * 1e-100 + 3e-99, seed=2)):
        got = scaled.effect_size()
        assert [got.point, got.lower, got.upper] == pytest.approx([est.point, est.lower, est.upper], rel=1e-9)


def test_effect_size_interval_at_a_handful_of_trials_is_unbounded_rather_than_undefined():
    # one U score: every resample of U is constant, and the 1 in 9 with R's resample constant too have no
    # spread (t = +inf where R's score is below U's: 2 in 27 resamples, above the 2.5 % tail), so the
    # lower end is -inf, never nan
    for seed in range(3):
        est = ScorePair([1.0], [0.0, 0.5, 3.0], seed=seed).effect_size()
        assert est.lower == -math.inf and est.point <= est.upper and not math.isnan(est.upper)
