"""The privacy-utility frontier (audit.measurements.frontier, the report's ``frontier``)."""

from __future__ import annotations

import math

import pytest
from typer.testing import CliRunner

from audit.cli import app
from audit.config import AuditConfig
from audit.pipeline import run

SMALL = dict(max_train=300, attacks=(), noise_draws=4, curve_points=2)


@pytest.fixture(scope="module")
def r2d():
    return run(AuditConfig(method="r2d", **SMALL))


def test_the_point_at_the_requested_epsilon_carries_the_certificates_sigma(r2d):
    points = {p.epsilon: p for p in r2d.frontier.points}
    assert r2d.frontier.applicable and sorted(points) == [0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0]
    assert points[1.0].sigma == r2d.certificate.sigma  # the same function issued both


def test_the_frontier_reuses_the_utility_stages_draws_and_states_their_error(r2d):
    point, test = {p.epsilon: p for p in r2d.frontier.points}[1.0], r2d.utility.unlearned.test
    assert point.test_accuracy_mean == test.noisy_accuracy_mean and point.test_accuracy_std == test.noisy_accuracy_std
    assert point.test_accuracy_se == test.noisy_accuracy_se > 0
    assert r2d.frontier.test_records == test.noisy_records  # the default Adult test split is above 2,000
    assert test.noisy_records == 2000 and r2d.utility.unlearned.noisy_dtype == "float32"
    assert r2d.utility.unlearned.retain.noisy_records < 300  # max_train=300: the whole retain split


def test_sigma_falls_as_epsilon_grows_and_accuracy_approaches_the_noiseless_model(r2d):
    pts = r2d.frontier.points
    assert all(a.sigma > b.sigma for a, b in zip(pts, pts[1:]))
    assert r2d.frontier.test_accuracy_noiseless == r2d.utility.unlearned.test.accuracy
    ends = run(AuditConfig(method="r2d", frontier=(0.01, 100.0), **{**SMALL, "noise_draws": 20})).frontier.points
    gap = [abs(p.test_accuracy_mean - r2d.frontier.test_accuracy_noiseless) for p in ends]
    assert gap[1] < 0.5 * gap[0] and ends[1].test_accuracy_std < ends[0].test_accuracy_std


def test_classic_sigma_is_exactly_inverse_in_epsilon_and_leaves_out_epsilons_above_one():
    f = run(AuditConfig(method="r2d", mechanism="classic", **SMALL)).frontier
    assert [p.epsilon for p in f.points] == [0.1, 0.2, 0.5, 1.0]
    products = [p.sigma * p.epsilon for p in f.points]  # sigma = Delta sqrt(2 ln(1.25/delta)) / epsilon
    assert max(products) == pytest.approx(min(products), rel=1e-12)
    assert "left out: epsilon 2, 5, 10" in f.note


def test_exact_retraining_releases_the_noiseless_model_at_every_epsilon():
    f = run(AuditConfig(method="retrain", **SMALL)).frontier
    assert all(
        p.sigma == 0 and p.test_accuracy_std == 0 and p.test_accuracy_mean == f.test_accuracy_noiseless
        for p in f.points
    )


def test_no_frontier_without_an_output_noise_certificate():
    from audit.measurements import frontier
    from certify.certificate import issue

    f = run(AuditConfig(method="finetune", **SMALL)).frontier
    assert f.applicable is False and "carries no certificate" in f.reason
    training = issue("dpsgd", "training-noise", epsilon=1.0, delta=1e-5, theorem="DP-SGD")
    f = frontier(
        None,
        training,
        None,
        None,
        epsilons=(1.0,),
        delta=1e-5,
        mechanism="analytic",
        objective=None,
        test=None,
        draws=2,
        gen=None,
    )  # decided from the certificate alone: nothing else is read
    assert f.applicable is False and "noise is added in training" in f.reason


def test_a_sequence_of_requests_has_no_single_frontier_and_none_skips_it():
    seq = run(AuditConfig(method="r2d", requests=2, forget_count=1, **SMALL))
    assert seq.frontier.applicable is False and "ledger" in seq.frontier.reason
    assert "frontier" not in run(AuditConfig(method="r2d", frontier=(), **SMALL)).to_dict()


def test_frontier_flag_parses_numbers_and_refuses_text(tmp_path):
    result = CliRunner().invoke(app, ["run", "--frontier", "0.1,abc", "--attacks", "none"])
    assert result.exit_code == 2 and "--frontier" in result.stderr and "numbers" in result.stderr
    result = CliRunner().invoke(
        app, ["run", "--frontier", "0.5,3", "--attacks", "none", "--max-train", "300", "--json", "-q"]
    )
    import json

    report = json.loads(result.stdout)
    assert [p["epsilon"] for p in report["frontier"]["points"]] == [0.5, 3.0]
    assert all(math.isfinite(p["sigma"]) for p in report["frontier"]["points"])


def test_the_report_page_draws_the_frontier_and_says_why_there_is_none(r2d):
    from audit.report.html import render_html

    page = render_html(r2d)
    assert 'id="frontier"' in page and 'aria-labelledby="frontier-title"' in page
    assert page.count('<tr><td class="num">') >= len(r2d.frontier.points)
    none = render_html(run(AuditConfig(method="finetune", **SMALL)))
    assert "No frontier: the method carries no certificate" in none
