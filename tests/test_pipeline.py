"""End-to-end audits through the library façade."""

import json
import math

import pytest

import audit
from audit import AuditConfig

# Whole audits of Adult (2,000 to 45,000 records), end to end: the full suite runs them, the fast lane
# (-m "not slow") does not. Their parts have unit tests (rewind = steps and the sigma budget in
# test_r2d.py, a planted constant's violated verdict in test_cli_shell.py's exit codes).
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def default_report():
    # The main job exactly as `audit run --method r2d --epsilon 1` runs it, attacks included.
    return audit.run(AuditConfig(method="r2d", epsilon=1.0))


def test_default_audit_attacks_find_nothing_above_the_certificate(default_report):
    a = default_report.attacks
    assert a.trials.n_per_world >= 1000 and set(a.attacks) == {"mia", "ulira", "relearn", "whitebox"}
    assert a.comparison.ordering_holds and not a.comparison.certificate_violated


def test_default_audit_is_certified_and_keeps_utility(default_report):
    r = default_report
    cert = r.certificate
    assert cert.epsilon == 1.0 and cert.delta == 1e-5 and cert.valid and cert.kind == "output-noise"
    assert not cert.conditional
    provenance = {c.name: c.provenance for c in cert.constants}
    assert provenance["L"] == provenance["G"] == "analytic"
    assert r.realized.epsilon <= cert.epsilon
    assert r.realized.distance_unlearned_retrained <= cert.sensitivity
    assert r.verdict == "consistent"
    test = r.utility.unlearned.test
    # the released (noisy) unlearned model loses at most 2 points against the noiseless one
    assert test.accuracy - test.noisy_accuracy_mean <= 0.02
    assert test.accuracy > 0.79  # well above the 0.76 majority-class rate


def test_report_sections_and_json(default_report):
    d = json.loads(default_report.to_json())
    for key in (
        "config",
        "dataset",
        "certificate",
        "realized",
        "utility",
        "tradeoff",
        "timings",
        "seeds",
        "environment",
        "schema_version",
        "tool",
        "verdict",
        "parameters",
    ):
        assert key in d
    assert d["dataset"]["n_train"] > 30000 and d["dataset"]["forget_size"] == 1
    assert len(d["dataset"]["content_hash"]) == 64
    for model in ("original", "unlearned", "retrained"):
        for split in ("retain", "forget", "test"):
            assert {"accuracy", "loss", "noisy_accuracy_mean"} <= set(d["utility"][model][split])
    assert d["timings"]["learn_s"] > 0 and d["timings"]["speedup_vs_retrain"] > 0
    assert d["environment"]["packages"]["torch"]
    assert d["seeds"]["root"] == "0" and len(d["seeds"]) == 7  # big integers travel as strings


def test_tradeoff_curve_is_monotone_and_ends_at_retraining(default_report):
    curve = default_report.tradeoff
    assert curve.knob.option == "rewind" and curve.knob.symbol == "K" and not curve.knob.refits
    assert curve.chosen == 95
    ks = [row.value for row in curve.rows]
    assert ks == sorted(ks) and ks[0] == 0 and ks[-1] == default_report.config.steps and 95 in ks
    sigmas = [row.sigma for row in curve.rows]
    assert all(a >= b for a, b in zip(sigmas, sigmas[1:]))
    assert curve.rows[-1].sigma == 0 and curve.rows[-1].distance == 0
    for row in curve.rows:
        assert row.distance <= row.sensitivity
        assert row.realized_epsilon <= 1.0


def test_checkpoint_recovery_reported(default_report):
    rec = default_report.checkpoint_recovery
    assert rec.applicable and rec.converged
    assert rec.distance_to_checkpoint < 1e-8


def test_rewind_equal_to_steps_is_retraining():
    r = audit.run(AuditConfig(rewind=100, max_train=2000, curve_points=2, noise_draws=2, attacks=()))
    assert r.realized.distance_unlearned_retrained == 0.0
    assert r.certificate.sigma == 0.0 and r.realized.epsilon == 0.0
    assert r.parameters.sha256_unlearned == r.parameters.sha256_retrained


def test_same_seed_same_numbers_different_seed_different_split():
    cfg = dict(max_train=2000, curve_points=3, noise_draws=3, forget_count=5, trials=100, attacks=("whitebox", "mia"))
    salt = bytes(range(32))
    a, b = audit.run(AuditConfig(**cfg), salt=salt), audit.run(AuditConfig(**cfg), salt=salt)
    wall_clock = ("timings", "created_at", "started_at")
    strip = lambda r: {k: v for k, v in r.to_dict().items() if k not in wall_clock}  # noqa: E731
    assert json.dumps(strip(a), sort_keys=True) == json.dumps(strip(b), sort_keys=True)
    assert audit.run(AuditConfig(**cfg)).deletion_request.commitment != a.deletion_request.commitment
    c = audit.run(AuditConfig(seed=1, **cfg), salt=salt)
    assert c.dataset.content_hash != a.dataset.content_hash


def test_sigma_budget_selects_rewind():
    r = audit.run(AuditConfig(sigma_budget=0.05, max_train=5000, curve_points=2, noise_draws=2, attacks=()))
    assert r.certificate.sigma <= 0.05
    assert 0 <= r.method.hyperparameters["rewind"] <= 100 and r.tradeoff.chosen == r.method.hyperparameters["rewind"]


def test_planted_wrong_constant_is_flagged():
    # A user who asserts a too-small gradient bound gets a certificate the run itself refutes.
    r = audit.run(
        AuditConfig(constants={"G": 1e-7}, max_train=2000, forget_count=20, curve_points=2, noise_draws=2, attacks=())
    )
    assert r.certificate.conditional
    assert r.realized.bound_violated and r.verdict == "violated"
    assert any(f.code == "bound-violated" for f in r.findings)


def test_mlp_and_multiclass_digits_run():
    r = audit.run(
        AuditConfig(
            dataset="digits",
            model="mlp",
            hidden=(16,),
            steps=30,
            forget_count=5,
            curve_points=2,
            noise_draws=2,
            trials=50,
            shadow_models=2,
        )
    )
    assert r.certificate.conditional and r.dataset.n_classes == 10
    assert r.realized.distance_unlearned_retrained <= r.certificate.sensitivity
    assert not math.isnan(r.utility.original.test.accuracy)
