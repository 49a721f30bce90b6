"""Noise-mode trials sized by their cost and by where the bound stops improving (issue 28).

In noise mode every trial is a Gaussian draw around the two fixed pre-noise models θ_U and θ_R,
scored by the attacks: a fraction of a millisecond. A constant count spends a fraction of what
the machine would give, or more than the bound can use. So, unless the user chose the count
(``trials`` or ``target_ceiling``), the count is the smallest of:

* the **plateau**: the release is the Gaussian mechanism with μ = ||θ_U − θ_R||/σ, known before
  any trial (the report's realized ε). The best possible attack (the white-box projection on
  θ_U − θ_R, Neyman–Pearson) then scores N(μ, 1) against N(0, 1), and its Clopper–Pearson bound
  at n trials per world is predicted at the expected counts (:func:`predicted_bound`). Once a
  doubling of n adds less than :data:`PLATEAU_GAIN` to it, more trials cannot move any attack's
  bound by much (every attack is post-processing of the same release). An honest release
  (μ ≈ 0) plateaus at once: the default audit keeps :data:`~audit.config.NOISE_TRIALS`, and
  spends no pilot. Nor is a doubling spent once the predicted bound exceeds the certified ε
  by :data:`DECIDED_MARGIN` (the refutation is **decided**: a release far from its certificate,
  such as a planted G = 1e-7, is refuted at the floor).
* the **budget**: ``trial_budget`` seconds for the sized attack stage, at the cost per trial
  measured on a pilot (the attack stage at the floor count, whose result is kept when no more
  fits, timed after an untimed run of :data:`WARMUP_TRIALS` trials has paid the first use of the
  attacks). The pilot's fixed costs are counted per trial, so the prediction is high and the
  stage takes less than the budget (about 3x less on the default problem).
* the **memory** that holds the trials (:func:`audit.memory.check_trial_memory`), and
  :data:`MAX_DOUBLINGS` doublings of the floor.

Counts are :data:`~audit.config.NOISE_TRIALS` · 2^k: a machine twice as fast moves the count by
one step, and timing jitter rarely does. The count depends on the measured speed only through the
budget, and the report records it with the pilot's numbers; a rerun with the recorded seed and
``--trials`` at the recorded count gives the same trials, scores, bounds and verdict on any
machine (the count is chosen from the pilot's time only, never from its scores, so the bound
stays valid). See docs/run.md, "How many trials".

The prediction is the Clopper–Pearson bound's. In noise mode the GDP bound is valid too, and it
decides what an attack can test (:func:`audit.sizing.attack_resolution`); its prediction at the
same expected counts is far higher (1.73 against 0.59 at 1,000 trials per world for μ = 0.719,
the planted realized ε = 3), so sizing by it would stop at the floor as "decided". The count is
sized for the bound that rests on nothing about the mechanism instead.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any, Literal

import numpy as np
import torch
from scipy.stats import beta, norm

from audit.attacking import AttackSetup, TrialPlan, check_run_memory, per_attack_confidence
from audit.report import schema
from certify.errors import InvalidInput

#: A doubling of the trials that raises the predicted best bound by less than this is not spent.
PLATEAU_GAIN = 0.05
#: Nor one past the count whose predicted best bound exceeds the certified ε by this much: the
#: refutation is decided (the bound's spread is about 0.1 at 1,000-10,000 trials per world).
DECIDED_MARGIN = 0.25
#: Trials per world of the untimed run before the pilot (see :func:`sized_attacks`).
WARMUP_TRIALS = 16
#: The most doublings of the floor count (1,000 · 2^10 = 1,024,000 trials per world).
MAX_DOUBLINGS = 10
#: Tests the threshold strategy is assumed to share the error among in the prediction (the
#: Pareto frontier holds about 15-25 at 1,000 trials; with 10 the prediction at expected counts
#: is still a little below the measured mean: 0.59 vs 0.70 at 1,000 trials, 1.22 vs 1.30 at 10,000,
#: μ = 0.719, per-attack confidence 0.99375).
PREDICTED_TESTS = 10
_THRESHOLDS = np.linspace(-3.0, 9.0, 241)

StoppedBy = Literal["plateau", "decided", "budget", "memory", "cap"]


def predicted_bound(mu: float, n: int, delta: float, confidence: float) -> float:
    """The Clopper–Pearson ε lower bound of the best attack on a μ-Gaussian release at ``n``
    trials per world, at the expected counts of each threshold (a prediction for sizing, not a
    bound): max over t of ln((1 − δ − FNR_u)/FPR_u), the rates' upper bounds at level
    1 − (1 − ``confidence``)/(2·:data:`PREDICTED_TESTS`)."""
    if not math.isfinite(mu) or mu <= 0:
        return 0.0
    level = 1.0 - (1.0 - confidence) / (2.0 * PREDICTED_TESTS)
    fp = np.floor(n * norm.sf(_THRESHOLDS))
    fn = n - np.floor(n * norm.sf(_THRESHOLDS - mu))
    fpr = np.where(fp >= n, 1.0, beta.ppf(level, fp + 1, np.maximum(n - fp, 1)))
    fnr = np.where(fn >= n, 1.0, beta.ppf(level, fn + 1, np.maximum(n - fn, 1)))
    with np.errstate(divide="ignore", invalid="ignore"):
        eps = np.log((1.0 - delta - fnr) / fpr)
    best = float(np.nanmax(np.where(np.isfinite(eps), eps, np.nan), initial=0.0))
    return max(0.0, best)


def grid(floor: int) -> list[int]:
    """The counts the rule chooses among: ``floor`` · 2^k, k = 0 … :data:`MAX_DOUBLINGS`."""
    return [floor << k for k in range(MAX_DOUBLINGS + 1)]


def plateau_count(mu: float, delta: float, confidence: float, floor: int, certified: float) -> tuple[int, StoppedBy]:
    """The first count of :func:`grid` past which trials are not worth spending, and why: its
    predicted bound exceeds ``certified`` (0 without a certificate) by :data:`DECIDED_MARGIN`
    ("decided"), or its doubling adds less than :data:`PLATEAU_GAIN` ("plateau"); the last count
    ("cap") when neither happens."""
    counts = grid(floor)
    before = predicted_bound(mu, floor, delta, confidence)
    for n, doubled in zip(counts, counts[1:], strict=False):
        if before > certified + DECIDED_MARGIN:
            return n, "decided"
        after = predicted_bound(mu, doubled, delta, confidence)
        if after - before < PLATEAU_GAIN:
            return n, "plateau"
        before = after
    return counts[-1], "cap"


def budget_count(seconds_per_trial: float, budget: float, floor: int, upto: int) -> int:
    """The largest count of :func:`grid` up to ``upto`` whose predicted time (count × seconds per
    trial) is within ``budget``; ``floor`` when none is."""
    fitting = [n for n in grid(floor) if n <= upto and n * seconds_per_trial <= budget]
    return fitting[-1] if fitting else floor


def largest_fitting(fits: Callable[[int], bool], floor: int, upto: int) -> int:
    """The largest count of :func:`grid` up to ``upto`` for which ``fits`` holds (``floor`` when none)."""
    fitting = [n for n in grid(floor) if n <= upto and fits(n)]
    return fitting[-1] if fitting else floor


def pilot_clock(executor: str) -> tuple[Literal["process-cpu", "wall"], Callable[[], float]]:
    """The clock the pilot is timed with: this process's CPU time where the trials run in it (stable
    under other jobs' load), wall time where workers elsewhere do the work."""
    return ("process-cpu", time.process_time) if executor == "local" else ("wall", time.perf_counter)


def why(n: int, *, stopped_by: StoppedBy, budget: float, seconds_per_trial: float | None, predicted: float) -> str:
    """The report's one sentence on how the noise-mode count was chosen."""
    stop = {
        "plateau": f"the bound's plateau (a doubling would add less than {PLATEAU_GAIN} to it)",
        "decided": f"the decision (the predicted bound exceeds the certified epsilon by more than {DECIDED_MARGIN})",
        "budget": f"the budget of {budget:g} s",
        "memory": "the memory that holds the trials",
        "cap": f"the cap of {MAX_DOUBLINGS} doublings",
    }[stopped_by]
    predicted_ = f"the best attack's predicted bound {predicted:.3g}"
    if seconds_per_trial is None:
        return f"{n:,} trials per world, sized by cost: stopped by {stop} at once ({predicted_}), so no pilot was run"
    cost = f"{seconds_per_trial * 1e3:.3g} ms per trial measured on a pilot"
    return f"{n:,} trials per world, sized by cost ({cost}; {predicted_}), stopped by {stop}"


def sized_attacks(
    plan: TrialPlan,
    *,
    mu: float,
    delta: float,
    confidence: float,
    certified: float,
    budget: float,
    executor: str,
    attack: Callable[[TrialPlan, bool], schema.Attacks],
    fits: Callable[[int], bool],
) -> tuple[schema.Attacks, TrialPlan]:
    """The attack stage at the count this module chooses (``plan.n_trials`` is the floor), and the plan
    it ran: ``attack(plan, pilot)`` runs the stage (a pilot keeps nothing on disk), ``fits(n)`` says
    whether n trials per world fit in memory, ``confidence`` is each bound's own level, ``certified``
    the certified ε (0 without a certificate)."""
    floor = plan.n_trials
    plateau, why_plateau = plateau_count(mu, delta, confidence, floor, certified)

    def record(n: int, stopped: StoppedBy, per_trial: float | None, **pilot: object) -> schema.TrialSizing:
        predicted = predicted_bound(mu, n, delta, confidence)
        text = why(n, stopped_by=stopped, budget=budget, seconds_per_trial=per_trial, predicted=predicted)
        return schema.TrialSizing.model_validate(
            dict(
                chosen_by="cost",
                why=text,
                stopped_by=stopped,
                budget_s=float(budget),
                release_mu=float(mu),
                predicted_bound=predicted,
                plateau_trials=plateau,
                plateau_gain=PLATEAU_GAIN,
                **pilot,
            )
        )

    if plateau <= floor:  # decided or plateaued at the floor: no pilot is spent
        sizing = record(floor, why_plateau, None)
        final = replace(plan, sizing=sizing)
        return attack(final, False), final
    # first use of the attacks in a process (imports, kernels, caches) cost about 0.45 s of CPU on the
    # default problem, twice its whole 1,000-trial stage: a tiny untimed run pays it before the pilot
    attack(replace(plan, n_trials=WARMUP_TRIALS), True)
    clock_name, clock = pilot_clock(executor)
    started = clock()
    pilot = attack(plan, True)
    spent = clock() - started
    per_trial = spent / floor
    upto = largest_fitting(fits, floor, plateau)
    n = budget_count(per_trial, budget, floor, upto)
    stopped: StoppedBy = "budget" if n < upto else "memory" if upto < plateau else why_plateau
    sizing = record(
        n,
        stopped,
        per_trial,
        clock=clock_name,
        pilot_trials=floor,
        pilot_s=spent,
        seconds_per_trial=per_trial,
        predicted_s=n * per_trial,
    )
    final = replace(plan, n_trials=n, sizing=sizing)
    if n == floor:  # the pilot is the run: same trials, same scores
        trials = pilot.trials.model_copy(update={"sizing": sizing})
        return pilot.model_copy(update={"trials": trials}), final
    return attack(final, False), final


def sized_stage(
    setup: AttackSetup, plan: TrialPlan, config: Any, attack: Callable[[TrialPlan, bool], schema.Attacks]
) -> tuple[schema.Attacks, TrialPlan]:
    """:func:`sized_attacks` for an audit: μ from the release's pre-noise models and σ, the memory
    check of the run's attacks, its budget, executor and certified ε."""

    def fits(n: int) -> bool:
        try:
            check_run_memory(setup, replace(plan, n_trials=n), config.attacks, config.shadow_models)
        except InvalidInput:
            return False
        return True

    distance = float(torch.linalg.vector_norm(setup.theta_unlearned - setup.theta_retrained))
    return sized_attacks(
        plan,
        mu=distance / setup.sigma if setup.sigma > 0 else math.inf,
        delta=config.delta,
        confidence=per_attack_confidence(config.confidence, len(config.attacks)),
        certified=setup.certified_epsilon or 0.0,
        budget=config.trial_budget,
        executor=config.executor,
        attack=attack,
        fits=fits,
    )
