"""Exit codes a CI gate can branch on, and the signals that end a run.

The verdict of an audit maps to its own code, so a pipeline can tell "the method has no
certificate" from "a measurement refuted the certificate" without parsing the report.
"""

from __future__ import annotations

import signal
import sys
from collections.abc import Callable
from enum import IntEnum
from typing import Any


class ExitCode(IntEnum):
    """``audit`` exit codes (docs/cli.md's table is checked against this enum)."""

    CONSISTENT = 0  #: certified, and nothing measured contradicts the certificate
    VIOLATED = 1  #: a bound, the realized epsilon or an attack refuted the certificate
    USAGE = 2  #: bad input: one sentence naming the field, nothing written
    VERIFY_FAILED = 3  #: a signature or a commitment did not verify
    NOT_CERTIFIED = 4  #: no certificate: the method has no theorem, or a condition failed
    UNUSABLE = 5  #: the unlearned model failed (departs from retraining, or at chance)
    WORKER_FAILED = 6  #: a worker failed on one shard on every attempt (the shard is named)
    VACUOUS = 7  #: with --strict: consistent, but a finding says the pass proves little
    INTERNAL = 70  #: a bug: one line (AUDIT_DEBUG=1 shows the traceback)
    INTERRUPTED = 130  #: SIGINT (Ctrl-C): 128 + 2, nothing half-written
    TERMINATED = 143  #: SIGTERM: 128 + 15, nothing half-written


VERDICT_EXIT = {
    "consistent": ExitCode.CONSISTENT,
    "violated": ExitCode.VIOLATED,
    "not-certified": ExitCode.NOT_CERTIFIED,
    "unusable": ExitCode.UNUSABLE,
}

EXIT_MEANING = {
    ExitCode.CONSISTENT: "consistent: certified, and nothing measured contradicts the certificate",
    ExitCode.VIOLATED: "violated: a bound, the realized epsilon or an attack refuted the certificate",
    ExitCode.USAGE: "bad input (one sentence on stderr naming the field and its allowed values; nothing written)",
    ExitCode.VERIFY_FAILED: "a signature or a deletion commitment did not verify (one sentence)",
    ExitCode.NOT_CERTIFIED: "not certified: the method has no theorem, or a condition of its theorem failed",
    ExitCode.UNUSABLE: "unusable: the unlearned model departs from retraining, or is at chance",
    ExitCode.WORKER_FAILED: "a worker failed on the same shard twice (one sentence naming the shard; with --resume "
    "the finished shards are kept and a rerun skips them)",
    ExitCode.VACUOUS: "with --strict only: consistent, but a finding makes the pass vacuous (no-power, "
    "released-at-chance, attacks-skipped, ...: the measurements could not have refuted the "
    "certificate, or the release is of no use); without --strict such a run exits 0",
    ExitCode.INTERNAL: "internal error (one line; AUDIT_DEBUG=1 shows the traceback)",
    ExitCode.INTERRUPTED: "SIGINT (Ctrl-C): one line, clean-up, then the process ends by the signal (a shell shows "
    "130); nothing half-written",
    ExitCode.TERMINATED: "SIGTERM: the same (a shell shows 143)",
}


def exit_code(verdict: str, findings: Any = (), *, strict: bool = False) -> ExitCode:
    """The verdict's exit code; with ``strict``, :attr:`ExitCode.VACUOUS` for a ``consistent``
    verdict carrying a finding whose code is declared ``vacuous`` (:data:`audit.findings.CODES`)."""
    from audit.findings import headline

    if strict and headline(verdict, findings).vacuous:
        return ExitCode.VACUOUS
    return VERDICT_EXIT.get(verdict, ExitCode.VIOLATED)


class Terminated(BaseException):
    """Raised by the SIGTERM handler so that every ``finally`` and context manager cleans up
    (a default SIGTERM kills the process with its temporary files in place)."""


#: The ending signals received, first one first. A handler's exception can be swallowed before it
#: reaches the command (a library's ``except BaseException`` during an import, a finalizer that
#: Python runs and whose exception it ignores): :func:`check_signals` raises it again, so a
#: Ctrl-C is never lost whenever it arrives.
received: list[int] = []


def _raise_for(signum: int) -> None:
    raise KeyboardInterrupt() if signum == signal.SIGINT else Terminated()


def _on_signal(signum: int, frame: Any) -> None:
    received.append(signum)
    _raise_for(signum)


def check_signals() -> None:
    """Raise again the first ending signal received (nothing if none was): called where the
    command is about to go on working or to write its output."""
    if received:
        _raise_for(received[0])


def _quiet_about_signals(hook: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``sys.unraisablehook``: a signal's exception that Python ignored (raised inside a finalizer)
    prints no traceback; it is raised again at the next :func:`check_signals`."""

    def unraisable(args: Any) -> None:
        if args.exc_type is not None and issubclass(args.exc_type, (KeyboardInterrupt, Terminated)):
            return
        hook(args)

    return unraisable


def install_signal_handlers() -> None:
    """SIGINT and SIGTERM raise ``KeyboardInterrupt`` / :class:`Terminated` (every ``finally`` and
    context manager cleans up) and are remembered for :func:`check_signals`."""
    signal.signal(signal.SIGINT, _on_signal)
    signal.signal(signal.SIGTERM, _on_signal)
    sys.unraisablehook = _quiet_about_signals(sys.unraisablehook)
