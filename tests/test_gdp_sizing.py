"""What an attack can test, decided by its valid bounds: in noise mode the GDP bound's ceiling counts
too (it is a bound there), elsewhere the Clopper-Pearson one alone (the GDP number is an estimate)."""

from __future__ import annotations

from types import SimpleNamespace as NS
from typing import ClassVar

import numpy as np
import pytest

from attacks.epsilon import strategy_ceiling
from attacks.gdp import gdp_bound, gdp_ceiling
from audit.attacking import MAX_TRIALS, _result, per_attack_confidence
from audit.cli.show import _bound
from audit.findings import measurement_findings
from audit.report.html import _resolution_note
from audit.sizing import attack_resolution, gdp_trials_to_test, trials_to_test

DELTA = 1e-5
EACH = per_attack_confidence(0.95, 4)


def _separated(n: int):
    """A perfectly separating attack's GDP bound at n trials per world (every trial says its world)."""
    return gdp_bound(np.ones(n), np.zeros(n), DELTA, gaussian_release=True, confidence=EACH)


@pytest.mark.parametrize("target", [0.5, 3.0, 10.0, 30.0])
def test_at_the_predicted_size_the_gdp_bound_on_separated_scores_reaches_the_target_and_one_below_does_not(target):
    n = gdp_trials_to_test(target, DELTA, EACH, cap=MAX_TRIALS)
    assert n is not None
    assert _separated(n).epsilon_lower > target >= _separated(n - 1).epsilon_lower
    assert _separated(n).ceiling == pytest.approx(gdp_ceiling(n, DELTA, EACH), rel=1e-12)


def test_the_gdp_ceiling_is_far_above_the_clopper_pearson_one():
    # the numbers the docs quote: 300 trials per world, one attack (0.975) and four (0.99375)
    assert round(gdp_ceiling(300, DELTA, 0.975), 1) == 27.5 and round(strategy_ceiling(300, DELTA, 0.975), 2) == 4.22
    assert gdp_ceiling(300, DELTA, EACH) > 6 * strategy_ceiling(300, DELTA, EACH)
    # epsilon 10 needs 34 trials per world by the GDP bound, 127,060 by Clopper-Pearson
    assert gdp_trials_to_test(10.0, DELTA, EACH, cap=MAX_TRIALS) == 34
    assert trials_to_test(10.0, DELTA, EACH, cap=MAX_TRIALS) == 127_060


def test_noise_mode_can_test_with_the_gdp_bound_where_clopper_pearson_cannot():
    cp, gdp = strategy_ceiling(300, DELTA, EACH), gdp_ceiling(300, DELTA, EACH)  # 3.94, 25.6
    assert attack_resolution(cp, gdp, 8.0, DELTA, EACH, cap=MAX_TRIALS) == {
        "can_test": True,
        "size_to_test": None,
        "test_bound": "gdp-bound",
    }
    # the same attack outside noise mode: the GDP number is an estimate and decides nothing
    alone = attack_resolution(cp, None, 8.0, DELTA, EACH, cap=MAX_TRIALS)
    assert alone == {
        "can_test": False,
        "size_to_test": trials_to_test(8.0, DELTA, EACH, cap=MAX_TRIALS),
        "test_bound": "clopper-pearson",
    }
    # both can: Clopper-Pearson is named (valid everywhere); the GDP bound only where it alone can
    assert attack_resolution(cp, gdp, 1.0, DELTA, EACH, cap=MAX_TRIALS)["test_bound"] == "clopper-pearson"
    assert attack_resolution(cp, None, 1.0, DELTA, EACH, cap=MAX_TRIALS)["test_bound"] == "clopper-pearson"
    assert attack_resolution(cp, gdp, 0.0, DELTA, EACH, cap=MAX_TRIALS)["test_bound"] == "clopper-pearson"


def test_when_neither_bound_can_the_size_is_the_smaller_and_names_its_bound():
    cp, gdp = strategy_ceiling(300, DELTA, EACH), gdp_ceiling(300, DELTA, EACH)
    out = attack_resolution(cp, gdp, 30.0, DELTA, EACH, cap=MAX_TRIALS)
    assert out == {
        "can_test": False,
        "size_to_test": gdp_trials_to_test(30.0, DELTA, EACH, cap=MAX_TRIALS),
        "test_bound": "gdp-bound",
    }
    assert gdp_ceiling(out["size_to_test"], DELTA, EACH) > 30.0
    assert trials_to_test(30.0, DELTA, EACH, cap=MAX_TRIALS) is None  # Clopper-Pearson never could
    assert attack_resolution(cp, gdp, 30.0, DELTA, EACH, cap=500) == {  # 578 could
        "can_test": False,
        "size_to_test": None,
        "test_bound": "gdp-bound",
    }


class _Attack:
    title: ClassVar[str] = "t"
    description: ClassVar[str] = "d"
    orientation: ClassVar[str] = "worlds"


@pytest.mark.parametrize("gaussian_release", [True, False])
def test_an_attack_section_decides_with_its_valid_bounds_only(gaussian_release):
    """The audit's own section builder at 100 trials per world, certified epsilon 5: the CP ceiling
    (2.82) cannot reach it; in noise mode the GDP bound's (18.0) can, elsewhere it is an estimate."""
    rng = np.random.default_rng(0)
    su, sr = rng.normal(3.0, 1.0, 100), rng.normal(0.0, 1.0, 100)
    r = _result(
        _Attack, su, sr, {}, delta=DELTA, confidence=EACH, seed=1, target=5.0, gaussian_release=gaussian_release
    )
    assert r.bound.ceiling < 5.0
    if gaussian_release:
        assert r.bound.gdp_bound.kind == "bound" and r.bound.gdp_bound.ceiling > 5.0
        assert (r.bound.can_test, r.bound.size_to_test, r.bound.test_bound) == (True, None, "gdp-bound")
    else:
        assert r.bound.gdp_bound is None
        size = trials_to_test(5.0, DELTA, EACH, cap=MAX_TRIALS)
        assert (r.bound.can_test, r.bound.size_to_test, r.bound.test_bound) == (False, size, "clopper-pearson")
    # epsilon 1 is within the Clopper-Pearson ceiling: that bound decides in every mode
    r = _result(
        _Attack, su, sr, {}, delta=DELTA, confidence=EACH, seed=1, target=1.0, gaussian_release=gaussian_release
    )
    assert (r.bound.can_test, r.bound.size_to_test, r.bound.test_bound) == (True, None, "clopper-pearson")


def _attacks(bound, certified=40.0):
    return NS(
        attacks={"mia": NS(bound=bound, estimates=None)},
        trials=NS(n_per_world=1000),
        positive_control=NS(has_power=True, auroc={"mia": 1.0}, best_epsilon_lower=5.0),
        comparison=NS(certified_epsilon=certified, best_empirical_epsilon=0.0, best_attack="mia"),
    )


def test_the_underpowered_finding_names_both_bounds_in_noise_mode_and_only_clopper_pearson_elsewhere():
    gdp = NS(kind="bound", ceiling=33.6)
    noise = NS(can_test=False, size_to_test=1530, ceiling=5.15, test_bound="gdp-bound", gdp_bound=gdp)
    (found,) = measurement_findings(_attacks(noise), 0.95)
    assert found["code"] == "underpowered"
    assert found["message"] == (
        "mia: cannot test epsilon = 40 with 1000 trials per world by either bound (ceilings: Clopper-Pearson "
        "5.15, GDP bound 33.6: no bound they give can exceed it); 1,530 trials per world could (--trials 1530), "
        "with the GDP bound"
    )
    retrain = NS(can_test=False, size_to_test=None, ceiling=5.15, test_bound="clopper-pearson", gdp_bound=None)
    (found,) = measurement_findings(_attacks(retrain), 0.95)
    assert "GDP" not in found["message"] and "either" not in found["message"]
    assert "(ceiling 5.15: no bound they give can exceed it); no trial count" in found["message"]
    tested = NS(can_test=True, size_to_test=None, ceiling=5.15, test_bound="gdp-bound", gdp_bound=gdp)
    assert measurement_findings(_attacks(tested), 0.95) == []


def test_the_page_and_the_cli_say_which_bound_decided():
    gdp = {"kind": "bound", "ceiling": 33.6}
    tested = {"can_test": True, "test_bound": "gdp-bound", "ceiling": 5.15, "gdp_bound": gdp}
    assert _resolution_note(tested, 8.0) == (
        "tested by the GDP bound (ceiling 33.6); the Clopper-Pearson bound alone cannot test epsilon = 8 at this "
        "size (ceiling 5.15)"
    )
    weak = {"can_test": False, "size_to_test": 1530, "test_bound": "gdp-bound", "ceiling": 5.15, "gdp_bound": gdp}
    assert _resolution_note(weak, 40.0) == "with either bound; 1,530 trials per world could with the GDP bound"
    retrain = {"can_test": False, "size_to_test": 3000, "ceiling": 5.15, "gdp_bound": None}
    assert _resolution_note(retrain, 8.0) == "3,000 trials per world could"
    assert _resolution_note({"can_test": True, "test_bound": "clopper-pearson", "ceiling": 9.0}, 8.0) is None
    cli = _bound(0.0, 5.15, False, 1530, 40.0, "trials/world", NS(ceiling=33.6), "gdp-bound")
    assert cli == (
        "cannot test epsilon = 40 at this size by either bound (ceilings: Clopper-Pearson 5.15, GDP bound 33.6; "
        "1,530 trials/world could, with the GDP bound)"
    )
    assert _bound(1.2, 5.15, True, None, 8.0, "trials/world", NS(ceiling=33.6), "gdp-bound").startswith(
        "1.2 (tested by the GDP bound (ceiling 33.6)"
    )
    assert _bound(0.0, 5.15, False, 3000, 8.0, "trials/world") == (
        "cannot test epsilon = 8 at this size (ceiling 5.15; 3,000 trials/world could)"
    )
