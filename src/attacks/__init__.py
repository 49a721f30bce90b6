"""attacks: attack scores and the empirical ε they support (imports only point down to certify
and unlearners).

The names below are loaded on first access (PEP 562): importing a submodule such as
:mod:`attacks.registry` (every command does, to list attack names) must not import scipy.stats
and torch through the estimators.
"""

from importlib import import_module

#: Each name's module (the one place it is defined).
_MODULES = {
    "EpsilonBound": "attacks.epsilon",
    "clopper_pearson_epsilon": "attacks.epsilon",
    "epsilon_ceiling": "attacks.epsilon",
    "GDPEstimate": "attacks.gdp",
    "gdp_epsilon_estimate": "attacks.gdp",
    "clopper_pearson_interval": "attacks.rates",
    "epsilon_from_rates": "attacks.rates",
    "ScorePair": "attacks.estimates",
}

__all__ = sorted(_MODULES)


def __getattr__(name: str):
    if name in _MODULES:
        return getattr(import_module(_MODULES[name]), name)
    raise AttributeError(f"module 'attacks' has no attribute {name!r}")
