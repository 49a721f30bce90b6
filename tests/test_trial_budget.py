"""Noise-mode trials sized by cost (issue 28 item 3): the rule, its record, and the planted release."""

import math
from types import SimpleNamespace

import pytest
from scipy.optimize import brentq

import audit
from audit import AuditConfig, trial_budget
from audit.attacking import TrialPlan
from audit.report import schema
from audit.trial_budget import budget_count, grid, plateau_count, predicted_bound, sized_attacks
from certify.mechanisms import epsilon_for

DELTA = 1e-5
#: Each bound's level with the four default attacks: 1 - 0.05/(2 x 4).
EACH = 1 - 0.05 / 8
#: mu of the Gaussian release whose realized epsilon is 3 at delta = 1e-5.
MU3 = brentq(lambda m: epsilon_for(1.0 / m, DELTA, 1.0) - 3.0, 0.05, 10.0)


def test_the_predicted_bound_is_zero_without_a_leak_and_a_little_below_the_measured_mean():
    assert predicted_bound(0.0, 1000, DELTA, EACH) == predicted_bound(4e-5, 64_000, DELTA, EACH) == 0.0
    # measured means of the Clopper-Pearson bound on N(mu3, 1) vs N(0, 1), 20 repetitions each: 0.70, 1.30
    assert 0.5 < predicted_bound(MU3, 1000, DELTA, EACH) < 0.70
    assert 1.1 < predicted_bound(MU3, 10_000, DELTA, EACH) < 1.30
    # a realized epsilon of 3 needs about 3,000 trials per world before the bound reaches 1 (certified)
    assert predicted_bound(MU3, 2000, DELTA, EACH) < 1 < predicted_bound(MU3, 8000, DELTA, EACH)


def test_an_honest_release_plateaus_at_the_floor_a_leaky_one_when_its_refutation_is_decided():
    assert plateau_count(0.0, DELTA, EACH, 1000, 1.0) == (1000, "plateau")
    assert plateau_count(4e-5, DELTA, EACH, 1000, 1.0) == (1000, "plateau")  # the default r2d audit's mu
    # realized 3 against certified 1: the first count whose predicted bound is above 1.25
    n, why = plateau_count(MU3, DELTA, EACH, 1000, 1.0)
    assert why == "decided" and predicted_bound(MU3, n // 2, DELTA, EACH) <= 1.25 < predicted_bound(MU3, n, DELTA, EACH)
    assert plateau_count(MU3, DELTA, EACH, 1000, 3.0) == (grid(1000)[-1], "cap")  # no decision below the truth
    assert plateau_count(50.0, DELTA, EACH, 1000, 1.0) == (1000, "decided")  # a planted G = 1e-7: no pilot


def test_the_budget_takes_the_largest_doubling_whose_predicted_time_fits():
    assert budget_count(0.5e-3, 5.0, 1000, 1_024_000) == 8000  # 8,000 x 0.5 ms = 4 s; 16,000 = 8 s
    assert budget_count(0.5e-3, 5.0, 1000, 4000) == 4000  # capped (plateau or memory)
    assert budget_count(1.0, 5.0, 1000, 1_024_000) == 1000  # nothing fits: the floor (the pilot)


class _Stage:
    """A fake attack stage: records the plans it ran; its ``trials`` takes a sizing by model_copy."""

    def __init__(self):
        self.runs = []

    def __call__(self, plan, pilot):
        self.runs.append((plan.n_trials, pilot))
        trials = SimpleNamespace(model_copy=lambda update: SimpleNamespace(**update))
        return SimpleNamespace(n=plan.n_trials, trials=trials, model_copy=lambda update: SimpleNamespace(**update))


def _sized(monkeypatch, mu, *, pilot_s=0.5, budget=5.0, fits=lambda n: True, certified=1.0):
    ticks = iter((10.0, 10.0 + pilot_s))
    monkeypatch.setattr(trial_budget, "pilot_clock", lambda executor: ("process-cpu", lambda: next(ticks)))
    stage = _Stage()
    plan = TrialPlan("noise", "noise mode", 1000)
    out, final = sized_attacks(
        plan,
        mu=mu,
        delta=DELTA,
        confidence=EACH,
        certified=certified,
        budget=budget,
        executor="local",
        attack=stage,
        fits=fits,
    )
    return stage.runs, out, final


def test_an_honest_release_runs_once_at_the_floor_without_a_pilot(monkeypatch):
    runs, _, final = _sized(monkeypatch, 4e-5)
    assert runs == [(1000, False)]
    assert _sized(monkeypatch, 50.0)[0] == [(1000, False)]  # decided at the floor
    s = final.sizing
    assert (s.chosen_by, s.stopped_by, s.pilot_trials, s.plateau_trials) == ("cost", "plateau", None, 1000)
    assert "no pilot" in s.why


def test_a_leaky_release_is_sized_by_the_pilot_and_the_budget(monkeypatch):
    runs, out, final = _sized(monkeypatch, MU3, certified=3.0)  # pilot: 0.5 s for 1,000 trials = 0.5 ms per trial
    assert runs == [(16, True), (1000, True), (8000, False)] and out.n == 8000 == final.n_trials
    s = final.sizing
    assert (s.stopped_by, s.pilot_trials, s.clock) == ("budget", 1000, "process-cpu")
    assert s.seconds_per_trial == pytest.approx(5e-4) and s.predicted_s == pytest.approx(4.0) and s.budget_s == 5.0
    assert s.predicted_bound == pytest.approx(predicted_bound(MU3, 8000, DELTA, EACH)) and s.predicted_bound > 1
    assert "8,000 trials per world" in s.why and "budget of 5 s" in s.why


def test_memory_stops_the_doubling_and_a_count_at_the_floor_keeps_the_pilot(monkeypatch):
    runs, _, final = _sized(monkeypatch, MU3, fits=lambda n: n <= 2000)
    assert runs == [(16, True), (1000, True), (2000, False)] and final.sizing.stopped_by == "memory"
    runs, _, final = _sized(monkeypatch, MU3, pilot_s=0.1)  # 16,000 fit: the refutation is decided there
    assert runs == [(16, True), (1000, True), (16_000, False)] and final.sizing.stopped_by == "decided"
    runs, _, final = _sized(monkeypatch, MU3, pilot_s=0.1, fits=lambda n: n <= 2000)
    assert runs == [(16, True), (1000, True), (2000, False)] and final.sizing.stopped_by == "memory"
    runs, out, final = _sized(monkeypatch, MU3, pilot_s=6.0)  # even the floor is over the budget
    assert runs == [(16, True), (1000, True)] and final.n_trials == 1000 and final.sizing.stopped_by == "budget"
    assert out.trials.sizing is final.sizing  # the pilot's own section, now with the record


def test_the_sizing_record_renders_in_the_schema_and_writes_only_what_was_given():
    s = schema.TrialSizing(chosen_by="user", why="2,000 trials per world, given by the user")
    assert s.model_dump(exclude_unset=True) == {"chosen_by": "user", "why": "2,000 trials per world, given by the user"}
    with pytest.raises(ValueError):
        schema.TrialSizing(chosen_by="machine", why="x")


PLANTED_G = 8.1943e-5  # the default problem's sensitivity scaled so the realized epsilon is 3.0000


@pytest.mark.slow
def test_the_default_audit_refutes_a_planted_realized_epsilon_of_3_with_its_bound():
    r = audit.run(AuditConfig(method="r2d", epsilon=1.0, constants={"G": PLANTED_G}))
    assert r.realized.epsilon == pytest.approx(3.0, abs=1e-3) and r.certificate.epsilon == 1.0
    sizing = r.attacks.trials.sizing
    assert sizing.chosen_by == "cost" and sizing.pilot_trials == 1000 and r.attacks.trials.n_per_world >= 4000
    cmp = r.attacks.comparison
    assert cmp.best_empirical_epsilon > 1.0 and cmp.certificate_violated and r.verdict == "violated"
    # the recorded seed and count reproduce every bound on any machine; only the record of who chose differs
    again = audit.run(
        AuditConfig(method="r2d", epsilon=1.0, constants={"G": PLANTED_G}, trials=r.attacks.trials.n_per_world)
    )
    assert again.attacks.trials.sizing.chosen_by == "user"
    first, second = r.to_json_dict()["attacks"], again.to_json_dict()["attacks"]
    for section in (first, second):
        section["trials"].pop("sizing")
    assert first == second
    honest = audit.run(AuditConfig(method="r2d", epsilon=1.0))
    assert honest.attacks.trials.n_per_world == 1000 and honest.attacks.trials.sizing.stopped_by == "plateau"
    assert math.isclose(honest.attacks.trials.sizing.release_mu, 4.17e-5, rel_tol=0.01)


def test_who_chose_the_count_is_recorded_for_every_way_of_choosing_it(tmp_path):
    from audit.attacking import trial_plan as _trial_plan

    def plan(mode="noise", **kw):
        return _trial_plan(AuditConfig(attacks=("mia",), **kw), mode, "why this mode")

    assert (plan().n_trials, plan().sizing.chosen_by) == (1000, "cost")  # the floor; the pipeline sizes it
    given = plan(trials=2000)
    assert (given.n_trials, given.sizing.chosen_by, given.sizing.why) == (
        2000,
        "user",
        "2,000 trials per world, given by the user",
    )
    assert plan(target_ceiling=3.0).sizing.chosen_by == "target-ceiling"
    assert (plan("retrain").n_trials, plan("retrain").sizing.chosen_by) == (200, "mode-default")
    # a run directory's key holds the count: a count sized by this machine's speed could not resume
    resumed = plan(resume=str(tmp_path / "run"))
    assert (resumed.n_trials, resumed.sizing.chosen_by) == (1000, "mode-default") and "--resume" in resumed.reason


def test_the_cli_summary_says_how_the_count_was_chosen():
    import io
    import json
    from pathlib import Path

    from rich.console import Console

    from audit.cli.show import summary
    from audit.report.schema import validate_report

    report = json.loads((Path(__file__).parent / "data" / "sample-report.json").read_text())
    said = "16,000 trials per world, sized by cost (0.23 ms per trial measured on a pilot)"
    report["attacks"]["trials"]["sizing"] = {"chosen_by": "cost", "why": said, "stopped_by": "decided"}
    out = Console(record=True, width=300, file=io.StringIO())
    summary(out, validate_report(report))
    assert said in out.export_text()
