"""unlearners.linalg against the explicit Hessian of small problems (float64)."""

import pytest
import torch

from certify.errors import InvalidInput
from unlearners.linalg import (
    conjugate_gradient,
    dense_solve,
    empirical_fisher_operator,
    explicit_hessian,
    explicit_matrix,
    fisher_operator,
    gauss_newton_operator,
    hvp_operator,
    lanczos_extremes,
    lissa,
    power_iteration,
    smallest_eigenvalue,
    stochastic_operator,
)
from unlearners.models import build_model
from unlearners.objective import Objective, default_init

from synthetic import synthetic


def _problem(model="logreg", classes=2, n=60, d=4, hidden=(6,), seed=1):
    X, y = synthetic(n=n, d=d, classes=classes, seed=seed)
    opts = {"hidden": hidden} if model == "mlp" else {}
    obj = Objective(build_model(model, d, classes, **opts).double())
    theta = default_init(obj, torch.Generator().manual_seed(0)) * 3  # away from the flat origin
    return obj, theta, X, y


def _autograd_hessian(obj, theta, X, y):
    return torch.autograd.functional.hessian(lambda t: obj.loss(t, X, y), theta)


def _vec(d, seed=2):
    return torch.randn(d, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


CASES = [("logreg", 2), ("logreg", 3), ("mlp", 2), ("mlp", 3)]


@pytest.mark.parametrize("model,classes", CASES)
def test_hvp_operator_and_explicit_hessian_match_autograd(model, classes):
    obj, theta, X, y = _problem(model, classes)
    H = _autograd_hessian(obj, theta, X, y)
    v = _vec(obj.dim)
    assert torch.allclose(hvp_operator(obj, theta, X, y)(v), H @ v, atol=1e-12)
    assert torch.allclose(hvp_operator(obj, theta, X, y, l2=0.3)(v), H @ v + 0.3 * v, atol=1e-12)
    E = explicit_hessian(obj, theta, X, y, l2=0.1, chunk_size=5)
    assert torch.equal(E, E.T)
    assert torch.allclose(E, H + 0.1 * torch.eye(obj.dim, dtype=H.dtype), atol=1e-12)


def test_solvers_agree_with_torch_solve():
    obj, theta, X, y = _problem("mlp", 3)
    l2 = max(0.0, -float(torch.linalg.eigvalsh(explicit_hessian(obj, theta, X, y))[0])) + 0.05
    H = explicit_hessian(obj, theta, X, y, l2=l2)  # damped just enough to be PD (indefinite MLP)
    b = _vec(obj.dim, seed=5)
    expected = torch.linalg.solve(H, b)
    assert torch.allclose(dense_solve(H, b), expected, atol=1e-9, rtol=1e-9)
    B = torch.stack([b, 2 * b], dim=1)
    assert torch.allclose(dense_solve(H, B)[:, 1], 2 * expected, atol=1e-8)
    x, info = conjugate_gradient(hvp_operator(obj, theta, X, y, l2=l2), b, tol=1e-12)
    assert info["converged"] and not info["negative_curvature"]
    assert info["iterations"] <= 2 * obj.dim
    assert torch.allclose(x, expected, atol=1e-7 * float(expected.norm()))
    assert info["residual_norm"] < 1e-9 * float(b.norm())
    # damping argument of dense_solve equals adding it to H
    assert torch.allclose(
        dense_solve(H, b, damping=0.2), torch.linalg.solve(H + 0.2 * torch.eye(obj.dim, dtype=H.dtype), b), atol=1e-9
    )


def test_cg_warm_start_and_iteration_cap():
    A = torch.diag(torch.linspace(1.0, 10.0, 8, dtype=torch.float64))
    b = torch.ones(8, dtype=torch.float64)
    exact = b / torch.diagonal(A)
    x, info = conjugate_gradient(lambda v: A @ v, b, x0=exact)
    assert info["converged"] and info["iterations"] == 0 and torch.allclose(x, exact)
    x, info = conjugate_gradient(lambda v: A @ v, b, max_iter=2)
    assert info["iterations"] == 2 and not info["converged"] and info["residual_norm"] > 1e-6


def test_cg_zero_rhs_and_negative_curvature():
    A = torch.diag(torch.tensor([2.0, 1.0, -1.0], dtype=torch.float64))
    x, info = conjugate_gradient(lambda v: A @ v, torch.zeros(3, dtype=torch.float64))
    assert info["converged"] and float(x.abs().max()) == 0.0
    _, info = conjugate_gradient(lambda v: A @ v, torch.tensor([0.0, 0.0, 1.0], dtype=torch.float64))
    assert info["negative_curvature"] and not info["converged"]


def test_lissa_converges_to_the_dense_solve():
    obj, theta, X, y = _problem("logreg", 2)
    l2 = 0.05
    H = explicit_hessian(obj, theta, X, y, l2=l2)
    b = _vec(obj.dim, seed=7)
    expected = torch.linalg.solve(H, b)
    top = float(torch.linalg.eigvalsh(H)[-1])
    scale = 1.5 * top
    # error factor (1 − λ_min/s)^(J+1) with λ_min >= 0.05 and s < 1
    x, info = lissa(hvp_operator(obj, theta, X, y), b, scale=scale, damping=l2, depth=400)
    assert not info["diverged"] and info["matvecs"] == 400
    assert torch.allclose(x, expected, atol=1e-8 * float(expected.norm()))
    # the same thing with the damping folded into the operator
    x2, _ = lissa(hvp_operator(obj, theta, X, y, l2=l2), b, scale=scale, depth=400)
    assert torch.allclose(x, x2, atol=1e-10)


def test_lissa_truncation_is_the_neumann_partial_sum():
    A = torch.diag(torch.tensor([0.5, 0.1], dtype=torch.float64))
    b = torch.tensor([1.0, 1.0], dtype=torch.float64)
    s, J = 2.0, 7
    x, _ = lissa(lambda v: A @ v, b, scale=s, depth=J)
    M = torch.eye(2, dtype=torch.float64) - A / s
    expected = sum(torch.linalg.matrix_power(M, i) @ b for i in range(J + 1)) / s
    assert torch.allclose(x, expected, atol=1e-14)


def test_stochastic_lissa_is_close_and_reproducible():
    obj, theta, X, y = _problem("logreg", 2, n=200)
    l2 = 0.1
    H = explicit_hessian(obj, theta, X, y, l2=l2)
    b = _vec(obj.dim, seed=8)
    expected = torch.linalg.solve(H, b)
    op = stochastic_operator(hvp_operator, obj, theta, X, y, batch_size=50)
    # per-batch Hessian of the logistic loss with unit-norm rows is <= 1/4·‖(x,1)‖² = 1/2
    kw = dict(scale=2.0, damping=l2, depth=300, repeats=4, stochastic=True)
    x, info = lissa(op, b, generator=torch.Generator().manual_seed(0), **kw)
    x_again, _ = lissa(op, b, generator=torch.Generator().manual_seed(0), **kw)
    assert torch.equal(x, x_again)
    assert info["repeat_std"] > 0
    assert float((x - expected).norm()) < 0.1 * float(expected.norm())
    with pytest.raises(InvalidInput, match="generator"):
        lissa(op, b, scale=2.0, depth=3, stochastic=True)


def test_lissa_divergence_is_detected():
    A = torch.diag(torch.tensor([3.0, 1.0], dtype=torch.float64))
    b = torch.ones(2, dtype=torch.float64)
    with pytest.raises(InvalidInput, match="scale"):
        lissa(lambda v: A @ v, b, scale=1.0, depth=50)  # ‖A‖ = 3 > 2·scale
    with pytest.warns(RuntimeWarning, match="diverges"):
        _, info = lissa(lambda v: A @ v, b, scale=1.0, depth=5, on_divergence="warn")
    assert info["diverged"]
    N = torch.diag(torch.tensor([1.0, -0.1], dtype=torch.float64))  # indefinite
    with pytest.raises(InvalidInput):
        lissa(lambda v: N @ v, b, scale=2.0, depth=200)


@pytest.mark.parametrize("model,classes", [("logreg", 2), ("mlp", 2), ("mlp", 3)])
def test_power_iteration_and_lanczos_match_eigvalsh(model, classes):
    obj, theta, X, y = _problem(model, classes)
    H = explicit_hessian(obj, theta, X, y)
    ev = torch.linalg.eigvalsh(H)
    lo, hi = float(ev[0]), float(ev[-1])
    spread = hi - lo
    op = hvp_operator(obj, theta, X, y)
    g = torch.Generator().manual_seed(0)
    top, v = power_iteration(op, obj.dim, iters=500, generator=g, tol=1e-14)
    assert abs(top - hi) <= 1e-6 * spread and top <= hi + 1e-12
    assert abs(float(v.norm()) - 1) < 1e-12
    bottom, u = smallest_eigenvalue(op, obj.dim, largest=hi, iters=3000, generator=g, tol=1e-15)
    assert abs(bottom - lo) <= 1e-3 * spread and bottom >= lo - 1e-12
    l_lo, l_hi = lanczos_extremes(op, obj.dim, iters=obj.dim, generator=g)
    assert abs(l_lo - lo) <= 1e-8 * spread and abs(l_hi - hi) <= 1e-8 * spread


def test_power_iteration_on_indefinite_matrix_returns_algebraic_largest():
    A = torch.diag(torch.tensor([1.0, 0.5, -3.0, -2.0], dtype=torch.float64))
    g = torch.Generator().manual_seed(0)
    top, _ = power_iteration(lambda v: A @ v, 4, iters=300, generator=g)
    assert abs(top - 1.0) < 1e-6
    bottom, _ = smallest_eigenvalue(lambda v: A @ v, 4, iters=300, generator=g)
    assert abs(bottom + 3.0) < 1e-6


@pytest.mark.parametrize("classes", [2, 3])
def test_gauss_newton_equals_hessian_for_logistic_regression(classes):
    obj, theta, X, y = _problem("logreg", classes)
    H = _autograd_hessian(obj, theta, X, y)
    G = explicit_matrix(
        gauss_newton_operator(obj, theta, X, y, l2=0.2), obj.dim, dtype=theta.dtype, device=theta.device
    )
    assert torch.allclose(G, H + 0.2 * torch.eye(obj.dim, dtype=H.dtype), atol=1e-12)
    assert fisher_operator is gauss_newton_operator


@pytest.mark.parametrize("classes", [2, 3])
def test_gauss_newton_is_psd_for_the_mlp_and_differs_from_the_hessian(classes):
    obj, theta, X, y = _problem("mlp", classes)
    G = explicit_matrix(gauss_newton_operator(obj, theta, X, y), obj.dim, dtype=theta.dtype, device=theta.device)
    ev = torch.linalg.eigvalsh(G)
    assert float(ev[0]) >= -1e-12 * float(ev[-1])
    H = _autograd_hessian(obj, theta, X, y)
    assert float((G - H).abs().max()) > 1e-4  # the residual term of a non-linear model
    # explicit J^T Λ J from the logits' Jacobian
    J = torch.func.jacrev(lambda t: obj.logits(t, X))(theta)
    out = obj.logits(theta, X)
    if classes == 2:
        p = torch.sigmoid(out)
        expected = J.T @ (J * (p * (1 - p))[:, None]) / X.shape[0]
    else:
        p = torch.softmax(out, -1)
        Lam = torch.diag_embed(p) - p[:, :, None] * p[:, None, :]
        expected = torch.einsum("nkd,nkl,nle->de", J, Lam, J) / X.shape[0]
    assert torch.allclose(G, expected, atol=1e-12)


def test_empirical_fisher():
    obj, theta, X, y = _problem("mlp", 3)
    g = obj.per_sample_grads(theta, X, y)
    v = _vec(obj.dim)
    expected = g.T @ (g @ v) / X.shape[0] + 0.1 * v
    assert torch.allclose(empirical_fisher_operator(obj, theta, X, y, l2=0.1)(v), expected, atol=1e-12)


def test_stochastic_operator_is_unbiased_minibatch_hvp():
    obj, theta, X, y = _problem("logreg", 2, n=30)
    op = stochastic_operator(hvp_operator, obj, theta, X, y, batch_size=7, l2=0.5)
    v = _vec(obj.dim)
    g = torch.Generator().manual_seed(3)
    idx = torch.randint(30, (7,), generator=torch.Generator().manual_seed(3))
    expected = hvp_operator(obj, theta, X[idx], y[idx], l2=0.5)(v)
    assert torch.allclose(op(v, g), expected, atol=1e-14)


def test_dense_solve_rejects_indefinite_matrix_with_smallest_eigenvalue():
    H = torch.diag(torch.tensor([2.0, 1.0, -0.5], dtype=torch.float64))
    b = torch.ones(3, dtype=torch.float64)
    with pytest.raises(InvalidInput, match=r"smallest eigenvalue -0\.5") as err:
        dense_solve(H, b)
    assert "damping > 0.5" in str(err.value)
    assert torch.allclose(dense_solve(H, b, damping=1.0), b / torch.tensor([3.0, 2.0, 0.5], dtype=torch.float64))
    with pytest.raises(InvalidInput, match="square"):
        dense_solve(torch.ones(2, 3, dtype=torch.float64), b)
    with pytest.raises(InvalidInput, match="damping"):
        dense_solve(H, b, damping=-1.0)


def test_bad_input():
    obj, theta, X, y = _problem()
    with pytest.raises(InvalidInput, match="theta"):
        hvp_operator(obj, theta[:-1], X, y)
    with pytest.raises(InvalidInput, match="l2"):
        gauss_newton_operator(obj, theta, X, y, l2=-1)
    with pytest.raises(InvalidInput, match="v must"):
        hvp_operator(obj, theta, X, y)(torch.ones(2, dtype=torch.float64))
    op = hvp_operator(obj, theta, X, y)
    b = torch.ones(obj.dim, dtype=torch.float64)
    for kw in (
        {"scale": 0, "depth": 3},
        {"scale": 1.0, "depth": 0},
        {"scale": 1.0, "depth": 3, "repeats": 0},
        {"scale": 1.0, "depth": 3, "on_divergence": "skip"},
    ):
        with pytest.raises(InvalidInput):
            lissa(op, b, **kw)
    with pytest.raises(InvalidInput, match="iters"):
        power_iteration(op, obj.dim, iters=0, generator=torch.Generator())


def test_operators_work_under_no_grad_and_in_float32():
    obj, theta, X, y = _problem("mlp", 2)
    v = _vec(obj.dim)
    with torch.no_grad():
        a = hvp_operator(obj, theta, X, y)(v)
        gn = gauss_newton_operator(obj, theta, X, y)(v)
    assert torch.allclose(a, hvp_operator(obj, theta, X, y)(v))
    assert torch.allclose(gn, gauss_newton_operator(obj, theta, X, y)(v))
    obj32 = Objective(build_model("mlp", 4, 2, hidden=(6,)))
    t32 = theta.float()
    out = gauss_newton_operator(obj32, t32, X.float(), y)(v.float())
    assert out.dtype == torch.float32 and torch.allclose(out.double(), gn, atol=1e-5)


@pytest.mark.parametrize("model,classes", [("logreg", 2), ("logreg", 3), ("mlp", 2), ("mlp", 3)])
def test_one_shot_product_of_a_lissa_step_matches_autograd_hessian(model, classes):
    """hvp_once (closed form, or autograd double backward) on each drawn batch: the explicit
    Hessian of that batch times v, also under torch.no_grad (the LiSSA loop may run inside one)."""
    from unlearners.linalg import hvp_once

    obj, theta, X, y = _problem(model, classes)
    v = _vec(obj.dim)
    for idx in (torch.arange(10), torch.tensor([3, 3, 7])):
        H = _autograd_hessian(obj, theta, X[idx], y[idx])
        with torch.no_grad():
            got = hvp_once(obj, theta, X[idx], y[idx], v, l2=0.3)
        assert torch.allclose(got, H @ v + 0.3 * v, atol=1e-12)
    op = stochastic_operator(hvp_operator, obj, theta, X, y, batch_size=5, l2=0.3)
    g1, g2 = torch.Generator().manual_seed(4), torch.Generator().manual_seed(4)
    idx = torch.randint(X.shape[0], (5,), generator=g2)
    assert torch.allclose(op(v, g1), _autograd_hessian(obj, theta, X[idx], y[idx]) @ v + 0.3 * v, atol=1e-12)
