"""unlearners.lanczos: the residual stopping rule never reports a value inside the spectrum's ends."""

import pytest
import torch

from certify.errors import InvalidInput
from unlearners.lanczos import lanczos_bounds, lanczos_extremes


def _matrix(eigenvalues, seed=0):
    """A dense symmetric matrix with the given spectrum, in a random orthogonal basis."""
    ev = torch.tensor(eigenvalues, dtype=torch.float64)
    Q, _ = torch.linalg.qr(
        torch.randn(len(ev), len(ev), generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    )
    return Q @ torch.diag(ev) @ Q.T, ev


def _spectrum(d, seed):
    """A Hessian-like indefinite spectrum: a cluster of large eigenvalues, a bulk near 0, a negative tail."""
    g = torch.Generator().manual_seed(seed)
    bulk = torch.rand(d - 6, generator=g, dtype=torch.float64) * 0.2 - 0.05
    return [3.2, 3.1, 2.9, -0.31, -0.25, -0.2, *bulk.tolist()]


@pytest.mark.parametrize("seed", range(6))
def test_bounds_enclose_the_spectrum_ends(seed):
    A, ev = _matrix(_spectrum(200, seed), seed)
    out = lanczos_bounds(
        lambda v: A @ v, 200, max_iters=60, tol=1e-3, min_iters=12, generator=torch.Generator().manual_seed(seed)
    )
    lo, hi = float(ev.min()), float(ev.max())
    assert out.upper >= hi and out.lower <= lo  # never under-estimates |lambda| at either end
    assert out.ritz_max <= hi + 1e-12 and out.ritz_min >= lo - 1e-12  # Ritz values sit inside
    assert out.upper - hi <= 1e-3 * 3.2 + 1e-12 and lo - out.lower <= 1e-3 * 3.2 + 1e-12  # within the stated error
    assert out.converged and 12 <= out.products < 60  # the rule stopped early


def test_no_stopping_rule_reproduces_the_ritz_values():
    A, ev = _matrix(_spectrum(40, 7), 7)
    lo, hi = lanczos_extremes(lambda v: A @ v, 40, iters=40, generator=torch.Generator().manual_seed(0))
    assert abs(lo - float(ev.min())) < 1e-10 and abs(hi - float(ev.max())) < 1e-10


def test_unconverged_bounds_still_carry_their_residuals():
    A, ev = _matrix(_spectrum(200, 3), 3)
    out = lanczos_bounds(lambda v: A @ v, 200, max_iters=4, tol=1e-12, generator=torch.Generator().manual_seed(0))
    assert not out.converged and out.products == 4
    assert out.residual_max > 0 and out.upper == out.ritz_max + out.residual_max
    assert "4 of at most 4" in out.describe(4, 1e-12) and "stopped once" not in out.describe(4, 1e-12)


def test_invariant_subspace_is_exact():
    A = torch.diag(torch.tensor([2.0, -1.0, 0.5], dtype=torch.float64))
    out = lanczos_bounds(lambda v: A @ v, 3, max_iters=10, tol=0.0, generator=torch.Generator().manual_seed(0))
    assert out.products == 3 and abs(out.upper - 2.0) < 1e-12 and abs(out.lower + 1.0) < 1e-12


@pytest.mark.parametrize(
    "field,kwargs", [("max_iters", {"max_iters": 0}), ("tol", {"tol": -1.0}), ("min_iters", {"min_iters": 0})]
)
def test_bad_arguments(field, kwargs):
    args = {"max_iters": 5, "tol": 1e-3, **kwargs}
    with pytest.raises(InvalidInput, match=field):
        lanczos_bounds(lambda v: v, 3, generator=torch.Generator().manual_seed(0), **args)
