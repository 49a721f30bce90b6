"""``audit compare``'s ranking of methods by their attacks' estimates (estimates, not bounds).

The Clopper–Pearson bound is a test: a no-op, a weak fine-tune and a strong one often all reach
the trial ceiling together. Each attack's estimates (:mod:`attacks.estimates`) say how much the
worlds differ, with intervals, so that methods can be ordered, and neighbours whose intervals
overlap are named as not separable at this trial count.

Two things the order must not hide:

* **Games that differ are ranked apart.** Retrain mode redraws the training randomness in every
  trial; noise and rerun modes hold the trained models fixed and redraw only the release's own
  noise. Their estimates answer different questions, so each group has its own ranking
  (:data:`GROUPS`).
* **A ceiling is not an order.** Where every trial separates a method from retraining, its ε
  estimate is what the trials can show (about ln n) and its AUROC is 1: two methods there are
  "both at the trial ceiling", and more trials raise both estimates alike. Elsewhere an
  overlapping pair gets the trial count that would separate it if the intervals shrink like
  1/√n (:func:`trials_to_separate`).
* **A distance is not a leak.** Methods at the ceiling next to each other in the ε order are
  ordered among themselves, as a secondary order said as such, by the largest magnitude of any
  of their attacks' effect sizes (:meth:`attacks.estimates.ScorePair.effect_size`: the score gap
  in units of the trials' spread, which keeps growing where the AUROC saturates), with the
  neighbours whose intervals overlap named. Only such a run is reordered: every pair in it has an
  ε interval with an infinite upper end, so no ε difference that is separable is ever reversed,
  and a method off the ceiling never moves.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from audit.report.comparison import EstimatedRanking

if TYPE_CHECKING:  # attacks.estimates imports scipy.stats (0.4 s): `audit --help` must not pay it
    from attacks.estimates import EffectSize

#: The trial modes ranked together, by group: the key names the group in ``audit compare``'s
#: document (``estimated_ranking`` for retrain mode, ``estimated_ranking_fixed_training`` for the rest).
GROUPS: dict[str, tuple[str, ...]] = {"retrain": ("retrain",), "fixed-training": ("noise", "rerun")}

#: The secondary order, in words (appended to each rule; the sentence repeats it where it applies).
EFFECT_RULE = (
    "; methods at the trial ceiling next to each other are ordered among themselves by the largest magnitude of "
    "any of their attacks' effect sizes (the score gap in units of the trials' own spread), which measures "
    "distance, not leakage"
)

#: The estimated ranking, in words, per group (the page and the document state it).
RULES = {
    "retrain": (
        "estimates, not bounds: the methods audited in retrain mode (every trial a fresh training, no "
        "output noise) ordered by the largest epsilon estimate of any of their attacks (lowest first); "
        "neighbours whose intervals overlap cannot be told apart at this trial count" + EFFECT_RULE
    ),
    "fixed-training": (
        "estimates, not bounds: the methods audited in noise or rerun mode (the trained models fixed, "
        "every trial a fresh draw of the release's own noise) ordered by the largest epsilon estimate "
        "of any of their attacks (lowest first); they describe this training's release and are not "
        "comparable with retrain mode's; neighbours whose intervals overlap cannot be told apart at "
        "this trial count" + EFFECT_RULE
    ),
}

#: Why a row is left out: its attacks proved nothing against the original model either, so an
#: estimate that contains "no leak" means nothing (a larger one still shows a leak and is ranked).
NO_POWER = "the attacks proved nothing against the original model either (no power), so a low estimate means nothing"


def estimated_ranking(rows: Sequence[Any], group: str = "retrain") -> EstimatedRanking | None:
    """The rows of ``group`` (:data:`GROUPS`) ordered by their largest ε estimate (:data:`RULES`),
    with the neighbours whose intervals overlap; None with fewer than two rows to rank."""
    best, not_ranked, effects = _best_estimates(rows, GROUPS[group])
    if len(best) < 2:
        return None
    eps = {n: best[n][1].epsilon for n in best}
    order = _order_ceiling_by_effect(sorted(best, key=lambda n: (eps[n].point, n)), eps, effects)
    by_effect = {n: effects[n] for n in order if n in effects and _in_effect_run(n, order, eps, effects)}
    n_trials = min(min(best[n][1].n_trials) for n in order)
    tied = [
        [a, b] for a, b in itertools.pairwise(order) if eps[a].lower <= eps[b].upper and eps[b].lower <= eps[a].upper
    ]
    needed = [trials_to_separate(eps[a], eps[b], n_trials) for a, b in tied]
    at_ceiling = [n for n in order if math.isinf(eps[n].upper)]
    effect_tied = [
        [a, b]
        for a, b in itertools.pairwise(order)
        if a in by_effect and b in by_effect and by_effect[a][1].magnitude().overlaps(by_effect[b][1].magnitude())
    ]
    listed = "; ".join(
        f"{n} {_entry(eps[n])} ({best[n][0]}, {best[n][1].direction}; AUROC {_interval(best[n][1].auroc)}"
        + (f"; effect size {_interval(by_effect[n][1])}, {by_effect[n][0]}" if n in by_effect else "")
        + ")"
        for n in order
    )
    return EstimatedRanking(
        rule=RULES[group],
        order=order,
        epsilon=eps,
        auroc={n: best[n][1].auroc for n in order},
        attack={n: best[n][0] for n in order},
        direction={n: best[n][1].direction for n in order},
        not_separable=tied,
        trials_to_separate=needed,
        at_ceiling=at_ceiling,
        trial_modes=list(GROUPS[group]),  # type: ignore[arg-type]  # modes of audit.trials.MODES; pydantic checks the Literal
        not_ranked=not_ranked,
        sentence=f"Estimated epsilon, least first ({n_trials} trials per world): {listed}. "
        + _separability(
            tied,
            needed,
            at_ceiling,
            [list(g) for k, g in itertools.groupby(order, by_effect.__contains__) if k],
            effect_tied,
        ),
        effect_size={n: asdict(x) for n, (_, x) in by_effect.items()} or None,  # type: ignore[misc]  # pydantic validates the dicts
        effect_size_attack={n: a for n, (a, _) in by_effect.items()} or None,
        effect_size_not_separable=effect_tied if by_effect else None,
    )


def _best_estimates(
    rows: Sequence[Any], modes: tuple[str, ...]
) -> tuple[dict[str, tuple[str, Any]], dict[str, str], dict[str, tuple[str, EffectSize]]]:
    """Per row of ``modes``: (attack, estimates) of its largest ε estimate; the rows left out
    (:data:`NO_POWER`); and per ranked row that has effect sizes, (attack, effect size) of the
    largest magnitude."""
    from attacks.estimates import EffectSize  # here, not at import: see the TYPE_CHECKING import

    best: dict[str, tuple[str, Any]] = {}
    not_ranked: dict[str, str] = {}
    effects: dict[str, tuple[str, EffectSize]] = {}
    for r in rows:
        if r.leakage is None or r.leakage.trial_mode not in modes or not r.leakage.estimates:
            continue
        points = {a: e.epsilon.point for a, e in r.leakage.estimates.items() if e.epsilon is not None}
        if not points:
            continue
        attack = max(sorted(points), key=points.__getitem__)
        estimate = r.leakage.estimates[attack]
        # getattr: a row assembled by hand (tests, older callers) may not say; a Leakage always does
        if not getattr(r.leakage, "positive_control_has_power", True) and estimate.epsilon.lower <= 0.0:
            not_ranked[r.name] = NO_POWER
            continue
        best[r.name] = (attack, estimate)
        # getattr: estimates from reports written before the effect size carry none
        sizes = {a: e.effect_size for a, e in r.leakage.estimates.items() if getattr(e, "effect_size", None)}
        if sizes:
            largest = max(sorted(sizes), key=lambda a: abs(sizes[a].point))
            effects[r.name] = (largest, EffectSize(sizes[largest].point, sizes[largest].lower, sizes[largest].upper))
    return best, not_ranked, effects


def _in_effect_run(name: str, order: list[str], eps: dict[str, Any], effects: dict[str, Any]) -> bool:
    """Whether ``name`` is in a run of two or more neighbours at the trial ceiling that all have effect sizes."""
    ok = [math.isinf(eps[n].upper) and n in effects for n in order]
    i = order.index(name)
    return ok[i] and ((i > 0 and ok[i - 1]) or (i + 1 < len(order) and ok[i + 1]))


def _order_ceiling_by_effect(
    order: list[str], eps: dict[str, Any], effects: dict[str, tuple[str, EffectSize]]
) -> list[str]:
    """``order`` with each run of neighbours at the trial ceiling that all have effect sizes sorted by
    the magnitude of their effect size (least first). Within such a run every ε interval's upper end is
    infinite, so every pair overlaps by ε: the secondary order never reverses a separable ε difference,
    and a method outside the runs keeps its place."""
    out = list(order)
    runs = [list(g) for k, g in itertools.groupby(order, key=lambda n: math.isinf(eps[n].upper) and n in effects) if k]
    for run in runs:
        start = out.index(run[0])
        out[start : start + len(run)] = sorted(run, key=lambda n: (abs(effects[n][1].point), n))
    return out


def trials_to_separate(a: Any, b: Any, n_trials: int) -> int | None:
    """Trials per world at which the intervals of ``a`` and ``b`` (points a ≤ b) would stop
    overlapping if their half-widths shrink like 1/√n: n·((upper_a − a + b − lower_b)/(b − a))²,
    upper_a capped at b (a ceiling's infinite end). None where no count would: equal points, or
    both at the trial ceiling (each upper end infinite: more trials raise both estimates alike)."""
    a, b = (a, b) if a.point <= b.point else (b, a)
    gap = b.point - a.point
    if gap <= 0.0 or (math.isinf(a.upper) and math.isinf(b.upper)):
        return None
    widths = (min(a.upper, b.point) - a.point) + (b.point - b.lower)
    return max(n_trials + 1, math.ceil(n_trials * (widths / gap) ** 2 - 1e-9))  # 1e-9: 2.56 * 100 is not 257


def _separability(
    tied: list[list[str]],
    needed: list[int | None],
    at_ceiling: list[str],
    effect_runs: list[list[str]],
    effect_tied: list[list[str]],
) -> str:
    """The sentence's second half: the overlapping pairs, with the trials that would separate each,
    the methods at the trial ceiling named once, as a group that no trial count orders by ε, and
    how the effect size orders them (a distance, not a leak), with its overlapping pairs."""
    ceiling = [n for n in at_ceiling if any(n in pair for pair in tied)]
    pairs = [
        f"{a} and {b} ({'equal estimates' if n is None else f'about {n:,} trials per world would separate them'})"
        for (a, b), n in zip(tied, needed, strict=True)
        if not (a in at_ceiling and b in at_ceiling)
    ]
    parts = ["Not separable at this trial count (intervals overlap): " + ", ".join(pairs) + "."] if pairs else []
    if len(ceiling) > 1:
        parts.append(
            f"{_names(ceiling)} are all at the trial ceiling (every trial separates "
            "them from retraining): no trial count orders them by this estimate."
        )
    if effect_runs:
        groups = "; ".join(_names(run) for run in effect_runs) + (" (each group among itself)" * (len(effect_runs) > 1))
        parts.append(
            f"At the trial ceiling, {groups} are ordered by effect size, which measures distance, not "
            "leakage (the gap between the scores in standard deviations of the trials; it bounds nothing), least first"
            + (
                "; not separable by it (intervals overlap): " + ", ".join(f"{a} and {b}" for a, b in effect_tied) + "."
                if effect_tied
                else "; every neighbour separable by it."
            )
        )
    return " ".join(parts) or "Every neighbour is separable at this trial count."


def _names(names: list[str]) -> str:
    return f"{', '.join(names[:-1])} and {names[-1]}"


def _entry(x: Any) -> str:
    """An ε estimate in the sentence: at the trial ceiling only its lower end is shown."""
    return f"≥ {x.lower:.3g}, at the trial ceiling," if math.isinf(x.upper) else _interval(x)


def _interval(x: Any) -> str:
    return f"{x.point:.3g} [{x.lower:.3g}, {x.upper:.3g}]"
