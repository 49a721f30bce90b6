"""Attack the released models of both worlds and turn what every attack achieves into ε bounds.

World U releases U(A(D), D, Z) + noise; world R releases A(D \\ Z) + noise with the same σ. The
audit decides which models exist: the trials (:mod:`audit.trials`) and, only when a selected
attack declares it needs them, shadow models (:mod:`audit.shadows`). Each attack
(:mod:`attacks.registry`) returns one score per released model of each world; this module turns
every attack's scores into the same Clopper–Pearson ε lower bound (δ carried through), ROC curve
and GDP estimate, and compares them with the certified and realized ε. Nothing here knows an
attack by name.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from attacks.base import AttackInputs, to_numpy
from attacks.epsilon import clopper_pearson_epsilon, gdp_epsilon_estimate
from attacks.registry import get_attack
from attacks.roc import RocSummary
from audit.report import schema
from audit.shadows import shadow_models
from audit.trials import TrialSet, make_trials
from unlearners.base import Unlearner
from unlearners.objective import Objective

Tick = Callable[[str, int, int], None]
_TOL = 1e-9


@dataclass(frozen=True)
class AttackSetup:
    """What the audit hands to the attack stage (the pipeline's results, never a method's internals)."""

    objective: Objective
    method: Unlearner
    init: Callable[[torch.Generator], Tensor]
    X: Tensor
    y: Tensor
    forget: Tensor
    X_unseen: Tensor
    y_unseen: Tensor
    theta_original: Tensor
    theta_unlearned: Tensor
    theta_retrained: Tensor
    sigma: float
    delta: float
    certified_epsilon: float | None
    realized_epsilon: float
    smoothness: Callable[[], float]


def _child(seed: int, role: str) -> int:
    """A pure function of (seed, role): the seed of one stage or one attack."""
    state = np.random.SeedSequence([int(seed), zlib.crc32(role.encode())]).generate_state(1, dtype=np.uint64)
    return int(state[0] >> 1)


def run_attacks(setup: AttackSetup, *, attacks: tuple[str, ...], trials: int, mode: str, shadow_models_: int,
                confidence: float, relearn_max_steps: int, seed: int, tick: Tick) -> schema.Attacks:
    """Run the selected attacks; return the report's ``attacks`` section."""
    classes = [get_attack(name) for name in attacks]
    needs = set().union(*(cls.needs for cls in classes))
    tick("trials", 0, 1)
    trial_set = make_trials(mode, setup.method, setup.forget, setup.sigma, trials, _child(seed, "trials"),
                            init=setup.init, theta_unlearned=setup.theta_unlearned,
                            theta_retrained=setup.theta_retrained)
    shadows_in = shadows_out = None
    if "shadows" in needs:
        shadows_in, shadows_out = shadow_models(setup.method, setup.X, setup.y, setup.forget, setup.init,
                                                setup.sigma, shadow_models_, _child(seed, "shadows"))
    tick("trials", 1, 1)
    base = dict(objective=setup.objective, X=setup.X, y=setup.y, forget=setup.forget,
                X_unseen=setup.X_unseen, y_unseen=setup.y_unseen, theta_original=setup.theta_original,
                theta_unlearned=setup.theta_unlearned, theta_retrained=setup.theta_retrained,
                released_unlearned=trial_set.unlearned, released_retrained=trial_set.retrained,
                noiseless_unlearned=trial_set.theta_unlearned, noiseless_retrained=trial_set.theta_retrained,
                sigma=setup.sigma, delta=setup.delta,
                settings={"shadow_models": shadow_models_, "relearn_max_steps": relearn_max_steps},
                shadows_in=shadows_in, shadows_out=shadows_out,
                smoothness=setup.smoothness() if "smoothness" in needs else None)
    bound_seed = _child(seed, "bound")
    each = per_attack_confidence(confidence, len(classes))
    results: dict[str, schema.AttackResult] = {}
    for i, cls in enumerate(classes):
        tick("attacks", i, len(classes))
        outcome = cls().run(AttackInputs(seed=_child(seed, cls.name), **base))
        results[cls.name] = _result(cls, outcome.scores_unlearned, outcome.scores_retrained, outcome.details,
                                    delta=setup.delta, confidence=each, seed=bound_seed)
    tick("attacks", len(classes), len(classes))
    return schema.Attacks(
        trials=_trials(trial_set, seed, confidence, each, setup.delta),
        attacks=results,
        comparison=_comparison(setup, results),
    )


def per_attack_confidence(confidence: float, n_attacks: int) -> float:
    """The level of each attack's bound so that all of them hold together at ``confidence``.

    The verdict reads the largest of the attacks' bounds; if each held only at 95 %, the largest
    would hold at 1 − k·5 % by the union bound (80 % for four attacks). Bonferroni: each bound at
    1 − (1 − confidence)/k, so the statement "the best attack proves ε ≥ …" holds at
    ``confidence`` jointly."""
    return 1.0 - (1.0 - confidence) / max(1, n_attacks)


def _trials(trial_set: TrialSet, seed: int, confidence: float, each: float, delta: float) -> schema.Trials:
    return schema.Trials(**trial_set.describe(), n_per_world=trial_set.n_trials, root_seed=seed,
                         confidence=confidence, per_attack_confidence=each, delta=delta)


def _result(cls, su, sr, details, *, delta: float, confidence: float, seed: int) -> schema.AttackResult:
    su, sr = to_numpy(su).astype(float), to_numpy(sr).astype(float)
    bound = clopper_pearson_epsilon(su, sr, delta=delta, confidence=confidence, seed=seed)
    return schema.AttackResult(
        title=cls.title, description=cls.description,
        bound=schema.EpsilonBound(**bound.to_dict(), roc=RocSummary.from_scores(su, sr).to_dict(),
                                  gdp_estimate=gdp_epsilon_estimate(su, sr, delta).to_dict()),
        details=details,
    )


def _comparison(setup: AttackSetup, results: dict[str, schema.AttackResult]) -> schema.Comparison:
    empirical = {name: r.bound.epsilon_lower for name, r in results.items()}
    best_name = max(empirical, key=empirical.get) if empirical else None
    best = empirical[best_name] if best_name else 0.0
    certified, realized = setup.certified_epsilon, setup.realized_epsilon
    return schema.Comparison(
        certified_epsilon=certified,
        realized_epsilon=realized,
        empirical_epsilon_lower=empirical,
        best_empirical_epsilon=best,
        best_attack=best_name,
        # nothing can be violated when no certificate was issued (no theorem, failed condition)
        certificate_violated=bool(certified is not None and best > certified * (1 + _TOL)),
        realized_below_empirical=bool(best > realized * (1 + _TOL) + _TOL),
        ordering_holds=(None if certified is None else
                        bool(certified * (1 + _TOL) >= realized and realized * (1 + _TOL) + _TOL >= best)),
    )


def smoothness_of(certificate, objective: Objective, X: Tensor, y: Tensor, theta: Tensor) -> float:
    """L of the per-sample loss, for attacks that need a stable fixed step 1/L: the certificate's
    own constant when it has one, else the estimator of :mod:`unlearners.smoothness`."""
    from unlearners.smoothness import model_constants

    try:
        value = certificate.constant("L").value
        if math.isfinite(value) and value > 0:
            return value
    except KeyError:
        pass
    return model_constants(objective, X, y, [theta], generator=torch.Generator().manual_seed(0))["L"].value
