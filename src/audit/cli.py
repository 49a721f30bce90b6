"""The ``audit`` command line: a thin shell over the library.

stdout carries data (``--json``), stderr carries people's output (progress, tables, errors).
Exit codes: 0 consistent, 1 certificate violated or not issued, 2 bad input, 70 internal error.
"""

from __future__ import annotations

import inspect
import json
import os
import sys
import tomllib
from enum import IntEnum
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from certify.errors import InvalidInput

err = Console(stderr=True)
app = typer.Typer(
    name="audit",
    help="Audit certified machine unlearning: certified epsilon next to measured leakage.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


class ExitCode(IntEnum):
    OK = 0
    VIOLATED = 1
    USAGE = 2
    VERIFY_FAILED = 3
    INTERNAL = 70


SALT_FILE = "deletion-commitment.salt"


def _fail(message: str, code: ExitCode = ExitCode.USAGE) -> None:
    typer.echo(f"error: {message}", err=True)  # plain and unwrapped: one sentence, one line
    raise typer.Exit(int(code))


# ----------------------------------------------------------------------------------------
# `audit run`: its configuration flags are derived from audit.config.FIELDS


def _python_type(constraint: Any) -> type:
    from certify.errors import Integer, Optional, Real

    while isinstance(constraint, Optional):
        constraint = constraint.inner
    return int if isinstance(constraint, Integer) else float if isinstance(constraint, Real) else str


def _field_parameters() -> list[inspect.Parameter]:
    """One typer option per configuration field (a mapping of fixed keys: one per key)."""
    from audit.config import FIELDS
    from certify.errors import Choice

    params = []
    for f in FIELDS:
        shown = ("none" if f.default in ((), {}, None) else
                 ",".join(map(str, f.default)) if isinstance(f.default, tuple) else str(f.default))
        text = f.help + (f" Choices: {', '.join(map(str, f.constraint.options))}."
                         if isinstance(f.constraint, Choice) else "")
        if f.spelling == "keys":
            for key in f.constraint.keys:
                params.append(_option(f"{f.name}__{key}", Optional[float], f"--{key}",
                                      help=f"{f.help} ({key}; a finite number > 0)."))
        elif f.spelling == "pairs":
            params.append(_option(f.name, Optional[list[str]], *(f.flags or (f.flag,)), help=text))
        else:
            kind = str if f.spelling == "csv" else _python_type(f.constraint)
            params.append(_option(f.name, Optional[kind], f.flag, help=text, show_default=shown))
    return params


def _option(name: str, annotation: Any, *flags: str, **kwargs: Any) -> inspect.Parameter:
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=None,
                             annotation=Annotated[annotation, typer.Option(*flags, **kwargs)])


_RUN_OPTIONS = [
    _option("config", Optional[Path], "--config", help="TOML file with any of these fields (optionally under "
            "[audit]); flags win."),
    _option("out", Optional[Path], "--out", help="Directory for report.json, report.html (and the signature)."),
    _option("sign_key", Optional[Path], "--sign-key", help="Ed25519 private key (PEM): sign the report (needs --out)."),
    _option("commitment_salt", Optional[Path], "--commitment-salt",
            help="File with the secret salt (hex) of the deletion commitment; default: a new random salt saved as "
                 "OUT/" + SALT_FILE + " (mode 0600)."),
]


def run(**params: Any) -> None:
    """Run one audit: learn, certify, unlearn, retrain, compare, report."""
    from audit.config import AuditConfig
    from audit.pipeline import STAGES
    from audit.pipeline import run as run_audit

    out, sign_key, commitment_salt = params.pop("out"), params.pop("sign_key"), params.pop("commitment_salt")
    config, as_json, quiet = params.pop("config"), params.pop("as_json"), params.pop("quiet")
    try:
        cfg = AuditConfig.from_dict(_settings(params, _read_config(config) if config else {}))
        if out is not None and out.exists() and not out.is_dir():
            raise InvalidInput("out", "a directory (it exists and is a file)", str(out))
        if sign_key is not None:
            if out is None:
                raise InvalidInput("sign-key", "used together with --out (the signature covers the written files)", str(sign_key))
            from audit.report.signing import load_private_key

            load_private_key(sign_key)  # fail before any work or any file is written
        salt = _read_salt(commitment_salt) if commitment_salt is not None else None

        show = not quiet and err.is_terminal
        with Progress(TextColumn("{task.description:<10}"), BarColumn(), TimeElapsedColumn(),
                      console=err, transient=True, disable=not show) as bar:
            tasks = {s: bar.add_task(s, total=1, visible=False) for s in STAGES}

            def progress(stage: str, done: int, total: int) -> None:
                bar.update(tasks[stage], completed=done, total=max(total, 1), visible=True)

            report = run_audit(cfg, progress=progress, salt=salt)
        if out is not None:
            written = _write_outputs(report, out, sign_key, save_salt=commitment_salt is None)
            if not quiet:
                err.print("written: " + ", ".join(str(p) for p in written))
    except InvalidInput as exc:
        _fail(str(exc))
    if as_json:
        sys.stdout.write(report.to_json())
    if not quiet:
        _summary(report)
    raise typer.Exit(int(ExitCode.OK if report.verdict == "consistent" else ExitCode.VIOLATED))


run.__signature__ = inspect.Signature([  # type: ignore[attr-defined]
    *_field_parameters(), *_RUN_OPTIONS,
    inspect.Parameter("as_json", inspect.Parameter.KEYWORD_ONLY, default=False, annotation=Annotated[
        bool, typer.Option("--json", help="Print the report as JSON on stdout.")]),
    inspect.Parameter("quiet", inspect.Parameter.KEYWORD_ONLY, default=False, annotation=Annotated[
        bool, typer.Option("--quiet", "-q", help="No progress bar or summary.")]),
])
app.command()(run)


def _settings(params: dict[str, Any], file: dict[str, Any]) -> dict[str, Any]:
    """The configuration fields: the TOML file's, then every flag given on the command line."""
    from audit.config import FIELD

    settings = dict(file)
    for name, value in params.items():
        if value is None or value == []:
            continue
        field_name, _, key = name.partition("__")
        f = FIELD[field_name]
        if f.spelling == "keys":
            settings[f.name] = {**dict(settings.get(f.name) or {}), key: value}
        elif f.spelling == "pairs":
            settings[f.name] = {**dict(settings.get(f.name) or {}), **_parse_options(value, f.flag.lstrip("-"))}
        elif f.spelling == "csv" and f.name != "attacks":
            settings[f.name] = _parse_list(f.name, value)
        else:
            settings[f.name] = value
    return settings


def _parse_options(pairs: list[str], field: str = "option") -> dict[str, Any]:
    """NAME=VALUE pairs; values are read as JSON when they parse (numbers, true/false), else text."""
    options: dict[str, Any] = {}
    for pair in pairs:
        name, sep, text = pair.partition("=")
        if not sep or not name.strip():
            raise InvalidInput(field, "NAME=VALUE", pair)
        try:
            options[name.strip()] = json.loads(text)
        except json.JSONDecodeError:
            options[name.strip()] = text
    return options


def _read_salt(path: Path, field: str = "commitment-salt") -> bytes:
    try:
        text = path.read_text().strip()
        salt = bytes.fromhex(text)
    except (FileNotFoundError, IsADirectoryError, PermissionError):
        raise InvalidInput(field, "a readable file holding the salt in hex", str(path)) from None
    except (ValueError, UnicodeDecodeError):
        raise InvalidInput(field, "a file holding the salt as hexadecimal text", str(path)) from None
    if len(salt) < 16:
        raise InvalidInput(field, "at least 16 bytes (32 hex digits)", f"{len(salt)} bytes")
    return salt


def _write_outputs(report, out: Path, sign_key: Optional[Path], *, save_salt: bool) -> list[Path]:
    """report.json, report.html, the salt (0600) and, with a key, report.dsse.json."""
    from audit.report import write_atomic
    from audit.report.html import write_html

    text = report.to_json()  # validated once; the page is rendered from exactly these bytes
    written = [write_atomic(out / "report.json", text), write_html(json.loads(text), out / "report.html")]
    if save_salt and report.commitment_salt is not None:
        salt_path = out / SALT_FILE
        fd = os.open(salt_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(report.commitment_salt.hex() + "\n")
        written.append(salt_path)
    if sign_key is not None:
        from audit.report.signing import sign_report

        written.append(sign_report(out, sign_key))
    return written


def _read_config(path: Path) -> dict[str, Any]:
    try:
        with open(path, "rb") as fh:
            data = tomllib.load(fh)
    except FileNotFoundError:
        raise InvalidInput("config", "an existing TOML file", str(path)) from None
    except tomllib.TOMLDecodeError as exc:
        raise InvalidInput("config", "valid TOML", f"{path}: {exc}") from None
    return dict(data.get("audit", data))


def _parse_list(field: str, text: str) -> tuple[int, ...]:
    try:
        return tuple(int(w) for w in text.split(",") if w.strip())
    except ValueError:
        raise InvalidInput(field, "comma-separated positive integers such as 64,64", text) from None


def _summary(report) -> None:
    cert, real, util = report.certificate, report.realized, report.utility
    table = Table(title=f"{report.method.title} audit: verdict {report.verdict.upper()}",
                  show_header=True, header_style="bold")
    table.add_column("quantity")
    table.add_column("value", justify="right")
    fmt = lambda v: "n/a" if v is None else f"{v:.6g}"  # noqa: E731
    if cert.kind == "none":
        rows = [("certificate", "none (the method has no theorem)"),
                ("output noise sigma (uncalibrated)", fmt(cert.sigma))]
    else:
        rows = [
            ("certified epsilon (delta)", f"{fmt(cert.epsilon)} ({fmt(cert.delta)})"),
            ("certificate", f"{cert.kind}, " + ("valid" if cert.valid else "NOT ISSUED")
             + (" (conditional)" if cert.conditional else "")),
            ("sensitivity bound Delta", fmt(cert.sensitivity)),
            ("noise sigma", fmt(cert.sigma)),
        ]
    rows += [("||theta_U - theta_R|| (before noise)", fmt(real.distance_unlearned_retrained)),
             ("realized epsilon", fmt(real.epsilon))]
    for name in ("original", "unlearned", "retrained"):
        t = getattr(util, name).test
        noisy = t.noisy_accuracy_mean
        rows.append((f"test accuracy {name} (noiseless / released)",
                     f"{t.accuracy:.4f} / " + (f"{noisy:.4f}" if noisy is not None else "n/a")))
    if report.attacks:
        cmp = report.attacks.comparison
        for name, result in report.attacks.attacks.items():
            b = result.bound
            rows.append((f"empirical epsilon >= ({name}, {report.attacks.trials.n_per_world} trials/world)",
                         f"{fmt(b.epsilon_lower)} (ceiling {fmt(b.ceiling)})"))
        if cmp.ordering_holds is not None:
            rows.append(("certified >= realized >= empirical", "holds" if cmp.ordering_holds else "NO"))
    tm = report.timings
    rows.append(("learn / unlearn / retrain seconds", f"{tm.learn_s:.3f} / {tm.unlearn_s:.3f} / {tm.retrain_s:.3f}"))
    for r in rows:
        table.add_row(*r)
    err.print(table)
    for f in report.findings:
        colour = "red" if f.severity == "error" else "yellow"
        err.print(f"[{colour}]{f.severity}[/]: {f.message}", highlight=False)


# ----------------------------------------------------------------------------------------
@app.command()
def calibrate(
    delta: Annotated[float, typer.Option(help="delta in (0, 1).")],
    sensitivity: Annotated[float, typer.Option(help="L2 sensitivity Delta >= 0.")] = 1.0,
    epsilon: Annotated[Optional[float], typer.Option(help="Target epsilon: prints sigma.")] = None,
    sigma: Annotated[Optional[float], typer.Option(help="Noise sigma: prints epsilon.")] = None,
    mechanism: Annotated[str, typer.Option(help="analytic | classic.")] = "analytic",
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON on stdout.")] = False,
) -> None:
    """Gaussian-mechanism calibration: sigma from (epsilon, delta, Delta), or epsilon from sigma."""
    from certify.mechanisms import epsilon_for, sigma_for

    try:
        if (epsilon is None) == (sigma is None):
            raise InvalidInput("epsilon/sigma", "exactly one of --epsilon or --sigma", None)
        if epsilon is not None:
            result = {"sigma": sigma_for(epsilon, delta, sensitivity, mechanism), "epsilon": epsilon}
        else:
            result = {"epsilon": epsilon_for(sigma, delta, sensitivity, mechanism), "sigma": sigma}
    except InvalidInput as exc:
        _fail(str(exc))
    result.update(delta=delta, sensitivity=sensitivity, mechanism=mechanism)
    if as_json:
        sys.stdout.write(json.dumps(result, sort_keys=True, default=str) + "\n")
    else:
        typer.echo(" ".join(f"{k}={v:.10g}" if isinstance(v, float) else f"{k}={v}" for k, v in result.items()))


@app.command()
def methods(as_json: Annotated[bool, typer.Option("--json", help="Print JSON on stdout.")] = False) -> None:
    """List the unlearning methods (their papers, options and capabilities), the attacks, and any
    plug-in that failed to import (with its error)."""
    from attacks.registry import attack_names, get_attack, unavailable_attacks
    from audit.datasets import unavailable_datasets
    from unlearners.models import unavailable_models
    from unlearners.registry import available_methods, unavailable_methods

    rows = [{"name": name, "title": cls.title, "paper": cls.paper, "certified": cls.certified,
             "assumptions": list(cls.assumptions), "deviations": list(cls.deviations),
             "options": {p.name: p.default if not isinstance(p.default, tuple) else list(p.default)
                         for p in cls.hyperparameters},
             "option_declarations": [p.describe() for p in cls.hyperparameters],
             "capabilities": cls.capabilities.describe()}
            for name, cls in available_methods().items()]
    broken_attacks = unavailable_attacks()
    attacks = [{"name": n, "title": get_attack(n).title, "description": get_attack(n).description,
                "needs": sorted(get_attack(n).needs)} for n in attack_names() if n not in broken_attacks]
    unavailable = [{"kind": "method", "name": n, "error": e} for n, e in unavailable_methods().items()]
    unavailable += [{"kind": "attack", "name": n, "error": e} for n, e in broken_attacks.items()]
    unavailable += [{"kind": "dataset", "name": n, "error": e} for n, e in unavailable_datasets().items()]
    unavailable += [{"kind": "model", "name": n, "error": e} for n, e in unavailable_models().items()]
    if as_json:
        sys.stdout.write(json.dumps({"methods": rows, "attacks": attacks, "unavailable": unavailable},
                                    indent=2, default=str) + "\n")
        return
    table = Table(show_header=True, header_style="bold")
    for col in ("name", "certified", "paper"):
        table.add_column(col)
    for r in rows:
        table.add_row(r["name"], "yes" if r["certified"] else "no", r["paper"])
    out = Console()
    out.print(table)
    out.print("attacks: " + ", ".join(a["name"] for a in attacks))
    for u in unavailable:
        out.print(f"[red]unavailable {u['kind']} {u['name']}[/]: {u['error']}", highlight=False)


@app.command()
def keygen(out: Annotated[Path, typer.Option(help="Directory for private.pem (mode 0600) and public.pem.")]) -> None:
    """Make an Ed25519 key pair for signing reports."""
    from audit.report.signing import generate_keypair, keyid

    try:
        private, public = generate_keypair(out)
    except InvalidInput as exc:
        _fail(str(exc))
    typer.echo(f"private key: {private} (mode 0600; keep it secret)")
    typer.echo(f"public key:  {public}")
    typer.echo(f"keyid:       {keyid(public)}")


@app.command()
def sign(
    report_dir: Annotated[Path, typer.Argument(help="Directory holding report.json (and report.html).")],
    key: Annotated[Path, typer.Option(help="Ed25519 private key (PEM).")],
) -> None:
    """Sign report.json and report.html: writes report.dsse.json (DSSE envelope, in-toto Statement)."""
    from audit.report.signing import sign_report

    try:
        envelope = sign_report(report_dir, key)
    except InvalidInput as exc:
        _fail(str(exc))
    typer.echo(f"signed: {envelope}")


@app.command()
def verify(
    report_dir: Annotated[Path, typer.Argument(help="Directory holding report.dsse.json and the signed files.")],
    key: Annotated[Path, typer.Option(help="The signer's Ed25519 public key (PEM).")],
    as_json: Annotated[bool, typer.Option("--json", help="Print what was verified as JSON.")] = False,
) -> None:
    """Check the signature and every signed file's SHA-256; exit 3 on any mismatch."""
    from audit.report.signing import VerificationError, verify_report

    try:
        result = verify_report(report_dir, key)
    except InvalidInput as exc:
        _fail(str(exc))
    except VerificationError as exc:
        _fail(f"verification failed: {exc}", ExitCode.VERIFY_FAILED)
    if as_json:
        sys.stdout.write(json.dumps({"verified": True, "keyid": result.keyid,
                                     "subjects": [{"name": n, "sha256": h} for n, h in result.subjects],
                                     "not_covered": list(result.not_covered),
                                     "predicate": result.predicate}, indent=2, sort_keys=True) + "\n")
    else:
        typer.echo(result.describe())


def _read_report(report_json: Path) -> dict[str, Any]:
    """A report.json, parsed and validated against the schema (InvalidInput otherwise)."""
    from audit.report.schema import validate_report

    try:
        data = json.loads(report_json.read_text(encoding="utf-8"))
    except (FileNotFoundError, IsADirectoryError):
        raise InvalidInput("report", "an existing report.json", str(report_json)) from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InvalidInput("report", "a JSON document written by `audit run`", f"{report_json}: {exc}") from None
    if not isinstance(data, dict):
        raise InvalidInput("report", "a JSON object written by `audit run`", type(data).__name__)
    validate_report(data)
    return data


@app.command()
def report(
    report_json: Annotated[Path, typer.Argument(help="A report.json written by `audit run`.")],
    html: Annotated[Path, typer.Option(help="Where to write the re-rendered HTML page.")],
) -> None:
    """Re-render the HTML page from a report.json (validated against the schema first)."""
    from audit.report.html import write_html

    try:
        path = write_html(_read_report(report_json), html)
    except InvalidInput as exc:
        _fail(str(exc))
    typer.echo(f"written: {path}")


commitment_app = typer.Typer(help="Open the deletion commitment of a report.", no_args_is_help=True)
app.add_typer(commitment_app, name="commitment")


@commitment_app.command("verify")
def commitment_verify(
    report_json: Annotated[Path, typer.Argument(help="A report.json written by `audit run`.")],
    salt: Annotated[Path, typer.Option(help="The salt file (hex) written next to the report.")],
    ids: Annotated[Path, typer.Option(help="The ids of the deleted records, one per line.")],
) -> None:
    """Check that the salt and the ids open the report's deletion commitment; exit 3 if not."""
    from audit.commitment import opens
    from audit.datasets.user import read_ids

    try:
        data = _read_report(report_json)
        ok = opens(data, _read_salt(salt, field="salt"), read_ids(str(ids), field="ids"))
    except InvalidInput as exc:
        _fail(str(exc))
    block = data["deletion_request"]
    if not ok:
        _fail(f"the commitment does not open: these ids and this salt do not give "
              f"{block['commitment']}", ExitCode.VERIFY_FAILED)
    typer.echo(f"the commitment opens: the {block['n_records']} ids are the deleted records ({block['identifier']})")


def main() -> None:
    """Console-script entry point: no traceback reaches the user unless AUDIT_DEBUG is set."""
    try:
        app()
    except SystemExit:
        raise
    except KeyboardInterrupt:
        err.print("interrupted")
        sys.exit(130)
    except Exception as exc:  # pragma: no cover - the last line of defence
        if os.environ.get("AUDIT_DEBUG"):
            raise
        typer.echo(f"internal error: {type(exc).__name__}: {exc} (set AUDIT_DEBUG=1 for the "
                   "traceback)", err=True)
        sys.exit(int(ExitCode.INTERNAL))


if __name__ == "__main__":
    main()
