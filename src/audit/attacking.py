"""Attack the released models of both worlds and turn what the attacks achieve into ε bounds.

World U releases U(A(D), D, Z) + noise; world R releases A(D \\ Z) + noise with the same σ.
For every attack, each trial model gets a score; :func:`attacks.epsilon.clopper_pearson_epsilon`
turns the two samples of scores into an ε lower bound at the stated confidence, with δ carried
through. The audit then checks certified ε ≥ realized ε ≥ empirical ε.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from attacks.epsilon import clopper_pearson_epsilon, gdp_epsilon_estimate
from attacks.lira import logit_confidence, ulira_attack
from attacks.mia import attack_features, population_mia
from attacks.relearn import relearn_time
from attacks.roc import RocSummary
from attacks.whitebox import whitebox_direction, whitebox_scores
from audit.trials import TrialSet, batched_logits, batched_per_sample_loss, noise_trials, retrain_trials
from unlearners.base import Unlearner
from unlearners.objective import Objective

ATTACKS = ("mia", "ulira", "relearn", "whitebox")
Tick = Callable[[str, int, int], None]


@dataclass
class AttackContext:
    """Everything the attacks may look at, handed over by the pipeline."""

    objective: Objective
    method: Unlearner
    method_factory: Callable[[], Unlearner]
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
    certified_epsilon: float
    realized_epsilon: float
    smoothness: float
    certificate_valid: bool = True


def run_attacks(ctx: AttackContext, *, attacks: tuple[str, ...], trials: int, mode: str,
                shadow_models: int, confidence: float, relearn_max_steps: int, seed: int,
                tick: Tick) -> dict:
    """Run the selected attacks; return the report's ``trials``, ``attacks`` and ``comparison``."""
    seeds = np.random.SeedSequence(seed).spawn(4)
    child = lambda i: int(seeds[i].generate_state(1, dtype=np.uint64)[0] >> 1)  # noqa: E731
    tick("trials", 0, 1)
    if mode == "noise":
        trial_set = noise_trials(ctx.theta_unlearned, ctx.theta_retrained, ctx.sigma, trials, child(0))
    else:
        trial_set = retrain_trials(ctx.method, ctx.forget, trials, child(0), init=ctx.init, sigma=ctx.sigma)
    tick("trials", 1, 1)

    bound = lambda su, sr: clopper_pearson_epsilon(  # noqa: E731
        _np(su), _np(sr), delta=ctx.delta, confidence=confidence, seed=child(1))
    results: dict[str, dict] = {}
    for i, name in enumerate(attacks):
        tick("attacks", i, len(attacks))
        if name == "whitebox":
            results[name] = _whitebox(ctx, trial_set, bound)
        elif name == "mia":
            results[name] = _mia(ctx, trial_set, bound, child(2) % 2**32)
        elif name == "relearn":
            results[name] = _relearn(ctx, trial_set, bound, relearn_max_steps)
        elif name == "ulira":
            results[name] = _ulira(ctx, trial_set, bound, shadow_models, child(3))
    tick("attacks", len(attacks), len(attacks))
    return {
        "trials": {**trial_set.describe(), "n_per_world": trial_set.n_trials, "root_seed": seed,
                   "confidence": confidence, "delta": ctx.delta},
        "attacks": results,
        "comparison": _comparison(ctx, results),
    }


# ----------------------------------------------------------------------------------------
def _bound_dict(b, scores_u=None, scores_r=None, delta=None) -> dict:
    d = b.to_dict() if hasattr(b, "to_dict") else dict(vars(b))
    if scores_u is not None:
        # ROC of the attack's scores, world U positive (for the report's log-log ROC plot)
        d["roc"] = RocSummary.from_scores(_np(scores_u), _np(scores_r)).to_dict()
        est = gdp_epsilon_estimate(_np(scores_u), _np(scores_r), delta)
        d["gdp_estimate"] = est.to_dict() if hasattr(est, "to_dict") else dict(vars(est))
    return d


def _whitebox(ctx, trial_set: TrialSet, bound) -> dict:
    direction, midpoint, distance = whitebox_direction(trial_set.theta_unlearned,
                                                       trial_set.theta_retrained)
    su = whitebox_scores(trial_set.unlearned, direction, midpoint)
    sr = whitebox_scores(trial_set.retrained, direction, midpoint)
    return {"description": "projection of the released parameters on the direction between the "
                           "two worlds' noiseless parameters (white-box, Neyman-Pearson optimal)",
            "distance": distance, "bound": _bound_dict(bound(su, sr), su, sr, ctx.delta)}


def _forget_data(ctx):
    return ctx.X[ctx.forget], ctx.y[ctx.forget]


def _mia(ctx, trial_set: TrialSet, bound, seed: int) -> dict:
    Xf, yf = _forget_data(ctx)
    models = {"original": ctx.theta_original, "unlearned": ctx.theta_unlearned,
              "retrained": ctx.theta_retrained}
    gen = torch.Generator().manual_seed(seed)
    released = {"original": Unlearner.release(ctx.theta_original, ctx.sigma, gen) if math.isfinite(ctx.sigma) else None,
                "unlearned": trial_set.unlearned[0], "retrained": trial_set.retrained[0]}
    population = {}
    for name, theta in models.items():
        entry = {"noiseless": _population(ctx, theta, Xf, yf, seed)}
        if released[name] is not None:
            entry["released"] = _population(ctx, released[name], Xf, yf, seed)
        population[name] = entry
    # Black-box score per released model: its mean loss on the forget set (lower = "remembers").
    su = -batched_per_sample_loss(ctx.objective, trial_set.unlearned, Xf, yf).mean(1)
    sr = -batched_per_sample_loss(ctx.objective, trial_set.retrained, Xf, yf).mean(1)
    return {"description": "population MIA (logistic regression on logits and loss, forget vs "
                           "never-seen records, class-balanced, repeated stratified k-fold AUROC); "
                           "epsilon bound from the forget-set loss of each released model",
            "population_auroc": population,
            "bound": _bound_dict(bound(su, sr), su, sr, ctx.delta)}


def _population(ctx, theta: Tensor, Xf, yf, seed: int) -> dict:
    def feats(X, y):
        logits = ctx.objective.logits(theta, X)
        losses = ctx.objective.per_sample_loss(theta, X, y)
        return attack_features(_np(logits), _np(y), _np(losses))

    result = population_mia(feats(Xf, yf), _np(yf), feats(ctx.X_unseen, ctx.y_unseen),
                            _np(ctx.y_unseen), seed=seed)
    return result.to_dict() if hasattr(result, "to_dict") else dict(vars(result))


def _relearn(ctx, trial_set: TrialSet, bound, max_steps: int) -> dict:
    Xf, yf = _forget_data(ctx)
    target = float(ctx.objective.loss(ctx.theta_original, Xf, yf))
    lr = 1.0 / ctx.smoothness  # a stable fixed step for an L-smooth loss
    ru = relearn_time(ctx.objective, trial_set.unlearned, Xf, yf, target_loss=target, lr=lr, max_steps=max_steps)
    rr = relearn_time(ctx.objective, trial_set.retrained, Xf, yf, target_loss=target, lr=lr, max_steps=max_steps)
    su, sr = -ru.steps.astype(float), -rr.steps.astype(float)
    return {"description": "fine-tuning steps (gradient descent on Z, step 1/L) until the forget "
                           "loss reaches the original model's; fewer steps = remembers more",
            "unlearned": ru.summary(), "retrained": rr.summary(),
            "bound": _bound_dict(bound(su, sr), su, sr, ctx.delta)}


def _ulira(ctx, trial_set: TrialSet, bound, shadow_models: int, seed: int) -> dict:
    """U-LiRA (Hayes et al. 2024): shadows trained with Z then unlearned vs trained without Z."""
    Xf, yf = _forget_data(ctx)
    n = ctx.X.shape[0]
    forget_mask = torch.zeros(n, dtype=torch.bool, device=ctx.X.device)
    forget_mask[ctx.forget] = True
    pool = torch.nonzero(~forget_mask).squeeze(1)
    gen = torch.Generator().manual_seed(seed)
    one = ctx.objective.n_outputs == 1
    phi_in, phi_out = [], []
    for _ in range(shadow_models):
        half = pool[torch.randperm(pool.numel(), generator=gen)[: pool.numel() // 2].to(pool.device)]
        members = torch.cat([half, ctx.forget]).sort().values
        position = torch.searchsorted(members, ctx.forget)  # Z inside the shadow's training set
        shadow = ctx.method_factory()
        shadow.fit(ctx.X[members], ctx.y[members], ctx.init(gen))
        released_in = Unlearner.release(shadow.unlearn(position), ctx.sigma, gen)
        released_out = Unlearner.release(shadow.retrain(position), ctx.sigma, gen)
        phi_in.append(_np(logit_confidence(ctx.objective.logits(released_in, Xf), yf, one_logit=one)))
        phi_out.append(_np(logit_confidence(ctx.objective.logits(released_out, Xf), yf, one_logit=one)))
    phi_u = _np(logit_confidence(batched_logits(ctx.objective, trial_set.unlearned, Xf), yf, one_logit=one))
    phi_r = _np(logit_confidence(batched_logits(ctx.objective, trial_set.retrained, Xf), yf, one_logit=one))
    result = ulira_attack(np.stack(phi_in), np.stack(phi_out), phi_u, phi_r)
    su, sr = result.scores_unlearned, result.scores_retrained
    return {"description": "U-LiRA: per-example Gaussian fits of logit-scaled confidence from "
                           "shadow models trained with Z then unlearned (in) vs trained without Z (out)",
            "shadow_models_per_side": shadow_models, "targets": int(Xf.shape[0]),
            "roc": result.roc.to_dict(),
            "bound": _bound_dict(bound(su, sr), su, sr, ctx.delta)}


def _comparison(ctx, results: dict) -> dict:
    empirical = {name: r["bound"]["epsilon_lower"] for name, r in results.items() if "bound" in r}
    best_name = max(empirical, key=empirical.get) if empirical else None
    best = empirical[best_name] if best_name else 0.0
    tol = 1e-9
    return {
        "certified_epsilon": ctx.certified_epsilon,
        "realized_epsilon": ctx.realized_epsilon,
        "empirical_epsilon_lower": empirical,
        "best_empirical_epsilon": best,
        "best_attack": best_name,
        # nothing can be violated when no certificate was issued (uncertified method, failed condition)
        "certificate_violated": bool(ctx.certificate_valid and best > ctx.certified_epsilon * (1 + tol)),
        "realized_below_empirical": bool(best > ctx.realized_epsilon * (1 + tol) + tol),
        "ordering_holds": bool(ctx.certified_epsilon * (1 + tol) >= ctx.realized_epsilon
                               and ctx.realized_epsilon * (1 + tol) + tol >= best),
    }


def _np(t) -> np.ndarray:
    return t.detach().cpu().numpy() if isinstance(t, Tensor) else np.asarray(t)
