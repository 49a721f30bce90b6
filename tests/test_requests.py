"""Sequences of deletion requests: each method's rule, the ledger in the report, the CLI flag."""

import json
import math
import subprocess
import sys

import pytest
import torch

import audit
from audit import AuditConfig
from audit.report.schema import validate_report
from certify.errors import InvalidInput
from certify.ledger import DEFAULT_ORDERS
from unlearners.models import logistic_regression
from unlearners.objective import Objective, default_init
from unlearners.registry import get_method

from synthetic import synthetic


def _independent_epsilon(noise_multipliers, delta):
    """RDP of composed Gaussians, Σ α/(2 z²), converted as Balle et al. 2020 Thm 21 (no Opacus)."""
    best = math.inf
    for a in DEFAULT_ORDERS:
        rdp = sum(a / (2 * z * z) for z in noise_multipliers)
        eps = rdp + math.log1p(-1 / a) - (math.log(delta) + math.log(a)) / (a - 1)
        best = min(best, eps)
    return max(best, 0.0)


def _independent_exact_epsilon(mu, delta):
    """The root of Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2) = δ (Dong, Roth & Su 2022, Cor. 2.13), plain scipy."""
    from scipy.optimize import brentq
    from scipy.stats import norm

    return brentq(
        lambda e: norm.cdf(-e / mu + mu / 2) - math.exp(e) * norm.cdf(-e / mu - mu / 2) - delta,
        0.0,
        100.0,
        xtol=1e-14,
        rtol=1e-13,
    )


@pytest.fixture(scope="module")
def ten_requests():
    # ten single-record requests on the default data and method, with a budget of 3
    return audit.run(AuditConfig(requests=10, budget_epsilon=3.0, attacks=()))


@pytest.mark.slow
def test_cumulative_epsilon_grows_and_equals_an_independent_rdp_computation(ten_requests):
    ledger = ten_requests.to_dict()["ledger"]
    releases = ledger["releases"]
    assert [r["index"] for r in releases] == list(range(1, 11))
    assert [r["forget_total"] for r in releases] == list(range(1, 11))
    cumulative = [r["cumulative_epsilon"] for r in releases]
    assert all(b > a for a, b in zip(cumulative, cumulative[1:]))
    assert abs(cumulative[0] - releases[0]["epsilon"]) <= 1e-6  # one release: its own analytic epsilon
    for k in range(1, 11):
        z = [r["sigma"] / r["sensitivity"] for r in releases[:k]]
        mu = math.sqrt(sum(1 / zz**2 for zz in z))
        assert cumulative[k - 1] == pytest.approx(_independent_exact_epsilon(mu, 1e-5), rel=1e-7)
        assert releases[k - 1]["rdp_epsilon"] == pytest.approx(_independent_epsilon(z, 1e-5), rel=1e-9)
        assert cumulative[k - 1] < releases[k - 1]["rdp_epsilon"]
    # every release on its own is certified at the requested epsilon, and holds
    for r in releases:
        assert r["epsilon"] == 1.0 and r["certificate_valid"] and r["distance"] <= r["sensitivity"]
        assert r["realized_epsilon"] <= r["epsilon"]


@pytest.mark.slow
def test_budget_triggers_the_retrain_warning(ten_requests):
    ledger = ten_requests.to_dict()["ledger"]
    first = ledger["first_release_over_budget"]
    assert first is not None and ledger["retrain_due"]
    releases = ledger["releases"]
    assert releases[first - 2]["cumulative_epsilon"] <= 3.0 < releases[first - 1]["cumulative_epsilon"]
    assert [r["budget_spent"] for r in releases] == [r["index"] >= first for r in releases]
    codes = {f.code: f for f in ten_requests.findings}
    assert codes["budget-spent"].severity == "warning" and "retrain" in codes["budget-spent"].message
    assert ten_requests.verdict == "consistent"  # a spent budget is not a broken certificate


@pytest.mark.slow
def test_ledger_is_in_the_validated_report(ten_requests):
    d = json.loads(ten_requests.to_json())
    assert validate_report(d).ledger.retrain_due
    assert d["config"]["requests"] == 10 and d["dataset"]["forget_size"] == 10
    single = audit.run(AuditConfig(attacks=(), steps=20))
    assert "ledger" not in json.loads(single.to_json())


def _fitted(name, **options):
    X, y = synthetic(n=240, d=4, classes=2, seed=3)
    obj = Objective(logistic_regression(4, 2).double())
    method = get_method(name)(obj, **options)
    method.fit(X, y, default_init(obj, torch.Generator().manual_seed(0), torch.float64))
    return method


@pytest.mark.parametrize(
    "name, options",
    [
        ("r2d", {"steps": 40, "rewind": 38}),
        ("hf", {"epochs": 20}),
        ("newton", {}),
        ("retrain", {"steps": 20}),
        ("cns", {"steps": 200, "solver": "dense"}),
    ],
)
def test_every_release_is_certified_against_its_own_retrain(name, options):
    method = _fitted(name, **options)
    requests = [torch.tensor([3, 8]), torch.tensor([40]), torch.tensor([100, 101, 102])]
    releases = method.serve_requests(requests, 1.0, 1e-5)
    assert len(releases) == 3
    sensitivities = []
    for k, (theta, cert) in enumerate(releases, start=1):
        union = torch.cat(requests[:k])
        assert cert.valid
        distance = float(torch.linalg.vector_norm(theta - method.retrain(union)))
        assert distance <= cert.sensitivity + 1e-15
        sensitivities.append(cert.sensitivity)
    if name != "retrain":
        assert sensitivities == sorted(sensitivities)  # the bound accumulates over the requests


def test_hf_sequence_is_its_batch_deletion():
    method = _fitted("hf", epochs=20)
    requests = [torch.tensor([3, 8]), torch.tensor([40])]
    batch = method.unlearn(torch.cat(requests))
    last, _ = method.serve_requests(requests, 1.0, 1e-5)[-1]
    assert torch.allclose(last, batch, atol=1e-14)


def test_more_requests_than_records_is_refused():
    with pytest.raises(InvalidInput, match="requests"):  # 2 records cannot make 5 requests
        audit.run(AuditConfig(requests=5, forget_fraction=0.2, attacks=(), max_train=10, steps=5))
    with pytest.raises(InvalidInput, match="requests"):
        AuditConfig(requests=0)
    with pytest.raises(InvalidInput, match="budget_epsilon"):  # no ledger for a single request
        AuditConfig(budget_epsilon=3.0)


@pytest.mark.slow
def test_cli_serves_requests_with_hf(tmp_path):
    out = tmp_path / "run"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "audit.cli",
            "run",
            "--method",
            "hf",
            "--requests",
            "3",
            "--budget-epsilon",
            "100",
            "--attacks",
            "none",
            "-q",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads((out / "report.json").read_text())
    assert len(report["ledger"]["releases"]) == 3 and not report["ledger"]["retrain_due"]
    assert "ledger" in (out / "report.html").read_text().lower()
    bad = subprocess.run(
        [sys.executable, "-m", "audit.cli", "run", "--requests", "-1", "-q"], capture_output=True, text=True
    )
    assert bad.returncode == 2 and "requests" in bad.stderr and "Traceback" not in bad.stderr
