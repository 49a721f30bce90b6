"""Closed-form constants of logistic regression really bound gradients and curvature."""

import math

import pytest
import torch

from certify.constants import estimated_constant, logistic_regression_constants
from certify.errors import InvalidInput
from unlearners.models import build_model
from unlearners.objective import Objective
from unlearners.smoothness import model_constants

from synthetic import synthetic


@pytest.mark.parametrize("classes", [2, 4])
def test_closed_form_bounds_hold_at_random_and_extreme_parameters(classes):
    X, y = synthetic(n=200, d=5, classes=classes, seed=2)
    X = X * 1.7  # R = 1.7
    obj = Objective(build_model("logreg", 5, classes).double())
    G, L = logistic_regression_constants(float(X.norm(dim=1).max()), classes)
    assert G.provenance == L.provenance == "analytic"
    g = torch.Generator().manual_seed(0)
    worst_g, worst_h = 0.0, 0.0
    for scale in (0.0, 1.0, 10.0, 100.0):
        theta = scale * torch.randn(obj.dim, generator=g, dtype=torch.float64)
        worst_g = max(worst_g, float(obj.per_sample_grads(theta, X, y).norm(dim=1).max()))
        for i in range(0, 200, 20):
            H = torch.autograd.functional.hessian(lambda t: obj.loss(t, X[i:i + 1], y[i:i + 1]), theta)
            worst_h = max(worst_h, float(torch.linalg.eigvalsh(H).abs().max()))
    assert worst_g <= G.value * (1 + 1e-12)  # strict in exact arithmetic; softmax saturates in floats
    assert worst_h <= L.value * (1 + 1e-12)
    # the bounds are tight to within a small factor, not vacuous
    assert worst_g > 0.5 * G.value


def test_known_values():
    G, L = logistic_regression_constants(1.0, 2)
    assert G.value == pytest.approx(math.sqrt(2)) and L.value == pytest.approx(0.5)
    G, L = logistic_regression_constants(1.0, 10)
    assert G.value == pytest.approx(2.0) and L.value == pytest.approx(1.0)


def test_bad_inputs_name_the_field():
    with pytest.raises(InvalidInput, match="n_classes"):
        logistic_regression_constants(1.0, 1)
    with pytest.raises(InvalidInput, match="max_feature_norm"):
        logistic_regression_constants(float("nan"), 2)
    with pytest.raises(InvalidInput, match="safety_factor"):
        estimated_constant("L", [1.0], safety_factor=0.5, description="", estimator="")


def test_estimated_constants_for_mlp_are_flagged_and_cover_samples():
    X, y = synthetic(n=100, d=4, seed=4)
    obj = Objective(build_model("mlp", 4, 2, hidden=(8,)).double())
    theta = torch.randn(obj.dim, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    consts = model_constants(obj, X, y, [theta], generator=torch.Generator().manual_seed(0),
                             records_for_smoothness=100)
    assert consts["G"].provenance == consts["L"].provenance == "estimated"
    assert consts["G"].diagnostics["safety_factor"] == 1.2
    assert float(obj.per_sample_grads(theta, X, y).norm(dim=1).max()) <= consts["G"].value
    H = torch.autograd.functional.hessian(lambda t: obj.loss(t, X[:1], y[:1]), theta)
    assert float(torch.linalg.eigvalsh(H).abs().max()) <= consts["L"].value


def test_user_overrides_are_assumed():
    X, y = synthetic(n=50, d=3)
    obj = Objective(build_model("logreg", 3, 2).double())
    consts = model_constants(obj, X, y, [], generator=torch.Generator(), overrides={"L": 2.0})
    assert consts["L"].provenance == "assumed" and consts["L"].value == 2.0
    assert consts["G"].provenance == "analytic"
