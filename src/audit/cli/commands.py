"""The commands besides ``audit run``: calibration, listings, keys, signatures, pages, commitments."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Annotated, Any, Literal, Optional

import typer
from rich.markup import escape
from rich.table import Table

from audit.cli.application import app, command, fail
from audit.cli.exits import ExitCode
from audit.cli.run import read_salt
from audit.cli.show import console
from certify.errors import InvalidInput

JSON_FLAG = typer.Option("--json", help="Print JSON on stdout.")


@command(
    "calibrate",
    renames={
        "epsilon": "--epsilon",
        "sigma": "--sigma",
        "delta": "--delta",
        "sensitivity": "--sensitivity",
        "mechanism": "--mechanism",
    },
)
def calibrate(
    delta: Annotated[float, typer.Option(help="delta in (0, 1).")],
    sensitivity: Annotated[float, typer.Option(help="L2 sensitivity Delta >= 0.")] = 1.0,
    epsilon: Annotated[
        Optional[float], typer.Option(help=escape("Target epsilon: prints sigma. [default: none]"))
    ] = None,
    sigma: Annotated[Optional[float], typer.Option(help=escape("Noise sigma: prints epsilon. [default: none]"))] = None,
    mechanism: Annotated[Literal["analytic", "classic"], typer.Option(help="Gaussian calibration.")] = "analytic",
    as_json: Annotated[bool, JSON_FLAG] = False,
) -> None:
    """Gaussian-mechanism calibration: sigma from (epsilon, delta, Delta), or epsilon from sigma."""
    from certify.mechanisms import epsilon_for, sigma_for

    if (epsilon is None) == (sigma is None):
        raise InvalidInput("--epsilon/--sigma", "exactly one of --epsilon or --sigma", None)
    result: dict[str, float | str]
    if epsilon is not None:
        result = {"sigma": sigma_for(epsilon, delta, sensitivity, mechanism), "epsilon": epsilon}
    else:
        assert sigma is not None  # exactly one of the two is given (checked above)
        result = {"epsilon": epsilon_for(sigma, delta, sensitivity, mechanism), "sigma": sigma}
    result.update(delta=delta, sensitivity=sensitivity, mechanism=mechanism)
    if as_json:  # an infinite epsilon is "inf", as in report.json (JSON has no Infinity)
        encoded = {k: ("inf" if isinstance(v, float) and math.isinf(v) else v) for k, v in result.items()}
        sys.stdout.write(json.dumps(encoded, sort_keys=True, allow_nan=False) + "\n")
    else:
        typer.echo(" ".join(f"{k}={v:.10g}" if isinstance(v, float) else f"{k}={v}" for k, v in result.items()))


@command("methods")
def methods(as_json: Annotated[bool, JSON_FLAG] = False) -> None:
    """List the unlearning methods (their papers, options and capabilities), the attacks, and any
    plug-in that failed to import (with its error)."""
    from audit.catalog import listing

    found = listing()  # the built-ins from their declared metadata: torch is imported only for a plug-in
    rows, attacks, unavailable = found["methods"], found["attacks"], found["unavailable"]
    if as_json:
        sys.stdout.write(
            json.dumps({"methods": rows, "attacks": attacks, "unavailable": unavailable}, indent=2, default=str) + "\n"
        )
        return
    table = Table(show_header=True, header_style="bold")
    for col in ("name", "certified", "paper"):
        table.add_column(col)
    for r in rows:
        table.add_row(r["name"], "yes" if r["certified"] else "no", escape(r["paper"]))
    out = console(stderr=False)
    out.print(table)
    out.print("attacks: " + ", ".join(a["name"] for a in attacks))
    for u in unavailable:
        out.print(f"[red]unavailable {u['kind']} {u['name']}[/]: {escape(u['error'])}", highlight=False)


@command("keygen", renames={"out": "--out"})
def keygen(out: Annotated[Path, typer.Option(help="Directory for private.pem (mode 0600) and public.pem.")]) -> None:
    """Make an Ed25519 key pair for signing reports."""
    from audit.report.signing import generate_keypair, keyid

    private, public = generate_keypair(out)
    typer.echo(f"private key: {private} (mode 0600; keep it secret)")
    typer.echo(f"public key:  {public}")
    typer.echo(f"keyid:       {keyid(public)}")


@command("sign", renames={"private_key_path": "--key", "report_dir": "REPORT_DIR"})
def sign(
    report_dir: Annotated[Path, typer.Argument(help="Directory holding report.json (and report.html).")],
    key: Annotated[Path, typer.Option(help="Ed25519 private key (PEM, mode 0600).")],
) -> None:
    """Sign report.json and report.html: writes report.dsse.json (DSSE envelope, in-toto Statement)."""
    from audit.report.signing import sign_report

    typer.echo(f"signed: {sign_report(report_dir, key)}")


def _print_script(value: bool) -> None:
    if value:  # eager, like --version: REPORT_DIR and --key are not needed to print it
        from audit.report.signing import OPENSSL_VERIFY_SCRIPT

        sys.stdout.write(OPENSSL_VERIFY_SCRIPT)
        raise typer.Exit(0)


@command("verify", renames={"public_key_path": "--key", "report_dir": "REPORT_DIR"})
def verify(
    report_dir: Annotated[Path, typer.Argument(help="Directory holding report.dsse.json and the signed files.")],
    key: Annotated[Path, typer.Option(help="The signer's Ed25519 public key (PEM).")],
    as_json: Annotated[bool, typer.Option("--json", help="Print what was verified as JSON.")] = False,
    print_script: Annotated[
        bool,
        typer.Option(
            "--print-script",
            callback=_print_script,
            is_eager=True,
            expose_value=False,
            help="Print a bash script that verifies the same without this toolkit (bash, base64, sha256sum, "
            "OpenSSL >= 3) and exit: DIR=<report dir> PUB=<public.pem> bash verify-report.sh.",
        ),
    ] = False,
) -> None:
    """Check the signature, every signed file's SHA-256 and that nothing unsigned sits in the
    directory (the commitment salt aside); exit 3 on any failure."""
    from audit.report.signing import VerificationError, verify_report

    try:
        result = verify_report(report_dir, key)
    except VerificationError as exc:
        fail(f"verification failed: {exc}", ExitCode.VERIFY_FAILED)
    if as_json:
        sys.stdout.write(
            json.dumps(
                {
                    "verified": True,
                    "keyid": result.keyid,
                    "subjects": [{"name": n, "sha256": h} for n, h in result.subjects],
                    "predicate": result.predicate,
                },
                indent=2,
                sort_keys=True,
            )
            + "\n"
        )
    else:
        typer.echo(result.describe())


def read_report(report_json: Path) -> dict[str, Any]:
    """A report.json, parsed and validated against the schema (InvalidInput otherwise)."""
    from audit.report.schema import validate_report

    try:
        data = json.loads(report_json.read_text(encoding="utf-8"))
    except (FileNotFoundError, NotADirectoryError):
        raise InvalidInput("REPORT_JSON", "an existing report.json", str(report_json)) from None
    except IsADirectoryError:
        raise InvalidInput("REPORT_JSON", "a report.json file (this path is a directory)", str(report_json)) from None
    except PermissionError:
        raise InvalidInput("REPORT_JSON", "a report.json this user can read", str(report_json)) from None
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
        raise InvalidInput(
            "REPORT_JSON", "a JSON document written by `audit run`", f"{report_json}: {type(exc).__name__}"
        ) from None
    if not isinstance(data, dict):
        raise InvalidInput("REPORT_JSON", "a JSON object written by `audit run`", type(data).__name__)
    if data.get("kind") == "comparison":  # written by `audit compare`
        from audit.report.comparison import validate_comparison

        validate_comparison(data)
    else:
        validate_report(data)
    return data


@command("report")
def report(
    report_json: Annotated[Path, typer.Argument(help="A report.json written by `audit run` or `audit compare`.")],
    html: Annotated[Path, typer.Option(help="Where to write the re-rendered HTML page (a file path).")],
) -> None:
    """Re-render the HTML page from a report.json of `audit run` or `audit compare` (validated
    against its schema first)."""
    from audit.report import write_atomic
    from audit.report.comparison_html import render_comparison_html
    from audit.report.html import render_html
    from audit.report.signing import ENVELOPE_NAME

    data = read_report(report_json)
    page = (
        render_comparison_html(data)
        if data.get("kind") == "comparison"
        else render_html(data, page="rerendered", envelope_beside=(report_json.parent / ENVELOPE_NAME).is_file())
    )
    if html.is_dir():
        raise InvalidInput("--html", "a file path (this path is a directory)", str(html))
    try:
        path = write_atomic(html, page)
    except OSError as exc:
        raise InvalidInput(
            "--html",
            "a file path this user can write",
            str(html),
            hint=f"The system said: {exc.strerror or type(exc).__name__}.",
        ) from None
    typer.echo(f"written: {path}")


@command("datasets")
def datasets(as_json: Annotated[bool, JSON_FLAG] = False) -> None:
    """List the datasets: built-in ones with their source, licence and shape, and the loaders for
    your own files (idx:, cifar10:, csv:)."""
    from audit.datasets import catalogue

    rows = catalogue()
    if as_json:
        sys.stdout.write(json.dumps(rows, indent=2, default=str) + "\n")
        return
    table = Table(show_header=True, header_style="bold")
    for col in ("name", "shape", "licence", "source"):
        table.add_column(col, overflow="fold")
    for r in rows:
        table.add_row(
            escape(r["name"]),
            _shape(r.get("shape")),
            escape(str(r.get("licence", ""))),
            escape(str(r.get("source", ""))),
        )
    console(stderr=False).print(table)


def _shape(shape: dict[str, Any] | None) -> str:
    """``48,842 records, 108 features, 2 classes`` (or what the user's files hold)."""
    if not shape:
        return "that of your files"
    parts = [f"{shape['records']:,} records"] if "records" in shape else []
    if "image" in shape:
        parts.append("x".join(map(str, shape["image"])) + " images")
    if "features" in shape:
        parts.append(f"{shape['features']} features")
    if "classes" in shape:
        parts.append(f"{shape['classes']} classes")
    return ", ".join(parts)


commitment_app = typer.Typer(help="Open the deletion commitment of a report.", no_args_is_help=True)
app.add_typer(commitment_app, name="commitment")


@command("verify", parent=commitment_app)
def commitment_verify(
    report_json: Annotated[Path, typer.Argument(help="A report.json written by `audit run` or `audit compare`.")],
    salt: Annotated[Path, typer.Option(help="The salt file (hex) written next to the report.")],
    ids: Annotated[Path, typer.Option(help="The ids of the deleted records, one per line.")],
) -> None:
    """Check that the salt and the ids open the report's deletion commitment; exit 3 if not."""
    from audit.commitment import opens
    from audit.datasets.user import read_ids

    data = read_report(report_json)
    ok = opens(data, read_salt(salt, field="--salt"), read_ids(str(ids), field="--ids"))
    block = data["deletion_request"]
    if not ok:
        fail(
            f"the commitment does not open: these ids and this salt do not give {block['commitment']}",
            ExitCode.VERIFY_FAILED,
        )
    typer.echo(f"the commitment opens: the {block['n_records']} ids are the deleted records ({block['identifier']})")
