"""``audit compare``: which unlearning method should this pipeline use?

:func:`compare` runs every applicable method on the same data, split, forget set, seeds and
commitment salt, each as one ordinary audit (:func:`audit.pipeline.run`, so each method's report
is exactly what ``audit run --method NAME`` with the same settings writes), and assembles the
rows of the comparison from those reports alone. A method whose theorem excludes the model (or
that cannot run on it) is listed with the one-sentence reason and not run. The recommendation
is a rule over the rows, a small frozen dataclass (:class:`FastestWithin`), stated in words on
the page.

The caller's own unlearning functions (``candidates=``) join the same table: each is one caller
audit (``audit.run(train=train_fn, unlearn=candidate)``) with the same data, split, forget set,
seeds and salt. The registered methods still train with the toolkit's own algorithm (their
theorems are about it) while the candidates train with ``train_fn``, so the two kinds of rows
have different retrained worlds: each candidate's AUROCs read against ``retrain-yours``
(:data:`CANDIDATE_REFERENCE`, exact retraining by ``train_fn``, added when ``retrain`` is
requested). Candidates have no certificate, so the rule never recommends one; they are ranked by
measured leakage instead (:func:`measured_ranking`), labelled measured, not certified.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import math
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from audit.config import CALLER_CODE, AuditConfig, CodeRef
from audit.ranking import estimated_ranking
from audit.report import TOOL, tool_version
from audit.report.comparison import (
    COMPARISON_SCHEMA_VERSION,
    ComparisonModel,
    Leakage,
    MeasuredRanking,
    MethodRow,
    NotApplicable,
    Recommendation,
)
from audit.report.directory import METHODS_DIR
from certify.errors import InvalidInput

#: The methods ``audit compare`` runs by default: the certified methods of the five seed papers,
#: DP-SGD, and the two baselines every comparison needs (fine-tuning, and exact retraining, the
#: reference for speed and for what an attack achieves against a perfect deletion).
DEFAULT_METHODS = ("r2d", "cns", "hf", "newton", "ngd", "dpsgd", "finetune", "retrain")
#: Added to the default where the model is a network (not ``logreg``): certified noisy fine-tuning
#: needs no constant of the loss, the only certified method that stays useful on a deep model.
NETWORK_METHODS = ("noisy-ft",)


def default_methods(config: Any) -> tuple[str, ...]:
    """The methods ``audit compare`` runs when none are named: :data:`DEFAULT_METHODS`, and
    :data:`NETWORK_METHODS` too unless the model is logistic regression."""
    return DEFAULT_METHODS + (NETWORK_METHODS if getattr(config, "model", "logreg") != "logreg" else ())


#: The exact baseline: what an attack achieves against it is what a perfect deletion leaks.
REFERENCE = "retrain"
#: Fields that choose one method (or its knob, or the caller's unlearning): a comparison cannot share them.
PER_METHOD_FIELDS = ("method", "sigma_budget", "unlearn")
#: The candidates' reference row: exact retraining by the caller's train function
#: (:func:`unlearners.caller.retrain_with`), run when ``retrain`` is requested with candidates.
CANDIDATE_REFERENCE = "retrain-yours"
#: The measured ranking of the candidates, in words (the page and the document state it).
MEASURED_RULE = (
    "measured, not certified: the candidates (your code, trained by your train function) and their "
    f"reference {CANDIDATE_REFERENCE} ordered by the best empirical epsilon lower bound any attack proved "
    "(lowest first), ties by how far the attacks' AUROC is from 0.5 (nearest first); a higher place "
    "means the attacks told its release from retraining less well in these trials, not that any "
    "guarantee holds"
)

#: The reference row's title (its report names the function: retrain_with(<your train>)).
_REFERENCE_TITLE = "exact retraining by your train function, from fresh weights (the reference for your candidates)"
#: A row's name (the comparison schema's MethodName pattern).
_NAME = re.compile(r"[a-z0-9]+([-_][a-z0-9]+)*")

Progress = Callable[[str, int, int], None]
log = logging.getLogger("unlearn_audit.compare")


@dataclass(frozen=True)
class FastestWithin:
    """The rule: the fastest method (shortest median unlearning time in this comparison) whose audit
    is consistent (a certificate was issued at the requested ε and δ and nothing measured
    contradicts it), whose released model is at most ``max_accuracy_loss`` points of test accuracy
    below retraining without the forgotten records, and which unlearns faster than exact
    retraining beyond the timing spread.

    Retraining is the reference every method must beat: the ``retrain`` row's unlearning time
    when it is compared (what the caller would run instead, measured in the same comparison),
    and each method's own retraining, timed in its own run (its speed-up column: a method slower
    than its own A(D \\ Z) is never recommended either). Times are medians of
    ``timing_repeats`` runs and the spread is min to max: a method whose slowest run is not
    faster than retraining's fastest is slower or tied, and a tie goes to ``retrain``, whose exact
    certificate (ε = 0) needs no theorem, constant or noise explained."""

    max_accuracy_loss: float = 1.0

    def __post_init__(self) -> None:
        if not (
            isinstance(self.max_accuracy_loss, (int, float))
            and math.isfinite(self.max_accuracy_loss)
            and 0 <= self.max_accuracy_loss <= 100
        ):
            raise InvalidInput("max_accuracy_loss", "a number of accuracy points in [0, 100]", self.max_accuracy_loss)

    def words(self, epsilon: float, delta: float) -> str:
        return (
            f"the fastest method (shortest median unlearning time in this comparison) whose certificate at "
            f"epsilon = {epsilon:g}, delta = {delta:g} was issued and holds (verdict consistent: nothing measured "
            f"contradicts it), whose released model's test accuracy is at most {self.max_accuracy_loss:g} "
            f"points below retraining's (the method's own A(D \\ Z), noiseless), and which unlearns faster than "
            f"retraining ({REFERENCE}'s time when it is compared, and the method's own retraining) beyond the "
            f"timing spread (its slowest run beats retraining's fastest); a method slower than retraining, or "
            f"within the spread of it, is not recommended over {REFERENCE}, whose exact certificate "
            f"(epsilon = 0) needs nothing explained"
        )

    def miss(self, row: MethodRow, reference: MethodRow | None = None) -> str | None:
        """The first condition ``row`` misses, in words; None when it meets the rule. ``reference``:
        the ``retrain`` row when it is compared."""
        if row.trained_by is not None:
            return "it is your own code, audited empirically: no certificate (see the measured ranking)"
        if row.certified_epsilon is None:
            return "no certificate was issued" + (
                " (the method has no theorem)" if row.certificate_kind == "none" else ""
            )
        if row.verdict != "consistent":
            return f"its audit's verdict is {row.verdict}"
        if row.loss_vs_retrained_points is None:
            return "nothing is released: no finite noise certifies it"
        if row.loss_vs_retrained_points > self.max_accuracy_loss:
            return (
                f"its released model is {row.loss_vs_retrained_points:.2f} points below retraining "
                f"(more than {self.max_accuracy_loss:g})"
            )
        against = None if row.name == REFERENCE else _against_retraining(row, reference)
        return None if against is None else against[0]

    def apply(self, rows: Sequence[MethodRow], epsilon: float, delta: float) -> Recommendation:
        reference = next((r for r in rows if r.name == REFERENCE), None)
        misses = {row.name: self.miss(row, reference) for row in rows}
        eligible = sorted((r for r in rows if misses[r.name] is None), key=lambda r: (r.unlearn_s, r.name))
        if eligible:
            against = {r.name: _against_retraining(r, reference) for r in rows if r.name != REFERENCE}
            tied = [name for name, a in against.items() if a is not None and a[1] and misses[name] == a[0]]
            why = _why(eligible, reference, tied)
        else:
            why = "no compared method meets the rule" + (
                ""
                if reference is not None
                else f"; add {REFERENCE} (exact, always eligible unless its model is unusable) as the fallback"
            )
        return Recommendation(
            rule=self.words(epsilon, delta),
            max_accuracy_loss_points=float(self.max_accuracy_loss),
            method=eligible[0].name if eligible else None,
            why=why,
            eligible=[r.name for r in eligible],
            excluded={name: miss for name, miss in misses.items() if miss is not None},
        )


def spread(row: MethodRow, which: str = "unlearn") -> tuple[float, float]:
    """Min and max of a row's repeated timings (``which``: unlearn or retrain); the single
    timing twice when the report has no repeats."""
    runs = row.unlearn_repeats_s if which == "unlearn" else row.retrain_repeats_s
    median = row.unlearn_s if which == "unlearn" else row.retrain_s
    return (min(runs), max(runs)) if runs else (median, median)


def _timing(median: float, low: float, high: float) -> str:
    return f"{median:.3g} s" + (f" ({low:.3g}-{high:.3g})" if high > low else "")


def _retrainings(row: MethodRow, reference: MethodRow | None) -> list[tuple[float, float, float, str]]:
    """The retrainings ``row`` must beat, each as median, min, max and what it is in words: the
    ``retrain`` row's when it is compared, and always the method's own, timed in its own run."""
    own = (row.retrain_s, *spread(row, "retrain"), "its own retraining's")
    return ([(reference.unlearn_s, *spread(reference), f"{REFERENCE}'s")] if reference is not None else []) + [own]


def _against_retraining(row: MethodRow, reference: MethodRow | None) -> tuple[str, bool] | None:
    """Why ``row`` is not recommended over exact retraining, and whether it is a tie (the spreads
    overlap) rather than slower; None when its slowest run beats the fastest of every retraining."""
    low, high = spread(row)
    fallback = f"{REFERENCE} (exact, epsilon = 0" + (")" if reference is not None else "; add it to the comparison)")
    for median, ref_low, ref_high, what in _retrainings(row, reference):
        if high < ref_low:
            continue
        mine, theirs = _timing(row.unlearn_s, low, high), f"{what} {_timing(median, ref_low, ref_high)}"
        if low <= ref_high:
            return (
                f"it unlearns in {mine}, within the timing spread of {theirs}: a tie, which goes to {fallback}, "
                "whose certificate needs nothing explained"
            ), True
        return f"it unlearns in {mine}, slower than {theirs}, so {fallback} is the better choice", False
    return None


def _why(eligible: list[MethodRow], reference: MethodRow | None, tied: list[str]) -> str:
    best = eligible[0]
    if best.name == REFERENCE:
        why = (
            f"{REFERENCE} retrains from scratch in {_timing(best.unlearn_s, *spread(best))}: its certificate is "
            "exact (epsilon = 0, the release is the retrained model itself) and no other method meeting the rest "
            "of the rule unlearns faster beyond the timing spread"
        )
        if tied:
            why += " (" + ", ".join(tied) + " tied with it within the spread: a tie goes to retrain)"
        return why
    median, low, high, what = _retrainings(best, reference)[0]
    speedup = median / max(best.unlearn_s, 1e-9)
    why = (
        f"{best.name} unlearns in {_timing(best.unlearn_s, *spread(best))}, faster than {what} "
        f"{_timing(median, low, high)} beyond the timing spread (speed-up {speedup:.3g}x), "
        f"its {best.certificate_kind} certificate holds at epsilon = {best.certified_epsilon:g}, and its released "
        f"model is {best.loss_vs_retrained_points:.2f} points below retraining"
    )
    runner_up = eligible[1] if len(eligible) > 1 else None
    if runner_up is not None and spread(runner_up)[0] <= spread(best)[1]:
        why += f"; {runner_up.name} ties with it within the timing spread"
    if best.conditional:
        why += "; its certificate is conditional on estimated or assumed constants (see its report)"
    return why


@dataclass
class Comparison:
    """What :func:`compare` returns: the comparison document and every method's own report."""

    document: ComparisonModel
    reports: dict[str, Any]
    commitment_salt: bytes

    def to_json(self) -> str:
        return self.document.to_json()

    def write(
        self, out_dir: str | Path, *, sign_key: str | Path | None = None, save_salt: bool = True, file_mode: int = 0o644
    ) -> Path:
        """Write the comparison directory as one set (see :mod:`audit.report.comparison`), signed
        with ``sign_key`` when given; returns the ``report.json`` path."""
        from audit.report.directory import write_comparison

        write_comparison(self, out_dir, sign_key=sign_key, save_salt=save_salt, file_mode=file_mode)
        return Path(out_dir).absolute() / "report.json"


def compare(
    config: AuditConfig,
    methods: Sequence[str] | None = None,
    *,
    rule: FastestWithin = FastestWithin(),
    progress: Progress | None = None,
    salt: bytes | None = None,
    model: Any = None,
    data: Any = None,
    forget_ids: Any = None,
    candidates: Mapping[str, Any] | None = None,
    train: Any = None,
) -> Comparison:
    """Run every applicable method of ``methods`` (and every candidate) with the settings of ``config``
    and compare them.

    Parameters
    ----------
    config:
        The shared settings (its ``method`` is replaced by each compared method; ``sigma_budget``,
        one method's knob, is refused, and so are ``train`` and ``unlearn``: pass them as ``train``
        and ``candidates``). ``method_options`` go to every compared method that declares the
        option; an option none of them declares is refused.
    methods:
        Registered method names, each once (may be empty when candidates are given).
    rule:
        The recommendation rule (:class:`FastestWithin`); it never picks a candidate (no certificate).
    progress:
        ``progress(stage, done, total)``: ``"methods"`` counts finished methods and candidates,
        then each run's own stages (:data:`audit.pipeline.STAGES`) follow as that one runs.
    salt, model, data, forget_ids:
        As for :func:`audit.pipeline.run`; one salt serves every method, so their reports carry
        one and the same deletion commitment.
    candidates:
        The caller's unlearning functions by name, ``{"my-ft": unlearn_fn, ...}`` (each an
        ``unlearn(model, forget, retain, generator) -> model`` of :mod:`unlearners.caller`, or a
        ``module:<package.module or file.py>:<function>`` string): each is audited as
        ``audit.run(config, train=train, unlearn=fn)`` and becomes a row. Names match the row-name
        pattern and are no registered method's (nor ``caller`` or ``retrain-yours``).
    train:
        The caller's training ``train(model, dataset, generator) -> model`` (or a ``module:``
        string) that trains every candidate's worlds; required with candidates, refused without.
        With ``retrain`` among ``methods`` the row ``retrain-yours`` (exact retraining by it) is
        added as the candidates' reference.
    """
    from audit.commitment import check_salt
    from audit.pipeline import run

    started, t0 = _now(), time.perf_counter()
    if not isinstance(config, AuditConfig):
        raise InvalidInput(
            "config",
            "an audit.AuditConfig (AuditConfig(...), or AuditConfig.from_dict for a dict)",
            type(config).__name__,
        )
    if not isinstance(rule, FastestWithin):
        raise InvalidInput(
            "rule", "a recommendation rule: audit.comparing.FastestWithin(max_accuracy_loss=points)", rule
        )
    names = _method_names(default_methods(config) if methods is None else methods, candidates_given=bool(candidates))
    if config.sigma_budget is not None:  # config.method is replaced by each compared method
        raise InvalidInput(
            "sigma_budget",
            "unset in a comparison (it tunes one method's knob; use audit run for it)",
            config.sigma_budget,
        )
    for field, instead in (("train", "train="), ("unlearn", "candidates={name: fn}")):
        if getattr(config, field) is not None:
            raise InvalidInput(
                field,
                f"unset in a comparison's configuration (pass {instead} to compare; CLI: "
                "--train, --candidate NAME=module:...)",
                getattr(config, field),
            )
    own = _candidates(candidates, train, with_reference=REFERENCE in names)
    configs = _configs(config, names, own)
    salt = check_salt(salt)
    tick = progress or (lambda stage, done, total: None)
    if config.resume is not None:
        _check_resume(config.resume, [c.resume for c in configs.values()] if config.attacks else [])

    reasons = _applicability({n: configs[n] for n in names}, own, model=model, data=data, forget_ids=forget_ids)
    runnable = [n for n in configs if reasons[n] is None]
    reports: dict[str, Any] = {}
    for i, name in enumerate(runnable):
        log.info("method %d of %d: %s", i + 1, len(runnable), name)
        tick("methods", i, len(runnable))
        try:
            reports[name] = run(
                configs[name],
                progress,
                salt=salt,
                model=model,
                data=data,
                forget_ids=forget_ids,
                **({} if own is None or name not in own.unlearn else own.code(name)),
            )
        except InvalidInput as exc:
            if exc.field == "resume":  # the caller's run directory (of another configuration): as for audit run
                raise
            # The data, the forget set and the model were accepted above: what one method refuses while it runs
            # (a memory cap, an unstable step size, a forget set too large for its bound) is that method's, and
            # the others' results stand.
            reasons[name] = f"refused while running: {exc}"
            log.warning("%s %s", name, reasons[name])
    tick("methods", len(runnable), len(runnable))
    return _assemble(config, names, own, reports, reasons, rule, salt, started, t0)


def _assemble(
    config: AuditConfig,
    names: tuple[str, ...],
    own: _Candidates | None,
    reports: dict[str, Any],
    reasons: dict[str, str | None],
    rule: FastestWithin,
    salt: bytes,
    started: str,
    t0: float,
) -> Comparison:
    """The comparison document from the reports: rows in the requested order, then the candidates."""
    extra_names = tuple(own.unlearn) if own is not None else ()
    ran = [n for n in (*names, *extra_names) if n in reports]
    rows = [
        row_of(name, reports[name], title=_REFERENCE_TITLE if name == CANDIDATE_REFERENCE else None) for name in ran
    ]
    if not ran:
        raise InvalidInput(
            "methods",
            "at least one method that can run on this model and data",
            [*names, *extra_names],
            hint="; ".join(f"{n}: {r}" for n, r in reasons.items()),
        )
    first = reports[ran[0]]
    # as the reports record it (caller inputs included), with the comparison's own options and run directory
    shared = {
        **{k: v for k, v in first.config.model_dump(mode="json").items() if k not in ("method", "unlearn")},
        "method_options": dict(config.method_options),
        "resume": config.resume,
        "train": None if own is None else own.recorded_train,
    }
    if own is not None:  # a candidate's report records none (its code has no constants)
        shared["constants"] = {k: float(v) for k, v in config.constants.items()}
    extra: dict[str, Any] = (
        {}
        if own is None
        else {
            "candidates": list(extra_names),
            "candidate_reference": CANDIDATE_REFERENCE if CANDIDATE_REFERENCE in reports else None,
            "measured_ranking": measured_ranking(rows),
        }
    )
    for group, key in (("retrain", "estimated_ranking"), ("fixed-training", "estimated_ranking_fixed_training")):
        ranking = estimated_ranking(rows, group)
        if ranking is not None:
            extra[key] = ranking
    document = ComparisonModel(
        schema_version=COMPARISON_SCHEMA_VERSION,
        kind="comparison",
        tool={"name": TOOL, "version": tool_version()},  # type: ignore[arg-type]  # pydantic validates it into Tool
        created_at=_now(),
        started_at=started,
        epsilon=float(config.epsilon),
        delta=float(config.delta),
        config=shared,
        methods_requested=list(names),
        methods=rows,
        not_applicable=[NotApplicable(name=n, reason=r) for n, r in reasons.items() if r],
        reference=REFERENCE if REFERENCE in reports else None,
        dataset=first.dataset,
        model=first.model,
        deletion_request=first.deletion_request,
        recommendation=rule.apply(rows, config.epsilon, config.delta),
        seeds=first.seeds,
        environment=first.environment,
        total_s=time.perf_counter() - t0,
        **extra,
    )
    return Comparison(document=document, reports=reports, commitment_salt=salt)


@dataclass(frozen=True)
class _Candidates:
    """The caller's candidates, checked: the training as given (a function or a ``module:`` string)
    and each unlearning function (or ``module:`` string) by row name, the reference last."""

    train: Any
    unlearn: dict[str, Any]

    @property
    def recorded_train(self) -> str:
        """What the configuration records for the training: its ``module:`` string, or ``caller``."""
        return self.train if isinstance(self.train, str) else CALLER_CODE

    def config(self, config: AuditConfig, name: str) -> AuditConfig:
        """One candidate's audit configuration: the caller's code is the method (no options of its own)."""
        value = self.unlearn[name]
        resume = None if config.resume is None else str(Path(config.resume) / name)
        return dataclasses.replace(
            config,
            method=CALLER_CODE,
            train=self.recorded_train,
            method_options={},
            unlearn=value if isinstance(value, str) else CALLER_CODE,
            constants={},
            resume=resume,
        )

    def code(self, name: str) -> dict[str, Any]:
        """The functions passed to ``audit.run`` in memory (a ``module:`` string is the configuration's)."""
        value = self.unlearn[name]
        return {
            "train": None if isinstance(self.train, str) else self.train,
            "unlearn": None if isinstance(value, str) else value,
        }


def _candidates(candidates: Any, train: Any, *, with_reference: bool) -> _Candidates | None:
    """The candidates, checked before any work (a ``module:`` file that does not import is refused
    now); None when none is given. A name is the row's: the row-name pattern, and no registered
    method's name (nor ``caller`` or ``retrain-yours``), so a row never reads as the toolkit's."""
    from audit.audited_model import load_factory
    from unlearners.caller import qualified_name, retrain_with  # torch: imported on use, not by audit --help
    from unlearners.registry import available_methods, unavailable_methods

    if candidates is None or (isinstance(candidates, Mapping) and not candidates):
        if train is not None:
            raise InvalidInput(
                "train",
                "given with candidates (your unlearning functions): the registered methods "
                "train with the toolkit's own algorithm",
                train if isinstance(train, str) else qualified_name(train),
            )
        return None
    if not isinstance(candidates, Mapping):
        raise InvalidInput(
            "candidates",
            "a mapping {name: unlearn function or 'module:<file.py>:<function>'}",
            type(candidates).__name__,
        )
    if train is None:
        raise InvalidInput(
            "train",
            "your pipeline's train function (or 'module:<file.py>:<function>') with "
            "candidates: it trains every candidate's worlds",
            None,
        )
    reserved = {*available_methods(), *unavailable_methods(), CALLER_CODE, CANDIDATE_REFERENCE}
    for name in candidates:
        if not (isinstance(name, str) and _NAME.fullmatch(name)) or name in reserved:
            raise InvalidInput(
                "candidates",
                "names of your own: lowercase letters and digits joined by - or _, "
                f"and not a registered method's (see `audit methods`), {CALLER_CODE} or "
                f"{CANDIDATE_REFERENCE}",
                name,
            )
    train_fn = _code(train, "train", load_factory)
    for fn in candidates.values():
        _code(fn, "candidates", load_factory)
    unlearn = dict(candidates)
    if with_reference:
        unlearn[CANDIDATE_REFERENCE] = retrain_with(train_fn)
    return _Candidates(train=train, unlearn=unlearn)


def _code(value: Any, field: str, load: Callable[[str, str], Any]) -> Callable[..., Any]:
    """A function, or the one a ``module:...`` string names (imported now: a bad one is refused before any work)."""
    if isinstance(value, str):
        CodeRef(field).check(field, value)
        return load(value, field)
    if not callable(value):
        raise InvalidInput(
            field, "a function, or 'module:<package.module or file.py>:<function>'", type(value).__name__
        )
    return value


def _configs(config: AuditConfig, names: tuple[str, ...], own: _Candidates | None) -> dict[str, AuditConfig]:
    """Each run's configuration: a registered method with the options it declares, then each candidate.
    Each run's shards resume from a directory of its own (a run directory serves one configuration)."""
    from unlearners.registry import get_method

    declared = {name: {p.name for p in get_method(name).hyperparameters} for name in names}
    unknown = sorted(set(config.method_options) - set().union(*declared.values()))
    if unknown:
        raise InvalidInput("method_options", "options declared by at least one compared method", unknown)
    configs = {
        name: dataclasses.replace(
            config,
            method=name,
            method_options={k: v for k, v in config.method_options.items() if k in declared[name]},
            resume=None if config.resume is None else str(Path(config.resume) / name),
        )
        for name in names
    }
    if own is not None:
        configs.update({name: own.config(config, name) for name in own.unlearn})
    return configs


def _applicability(configs: dict[str, AuditConfig], own: _Candidates | None, **inputs: Any) -> dict[str, str | None]:
    """Why each registered method is not run (:func:`audit.inputs.applicability`), None for each
    candidate (the caller's code runs on any model the audit accepts). A model that the toolkit's
    own training cannot use at all (no per-record gradients) excludes every registered method,
    not the candidates, which train it with the caller's code."""
    from audit.inputs import applicability

    reasons: dict[str, str | None] = {}
    if configs:
        try:
            reasons = applicability(configs, **inputs)
        except InvalidInput as exc:
            if own is None or exc.field != "model":
                raise
            reasons = {name: f"the toolkit's own training cannot use this model: {exc}" for name in configs}
    for name, reason in reasons.items():
        if reason is not None:
            log.info("%s is not run: %s", name, reason)
    return {**reasons, **({} if own is None else {name: None for name in own.unlearn})}


def measured_ranking(rows: Sequence[MethodRow]) -> MeasuredRanking:
    """The candidates and their reference by measured leakage (:data:`MEASURED_RULE`): measured, not
    certified. A candidate without attacks, or whose attacks had no power against the original
    model, is not ranked (a low bound would mean nothing)."""
    mine = [r for r in rows if r.trained_by is not None]
    not_ranked = {
        r.name: (
            "no attack ran"
            if r.leakage is None
            else "the attacks proved nothing against the original model either (no power), so a low bound means nothing"
        )
        for r in mine
        if r.leakage is None or not r.leakage.positive_control_has_power
    }
    ranked = [r for r in mine if r.name not in not_ranked]

    def leakage_order(r: MethodRow) -> tuple[float, float, str]:
        assert r.leakage is not None  # a row without leakage is in not_ranked
        return (
            r.leakage.best_empirical_epsilon,
            max((abs(a - 0.5) for a in r.leakage.auroc.values()), default=0.0),
            r.name,
        )

    order = sorted(ranked, key=leakage_order)
    return MeasuredRanking(rule=MEASURED_RULE, order=[r.name for r in order], not_ranked=not_ranked)


def row_of(name: str, report: Any, title: str | None = None) -> MethodRow:
    """The comparison's row of one method: numbers copied from its report, and two differences. A
    report of the caller's code (a candidate) is titled by its functions and says what trained it."""
    text = report.to_json()
    code = report.method.hyperparameters if report.method.name == CALLER_CODE else None
    cert, unlearned = report.certificate, report.utility.unlearned.test
    released = unlearned.noisy_accuracy_mean
    retrained = report.utility.retrained.test.accuracy
    attacks = report.attacks
    leakage = None
    if attacks is not None:
        leakage = Leakage(
            trial_mode=attacks.trials.mode,
            n_trials=attacks.trials.n_trials,
            best_empirical_epsilon=attacks.comparison.best_empirical_epsilon,
            best_attack=attacks.comparison.best_attack,
            auroc={a: r.bound.roc.auroc for a, r in attacks.attacks.items()},
            positive_control_has_power=attacks.positive_control.has_power,
            **_estimates_of(attacks),
        )
    return MethodRow(
        name=name,
        title=title or (report.method.title if code is None else f"your code: {code['unlearn']}"),
        paper=report.method.paper,
        report=f"{METHODS_DIR}/{name}/report.json",
        report_sha256=hashlib.sha256(text.encode()).hexdigest(),
        verdict=report.verdict,
        certificate_kind=cert.kind,
        certified_epsilon=cert.epsilon if cert.kind != "none" and cert.valid else None,
        conditional=cert.conditional,
        cumulative_epsilon=report.ledger.cumulative_epsilon if report.ledger else None,
        sigma=cert.sigma,
        sensitivity=cert.sensitivity,
        no_op_epsilon=report.realized.no_op_epsilon,
        test_accuracy_noiseless=unlearned.accuracy,
        test_accuracy_released_mean=released,
        test_accuracy_released_std=unlearned.noisy_accuracy_std,
        test_accuracy_retrained=retrained,
        noise_cost_points=None if released is None else 100.0 * (unlearned.accuracy - released),
        loss_vs_retrained_points=None if released is None else 100.0 * (retrained - released),
        learn_s=report.timings.learn_s,
        unlearn_s=report.timings.unlearn_s,
        retrain_s=report.timings.retrain_s,
        speedup_vs_retrain=report.timings.speedup_vs_retrain,
        unlearn_repeats_s=report.timings.unlearn_repeats_s,
        retrain_repeats_s=report.timings.retrain_repeats_s,
        leakage=leakage,
        frontier=report.frontier,
        knob=report.tradeoff,
        findings=report.findings,
        **({} if code is None else {"trained_by": code["train"]}),
    )


def _estimates_of(attacks: Any) -> dict[str, Any]:
    """``estimates`` for a row's leakage: every attack's, when its report has them (absent otherwise)."""
    found = {a: r.estimates for a, r in attacks.attacks.items() if r.estimates is not None}
    return {"estimates": found} if found else {}


def _check_resume(root: str, method_dirs: Sequence[str]) -> None:
    """Before any training, refuse a comparison's run directory that can never serve: the root is a
    file, or an audit run's own directory (a comparison keeps one per method under it), or a
    method's directory is unusable (:func:`audit.runstore.check_run_directory`). A method's
    directory made by another configuration is known only once its models exist (the key is a
    digest of them): that method's run refuses it, and the comparison stops there, as ``audit run``."""
    from audit.runstore import MANIFEST, check_run_directory

    path = Path(root)
    if path.exists() and not path.is_dir():
        raise InvalidInput("resume", "a directory for each method's run directory (created if missing)", root)
    if (path / MANIFEST).exists():
        raise InvalidInput(
            "resume",
            f"a comparison's run directory (one subdirectory per method), not one audit's (this one holds {MANIFEST})",
            root,
        )
    for directory in method_dirs:
        check_run_directory(directory)


def _method_names(methods: Sequence[str] | str, *, candidates_given: bool = False) -> tuple[str, ...]:
    from unlearners.registry import get_method

    if isinstance(methods, str):
        methods = [m.strip() for m in methods.split(",") if m.strip()]
    if (
        not isinstance(methods, (list, tuple))
        or not (methods or candidates_given)
        or not all(isinstance(m, str) for m in methods)
    ):
        raise InvalidInput(
            "methods",
            "a non-empty list of registered method names (see `audit methods`; empty only with candidates)",
            methods,
        )
    if len(set(methods)) != len(methods):
        raise InvalidInput("methods", "each method once", list(methods))
    for name in methods:
        try:
            get_method(name)
        except InvalidInput as exc:
            raise InvalidInput("methods", exc.allowed, name, exc.hint) from None
    return tuple(methods)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
