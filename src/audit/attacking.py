"""Attack the released models of both worlds and turn what every attack achieves into ε bounds.

World U releases U(A(D), D, Z) + noise; world R releases A(D \\ Z) + noise with the same σ. The
audit decides which models exist: the trials (:mod:`audit.trials`) and, only when a selected
attack declares it needs them, shadow models: an independent trial set of the same game (same
mode, same data, same pinned options), drawn under the role ``"shadows"``. Each attack
(:mod:`attacks.registry`) returns one score per released model of each world; this module turns
every attack's scores into the same Clopper–Pearson ε lower bound (δ carried through), ROC curve
and GDP estimate, and compares them with the certified and realized ε. Nothing here knows an
attack by name.

Every audit also runs a **positive control**: the same attacks on the original model A(D)
against the retrained one. Attacks that cannot tell those apart have no power, and a method
that "passes" them has not shown anything.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import torch
from torch import Tensor

from attacks.base import to_numpy
from attacks.epsilon import strategy_ceiling
from attacks.estimates import ScorePair
from attacks.registry import get_attack
from attacks.roc import auroc
from audit.memory import STACKS, activation_width, check_trial_memory, trial_bytes
from audit.report import schema
from audit.seeds import child_seed
from audit.sizing import attack_resolution
from certify.errors import InvalidInput
from unlearners.base import Unlearner
from unlearners.objective import Objective

Tick = Callable[[str, int, int], None]
_TOL = 1e-9
#: The most trials per world ``trials_for_ceiling`` may ask for (the configuration's own limit).
MAX_TRIALS = 10_000_000


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
    production: bool = False
    """``theta_original`` is the caller's production model (``original=``), not A(D) of the audit's
    own run: the trials' original models are then compared with it (:func:`production_model`)."""
    #: The audit's own learn_s, unlearn_s and retrain_s (the trials' cost model: audit.cost).
    timings: dict[str, float] = dataclasses.field(default_factory=dict)


class DegenerateTrials(Exception):
    """The trials cannot be attacked meaningfully (every release of a world is the same model)."""


@dataclass(frozen=True)
class TrialPlan:
    """How many released models per world, in which mode, and why (recorded in the report)."""

    mode: str
    reason: str
    n_trials: int
    sized_for_ceiling: float | None = None
    #: Who chose the count and why (the report's ``trials.sizing``; :mod:`audit.trial_budget`).
    sizing: schema.TrialSizing | None = None


@dataclass(frozen=True)
class ExecutionSettings:
    """Where the shards run (:mod:`audit.executors`) and where finished ones are kept."""

    executor: str = "local"
    workers: int | None = None
    ray_address: str | None = None
    shard_size: int | None = None
    resume: str | None = None
    time_budget: float | None = None


#: Shards per worker when the shard size is left to the audit (some slack for uneven workers),
#: and the largest automatic shard (what a killed worker can lose, in granules).
SHARDS_PER_WORKER, MAX_AUTO_GRANULES = 4, 16


#: Noise-mode models whose features are computed together: no training groups them, and each
#: block costs a few vmapped calls whatever its size, so blocks are as large as the attacks' own
#: chunks allow (relearn fine-tunes 4,096 at once). At the training group's 75 models, 50,000
#: trials made 2,668 blocks per attack: 5.4 of the attack stage's 7.9 s of CPU (issue 26). Every
#: model's features are its own (the attack contract), so the scores are the same bytes.
NOISE_GRANULE = 1024


def shard_granule(method: Unlearner, mode: str, objective: Objective, X: Tensor) -> int:
    """The block of models computed together, of which shard sizes are multiples: in noise mode
    :data:`NOISE_GRANULE`; one trial where the method's retrain-mode trials run one per task
    (``trials_one_per_task``: the caller's own code, each trial trainings that cannot be
    batched); else the batched path's group (:func:`audit.trials.progress_group`), for every
    built-in method."""
    from audit.trials import progress_group

    if mode == "noise":
        return NOISE_GRANULE
    capabilities = type(method).capabilities
    if mode == "retrain" and method.trials_one_per_task and not capabilities.batched_training:
        return 1
    return progress_group(objective, X, None)


def shard_size_for(n: int, granule: int, settings: ExecutionSettings, workers: int) -> int:
    """Trials per shard: the configured size rounded up to the granule; else one trial per shard
    where the granule is one trial (trials that are trainings run one per task: their overhead of
    milliseconds is small next to a training, and progress and the ETA come per trial); else the
    whole role in one shard locally without a run directory, and about :data:`SHARDS_PER_WORKER`
    shards per worker (at most :data:`MAX_AUTO_GRANULES` granules each) otherwise."""
    from audit.shards import round_to_granule

    if settings.shard_size is not None:
        return round_to_granule(settings.shard_size, granule)
    if granule == 1:
        return 1
    if settings.executor == "local" and settings.resume is None:
        return round_to_granule(n, granule)
    size = round_to_granule(-(-n // (SHARDS_PER_WORKER * max(1, workers))), granule)
    return min(size, MAX_AUTO_GRANULES * granule)


def run_attacks(
    setup: AttackSetup,
    *,
    attacks: tuple[str, ...],
    plan: TrialPlan,
    shadow_models_: int,
    confidence: float,
    relearn_max_steps: int,
    seed: int,
    tick: Tick,
    execution: ExecutionSettings = ExecutionSettings(),
) -> schema.Attacks:
    """Run the selected attacks and their positive control; return the report's ``attacks`` section.

    The trials (and shadow models) are made and read shard by shard (:mod:`audit.shards`) on the
    configured executor (:mod:`audit.executors`); the attacks score the gathered features here.
    Raises :class:`DegenerateTrials` when every released model of each world is the same."""
    from audit.cost import check_budget, trial_cost
    from audit.executors import execute, make_executor
    from audit.runstore import RunStore, stored_shards
    from audit.shards import ShardContext, features_of, gather, identical_copies, plan_shards

    classes = [get_attack(name) for name in attacks]
    needs = set().union(*(cls.needs for cls in classes))
    # the trial stacks are the audit's largest allocation and their size is known now: refuse a
    # count that cannot fit here, with the bytes needed and available, instead of dying in it
    check_run_memory(setup, plan, attacks, shadow_models_)
    settings = {"shadow_models": shadow_models_, "relearn_max_steps": relearn_max_steps}
    sizes = {"trials": plan.n_trials, **({"shadows": shadow_models_} if "shadows" in needs else {})}
    granule = shard_granule(setup.method, plan.mode, setup.objective, setup.X)
    ctx = ShardContext(
        setup=dataclasses.replace(setup, smoothness=None),  # type: ignore[arg-type]  # workers read ctx.smoothness
        attacks=tuple(classes),
        mode=plan.mode,
        seed=seed,
        settings=settings,
        sizes=sizes,
        granule=granule,
        smoothness=setup.smoothness() if "smoothness" in needs else None,
    )
    executor = make_executor(
        execution.executor, execution.workers, address=execution.ray_address, device=setup.theta_original.device.type
    )
    size = shard_size_for(max(sizes.values()), granule, execution, executor.workers)
    shards = [shard for role, n in sizes.items() for shard in plan_shards(role, n, size, granule)]
    run = (execution.resume, ctx.key()) if execution.resume is not None else None  # (directory, key)
    done = stored_shards(*run, shards) if run is not None else []
    cost = trial_cost(
        setup.method,
        plan.mode,
        sum(s.size for s in shards if s not in done),
        executor.workers,
        setup.timings,
        execution.time_budget,
    )
    check_budget(cost, "trials" if plan.sized_for_ceiling is None else "target_ceiling")  # before any write
    store = RunStore(*run) if run is not None else None
    tick("trials", 0, plan.n_trials)
    if "shadows" in sizes:
        tick("shadows", 0, sizes["shadows"])
    results, resumed = execute(ctx, shards, executor, store=store, tick=tick)
    gathered = {role: gather(results, role) for role in sizes}
    if identical_copies(gathered["trials"]):
        n = plan.n_trials
        raise DegenerateTrials(
            f"all {n} released models of each world are identical ({plan.mode} mode, "
            f"sigma = {setup.sigma:.4g}): nothing random separates the trials, so an attack "
            "would only compare two fixed parameter vectors"
        )
    from audit.trials import GAUSSIAN_RELEASE_MODES

    bound_seed = child_seed(seed, "bound")
    each = per_attack_confidence(confidence, len(classes))
    gaussian_release = plan.mode in GAUSSIAN_RELEASE_MODES
    results_: dict[str, schema.AttackResult] = {}
    controls: dict[str, tuple[float, float]] = {}
    for i, cls in enumerate(classes):
        tick("attacks", i, len(classes))
        outcome = cls().score(ctx.inputs(cls, "game"), features_of(gathered, cls.name, "game"))
        results_[cls.name] = _result(
            cls,
            outcome.scores_unlearned,
            outcome.scores_retrained,
            outcome.details,
            delta=setup.delta,
            confidence=each,
            seed=bound_seed,
            target=0.0 if setup.certified_epsilon is None else setup.certified_epsilon,
            gaussian_release=gaussian_release,
        )
        outcome = cls().score(ctx.inputs(cls, "control"), features_of(gathered, cls.name, "control"))
        controls[cls.name] = _control(
            outcome.scores_unlearned, outcome.scores_retrained, delta=setup.delta, confidence=each, seed=bound_seed
        )
    tick("attacks", len(classes), len(classes))
    return schema.Attacks(
        trials=_trials(gathered["trials"], setup, plan, seed, confidence, each),
        attacks=results_,
        comparison=_comparison(setup, results_, gaussian_release),
        positive_control=_positive_control(controls),
        production=production_model(setup, gathered["trials"]) if setup.production and plan.mode == "retrain" else None,
        execution=schema.Execution(
            executor=execution.executor,  # type: ignore[arg-type]  # a config choice; pydantic checks the Literal
            workers=executor.workers,
            shard_size=size,
            shards=len(shards),
            resumed=[s.name for s in resumed],
            run_directory=execution.resume,
            **({} if cost is None else {"cost": cost}),
        ),
    )


def check_run_memory(setup: AttackSetup, plan: TrialPlan, attacks: tuple[str, ...], shadow_models_: int) -> None:
    """:func:`audit.memory.check_trial_memory` for this run's trials (and shadow models where a
    selected attack needs them): raises :class:`InvalidInput` when they cannot fit."""
    needs = set().union(*(get_attack(name).needs for name in attacks))
    check_trial_memory(
        trials=plan.n_trials,
        n_params=int(setup.theta_original.numel()),
        dtype=setup.theta_original.dtype,
        mode=plan.mode,
        shadow_models=shadow_models_ if "shadows" in needs else 0,
        device=setup.theta_original.device,
        forget_size=int(setup.forget.numel()),
        width=activation_width(setup.objective, setup.X),
        train_records=int(setup.X.shape[0]),
        trials_field="trials" if plan.sized_for_ceiling is None else "target_ceiling",
        ceiling=plan.sized_for_ceiling,
    )


#: |z| beyond which the production model is an outlier among the trials' original models: by
#: Chebyshev at most 1/16 of any population lies 4 standard deviations from its mean.
Z_LIMIT = 4.0


def production_model(setup: AttackSetup, trials: dict) -> schema.ProductionModel:
    """The production model's mean loss on D against the trials' original models' (their
    ``_loss`` feature, :func:`audit.shards.compute_shard`): z-score, percentile and range."""
    from audit.shards import SEP

    losses = np.asarray(trials[f"_loss{SEP}original"], dtype=float)
    with torch.no_grad():
        loss = float(setup.objective.loss(setup.theta_original, setup.X, setup.y))
    # on the log scale: a training loss spans orders of magnitude (longer training divides it), and a
    # z-score of the raw loss could never exceed mean/std below the mean
    with np.errstate(divide="ignore"):
        logs, log_loss = np.log(losses), float(np.log(loss))
    mean, std = float(logs.mean()), _sd(logs)
    if std > 0 and math.isfinite(mean):
        z = (log_loss - mean) / std
    else:  # the trials' losses are all equal: the production model is with them or beyond them all
        z = 0.0 if log_loss == mean else math.copysign(math.inf, log_loss - mean)
    return schema.ProductionModel(
        loss=loss,
        trials_mean=float(losses.mean()),
        trials_std=_sd(losses),
        trials_min=float(losses.min()),
        trials_max=float(losses.max()),
        z=z,
        percentile=float((losses < loss).mean()),
        z_limit=Z_LIMIT,
        outlier=bool(abs(z) > Z_LIMIT),
    )


def _sd(values: np.ndarray) -> float:
    return float(values.std(ddof=1)) if values.size > 1 else 0.0


def _control(su, sr, *, delta: float, confidence: float, seed: int) -> tuple[float, float]:
    """The positive control of one attack: its bound and AUROC on original-vs-retrained (only
    these are reported, so no GDP reading is computed)."""
    pair = ScorePair(to_numpy(su).astype(float), to_numpy(sr).astype(float), confidence=confidence, seed=seed)
    return pair.bound(delta).epsilon_lower, auroc(pair.u, pair.r)


def _positive_control(controls: dict[str, tuple[float, float]]) -> schema.PositiveControl:
    bounds = {name: bound for name, (bound, _) in controls.items()}
    best = max(bounds, key=bounds.__getitem__) if bounds else None
    return schema.PositiveControl(
        epsilon_lower=bounds,
        auroc={name: auroc for name, (_, auroc) in controls.items()},
        best_attack=best,
        best_epsilon_lower=bounds[best] if best else 0.0,
        has_power=bool(best and bounds[best] > 0.0),
    )


def trials_for_ceiling(target: float, delta: float, confidence: float) -> int:
    """The fewest trials per world whose ceiling (a perfectly separating attack under the default
    threshold strategy, at the per-attack ``confidence``) reaches ``target``: sizing the audit to
    the largest ε it must be able to prove (1,000 trials reach 5.6 at δ = 1e-5 and 95 %)."""

    def ceiling(n: int) -> float:
        return strategy_ceiling(n, delta, confidence)

    lo, hi = 10, 20
    while ceiling(hi) < target:
        lo, hi = hi, hi * 2
        if hi > MAX_TRIALS:
            raise InvalidInput(
                "target_ceiling",
                f"a ceiling reachable with at most {MAX_TRIALS:,} trials per world "
                f"(that many reach {ceiling(MAX_TRIALS):.2f})",
                target,
            )
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if ceiling(mid) < target else (lo, mid)
    return hi


#: Statements each attack makes at its level: the Clopper-Pearson bound, and the GDP lower bound on
#: mu (a bound in noise mode; elsewhere valid under the Gaussian hypothesis, reported only where the
#: goodness of fit accepts it). Both readings of the GDP bound are the one statement mu >= mu_lo.
STATEMENTS_PER_ATTACK = 2


def per_attack_confidence(confidence: float, n_attacks: int) -> float:
    """The level of each bound so that all of them hold together at ``confidence``.

    The verdict reads the largest of the attacks' bounds; if each held only at 95 %, the largest
    would hold at 1 − k·5 % by the union bound (80 % for four attacks). Bonferroni over the
    k attacks' two statements each: every bound at 1 − (1 − confidence)/(2k), so "the best
    attack proves ε ≥ …" holds at ``confidence`` jointly, GDP bounds included."""
    return 1.0 - (1.0 - confidence) / (STATEMENTS_PER_ATTACK * max(1, n_attacks))


def _trials(
    trials: dict, setup: AttackSetup, plan: TrialPlan, seed: int, confidence: float, each: float
) -> schema.Trials:
    from audit.shards import spread
    from audit.trials import SEED_SCHEME

    theta = setup.theta_original
    return schema.Trials(
        mode=plan.mode,  # type: ignore[arg-type]  # one of audit.trials.MODES; pydantic checks the Literal
        n_trials=plan.n_trials,
        seed=child_seed(seed, "trials"),
        sigma=setup.sigma,
        path=str(trials["path"]),  # type: ignore[arg-type]  # the path the trials took; pydantic checks the Literal
        seed_scheme=SEED_SCHEME,
        dim=int(theta.numel()),
        device=str(theta.device),
        dtype=str(theta.dtype).removeprefix("torch."),  # type: ignore[arg-type]  # float64 or float32; pydantic checks
        spread_unlearned=spread(trials, "unlearned"),
        spread_retrained=spread(trials, "retrained"),
        mode_reason=plan.reason,
        sized_for_ceiling=plan.sized_for_ceiling,
        ceiling=strategy_ceiling(plan.n_trials, setup.delta, each),
        n_per_world=plan.n_trials,
        root_seed=seed,
        confidence=confidence,
        per_attack_confidence=each,
        delta=setup.delta,
        **({} if plan.sizing is None else {"sizing": plan.sizing}),
    )


def _result(
    cls, su, sr, details, *, delta: float, confidence: float, seed: int, target: float, gaussian_release: bool = False
) -> schema.AttackResult:
    """One attack's section; ``target`` is the ε its ceiling must exceed to test anything (the
    certified ε, or 0 without a certificate: :func:`audit.sizing.attack_resolution`). Where the release is
    the Gaussian mechanism on fixed models (``gaussian_release``: noise mode) the GDP bound is a
    valid bound and is reported as one (:func:`attacks.gdp.gdp_bound`); elsewhere the GDP reading's
    own lower bound, gated by the shape test, is the estimate under the Gaussian hypothesis."""
    pair = ScorePair(to_numpy(su).astype(float), to_numpy(sr).astype(float), confidence=confidence, seed=seed)
    bound = pair.bound(delta)
    estimates = pair.estimates(delta, cls.orientation)
    gdp = pair.gdp_bound(delta, gaussian_release=True) if gaussian_release else None
    return schema.AttackResult(
        title=cls.title,
        description=cls.description,
        estimates=estimates.to_dict(),  # type: ignore[arg-type]  # pydantic validates the dict into Estimates
        bound=schema.EpsilonBound(
            **bound.to_dict(),
            roc=pair.roc().to_dict(),  # type: ignore[arg-type]  # pydantic validates it into Roc
            gdp_estimate=pair.gdp(delta).to_dict(),  # type: ignore[arg-type]  # pydantic validates it into GdpEstimate
            gdp_bound=None if gdp is None else gdp.to_dict(),  # type: ignore[arg-type]  # pydantic validates it
            # a valid GDP bound (noise mode) may decide what the attack can test; an estimate never does
            **attack_resolution(
                bound.ceiling, None if gdp is None else gdp.ceiling, target, delta, confidence, cap=MAX_TRIALS
            ),
        ),
        details=details,
    )


def _comparison(
    setup: AttackSetup, results: dict[str, schema.AttackResult], gaussian_release: bool = False
) -> schema.Comparison:
    empirical = {name: r.bound.epsilon_lower for name, r in results.items()}
    best_name = max(empirical, key=empirical.__getitem__) if empirical else None
    best = empirical[best_name] if best_name else 0.0
    certified, realized = setup.certified_epsilon, setup.realized_epsilon
    # an accepted GDP reading has its bound; the field's type is built at run time (the checker reads None)
    accepted = {
        name: cast(float, r.bound.gdp_estimate.epsilon_lower)
        for name, r in results.items()
        if r.bound.gdp_estimate.gof == "accepted"
    }
    gaussian = {name: lower for name, lower in accepted.items() if math.isfinite(lower)}
    gaussian_best = max(gaussian, key=gaussian.__getitem__) if gaussian else None
    gdp = _gdp_bounds(results) if gaussian_release else None
    gdp_best = max(gdp, key=gdp.__getitem__) if gdp else None
    gdp_violated = bool(gdp and gdp_best and certified is not None and gdp[gdp_best] > certified * (1 + _TOL))
    cp_violated = bool(certified is not None and best > certified * (1 + _TOL))
    return schema.Comparison(
        gdp_bound_epsilon_lower=gdp,
        best_gdp_bound_attack=gdp_best,
        best_gdp_bound_epsilon_lower=gdp[gdp_best] if gdp and gdp_best else None,
        violated_by="clopper-pearson" if cp_violated else "gdp-bound" if gdp_violated else None,
        gaussian_epsilon_lower=gaussian,
        best_gaussian_attack=gaussian_best,
        best_gaussian_epsilon_lower=gaussian[gaussian_best] if gaussian_best else None,
        gaussian_above_certified=bool(
            gaussian_best and certified is not None and gaussian[gaussian_best] > certified * (1 + _TOL)
        ),
        certified_epsilon=certified,
        realized_epsilon=realized,
        empirical_epsilon_lower=empirical,
        best_empirical_epsilon=best,
        best_attack=best_name,
        # nothing can be violated when no certificate was issued (no theorem, failed condition)
        certificate_violated=cp_violated or gdp_violated,
        realized_below_empirical=bool(best > realized * (1 + _TOL) + _TOL),
        ordering_holds=(
            None
            if certified is None
            else bool(certified * (1 + _TOL) >= realized and realized * (1 + _TOL) + _TOL >= best)
        ),
    )


def _gdp_bounds(results: dict[str, schema.AttackResult]) -> dict[str, float]:
    """The attacks' valid GDP bounds on ε (noise mode: every attack has one)."""
    return {
        name: float(r.bound.gdp_bound.epsilon_lower)
        for name, r in results.items()
        if r.bound.gdp_bound is not None and r.bound.gdp_bound.kind == "bound"
    }


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
    return model_constants(objective, X, y, [theta], generator=torch.Generator().manual_seed(0), which=("L",))[
        "L"
    ].value


def precheck_run(
    config: Any,
    n_params: int,
    device: torch.device | str = "cpu",
    *,
    forget_size: int = 1,
    width: int = 1,
    train_records: int = 0,
    dtype: torch.dtype | str | None = None,
) -> None:
    """The trial-memory check of a run, before training: as soon as the parameter count is known.

    The trial count is the one the attack stage will use (``trials``, or the count that reaches
    ``target_ceiling``, or the mode's default); with ``trial_mode = "auto"`` the mode is decided
    only after the certificate, so the cheaper of the two modes is assumed here (a lower bound:
    this refuses only runs the exact check at the attack stage would refuse too, or whose
    certificate turns out to need infinite noise, where the attacks are skipped). Shadow models
    count when a selected attack needs them. ``forget_size``, ``width`` and ``train_records`` size
    the per-record values and the activations (:func:`audit.memory.trial_bytes`); ``dtype`` is the
    run's (default: ``config.dtype``, ``auto`` resolved by :func:`audit.methods.run_dtype`). Nothing is
    checked when no attack runs.
    """
    if not config.attacks:
        return
    if dtype is None:
        from audit.methods import run_dtype

        dtype = run_dtype(config)[0]
    from audit.config import NOISE_TRIALS, RETRAIN_TRIALS

    field, fixed = "trials", None
    if config.target_ceiling is not None:
        each = per_attack_confidence(config.confidence, len(config.attacks))
        fixed = trials_for_ceiling(float(config.target_ceiling), config.delta, each)
        field = "target_ceiling"
    elif config.trials is not None:
        fixed = int(config.trials)
    defaults = {"noise": NOISE_TRIALS, "retrain": RETRAIN_TRIALS, "rerun": RETRAIN_TRIALS}
    modes = [config.trial_mode] if config.trial_mode in STACKS else list(STACKS)
    needs_shadows = any("shadows" in get_attack(name).needs for name in config.attacks)
    shadows = config.shadow_models if needs_shadows else 0

    def total(mode: str) -> int:
        n = fixed if fixed is not None else defaults[mode]
        return sum(
            trial_bytes(
                n + shadows,
                n_params,
                dtype,
                mode,
                forget_size=forget_size,
                width=width,
                train_records=train_records,
                device=device,
            )
        )

    mode = min(modes, key=total)  # "auto": the cheaper of the modes the certificate may choose
    check_trial_memory(
        trials=fixed if fixed is not None else defaults[mode],
        n_params=n_params,
        dtype=dtype,
        mode=mode,
        shadow_models=shadows,
        device=device,
        forget_size=forget_size,
        width=width,
        train_records=train_records,
        trials_field=field,
        ceiling=config.target_ceiling,
    )


def gradient_attacks(attacks: tuple[str, ...], objective) -> None:
    """Refuse, before any training, the selected attacks that need the model's gradients (those
    that declare ``smoothness``: relearn time fine-tunes with them) when ``torch.func`` cannot
    differentiate the model (``objective.gradient_failure``, the caller's own code only); the
    attacks that read outputs or parameters run on any model."""
    if objective.gradient_failure is None:
        return
    needing = [name for name in attacks if "smoothness" in get_attack(name).needs]
    if needing:
        raise InvalidInput(
            "attacks",
            "attacks that only read the model's outputs or parameters for this model ("
            + ", ".join(needing)
            + " need its gradients: "
            + objective.gradient_failure
            + ")",
            list(attacks),
        )


def trial_plan(config: Any, mode: str, reason: str) -> TrialPlan:
    """The trial count: ``trials``, or the fewest that reach ``target_ceiling`` (said in the report)."""
    from audit.config import NOISE_TRIALS, RETRAIN_TRIALS

    if config.target_ceiling is None:
        if config.trials is not None:
            n = int(config.trials)
            return TrialPlan(mode, reason, n, sizing=_sizing("user", f"{n:,} trials per world, given by the user"))
        if mode == "noise" and config.resume is None:  # the floor: audit.trial_budget sizes the count by cost
            return TrialPlan(mode, reason, NOISE_TRIALS, sizing=_sizing("cost", "sized by cost"))
        default = NOISE_TRIALS if mode == "noise" else RETRAIN_TRIALS
        said = f"{default} trials per world, the default of this mode"
        if mode == "noise":  # a count sized by this machine's speed could change the run directory's key
            said += " with a run directory (--resume); pass --trials for another"
        return TrialPlan(mode, reason + "; " + said, default, sizing=_sizing("mode-default", said))
    each = per_attack_confidence(config.confidence, len(config.attacks))
    n = trials_for_ceiling(float(config.target_ceiling), config.delta, each)
    said = f"{n:,} trials per world, the fewest whose ceiling reaches {config.target_ceiling:g}"
    return TrialPlan(mode, reason, n, float(config.target_ceiling), _sizing("target-ceiling", said))


def _sizing(by: str, why: str) -> schema.TrialSizing:
    return schema.TrialSizing(chosen_by=by, why=why)  # type: ignore[arg-type]  # pydantic checks the Literal
