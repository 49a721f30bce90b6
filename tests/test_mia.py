"""attacks.roc (exact ROC, AUROC, TPR at FPR) and attacks.mia (population MIA)."""

from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from scipy.stats import mannwhitneyu
from sklearn.linear_model import LogisticRegression

from attacks.mia import attack_features, population_mia
from attacks.roc import RocSummary, auroc, roc_curve, summarize_roc, tpr_at_fpr
from certify.errors import InvalidInput

# ----------------------------------------------------------------------------------------------
# roc


def test_auroc_identical_distributions_is_about_half():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=5000), rng.normal(size=5000)
    assert auroc(a, b) == pytest.approx(0.5, abs=0.02)


def test_auroc_perfect_separation_and_reverse():
    assert auroc([2.0, 3.0, 4.0], [-1.0, 0.0, 1.0]) == 1.0
    assert auroc([-1.0, 0.0], [1.0, 2.0]) == 0.0  # reverse direction, reported as measured


def test_auroc_ties_count_half():
    assert auroc([1.0, 1.0], [1.0, 1.0, 1.0]) == 0.5
    # pairs: (1 vs 0) win, (1 vs 1) tie, (0 vs 0) tie, (0 vs 1) loss -> (1 + .5 + .5) / 4
    assert auroc([1.0, 0.0], [0.0, 1.0]) == pytest.approx(0.5)
    assert auroc([1.0, 1.0], [0.0, 1.0]) == pytest.approx(0.75)


def test_auroc_matches_mann_whitney_with_ties():
    # roc.py computes the area with scikit-learn (a trapezoid); scipy's Mann-Whitney U (mid-ranks)
    # is an independent computation of the same number
    rng = np.random.default_rng(1)
    pos = np.round(rng.normal(0.7, 1.0, size=301), 1)  # rounding makes many ties
    neg = np.round(rng.normal(0.0, 1.0, size=450), 1)
    expected = mannwhitneyu(pos, neg).statistic / (pos.size * neg.size)
    assert auroc(pos, neg) == pytest.approx(expected, abs=1e-12)
    fpr, tpr = roc_curve(pos, neg)
    assert np.trapezoid(tpr, fpr) == pytest.approx(expected, abs=1e-12)
    assert RocSummary.from_scores(pos, neg).auroc == pytest.approx(expected, abs=1e-12)


def test_roc_curve_exact_points_with_a_mixed_tie():
    fpr, tpr, thr = roc_curve([3.0, 2.0, 1.0], [2.0, 0.0], return_thresholds=True)
    # thresholds +inf, 3, 2 (tie of one positive and one negative: one diagonal step), 1, 0
    np.testing.assert_allclose(thr, [np.inf, 3.0, 2.0, 1.0, 0.0])
    np.testing.assert_allclose(fpr, [0.0, 0.0, 0.5, 0.5, 1.0])
    np.testing.assert_allclose(tpr, [0.0, 1 / 3, 2 / 3, 1.0, 1.0])


def test_tpr_at_fpr_hand_computed():
    pos = [0.9, 0.8, 0.7, 0.3]
    neg = [0.85, 0.6, 0.5, 0.2, 0.1]
    # descending: .9P .85N .8P .7P .6N .5N .3P .2N .1N
    # curve (FP, TP): (0,0) (0,1) (1,1) (1,2) (1,3) (2,3) (3,3) (3,4) (4,4) (5,4)
    assert tpr_at_fpr(pos, neg, 0.0) == 0.25  # only 0.9 above every negative
    assert tpr_at_fpr(pos, neg, 0.19) == 0.25  # 1/5 = 0.2 not yet allowed: conservative
    assert tpr_at_fpr(pos, neg, 0.2) == 0.75  # exactly one false positive
    assert tpr_at_fpr(pos, neg, 0.5) == 0.75
    assert tpr_at_fpr(pos, neg, 0.6) == 1.0
    assert tpr_at_fpr(pos, neg, 1.0) == 1.0


@settings(max_examples=200, deadline=None)
@given(
    pos=st.lists(st.integers(-3, 3), min_size=1, max_size=25),  # few values: many mixed ties
    neg=st.lists(st.integers(-3, 3), min_size=1, max_size=25),
    target=st.sampled_from(["0", "0.001", "0.05", "0.1", "0.2", "0.25", "0.29", "0.5", "0.7", "1"]),
)
# 0.29 * 100 rounds to 28.999... in floating point, yet 29 false positives are allowed
@example(pos=[71, 70, 0], neg=list(range(100)), target="0.29")
def test_roc_matches_its_definition_by_brute_force(pos, neg, target):
    """Every number against its definition, computed pair by pair and threshold by threshold."""
    p, n = np.array(pos, dtype=float), np.array(neg, dtype=float)
    # AUROC: P(S_pos > S_neg) + 1/2 P(S_pos = S_neg) over all pairs
    pairs = [(a > b) + 0.5 * (a == b) for a in pos for b in neg]
    assert auroc(p, n) == pytest.approx(sum(pairs) / len(pairs), abs=1e-12)
    # the curve: the empty rule, then "score >= t" for every distinct score t, highest first
    ts = [np.inf, *sorted(set(pos + neg), reverse=True)]
    fpr, tpr, thr = roc_curve(p, n, return_thresholds=True)
    np.testing.assert_array_equal(thr, ts)
    np.testing.assert_array_equal(fpr, [np.mean(n >= t) for t in ts])
    np.testing.assert_array_equal(tpr, [np.mean(p >= t) for t in ts])
    # TPR at FPR: the best single threshold with at most floor(target * n_neg) false positives,
    # the bound taken in exact arithmetic (no interpolation between thresholds)
    allowed = Fraction(target) * len(neg)
    best = max(np.mean(p >= t) for t in ts if np.sum(n >= t) <= allowed)
    assert tpr_at_fpr(p, n, float(target)) == best


def test_tpr_at_fpr_ties_are_never_split():
    # positive and negative tie at the top: reaching that positive costs the negative too
    assert tpr_at_fpr([5.0, 1.0], [5.0, 0.0, -1.0, -2.0], 0.0) == 0.0
    assert tpr_at_fpr([5.0, 1.0], [5.0, 0.0, -1.0, -2.0], 0.25) == 1.0


def test_roc_summary_fields_downsampling_and_json():
    rng = np.random.default_rng(2)
    pos, neg = rng.normal(1.0, 1.0, 3000), rng.normal(0.0, 1.0, 4000)
    s = summarize_roc(pos, neg)
    assert (s.n_pos, s.n_neg) == (3000, 4000)
    assert s.tpr_at_1pct_fpr == tpr_at_fpr(pos, neg, 0.01)
    assert s.tpr_at_0_1pct_fpr == tpr_at_fpr(pos, neg, 0.001)
    assert 2 <= len(s.fpr) == len(s.tpr) <= 200
    assert (s.fpr[0], s.tpr[0], s.fpr[-1], s.tpr[-1]) == (0.0, 0.0, 1.0, 1.0)
    assert np.all(np.diff(s.fpr) >= 0) and np.all(np.diff(s.tpr) >= 0)
    # kept points are exact curve points, dense at low FPR for log-log plots
    fpr, tpr = roc_curve(pos, neg)
    exact = set(zip(fpr.tolist(), tpr.tolist()))
    assert all(p in exact for p in zip(s.fpr, s.tpr))
    assert sum(f <= 0.01 for f in s.fpr) >= 30
    d = json.loads(json.dumps(s.to_dict()))
    assert d["auroc"] == s.auroc and len(d["curve"]["fpr"]) == len(s.fpr)


@pytest.mark.parametrize(
    "pos, neg, field",
    [
        ([], [1.0], "scores_pos"),
        ([1.0], [np.nan], "scores_neg"),
        ([[1.0, 2.0]], [1.0], "scores_pos"),
        ([1.0], [np.inf], "scores_neg"),
    ],
)
def test_roc_invalid_input_names_the_field(pos, neg, field):
    with pytest.raises(InvalidInput) as err:
        auroc(pos, neg)
    assert err.value.field == field and field in str(err.value)


def test_tpr_at_fpr_rejects_bad_target():
    with pytest.raises(InvalidInput, match="fpr"):
        tpr_at_fpr([1.0], [0.0], 1.5)


# ----------------------------------------------------------------------------------------------
# attack features


def test_attack_features_binary_and_multiclass():
    z = np.array([2.0, -1.0, 0.5])
    y = np.array([1, 1, 0])
    f = attack_features(z, y)
    assert f.shape == (3, 2)
    np.testing.assert_allclose(f[:, 0], z)
    p1 = 1 / (1 + np.exp(-z))
    np.testing.assert_allclose(f[:, 1], -np.log(np.where(y == 1, p1, 1 - p1)))

    zc = np.array([[1.0, 2.0, 3.0], [0.0, 0.0, 5.0]])
    yc = np.array([0, 2])
    fc = attack_features(zc, yc)
    assert fc.shape == (2, 4)
    p = np.exp(zc) / np.exp(zc).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(fc[:, 3], -np.log(p[[0, 1], yc]))
    # the caller's own losses are used when given
    np.testing.assert_allclose(attack_features(zc, yc, [0.1, 0.2])[:, 3], [0.1, 0.2])
    # stable for very confident models
    assert np.all(np.isfinite(attack_features(np.array([800.0, -800.0]), np.array([0, 1]))))


@pytest.mark.parametrize(
    "logits, labels, losses, field",
    [
        ([1.0, np.nan], [0, 1], None, "logits"),
        ([1.0, 2.0], [0, 1, 1], None, "labels"),
        ([1.0, 2.0], [0, 2], None, "labels"),
        ([[1.0, 2.0]], [2], None, "labels"),
        ([1.0, 2.0], [0, 1], [0.1], "losses"),
        ([1.0, 2.0], [0, 1], [0.1, np.nan], "losses"),
        ([[1.0], [2.0]], [0, 1], None, "logits"),
    ],
)
def test_attack_features_invalid(logits, labels, losses, field):
    with pytest.raises(InvalidInput) as err:
        attack_features(logits, labels, losses)
    assert err.value.field == field


# ----------------------------------------------------------------------------------------------
# population MIA


def _population(rng, n_mem, n_non, shift, f=3, n_classes=2):
    ym = rng.integers(0, n_classes, n_mem)
    yn = rng.integers(0, n_classes, n_non)
    xm = rng.normal(size=(n_mem, f)) + shift
    xn = rng.normal(size=(n_non, f))
    return xm, ym, xn, yn


def test_shifted_members_are_detected():
    xm, ym, xn, yn = _population(np.random.default_rng(3), 200, 600, shift=0.6)
    r = population_mia(xm, ym, xn, yn, n_repeats=3)
    assert r.applicable and r.reason is None
    assert r.auroc_mean > 0.75
    assert len(r.fold_aurocs) == 15 and r.auroc_std >= 0
    assert r.n_members == r.n_nonmembers == 200


def test_identical_distributions_give_half():
    xm, ym, xn, yn = _population(np.random.default_rng(4), 200, 400, shift=0.0)
    r = population_mia(xm, ym, xn, yn)
    assert r.applicable and len(r.fold_aurocs) == 50
    assert abs(r.auroc_mean - 0.5) < 0.08


def test_never_scored_on_its_own_training_data():
    # Many noise features, no signal: a logistic regression scored on its own training data
    # looks like a strong attack; scored on held-out folds it is at chance.
    rng = np.random.default_rng(5)
    n, f = 60, 40
    xm, xn = rng.normal(size=(n, f)), rng.normal(size=(n, f))
    y = np.zeros(n, dtype=int)
    x = np.r_[xm, xn]
    member = np.r_[np.ones(n), np.zeros(n)]
    in_sample = LogisticRegression().fit(x, member).decision_function(x)
    assert auroc(in_sample[member == 1], in_sample[member == 0]) > 0.8  # the trap is real
    r = population_mia(xm, y, xn, y, n_repeats=4, standardize=False)
    assert abs(r.auroc_mean - 0.5) < 0.12


def test_class_balancing_subsamples_nonmembers_per_class():
    rng = np.random.default_rng(6)
    ym = np.r_[np.zeros(30, int), np.ones(10, int)]
    yn = np.r_[np.zeros(100, int), np.ones(50, int), np.full(7, 2)]
    xm, xn = rng.normal(size=(40, 2)), rng.normal(size=(157, 2))
    r = population_mia(xm, ym, xn, yn, n_repeats=1)
    assert r.class_counts == {"0": 30, "1": 10}
    assert (r.n_members, r.n_nonmembers) == (40, 40)
    assert (r.n_members_available, r.n_nonmembers_available) == (40, 157)
    assert not r.members_subsampled
    assert r.stratified_by == "membership x class"
    assert any("class(es) absent from the members" in note for note in r.notes)


def test_class_balancing_subsamples_members_when_nonmembers_lack():
    rng = np.random.default_rng(7)
    ym = np.r_[np.zeros(30, int), np.ones(20, int)]
    yn = np.r_[np.zeros(100, int), np.ones(8, int)]
    xm, xn = rng.normal(size=(50, 2)), rng.normal(size=(108, 2))
    r = population_mia(xm, ym, xn, yn, n_repeats=1)
    assert r.members_subsampled
    assert r.class_counts == {"0": 30, "1": 8}
    assert r.n_members == r.n_nonmembers == 38
    assert any("members subsampled" in note for note in r.notes)


def test_class_imbalance_alone_is_not_detected():
    # The label is the only difference: members are mostly class 1, non-members mostly class 0,
    # and the model's logit reveals the class. Balancing removes the shortcut.
    rng = np.random.default_rng(8)
    ym = (rng.random(300) < 0.8).astype(int)
    yn = (rng.random(900) < 0.2).astype(int)
    xm = np.c_[2.0 * ym - 1 + rng.normal(size=300), rng.normal(size=300)]
    xn = np.c_[2.0 * yn - 1 + rng.normal(size=900), rng.normal(size=900)]
    r = population_mia(xm, ym, xn, yn, n_repeats=3)
    assert abs(r.auroc_mean - 0.5) < 0.08


def test_not_applicable_for_one_member_never_raises():
    rng = np.random.default_rng(9)
    r = population_mia(rng.normal(size=(1, 3)), [1], rng.normal(size=(50, 3)), rng.integers(0, 2, 50))
    assert not r.applicable and r.auroc_mean is None and r.auroc_std is None
    assert "1 member" in r.reason and r.fold_aurocs == ()
    json.dumps(r.to_dict())
    # too few non-members of the members' classes after balancing
    r2 = population_mia(
        rng.normal(size=(20, 3)), np.zeros(20, int), rng.normal(size=(50, 3)), np.r_[np.zeros(3, int), np.ones(47, int)]
    )
    assert not r2.applicable and "balancing" in r2.reason
    # no members at all
    assert not population_mia(np.zeros((0, 3)), [], rng.normal(size=(9, 3)), np.zeros(9, int)).applicable


def test_deterministic_given_seed_and_serialisable():
    xm, ym, xn, yn = _population(np.random.default_rng(10), 80, 200, shift=0.3, n_classes=3)
    a = population_mia(xm, ym, xn, yn, n_repeats=2, seed=11)
    b = population_mia(xm, ym, xn, yn, n_repeats=2, seed=11)
    c = population_mia(xm, ym, xn, yn, n_repeats=2, seed=12)
    assert a == b
    assert a.fold_aurocs != c.fold_aurocs
    d = json.loads(json.dumps(a.to_dict()))
    assert d["protocol"]["n_splits"] == 5 and d["applicable"] is True


def test_end_to_end_with_attack_features():
    # members have larger margins (smaller loss) than non-members, as an overfit model would
    rng = np.random.default_rng(12)
    ym, yn = rng.integers(0, 2, 150), rng.integers(0, 2, 400)
    zm = (2 * ym - 1) * rng.normal(3.0, 1.0, 150)
    zn = (2 * yn - 1) * rng.normal(1.0, 1.5, 400)
    r = population_mia(attack_features(zm, ym), ym, attack_features(zn, yn), yn, n_repeats=2)
    assert r.n_features == 2 and r.auroc_mean > 0.7


@pytest.mark.parametrize(
    "kwargs, field",
    [
        (dict(member_features=np.full((10, 2), np.nan)), "member_features"),
        (dict(nonmember_features=np.zeros((20, 3))), "nonmember_features"),
        (dict(member_labels=np.zeros(9, int)), "member_labels"),
        (dict(nonmember_labels=np.zeros((20, 1), int)), "nonmember_labels"),
        (dict(member_features=np.zeros(10)), "member_features"),
        (dict(n_splits=1), "n_splits"),
        (dict(n_repeats=0), "n_repeats"),
        (dict(seed=-1), "seed"),
        (dict(member_labels=np.r_[np.zeros(9), np.nan]), "member_labels"),
    ],
)
def test_population_mia_invalid_input(kwargs, field):
    rng = np.random.default_rng(13)
    args = dict(
        member_features=rng.normal(size=(10, 2)),
        member_labels=np.zeros(10, int),
        nonmember_features=rng.normal(size=(20, 2)),
        nonmember_labels=np.zeros(20, int),
    )
    args.update(kwargs)
    with pytest.raises(InvalidInput) as err:
        population_mia(**args)
    assert err.value.field == field and field in str(err.value)
