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
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

from audit.report.comparison import EstimatedRanking

#: The trial modes ranked together, by group: the key names the group in ``audit compare``'s
#: document (``estimated_ranking`` for retrain mode, ``estimated_ranking_fixed_training`` for the rest).
GROUPS: dict[str, tuple[str, ...]] = {"retrain": ("retrain",), "fixed-training": ("noise", "rerun")}

#: The estimated ranking, in words, per group (the page and the document state it).
RULES = {
    "retrain": (
        "estimates, not bounds: the methods audited in retrain mode (every trial a fresh training, no "
        "output noise) ordered by the largest epsilon estimate of any of their attacks (lowest first); "
        "neighbours whose intervals overlap cannot be told apart at this trial count"
    ),
    "fixed-training": (
        "estimates, not bounds: the methods audited in noise or rerun mode (the trained models fixed, "
        "every trial a fresh draw of the release's own noise) ordered by the largest epsilon estimate "
        "of any of their attacks (lowest first); they describe this training's release and are not "
        "comparable with retrain mode's; neighbours whose intervals overlap cannot be told apart at "
        "this trial count"
    ),
}

#: Why a row is left out: its attacks proved nothing against the original model either, so an
#: estimate that contains "no leak" means nothing (a larger one still shows a leak and is ranked).
NO_POWER = "the attacks proved nothing against the original model either (no power), so a low estimate means nothing"


def estimated_ranking(rows: Sequence[Any], group: str = "retrain") -> EstimatedRanking | None:
    """The rows of ``group`` (:data:`GROUPS`) ordered by their largest ε estimate (:data:`RULES`),
    with the neighbours whose intervals overlap; None with fewer than two rows to rank."""
    best, not_ranked = _best_estimates(rows, GROUPS[group])
    if len(best) < 2:
        return None
    order = sorted(best, key=lambda n: (best[n][1].epsilon.point, n))
    eps = {n: best[n][1].epsilon for n in order}
    n_trials = min(min(best[n][1].n_trials) for n in order)
    tied = [
        [a, b] for a, b in itertools.pairwise(order) if eps[a].lower <= eps[b].upper and eps[b].lower <= eps[a].upper
    ]
    needed = [trials_to_separate(eps[a], eps[b], n_trials) for a, b in tied]
    at_ceiling = [n for n in order if math.isinf(eps[n].upper)]
    listed = "; ".join(
        f"{n} {_entry(eps[n])} ({best[n][0]}, {best[n][1].direction}; AUROC {_interval(best[n][1].auroc)})"
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
        + _separability(tied, needed, at_ceiling),
    )


def _best_estimates(rows: Sequence[Any], modes: tuple[str, ...]) -> tuple[dict[str, tuple[str, Any]], dict[str, str]]:
    """Per row of ``modes``: (attack, estimates) of its largest ε estimate; and the rows left out
    (:data:`NO_POWER`)."""
    best: dict[str, tuple[str, Any]] = {}
    not_ranked: dict[str, str] = {}
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
    return best, not_ranked


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


def _separability(tied: list[list[str]], needed: list[int | None], at_ceiling: list[str]) -> str:
    """The sentence's second half: the overlapping pairs, with the trials that would separate each,
    and the methods at the trial ceiling named once, as a group that no trial count orders."""
    ceiling = [n for n in at_ceiling if any(n in pair for pair in tied)]
    pairs = [
        f"{a} and {b} ({'equal estimates' if n is None else f'about {n:,} trials per world would separate them'})"
        for (a, b), n in zip(tied, needed, strict=True)
        if not (a in at_ceiling and b in at_ceiling)
    ]
    parts = ["Not separable at this trial count (intervals overlap): " + ", ".join(pairs) + "."] if pairs else []
    if len(ceiling) > 1:
        parts.append(
            f"{', '.join(ceiling[:-1])} and {ceiling[-1]} are all at the trial ceiling (every trial separates "
            "them from retraining): no trial count orders them by this estimate."
        )
    return " ".join(parts) or "Every neighbour is separable at this trial count."


def _entry(x: Any) -> str:
    """An ε estimate in the sentence: at the trial ceiling only its lower end is shown."""
    return f"≥ {x.lower:.3g}, at the trial ceiling," if math.isinf(x.upper) else _interval(x)


def _interval(x: Any) -> str:
    return f"{x.point:.3g} [{x.lower:.3g}, {x.upper:.3g}]"
