"""The ``audit`` command line: a thin shell over the library.

stdout carries data (``--json``), stderr carries people's output (progress, tables, errors).
Exit codes: :class:`audit.cli.exits.ExitCode` (0 consistent, 1 violated, 2 bad input,
3 verification failed, 4 not certified, 5 unusable, 70 internal error, 130/143 interrupted).

This module stays light: :func:`main` installs the signal handlers before Typer, Rich or the
numerical stack are imported, so Ctrl-C during start-up ends with one line, not a traceback; and
a Ctrl-C that something swallowed is raised again at the command's next check
(:func:`audit.cli.exits.check_signals`), so it is never lost.
"""

from __future__ import annotations

import atexit
import os
import signal
import sys
import threading
from typing import Any, NoReturn

from audit.cli.exits import ExitCode, Terminated, install_signal_handlers, received

__all__ = ["ExitCode", "app", "main"]


def __getattr__(name: str) -> Any:
    if name == "app":
        import audit.cli.commands  # noqa: F401  (registers the commands)
        import audit.cli.compare  # noqa: F401
        import audit.cli.run  # noqa: F401
        from audit.cli.application import app

        return app
    raise AttributeError(f"module 'audit.cli' has no attribute {name!r}")


def _die_by(signum: int) -> None:
    """End as killed by ``signum`` once everything is cleaned up: the Unix convention, so a shell
    reports 128 + signum (130, 143) and a parent process sees the signal (as Python itself does
    for an unhandled Ctrl-C)."""
    sys.stderr.flush()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)
    sys.exit(128 + signum)  # pragma: no cover - only if the signal could not end the process


def _exit_now(code: int) -> NoReturn:
    """End with ``code`` once everything is out, without the interpreter's teardown.

    A finished command has closed its files; what Python does after it is tear down every module
    and free every object one by one, 0.55-0.73 s of CPU once torch is loaded (issue 26). So the
    exit handlers run (temporary directories, coverage, plug-ins' own ``atexit``), both streams
    are flushed, and the process ends with :func:`os._exit`. Only with the main thread alone: a
    live thread (an executor's, a plug-in's) is joined by the ordinary exit.
    """
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _fast_exit_allowed(code: object) -> bool:
    """An integer exit code (or None: 0), the main thread alone, and not debugging."""
    return (
        (code is None or (isinstance(code, int) and not isinstance(code, bool)))
        and threading.active_count() == 1
        and not os.environ.get("AUDIT_DEBUG")
    )


def main() -> None:
    """Console-script entry point: no traceback reaches the user unless AUDIT_DEBUG is set."""
    try:
        install_signal_handlers()
        # waiting OpenMP threads sleep rather than spin (audit.threads): read once, when torch loads
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        from audit.cli import app

        app()
    except SystemExit as exc:
        if exc.code == ExitCode.INTERRUPTED:
            _die_by(signal.SIGINT)
        if exc.code == ExitCode.TERMINATED:
            _die_by(signal.SIGTERM)
        if received:  # swallowed after the command's last check_signals: its work was done and written
            word = "interrupted" if received[0] == signal.SIGINT else "terminated"
            print(f"{word} after the work was done", file=sys.stderr)
            _die_by(received[0])
        elif _fast_exit_allowed(exc.code):
            try:
                _exit_now(int(exc.code or 0))
            except (OSError, ValueError):  # a stream that cannot be flushed (a closed pipe): Python reports it
                pass
        raise
    except KeyboardInterrupt:
        print("interrupted; nothing was written", file=sys.stderr)
        _die_by(signal.SIGINT)
    except Terminated:
        print("terminated; nothing was written", file=sys.stderr)
        _die_by(signal.SIGTERM)
    except Exception as exc:  # pragma: no cover - the last line of defence
        if os.environ.get("AUDIT_DEBUG"):
            raise
        print(f"internal error: {type(exc).__name__}: {exc} (set AUDIT_DEBUG=1 for the traceback)", file=sys.stderr)
        sys.exit(int(ExitCode.INTERNAL))
