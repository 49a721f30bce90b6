"""No false assurance (issue 24, items 2 and 3): the no-op reference (what releasing the original
model at the same sigma would spend) and no bound reported below its own resolution (a ceiling at or
below the certified epsilon is "cannot test", with the size that could)."""

from __future__ import annotations

import math
from types import SimpleNamespace as NS

import pytest

import audit
from attacks.epsilon import strategy_ceiling
from attacks.onerun import one_run_ceiling
from audit import AuditConfig
from audit.attacking import per_attack_confidence
from audit.findings import CODES, certificate_findings, measurement_findings, one_run_findings, verdict_of
from audit.measurements import realized
from audit.onerun import default_guesses, pairs_to_test
from audit.sizing import resolution, smallest_above, trials_to_test
from certify.mechanisms import epsilon_for, sigma_for

DELTA = 1e-5


# -- the no-op reference ----------------------------------------------------------------------------
def test_no_op_epsilon_is_the_gaussian_mechanism_at_the_original_retrained_distance():
    sigma = sigma_for(1.0, DELTA, 0.5)  # the analytic mechanism: distance 0.5 at this sigma is exactly epsilon 1
    r = realized(sigma, DELTA, 0.01, 1.0, 1.0, no_op_distance=0.5)
    assert r.no_op_distance == 0.5 and r.no_op_epsilon == pytest.approx(1.0, rel=1e-6)
    assert r.epsilon == epsilon_for(sigma, DELTA, 0.01, "analytic") < r.no_op_epsilon
    assert realized(sigma, DELTA, 0.01, 1.0, 1.0, no_op_distance=0.25).no_op_epsilon < 1.0
    assert realized(0.0, DELTA, 0.0, 0.0, 1.0, no_op_distance=0.3).no_op_epsilon == math.inf  # exact: no noise
    none = realized(sigma, DELTA, 0.01, 1.0, 1.0)
    assert none.no_op_distance is None and none.no_op_epsilon is None


def _certificate(epsilon=1.0, sigma=0.05):
    return NS(
        kind="output-noise",
        valid=True,
        epsilon=epsilon,
        delta=DELTA,
        sigma=sigma,
        sensitivity=0.01,
        conditional=False,
        method="r2d",
        warnings=[],
        theorem="",
    )


_USEFUL = NS(
    unlearned=NS(test=NS(accuracy=0.8, noisy_accuracy_mean=0.8)),
    retrained=NS(test=NS(accuracy=0.8)),
    test_chance_accuracy=0.5,
    unlearned_vs_retrained=NS(
        accuracy_gap=0.0, p_value=1.0, unlearned_wrong_retrained_right=0, retrained_wrong_unlearned_right=0
    ),
)


@pytest.mark.parametrize("no_op, raised", [(0.0014, True), (1.0, True), (1.0001, False), (None, False)])
def test_the_no_op_finding_appears_iff_the_no_op_is_within_the_certified_epsilon(no_op, raised):
    real = NS(
        no_op_epsilon=no_op,
        no_op_distance=4e-5,
        bound_violated=False,
        exceeds_certified=False,
        distance_unlearned_retrained=2e-6,
        epsilon=1e-5,
    )
    found = certificate_findings(_certificate(), real, _USEFUL)
    assert ("no-op-passes" in [f["code"] for f in found]) is raised
    if raised:
        message = next(f["message"] for f in found if f["code"] == "no-op-passes")
        assert "not unlearning at all would also satisfy epsilon = 1" in message
        assert verdict_of(found) == "consistent"
    assert (CODES["no-op-passes"].severity, CODES["no-op-passes"].verdict) == ("warning", "consistent")


def _attacks(has_power=False, can_test=True, ceiling=5.15, size=None, certified=1.0):
    bound = NS(can_test=can_test, size_to_test=size, ceiling=ceiling)
    return NS(
        attacks={"mia": NS(bound=bound), "whitebox": NS(bound=bound)},
        trials=NS(n_per_world=10),
        positive_control=NS(has_power=has_power, auroc={"mia": 0.51}, best_epsilon_lower=0.0),
        comparison=NS(certified_epsilon=certified, best_empirical_epsilon=0.0, best_attack="mia"),
    )


def test_when_the_noise_alone_hides_the_deletion_it_is_said_instead_of_no_power():
    codes = lambda **kw: [f["code"] for f in measurement_findings(_attacks(), 0.95, **kw)]  # noqa: E731
    assert codes() == ["no-power"]
    assert codes(no_op_passes=True) == []


# -- sizes and ceilings --------------------------------------------------------------------------------
@pytest.mark.parametrize("target", [0.5, 1.0, 3.0])
def test_the_size_to_test_is_the_smallest_trial_count_whose_ceiling_exceeds_the_target(target):
    each = per_attack_confidence(0.95, 4)
    n = trials_to_test(target, DELTA, each, cap=10_000_000)
    assert strategy_ceiling(n, DELTA, each) > target >= strategy_ceiling(n - 1, DELTA, each)
    assert trials_to_test(20.0, DELTA, each, cap=10_000_000) is None  # no count up to the cap reaches it


def test_smallest_above_finds_the_left_end_on_a_ceiling_that_rises_and_falls():
    def peaked(n):  # zero at first, then a peak of 2 at n = 700 (the one-run ceiling's shape)
        return 0.0 if n < 40 else 2.0 * (n / 700) * math.exp(1 - n / 700)

    for target in (0.0, 0.5, 1.9, 1.999):
        found = smallest_above(peaked, target, start=1, cap=100_000)
        assert found == next(n for n in range(1, 100_000) if peaked(n) > target)
    assert smallest_above(peaked, 2.0, start=1, cap=100_000) is None
    assert smallest_above(lambda n: 0.0, 0.0, start=1, cap=4096) is None


def test_the_one_run_design_needs_251_pairs_to_test_epsilon_1():
    """At delta 1e-5 the one-run ceiling is 0.90 at the issue's 200 pairs; 251 is the first that exceeds 1."""

    def ceiling(m):
        return one_run_ceiling(m, sum(default_guesses(m)), DELTA, chained=True)

    assert ceiling(200) == pytest.approx(0.9005, abs=1e-4)
    m = pairs_to_test(1.0, DELTA)
    assert m == 251 and ceiling(m) > 1.0 >= ceiling(m - 1)
    assert resolution(ceiling(200), 1.0, lambda t: pairs_to_test(t, DELTA)) == {"can_test": False, "size_to_test": 251}
    assert resolution(ceiling(300), 1.0, lambda t: 1 / 0) == {"can_test": True, "size_to_test": None}


@pytest.mark.slow  # the search walks past the peak (m up to about 10,000): 3.5 s
def test_no_number_of_canaries_can_test_epsilon_2_in_one_run():
    assert pairs_to_test(1.92, DELTA) is not None and pairs_to_test(2.0, DELTA) is None


def test_a_one_run_audit_below_its_resolution_is_underpowered_never_a_bare_zero():
    one = {
        "m": 200,
        "ceiling": 0.9005,
        "epsilon_lower": 0.0,
        "certified_epsilon": 1.0,
        "can_test": False,
        "size_to_test": 251,
        "violation": False,
    }
    found = one_run_findings(one)
    assert [f["code"] for f in found] == ["underpowered"]
    assert "cannot test epsilon = 1 with 200 canary pairs" in found[0]["message"]
    assert "251 canary pairs could" in found[0]["message"]
    assert one_run_findings({**one, "size_to_test": None})[0]["message"].count("no number of canary pairs can")
    assert one_run_findings({**one, "can_test": True}) == []
    assert (CODES["underpowered"].severity, CODES["underpowered"].verdict) == ("warning", "consistent")


def test_a_one_run_audit_whose_control_proves_nothing_is_flagged_never_a_bare_zero():
    """The one-run positive control (the game's original model, released as the game released the
    unlearned one) decides: below the certified epsilon the game could not have caught a no-op."""
    blind = {
        "m": 1000,
        "inserted": 1000,
        "v": 54,
        "r": 100,
        "ceiling": 1.6576,
        "epsilon_lower": 0.0,
        "certified_epsilon": 1.0,
        "can_test": True,
        "size_to_test": None,
        "violation": False,
        "sigma": 53.1,
        "confidence": 0.95,
        "control": {"v": 54, "r": 100, "epsilon_lower": 0.0, "has_power": False},
    }
    found = one_run_findings(blind)
    assert [f["code"] for f in found] == ["one-run-no-power"]
    assert (
        "could not have caught a deletion that did nothing with 1,000 canary pairs on this model" in found[0]["message"]
    )
    assert "got 54 of 100 guesses right, epsilon >= 0, not above the certified 1" in found[0]["message"]
    code = CODES["one-run-no-power"]
    assert (code.severity, code.verdict, code.vacuous) == ("warning", "consistent", True)
    seeing = {**blind, "control": {**blind["control"], "v": 95, "epsilon_lower": 1.2, "has_power": True}}
    assert one_run_findings(seeing) == []
    # no certificate: the control is judged against 0 (the noop method's own game)
    uncertified = {**blind, "certified_epsilon": None, "violation": None}
    assert "not above the certified" not in one_run_findings(uncertified)[0]["message"]
    # said once: a result below its resolution is underpowered, a violation proves power; a report
    # from before the control has none and is not judged
    assert [f["code"] for f in one_run_findings({**blind, "can_test": False, "size_to_test": 3600})] == ["underpowered"]
    assert [f["code"] for f in one_run_findings({**blind, "violation": True, "epsilon_lower": 1.3})] == [
        "one-run-violation"
    ]
    assert one_run_findings({k: v for k, v in blind.items() if k != "control"}) == []
    # the CLI's one-run row says the same instead of "0 (ceiling 1.658)"
    from audit.cli.show import _one_run_bound

    assert _one_run_bound(blind) == (
        "could not have caught a deletion that did nothing with 1,000 canary pairs on "
        "this model (the original model: 54 of 100 right, epsilon >= 0; ceiling 1.6576)"
    )
    assert _one_run_bound(seeing) == "0 (ceiling 1.6576)"


def test_attacks_below_their_resolution_are_underpowered():
    found = measurement_findings(_attacks(has_power=True, can_test=False, ceiling=0.41, size=19), 0.95)
    assert [f["code"] for f in found] == ["underpowered"]
    assert "mia, whitebox: cannot test epsilon = 1 with 10 trials per world" in found[0]["message"]
    assert "19 trials per world could" in found[0]["message"]
    uncertified = measurement_findings(
        _attacks(has_power=True, can_test=False, ceiling=0.0, size=3, certified=None), 0.95
    )
    assert "cannot measure any epsilon above 0" in uncertified[0]["message"]


# -- one small audit: a planted violation (G 1e-7) at 10 trials and 40 canary pairs -----------------------
@pytest.fixture(scope="module")
def planted():
    return audit.run(
        AuditConfig(
            method="r2d",
            constants={"G": 1e-7},
            trials=10,
            attacks=("whitebox",),
            one_run_canaries=40,
            frontier=(),
            max_train=300,
            forget_count=10,
            noise_draws=2,
            curve_points=2,
            steps=30,
        )
    )


def test_a_planted_violation_at_small_sizes_is_underpowered_or_refuted(planted):
    certified = planted.certificate.epsilon
    bound = planted.attacks.attacks["whitebox"].bound
    each = planted.attacks.trials.per_attack_confidence
    codes = [f.code for f in planted.findings]
    # noise mode: the Clopper-Pearson ceiling (0.598 at 10 trials) cannot reach epsilon 1, the valid GDP
    # bound's (3.12) can, and it refutes the certificate; the attack is not "underpowered" (audit.sizing)
    assert bound.ceiling <= certified < bound.gdp_bound.ceiling
    assert trials_to_test(certified, DELTA, each, cap=10_000_000) > 10
    assert (bound.can_test, bound.size_to_test, bound.test_bound) == (True, None, "gdp-bound")
    assert bound.gdp_bound.epsilon_lower > certified and planted.attacks.comparison.violated_by == "gdp-bound"
    one = planted.one_run
    assert one["can_test"] is False and one["size_to_test"] == 251  # pairs_to_test(1, 1e-5), checked above
    # never a bare lower bound at or below the certificate without the finding that says it cannot test it
    assert one["violation"] or "underpowered" in codes
    assert max(bound.epsilon_lower, bound.gdp_bound.epsilon_lower) > certified or "underpowered" in codes
    assert codes.count("underpowered") == 1 and "realized-exceeds-certified" in codes
    assert "certificate-violated" in codes
    # the no-op reference is in the realized section (the planted sigma is far too small for it)
    real = planted.realized
    assert real.no_op_epsilon == pytest.approx(epsilon_for(planted.certificate.sigma, DELTA, real.no_op_distance))
    assert real.no_op_epsilon > certified and "no-op-passes" not in codes


def test_the_page_and_the_cli_say_cannot_test_with_the_size_that_could(planted):
    from rich.console import Console

    from audit.cli.show import summary
    from audit.comparing import row_of
    from audit.report.html import render_html

    page = render_html(planted)
    # the attack row and the best bound (the Clopper-Pearson bound alone; the GDP bound tests it), the one-run
    assert page.count("cannot test epsilon = 1 at this size") >= 3
    assert page.count("tested by the GDP bound (ceiling 3.122); the Clopper-Pearson bound alone") == 2
    assert 'id="no-op"' in page
    err = Console(record=True, width=200)
    summary(err, planted)
    text = err.export_text()
    assert "cannot test epsilon = 1 at this size" in text and "no-op epsilon" in text
    assert "0.597969 (tested by the GDP bound (ceiling 3.122); the Clopper-Pearson bound alone" in text
    assert f"{planted.one_run['size_to_test']} pairs could" in text
    # the same run had its ceiling reached: its one-run control is recorded, judged by underpowered alone
    assert set(planted.one_run["control"]) == {"v", "r", "epsilon_lower", "has_power"}
    assert "one-run-no-power" not in [f.code for f in planted.findings]
    assert row_of("r2d", planted).no_op_epsilon == planted.realized.no_op_epsilon


@pytest.mark.slow  # the issue's runs on Adult: one-run at 200 pairs, attacks at 50 trials (about 10 s)
def test_the_issues_planted_violation_is_refuted_or_underpowered_never_a_bare_zero():
    common = dict(method="r2d", constants={"G": 1e-7}, frontier=(), noise_draws=2, curve_points=2)
    one = audit.run(AuditConfig(one_run_canaries=200, attacks=(), **common))
    codes = [f.code for f in one.findings]
    assert one.one_run["violation"] or "underpowered" in codes
    assert one.one_run["ceiling"] == pytest.approx(0.9005, abs=1e-4) and one.one_run["size_to_test"] == 251
    # at 1,000 pairs the ceiling (1.66) could test epsilon 1, but not even the game's original model
    # is caught on this 3-parameter model: flagged, never a bare 0
    more = audit.run(AuditConfig(one_run_canaries=1000, attacks=(), **common))
    assert more.one_run["can_test"] and not more.one_run["violation"]
    assert more.one_run["control"]["has_power"] is False and "one-run-no-power" in [f.code for f in more.findings]
    few = audit.run(AuditConfig(trials=50, **common))
    codes = [f.code for f in few.findings]
    assert "certificate-violated" in codes or "underpowered" in codes


@pytest.mark.slow  # two full audits (2.5 s, over the fast lane's budget); the twin: test_onerun's memorising problem
def test_the_noop_method_is_caught_in_one_run_where_the_model_memorises_and_flagged_where_it_cannot():
    common = dict(method="noop", attacks=(), frontier=(), noise_draws=2, curve_points=2)
    digits = audit.run(AuditConfig(dataset="digits", max_train=200, horizon=60.0, one_run_canaries=80, **common))
    one = digits.one_run
    assert one["v"] == one["r"] == 8 and one["control"] == {
        "v": 8,
        "r": 8,
        "epsilon_lower": one["epsilon_lower"],
        "has_power": True,
    }
    assert "one-run-no-power" not in [f.code for f in digits.findings]
    adult = audit.run(AuditConfig(one_run_canaries=1000, **common))
    one = adult.one_run
    assert one["can_test"] and one["epsilon_lower"] == 0.0 and one["control"]["v"] == one["v"]
    assert "one-run-no-power" in [f.code for f in adult.findings]
