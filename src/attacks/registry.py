"""The attack registry: a table of names, apart from the implementations.

Built-in attacks are listed by import path (``module:Class``) and imported only when asked for;
third-party attacks register through the entry-point group ``unlearn_audit.attacks``
(``name = "package.module:Class"``), and code in the same process can call :func:`register`.
An attack that fails to import is reported with its error (:func:`unavailable_attacks`), never
dropped silently.
"""

from __future__ import annotations

from attacks.base import Attack
from certify.registry import Registry

ENTRY_POINT_GROUP = "unlearn_audit.attacks"

#: name -> "module:Class" of every built-in attack, in the default order of ``--attacks``.
BUILTIN: dict[str, str] = {
    "mia": "attacks.mia:MembershipInference",
    "ulira": "attacks.lira:ULiRA",
    "relearn": "attacks.relearn:RelearnTime",
    "whitebox": "attacks.whitebox:WhiteBox",
}

ATTACKS: Registry = Registry(
    Attack, ENTRY_POINT_GROUP, BUILTIN, "attacks", noun="attack",
    allowed=lambda names: "a comma-separated subset of " + ", ".join(names) + " (or 'none')")

register = ATTACKS.register
unregister = ATTACKS.unregister
attack_names = ATTACKS.names
unavailable_attacks = ATTACKS.unavailable
get_attack = ATTACKS.get
