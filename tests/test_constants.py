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
            H = torch.autograd.functional.hessian(lambda t: obj.loss(t, X[i : i + 1], y[i : i + 1]), theta)
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
    consts = model_constants(obj, X, y, [theta], generator=torch.Generator().manual_seed(0), records_for_smoothness=100)
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


# -- the sampler: only what is asked, each iterate once, the MLP path equal to the generic one ----
from torch import nn  # noqa: E402

from unlearners.smoothness import _MLP, ConstantSampler  # noqa: E402


def _mlps():
    yield "softplus-binary", build_model("mlp", 4, 2, hidden=(8,)), 2
    yield "tanh-3", build_model("mlp", 4, 3, hidden=(6, 5), activation="tanh"), 3
    yield "gelu-4", build_model("mlp", 4, 4, hidden=(7,), activation="gelu"), 4
    # a leading Flatten, two linear layers in a row, a layer without bias, a sigmoid
    yield (
        "mixed",
        nn.Sequential(nn.Flatten(), nn.Linear(4, 6), nn.Linear(6, 5, bias=False), nn.Sigmoid(), nn.Linear(5, 3)),
        3,
    )


@pytest.mark.parametrize("name, model, classes", list(_mlps()), ids=[m[0] for m in _mlps()])
def test_mlp_estimators_equal_the_generic_ones(name, model, classes):
    """The layer-structured G and L (ghost norms, factored power iteration) compute the generic
    estimators' numbers to rounding, from the same random draws: the estimate is not weakened."""
    X, y = synthetic(n=300, d=4, classes=classes, seed=4)
    obj = Objective(model.double())
    assert _MLP.of(obj) is not None
    thetas = {t: torch.randn(obj.dim, generator=torch.Generator().manual_seed(t), dtype=torch.float64) for t in (1, 2)}
    found = {}
    for structured in (None, False):
        sampler = ConstantSampler(
            obj,
            X,
            y,
            generator=torch.Generator().manual_seed(0),
            structured=structured,
            records_for_smoothness=60,
            chunk=128,
        )
        found[structured] = sampler.constants(thetas)
    for c in ("G", "L"):
        new, old = found[None][c], found[False][c]
        assert new.value == pytest.approx(old.value, rel=1e-12)
        assert new.diagnostics["mean"] == pytest.approx(old.diagnostics["mean"], rel=1e-10)
        assert new.diagnostics["n_samples"] == old.diagnostics["n_samples"]


def test_mlp_path_only_for_plain_mlps():
    assert _MLP.of(Objective(build_model("cnn", (1, 12, 12), 3, channels=(2, 2), kernel=3))) is None
    assert _MLP.of(Objective(nn.Sequential(nn.Linear(4, 5), nn.ReLU(), nn.Linear(5, 1)))) is None  # not listed

    class Custom(nn.Sequential):  # may override forward: not trusted
        pass

    assert _MLP.of(Objective(Custom(nn.Linear(4, 5), nn.Tanh(), nn.Linear(5, 1)))) is None
    assert _MLP.of(Objective(build_model("logreg", 4, 2))) is None  # closed form instead


def test_split_estimate_equals_one_call_and_samples_each_iterate_once():
    """R2D asks for L at θ_0 (its step size), then for G and L along the trajectory: the θ_0
    samples are reused, and the result equals one call at all iterates with the same seed."""
    X, y = synthetic(n=150, d=4, seed=3)
    obj = Objective(build_model("mlp", 4, 2, hidden=(8,)).double())
    points = {
        t: torch.randn(obj.dim, generator=torch.Generator().manual_seed(t), dtype=torch.float64) for t in range(4)
    }
    sampler = ConstantSampler(obj, X, y, generator=torch.Generator().manual_seed(9))
    first = sampler.constants({0: points[0]}, which=("L",))
    assert set(first) == {"L"} and sampler.computed == {"G": 0, "L": 1}  # only what was asked
    split = sampler.constants(points)
    assert sampler.computed == {"G": 4, "L": 4}  # θ_0's L was not sampled twice
    whole = model_constants(obj, X, y, list(points.values()), generator=torch.Generator().manual_seed(9))
    for c in ("G", "L"):
        assert split[c].value == whole[c].value and split[c].diagnostics == whole[c].diagnostics


def test_which_and_pinned_skip_estimation():
    X, y = synthetic(n=80, d=4, seed=3)
    obj = Objective(build_model("mlp", 4, 2, hidden=(5,)).double())
    theta = torch.zeros(obj.dim, dtype=torch.float64)
    sampler = ConstantSampler(obj, X, y, generator=torch.Generator().manual_seed(0))
    L = sampler.constants({0: theta}, which=("L",))["L"]
    out = sampler.constants({0: theta, 1: theta + 0.1}, pinned={"L": L, "G": L}, overrides={"G": 3.0})
    assert out["L"] is L and out["G"].provenance == "assumed" and out["G"].value == 3.0
    assert sampler.computed == {"G": 0, "L": 1}
