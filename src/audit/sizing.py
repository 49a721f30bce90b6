"""What size of audit could test a claim: the smallest size whose ceiling exceeds the certified ε.

Every lower bound has a *ceiling*: what a perfectly separating attack would prove at that size
(trials per world for the attacks, canary pairs for the one-run audit). A bound whose ceiling is
at or below the certified ε cannot refute it whatever the method does, so its "ε ≥ 0" is below
its own resolution: the report says "cannot test ε at this size" and names the size that could
(:func:`resolution`). The finding ``underpowered`` (:mod:`audit.findings`) reads the result.

The attacks' ceiling grows with the trial count. The one-run ceiling does not: its 2mδ term
grows with the number of canaries m, so at fixed δ it rises, peaks and falls (at δ = 1e-5 with
the default guesses it peaks at 1.93 near 3,500 pairs), and an ε above the peak cannot be
tested by any one-run size. :func:`smallest_above` handles both shapes (a unimodal ceiling).

An attack has two bounds, and only a **valid** one may decide what it can test
(:func:`attack_resolution`, the one rule every consumer reads through the report's ``can_test``,
``size_to_test`` and ``test_bound``): the Clopper–Pearson bound everywhere, and in noise mode also
the GDP bound (:mod:`attacks.gdp`: the release is the Gaussian mechanism there), whose ceiling is
far higher (25.6 against 3.94 at 300 trials per world with four attacks). Elsewhere the GDP number
is an estimate under the Gaussian hypothesis and never decides.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache

from attacks.epsilon import strategy_ceiling

_TOL = 1e-9

#: The bounds that may decide an attack's test-ability (``EpsilonBound.test_bound``), named as
#: ``Comparison.violated_by`` names them.
CLOPPER_PEARSON, GDP_BOUND = "clopper-pearson", "gdp-bound"


def exceeds(ceiling: float, target: float) -> bool:
    """Whether a bound with this ceiling could prove more than ``target`` (the comparison the
    violation findings make: above ``target`` by more than rounding)."""
    return ceiling > target * (1 + _TOL)


def smallest_above(ceiling: Callable[[int], float], target: float, *, start: int, cap: int) -> int | None:
    """The smallest n in [start, cap] with ``exceeds(ceiling(n), target)``, or None.

    ``ceiling`` must be unimodal in n (non-decreasing, then non-increasing): its values above
    ``target`` then form one interval. Doubling finds a size above ``target`` or brackets the
    peak; bisection finds the interval's left end. About 2·log2(cap / start) evaluations."""
    f = lru_cache(maxsize=None)(ceiling)
    if exceeds(f(start), target):
        return start
    before, n = start, start
    while n < cap:
        nxt = min(2 * n, cap)
        if exceeds(f(nxt), target):
            return _left_end(f, target, n, nxt)
        if f(nxt) < f(n):  # past the peak: it lies in [before, nxt]
            peak = _peak(f, before, n, nxt)
            return _left_end(f, target, before, peak) if exceeds(f(peak), target) else None
        before, n = n, nxt
    return None


def _left_end(f: Callable[[int], float], target: float, below: int, above: int) -> int:
    """The smallest n in (below, above] above ``target``, given f(below) is not and f(above) is."""
    while above - below > 1:
        mid = (below + above) // 2
        below, above = (below, mid) if exceeds(f(mid), target) else (mid, above)
    return above


def _peak(f: Callable[[int], float], a: int, b: int, c: int) -> int:
    """The maximiser of a unimodal f on [a, c], given f(b) >= f(a) and f(b) > f(c)."""
    while c - a > 2:
        x = (a + b) // 2 if b - a > c - b else (b + c) // 2
        if x in (a, b, c):
            break
        if f(x) > f(b):
            a, b, c = (a, x, b) if x < b else (b, x, c)
        else:
            a, c = (x, c) if x < b else (a, x)
    return max((a, b, c), key=lambda n: (f(n), -n))


def trials_to_test(target: float, delta: float, confidence: float, *, cap: int) -> int | None:
    """The fewest trials per world whose ceiling under the audit's threshold strategy (each
    bound at the per-attack ``confidence``) exceeds ``target``; None when ``cap`` do not."""
    return smallest_above(lambda n: strategy_ceiling(n, delta, confidence), target, start=1, cap=cap)


def gdp_trials_to_test(target: float, delta: float, confidence: float, *, cap: int) -> int | None:
    """:func:`trials_to_test` for the GDP bound's ceiling (:func:`attacks.gdp.gdp_ceiling`)."""
    from attacks.gdp import gdp_ceiling  # here, not at import: scipy.optimize via the shape test

    return smallest_above(lambda n: gdp_ceiling(n, delta, confidence), target, start=1, cap=cap)


def attack_resolution(
    ceiling: float, gdp_ceiling: float | None, target: float, delta: float, confidence: float, *, cap: int
) -> dict:
    """An attack's ``can_test``, ``size_to_test`` and ``test_bound`` from its valid bounds' ceilings.

    ``ceiling`` is the Clopper–Pearson bound's; ``gdp_ceiling`` the GDP bound's where that bound is
    valid (noise mode, ``kind == "bound"``), else None: an estimate never decides. The attack can
    test ``target`` when the higher ceiling exceeds it; ``test_bound`` is then Clopper–Pearson
    where its own ceiling does (valid in every mode, so the GDP bound is named only where it alone
    can: the page then says the Clopper–Pearson bound alone cannot), else the GDP bound. When
    neither can, ``size_to_test`` is the fewest trials per world (at the per-attack
    ``confidence``, up to ``cap``) at which either would, ``test_bound`` the bound that would then
    (Clopper–Pearson on a tie), or, when no count could, the one with the higher ceiling."""
    sizes: dict[str, tuple[float, Callable[[float], int | None]]] = {
        CLOPPER_PEARSON: (ceiling, lambda t: trials_to_test(t, delta, confidence, cap=cap))
    }
    if gdp_ceiling is not None:
        sizes[GDP_BOUND] = (gdp_ceiling, lambda t: gdp_trials_to_test(t, delta, confidence, cap=cap))
    able = [name for name, (value, _) in sizes.items() if exceeds(value, target)]  # Clopper-Pearson first
    if able:
        return {"can_test": True, "size_to_test": None, "test_bound": able[0]}
    highest = max(sizes, key=lambda name: sizes[name][0])  # the first (Clopper-Pearson) on a tie
    reachable = {name: n for name, (_, size) in sizes.items() if (n := size(target)) is not None}
    if not reachable:
        return {"can_test": False, "size_to_test": None, "test_bound": highest}
    first = min(reachable, key=reachable.__getitem__)
    return {"can_test": False, "size_to_test": reachable[first], "test_bound": first}


def resolution(ceiling: float, target: float, size: Callable[[float], int | None]) -> dict:
    """``can_test``: the ceiling exceeds ``target`` (the certified ε; 0 when nothing is certified:
    can the bound show anything at all). ``size_to_test``: the smallest size that could, from
    ``size``; null when this one can, or when no size up to the cap can."""
    can = exceeds(ceiling, target)
    return {"can_test": can, "size_to_test": None if can else size(target)}
