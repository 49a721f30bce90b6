"""The functional core: derivatives agree with autograd on explicit Hessians; vmap works."""

import torch
from torch.func import vmap

from unlearners.models import build_model
from unlearners.objective import Objective, default_init

from synthetic import synthetic


def _setup(model="logreg", classes=2, hidden=(7,)):
    X, y = synthetic(n=40, d=4, classes=classes, seed=1)
    opts = {"hidden": hidden} if model == "mlp" else {}
    obj = Objective(build_model(model, 4, classes, **opts).double())
    theta = default_init(obj, torch.Generator().manual_seed(0))
    return obj, theta, X, y


def test_layout_round_trip():
    obj, theta, _, _ = _setup("mlp")
    assert obj.dim == 4 * 7 + 7 + 7 * 1 + 1
    assert torch.equal(obj.flatten(obj.unflatten(theta)), theta)
    assert not obj.is_linear and _setup()[0].is_linear


def test_grad_matches_autograd_and_per_sample_mean():
    for model, classes in (("logreg", 2), ("logreg", 3), ("mlp", 2), ("mlp", 3)):
        obj, theta, X, y = _setup(model, classes)
        t = theta.clone().requires_grad_()
        expected = torch.autograd.grad(obj.loss(t, X, y), t)[0]
        assert torch.allclose(obj.grad(theta, X, y), expected, atol=1e-12)
        assert torch.allclose(obj.per_sample_grads(theta, X, y).mean(0), expected, atol=1e-12)


def test_hvp_matches_explicit_hessian():
    for model in ("logreg", "mlp"):
        obj, theta, X, y = _setup(model, 3)
        H = torch.autograd.functional.hessian(lambda t: obj.loss(t, X, y), theta)
        v = torch.randn(obj.dim, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
        assert torch.allclose(obj.hvp(theta, X, y, v), H @ v, atol=1e-10)


def test_binary_loss_is_logistic_loss():
    obj, theta, X, y = _setup()
    z = X @ theta[:4] + theta[4]
    expected = torch.nn.functional.softplus(z) - y * z
    assert torch.allclose(obj.per_sample_loss(theta, X, y), expected, atol=1e-12)


def test_vmap_over_parameter_vectors():
    obj, theta, X, y = _setup("mlp")
    thetas = torch.stack([theta, 2 * theta, -theta])
    batched = vmap(obj.loss, in_dims=(0, None, None))(thetas, X, y)
    assert torch.allclose(batched, torch.stack([obj.loss(t, X, y) for t in thetas]))


def test_init_is_a_function_of_the_seed():
    obj, _, _, _ = _setup("mlp")
    a = default_init(obj, torch.Generator().manual_seed(5))
    b = default_init(obj, torch.Generator().manual_seed(5))
    c = default_init(obj, torch.Generator().manual_seed(6))
    assert torch.equal(a, b) and not torch.equal(a, c)
