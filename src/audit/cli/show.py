"""What ``audit run`` shows people on stderr: progress, the summary table, where it saved.

On a terminal: a progress bar per stage with counts and an ETA. Piped into a CI log: no bar
(it would be escape codes), one line per finished stage, and tables laid out at a wide fixed
width rather than Rich's 80-column default for files, so nothing is wrapped mid-number.
"""

from __future__ import annotations

import logging
import math
import os
import time
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

from audit.findings import BOUND_WORDS, cannot_catch_no_op, cannot_test, one_run_blind, tested_by_gdp, valid_gdp_bound
from audit.progress import Throughput

#: Width of tables and lines when stderr is not a terminal (and COLUMNS is not set).
PIPE_WIDTH = 160


def console(*, stderr: bool = True) -> Console:
    """A console: the terminal's width, or COLUMNS, or PIPE_WIDTH when piped."""
    probe = Console(stderr=stderr)
    if probe.is_terminal:
        return probe
    width = os.environ.get("COLUMNS", "")
    return Console(stderr=stderr, width=int(width) if width.isdigit() and int(width) > 0 else PIPE_WIDTH)


class Stages:
    """The pipeline's ``progress(stage, done, total)`` callback, shown as bars or as lines."""

    def __init__(self, err: Console, stages: tuple[str, ...], *, quiet: bool = False):
        self.err, self.stages, self.quiet = err, stages, quiet
        self.bar: Progress | None = None
        self.tasks: dict[str, Any] = {}
        self.started: dict[str, float] = {}
        self.finished: set[str] = set()
        self.t0 = time.perf_counter()
        self.throughput = Throughput()

    def __enter__(self) -> Stages:
        if not self.quiet and self.err.is_terminal:
            self.bar = Progress(
                TextColumn("{task.description:<10}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                TextColumn("eta"),
                TimeRemainingColumn(),
                TextColumn("{task.fields[rate]}"),
                console=self.err,
                transient=True,
            )
            self.bar.__enter__()
            self.tasks = {s: self.bar.add_task(s, total=1, visible=False, rate="") for s in self.stages}
        return self

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.__exit__(*exc)  # type: ignore[arg-type]

    def progress(self, stage: str, done: int, total: int) -> None:
        now = time.perf_counter()
        self.started.setdefault(stage, now)
        self.throughput.update(stage, done, total)
        rate = self.throughput.rate
        if self.bar is not None:
            note = f"{rate:.3g} models/s" if stage == "shards" and rate is not None else ""
            self.bar.update(self.tasks[stage], completed=done, total=max(total, 1), visible=True, rate=note)
        elif not self.quiet and stage == "shards" and total > 1 and 0 < done < total:
            # a long run piped into a log: one line per finished shard, with the rate and the time left
            self.err.print(f"[{now - self.t0:7.1f}s] {self.throughput.line()}", highlight=False, soft_wrap=True)
        elif not self.quiet and done >= total and stage not in self.finished:
            self.finished.add(stage)
            count = f" ({done}/{total})" if total > 1 else ""
            self.err.print(
                f"[{now - self.t0:7.1f}s] {stage}{count} done in {now - self.started[stage]:.1f}s",
                highlight=False,
                soft_wrap=True,
            )


def _fmt(v: Any) -> str:
    if v is None:
        return "n/a"
    return "inf" if isinstance(v, float) and math.isinf(v) else f"{v:.6g}"


def headline_line(err: Console, report: Any) -> None:
    """The summary's first line: the verdict and every finding in a few words
    (:func:`audit.findings.headline`, as the page's banner), coloured as the banner is."""
    from audit.findings import headline

    line = headline(report.verdict, report.findings)
    colour = (
        "red"
        if report.verdict == "violated" or line.count("error")
        else "green"
        if report.verdict == "consistent" and not line.named
        else "yellow"
    )
    err.print(f"[bold {colour}]{escape(line.text())}[/]", highlight=False, soft_wrap=True)


def refused_as_vacuous(err: Console, report: Any) -> None:
    """Why ``--strict`` turned a consistent verdict into exit 7."""
    from audit.cli.exits import ExitCode
    from audit.findings import headline

    codes = ", ".join(headline(report.verdict, report.findings).vacuous)
    err.print(
        f"refused by --strict: the verdict is consistent, but the pass proves little ({codes}): exit "
        f"{int(ExitCode.VACUOUS)}",
        highlight=False,
        soft_wrap=True,
    )


def _bound(
    value: float,
    ceiling: float,
    can_test: bool | None,
    size: int | None,
    target: float | None,
    unit: str,
    gdp: Any = None,
    test_bound: str | None = None,
) -> str:
    """A lower bound with its ceiling, or, below its own resolution, what it cannot test and the size that could;
    with ``gdp`` (the attack's valid GDP bound, noise mode), which bound decided (:func:`audit.sizing.attack_resolution`)."""
    if can_test is not False:
        if gdp is not None and can_test and test_bound == "gdp-bound":
            return f"{_fmt(value)} ({tested_by_gdp(ceiling, gdp.ceiling, target)})"
        return f"{_fmt(value)} (ceiling {_fmt(ceiling)})"
    by = f", with {BOUND_WORDS[test_bound or 'clopper-pearson']}" if gdp is not None else ""
    could = f"{size:,} {unit} could{by}" if size is not None else "no size could"
    shown = f"{_fmt(value)}: " if value > 0 else ""
    if gdp is not None:
        ceilings = f"ceilings: Clopper-Pearson {_fmt(ceiling)}, GDP bound {_fmt(gdp.ceiling)}"
        return f"{shown}{cannot_test(target)} at this size by either bound ({ceilings}; {could})"
    return f"{shown}{cannot_test(target)} at this size (ceiling {_fmt(ceiling)}; {could})"


def _one_run_bound(one_run: dict) -> str:
    """The one-run bound; where its positive control failed (and nothing else was said about it),
    that it cannot see a deletion that did nothing, with the control's count."""
    control = one_run.get("control")
    if not one_run_blind(one_run):
        return _bound(
            one_run["epsilon_lower"],
            one_run["ceiling"],
            one_run.get("can_test"),
            one_run.get("size_to_test"),
            one_run["certified_epsilon"],
            "pairs",
        )
    assert control is not None  # one_run_blind() holds only for a result with a control
    return (
        f"{cannot_catch_no_op(one_run['m'])} (the original model: {control['v']} of {control['r']} right, "
        f"epsilon >= {_fmt(control['epsilon_lower'])}; ceiling {_fmt(one_run['ceiling'])})"
    )


def summary(err: Console, report: Any) -> None:
    """The headline line, then the verdict, the certificate (none for an uncertified method), the
    ledger of a sequence, measured epsilons, utility and timings; then every finding."""
    headline_line(err, report)
    real, util = report.realized, report.utility
    table = Table(
        title=f"{report.method.title} audit: verdict {report.verdict.upper()}", show_header=True, header_style="bold"
    )
    table.add_column("quantity")
    table.add_column("value", justify="right")
    rows = _certificate_rows(report.certificate)
    if report.ledger is not None:
        rows += _ledger_rows(report.ledger)
    rows += [
        ("||theta_U - theta_R|| (before noise)", _fmt(real.distance_unlearned_retrained)),
        ("realized epsilon", _fmt(real.epsilon)),
    ]
    if real.no_op_epsilon is not None:
        rows.append(("no-op epsilon (the original model at this sigma)", _fmt(real.no_op_epsilon)))
    for name in ("original", "unlearned", "retrained"):
        t = getattr(util, name).test
        noisy = t.noisy_accuracy_mean
        rows.append(
            (
                f"test accuracy {name} (noiseless / released)",
                f"{t.accuracy:.4f} / " + (f"{noisy:.4f}" if noisy is not None else "n/a"),
            )
        )
    if report.attacks:
        rows += _attack_rows(report.attacks)
    rows += _one_run_rows(report.one_run or {}, report.one_run_whitebox or {})
    check = report.reproducibility
    if check is not None:
        rows.append(
            (
                f"train twice with one seed ({check.records} records)",
                "identical" if check.equal else f"DIFFERENT (by up to {check.max_abs_difference:.3g})",
            )
        )
    rows += _timing_rows(report)
    for r in rows:
        table.add_row(*r)
    err.print(table)
    for f in report.findings:
        colour = "red" if f.severity == "error" else "yellow"
        err.print(f"[{colour}]{f.severity}[/]: {escape(f.message)}", highlight=False, soft_wrap=True)


# the summary table's rows, a helper per block of the report, in the table's order


def _certificate_rows(cert: Any) -> list[tuple[str, str]]:
    """The certificate: none for a method without a theorem, not issued, or its epsilon."""
    if cert.kind == "none":
        return [
            ("certificate", "none: the method has no theorem (nothing is certified)"),
            ("output noise sigma (uncalibrated)", _fmt(cert.sigma)),
        ]
    if not cert.valid:
        return [
            ("certificate", f"{cert.kind}: NOT ISSUED (a condition failed; see the findings)"),
            ("sensitivity bound Delta", _fmt(cert.sensitivity)),
        ]
    return [
        ("certified epsilon (delta)", f"{_fmt(cert.epsilon)} ({_fmt(cert.delta)})"),
        ("certificate", f"{cert.kind}, valid" + (" (conditional)" if cert.conditional else "")),
        ("sensitivity bound Delta", _fmt(cert.sensitivity)),
        ("noise sigma", _fmt(cert.sigma)),
    ]


def _ledger_rows(ledger: Any) -> list[tuple[str, str]]:
    """A sequence's ledger: the cumulative epsilon, the budget and whether a retrain is due."""
    rows = [
        (
            f"cumulative epsilon over {len(ledger.releases)} releases (delta)",
            f"{_fmt(ledger.cumulative_epsilon)} ({_fmt(ledger.delta)})",
        )
    ]
    budget = "none set" if ledger.budget_epsilon is None else _fmt(ledger.budget_epsilon)
    rows.append(("budget epsilon", budget))
    due = ("YES, since release " + str(ledger.first_release_over_budget)) if ledger.retrain_due else "no"
    rows.append(("retrain due", due))
    return rows


def _attack_rows(attacks: Any) -> list[tuple[str, str]]:
    """Each attack's bound (and GDP bound), the trial sizing, the ordering and the production model."""
    rows = []
    cmp = attacks.comparison
    for name, result in attacks.attacks.items():
        b = result.bound
        rows.append(
            (
                f"empirical epsilon >= ({name}, {attacks.trials.n_per_world} trials/world)",
                _bound(
                    b.epsilon_lower,
                    b.ceiling,
                    b.can_test,
                    b.size_to_test,
                    cmp.certified_epsilon,
                    "trials/world",
                    valid_gdp_bound(b),
                    b.test_bound,
                ),
            )
        )
        if b.gdp_bound is not None:
            rows.append((f"GDP bound epsilon >= ({name}, valid in noise mode)", _fmt(b.gdp_bound.epsilon_lower)))
    sizing = attacks.trials.sizing
    if sizing is not None:
        rows.append(("trial count", sizing.why))
    if cmp.ordering_holds is not None:
        rows.append(("certified >= realized >= empirical", "holds" if cmp.ordering_holds else "NO"))
    placed = attacks.production
    if placed is not None:
        rows.append(
            (
                "production model: loss on D (trials' range, z of log loss)",
                f"{placed.loss:.4g} ([{placed.trials_min:.4g}, {placed.trials_max:.4g}], z = {placed.z:+.2f})",
            )
        )
    return rows


def _one_run_rows(one_run: dict[str, Any], whitebox: dict[str, Any]) -> list[tuple[str, str]]:
    """The one-run audit's bound and the white-box one's (or why it was skipped)."""
    rows = []
    if "ceiling" in one_run:
        rows.append((f"one-run epsilon >= ({one_run['m']} canary pairs)", _one_run_bound(one_run)))
    if "epsilon_lower" in whitebox:
        rows.append(
            (
                f"white-box one-run epsilon >= ({whitebox['m']} canary pairs)",
                f"{_fmt(whitebox['epsilon_lower'])} (guesses' ceiling {_fmt(whitebox['ceiling']['per_canary_epsilon'])};"
                f" largest alignment {_fmt(whitebox['analysis']['max_abs_z'])} sigma)",
            )
        )
    elif "skipped" in whitebox:
        rows.append(("white-box one-run audit", "skipped: " + whitebox["skipped"]))
    return rows


def _timing_rows(report: Any) -> list[tuple[str, str]]:
    """The learn, unlearn and retrain seconds, and the trials' estimated cost next to what they took."""
    tm = report.timings
    rows = [
        (
            "learn / unlearn / retrain seconds",
            f"{tm.learn_s:.3f} / {tm.unlearn_s:.3f} / {tm.retrain_s:.3f}"
            + (f" (medians of {len(tm.unlearn_repeats_s)} runs)" if tm.unlearn_repeats_s else ""),
        )
    ]
    cost = report.attacks.execution.cost if report.attacks and report.attacks.execution else None
    if cost is not None:  # the estimate made before the trials, next to what they took
        rows.append(
            (
                "trials' cost, estimated / measured seconds",
                f"{cost.trainings:,} trainings x {cost.seconds_per_training:.3g} + {cost.unlearnings:,} "
                f"unlearnings x {cost.seconds_per_unlearning:.3g} over {cost.workers} worker(s) = "
                f"{_fmt(cost.estimated_s)} / {_fmt(tm.attacks_s)}",
            )
        )
    return rows


def nothing_saved(err: Console) -> None:
    err.print(
        "nothing was saved (no --out): rerun with --out DIR to keep report.json, report.html and the "
        "commitment salt, or --json to print the report",
        highlight=False,
        soft_wrap=True,
    )


class NotesHandler(logging.Handler):
    """The library's notes (logger ``unlearn_audit``: shards resumed, a worker retried) as lines on stderr."""

    def __init__(self, err: Console) -> None:
        super().__init__(logging.INFO)
        self.err = err

    def emit(self, record: logging.LogRecord) -> None:
        kind = "note" if record.levelno <= logging.INFO else record.levelname.lower()
        self.err.print(f"{kind}: {escape(record.getMessage())}", highlight=False, soft_wrap=True)


@contextmanager
def library_notes(err: Console, *, quiet: bool):
    """Show the library's notes on ``err`` while the block runs (nothing when ``quiet``)."""
    logger = logging.getLogger("unlearn_audit")
    if quiet:
        yield
        return
    handler, level = NotesHandler(err), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
