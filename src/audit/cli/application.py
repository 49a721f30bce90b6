"""The ``audit`` Typer application: one error line for every usage error, ``--version``,
flags without a ``<bool>`` type, and commands that turn bad input into exit code 2.

Typer (with its vendored Click) prints usage errors in a boxed panel and Ctrl-C as a bare exit;
a CI log needs one line it can grep, so :class:`AuditGroup` runs Click in non-standalone mode and
prints every failure as ``error: <sentence>`` itself.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Annotated, Any

import typer
from typer.core import TyperCommand, TyperGroup

from audit.cli.exits import ExitCode, Terminated
from certify.errors import InvalidInput

try:  # Typer >= 0.2x vendors Click
    from typer._click.exceptions import ClickException, NoArgsIsHelpError
    from typer.exceptions import Abort
except ImportError:  # pragma: no cover - Typer releases that depend on Click itself
    from click.exceptions import Abort, ClickException, NoArgsIsHelpError  # type: ignore[assignment]


def fail(message: str, code: ExitCode = ExitCode.USAGE) -> None:
    """One sentence on stderr, plain and unwrapped, then exit with ``code``."""
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(int(code))


class _Flagless:
    """A flag takes no value: show none in --help (Typer would print ``<bool>``)."""

    def get_params(self, ctx: Any) -> list[Any]:
        params = super().get_params(ctx)  # type: ignore[misc]
        for p in params:
            if getattr(p, "is_flag", False):
                p.metavar = ""
        return params


class AuditCommand(_Flagless, TyperCommand):
    pass


class AuditGroup(_Flagless, TyperGroup):
    def main(  # type: ignore[override]
        self,
        args: Any = None,
        prog_name: Any = None,
        complete_var: Any = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        try:
            code = super().main(
                args=args, prog_name=prog_name or "audit", complete_var=complete_var, standalone_mode=False, **extra
            )
        except NoArgsIsHelpError as exc:  # `audit` alone: the help, as Click would show it
            typer.echo(exc.ctx.get_help() if exc.ctx is not None else str(exc), err=True)
            code = int(ExitCode.USAGE)
        except ClickException as exc:  # unknown option, missing value, a choice not offered ...
            message = exc.format_message().replace("Value error, ", "")  # Typer's wording of a bad choice
            typer.echo(f"error: {message} (see `audit --help`)", err=True)
            code = int(ExitCode.USAGE)
        except Abort:
            typer.echo("interrupted; nothing was written", err=True)
            code = int(ExitCode.INTERRUPTED)
        except Terminated:
            typer.echo("terminated; nothing was written", err=True)
            code = int(ExitCode.TERMINATED)
        code = 0 if code is None else int(code)
        if standalone_mode:
            sys.exit(code)
        return code


def guarded(renames: dict[str, str] | None = None) -> Callable:
    """A command body's failures as one sentence: InvalidInput exits 2 (its field renamed to the
    flag the user typed), Ctrl-C 130 and SIGTERM 143 after the body's own clean-up has run."""
    renames = renames or {}

    def wrap(fn: Callable) -> Callable:
        @functools.wraps(fn)
        def inner(*args: Any, **kwargs: Any) -> Any:
            try:
                return fn(*args, **kwargs)
            except InvalidInput as exc:
                fail(str(as_flag(exc, renames)))
            except KeyboardInterrupt:
                typer.echo("interrupted; nothing was written", err=True)
                raise typer.Exit(int(ExitCode.INTERRUPTED)) from None
            except Terminated:
                typer.echo("terminated; nothing was written", err=True)
                raise typer.Exit(int(ExitCode.TERMINATED)) from None

        return inner

    return wrap


def as_flag(exc: InvalidInput, renames: dict[str, str]) -> InvalidInput:
    """The same error, naming the flag the user typed instead of an internal parameter."""
    head, dot, rest = exc.field.partition(".")
    if head in renames:
        return InvalidInput(renames[head] + dot + rest, exc.allowed, exc.got, exc.hint)
    return exc


def _version(value: bool) -> None:
    if value:
        from audit.report import TOOL, tool_version

        typer.echo(f"{TOOL} {tool_version()}")
        raise typer.Exit(0)


app = typer.Typer(
    name="audit",
    cls=AuditGroup,
    help="Audit certified machine unlearning: certified epsilon next to measured leakage.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=True,  # --install-completion and --show-completion (bash, zsh, fish, PowerShell)
    context_settings={"max_content_width": 120},
)


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """Audit certified machine unlearning: certified epsilon next to measured leakage."""


def command(*names: str, renames: dict[str, str] | None = None, parent: typer.Typer = app) -> Callable:
    """Register a command body on ``parent`` behind :func:`guarded`."""

    def register(fn: Callable) -> Callable:
        return parent.command(*names, cls=AuditCommand)(guarded(renames)(fn))

    return register
