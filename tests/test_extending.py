"""Extending the auditor without editing the package: a toy certified method and a toy attack,
defined here, registered in-process, and audited end to end (report, schema, HTML, CLI)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

import attacks.registry as attack_registry
import audit
import unlearners.registry as method_registry
from attacks.base import Attack, AttackInputs, AttackOutcome
from audit.cli import app
from audit.report.html import render_html
from audit.report.schema import validate_report
from certify.certificate import Bound, Condition, Constant, issue
from certify.errors import Integer, Real
from certify.params import Param
from unlearners.base import Unlearner
from unlearners.training import gradient_descent


class DiameterBound(Unlearner):
    """Doing nothing, certified by the diameter: A is gradient descent projected onto ||θ|| ≤ C,
    U returns A(D) unchanged, and ||A(D) − A(D \\ Z)|| ≤ 2C whatever Z is (triangle inequality)."""

    name = "toy-diameter"
    title = "Toy: do nothing, certified by the diameter of the parameter ball"
    paper = "a test of the extension interface (no paper)"
    certified = True
    hyperparameters = (
        Param("steps", 30, Integer(1), "gradient steps of A", audit="steps"),
        Param("eta", 0.5, Real(gt=0), "step size of A"),
        Param("C", 0.25, Real(gt=0), "radius of the parameter ball"),
    )

    def _train(self, X, y):
        theta = self.theta0_.clone()
        for _ in range(self.steps):
            theta, _ = gradient_descent(self.objective, theta, X, y, eta=self.eta, steps=1)
            theta = theta * min(1.0, self.C / max(float(torch.linalg.vector_norm(theta)), 1e-300))
        return theta

    def _fit(self, X, y, theta0):
        self.theta0_ = theta0 * min(1.0, self.C / max(float(torch.linalg.vector_norm(theta0)), 1e-300))
        self.theta_ = self._train(X, y)
        return self.theta_

    def _unlearn(self, forget):
        return self.theta_.clone()

    def _retrain(self, forget):
        return self._train(*self.retained(forget))

    def _certify(self, forget, epsilon, delta, mechanism):
        norm = float(torch.linalg.vector_norm(self.theta_))
        bound = Bound(
            value=2 * self.C,
            formula="||A(D) - A(D \\ Z)|| <= ||A(D)|| + ||A(D \\ Z)|| <= 2C",
            conditions=(
                Condition("projection", norm <= self.C * (1 + 1e-12), f"||A(D)|| = {norm:.4g} <= C = {self.C:g}"),
            ),
            constants=(Constant("C", self.C, "enforced", "radius of the projection ball"),),
        )
        return issue(
            self.name,
            "output-noise",
            epsilon=epsilon,
            delta=delta,
            mechanism=mechanism,
            bound=bound,
            assumptions=("A projects onto ||theta|| <= C",),
        )


class NormAttack(Attack):
    """Scores each release by its parameter norm."""

    name = "toy-norm"
    title = "Toy: parameter norm"
    description = "the Euclidean norm of the released parameters"

    def run(self, inputs: AttackInputs) -> AttackOutcome:
        su = torch.linalg.vector_norm(inputs.released_unlearned, dim=1).numpy()
        sr = torch.linalg.vector_norm(inputs.released_retrained, dim=1).numpy()
        return AttackOutcome(
            su, sr, {"mean_norm_unlearned": float(np.mean(su)), "mean_norm_retrained": float(np.mean(sr))}
        )


@pytest.fixture
def extended():
    method_registry.register(DiameterBound)
    attack_registry.register(NormAttack)
    yield
    method_registry.unregister(DiameterBound.name)
    attack_registry.unregister(NormAttack.name)


SMALL = dict(max_train=1500, forget_count=3, noise_draws=2, trials=200, curve_points=2)


def test_a_toy_method_and_a_toy_attack_run_a_full_audit(extended):
    report = audit.run(audit.AuditConfig(method="toy-diameter", attacks=("toy-norm", "whitebox"), **SMALL))
    cert = report.certificate
    assert cert.kind == "output-noise" and cert.valid and cert.sensitivity == 0.5
    assert cert.conditions[0].name == "projection" and cert.conditions[0].met
    assert "2C" in cert.theorem and "Gaussian noise" in cert.theorem
    assert report.realized.distance_unlearned_retrained <= cert.sensitivity
    assert report.method.hyperparameters == {"steps": 100, "eta": 0.5, "C": 0.25}  # steps fed by the audit
    toy = report.attacks.attacks["toy-norm"]
    assert toy.title == NormAttack.title and toy.details["mean_norm_unlearned"] > 0
    assert 0 <= toy.bound.epsilon_lower <= toy.bound.ceiling and toy.bound.roc.n_pos == 200
    assert set(report.attacks.comparison.empirical_epsilon_lower) == {"toy-norm", "whitebox"}
    # the diameter certificate holds and is useless: the noise it needs leaves a model at chance, and the
    # method does nothing, so its no-op reference is its own realized epsilon (no-op-passes, not no-power)
    assert report.verdict == "consistent" and report.tradeoff is None
    # (the ball of radius 0.25 also keeps the trained model itself at the majority rate: original-not-learned)
    assert {f.code for f in report.findings} == {
        "released-at-chance",
        "utility-loss",
        "no-op-passes",
        "original-not-learned",
    }
    assert report.utility.original.test.accuracy <= report.utility.test_chance_accuracy + 0.01
    assert report.realized.no_op_epsilon == report.realized.epsilon
    # the report, its JSON Schema check and the page pick the new attack up without edits
    data = json.loads(report.to_json())
    assert validate_report(data).attacks.attacks["toy-norm"].details == toy.details
    page = render_html(report)
    assert "toy-norm" in page and "Toy: parameter norm" in page and "mean_norm_unlearned" in page


def test_the_toy_method_is_listed_and_runs_from_the_cli(extended, tmp_path):
    runner = CliRunner()
    listing = json.loads(runner.invoke(app, ["methods", "--json"]).stdout)
    toy = next(m for m in listing["methods"] if m["name"] == "toy-diameter")
    assert toy["options"] == {"steps": 30, "eta": 0.5, "C": 0.25}
    assert "toy-norm" in {a["name"] for a in listing["attacks"]}
    result = runner.invoke(
        app,
        [
            "run",
            "--method",
            "toy-diameter",
            "--attacks",
            "toy-norm",
            "-o",
            "C=0.5",
            "--max-train",
            "1500",
            "--trials",
            "100",
            "--noise-draws",
            "2",
            "--json",
            "-q",
        ],
    )
    assert result.exit_code == 0, result.output  # the release is at chance (a warning); the certificate holds
    d = json.loads(result.stdout)
    assert d["verdict"] == "consistent" and "released-at-chance" in {f["code"] for f in d["findings"]}
    assert d["certificate"]["sensitivity"] == 1.0 and d["method"]["hyperparameters"]["C"] == 0.5
    bad = runner.invoke(app, ["run", "--method", "toy-diameter", "-o", "C=-1", "-q"])
    assert bad.exit_code == 2 and "C must be a finite number > 0" in bad.stderr
