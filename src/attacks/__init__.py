"""attacks: attack scores and the empirical ε they support (imports only point down to certify
and unlearners).

The names below are loaded on first access (PEP 562): importing a submodule such as
:mod:`attacks.registry` (every command does, to list attack names) must not import scipy.stats
and torch through :mod:`attacks.epsilon`.
"""

from importlib import import_module

__all__ = [
    "EpsilonBound",
    "GDPEstimate",
    "clopper_pearson_epsilon",
    "clopper_pearson_interval",
    "epsilon_ceiling",
    "epsilon_from_rates",
    "gdp_epsilon_estimate",
]


def __getattr__(name: str):
    if name in __all__:
        return getattr(import_module("attacks.epsilon"), name)
    raise AttributeError(f"module 'attacks' has no attribute {name!r}")
