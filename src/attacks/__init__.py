"""attacks: attack scores and the empirical ε they support (imports only point down to certify
and unlearners)."""

from attacks.epsilon import (
    EpsilonBound,
    GDPEstimate,
    clopper_pearson_epsilon,
    clopper_pearson_interval,
    epsilon_ceiling,
    epsilon_from_rates,
    gdp_epsilon_estimate,
)

__all__ = [
    "EpsilonBound",
    "GDPEstimate",
    "clopper_pearson_epsilon",
    "clopper_pearson_interval",
    "epsilon_ceiling",
    "epsilon_from_rates",
    "gdp_epsilon_estimate",
]
