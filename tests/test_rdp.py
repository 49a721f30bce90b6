"""certify.rdp: the Rényi-DP mathematics the ledger composes (one Gaussian release, conversion to
(ε, δ), basic composition), checked against independent closed forms (no Opacus)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from certify.errors import InvalidInput
from certify.rdp import (
    DEFAULT_ORDERS,
    basic_composition_epsilon,
    check_orders,
    gaussian_release_rdp,
    rdp_to_epsilon,
)
from test_ledger import DELTA, Z_EPS1, balle_epsilon, closed_form_rdp, mironov_epsilon


def test_default_orders_are_opacus_defaults():
    from opacus.accountants.rdp import RDPAccountant

    assert DEFAULT_ORDERS == tuple(float(a) for a in RDPAccountant.DEFAULT_ALPHAS)
    assert len(DEFAULT_ORDERS) == 151 and min(DEFAULT_ORDERS) > 1


@pytest.mark.parametrize(
    ("sigma", "sensitivity"),
    [(1.0, 1.0), (Z_EPS1, 1.0), (0.3, 2.5), (12.0, 0.01), (7.5e-3, 4e-4), (250.0, 3.0)],
)
def test_release_rdp_closed_form(sigma, sensitivity):
    got = gaussian_release_rdp(sigma, sensitivity)
    want = closed_form_rdp(sigma, sensitivity)
    assert got.shape == (len(DEFAULT_ORDERS),)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)


def test_release_rdp_custom_orders():
    got = gaussian_release_rdp(2.0, 1.0, orders=[2.0, 32.0, 1000.0])
    np.testing.assert_allclose(got, [0.25, 4.0, 125.0], rtol=1e-12)


def test_release_rdp_edge_cases():
    n = len(DEFAULT_ORDERS)
    np.testing.assert_array_equal(gaussian_release_rdp(1.0, 0.0), np.zeros(n))
    np.testing.assert_array_equal(gaussian_release_rdp(0.0, 0.0), np.zeros(n))
    np.testing.assert_array_equal(gaussian_release_rdp(math.inf, 5.0), np.zeros(n))
    assert np.all(np.isinf(gaussian_release_rdp(0.0, 1.0)))
    assert np.all(np.isinf(gaussian_release_rdp(5.0, math.inf)))  # no bound on the distance


@pytest.mark.parametrize("z", [0.8, 1.5, Z_EPS1, 10.0, 40.0])
@pytest.mark.parametrize("delta", [1e-3, 1e-5, 1e-9])
def test_conversion_matches_balle_formula(z, delta):
    rdp = closed_form_rdp(z, 1.0)
    eps, order = rdp_to_epsilon(rdp, DEFAULT_ORDERS, delta)
    want_eps, want_order = balle_epsilon(rdp, DEFAULT_ORDERS, delta)
    assert math.isclose(eps, want_eps, rel_tol=1e-9, abs_tol=1e-12)
    assert order == want_order
    assert eps <= mironov_epsilon(rdp, DEFAULT_ORDERS, delta)


def test_conversion_special_cases():
    assert rdp_to_epsilon(np.zeros(3), [2.0, 3.0, 4.0], DELTA) == (0.0, None)
    assert rdp_to_epsilon([math.inf] * 3, [2.0, 3.0, 4.0], DELTA) == (math.inf, None)
    # tiny RDP at a large δ: the formula goes negative, and ε is reported as 0
    assert rdp_to_epsilon([1e-9, 1e-9], [50.0, 60.0], 0.5)[0] == 0.0


def test_library_is_silent_at_grid_edge():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        eps, order = rdp_to_epsilon(closed_form_rdp(500.0, 1.0), DEFAULT_ORDERS, DELTA)
    assert order == max(DEFAULT_ORDERS) and eps > 0


def test_basic_composition_values_and_errors():
    assert basic_composition_epsilon([], []) == (0.0, 0.0)
    assert basic_composition_epsilon([0.5, 1.5, math.inf], [1e-5, 0.0, 2e-5]) == (
        math.inf,
        pytest.approx(3e-5),
    )
    for eps, dls, field in [
        ([1.0, -1.0], [0.1, 0.1], "epsilons"),
        ([math.nan], [0.1], "epsilons"),
        ([1.0], [1.5], "deltas"),
        ([1.0], [-0.1], "deltas"),
        ([1.0, 1.0], [0.1], "deltas"),
    ]:
        with pytest.raises(InvalidInput) as err:
            basic_composition_epsilon(eps, dls)
        assert err.value.field == field


def test_function_bad_inputs():
    for call, field in [
        (lambda: gaussian_release_rdp(math.nan, 1.0), "sigma"),
        (lambda: gaussian_release_rdp(1.0, -1.0), "sensitivity"),
        (lambda: gaussian_release_rdp(1.0, 1.0, orders=[0.5]), "orders"),
        (lambda: rdp_to_epsilon([0.1, 0.2], [2.0, 3.0], 0.0), "delta"),
        (lambda: rdp_to_epsilon([0.1, 0.2], [2.0, 3.0], 1.0), "delta"),
        (lambda: rdp_to_epsilon([0.1], [2.0, 3.0], DELTA), "rdp"),
        (lambda: rdp_to_epsilon([0.1, math.nan], [2.0, 3.0], DELTA), "rdp"),
        (lambda: rdp_to_epsilon([0.1, -0.2], [2.0, 3.0], DELTA), "rdp"),
    ]:
        with pytest.raises(InvalidInput) as err:
            call()
        assert err.value.field == field


def test_check_orders():
    np.testing.assert_array_equal(check_orders((1.5, 2, 64)), [1.5, 2.0, 64.0])
    for bad in ([], [1.0], [2.0, math.nan], [[2.0, 3.0]], "abc", None):
        with pytest.raises(InvalidInput) as err:
            check_orders(bad)
        assert err.value.field == "orders"


def test_messages_name_the_field_and_the_allowed_values():
    with pytest.raises(InvalidInput, match=r"^sigma must be a number >= 0; got -1\.0"):
        gaussian_release_rdp(-1.0, 1.0)
    with pytest.raises(InvalidInput, match=r"^deltas must be a number in \[0, 1\]; got 1\.5"):
        basic_composition_epsilon([1.0], [1.5])
    with pytest.raises(InvalidInput, match="^sensitivity must be"):
        gaussian_release_rdp(1.0, True)  # a bool is not a number
