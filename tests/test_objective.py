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


def test_loss_and_grad_is_loss_and_grad_bit_for_bit_under_vmap():
    # relearn's fine-tuning takes both from one forward pass and must measure the same steps
    for model, classes in (("logreg", 3), ("mlp", 3)):
        obj, theta, X, y = _setup(model, classes)
        thetas = torch.stack([theta, 2 * theta, -theta])
        value, g = vmap(obj.loss_and_grad, in_dims=(0, None, None))(thetas, X, y)
        assert torch.equal(value, vmap(obj.loss, in_dims=(0, None, None))(thetas, X, y))
        assert torch.equal(g, vmap(obj.grad, in_dims=(0, None, None))(thetas, X, y))


def test_init_is_a_function_of_the_seed():
    obj, _, _, _ = _setup("mlp")
    a = default_init(obj, torch.Generator().manual_seed(5))
    b = default_init(obj, torch.Generator().manual_seed(5))
    c = default_init(obj, torch.Generator().manual_seed(6))
    assert torch.equal(a, b) and not torch.equal(a, c)


# -- closed forms of linear models, against torch.func on the module itself -------------------
import pytest  # noqa: E402
from torch import nn  # noqa: E402
from torch.func import functional_call, grad, jvp  # noqa: E402


def _reference(obj, theta, X, y):
    """An independent implementation: the module through functional_call, derivatives by torch.func."""

    def per_sample_loss(t, Xb, yb):
        out = functional_call(obj.model, obj.unflatten(t), (Xb,))
        if obj.n_outputs == 1:
            return nn.functional.binary_cross_entropy_with_logits(out.reshape(-1), yb.to(out.dtype), reduction="none")
        return nn.functional.cross_entropy(out, yb, reduction="none")

    def loss(t, Xb, yb):
        return per_sample_loss(t, Xb, yb).mean()

    g = grad(loss)
    return {
        "loss": loss(theta, X, y),
        "per_sample_loss": per_sample_loss(theta, X, y),
        "grad": g(theta, X, y),
        "per_sample_grads": vmap(lambda x, t: g(theta, x.unsqueeze(0), t.unsqueeze(0)))(X, y),
        "hvp": lambda v: jvp(lambda t: g(t, X, y), (theta,), (v,))[1],
        "hessian": torch.func.hessian(loss)(theta, X, y),
    }


LINEAR_CASES = [
    # (name, model factory, record shape, classes)
    ("binary", lambda: nn.Sequential(nn.Linear(5, 1)), (5,), 2),
    ("binary, no bias", lambda: nn.Sequential(nn.Linear(5, 1, bias=False)), (5,), 2),
    ("binary, two logits", lambda: nn.Linear(5, 2), (5,), 2),
    ("softmax", lambda: nn.Sequential(nn.Linear(5, 4)), (5,), 4),
    ("softmax, no bias", lambda: nn.Linear(5, 3, bias=False), (5,), 3),
    ("images: Flatten then Linear", lambda: nn.Sequential(nn.Flatten(), nn.Linear(12, 3)), (1, 3, 4), 3),
    ("Identity, Linear", lambda: nn.Sequential(nn.Identity(), nn.Linear(5, 1)), (5,), 2),
]


def _linear_problem(factory, shape, classes, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    model = factory().to(dtype)
    obj = Objective(model, n_outputs=[m for m in model.modules() if isinstance(m, nn.Linear)][0].out_features)
    X = torch.randn((30, *shape), generator=g, dtype=dtype)
    y = torch.randint(classes, (30,), generator=g)
    theta = torch.randn(obj.dim, generator=g, dtype=dtype)  # far from 0: probabilities not all 1/2
    v = torch.randn(obj.dim, generator=g, dtype=dtype)
    return obj, theta, X, y, v


@pytest.mark.parametrize("dtype,tol", [(torch.float64, 1e-12), (torch.float32, 2e-5)], ids=["float64", "float32"])
@pytest.mark.parametrize("name,factory,shape,classes", LINEAR_CASES, ids=[c[0] for c in LINEAR_CASES])
def test_linear_closed_forms_equal_torch_func(name, factory, shape, classes, dtype, tol):
    obj, theta, X, y, v = _linear_problem(factory, shape, classes, dtype)
    assert obj.linear_layout is not None  # the closed forms are the path under test
    ref = _reference(obj, theta, X, y)
    close = lambda a, b: torch.allclose(a, b, atol=tol, rtol=tol)  # noqa: E731
    assert close(obj.loss(theta, X, y), ref["loss"])
    assert close(obj.per_sample_loss(theta, X, y), ref["per_sample_loss"])
    assert close(obj.grad(theta, X, y), ref["grad"])
    assert obj.per_sample_grads(theta, X, y).shape == (30, obj.dim)
    assert close(obj.per_sample_grads(theta, X, y), ref["per_sample_grads"])
    assert close(obj.hvp(theta, X, y, v), ref["hvp"](v))
    assert close(obj.hvp_fn(theta, X, y)(v), ref["hvp"](v))
    assert close(obj.hessian(theta, X, y), ref["hessian"])
    # the per-sample gradients of a softmax model are not all equal (a layout bug would shuffle rows)
    assert not torch.allclose(ref["per_sample_grads"][0], ref["per_sample_grads"][1])


@pytest.mark.parametrize("name,factory,shape,classes", LINEAR_CASES, ids=[c[0] for c in LINEAR_CASES])
def test_linear_closed_forms_under_vmap(name, factory, shape, classes):
    """Batched over parameter vectors (training.batched_gradient_descent, batched.py) and over
    records (smoothness estimators): the same values as one call at a time through torch.func."""
    obj, theta, X, y, v = _linear_problem(factory, shape, classes, torch.float64, seed=1)
    thetas = torch.stack([theta, 0.5 * theta, -theta])
    refs = [_reference(obj, t, X, y) for t in thetas]
    for fn, key in (
        (obj.grad, "grad"),
        (obj.per_sample_grads, "per_sample_grads"),
        (obj.loss, "loss"),
        (obj.per_sample_loss, "per_sample_loss"),
    ):
        got = vmap(fn, in_dims=(0, None, None))(thetas, X, y)
        assert torch.allclose(got, torch.stack([r[key] for r in refs]), atol=1e-12)
    got = vmap(obj.hvp, in_dims=(0, None, None, None))(thetas, X, y, v)
    assert torch.allclose(got, torch.stack([r["hvp"](v) for r in refs]), atol=1e-12)
    V = torch.stack([v, 2 * v + 1])
    assert torch.allclose(vmap(obj.hvp_fn(theta, X, y))(V), torch.stack([refs[0]["hvp"](u) for u in V]), atol=1e-12)
    # over records: one record at a time, as (1, ...) batches
    one = vmap(lambda x, t: obj.grad(theta, x.unsqueeze(0), t.unsqueeze(0)))(X, y)
    assert torch.allclose(one, refs[0]["per_sample_grads"], atol=1e-12)
    one_hvp = vmap(lambda x, t: obj.hvp(theta, x.unsqueeze(0), t.unsqueeze(0), v))(X, y)
    ref_hvp = torch.stack([_reference(obj, theta, X[i : i + 1], y[i : i + 1])["hvp"](v) for i in range(3)])
    assert torch.allclose(one_hvp[:3], ref_hvp, atol=1e-12)
    # and differentiable: torch.func.grad of the closed-form loss is the closed-form gradient
    assert torch.allclose(grad(obj.loss)(theta, X, y), refs[0]["grad"], atol=1e-12)


def test_batched_gradient_descent_on_a_linear_model_follows_torch_func():
    from unlearners.training import batched_gradient_descent

    obj, theta, X, y, _ = _linear_problem(LINEAR_CASES[3][1], (5,), 4, torch.float64, seed=2)
    thetas0 = torch.stack([theta, -theta])
    got, _ = batched_gradient_descent(obj, thetas0, X, y, eta=0.5, steps=20)
    for row, t0 in zip(got, thetas0):
        t = t0.clone()
        for _ in range(20):
            t = t - 0.5 * _reference(obj, t, X, y)["grad"]
        assert torch.allclose(row, t, atol=1e-12)


@pytest.mark.parametrize(
    "factory",
    [
        lambda: nn.Sequential(nn.Linear(5, 1), nn.Tanh()),  # a non-linearity after the layer
        lambda: nn.Sequential(nn.Flatten(0), nn.Linear(5, 1)),  # not the default Flatten
        lambda: type("Scaled", (nn.Linear,), {"forward": lambda self, x: super(type(self), self).forward(2 * x)})(5, 1),
    ],
    ids=["Linear+Tanh", "Flatten(0)", "Linear subclass"],
)
def test_models_that_only_look_linear_keep_the_torch_func_path(factory):
    model = factory().double()
    obj = Objective(model, n_outputs=1)
    assert (
        obj.linear_layout is None
        and obj.hessian(
            torch.zeros(obj.dim, dtype=torch.float64), torch.zeros(2, 5, dtype=torch.float64), torch.zeros(2)
        )
        is None
    )
    g = torch.Generator().manual_seed(3)
    X = torch.randn(20, 5, generator=g, dtype=torch.float64)
    y = torch.randint(2, (20,), generator=g)
    theta = torch.randn(obj.dim, generator=g, dtype=torch.float64)
    if isinstance(model[0] if isinstance(model, nn.Sequential) else model, nn.Flatten):
        return  # Flatten(0) then Linear cannot read (20, 5) records: only the detection is tested
    ref = _reference(obj, theta, X, y)
    assert torch.allclose(obj.grad(theta, X, y), ref["grad"], atol=1e-12)
    assert torch.allclose(obj.per_sample_grads(theta, X, y), ref["per_sample_grads"], atol=1e-12)


def test_hook_on_the_layer_disables_the_closed_form():
    model = nn.Sequential(nn.Linear(5, 1))
    model[0].register_forward_hook(lambda m, i, o: 2 * o)
    assert Objective(model).linear_layout is None


def test_a_linear_layer_under_an_activation_is_not_logistic_regression():
    """One Linear then Tanh has a logistic regression's parameters but not its constants: it must
    get estimated constants (and the torch.func derivatives), never the closed forms."""
    import torch.nn as tnn

    from unlearners.smoothness import model_constants

    obj = Objective(tnn.Sequential(tnn.Linear(3, 1), tnn.Tanh()).double())
    assert not obj.is_linear and obj.linear_layout is None
    gen = torch.Generator().manual_seed(0)
    X = torch.randn(40, 3, generator=gen, dtype=torch.float64)
    y = (X[:, 0] > 0).long()
    constants = model_constants(obj, X, y, [torch.zeros(obj.dim, dtype=torch.float64)], generator=gen)
    assert {c.provenance for c in constants.values()} == {"estimated"}


def test_a_bare_linear_layer_initialises_like_a_wrapped_one():
    """A model that is one nn.Linear, not wrapped in nn.Sequential, names its parameters "weight" and
    "bias": its bias's fan-in is read from "weight" (it crashed on "bias.weight"), and it draws the same
    theta_0 as the same layer inside a Sequential."""
    bare = Objective(nn.Linear(4, 1).double())
    wrapped = Objective(nn.Sequential(nn.Linear(4, 1)).double())
    a = default_init(bare, torch.Generator().manual_seed(3))
    b = default_init(wrapped, torch.Generator().manual_seed(3))
    assert torch.equal(a, b) and float(a[-1].abs()) <= 0.5  # U(-1/sqrt(4), 1/sqrt(4))
