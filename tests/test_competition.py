"""The NeurIPS 2023 unlearning-competition measurement (attacks.competition).

Checked three ways: a case small enough to work out by hand, a slow literal transcription of the
rules of google-deepmind/unlearning_evaluation ``metric.py`` (every rule evaluated by direct
comparison, no sorting) on random populations, and the properties the metric must have
(identical worlds give a positive estimate, not 0; more separated worlds give a larger ε).
"""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pytest
import torch

from attacks.base import AttackInputs
from attacks.competition import (
    DELTA,
    EPSILON_CAP,
    CompetitionMetric,
    bucket_points,
    bucketed_points,
    competition_confidence,
    competition_metric,
    example_epsilon,
    max_epsilon,
)
from attacks.lira_gaussians import logit_confidence
from audit.report.encoding import json_safe
from certify.errors import InvalidInput
from unlearners.models import build_model
from unlearners.objective import Objective

# ----------------------------------------------------------------------------------------------
# an independent, literal reference: every rule evaluated by comparing every model with it


def _reference_rule_eps(tpr, fnr, fpr, tnr, delta):
    """``_get_epsilons`` on given rates: ∞ for FPR = FNR = 0, NaN (discarded) when exactly one is 0."""
    eps = np.zeros(tpr.shape)
    eps[(fpr + fnr == 0) & (tpr + tnr == 2)] = np.inf
    eps[(eps == 0) & (fpr * fnr == 0)] = np.nan
    with np.errstate(divide="ignore", invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # nanmax of an all-NaN column
        computed = np.clip(
            np.nanmax([np.log(1 - delta - fpr) - np.log(fnr), np.log(1 - delta - fnr) - np.log(fpr)], axis=0), 0, None
        )
    return np.where(eps == 0, computed, eps)


def reference_example_epsilon(pos, neg, delta=DELTA):
    pos, neg = np.asarray(pos, float), np.asarray(neg, float)
    pos_diff, neg_diff = pos.max() - pos.min(), neg.max() - neg.min()
    largest = pos_diff if pos_diff > neg_diff else neg_diff
    smallest = neg_diff if pos_diff > neg_diff else pos_diff
    if largest > 0 and smallest / largest < 0.01:
        return EPSILON_CAP
    # double-threshold rules
    p, n = (neg, pos) if pos_diff >= neg_diff else (pos, neg)
    width = smallest
    lo, hi = p.min() + width - 2.0, p.max() + 2.0
    right = np.linspace(lo, hi, num=int(np.ceil((hi - lo) * 100)))
    left = np.concatenate([np.linspace(r - width - 2.0, r - width + 2.0, num=400) for r in right])
    right = np.repeat(right, 400)
    pp_p = (left[None, :] <= p[:, None]) & (p[:, None] <= right[None, :])
    pp_n = (left[None, :] <= n[:, None]) & (n[:, None] <= right[None, :])
    eps_d = _reference_rule_eps(pp_p.mean(0), (~pp_p).mean(0), pp_n.mean(0), (~pp_n).mean(0), delta)
    # single-threshold rules
    both = np.concatenate([pos, neg])
    t = np.linspace(both.min(), both.max(), int(np.ceil((both.max() - both.min()) * 100)))
    eps_s = _reference_rule_eps(
        (pos[:, None] >= t).mean(0),
        (pos[:, None] < t).mean(0),
        (neg[:, None] >= t).mean(0),
        (neg[:, None] < t).mean(0),
        delta,
    )
    eps = np.concatenate([eps_d, eps_s])
    eps = eps[~np.isnan(eps)]
    return float(np.clip(eps.max(), 0, EPSILON_CAP)) if eps.size else 0.0


def reference_forget_score(unlearned, retrained):
    k, m = unlearned.shape
    r_pos = np.median(retrained, 0) > np.median(unlearned, 0)
    eps = [
        reference_example_epsilon(
            retrained[:, i] if r_pos[i] else unlearned[:, i], unlearned[:, i] if r_pos[i] else retrained[:, i]
        )
        for i in range(m)
    ]
    top = np.ceil(np.log(k - 1))
    start, points, buckets = 0.0, 1.0, {}
    while start + 0.5 <= top:
        buckets[start] = points
        points /= 2
        start += 0.5
    score = 0.0
    for e in eps:
        for s, pts in buckets.items():
            if e < s + 0.5:
                score += pts
                break
    return np.array(eps), score / m


# ----------------------------------------------------------------------------------------------
# worked by hand


def test_a_case_worked_by_hand():
    """U = (0, 10, 20, 30), R = (5, 25, 35, 45); median(R) > median(U), so R is positive.

    Single thresholds t ∈ (20, 25]: TPR = 3/4 (25, 35, 45 ≥ t), FPR = 1/4 (30), so
    ε = ln((1 − δ − 1/4)/(1/4)) = ln(3 − 4δ); no other threshold does better ((10, 20]: ln(2 − 4δ);
    thresholds with FPR or FNR = 0 are discarded). Double thresholds: the peaky world is U (range
    30 < 40); intervals [l, r] with r ∈ [28, 32], l ∈ [r − 32, r − 28] always hold 10, 20, 5 and 25,
    never 35 or 45, so FPR = 1/2 and FNR ∈ {0, 1/4, 1/2}: at best ln(2 − 4δ). The second example
    has identical worlds: every rule has TPR = FPR, ε = 0.
    With K = 4 models, ε_max = ⌈ln 3⌉ = 2: buckets [0, .5) 1, [.5, 1) ½, [1, 1.5) ¼, [1.5, 2) ⅛.
    """
    U = np.array([0.0, 10.0, 20.0, 30.0])
    R = np.array([5.0, 25.0, 35.0, 45.0])
    res = competition_metric(np.stack([U, U], 1), np.stack([R, U], 1))
    assert res.epsilons[0] == pytest.approx(math.log(3 - 4 * DELTA), abs=1e-12)
    assert res.epsilons[1] == 0.0
    assert list(res.rules) == ["single", "single"]
    assert list(res.retrained_positive) == [True, False]
    assert list(res.points) == [0.25, 1.0]
    assert res.forget_score == pytest.approx(0.625)
    assert [(h["lower"], h["count"]) for h in res.histogram()] == [(0.0, 1), (0.5, 0), (1.0, 1), (1.5, 0), (2.0, 0)]
    assert reference_forget_score(np.stack([U, U], 1), np.stack([R, U], 1))[1] == pytest.approx(0.625)


def test_bucketing_values():
    assert max_epsilon(512) == 7.0 and max_epsilon(3) == 1.0 and max_epsilon(2) == 0.0
    b = bucket_points(512)
    assert len(b) == 14
    assert [x[0] for x in b] == [0.5 * i for i in range(14)]
    assert [x[2] for x in b] == [2.0**-i for i in range(14)]
    got = bucketed_points([0.0, 0.49, 0.5, 1.0, 6.49, 6.5, 6.99, 7.0, 50.0], 512)
    assert list(got) == [1.0, 1.0, 0.5, 0.25, 2.0**-12, 2.0**-13, 2.0**-13, 0.0, 0.0]
    assert bucket_points(2) == [] and list(bucketed_points([0.0], 2)) == [0.0]  # ln(1) = 0: no bucket
    assert bucket_points(3) == [(0.0, 0.5, 1.0), (0.5, 1.0, 0.5)]
    with pytest.raises(InvalidInput):
        max_epsilon(1)


def test_peaky_and_separated_examples_reach_the_cap():
    rng = np.random.default_rng(0)
    spread = rng.normal(size=16)
    assert example_epsilon(np.full(16, 0.3), spread) == (EPSILON_CAP, "peaky")  # constant world: range ratio 0
    assert example_epsilon(spread + 100.0, spread) == (EPSILON_CAP, "separated")  # a threshold with no error
    assert example_epsilon(np.full(8, 1.0), np.full(8, 1.0)) == (0.0, "none")  # where metric.py's assert fires
    res = competition_metric(np.stack([np.full(16, 0.3), spread + 100], 1), np.stack([spread, spread], 1))
    assert list(res.epsilons) == [EPSILON_CAP, EPSILON_CAP] and res.forget_score == 0.0
    assert res.to_dict()["examples_at_cap"] == 2


# ----------------------------------------------------------------------------------------------
# against the literal reference


@pytest.mark.parametrize("seed", range(6))
def test_matches_the_literal_reference_on_random_populations(seed):
    rng = np.random.default_rng(seed)
    k, m = int(rng.integers(5, 17)), 3
    scale_u, scale_r = rng.uniform(0.2, 3.0, size=2)
    u = rng.normal(rng.uniform(-1, 1), scale_u, size=(k, m))
    r = rng.normal(0.0, scale_r, size=(k, m))
    if seed % 3 == 0:
        u = np.round(u, 1)  # ties between scores and thresholds
    res = competition_metric(u, r)
    ref_eps, ref_score = reference_forget_score(u, r)
    np.testing.assert_allclose(res.epsilons, ref_eps, rtol=1e-12, atol=1e-12)
    assert res.forget_score == pytest.approx(ref_score, abs=1e-12)


def test_identical_worlds_give_a_positive_estimate_not_zero():
    """Point estimates maximised over ~160,000 rules: on two samples of one distribution the
    world with the wider range has more extreme models, and a double threshold around the peaky
    one turns that into ε ≈ ln(#extreme/#1). Not 0, and exactly what metric.py computes."""
    rng = np.random.default_rng(11)
    u, r = rng.normal(size=(24, 8)), rng.normal(size=(24, 8))
    res = competition_metric(u, r)
    ref_eps, ref_score = reference_forget_score(u, r)
    np.testing.assert_allclose(res.epsilons, ref_eps, rtol=1e-12, atol=1e-12)
    assert res.forget_score == pytest.approx(ref_score)
    assert res.epsilons.mean() > 0.5 and res.forget_score < 1.0


@pytest.mark.slow  # fast-lane budget (README): 1.2 s
def test_more_separated_worlds_give_larger_epsilon_and_lower_forget_score():
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=(64, 30)), rng.normal(size=(64, 30))  # common random numbers
    means, scores = [], []
    for shift in (0.0, 1.0, 2.0, 4.0, 8.0):
        res = competition_metric(a + shift, b)
        means.append(res.epsilons.mean())
        scores.append(res.forget_score)
    assert all(x < y for x, y in zip(means, means[1:])), means
    assert all(x > y for x, y in zip(scores, scores[1:])), scores
    assert means[-1] == EPSILON_CAP and scores[-1] == 0.0  # fully separated: every example at the cap


def test_validation():
    with pytest.raises(InvalidInput):
        competition_metric(np.zeros((1, 3)), np.zeros((4, 3)))  # one model: no ln(K - 1)
    with pytest.raises(InvalidInput):
        competition_metric(np.zeros((4, 3)), np.zeros((4, 2)))
    with pytest.raises(InvalidInput):
        competition_metric(np.full((4, 1), np.nan), np.zeros((4, 1)))


# ----------------------------------------------------------------------------------------------
# the confidence and the attack


def test_confidence_is_the_reference_formula():
    rng = np.random.default_rng(3)
    logits = rng.normal(0, 8, size=(5, 7, 10))
    y = rng.integers(0, 10, size=7)
    z = logits - logits.max(-1, keepdims=True)
    probs = np.exp(z) / np.exp(z).sum(-1, keepdims=True)
    p = np.take_along_axis(probs, np.broadcast_to(y[None, :, None], (5, 7, 1)), -1)[..., 0]
    reference = np.log(p + 1e-45) - np.log(1 - p + 1e-45)  # compute_logit_scaled_confidence
    ours = competition_confidence(logit_confidence(logits, y))
    np.testing.assert_allclose(ours, reference, rtol=1e-9, atol=1e-9)
    # saturation: the 1e-45 guard caps |φ| at ln(1 + 1e45) ≈ 103.6, as in metric.py
    cap = math.log1p(1e45)
    np.testing.assert_allclose(competition_confidence([1e4, -1e4, 0.0]), [cap, -cap, 0.0], rtol=1e-12)


def _inputs(n=40, m=6, shift=0.0, mode="noise"):
    gen = torch.Generator().manual_seed(0)
    obj = Objective(build_model("logreg", 4, 3).double())
    X = torch.randn(30, 4, generator=gen, dtype=torch.float64)
    y = torch.randint(0, 3, (30,), generator=gen)
    theta = torch.randn(obj.dim, generator=gen, dtype=torch.float64)
    ru = theta + 0.3 * torch.randn(n, obj.dim, generator=gen, dtype=torch.float64)
    ru[:, :4] += shift  # class 0's weights (a shift of every logit alike would change no softmax)
    rr = theta + 0.3 * torch.randn(n, obj.dim, generator=gen, dtype=torch.float64)
    noiseless_u = theta if mode == "noise" else ru
    return AttackInputs(
        objective=obj,
        X=X,
        y=y,
        forget=torch.arange(m),
        X_unseen=X[:0],
        y_unseen=y[:0],
        theta_original=theta,
        theta_unlearned=theta,
        theta_retrained=theta,
        released_unlearned=ru,
        released_retrained=rr,
        noiseless_unlearned=noiseless_u,
        noiseless_retrained=theta if mode == "noise" else rr,
        sigma=0.3,
        delta=1e-5,
        seed=0,
    )


def test_the_attack_scores_mean_confidence_and_reports_the_competition():
    inputs = _inputs()
    out = CompetitionMetric().run(inputs)
    assert out.scores_unlearned.shape == (40,) and out.scores_retrained.shape == (40,)
    Xf, yf = inputs.forget_data
    obj = inputs.objective
    phi_u = np.stack([logit_confidence(obj.logits(t, Xf).numpy(), yf.numpy()) for t in inputs.released_unlearned])
    np.testing.assert_allclose(out.scores_unlearned, competition_confidence(phi_u).mean(1), rtol=1e-12)
    d = out.details
    assert len(d["example_epsilons"]) == 6 and len(d["example_rules"]) == 6
    assert 0.0 <= d["forget_score"] <= 1.0 and d["models_per_world"] == 40 and d["bucket_ceiling"] == 4.0
    assert sum(h["count"] for h in d["epsilon_histogram"]) == 6
    assert d["delta"] == DELTA and d["kind"] == "estimate"
    assert "not a bound" in d["caveats"] and "ceil(ln(K - 1)) = 4" in d["caveats"]
    assert "release noise" in d["caveats"]  # trial mode noise
    assert json.loads(json.dumps(json_safe(d))) == json_safe(d)  # JSON data, nothing else
    # positions only: no feature or label of a forgotten record travels in the details
    flat = json.dumps(d)
    for value in inputs.X[inputs.forget].flatten().tolist():
        assert repr(value) not in flat
    assert "retrain" in CompetitionMetric().run(_inputs(mode="retrain")).details["caveats"]


def test_the_attack_sees_a_planted_difference():
    same = CompetitionMetric().run(_inputs(shift=0.0)).details
    moved = CompetitionMetric().run(_inputs(shift=3.0)).details
    assert moved["mean_epsilon"] > same["mean_epsilon"]
    assert moved["forget_score"] < same["forget_score"]


def test_registered():
    from attacks.registry import get_attack

    assert get_attack("competition") is CompetitionMetric


def test_large_forget_sets_are_measured_on_a_seeded_subset(monkeypatch):
    import attacks.competition as competition

    monkeypatch.setattr(competition, "MAX_EXAMPLES", 3)
    inputs = _inputs(m=6)
    a, b = CompetitionMetric().run(inputs), CompetitionMetric().run(inputs)
    d = a.details
    assert len(d["example_epsilons"]) == 3 and d["forget_examples_total"] == 6
    assert d["example_positions"] == b.details["example_positions"] and len(set(d["example_positions"])) == 3
    assert "subset of 3 of the 6" in d["caveats"]
    assert a.scores_unlearned.shape == (40,)  # the per-model score still averages all six
    assert CompetitionMetric().run(_inputs(m=2)).details["example_positions"] == [0, 1]


def test_populations_below_the_grid_resolution_are_flagged():
    """Release noise far below the grid step (0.01 in φ): the fixed sweep of metric.py cannot follow
    the populations and reports ε = 0 even for perfectly separated worlds; the example is flagged."""
    rng = np.random.default_rng(4)
    u = 2.0 + 1e-4 + 1e-6 * rng.normal(size=(50, 3))
    r = 2.0 + 1e-6 * rng.normal(size=(50, 3))
    res = competition_metric(u, r)
    d = res.to_dict()
    assert d["examples_below_resolution"] == 3 and d["below_resolution_positions"] == [0, 1, 2]
    assert min(res.epsilons) == 0.0  # perfectly separated, yet (at least one) ε = 0
    wide = competition_metric(u * 1e4, r * 1e4)  # the same populations in units the grid resolves
    assert wide.to_dict()["examples_below_resolution"] == 0 and list(wide.epsilons) == [EPSILON_CAP] * 3
