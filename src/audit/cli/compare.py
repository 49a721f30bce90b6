"""``audit compare``: every method on the same data, one signed page (:mod:`audit.comparing`).

Its flags are ``audit run``'s (one per configuration field, the same defaults and precedence:
flag over ``--config`` file over default), less ``--method``, ``--sigma-budget`` and ``--unlearn``
(one method's), plus ``--methods``, ``--max-accuracy-loss`` and ``--candidate NAME=module:...``
(repeatable: the caller's unlearning functions, trained by ``--train``). The attacks default to
``audit run``'s and RMIA, whose AUROC is a column of the comparison.
"""

from __future__ import annotations

import inspect
from contextlib import nullcontext
from typing import Any, Optional

import typer
from rich.markup import escape

from audit.cli.application import command, fail
from audit.cli.exits import ExitCode, check_signals
from audit.cli.run import (
    _OUTPUT_OPTIONS,
    RENAMES,
    SALT_FILE,
    _field_parameters,
    _named,
    _option,
    _typed,
    check_outputs,
    click_context,
    read_config,
    settings,
)
from certify.errors import InvalidInput

#: The attacks of a comparison when none are given: the run's defaults and RMIA.
COMPARE_EXTRA_ATTACKS = ("rmia",)
_PANEL = "Comparison"


def _parameters() -> list[inspect.Parameter]:
    from audit.comparing import DEFAULT_METHODS, NETWORK_METHODS, PER_METHOD_FIELDS
    from audit.config import FIELD

    attacks = ", ".join((*FIELD["attacks"].default, *COMPARE_EXTRA_ATTACKS))  # wraps between names
    params = []
    for p in _field_parameters():
        if p.name in PER_METHOD_FIELDS:
            continue
        if p.name == "attacks":
            p = _option(
                "attacks",
                Optional[str],
                None,
                "--attacks",
                rich_help_panel="Trials and attacks",
                help=escape(f"Comma-separated attacks (or none). [default: {attacks}]"),
                show_default=False,
            )
        params.append(p)
    return [
        _option(
            "methods",
            Optional[str],
            None,
            "--methods",
            rich_help_panel=_PANEL,
            help=escape(
                "Comma-separated methods to compare (see `audit methods`); those whose theorem excludes "
                f"the model are listed with the reason, not run. [default: {', '.join(DEFAULT_METHODS)}; "
                f"with a network model also {', '.join(NETWORK_METHODS)}]"
            ),
            show_default=False,
        ),
        _option(
            "candidate",
            Optional[list[str]],
            None,
            "--candidate",
            rich_help_panel=_PANEL,
            help=escape(
                "Your own unlearning function as a row, NAME=module:<package.module or file.py>:<function> "
                "called as fn(model, forget, retain, generator) -> model (repeatable; with --train, which "
                "trains every candidate's worlds; never recommended: ranked by measured leakage)."
            ),
            show_default=False,
        ),
        _option(
            "max_accuracy_loss",
            float,
            1.0,
            "--max-accuracy-loss",
            rich_help_panel=_PANEL,
            help=escape(
                "The recommendation rule's bound: the fastest consistent, certified method whose released "
                "model is at most this many points of test accuracy below retraining. [default: 1.0]"
            ),
            show_default=False,
        ),
        *params,
    ]


def compare(**params: Any) -> None:
    """Compare unlearning methods on the same data, split, forget set and seeds: one signed page
    with each method's certificate, released accuracy, speed and measured leakage, the
    privacy-utility frontier and a recommendation by a stated rule."""
    from audit.cli.show import Stages, console, library_notes, nothing_saved
    from audit.comparing import FastestWithin
    from audit.comparing import compare as run_compare
    from audit.config import FIELD, AuditConfig
    from audit.executors import ShardFailed
    from audit.pipeline import STAGES
    from audit.report.directory import COMPARISON_ENTRIES, FILE_MODES, ReportDirectory, fill_comparison

    check_signals()  # a Ctrl-C during the imports above that a library swallowed
    ctx = click_context()
    given = {name for name in params if _typed(ctx, name)}
    out, sign_key, commitment_salt = params.pop("out"), params.pop("sign_key"), params.pop("commitment_salt")
    config_path, as_json, quiet = params.pop("config"), params.pop("as_json"), params.pop("quiet")
    methods, max_loss, candidate = params.pop("methods"), params.pop("max_accuracy_loss"), params.pop("candidate")
    file_mode = FILE_MODES[params.pop("report_mode")]
    file = read_config(config_path) if config_path is not None else {}
    for key in ("method", "sigma_budget", "unlearn"):
        if key in file:
            raise InvalidInput(
                f"{key} (in {config_path})",
                "absent from a comparison's configuration (it chooses "
                "one method; use --methods, or --candidate for your own code)",
                file[key],
            )
    merged = settings({k: v for k, v in params.items() if k in given}, file)
    train = merged.pop("train", None)  # the candidates' training: compare's train=, not a shared setting
    candidates = _candidates(candidate)
    merged.setdefault("attacks", (*FIELD["attacks"].default, *COMPARE_EXTRA_ATTACKS))
    try:
        cfg = AuditConfig.from_dict(merged)
        rule = FastestWithin(max_loss)
    except InvalidInput as exc:
        raise _named(exc, given, config_path) from None
    salt = check_outputs(out, sign_key, commitment_salt, resume=cfg.resume)

    err = console()
    target = (
        ReportDirectory(out, file_mode=file_mode, field="--out", entries=COMPARISON_ENTRIES)
        if out is not None
        else None
    )
    with target if target is not None else nullcontext():
        with Stages(err, ("methods", *STAGES), quiet=quiet) as stages, library_notes(err, quiet=quiet):
            try:
                result = run_compare(
                    cfg, methods, rule=rule, progress=_per_method(stages), salt=salt, candidates=candidates, train=train
                )
            except InvalidInput as exc:
                raise _named(exc, given | {"methods"}, config_path) from None
            except ShardFailed as exc:  # as audit run: say which shard, keep what finished
                kept = f"; the finished shards are kept under {cfg.resume}" if cfg.resume else ""
                fail(f"{exc}{kept}", ExitCode.WORKER_FAILED)
        written = []
        check_signals()  # nothing is written after a Ctrl-C, wherever it was swallowed
        if target is not None:
            keep = commitment_salt is not None and commitment_salt.absolute() == target.target / SALT_FILE
            fill_comparison(target, result, sign_key=sign_key, save_salt=commitment_salt is None or keep)
            written = target.commit()
    if as_json:
        typer.echo(result.to_json(), nl=False)
    if not quiet:
        _summary(err, result.document)
        if target is None:
            nothing_saved(err)
        else:
            err.print(
                ("replaced the earlier comparison: " if target.replaced else "written: ")
                + ", ".join(str(p) for p in written),
                highlight=False,
                soft_wrap=True,
            )
    violated = any(row.verdict == "violated" for row in result.document.methods)
    raise typer.Exit(int(ExitCode.VIOLATED if violated else ExitCode.CONSISTENT))


def _candidates(values: list[str] | None) -> dict[str, str] | None:
    """``--candidate NAME=module:...`` values as compare's ``candidates`` (the names and functions are
    checked there, before any work)."""
    if not values:
        return None
    candidates: dict[str, str] = {}
    for value in values:
        name, eq, code = value.partition("=")
        if not eq or not name or not code:
            raise InvalidInput("--candidate", "NAME=module:<package.module or file.py>:<function>", value)
        if name in candidates:
            raise InvalidInput("--candidate", "each name once", name)
        candidates[name] = code
    return candidates


def _per_method(stages: Any) -> Any:
    """The comparison's progress: each method's run shows its own stages afresh."""

    def progress(stage: str, done: int, total: int) -> None:
        check_signals()  # a Ctrl-C that was swallowed is raised again at each step
        if stage == "methods":
            stages.finished.clear()
            stages.started.clear()
        stages.progress(stage, done, total)

    return progress


def _summary(err: Any, document: Any) -> None:
    from rich.table import Table

    from audit.comparing import spread

    rec = document.recommendation
    table = Table(
        title=f"comparison at epsilon={document.epsilon:g}, delta={document.delta:g}: recommended "
        f"{rec.method or 'none'}",
        show_header=True,
        header_style="bold",
    )
    for col in (
        "method",
        "verdict",
        "certified eps",
        "sigma",
        "no-op eps",
        "released test acc",
        "below retrain (pts)",
        "training (s)",
        "unlearning (s)",
        "speed-up",
        "best empirical eps",
    ):
        table.add_column(col, justify="left" if col in ("method", "verdict") else "right")
    for r in document.methods:
        released = (
            "n/a"
            if r.test_accuracy_released_mean is None
            else f"{r.test_accuracy_released_mean:.4f} ± {r.test_accuracy_released_std:.4f}"
        )
        certified = (
            "none"
            if r.certified_epsilon is None
            else f"{r.certified_epsilon:g}"
            + (" (exact)" if r.certificate_kind == "exact" else "")
            + ("" if r.cumulative_epsilon is None else f" (cumulative {r.cumulative_epsilon:.3g})")
        )
        low, high = spread(r)
        table.add_row(
            r.name,
            r.verdict,
            certified,
            f"{r.sigma:.4g}",
            "n/a" if r.no_op_epsilon is None else f"{r.no_op_epsilon:.3g}",
            released,
            "n/a" if r.loss_vs_retrained_points is None else f"{r.loss_vs_retrained_points:.2f}",
            f"{r.learn_s:.3g}",
            f"{r.unlearn_s:.3g}" + (f" ({low:.3g}-{high:.3g})" if high > low else ""),
            f"{r.speedup_vs_retrain:.3g}x",
            "n/a" if r.leakage is None else f"{r.leakage.best_empirical_epsilon:.3g}",
        )
    err.print(table)
    for m in document.not_applicable:
        err.print(f"not run: {m.name}: {escape(m.reason)}", highlight=False, soft_wrap=True)
    err.print(f"recommendation: {escape(rec.why)}", highlight=False, soft_wrap=True)
    err.print(f"rule: {escape(rec.rule)}", highlight=False, soft_wrap=True)
    for estimated in (document.estimated_ranking, document.estimated_ranking_fixed_training):
        if estimated is not None:  # the uncertified methods' order, with what it cannot separate
            err.print(f"estimates, not bounds: {escape(estimated.sentence)}", highlight=False, soft_wrap=True)
    ranking = document.measured_ranking
    if ranking is not None:
        mine = ", ".join(r.name for r in document.methods if r.trained_by is not None)
        err.print(
            f"trained by your train function: {mine}; the others by the toolkit's own algorithm (their "
            "theorems are about it)",
            highlight=False,
            soft_wrap=True,
        )
        err.print(
            "your candidates by measured leakage (measured, not certified), least first: "
            + (", ".join(ranking.order) or "none ranked")
            + "".join(f"; {n} not ranked: {why}" for n, why in ranking.not_ranked.items()),
            highlight=False,
            soft_wrap=True,
        )


compare.__signature__ = inspect.Signature([*_parameters(), *_OUTPUT_OPTIONS])  # type: ignore[attr-defined]
compare = command(
    "compare",
    renames={
        **RENAMES,
        "max_accuracy_loss": "--max-accuracy-loss",
        "methods": "--methods",
        "candidates": "--candidate",
    },
)(compare)
