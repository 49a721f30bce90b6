"""Group privacy of a record-level DP guarantee (certify.bounds.group), checked by hand."""

import math
import warnings

import numpy as np
import pytest
from opacus.accountants.analysis.rdp import compute_rdp, get_privacy_spent

from certify.bounds.group import (
    classic_group_epsilon,
    classic_group_privacy,
    dpsgd_group_epsilon,
    dpsgd_group_rdp_epsilon,
    dpsgd_rdp_epsilon,
    group_levels,
    rdp_group_privacy,
    rdp_to_dp,
)
from certify.errors import InvalidInput
from certify.mechanisms import epsilon_for

Z, Q, T = 1.5, 0.05, 200  # a small DP-SGD run: noise multiplier, Poisson rate, steps


def _gaussian_curve(sigma=3.0):
    """ε(δ) of a Gaussian mechanism with sensitivity 1 (exact, Balle & Wang)."""
    return lambda d: epsilon_for(sigma, d, 1.0, "analytic")


def test_classic_conversion_known_values():
    assert classic_group_privacy(1.0, 1e-5, 1) == (1.0, pytest.approx(1e-5, rel=1e-12))
    eps, delta = classic_group_privacy(1.0, 1e-5, 2)
    assert eps == 2.0 and delta == pytest.approx(2 * math.e * 1e-5, rel=1e-12)
    eps, delta = classic_group_privacy(0.5, 1e-6, 4)
    assert eps == 2.0 and delta == pytest.approx(4 * math.exp(1.5) * 1e-6, rel=1e-12)
    assert classic_group_privacy(1.0, 0.0, 5) == (5.0, 0.0)  # pure DP: Dwork & Roth Thm 2.2
    assert classic_group_privacy(1.0, 1e-5, 1000)[1] == math.inf  # vacuous, reported as such
    for bad in (0, 1.5, True, -2):
        with pytest.raises(InvalidInput) as err:
            classic_group_privacy(1.0, 1e-5, bad)
        assert err.value.field == "m"
    with pytest.raises(InvalidInput) as err:
        classic_group_privacy(1.0, 1.0, 2)
    assert err.value.field == "delta"


def test_classic_route_keeps_the_group_delta_and_is_near_optimal():
    curve = _gaussian_curve()
    assert classic_group_epsilon(curve, 1, 1e-5) == (pytest.approx(curve(1e-5)), pytest.approx(1e-5))
    for m in (2, 3, 7):
        eps, delta_one = classic_group_epsilon(curve, m, 1e-5)
        eps_one = eps / m
        assert eps_one == pytest.approx(curve(delta_one), rel=1e-12)
        # the group δ of the conversion stays within the request ...
        assert classic_group_privacy(eps_one, delta_one, m)[1] <= 1e-5 * (1 + 1e-12)
        # ... and a noticeably larger δ₁ (a smaller ε₁) would break it: the search is tight
        larger = delta_one ** (1 - 0.03)
        assert classic_group_privacy(curve(larger), larger, m)[1] > 1e-5
    # ε₁ = log(1/δ₁) grows too fast: no δ₁ keeps m·e^{(m−1)ε₁}·δ₁ within δ
    assert classic_group_epsilon(lambda d: -math.log(d), 3, 1e-5) == (math.inf, pytest.approx(math.nan, nan_ok=True))


def test_group_levels_and_mironov_proposition_2_by_hand():
    assert [group_levels(m) for m in (1, 2, 3, 4, 5, 8, 9, 20)] == [0, 1, 2, 2, 3, 3, 4, 5]
    assert rdp_group_privacy(8.0, 0.5, 1) == (8.0, 0.5)
    assert rdp_group_privacy(8.0, 0.5, 2) == (4.0, 1.5)
    assert rdp_group_privacy(8.0, 0.5, 3) == (2.0, 4.5)  # c = 2: (α/4, 9ρ)
    assert rdp_group_privacy(8.0, 0.5, 4) == (2.0, 4.5)
    with pytest.raises(InvalidInput) as err:  # c = 3 needs α >= 2^4
        rdp_group_privacy(8.0, 0.5, 5)
    assert err.value.field == "order"


def test_rdp_to_dp_is_balle_et_al_theorem_21():
    orders = [1.5, 2.0, 4.0, 8.0, 16.0, 32.0]
    rdp = compute_rdp(q=Q, noise_multiplier=Z, steps=T, orders=orders)
    eps, order = rdp_to_dp(orders, rdp, 1e-5)
    by_hand = [r + math.log((a - 1) / a) - (math.log(1e-5) + math.log(a)) / (a - 1) for a, r in zip(orders, rdp)]
    assert eps == pytest.approx(min(by_hand), rel=1e-12) and order == orders[int(np.argmin(by_hand))]
    with warnings.catch_warnings():  # Opacus warns when the optimum sits at an end of the grid
        warnings.simplefilter("ignore")
        assert eps == pytest.approx(get_privacy_spent(orders=orders, rdp=rdp, delta=1e-5)[0], rel=1e-12)
    assert rdp_to_dp([2.0], [math.inf], 1e-5)[0] == math.inf
    with pytest.raises(InvalidInput):
        rdp_to_dp([1.0, 2.0], [0.1, 0.2], 1e-5)


def test_rdp_group_route_by_hand():
    betas = [2.0, 3.0, 4.0, 8.0]
    for m in (2, 3, 5):
        c = math.ceil(math.log2(m))
        rdp = 3**c * np.asarray(compute_rdp(q=Q, noise_multiplier=Z, steps=T, orders=[b * 2**c for b in betas]))
        by_hand = min(r + math.log((b - 1) / b) - (math.log(1e-5) + math.log(b)) / (b - 1) for b, r in zip(betas, rdp))
        assert dpsgd_group_rdp_epsilon(Z, Q, T, m, 1e-5, orders=betas)[0] == pytest.approx(by_hand, rel=1e-12)
    with pytest.raises(InvalidInput):  # Proposition 2 needs group orders >= 2
        dpsgd_group_rdp_epsilon(Z, Q, T, 2, 1e-5, orders=[1.5, 2.0])


def test_group_epsilon_starts_at_the_record_level_and_grows_with_m():
    curve = lambda d: dpsgd_rdp_epsilon(Z, Q, T, d)  # noqa: E731
    one = dpsgd_group_epsilon(1, 1e-5, epsilon_of_delta=curve, noise_multiplier=Z, sample_rate=Q, steps=T)
    assert one.epsilon == curve(1e-5) and one.route == "one record" and one.delta == 1e-5
    eps = [one.epsilon]
    for m in (2, 3, 4, 5, 8, 20):
        g = dpsgd_group_epsilon(m, 1e-5, epsilon_of_delta=curve, noise_multiplier=Z, sample_rate=Q, steps=T)
        assert g.epsilon == min(g.classic_epsilon, g.rdp_epsilon) and g.route in ("classic", "rdp-group")
        assert g.formula
        eps.append(g.epsilon)
    assert all(a < b for a, b in zip(eps, eps[1:])), eps
