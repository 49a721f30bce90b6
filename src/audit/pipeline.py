"""One audit as a list of stages: data → learn → unlearn → retrain → certify → ledger → utility →
tradeoff → frontier → attacks → one-run → findings → report (:func:`_run` reads as that list).

Each stage is a function of what it needs: the data stage returns the :class:`Inputs` (data,
forget set, objective), the learn to certify stages the :class:`Worlds` (θ₀ and the original,
unlearned and retrained models with the certificate), the later stages the report's sections.
A method from the registry and the caller's own code are one path (:func:`audit.methods.build_method`).
``run(config)`` is silent; it reports progress through an optional callback
``progress(stage: str, done: int, total: int)`` that the CLI adapts to a rich progress bar.
The method is asked, never inspected: what it can do comes from its declared capabilities, what
its certificate means from the certificate's kind.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import logging
import math
import statistics
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import numpy as np
import torch
from torch import Tensor

from audit import findings as rules
from audit.attacking import (
    AttackSetup,
    DegenerateTrials,
    ExecutionSettings,
    TrialPlan,
    precheck_run,
    run_attacks,
    smoothness_of,
    trial_plan,
)
from audit.audited_model import describe
from audit.commitment import check_salt, commitment
from audit.config import AuditConfig
from audit.datasets import AuditData
from audit.evaluation import Evaluated, noisy_dtype, outputs, subsample
from audit.inputs import identifier, load_inputs, resolve_device, split_requests, to_tensor, with_caller_inputs
from audit.measurements import (
    agreement,
    chance_accuracy,
    frontier,
    ledger_section,
    loss_histograms,
    model_utility,
    parameters,
    realized,
    released_scores,
    tradeoff,
)
from audit.memory import activation_width
from audit.methods import build_method, caller_code, run_dtype
from audit.onerun import pipeline_section as one_run_section
from audit.report import SCHEMA_VERSION, TOOL, environment, schema, tool_version
from audit.seeds import child_seed
from audit.timing import timed
from audit.trials import choose_mode
from certify.certificate import Certificate
from certify.errors import InvalidInput
from unlearners.base import Unlearner
from unlearners.objective import Objective, init_parameters

log = logging.getLogger("unlearn_audit.pipeline")
Progress = Callable[[str, int, int], None]
STAGES = (
    "data",
    "learn",
    "unlearn",
    "retrain",
    "certify",
    "ledger",
    "utility",
    "tradeoff",
    "frontier",
    "trials",
    "shadows",
    "shards",
    "attacks",
)


def run(
    config: AuditConfig,
    progress: Progress | None = None,
    *,
    salt: bytes | None = None,
    model: Any = None,
    data: Any = None,
    forget_ids: Any = None,
    train: Any = None,
    unlearn: Any = None,
    original: Any = None,
) -> schema.ReportModel:
    """Run one audit and return its report.

    Parameters
    ----------
    config:
        A validated :class:`AuditConfig` (validated again here: a library caller may have
        mutated it).
    progress:
        Optional callback ``progress(stage, done, total)``; stages are :data:`STAGES`. While
        the trials run, ``"shards"`` counts finished shards and ``"trials"``/``"shadows"`` the
        models made (:class:`audit.progress.Throughput` turns them into a rate and an ETA).
    salt:
        Secret salt (≥ 16 bytes) of the deletion-request commitment. ``None`` draws 32 random
        bytes; read them back from ``report.commitment_salt`` (never serialised) to open the
        commitment later or to reproduce the report byte for byte.
    model:
        The caller's model: an ``nn.Module`` or a factory ``(input_shape, n_classes) -> Module``
        (:mod:`audit.audited_model`); the configuration records ``model = "caller"``.
    data:
        The caller's data: ``(X, y[, ids])`` arrays or tensors of any record shape, a DataFrame
        (``config.label_column``, ``config.id_column``), a map-style Dataset, or the caller's
        split ``{"train": ..., "test": ...}`` (:mod:`audit.datasets.user`); the configuration
        records ``dataset = "caller"``.
    forget_ids:
        The ids of the records a person asked to delete (the data's ids, else source
        positions); every one must be a training record. The commitment is over them; the
        configuration records ``forget_ids = "caller"``.
    train, unlearn:
        The caller's own training ``train(model, dataset, generator) -> model`` and unlearning
        ``unlearn(model, forget, retain, generator) -> model`` (:mod:`unlearners.caller`), given
        together: the audited method is then this code (``method = "caller"``, uncertified,
        measured in retrain mode), every trial a pure function of (seed, role, trial index).
        Before anything is trained, ``train`` runs twice on a small subset with one seed (the
        report's ``reproducibility``; finding ``not-reproducible`` when the two models differ).
    original:
        The model the caller's pipeline already trained (with ``train`` and ``unlearn``): an
        ``nn.Module`` of the audited architecture or its state dict
        (:func:`unlearners.caller.load_original`). It is the audit's original model, and the
        audited unlearned model is ``unlearn`` on a copy of it; the retrained reference and the
        trials stay fresh trainings by ``train``, and ``attacks.production`` places the model among
        the trials' original models (finding ``original-outlier`` when the trials do not model it).

    Returns
    -------
    AuditReport
        The report (:class:`audit.report.schema.ReportModel`).
    """
    from threadpoolctl import threadpool_limits

    if not isinstance(config, AuditConfig):  # a dict or None would fail deep inside with an AttributeError
        raise InvalidInput(
            "config", "an AuditConfig (AuditConfig(**options) or AuditConfig.from_dict(mapping))", type(config).__name__
        )
    before = torch.get_num_threads()
    blas = threadpool_limits(limits=None)  # records NumPy/SciPy's BLAS threads, to restore them
    try:
        return _run(
            config,
            progress,
            salt=salt,
            model=model,
            data=data,
            forget_ids=forget_ids,
            train=train,
            unlearn=unlearn,
            original=original,
        )
    finally:  # the thread count the run chose (audit.threads) ends with it
        torch.set_num_threads(before)
        blas.restore_original_limits()


@dataclasses.dataclass(frozen=True)
class Inputs:
    """The audit's inputs, prepared once on the run's device (the data stage): each later stage
    reads what it needs here."""

    data: AuditData
    X: Tensor  # the training records D (feature vectors for a linear model)
    y: Tensor  # their labels (mislabelled on Z for forget_strategy "mislabelled")
    forget: Tensor  # Z: positions in X
    forget_positions: np.ndarray  # Z as a NumPy array (the commitment reads the records' ids there)
    requests: list[Tensor]  # Z split into the requests served one after another
    test: tuple[Tensor, Tensor]
    unseen: tuple[Tensor, Tensor]  # records held out of training (the attacks' non-members)
    objective: Objective
    model_source: Any
    production: Any  # the model the caller's pipeline trained (``original=``), or None
    threads: tuple
    device: torch.device
    dtype: torch.dtype


@dataclasses.dataclass(frozen=True)
class Worlds:
    """The audit's models (θ as flat vectors): θ₀, trained on D, unlearned, retrained on D∖Z; the
    certificate of the unlearned release (None until the certify stage)."""

    theta0: Tensor
    original: Tensor
    unlearned: Tensor
    retrained: Tensor
    releases: list | None = None  # (θ, certificate) per request when several requests were served
    certificate: Certificate | None = None

    @property
    def certified_epsilon(self) -> float | None:
        """The certificate's ε where it certifies the release, else None."""
        assert self.certificate is not None  # read from the certify stage on
        return self.certificate.epsilon if self.certificate.certified else None


@dataclasses.dataclass(frozen=True)
class Attacked:
    """The attack stage's outcome: the results, or why there are none."""

    results: Any = None  # schema.Attacks
    plan: TrialPlan | None = None
    refused: str | None = None  # why the trials were degenerate
    skipped: bool = False  # no finite noise certifies the release: no released model to attack


#: Report sections present only when their stage ran.
_OPTIONAL = ("ledger", "one_run", "reproducibility", "frontier", "one_run_whitebox")


def _run(
    config: AuditConfig,
    progress: Progress | None,
    *,
    salt: bytes | None,
    model: Any,
    data: Any,
    forget_ids: Any,
    train: Any = None,
    unlearn: Any = None,
    original: Any = None,
) -> schema.ReportModel:
    """The stages in order: data, learn, unlearn, retrain, certify, ledger, utility, tradeoff,
    frontier, attacks, one-run, findings, report. One path for every method: the registry's
    or the caller's code, built by :func:`audit.methods.build_method`."""
    config = with_caller_inputs(
        config, model=model, data=data, forget_ids=forget_ids, train=train, unlearn=unlearn, original=original
    )
    train, unlearn = caller_code(config, train, unlearn)  # a missing function is refused before any work
    started, salt = _now(), check_salt(salt)
    tick, seeds = progress or _silent, config.seeds()
    timings: dict[str, Any] = {}
    device = resolve_device(config.device)
    _check_execution(config)
    inputs = _data(config, model, data, forget_ids, original, seeds, device, tick)
    # a partial of a module-level function, not a closure: it travels to worker processes
    init = functools.partial(_initial_point, inputs.objective, inputs.dtype, inputs.device)
    theta0 = init(torch.Generator().manual_seed(seeds["init"]))
    method = build_method(config, inputs.objective, seeds, train=train, unlearn=unlearn)
    # the caller's training, twice on a subset with one seed: are the trials a pure function of their seeds?
    sections: dict[str, Any] = {
        "reproducibility": method.reproducibility(inputs.X, inputs.y, theta0) if config.unlearn is not None else None
    }
    original_theta = _learn(method, inputs, theta0, tick, timings)
    if config.sigma_budget is not None:  # validated: the method's knob has a σ budget search
        value = method.knob_for_sigma(
            config.sigma_budget, inputs.forget, config.epsilon, config.delta, config.mechanism
        )
        knob = type(method).capabilities.knob
        assert knob is not None  # the config refuses sigma_budget for a method without a knob
        method.set_option(knob.option, value)
    unlearned, releases = _unlearn(method, inputs, config, tick, timings)
    retrained = _retrain(method, inputs, config.timing_repeats, tick, timings)
    worlds, sections["realized"], sections["checkpoint_recovery"] = _certify(
        method, inputs.forget, config, Worlds(theta0, original_theta, unlearned, retrained, releases), tick
    )
    assert worlds.certificate is not None  # set by the certify stage
    sections["ledger"] = None
    if releases is not None:
        with _clock(timings, "ledger_s"):
            sections["ledger"] = ledger_section(
                method, inputs.requests, releases, config, retrained, tick, child_seed(seeds["attacks"], "consecutive")
            )
    noise_gen = torch.Generator().manual_seed(seeds["noise"])  # the utility's draws, then the tradeoff's
    with _clock(timings, "utility_s"):
        sections["utility"], evaluated = _utility(inputs, worlds, config, noise_gen, seeds["noise"], tick)
    with _clock(timings, "tradeoff_s"):  # a diagnostic: within config.diagnostic_budget trainings
        sections["tradeoff"] = tradeoff(
            method,
            inputs.forget,
            epsilon=config.epsilon,
            delta=config.delta,
            mechanism=config.mechanism,
            points=config.curve_points,
            objective=inputs.objective,
            test=inputs.test,
            retrained=retrained,
            refit=functools.partial(_fit, inputs, theta0),
            gen=noise_gen,
            tick=tick,
            budget=config.diagnostic_budget,
            own=None if releases is not None else (unlearned, worlds.certificate),
        )
    sections["frontier"] = _frontier(method, inputs, worlds, config, seeds["noise"], tick, timings, evaluated)
    # known before the attacks: a model at chance is flagged first, and audited anyway (the release
    # and its certificate are still what they are; the finding makes the pass vacuous)
    not_learned = rules.original_not_learned(sections["utility"], config.confidence)
    if not_learned and config.attacks:
        log.warning("%s; the attacks run on it anyway", not_learned[0]["message"])
    attacked = _attack(method, inputs, worlds, config, sections["realized"], init, seeds["attacks"], tick, timings)
    sections["attacks"], sections["one_run"] = attacked.results, None
    if config.one_run_canaries is not None:
        with _clock(timings, "one_run_s"):
            sections["one_run"] = one_run_section(config, method, inputs, init, seeds["attacks"])
    sections["one_run_whitebox"] = None
    if config.one_run_whitebox_canaries is not None:
        from audit.onerun_whitebox import pipeline_section

        with _clock(timings, "one_run_whitebox_s"):
            sections["one_run_whitebox"] = pipeline_section(config, method, inputs, init, seeds["attacks"])
    found = _findings(config, worlds.certificate, sections, attacked) + not_learned
    return _report(
        config, method, inputs, worlds, sections, found, started=started, salt=salt, seeds=seeds, timings=timings
    )


def _silent(stage: str, done: int, total: int) -> None:
    """The progress callback of a run without one."""


@contextlib.contextmanager
def _clock(timings: dict[str, Any], key: str):
    """Record the wall-clock seconds of the block as ``timings[key]`` (nothing when it raises)."""
    t0 = time.perf_counter()
    yield
    timings[key] = time.perf_counter() - t0


def _check_execution(config: AuditConfig) -> None:
    """Refuse, before any work, a run directory that can never serve and an unreachable cluster."""
    if config.resume is not None and config.attacks:
        from audit.runstore import check_run_directory

        check_run_directory(config.resume)
    if config.executor == "ray":
        from audit.executors import check_ray_cluster

        check_ray_cluster(config.ray_address)


def _data(
    config: AuditConfig,
    model: Any,
    data: Any,
    forget_ids: Any,
    original: Any,
    seeds: dict[str, int],
    device: torch.device,
    tick: Progress,
) -> Inputs:
    """The data stage: the data, Z, the model's objective and the production model, loaded and
    checked before any training (a wrong file, a trial count that cannot fit: refused now)."""
    from audit.threads import choose, use_threads
    from unlearners.caller import load_original

    dtype = getattr(torch, run_dtype(config)[0])  # auto: the method's precision audit
    tick("data", 0, 1)
    data, forget_np, X, y, model_source, objective = load_inputs(config, model, data, forget_ids, seeds, dtype, device)
    production = (
        None if config.original is None else load_original(config.original if original is None else original, objective)
    )
    precheck_run(
        config,
        objective.dim,
        device,
        dtype=dtype,
        forget_size=len(forget_np),
        width=activation_width(objective, X),
        train_records=int(X.shape[0]),
    )
    threads = choose(config.threads, int(X.shape[0]), objective.dim)
    use_threads(threads[0])  # restored by run()
    if objective.is_linear:  # the closed forms of linear models read records as feature vectors
        X = X.reshape(X.shape[0], -1)
    forget = torch.as_tensor(forget_np, device=device)
    requests = split_requests(forget, config.requests, seeds["forget"])
    test = (
        to_tensor(data.X_test, dtype, device).reshape(-1, *X.shape[1:]),
        torch.as_tensor(data.y_test, device=device),
    )
    unseen = (
        to_tensor(data.X_unseen, dtype, device).reshape(-1, *X.shape[1:]),
        torch.as_tensor(data.y_unseen, device=device),
    )
    tick("data", 1, 1)
    return Inputs(
        data=data,
        X=X,
        y=y,
        forget=forget,
        forget_positions=forget_np,
        requests=requests,
        test=test,
        unseen=unseen,
        objective=objective,
        model_source=model_source,
        production=production,
        threads=threads,
        device=device,
        dtype=dtype,
    )


def _fit(inputs: Inputs, theta0: Tensor, method: Unlearner) -> Tensor:
    """``method`` trained on D from θ₀, told Z first when it can use it before training."""
    if type(method).capabilities.deletable_before_training:
        method.declare_deletable(inputs.forget)
    return method.fit(inputs.X, inputs.y, theta0)


def _learn(method: Unlearner, inputs: Inputs, theta0: Tensor, tick: Progress, timings: dict) -> Tensor:
    """The original model: the method's training on D, or the caller's production model adopted."""
    tick("learn", 0, 1)
    with _clock(timings, "learn_s"):
        theta = (
            _fit(inputs, theta0, method)
            if inputs.production is None
            else method.adopt(inputs.production, inputs.X, inputs.y, theta0)
        )
    tick("learn", 1, 1)
    return theta


def _unlearn(
    method: Unlearner, inputs: Inputs, config: AuditConfig, tick: Progress, timings: dict
) -> tuple[Tensor, list | None]:
    """The unlearned model, timed ``timing_repeats`` times; with several requests, every release
    of the sequence (the last one is the audited model)."""
    tick("unlearn", 0, 1)
    releases = None
    if len(inputs.requests) > 1:
        releases, timings["unlearn_repeats_s"] = timed(
            lambda m: m.serve_requests(inputs.requests, config.epsilon, config.delta, config.mechanism),
            method,
            config.timing_repeats,
            inputs.device,
        )
        theta = releases[-1][0]
    else:
        theta, timings["unlearn_repeats_s"] = timed(
            lambda m: m.unlearn(inputs.forget), method, config.timing_repeats, inputs.device
        )
    tick("unlearn", 1, 1)
    return theta, releases


def _retrain(method: Unlearner, inputs: Inputs, repeats: int, tick: Progress, timings: dict) -> Tensor:
    """The retrained model (D∖Z), timed; then the medians and the speed-up over retraining."""
    tick("retrain", 0, 1)
    theta, timings["retrain_repeats_s"] = timed(lambda m: m.retrain(inputs.forget), method, repeats, inputs.device)
    timings["unlearn_s"] = statistics.median(timings["unlearn_repeats_s"])
    timings["retrain_s"] = statistics.median(timings["retrain_repeats_s"])
    timings["speedup_vs_retrain"] = timings["retrain_s"] / max(timings["unlearn_s"], 1e-9)
    tick("retrain", 1, 1)
    return theta


def _certify(
    method: Unlearner, forget: Tensor, config: AuditConfig, worlds: Worlds, tick: Progress
) -> tuple[Worlds, schema.Realized, Any]:
    """The release's certificate, the ε its measured distance to retraining realizes, and the
    checkpoint recovery; a trial mode this release cannot serve is refused here, not after the
    utility stages."""
    tick("certify", 0, 1)
    certificate = (
        worlds.releases[-1][1]
        if worlds.releases is not None
        else method.certify(forget, config.epsilon, config.delta, config.mechanism)
    )
    worlds = dataclasses.replace(worlds, certificate=certificate)
    distance = float(torch.linalg.vector_norm(worlds.unlearned - worlds.retrained))
    # Training noise (DP-SGD) releases the model itself (σ = 0): the realized ε of ‖θ_U − θ_R‖ at σ = 0 is
    # infinite whenever two trainings differ, and says nothing of a guarantee that lives inside training.
    # The no-op reference (releasing A(D) at the same σ) exists where the release's noise is the
    # guarantee: an output-noise or exact certificate with finite σ (null otherwise, see schema.Realized).
    no_op = (
        float(torch.linalg.vector_norm(worlds.original - worlds.retrained))
        if certificate.kind in ("output-noise", "exact") and math.isfinite(certificate.sigma)
        else None
    )
    realized_ = realized(
        certificate.sigma,
        config.delta,
        distance,
        certificate.sensitivity,
        worlds.certified_epsilon if certificate.kind != "training-noise" else None,
        no_op,
    )
    recovery = (
        method.checkpoint_recovery(worlds.original, budget=config.diagnostic_budget)
        if type(method).capabilities.checkpoint_recovery
        else None
    )
    tick("certify", 1, 1)
    if config.attacks and math.isfinite(certificate.sigma):
        choose_mode(config.trial_mode, certificate.sigma, certificate.kind, reruns=type(method).capabilities.reruns)
    return worlds, realized_, recovery


def _utility(
    inputs: Inputs, worlds: Worlds, config: AuditConfig, noise_gen: torch.Generator, seed: int, tick: Progress
) -> tuple[schema.Utility, Evaluated]:
    """Accuracy and loss of the three models on the retain, forget and test sets, noiseless and
    released (``noise_draws`` draws of the certificate's σ, scored in float32 on at most
    ``utility_records`` records of a split, :mod:`audit.evaluation`); their loss histograms. One
    forward pass per model and split serves the accuracy, the loss, the histograms and the
    test-set agreement; the frontier reuses the passes it returns."""
    tick("utility", 0, 1)
    X, y, forget = inputs.X, inputs.y, inputs.forget
    keep = torch.ones(int(X.shape[0]), dtype=torch.bool, device=inputs.device)
    keep[forget] = False
    splits = {"retain": (X[keep], y[keep]), "forget": (X[forget], y[forget]), "test": inputs.test}
    models = {"original": worlds.original, "unlearned": worlds.unlearned, "retrained": worlds.retrained}
    assert worlds.certificate is not None  # the utility is measured after the certify stage
    objective, sigma = inputs.objective, worlds.certificate.sigma
    passes = {
        name: {
            split: outputs(objective, theta, Xs, ys) for split, (Xs, ys) in {**splits, "unseen": inputs.unseen}.items()
        }
        for name, theta in models.items()
    }
    dtype = noisy_dtype(objective, inputs.dtype)
    records = torch.Generator().manual_seed(child_seed(seed, "utility-records"))
    noisy_splits = {
        split: (Xs.to(dtype), ys)
        for split, (Xs, ys) in ((s, subsample(*xy, config.utility_records, records)) for s, xy in splits.items())
    }
    released = {
        name: released_scores(objective, theta, sigma, config.noise_draws, noise_gen, noisy_splits)
        for name, theta in models.items()
    }
    populations = {split: int(ys.numel()) for split, (_, ys) in splits.items()}
    utility = schema.Utility(
        **{
            name: model_utility({s: passes[name][s] for s in splits}, sigma, released[name], populations, dtype)
            for name in models
        },
        loss_histograms=loss_histograms(
            {name: {s: passes[name][s][0] for s in ("forget", "retain", "unseen")} for name in models}
        ),
        test_chance_accuracy=chance_accuracy(inputs.test[1]),
        unlearned_vs_retrained=agreement(passes["unlearned"]["test"][1], passes["retrained"]["test"][1]),
    )
    tick("utility", 1, 1)
    test_scores = released["unlearned"].get("test")
    return utility, Evaluated(
        test=noisy_splits["test"],
        population=populations["test"],
        noiseless=utility.unlearned.test.accuracy,
        known=None if test_scores is None else (float(sigma), test_scores),
    )


def _frontier(
    method: Unlearner,
    inputs: Inputs,
    worlds: Worlds,
    config: AuditConfig,
    seed: int,
    tick: Progress,
    timings: dict,
    evaluated: Evaluated,
) -> Any:
    """The released accuracy of the unlearned model at each ε of ``config.frontier`` (None
    without); not applicable to a sequence of requests."""
    if not config.frontier:
        return None
    if len(inputs.requests) > 1:
        return schema.FrontierNotApplicable(
            applicable=False,
            reason=("several requests were served: their guarantee composes in the ledger, not in one certificate"),
        )
    tick("frontier", 0, 1)
    with _clock(timings, "frontier_s"):
        front = frontier(
            method,
            worlds.certificate,
            inputs.forget,
            worlds.unlearned,
            epsilons=tuple(config.frontier),
            delta=config.delta,
            mechanism=config.mechanism,
            objective=inputs.objective,
            test=evaluated.test,
            draws=config.noise_draws,
            gen=torch.Generator().manual_seed(child_seed(seed, "frontier")),
            noiseless=evaluated.noiseless,
            known=evaluated.known,
            population=evaluated.population,
        )
    tick("frontier", 1, 1)
    return front


def _attack(
    method: Unlearner,
    inputs: Inputs,
    worlds: Worlds,
    config: AuditConfig,
    realized_: schema.Realized,
    init,
    seed: int,
    tick: Progress,
    timings: dict,
) -> Attacked:
    """The attacks, in the mode an adversary faces (:func:`audit.trials.choose_mode`): noise draws
    when the release adds output noise, the training randomness redrawn per trial otherwise. A
    release that no finite noise certifies has no released model to attack (skipped)."""
    certificate = worlds.certificate
    assert certificate is not None  # the attacks run after the certify stage
    if not config.attacks:
        return Attacked()
    if not math.isfinite(certificate.sigma):
        return Attacked(skipped=True)
    plan = trial_plan(
        config,
        *choose_mode(config.trial_mode, certificate.sigma, certificate.kind, reruns=type(method).capabilities.reruns),
    )
    X, y, objective = inputs.X, inputs.y, inputs.objective
    setup = AttackSetup(
        objective=objective,
        method=method,
        init=init,
        X=X,
        y=y,
        forget=inputs.forget,
        X_unseen=inputs.unseen[0],
        y_unseen=inputs.unseen[1],
        theta_original=worlds.original,
        theta_unlearned=worlds.unlearned,
        theta_retrained=worlds.retrained,
        sigma=certificate.sigma,
        delta=config.delta,
        certified_epsilon=worlds.certified_epsilon,
        realized_epsilon=realized_.epsilon,
        smoothness=lambda: smoothness_of(certificate, objective, X, y, worlds.original),
        production=inputs.production is not None,
        timings={k: timings[k] for k in ("learn_s", "unlearn_s", "retrain_s")},
    )
    results, refused = None, None
    execution = ExecutionSettings(
        config.executor, config.workers, config.ray_address, config.shard_size, config.resume, config.time_budget
    )

    def attack(plan: TrialPlan, pilot: bool) -> schema.Attacks:
        return run_attacks(
            setup,
            attacks=config.attacks,
            plan=plan,
            shadow_models_=config.shadow_models,
            confidence=config.confidence,
            relearn_max_steps=config.relearn_max_steps,
            seed=seed,
            tick=tick,
            execution=dataclasses.replace(execution, resume=None) if pilot else execution,
        )

    with _clock(timings, "attacks_s"):
        try:
            if plan.sizing is not None and plan.sizing.chosen_by == "cost":
                from audit.trial_budget import sized_stage

                results, plan = sized_stage(setup, plan, config, attack)
            else:
                results = attack(plan, False)
        except DegenerateTrials as exc:
            refused = str(exc)
    return Attacked(results, plan, refused)


def _findings(config: AuditConfig, certificate: Certificate, sections: dict[str, Any], attacked: Attacked) -> list:
    """Every finding of the run, from its certificate and its measured sections."""
    results = attacked.results
    found = rules.certificate_findings(
        certificate,
        sections["realized"],
        sections["utility"],
        results.comparison if results else None,
        attacked.plan.mode if attacked.plan else "noise",
        config.confidence,
        requested_epsilon=config.epsilon,
    )
    if results is not None:
        found += rules.measurement_findings(
            results, config.confidence, no_op_passes=any(f["code"] == "no-op-passes" for f in found)
        )
    if sections["ledger"] is not None:
        found += rules.ledger_findings(sections["ledger"])
    if attacked.skipped:
        found.append(rules.attacks_skipped())
    if attacked.refused is not None:
        found.append(rules.degenerate_trials(attacked.refused))
    if sections["one_run"] is not None:
        found += rules.one_run_findings(sections["one_run"])
    if sections["one_run_whitebox"] is not None:
        found += rules.whitebox_one_run_findings(sections["one_run_whitebox"])
    found += rules.diagnostic_findings(sections["tradeoff"], sections["checkpoint_recovery"], config.diagnostic_budget)
    reproducibility = sections["reproducibility"]
    if reproducibility is not None and not reproducibility["equal"]:
        found.append(rules.not_reproducible(schema.Reproducibility(**reproducibility)))
    if results is not None and results.production is not None and results.production.outlier:
        found.append(rules.original_outlier(results.production))
    return found


def _report(
    config: AuditConfig,
    method: Unlearner,
    inputs: Inputs,
    worlds: Worlds,
    sections: dict[str, Any],
    found: list,
    *,
    started: str,
    salt: bytes,
    seeds: dict[str, int],
    timings: dict,
) -> schema.ReportModel:
    """The report: every stage's section, the findings and their verdict, salted."""
    data = inputs.data
    return schema.ReportModel(
        schema_version=SCHEMA_VERSION,
        tool={"name": TOOL, "version": tool_version()},  # type: ignore[arg-type]  # pydantic validates it into Tool
        created_at=_now(),
        started_at=started,
        verdict=rules.verdict_of(found),
        findings=found,
        config=config.to_dict(),
        method={  # type: ignore[arg-type]  # pydantic validates the dict into Method
            "name": method.name,
            "title": method.title,
            "paper": method.paper,
            "certified": method.certified,
            "capabilities": type(method).capabilities.describe(),
            "hyperparameters": method.report_hyperparameters(),
        },
        dataset={  # type: ignore[arg-type]  # pydantic validates the dict into Dataset
            **data.describe(),
            "forget_size": int(inputs.forget.numel()),
            "source": data.source,
            "preprocessing": data.preprocessing,
        },
        model=describe(  # type: ignore[arg-type]  # pydantic validates the dict into Model
            inputs.objective, inputs.model_source, data.input_shape, worlds.theta0, method.model_conditions
        ),
        deletion_request=commitment(  # type: ignore[arg-type]  # pydantic validates it into DeletionRequest
            data.train_ids()[inputs.forget_positions], salt, identifier(data, config), config.request_id
        ),
        certificate=schema.Certificate.of(worlds.certificate),
        realized=sections["realized"],
        parameters=parameters(inputs.objective, worlds.original, worlds.unlearned, worlds.retrained),
        utility=sections["utility"],
        tradeoff=sections["tradeoff"],
        checkpoint_recovery=sections["checkpoint_recovery"],
        attacks=sections["attacks"],
        **{name: sections[name] for name in _OPTIONAL if sections[name] is not None},
        timings=timings,  # type: ignore[arg-type]  # pydantic validates the dict into Timings
        seeds={"root": config.seed, **seeds},  # type: ignore[arg-type]  # pydantic validates it into Seeds
        environment=environment(  # type: ignore[arg-type]  # pydantic validates it into Environment
            inputs.device, inputs.threads, run_dtype(config)
        ),
    ).with_salt(salt)


# ----------------------------------------------------------------------------------------
def _initial_point(objective, dtype: torch.dtype, device: torch.device, generator: torch.Generator) -> Tensor:
    """θ_0 drawn from ``generator`` (:func:`unlearners.objective.init_parameters`) in float64, then
    rounded to the run's dtype on its device: a float32 run starts from the float64 run's θ_0."""
    return init_parameters(objective, generator, torch.float64).to(device=device, dtype=dtype)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
