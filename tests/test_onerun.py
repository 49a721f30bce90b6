"""One-run auditing: the estimator of Steinke et al. 2023 (attacks.onerun) and the deletion game
(audit.onerun)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch
from scipy.special import expit
from scipy.stats import binom

from attacks.onerun import (
    gaussian_epsilon,
    gaussian_mechanism_lower_bounds,
    one_run_bound,
    one_run_ceiling,
    one_run_epsilon,
    one_run_guesses,
    one_run_p_value,
)
from audit.findings import one_run_findings
from audit.onerun import ROLES, OneRunControl, default_guesses, mislabel, one_run_audit
from certify.certificate import Bound, issue
from certify.errors import InvalidInput
from unlearners.finetune import GradientDescentBaseline
from unlearners.models import build_model
from unlearners.objective import Objective, default_init
from unlearners.r2d import RewindToDelete
from unlearners.retrain import Retrain

from synthetic import synthetic

# ----------------------------------------------------------------------------------------------
# the estimator


def _naive_p_value(m, r, v, eps, delta):
    """The p-value written out term by term (the formula of anchors-auditing.md §2.5)."""
    q = math.exp(eps) / (1 + math.exp(eps))
    first = sum(binom.pmf(j, r, q) for j in range(v, r + 1))
    worst = max((sum(binom.pmf(j, r, q) for j in range(v - i, v)) / i for i in range(1, v + 1)), default=0.0)
    return min(1.0, first + 2 * m * delta * worst)


# anchors-auditing.md §2.5, "Ceiling with all r guesses correct" (alpha = 0.05)
CEILINGS = [
    (1_000, 100, 3.49, 3.47),
    (1_000, 1_000, 5.81, 5.78),
    (10_000, 1_000, 5.81, 5.53),
    (10_000, 10_000, 8.11, 7.83),
    (100_000, 1_000, 5.81, 3.49),
]


@pytest.mark.parametrize("m, r, at_zero, at_1e5", CEILINGS)
def test_ceiling_reproduces_the_anchor_table(m, r, at_zero, at_1e5):
    assert round(one_run_ceiling(m, r, 0.0), 2) == at_zero
    assert round(one_run_ceiling(m, r, 1e-5), 2) == at_1e5
    assert one_run_ceiling(m, r, 1e-5) == one_run_epsilon(m, r, r, 1e-5)


@pytest.mark.parametrize(
    "m, r, v, eps, delta",
    [
        (100, 20, 15, 0.5, 1e-5),
        (1000, 100, 80, 1.3, 1e-3),
        (50, 50, 50, 3.0, 1e-2),
        (10, 4, 0, 1.0, 0.1),
        (1000, 30, 1, 0.0, 1e-5),
        (200, 40, 40, 10.0, 1e-5),
    ],
)
def test_p_value_matches_the_formula_term_by_term(m, r, v, eps, delta):
    expected = _naive_p_value(m, r, v, eps, delta)
    assert one_run_p_value(m, r, v, eps, delta) == pytest.approx(expected, rel=1e-9, abs=1e-15)


def test_p_value_without_delta_is_the_binomial_tail():
    for v in (0, 10, 55, 100):
        assert one_run_p_value(500, 100, v, 0.7, 0.0) == pytest.approx(binom.sf(v - 1, 100, expit(0.7)), rel=1e-12)
    assert one_run_p_value(500, 100, 0, 5.0, 1e-5) == 1.0
    assert one_run_p_value(10**9, 100, 60, 0.1, 0.5) == 1.0  # capped


def test_bound_is_where_the_p_value_crosses_alpha():
    for chained in (False, True):
        eps = one_run_epsilon(1000, 200, 170, 1e-5, confidence=0.9, chained=chained)
        assert eps > 0
        e_pair, d_pair = (2 * eps, (1 + math.exp(eps)) * 1e-5) if chained else (eps, 1e-5)
        assert one_run_p_value(1000, 200, 170, e_pair, d_pair) == pytest.approx(0.1, rel=1e-8)


def test_bound_grows_with_correct_guesses():
    bounds = [one_run_epsilon(1000, 100, v, 1e-5) for v in range(40, 101)]
    assert all(b <= c for b, c in zip(bounds, bounds[1:]))
    assert bounds[0] == 0.0 and bounds[-1] == pytest.approx(3.465, abs=5e-3)
    assert bounds[-1] > bounds[-10] > bounds[-20] > 0


def test_bound_shrinks_as_the_delta_term_grows_with_m_and_delta():
    by_m = [one_run_epsilon(m, 1000, 950, 1e-5) for m in (1_000, 10_000, 100_000, 1_000_000)]
    assert all(a > b for a, b in zip(by_m, by_m[1:]))
    assert len({one_run_epsilon(m, 1000, 950, 0.0) for m in (1_000, 10_000, 100_000)}) == 1  # no delta: no m
    by_delta = [one_run_epsilon(10_000, 1000, 950, d) for d in (0.0, 1e-7, 1e-5, 1e-3)]
    assert all(a > b for a, b in zip(by_delta, by_delta[1:]))


def test_bound_shrinks_with_confidence_and_chaining():
    assert one_run_epsilon(1000, 100, 90, 1e-5, confidence=0.99) < one_run_epsilon(1000, 100, 90, 1e-5)
    plain = one_run_epsilon(1000, 100, 90, 1e-5)
    chained = one_run_epsilon(1000, 100, 90, 1e-5, chained=True)
    assert 0 < chained <= plain / 2  # the pair's delta (1 + e^eps) delta only costs more


def test_p_value_is_monotone_in_epsilon_on_a_scan():
    grid = np.linspace(0, 12, 241)
    for m, r, v, delta in [(1000, 100, 70, 1e-5), (100_000, 1000, 900, 1e-5), (100, 100, 90, 1e-2)]:
        p = [one_run_p_value(m, r, v, e, delta) for e in grid]
        assert all(a <= b + 1e-15 for a, b in zip(p, p[1:]))


def test_guesses_take_the_top_and_bottom_and_break_ties_by_seed():
    scores = np.array([0.3, 5.0, -2.0, 1.0, 1.0, 1.0, -7.0])
    t = one_run_guesses(scores, 2, 2)
    assert t.tolist().count(1) == 2 and t.tolist().count(-1) == 2
    assert t[1] == 1 and t[6] == -1 and t[2] == -1
    assert sum(t[3:6] == 1) == 1  # one of the three tied scores, chosen by the tie key
    picks = {tuple(one_run_guesses(scores, 2, 2, tie_seed=s)) for s in range(20)}
    assert len(picks) == 3  # every tied canary gets picked by some seed
    assert np.array_equal(one_run_guesses(scores, 2, 2, tie_seed=4), one_run_guesses(scores, 2, 2, tie_seed=4))
    assert one_run_guesses(scores, 0, 3).tolist().count(1) == 0


def test_bound_from_scores_counts_correct_guesses():
    secrets = np.array([1, 1, -1, -1, 1, -1, 1, -1])
    scores = np.array([9.0, 8.0, -9.0, -8.0, 0.1, 0.2, -0.3, 7.0])
    b = one_run_bound(scores, secrets, k_plus=2, k_minus=2, delta=0.0)
    assert (b.r, b.v, b.rule, b.level) == (4, 4, "pre-registered", pytest.approx(0.05))
    assert b.epsilon_lower == pytest.approx(one_run_epsilon(8, 4, 4, 0.0))
    b3 = one_run_bound(scores, secrets, k_plus=3, k_minus=2, delta=0.0)
    assert b3.v == 4  # canary 7 (score 7, secret -1) is the third + guess


def test_bonferroni_grid_tests_each_pair_at_alpha_over_g():
    rng = np.random.default_rng(0)
    secrets = np.where(rng.random(2000) < 0.5, 1, -1)
    scores = secrets * 1.5 + rng.standard_normal(2000)
    grid = [(10, 10), (50, 50), (200, 0)]
    b = one_run_bound(scores, secrets, grid=grid, delta=1e-5, confidence=0.95)
    assert b.rule == "bonferroni" and b.level == pytest.approx(0.05 / 3) and b.confidence == pytest.approx(0.95)
    for _kp, _km, r, v, eps in b.candidates:
        assert eps == pytest.approx(one_run_epsilon(2000, r, v, 1e-5, confidence=1 - 0.05 / 3))
    assert b.epsilon_lower == max(c[4] for c in b.candidates)
    single = one_run_bound(scores, secrets, k_plus=b.k_plus, k_minus=b.k_minus, delta=1e-5)
    assert single.epsilon_lower >= b.epsilon_lower  # the correction costs
    json.dumps(b.to_dict())


def test_estimator_refuses_bad_input_naming_the_field():
    cases = [
        (lambda: one_run_epsilon(10, 11, 5, 1e-5), "r"),
        (lambda: one_run_epsilon(10, 5, 6, 1e-5), "v"),
        (lambda: one_run_epsilon(0, 1, 1, 1e-5), "m"),
        (lambda: one_run_epsilon(10, 5, 5, 1.0), "delta"),
        (lambda: one_run_epsilon(10, 5, 5, 1e-5, confidence=1.0), "confidence"),
        (lambda: one_run_p_value(10, 5, 5, -1.0, 1e-5), "epsilon"),
        (lambda: one_run_bound([1.0, np.nan], [1, -1], k_plus=1, k_minus=0, delta=0.0), "scores"),
        (lambda: one_run_bound([1.0, 2.0], [1, 0], k_plus=1, k_minus=0, delta=0.0), "secrets"),
        (lambda: one_run_bound([1.0, 2.0], [1, -1], k_plus=2, k_minus=1, delta=0.0), "k_plus, k_minus"),
        (lambda: one_run_bound([1.0, 2.0], [1, -1], delta=0.0), "k_plus, k_minus"),
        (lambda: one_run_bound([1.0, 2.0], [1, -1], k_plus=1, k_minus=0, grid=[(1, 0)], delta=0.0), "grid"),
        (lambda: one_run_bound([1.0, 2.0], [1, -1], grid=[(1, 0), (1, 0)], delta=0.0), "grid"),
        (lambda: one_run_guesses([1.0, 2.0], -1, 1), "k_plus"),
    ]
    for call, field in cases:
        with pytest.raises(InvalidInput) as err:
            call()
        assert err.value.field == field, (field, err.value)


# -- the self-test on a Gaussian mechanism whose epsilon is known --------------------------------


@pytest.mark.parametrize("m, eps, k", [(1000, 1.0, 5), (1000, 4.0, 25), (200, 0.5, 10)])
def test_gaussian_mechanism_bound_is_valid(m, eps, k):
    assert gaussian_epsilon(eps, 1e-5) == pytest.approx(eps, rel=1e-9)
    bounds = gaussian_mechanism_lower_bounds(m, eps, 1e-5, k_plus=k, k_minus=k, repetitions=300, seed=11)
    assert np.mean(bounds <= eps) >= 0.95
    assert bounds.max() < 2 * eps


def test_gaussian_mechanism_bound_has_power_at_m_1000():
    bounds = gaussian_mechanism_lower_bounds(1000, 4.0, 1e-5, k_plus=25, k_minus=25, repetitions=100, seed=3)
    assert np.all(bounds <= 4.0)
    assert 0.3 < bounds.mean() / 4.0 < 0.5  # measured 0.39 (anchors-auditing.md: about half at best)


def test_choosing_the_guess_count_after_seeing_the_labels_is_what_bonferroni_prevents():
    """On a 0.5-DP Gaussian mechanism, the best of 8 pairs each at level alpha exceeds the truth
    more often than the Bonferroni-corrected maximum (measured over 1 000 repetitions: 2.5 %
    against 0.2 %). The uncorrected rate stays under 5 % here only because the bound is
    conservative, which is luck, not a guarantee (anchors-auditing.md §2.12, pitfall 1)."""
    from functools import lru_cache

    from certify.mechanisms import sigma_for

    eps, m, reps = 0.5, 400, 300
    sigma = sigma_for(eps, 1e-5, 2.0)
    grid = [(k, k) for k in (1, 2, 3, 5, 8, 12, 20, 40)]
    bound = lru_cache(maxsize=None)(lambda r, v, conf: one_run_epsilon(m, r, v, 1e-5, confidence=conf))
    raw = corrected = 0
    for j in range(reps):
        rng = np.random.default_rng(np.random.SeedSequence(5, spawn_key=(j,)))
        secrets = np.where(rng.random(m) < 0.5, 1, -1)
        scores = secrets + sigma * rng.standard_normal(m)
        counts = [(2 * k, int(np.sum(one_run_guesses(scores, k, k) * secrets == 1))) for k, _ in grid]
        raw += max(bound(r, v, 0.95) for r, v in counts) > eps
        corrected += max(bound(r, v, 1 - 0.05 / len(grid)) for r, v in counts) > eps
    assert corrected / reps <= 0.05
    assert raw > corrected


@pytest.mark.slow
@pytest.mark.parametrize("m, k, low, high", [(1000, 25, 0.3, 0.45), (10_000, 250, 0.45, 0.55)])
def test_gaussian_mechanism_validity_and_tightness_large(m, k, low, high):
    """Measured (1000 / 200 repetitions, eps_true = 4, delta = 1e-5): never above the truth;
    mean eps_LB / eps_true 0.39 at m = 1 000 (k = 25 + 25) and 0.51 at m = 10 000 (k = 250 + 250)."""
    reps = 1000 if m == 1000 else 200
    bounds = gaussian_mechanism_lower_bounds(m, 4.0, 1e-5, k_plus=k, k_minus=k, repetitions=reps, seed=21)
    assert np.mean(bounds <= 4.0) >= 0.95
    assert low < bounds.mean() / 4.0 < high
    small = gaussian_mechanism_lower_bounds(m, 1.0, 1e-5, k_plus=5, k_minus=5, repetitions=reps, seed=22)
    assert np.mean(small <= 1.0) >= 0.95


# ----------------------------------------------------------------------------------------------
# the deletion game


class NoOp(GradientDescentBaseline):
    """Unlearning that returns the trained model (uncertified)."""

    name = "noop-test"
    title = "no-op (test)"
    paper = "test fixture"

    def _unlearn(self, forget):
        return self.theta_.clone()


class ClaimedNoOp(NoOp):
    """A no-op that claims an output-noise certificate from a sensitivity bound ``claimed``."""

    name = "claimed-noop-test"
    certified = True
    claimed = 1.0

    def _certify(self, forget, epsilon, delta, mechanism):
        return issue(
            self.name,
            "output-noise",
            epsilon=epsilon,
            delta=delta,
            mechanism=mechanism,
            bound=Bound(self.claimed, "claimed sensitivity (test fixture)"),
        )


def _memorising_problem(m=100, n=200, d0=5, seed=0):
    """Logistic regression that memorises: D lives in d0 coordinates, canary c is the unit
    vector of its own coordinate with a random label, so only a model trained on c predicts it."""
    X0, y = synthetic(n=n, d=d0, seed=seed)
    d = d0 + 2 * m
    X = torch.zeros(n, d, dtype=torch.float64)
    X[:, :d0] = X0
    cX = torch.zeros(2 * m, d, dtype=torch.float64)
    cX[torch.arange(2 * m), d0 + torch.arange(2 * m)] = 1.0
    cy = torch.randint(0, 2, (2 * m,), generator=torch.Generator().manual_seed(seed + 1))
    objective = Objective(build_model("logreg", d, 2).double())
    return objective, X, y, cX, cy


@pytest.fixture(scope="module")
def problem():
    return _memorising_problem()


def _audit(cls, problem, seed=1, horizon=50.0, **kw):
    objective, X, y, cX, cy = problem
    options = {k: kw.pop(k) for k in ("rewind",) if k in kw}
    method = cls(objective, steps=100, horizon=horizon, **options)
    kw = {"k_plus": 20, "k_minus": 20, **kw}
    return one_run_audit(
        method, X, y, cX, cy, lambda g: default_init(objective, g), epsilon=1.0, delta=1e-5, seed=seed, **kw
    )


def test_retrain_gives_no_bound(problem):
    """Exact unlearning: the release is A(D) whatever the secrets, so eps_LB > 0 has probability
    <= 5 % per seed."""
    results = [_audit(Retrain, problem, seed=s) for s in range(4)]
    assert sum(r.epsilon_lower > 0 for r in results) <= 1
    first = results[0]
    assert first.certificate_kind == "exact" and first.sigma == 0.0 and first.certified_epsilon == 0.0
    assert first.violation is (first.epsilon_lower > 0) and first.covers_all_assignments is True
    assert (first.m, first.canaries, first.inserted, first.r) == (100, 200, 100, 40)
    assert first.ceiling == pytest.approx(one_run_ceiling(100, 40, 1e-5, chained=True))


def test_no_op_on_a_memorising_model_reaches_the_ceiling(problem):
    result = _audit(NoOp, problem)
    assert result.v == result.r == 40
    assert result.epsilon_lower == pytest.approx(result.ceiling) and result.epsilon_lower > 1.2
    assert result.epsilon_lower_pair == pytest.approx(2 * result.epsilon_lower)
    assert result.delta_pair == pytest.approx((1 + math.exp(result.epsilon_lower)) * 1e-5)
    assert result.certificate_kind == "none" and result.certified_epsilon is None and result.violation is None
    assert "no certificate" in result.note
    # a no-op's original model is its release: the control is the game itself (same draws)
    assert result.control == OneRunControl(v=40, r=40, epsilon_lower=result.epsilon_lower, has_power=True)


def test_no_op_at_the_default_horizon_barely_memorises(problem):
    """The default horizon (6) fits too little for one run to see the canaries: a first pass
    that finds nothing says little about a model that does not memorise."""
    assert _audit(NoOp, problem, horizon=6.0).epsilon_lower < 0.2


def test_a_grossly_understated_certificate_is_refuted(problem):
    """The no-op moves the model by about 1.9 in L2; a certificate claiming 0.01 is refuted, and
    R2D at rewind 0 (also the original model, with its true bound) is not."""
    ClaimedNoOp.claimed = 0.01
    refuted = _audit(ClaimedNoOp, problem)
    assert refuted.certificate_kind == "output-noise" and refuted.sigma > 0
    assert refuted.violation is True and refuted.epsilon_lower > refuted.certified_epsilon
    assert refuted.covers_all_assignments is True
    honest = _audit(RewindToDelete, problem, rewind=0)
    assert honest.violation is False and honest.epsilon_lower == 0.0
    # the control releases the same original model with the same noise draw as the no-op: it catches
    # the understated certificate, while the honest sigma hides even a deletion that did nothing
    assert (refuted.control.v, refuted.control.epsilon_lower) == (refuted.v, refuted.epsilon_lower)
    assert refuted.control.has_power and [f["code"] for f in one_run_findings(refuted.to_dict())] == [
        "one-run-violation"
    ]
    assert honest.control.has_power is False and honest.control.epsilon_lower <= 1.0
    assert [f["code"] for f in one_run_findings(honest.to_dict())] == ["one-run-no-power"]


def test_the_control_catches_a_no_op_where_the_model_memorises_and_only_there(problem):
    """Exact unlearning on a model that memorises: the unlearned release proves nothing, the game's
    original model (trained with the canaries) is caught beyond the certified epsilon, so the 0 is
    evidence. At the default horizon the same model barely memorises: the control proves nothing
    beyond epsilon 1 and the 0 is flagged one-run-no-power (its ceiling could test epsilon 1)."""
    sees = _audit(Retrain, problem)
    assert sees.epsilon_lower == 0.0 and sees.control.v == sees.control.r == 40
    assert sees.control.epsilon_lower == pytest.approx(sees.ceiling) and sees.control.has_power
    assert one_run_findings(sees.to_dict()) == [] and sees.to_dict()["control"]["has_power"] is True
    blind = _audit(Retrain, problem, horizon=6.0)
    assert blind.can_test and blind.ceiling > 1.0 and blind.control.epsilon_lower < 1.0
    assert blind.control.has_power is False
    found = one_run_findings(blind.to_dict())
    assert [f["code"] for f in found] == ["one-run-no-power"]
    assert f"got {blind.control.v} of 40 guesses right" in found[0]["message"]
    assert "could not have caught a deletion that did nothing with 100 canary pairs" in found[0]["message"]


def test_bonferroni_grid_and_independent_design(problem):
    grid = [(5, 5), (20, 20), (50, 50)]
    result = _audit(NoOp, problem, grid=grid, k_plus=None, k_minus=None)
    assert result.rule == "bonferroni" and result.bound.level == pytest.approx(0.05 / 3)
    objective, X, y, cX, cy = problem
    method = NoOp(objective, steps=100, horizon=50.0)
    indep = one_run_audit(
        method,
        X,
        y,
        cX,
        cy,
        lambda g: default_init(objective, g),
        epsilon=1.0,
        delta=1e-5,
        design="independent",
        k_plus=40,
        k_minus=40,
        seed=2,
    )
    assert indep.m == indep.canaries == 200 and 70 < indep.inserted < 130
    assert indep.epsilon_lower > 1.0
    ClaimedNoOp.claimed = 0.01
    claimed = one_run_audit(
        ClaimedNoOp(objective, steps=100, horizon=50.0),
        X,
        y,
        cX,
        cy,
        lambda g: default_init(objective, g),
        epsilon=1.0,
        delta=1e-5,
        design="independent",
        k_plus=40,
        k_minus=40,
        seed=2,
    )
    assert claimed.covers_all_assignments is False and "independent design" in claimed.note


def test_game_is_a_pure_function_of_its_seed(problem):
    a, b = _audit(NoOp, problem, seed=7, horizon=6.0), _audit(NoOp, problem, seed=7, horizon=6.0)
    assert a.to_dict() == b.to_dict()
    c = _audit(NoOp, problem, seed=8, horizon=6.0)
    assert a.bound.candidates != c.bound.candidates or a.v != c.v
    secrets = np.random.default_rng(np.random.SeedSequence(7, spawn_key=(ROLES["secrets"],))).random(100) < 0.5
    prefix = np.random.default_rng(np.random.SeedSequence(7, spawn_key=(ROLES["secrets"],))).random(40) < 0.5
    assert np.array_equal(secrets[:40], prefix)
    json.dumps(a.to_dict())
    with pytest.raises(AttributeError):
        a.v = 3  # frozen


def test_a_fitted_method_pins_its_data_chosen_options(problem):
    objective, X, y, cX, cy = problem
    method = Retrain(objective, steps=100, horizon=50.0)
    method.fit(X, y, default_init(objective, torch.Generator().manual_seed(0)))
    result = one_run_audit(
        method, X, y, cX, cy, lambda g: default_init(objective, g), epsilon=1.0, delta=1e-5, k_plus=20, k_minus=20
    )
    assert result.pinned_options == ("eta",) and "reused: eta" in result.note
    assert "not fitted" in _audit(Retrain, problem).note


def test_defaults_and_mislabel():
    assert default_guesses(100) == (5, 5) and default_guesses(1000) == (50, 50) and default_guesses(1) == (1, 0)
    y = torch.randint(0, 4, (50,), generator=torch.Generator().manual_seed(0))
    wrong = mislabel(y, 4, seed=3)
    assert torch.all(wrong != y) and torch.all((wrong >= 0) & (wrong < 4))
    assert torch.equal(wrong, mislabel(y, 4, seed=3))
    assert torch.equal(mislabel(torch.tensor([0, 1, 1]), 2, seed=0), torch.tensor([1, 0, 0]))


def test_game_refuses_bad_input_naming_the_field(problem):
    objective, X, y, cX, cy = problem
    init = lambda g: default_init(objective, g)  # noqa: E731
    method = Retrain(objective, steps=5)
    base = dict(epsilon=1.0, delta=1e-5, k_plus=2, k_minus=2)
    cases = [
        (dict(canaries_X=cX[:3], canaries_y=cy[:3]), {}, "canaries_X"),
        (dict(canaries_X=cX[:, :-1]), {}, "canaries_X"),
        (dict(canaries_y=cy[:-2]), {}, "canaries_y"),
        (dict(canaries_y=cy + 1), {}, "canaries_y"),
        (dict(canaries_y=cy.double()), {}, "canaries_y"),
        (dict(X=X[:, :-1]), {}, "canaries_X"),
        ({}, dict(k_plus=80, k_minus=30), "k_plus, k_minus"),
        ({}, dict(k_plus=3, k_minus=None), "k_plus, k_minus"),
        ({}, dict(grid=[(1, 1)]), "grid"),
        ({}, dict(design="shuffled"), "design"),
        ({}, dict(confidence=1.5), "confidence"),
        ({}, dict(delta=0.0), "delta"),
        ({}, dict(epsilon=-1.0), "epsilon"),
        ({}, dict(mechanism="laplace"), "mechanism"),
        ({}, dict(seed=-1), "seed"),
        (dict(init="zeros"), {}, "init"),
        (dict(method="retrain"), {}, "method"),
    ]
    for data, options, field in cases:
        args = {**dict(method=method, X=X, y=y, canaries_X=cX, canaries_y=cy, init=init), **data}
        with pytest.raises(InvalidInput) as err:
            one_run_audit(
                args["method"],
                args["X"],
                args["y"],
                args["canaries_X"],
                args["canaries_y"],
                args["init"],
                **{**base, **options},
            )
        assert err.value.field == field, (field, err.value)
    with pytest.raises(InvalidInput) as err:
        mislabel(torch.tensor([0.5]), 2, 0)
    assert err.value.field == "y"
