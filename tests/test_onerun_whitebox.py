"""The white-box one-run audit: the f-DP one-run bounds (attacks.fdp_onerun) and the deletion game
with parameter-space canary scores (audit.onerun_whitebox)."""

from __future__ import annotations

import logging
import math

import numpy as np
import pytest
import torch
from scipy.optimize import brentq
from scipy.stats import binom, norm

from attacks.fdp_onerun import (
    fdp_one_run_ceiling,
    fdp_one_run_mu,
    gdp_canary_lower_bounds,
    gdp_epsilon,
    gdp_falsified,
    gdp_mu,
    max_alignment_log_p,
    reference_test_mu,
)
from attacks.onerun import one_run_ceiling
from audit.findings import whitebox_one_run_findings
from audit.onerun_whitebox import (
    ceiling_line,
    isotropic_canaries,
    pipeline_section,
    whitebox_ceiling,
    whitebox_one_run_audit,
)
from certify.errors import InvalidInput
from test_onerun import ClaimedNoOp, _memorising_problem
from unlearners.models import build_model
from unlearners.objective import Objective, default_init
from unlearners.r2d import RewindToDelete
from unlearners.retrain import Retrain

from synthetic import synthetic

# ----------------------------------------------------------------------------------------------
# the bounds


def _unrolled_v2(mu, m, k, alpha):
    """Mahloujifar et al.'s recursion for v = 2 written out step by step with scipy.stats."""
    r, h = alpha * 2 / m, alpha * (k - 2) / m
    h1 = max(h, norm.cdf(norm.ppf(r) - mu))
    r1 = min(1.0, r + (1 / (k - 1)) * (h1 - h))
    h2 = max(h1, norm.cdf(norm.ppf(r1) - mu))
    return r1 + h2 > k / m


def test_recursion_matches_the_unrolled_formula_on_a_tiny_input():
    for mu in np.linspace(0.01, 6, 40):
        assert gdp_falsified(float(mu), 3, 2, 2, confidence=0.9) == _unrolled_v2(mu, 3, 2, 0.1)
    # the first crossing of the unrolled form, found by a scan of its own
    grid = np.linspace(1e-6, 8, 80_001)
    first = next(mu for mu in grid if not _unrolled_v2(mu, 3, 2, 0.1))
    assert fdp_one_run_mu(3, 2, 2, confidence=0.9) == pytest.approx(first, abs=2e-4)


def test_reference_test_is_the_root_of_its_p_value():
    for p0 in (1e-3, 1e-8, 0.02):
        root = brentq(lambda mu: norm.cdf(norm.ppf(p0) + mu) - 0.05, 0, 40)
        assert reference_test_mu(math.log(p0)) == pytest.approx(root, rel=1e-9)
    assert reference_test_mu(math.log(0.5)) == 0.0  # not significant: nothing proven
    # p-values far below the smallest double keep their value: p0 = Phi(-400) gives mu_LB ~ 400 - 1.64
    assert reference_test_mu(float(norm.logcdf(-400.0))) == pytest.approx(400 - 1.6449, abs=1e-3)
    assert max_alignment_log_p([400.0, -1.0]) == pytest.approx(math.log(4) + norm.logcdf(-400.0), rel=1e-12)
    assert max_alignment_log_p([0.0]) == 0.0


def test_gdp_conversions_are_inverse_and_monotone():
    assert gdp_epsilon(gdp_mu(1.0, 1e-5), 1e-5) == pytest.approx(1.0, rel=1e-9)
    assert gdp_epsilon(0.0, 1e-5) == 0.0
    eps = [gdp_epsilon(mu, 1e-5) for mu in (0.1, 0.5, 1, 2, 5)]
    assert all(a < b for a, b in zip(eps, eps[1:]))


def test_ceiling_is_all_guesses_right_and_tighter_than_steinke():
    c = whitebox_ceiling(1000, 1e-5, 0.95)
    assert (c["m"], c["r"]) == (1000, 100) and c["reference_test"] is None
    mu = fdp_one_run_ceiling(1000, 100, confidence=0.975, chained=True)
    assert c["per_canary_mu"] == mu == fdp_one_run_mu(1000, 100, 100, confidence=0.975) / 2
    assert c["per_canary_epsilon"] == pytest.approx(gdp_epsilon(mu, 1e-5))
    assert c["steinke_epsilon"] == one_run_ceiling(1000, 100, 1e-5, confidence=0.975, chained=True)
    assert c["per_canary_epsilon"] > c["steinke_epsilon"] > 0
    line = ceiling_line(c, 1.0)
    assert f"{c['per_canary_epsilon']:.4g}" in line and "no ceiling" in line


def test_bound_is_monotone_in_right_guesses():
    bounds = [fdp_one_run_mu(1000, 100, v) for v in range(50, 101, 5)]
    assert bounds[0] == 0.0 and all(a <= b for a, b in zip(bounds, bounds[1:])) and bounds[-1] > 1


@pytest.mark.parametrize("mu", [1.0, 3.0])
def test_guess_bound_is_valid_on_exactly_gdp_canaries(mu):
    """Exceedance <= 5 % with a binomial slack (at most 18 of 200 at the 99.9 % quantile)."""
    b = gdp_canary_lower_bounds(1000, mu, 100, repetitions=200, seed=3)
    assert np.count_nonzero(b > mu) <= binom.ppf(0.999, 200, 0.05)
    if mu >= 1.0:
        assert np.median(b) > 0.3 * min(mu, fdp_one_run_ceiling(1000, 100))  # and it has power


def test_reference_test_is_valid_on_a_gaussian_release_with_known_mu():
    """A release exactly mu-GDP from the reference (shift mu*sigma along a random direction), scored
    on 50 random unit directions: mu_LB > mu in at most 5 % of 400 repetitions (binomial slack)."""
    rng = np.random.default_rng(5)
    mu, d, sigma = 2.0, 3, 0.7
    u = rng.standard_normal((50, d))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    over = 0
    for _ in range(400):
        shift = rng.standard_normal(d)
        diff = mu * sigma * shift / np.linalg.norm(shift) + sigma * rng.standard_normal(d)
        over += reference_test_mu(max_alignment_log_p(u @ diff / sigma)) > mu
    assert over <= binom.ppf(0.999, 400, 0.05)


def test_bounds_refuse_bad_input_naming_the_field():
    for call, field in [
        (lambda: fdp_one_run_mu(10, 11, 1), "k"),
        (lambda: fdp_one_run_mu(10, 5, 6), "v"),
        (lambda: fdp_one_run_mu(10, 5, 2, confidence=1.0), "confidence"),
        (lambda: fdp_one_run_mu(10, 5, 2, chained="yes"), "chained"),
        (lambda: reference_test_mu(0.5), "log_p0"),
        (lambda: reference_test_mu(float("nan")), "log_p0"),
        (lambda: max_alignment_log_p([1.0, float("inf")]), "z"),
        (lambda: gdp_canary_lower_bounds(10, 1.0, 20, repetitions=2), "k"),
        (lambda: isotropic_canaries(4, 3, 1, 0), "n_classes"),
        (lambda: whitebox_ceiling(100, 1e-5, 0.95, 60, 60), "k_plus + k_minus"),
    ]:
        with pytest.raises(InvalidInput) as info:
            call()
        assert info.value.field == field


def test_isotropic_canaries_are_a_pure_prefix_stable_function_of_the_seed():
    X, y = isotropic_canaries(6, 4, 3, 11, radius=2.0)
    X2, y2 = isotropic_canaries(10, 4, 3, 11, radius=2.0)
    assert torch.equal(X, X2[:6]) and torch.equal(y, y2[:6])
    assert torch.allclose(torch.linalg.vector_norm(X, dim=1), torch.full((6,), 2.0, dtype=torch.float64))
    assert not torch.equal(X, isotropic_canaries(6, 4, 3, 12, radius=2.0)[0])


# ----------------------------------------------------------------------------------------------
# the game


@pytest.fixture(scope="module")
def adult_like():
    """A 3-parameter logistic model like the default Adult one (2 features), 300 records."""
    X, y = synthetic(n=300, d=2, seed=0)
    X = X / torch.linalg.vector_norm(X, dim=1, keepdim=True).max()
    objective = Objective(build_model("logreg", 2, 2).double())
    cX, cy = isotropic_canaries(2 * 40, 2, 2, 7)
    return objective, X, y, cX, cy


def _game(problem, seed=1, **options):
    objective, X, y, cX, cy = problem
    method = RewindToDelete(objective, steps=40, rewind=38, **options)
    return whitebox_one_run_audit(
        method, X, y, cX, cy, lambda g: default_init(objective, g), epsilon=1.0, delta=1e-5, seed=seed
    )


def test_planted_violation_is_refuted_in_one_run_and_the_honest_run_is_not(adult_like):
    """The planted --G 1e-7 of the CLI test, on a tiny Adult-like problem: the release lies hundreds
    of sigma from the reference A(D), so the reference test refutes it; the honest G does not."""
    planted = _game(adult_like, constants={"G": 1e-7})
    assert planted.violation is True and planted.epsilon_lower > 1e3
    assert planted.analysis.epsilon_reference == planted.epsilon_lower and planted.analysis.distance_sigmas > 50
    assert [f["code"] for f in whitebox_one_run_findings(planted.to_dict())] == ["one-run-violation"]
    honest = _game(adult_like)
    assert honest.violation is False and honest.epsilon_lower <= honest.certified_epsilon
    assert whitebox_one_run_findings(honest.to_dict()) == []
    d = planted.to_dict()
    assert d["seed"] == 1 and "canaries=6" in d["seed_scheme"] and d["control"]["has_power"] is True


def test_the_guesses_catch_a_no_op_on_a_model_that_memorises():
    """Where each canary owns a coordinate (no interference between canaries), the per-canary f-DP
    analysis sees an understated no-op by itself, and beats Steinke et al.'s bound on the same guesses."""
    objective, X, y, cX, cy = _memorising_problem(m=40)
    ClaimedNoOp.claimed = 0.01
    try:
        result = whitebox_one_run_audit(
            ClaimedNoOp(objective, steps=100, horizon=50.0),
            X,
            y,
            cX,
            cy,
            lambda g: default_init(objective, g),
            epsilon=1.0,
            delta=1e-5,
            k_plus=10,
            k_minus=10,
            seed=2,
            canary_kind="records",
        )
    finally:
        ClaimedNoOp.claimed = 1.0
    a = result.analysis
    assert a.v == a.r == 20 and a.epsilon_guesses == pytest.approx(result.ceiling["per_canary_epsilon"])
    assert a.epsilon_guesses > a.steinke_epsilon > 0 and result.violation


def test_game_is_a_pure_function_of_its_seed(adult_like):
    a, b = _game(adult_like, seed=3).to_dict(), _game(adult_like, seed=3).to_dict()
    assert a == b and _game(adult_like, seed=4).analysis != a["analysis"]


def test_game_refuses_bad_input_naming_the_field(adult_like):
    objective, X, y, cX, cy = adult_like
    init = lambda g: default_init(objective, g)  # noqa: E731
    method = RewindToDelete(objective, steps=10, rewind=9)
    for kwargs, field in [
        ({"canaries_X": cX[:3], "canaries_y": cy[:3]}, "canaries_X"),
        ({"k_plus": 30, "k_minus": 30}, "k_plus + k_minus"),
        ({"canary_kind": "gaussian"}, "canary_kind"),
        ({"method": Retrain(objective, steps=10)}, "certificate"),
    ]:
        args = {"method": method, "canaries_X": cX, "canaries_y": cy, **kwargs}
        with pytest.raises(InvalidInput) as info:
            whitebox_one_run_audit(
                args.pop("method"),
                X,
                y,
                args.pop("canaries_X"),
                args.pop("canaries_y"),
                init,
                epsilon=1.0,
                delta=1e-5,
                **args,
            )
        assert info.value.field == field


def test_the_ceiling_is_logged_before_the_game_runs(monkeypatch, caplog):
    """The design's ceiling is printed first: here the game itself fails, and the line is there."""
    import audit.onerun_whitebox as wb

    def boom(*args, **kwargs):
        raise RuntimeError("the game ran")

    monkeypatch.setattr(wb, "whitebox_one_run_audit", boom)

    class Config:
        one_run_whitebox_canaries, delta, confidence, epsilon, mechanism = 100, 1e-5, 0.95, 1.0, "analytic"

    class Inputs:
        X, y = torch.ones(5, 2, dtype=torch.float64), torch.zeros(5, dtype=torch.long)
        objective = Objective(build_model("logreg", 2, 2).double())

    with caplog.at_level(logging.INFO, logger="unlearn_audit"), pytest.raises(RuntimeError, match="the game ran"):
        pipeline_section(Config(), None, Inputs(), None, 0)  # type: ignore[arg-type]
    assert any("white-box one-run audit: 100 canary pairs, 10 guesses" in r.message for r in caplog.records)


@pytest.mark.slow
def test_planted_violation_on_adult_is_refuted_by_the_audit():
    """The issue's acceptance on the default Adult data (cheap twin above: the Adult-like problem)."""
    import json

    import audit
    from audit.config import AuditConfig

    common = dict(max_train=2000, curve_points=2, noise_draws=2, attacks=(), forget_count=20)
    planted = audit.run(AuditConfig(constants={"G": 1e-7}, one_run_whitebox_canaries=100, **common))
    section = json.loads(planted.to_json())["one_run_whitebox"]
    assert planted.verdict == "violated" and section["violation"] and section["epsilon_lower"] > 1
    honest = audit.run(AuditConfig(one_run_whitebox_canaries=100, **common))
    assert json.loads(honest.to_json())["one_run_whitebox"]["violation"] is False


def test_the_page_and_the_terminal_summary_show_the_game(adult_like):
    """The planted game's section reaches the report page (its own heading, the bound, the reference
    test) and the terminal summary (one row with the guesses' ceiling and the largest alignment)."""
    import io
    import json
    from pathlib import Path

    from rich.console import Console

    from audit.cli.show import summary
    from audit.report.encoding import json_safe
    from audit.report.html import render_html
    from audit.report.schema import ReportModel

    section = json_safe(_game(adult_like, constants={"G": 1e-7}).to_dict())
    report = json.loads((Path(__file__).parent / "data" / "sample-report.json").read_text())
    report["one_run_whitebox"] = section
    page = " ".join(render_html(report).split())
    start = page.index('id="one-run-whitebox"')
    text = page[start : page.index("</p>", page.index("Positive control", start))]
    assert "40 pairs" in text and "trained on and then deleted" in text and "(no ceiling)" in text
    assert f"{section['analysis']['v']} of {section['analysis']['r']} right" in text
    out = io.StringIO()
    summary(Console(file=out, width=200), ReportModel.from_report_dict(report))
    row = next(line for line in out.getvalue().splitlines() if "white-box one-run epsilon >=" in line)
    assert "(40 canary pairs)" in row and "guesses' ceiling" in row and "largest alignment" in row
