"""``audit run``: its flags are derived from :data:`audit.config.FIELDS` (one per field, with the
field's default, choices and help panel), plus the output flags declared here.

Precedence is one rule: a flag typed on the command line wins over the ``--config`` file, which
wins over the field's default. Click's parameter source tells a typed flag from a default, so
``--help`` can show the real defaults without a default ever overriding the file.
"""

from __future__ import annotations

import inspect
import tomllib
from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path
from typing import Annotated, Any, Literal, Optional

import typer
from rich.markup import escape

from audit.cli.application import command, fail
from audit.cli.exits import ExitCode, check_signals, exit_code
from audit.report import SALT_FILE
from certify.errors import InvalidInput

#: --help panels: each configuration section belongs to one.
PANELS = {
    "method": "Method and certificate",
    "certificate": "Method and certificate",
    "data": "Data",
    "forget": "Forget set",
    "training": "Training",
    "trials": "Trials and attacks",
    "attacks": "Trials and attacks",
    "run": "Run",
}
OUTPUT_PANEL = "Output"


def _python_type(constraint: Any) -> Any:
    from certify.errors import Choice, Integer, Optional, Real

    while isinstance(constraint, Optional):
        constraint = constraint.inner
    if isinstance(constraint, Choice):
        return Literal[tuple(constraint.options)]  # shown as <a|b|c> and checked by Click
    return int if isinstance(constraint, Integer) else float if isinstance(constraint, Real) else str


def _shown_default(f: Any) -> str | None:
    from certify.errors import Optional

    if f.default in ((), {}, None):
        none = f.constraint.none if isinstance(f.constraint, Optional) else ""
        return none.removeprefix("for ").strip() or None
    # ", " so that a narrow terminal wraps the list between names (rich cuts a longer word with "…")
    return ", ".join(map(str, f.default)) if isinstance(f.default, tuple) else str(f.default)


def _option(name: str, annotation: Any, default: Any, *flags: str, **kwargs: Any) -> inspect.Parameter:
    return inspect.Parameter(
        name,
        inspect.Parameter.KEYWORD_ONLY,
        default=default,
        annotation=Annotated[annotation, typer.Option(*flags, **kwargs)],
    )


def _field_parameters() -> list[inspect.Parameter]:
    """One option per configuration field (a mapping of fixed keys: one per key)."""
    from audit.config import FIELDS

    params = []
    for f in FIELDS:
        panel = PANELS[f.section]
        shown = _shown_default(f)
        text = escape(f.help + (f" [default: {shown}]" if shown is not None else ""))
        if f.spelling == "keys":
            for key in f.constraint.keys:  # type: ignore[attr-defined]  # spelling "keys": a MappingOf
                params.append(
                    _option(
                        f"{f.name}__{key}",
                        Optional[float],
                        None,
                        f"--{key}",
                        rich_help_panel=panel,
                        help=escape(f"{f.help} ({key}; a finite number > 0) [default: computed]"),
                    )
                )
        elif f.spelling == "pairs":
            params.append(
                _option(f.name, Optional[list[str]], None, *(f.flags or (f.flag,)), help=text, rich_help_panel=panel)
            )
        elif none_spelled(f):
            metavar = f"{_python_type(f.constraint).__name__.upper()}|none"
            params.append(
                _option(
                    f.name,
                    Optional[str],
                    None,
                    f.flag,
                    help=text,
                    rich_help_panel=panel,
                    show_default=False,
                    metavar=metavar,
                )
            )
        else:
            kind = str if f.spelling == "csv" else _python_type(f.constraint)
            params.append(
                _option(f.name, Optional[kind], None, f.flag, help=text, rich_help_panel=panel, show_default=False)
            )
    return params


def none_spelled(f: Any) -> bool:
    """Whether the field's flag (and config key) takes the word ``none``: an optional number whose
    default is not None, so None has to be typed to be chosen (e.g. ``--utility-records none``)."""
    from certify.errors import Optional as OptionalConstraint

    return (
        isinstance(f.constraint, OptionalConstraint)
        and f.default is not None
        and f.spelling not in ("csv", "keys", "pairs")
        and _python_type(f.constraint) in (int, float)
    )


def _none_or_number(f: Any, value: Any) -> Any:
    """``none`` → None; a number's text → the number (its range is checked with the configuration)."""
    if not isinstance(value, str):
        return value  # a TOML number
    text = value.strip()
    if text.lower() == "none":
        return None
    try:
        return _python_type(f.constraint)(text)
    except ValueError:
        raise InvalidInput(f.flag, f.constraint.words, value) from None


_OUTPUT_OPTIONS = [
    _option(
        "config",
        Optional[Path],
        None,
        "--config",
        rich_help_panel="Input",
        help=escape(
            "TOML file with any of the fields above (top level or under [audit]); flags typed on the command line win."
        ),
    ),
    _option(
        "out",
        Optional[Path],
        None,
        "--out",
        rich_help_panel=OUTPUT_PANEL,
        help=escape(
            "Directory for report.json, report.html, the salt and the signature, written as one set (a "
            "new path, an empty directory or an earlier report's directory, which is replaced). [default: "
            "none: nothing is saved]"
        ),
    ),
    _option(
        "report_mode",
        Literal["644", "640", "600"],
        "644",
        "--report-mode",
        rich_help_panel=OUTPUT_PANEL,
        help=escape(
            "Mode of the report files: 644 (anyone may read), 640 (group), 600 (owner); the salt is "
            "0600 always. [default: 644]"
        ),
        show_default=False,
    ),
    _option(
        "sign_key",
        Optional[Path],
        None,
        "--sign-key",
        rich_help_panel=OUTPUT_PANEL,
        help=escape("Ed25519 private key (PEM, mode 0600): sign the report (needs --out). [default: none]"),
    ),
    _option(
        "commitment_salt",
        Optional[Path],
        None,
        "--commitment-salt",
        rich_help_panel=OUTPUT_PANEL,
        help=escape(
            f"File with the secret salt (hex) of the deletion commitment. [default: a new random salt "
            f"saved as OUT/{SALT_FILE}, mode 0600]"
        ),
    ),
    _option("as_json", bool, False, "--json", rich_help_panel=OUTPUT_PANEL, help="Print the report as JSON on stdout."),
    _option(
        "quiet",
        bool,
        False,
        "--quiet",
        "-q",
        rich_help_panel=OUTPUT_PANEL,
        help="No progress, no summary (errors only).",
    ),
]

#: `audit run` only: what a pass must show to exit 0 (the report is the same either way, so this is
#: no configuration field: it is not recorded, and a comparison has no single verdict to refuse).
_EXIT_OPTIONS = [
    _option(
        "strict",
        bool,
        False,
        "--strict",
        rich_help_panel=OUTPUT_PANEL,
        help=escape(
            "Exit 7 instead of 0 when the verdict is consistent but a finding makes the pass vacuous "
            "(no-power, released-at-chance, attacks-skipped, ...): a gate on exit 0 then refuses a pass "
            "that could not have failed."
        ),
    ),
]

#: internal parameter names, as the user typed them (the signing code names its key parameter)
RENAMES = {"private_key_path": "--sign-key"}


def run(**params: Any) -> None:
    """Run one audit: learn, certify, unlearn, retrain, compare, report."""
    from audit.cli.show import Stages, console, library_notes, nothing_saved, refused_as_vacuous, summary
    from audit.config import AuditConfig
    from audit.executors import ShardFailed
    from audit.pipeline import STAGES
    from audit.pipeline import run as run_audit
    from audit.report.directory import FILE_MODES, ReportDirectory, fill

    check_signals()  # a Ctrl-C during the imports above that a library swallowed
    ctx = click_context()
    given = {name for name in params if _typed(ctx, name)}
    out, sign_key, commitment_salt = params.pop("out"), params.pop("sign_key"), params.pop("commitment_salt")
    config_path, as_json, quiet = params.pop("config"), params.pop("as_json"), params.pop("quiet")
    file_mode, strict = FILE_MODES[params.pop("report_mode")], params.pop("strict")
    file = read_config(config_path) if config_path is not None else {}
    try:
        cfg = AuditConfig.from_dict(settings({k: v for k, v in params.items() if k in given}, file))
    except InvalidInput as exc:
        raise _named(exc, given, config_path) from None
    salt = check_outputs(out, sign_key, commitment_salt, resume=cfg.resume)

    err = console()
    target = ReportDirectory(out, file_mode=file_mode, field="--out") if out is not None else None
    # Entered before the work: --out is validated and locked now, so a second run into it is
    # refused at start-up; leaving the block for any reason removes what was staged.
    with target if target is not None else nullcontext():
        with Stages(err, STAGES, quiet=quiet) as stages, library_notes(err, quiet=quiet):
            try:
                report = run_audit(cfg, progress=checked(stages.progress), salt=salt)
            except InvalidInput as exc:  # found by the data or the method: name the flag all the same
                raise _named(exc, given, config_path) from None
            except ShardFailed as exc:  # a worker died twice on one shard: say which, keep what finished
                kept = f"; the finished shards are kept in {cfg.resume}" if cfg.resume else ""
                fail(f"{exc}{kept}", ExitCode.WORKER_FAILED)
        written = []
        check_signals()  # nothing is written after a Ctrl-C, wherever it was swallowed
        if target is not None:
            # A salt given from the directory being replaced is carried into the new set, not lost with it.
            keep = commitment_salt is not None and commitment_salt.absolute() == target.target / SALT_FILE
            fill(target, report, sign_key=sign_key, save_salt=commitment_salt is None or keep)
            written = target.commit()
    if as_json:
        typer.echo(report.to_json(), nl=False)
    if not quiet:
        summary(err, report)
        if target is None:
            nothing_saved(err)
        else:
            err.print(
                ("replaced the earlier report: " if target.replaced else "written: ")
                + ", ".join(str(p) for p in written),
                highlight=False,
                soft_wrap=True,
            )
    code = exit_code(report.verdict, report.findings, strict=strict)
    if code == ExitCode.VACUOUS:  # said even with -q: it is why the run failed
        refused_as_vacuous(err, report)
    raise typer.Exit(int(code))


def checked(progress: Callable[[str, int, int], None]) -> Callable[[str, int, int], None]:
    """The progress callback, raising again at each step a Ctrl-C or SIGTERM that was swallowed."""

    def progress_checked(stage: str, done: int, total: int) -> None:
        check_signals()
        progress(stage, done, total)

    return progress_checked


def check_outputs(
    out: Path | None, sign_key: Path | None, commitment_salt: Path | None, resume: str | None = None
) -> bytes | None:
    """Refuse unusable output options before any work or any file is written; the salt, if given.

    ``--resume`` must be writable with room to spare (as ``--out`` is, when it is locked), and
    apart from ``--out``: the report's directory is replaced whole when it is written, so a run
    directory at or inside it would lose its shards, and one around it would hold the report."""
    if resume is not None:
        from audit.report.directory import check_room

        check_room(resume, "--resume")
        if out is not None:
            a, b = Path(resume).resolve(), out.resolve()
            if a == b or a.is_relative_to(b) or b.is_relative_to(a):
                raise InvalidInput(
                    "--resume",
                    "a directory apart from --out (neither one inside the other): the "
                    "report's directory is replaced whole when it is written",
                    str(resume),
                )
    if sign_key is not None:
        if out is None:
            raise InvalidInput(
                "--sign-key", "used together with --out (the signature covers the written files)", str(sign_key)
            )
        from audit.report.signing import load_private_key

        load_private_key(sign_key)
    return read_salt(commitment_salt) if commitment_salt is not None else None


def click_context() -> Any:
    try:
        from typer._click.globals import get_current_context
    except ImportError:  # pragma: no cover - Typer releases that depend on Click itself
        from click import get_current_context  # type: ignore[no-redef]
    return get_current_context(silent=True)


def _typed(ctx: Any, name: str) -> bool:
    """Whether the user typed this flag (a default never overrides the config file)."""
    if ctx is None:
        return True
    source = ctx.get_parameter_source(name)
    return source is not None and source.name not in ("DEFAULT", "DEFAULT_MAP")


def _named(exc: InvalidInput, typed: set[str], config_path: Path | None) -> InvalidInput:
    """Name the field as the user wrote it: the flag, or the key in the config file."""
    from audit.config import CHOSEN_ONE, FIELD

    head, dot, rest = exc.field.partition(".")
    if head in CHOSEN_ONE and isinstance(exc.got, list) and all(n in CHOSEN_ONE[head] for n in exc.got):
        # a rule tying fields (not a bad list given to a field of the same name): name their flags
        quantity = exc.allowed.partition(" of ")[0]
        allowed = f"{quantity} of " + ", ".join(FIELD[n].flag for n in CHOSEN_ONE[head])
        return InvalidInput(
            "the " + head.replace("_", " ") + " flags", allowed, [FIELD[n].flag for n in exc.got], exc.hint
        )
    if head not in FIELD:
        return exc
    f = FIELD[head]
    if config_path is not None and not any(n == head or n.startswith(head + "__") for n in typed):
        where = f"{exc.field} (in {config_path})"
    elif f.spelling == "keys" and rest:
        where = f"--{rest}"
    elif f.spelling == "pairs" and rest:
        where = f"{f.flag} {rest}"
    else:
        where = f.flag + (dot + rest if rest else "")
    allowed = exc.allowed if "(in " in where else exc.allowed.split(", or None")[0]  # no None on a command line
    return InvalidInput(where, allowed, exc.got, exc.hint)


def settings(params: dict[str, Any], file: dict[str, Any]) -> dict[str, Any]:
    """The configuration fields: the TOML file's, then every flag typed on the command line."""
    from audit.config import FIELD

    merged = dict(file)
    for name, value in params.items():
        if value is None or value == []:
            continue
        field_name, _, key = name.partition("__")
        f = FIELD[field_name]
        if f.spelling == "keys":
            base = merged.get(f.name) or {}
            merged[f.name] = {**(dict(base) if isinstance(base, dict) else {}), key: value}
        elif f.spelling == "pairs":
            base = merged.get(f.name) or {}
            merged[f.name] = {**(dict(base) if isinstance(base, dict) else {}), **parse_pairs(value, f.flag)}
        elif f.spelling == "csv" and f.name != "attacks":
            merged[f.name] = parse_numbers(f.flag, value, f.constraint)
        else:
            merged[f.name] = value
    for name in merged:
        if name in FIELD and none_spelled(FIELD[name]):
            merged[name] = _none_or_number(FIELD[name], merged[name])
    return merged


def parse_pairs(pairs: list[str], flag: str) -> dict[str, Any]:
    """NAME=VALUE pairs; values are read as JSON when they parse (numbers, true/false), else text."""
    import json

    options: dict[str, Any] = {}
    for pair in pairs:
        name, sep, text = pair.partition("=")
        if not sep or not name.strip():
            raise InvalidInput(flag, "NAME=VALUE", pair)
        if name.strip() in options:
            raise InvalidInput(flag, f"each name given once ({name.strip()} is given twice)", pair)
        try:
            options[name.strip()] = json.loads(text)
        except (json.JSONDecodeError, RecursionError):
            options[name.strip()] = text
    return options


def parse_numbers(flag: str, text: str, constraint: Any) -> tuple[float | int, ...]:
    """A comma-separated list of the numbers the field's ``ListOf`` holds (``none``: empty)."""
    from certify.errors import Integer

    if text.strip() == "none":
        return ()
    integers = isinstance(constraint.item, Integer)
    try:
        return tuple((int if integers else float)(w) for w in text.split(",") if w.strip())
    except ValueError:
        example = (
            "comma-separated positive integers such as 64,64"
            if integers
            else "comma-separated numbers such as 0.1,1,10 (or none)"
        )
        raise InvalidInput(flag, example, text) from None


def read_config(path: Path) -> dict[str, Any]:
    """The TOML file's fields (top level, or the ``[audit]`` table)."""
    try:
        with open(path, "rb") as fh:
            data = tomllib.load(fh)
    except FileNotFoundError:
        raise InvalidInput("--config", "an existing TOML file", str(path)) from None
    except IsADirectoryError:
        raise InvalidInput("--config", "a TOML file (this path is a directory)", str(path)) from None
    except PermissionError:
        raise InvalidInput("--config", "a TOML file this user can read", str(path)) from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InvalidInput("--config", "valid TOML", f"{path}: {exc}") from None
    if "audit" in data:
        if not isinstance(data["audit"], dict):
            raise InvalidInput(
                "--config",
                "a file whose [audit] is a table of configuration fields",
                f"{path}: audit = {data['audit']!r}",
            )
        data = data["audit"]
    return dict(data)


def read_salt(path: Path, field: str = "--commitment-salt") -> bytes:
    try:
        text = path.read_text().strip()
        salt = bytes.fromhex(text)
    except (FileNotFoundError, IsADirectoryError, PermissionError, NotADirectoryError):
        raise InvalidInput(field, "a readable file holding the salt in hex", str(path)) from None
    except (ValueError, UnicodeDecodeError):
        raise InvalidInput(field, "a file holding the salt as hexadecimal text", str(path)) from None
    if len(salt) < 16:
        raise InvalidInput(field, "at least 16 bytes (32 hex digits)", f"{len(salt)} bytes")
    return salt


run.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
    [*_field_parameters(), *_OUTPUT_OPTIONS, *_EXIT_OPTIONS]
)
run = command("run", renames=RENAMES)(run)
