"""The attack registry: a table of names, apart from the implementations.

Built-in attacks are listed by import path (``module:Class``) and imported only when asked for;
third-party attacks register through the entry-point group ``unlearn_audit.attacks``
(``name = "package.module:Class"``), and code in the same process can call :func:`register`.
An attack that fails to import is reported with its error (:func:`unavailable_attacks`), never
dropped silently.
"""

from __future__ import annotations

from certify.registry import Registry

ENTRY_POINT_GROUP = "unlearn_audit.attacks"

#: name -> "module:Class" of the built-in attacks run by default, in the default order of ``--attacks``.
BUILTIN: dict[str, str] = {
    "mia": "attacks.mia:MembershipInference",
    "ulira": "attacks.lira:ULiRA",
    "relearn": "attacks.relearn:RelearnTime",
    "whitebox": "attacks.whitebox:WhiteBox",
}

#: name -> "module:Class" of the built-in attacks that run only when named in ``--attacks``
#: (listed after the defaults): each extra attack costs every bound confidence (Bonferroni), and
#: these add power only in some games (the LiRA/RMIA variants reuse U-LiRA's shadow models; the
#: competition metric is an estimate, reported beside its own Clopper-Pearson bound).
OPTIONAL: dict[str, str] = {
    "lira-offline": "attacks.lira:LiRAOffline",
    "rmia": "attacks.rmia:RMIA",
    "rmia-offline": "attacks.rmia:RMIAOffline",
    "competition": "attacks.competition:CompetitionMetric",
}

ATTACKS: Registry = Registry(
    "attacks.base:Attack",  # by path: listing attack names (audit --help) must not import torch
    ENTRY_POINT_GROUP,
    {**BUILTIN, **OPTIONAL},
    "attacks",
    noun="attack",
    allowed=lambda names: "a comma-separated subset of " + ", ".join(names) + " (or 'none')",
)

register = ATTACKS.register
unregister = ATTACKS.unregister
attack_names = ATTACKS.names
unavailable_attacks = ATTACKS.unavailable
get_attack = ATTACKS.get
