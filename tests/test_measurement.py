"""Trials that model the adversary: the mode an audit picks and why, refused degenerate trials, the
positive control, trials sized to a ceiling, shadows as a role of the same game, the consecutive-
release attack in the ledger and the one-run audit in the report."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

import audit
from attacks.epsilon import strategy_ceiling
from audit import AuditConfig
from audit.attacking import per_attack_confidence, trials_for_ceiling
from audit.report.schema import validate_report
from audit.trials import choose_mode, make_trials
from certify.errors import InvalidInput
from unlearners.models import logistic_regression
from unlearners.objective import Objective, default_init
from unlearners.registry import get_method

from synthetic import synthetic

SMALL = dict(max_train=300, forget_count=10, noise_draws=2, curve_points=2, steps=30)


@pytest.mark.parametrize(
    ("sigma", "kind", "mode"),
    [
        (0.0, "none", "retrain"),
        (0.0, "exact", "retrain"),
        (0.0, "training-noise", "retrain"),
        (0.7, "training-noise", "retrain"),
        (0.7, "output-noise", "noise"),
    ],
)
def test_auto_mode_is_the_randomness_an_adversary_faces(sigma, kind, mode):
    chosen, why = choose_mode("auto", sigma, kind)
    assert chosen == mode and why.startswith(f"{mode} mode")
    assert choose_mode("noise", 0.5, "none") == ("noise", "noise mode, as configured (trial_mode = 'noise')")
    with pytest.raises(InvalidInput, match="trial_mode must be auto or retrain for this release"):
        choose_mode("noise", 0.0, "exact")  # retraining adds no noise: every noise draw is the same model
    with pytest.raises(InvalidInput, match="trial_mode"):
        choose_mode("noisy", 1.0, "output-noise")


def test_the_configuration_accepts_exactly_the_trial_modes():
    from audit.config import FIELD
    from audit.trials import MODE_CHOICES

    assert tuple(FIELD["trial_mode"].constraint.options) == MODE_CHOICES


def _assert_attacked_on_trials_that_differ(report) -> None:
    trials = report.attacks.trials
    assert trials.mode == "retrain" and "sigma = 0" in trials.mode_reason and trials.path == "vmap"
    assert trials.spread_unlearned > 0 and trials.spread_retrained > 0  # never identical copies
    assert "degenerate-trials" not in {f.code for f in report.findings}


@pytest.mark.slow  # an MLP audit with the population MIA on 20 retrain-mode trials: 3 s idle, 20 s loaded
def test_uncertified_finetune_is_attacked_on_trials_that_differ():
    report = audit.run(AuditConfig(method="finetune", model="mlp", trials=20, attacks=("mia", "whitebox"), **SMALL))
    _assert_attacked_on_trials_that_differ(report)


def test_uncertified_finetune_is_attacked_on_trials_that_differ_fast_lane():
    """The same mode, path and spread checks on a logistic regression with the white-box attack only."""
    report = audit.run(AuditConfig(method="finetune", trials=20, attacks=("whitebox",), **SMALL))
    _assert_attacked_on_trials_that_differ(report)


def test_exact_retraining_certifies_epsilon_zero_and_nothing_measured_contradicts_it():
    """Retraining releases A(D \\ Z) itself: epsilon 0 (not the 1 requested), and the ordering certified >=
    realized >= empirical holds at 0 with no violation, no epsilon-above-request, a consistent verdict."""
    from audit.report.html import render_html

    report = audit.run(AuditConfig(method="retrain", trials=20, attacks=("whitebox",), frontier=(), **SMALL))
    cert, comparison = report.certificate, report.attacks.comparison
    assert (cert.kind, cert.epsilon, cert.sigma, cert.valid) == ("exact", 0.0, 0.0, True)
    assert report.realized.epsilon == 0.0 and not report.realized.exceeds_certified
    assert (comparison.certified_epsilon, comparison.best_empirical_epsilon) == (0.0, 0.0)
    assert comparison.ordering_holds and not comparison.certificate_violated
    codes = {f.code for f in report.findings}
    assert not codes & {"certificate-violated", "epsilon-above-request", "realized-exceeds-certified"}
    assert report.verdict == "consistent"
    validate_report(report.to_dict())
    assert "identical releases, so ε = 0 and every requested ε holds" in render_html(report)


def test_noise_trials_of_a_release_without_noise_are_refused_before_the_trials():
    """finetune releases its model without output noise: noise-mode trials would be identical
    copies, so the run is refused as soon as the certificate says so, before the other stages."""
    stages = []
    with pytest.raises(InvalidInput, match="trial_mode must be auto or retrain"):
        audit.run(
            AuditConfig(method="finetune", trial_mode="noise", trials=20, attacks=("mia",), **SMALL),
            progress=lambda stage, done, total: stages.append(stage),
        )
    assert "certify" in stages and not {"utility", "trials", "shards"} & set(stages)


def test_identical_copies_found_at_run_time_are_a_warning(monkeypatch):
    """Trials that still turn out identical (a training that ignores its initial point) are
    recorded, never printed as an error next to exit code 0."""
    monkeypatch.setattr("audit.shards.identical_copies", lambda trials: True)
    report = audit.run(AuditConfig(trials=20, attacks=("mia",), **SMALL))
    codes = {f.code: f for f in report.findings}
    assert report.attacks is None and codes["degenerate-trials"].severity == "warning"
    assert (
        "identical" in codes["degenerate-trials"].message
        and "trial_mode auto or retrain" in codes["degenerate-trials"].message
    )


def test_an_error_finding_never_comes_with_exit_code_0():
    """The CLI prints an error finding as `error: ...`: its verdict must not exit 0."""
    from audit.cli.exits import VERDICT_EXIT
    from audit.findings import CODES

    assert [c.code for c in CODES.values() if c.severity == "error" and VERDICT_EXIT[c.verdict] == 0] == []


@pytest.mark.slow  # two digits audits of 60 retrain-mode trials each, with 8 U-LiRA shadows
def test_positive_control_sees_a_noop_and_retraining_is_not_flagged():
    # a logistic regression that memorises 200 digits: a no-op leaves Z visible
    config = dict(
        dataset="digits",
        max_train=200,
        forget_count=10,
        steps=100,
        horizon=60.0,
        trials=60,
        attacks=("whitebox", "ulira"),
        shadow_models=8,
        noise_draws=2,
        curve_points=2,
    )
    noop = audit.run(AuditConfig(method="noop", **config))
    assert noop.attacks.positive_control.has_power
    # a no-op *is* the original model: its game and its positive control are the same game
    assert noop.attacks.comparison.best_empirical_epsilon > 0 and "leak-measured" in {f.code for f in noop.findings}
    retrain = audit.run(AuditConfig(method="retrain", **config))
    assert retrain.attacks.comparison.best_empirical_epsilon == 0.0
    assert retrain.attacks.positive_control.has_power and "no-power" not in {f.code for f in retrain.findings}


def test_trials_are_sized_to_a_target_ceiling():
    each = per_attack_confidence(0.95, 4)
    n = trials_for_ceiling(4.0, 1e-5, each)
    assert strategy_ceiling(n, 1e-5, each) >= 4.0 > strategy_ceiling(n - 1, 1e-5, each)
    assert trials_for_ceiling(5.0, 1e-5, each) > n
    with pytest.raises(InvalidInput, match="target_ceiling"):
        trials_for_ceiling(14.9, 1e-5, each)
    report = audit.run(
        AuditConfig(target_ceiling=2.5, attacks=("whitebox",), max_train=500, noise_draws=2, curve_points=2)
    )
    trials = report.attacks.trials
    assert trials.sized_for_ceiling == 2.5 and trials.ceiling >= 2.5
    assert trials.n_per_world == trials_for_ceiling(2.5, 1e-5, per_attack_confidence(0.95, 1))


def test_trials_and_shadows_are_pure_functions_of_seed_role_and_index():
    X, y = synthetic(n=120, d=4, classes=2, seed=1)
    obj = Objective(logistic_regression(4, 2).double())
    method = get_method("finetune")(obj, steps=10)
    method.fit(X, y, default_init(obj, torch.Generator().manual_seed(0), torch.float64))
    forget = torch.tensor([2, 7])

    def init(g):
        return default_init(obj, g, torch.float64)

    big = make_trials("retrain", method, forget, 0.0, 6, seed=5, init=init)
    small = make_trials("retrain", method, forget, 0.0, 3, seed=5, init=init)
    other = make_trials("retrain", method, forget, 0.0, 3, seed=6, init=init)
    for name in ("unlearned", "retrained", "original"):
        assert torch.equal(getattr(big, name)[:3], getattr(small, name))
        assert not torch.equal(getattr(other, name), getattr(small, name))


def test_consecutive_releases_are_attacked_per_step_of_the_ledger():
    report = audit.run(
        AuditConfig(requests=3, forget_count=2, attacks=(), max_train=500, noise_draws=2, curve_points=2)
    )
    steps = json.loads(report.to_json())["ledger"]["consecutive"]
    assert [s["step"] for s in steps] == [1, 2] and all(0 <= s["epsilon_lower"] <= s["ceiling"] for s in steps)
    assert all(s["epsilon_lower"] <= s["realized_epsilon"] + 1e-9 for s in steps)


def test_one_run_audit_is_in_the_report_and_refuses_more_canaries_than_held_out():
    report = audit.run(AuditConfig(method="noop", one_run_canaries=40, attacks=(), **SMALL))
    one = json.loads(report.to_json())["one_run"]
    assert one["m"] == 40 and one["inserted"] == 40 and 0 <= one["epsilon_lower"] <= one["ceiling"]
    assert validate_report(json.loads(report.to_json())).one_run["r"] == one["r"]
    # the noop method's original model is its release: its positive control is the game itself, and a
    # control that proves nothing is the finding, never a bare 0
    assert (one["control"]["v"], one["control"]["epsilon_lower"]) == (one["v"], one["epsilon_lower"])
    codes = [f.code for f in report.findings]
    assert ("one-run-no-power" in codes) is (one["control"]["epsilon_lower"] == 0.0 and one["can_test"])
    with pytest.raises(InvalidInput, match="one_run_canaries"):
        audit.run(AuditConfig(one_run_canaries=1_000_000, attacks=(), **SMALL))


def test_worst_case_forget_sets_are_outlying_or_mislabelled_records():
    from audit.datasets import load_dataset, select_forget
    from audit.datasets.forget import mislabel_records

    data = load_dataset("digits", seed=0, max_train=300)
    outlying = select_forget(data, count=10, seed=1, strategy="outlying")
    assert np.array_equal(outlying, select_forget(data, count=10, seed=2, strategy="outlying"))  # no randomness
    X = data.X_train.reshape(data.n_train, -1)
    X = (X - X.mean(0)) / np.where(X.std(0) > 0, X.std(0), 1.0)
    far = np.array([np.linalg.norm(X[i] - X[data.y_train == data.y_train[i]].mean(0)) for i in range(data.n_train)])
    assert far[outlying].min() >= np.sort(far)[-10] - 1e-12  # exactly the ten farthest from their class
    y = mislabel_records(data.y_train, outlying, data.n_classes, seed=3)
    assert (y[outlying] != data.y_train[outlying]).all() and np.array_equal(
        np.delete(y, outlying), np.delete(data.y_train, outlying)
    )
    with pytest.raises(InvalidInput, match="strategy"):
        select_forget(data, classes=[1], strategy="outlying")
    report = audit.run(AuditConfig(forget_strategy="mislabelled", attacks=(), **SMALL))
    assert report.config.forget_strategy == "mislabelled"
    with pytest.raises(InvalidInput, match="forget_strategy"):
        audit.run(AuditConfig(forget_strategy="outlying", forget_class=1, attacks=(), max_train=300))
