"""Signed reports: an in-toto Statement v1 in a DSSE envelope, signed with Ed25519.

A report directory holds ``report.json`` (and, once rendered, ``report.html``).
:func:`sign_report` writes ``report.dsse.json`` next to them::

    {"payload": "<base64 of the statement>",
     "payloadType": "application/vnd.in-toto+json",
     "signatures": [{"keyid": "sha256:<hex SHA-256 of the public key's DER>", "sig": "<base64>"}]}

The statement (the payload, as RFC 8785 canonical JSON) binds the SHA-256 digest of every
signed file to the headline claims of the audit::

    {"_type": "https://in-toto.io/Statement/v1",
     "subject": [{"name": "report.json", "digest": {"sha256": "..."}}, ...],
     "predicateType": "https://unlearn-audit.dev/audit-claims/v1",
     "predicate": {"method": "r2d", "certified": {"epsilon": 1.0, "delta": 1e-05, ...}, ...}}

The Ed25519 signature covers the DSSE pre-authentication encoding (:func:`pae`)::

    b"DSSEv1 <len(payloadType)> <payloadType> <len(payload)> <payload>"

(lengths are ASCII decimal byte counts), so the payload type is signed too. The envelope,
the PAE, signing and signature checks are ``securesystemslib``'s (:mod:`audit.report.dsse`), so
``securesystemslib.dsse.Envelope`` reads these envelopes and this module reads its envelopes.
The verifier tries every signature in an envelope (the keyid is an unsigned hint): an envelope
countersigned by others verifies if one signature is by the given key.

Which files are signed
----------------------
Only the subject files that exist when :func:`sign_report` runs are signed; ``report.json``
must exist. The signature covers the whole directory: :func:`verify_report` refuses any file or
directory in it that the signature does not cover (a ``report.html`` rendered *after* signing,
an added ``methods/noop/``, an empty directory, a hidden ``.DS_Store``), because a file sitting
in a signed set reads as signed. The one exception is :data:`UNSIGNED_FILES` at the top: the
deletion-commitment salt, a secret the operator keeps (it opens the signed commitment, so it
needs no signature of its own). Sign again after adding a file.

Keys
----
:func:`generate_keypair` writes ``private.pem`` (PKCS#8, created with mode 0600, optionally
encrypted with a passphrase) and ``public.pem`` (SubjectPublicKeyInfo). A private key file that
group or others can access is refused when signing, as OpenSSH refuses it. Private key material
is never written into a report, an envelope, an error message or a log. The verifier always
uses a public key it was given (obtained out of band); nothing shipped inside a report
directory is trusted as a key.

Timestamps
----------
``signed_at`` in the predicate is asserted by the signer only: nothing independent attests it.

Verifying without the toolkit
-----------------------------
:data:`OPENSSL_VERIFY_SCRIPT` is a bash script that needs only bash, printf, base64,
sha256sum and OpenSSL >= 3.0 (``pkeyutl -rawin``). Run it from an empty scratch directory::

    DIR=path/to/report PUB=path/to/public.pem bash verify-report.sh

It exits 0 and prints ``Signature Verified Successfully`` and one ``OK <file> <sha256>``
line per signed file, or exits non-zero. It reads any JSON layout of the envelope (indented
or minified) and several signatures, and refuses, like :func:`verify_report`, a signed file
that a symlink leads out of the report directory and any file or directory that the
signature does not cover (the salt aside). The key steps, by hand::

    printf '%s' "$PAYLOAD_B64" | base64 -d > statement.json      # "payload" field
    printf '%s' "$SIG_B64"     | base64 -d > sig.bin             # a "sig" field
    n=$(( ${#PAYLOAD_B64} / 4 * 3 - PAD ))    # the payload's bytes; PAD = number of trailing "="
    { printf 'DSSEv1 28 application/vnd.in-toto+json %d ' "$n"; cat statement.json; } > pae.bin
    openssl pkeyutl -verify -pubin -inkey public.pem -rawin -in pae.bin -sigfile sig.bin
    sha256sum report.json report.html        # compare with the digests in statement.json

The keyid is ``sha256:`` followed by the output of
``openssl pkey -pubin -in public.pem -outform DER | sha256sum``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Any

from audit.report import SALT_FILE, TOOL, tool_version, write_atomic
from audit.report.canonical import canonical_json
from audit.report.dsse import (
    COMPARISON_PREDICATE_TYPE,
    MAX_ENVELOPE_BYTES,
    PAYLOAD_TYPE,
    PREDICATE_TYPE,
    STATEMENT_TYPE,
    VerificationError,
    _strict_loads,
    envelope_json,
    pae,
    parse_envelope,
    short,
    sign_envelope,
    verify_envelope,
)
from audit.report.encoding import json_safe
from audit.report.keys import (
    PRIVATE_KEY_NAME,
    PUBLIC_KEY_NAME,
    _load_private_key,
    _load_public_key,
    generate_keypair,
    keyid,
    load_private_key,
)
from certify.errors import InvalidInput

__all__ = [
    "load_private_key",
    "DEFAULT_SUBJECTS",
    "ENVELOPE_NAME",
    "OPENSSL_VERIFY_SCRIPT",
    "PAYLOAD_TYPE",
    "PREDICATE_TYPE",
    "PRIVATE_KEY_NAME",
    "PUBLIC_KEY_NAME",
    "STATEMENT_TYPE",
    "UNSIGNED_FILES",
    "VerificationError",
    "VerificationResult",
    "canonical_json",
    "generate_keypair",
    "headline_claims",
    "comparison_claims",
    "keyid",
    "pae",
    "sign_report",
    "verify_report",
]

ENVELOPE_NAME = "report.dsse.json"
DEFAULT_SUBJECTS: tuple[str, ...] = ("report.json", "report.html")
REQUIRED_SUBJECT = "report.json"
#: The files a signed directory may hold at its top without a signature: the deletion-commitment
#: salt, a secret that opens the signed commitment (and is best kept apart from the report).
UNSIGNED_FILES = frozenset({SALT_FILE})
_MAX_NAMED = 5  # uncovered paths named in the refusal before "and N more"

_SHA256_HEX = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class VerificationResult:
    """What :func:`verify_report` established.

    Attributes
    ----------
    report_dir:
        The directory that was checked.
    keyid:
        ``sha256:<hex>`` of the public key that verified the signature.
    statement:
        The signed in-toto statement (decoded payload).
    subjects:
        ``(name, sha256)`` of every signed file, each recomputed and matched (and nothing else
        is in the directory but the envelope and :data:`UNSIGNED_FILES`).
    payload_canonical:
        Whether the payload bytes are RFC 8785 canonical (always true for envelopes written
        by :func:`sign_report`; the openssl recipe relies on it to find the digests).
    """

    report_dir: Path
    keyid: str
    statement: dict[str, Any]
    subjects: tuple[tuple[str, str], ...]
    payload_canonical: bool = True

    @property
    def predicate(self) -> dict[str, Any]:
        return self.statement.get("predicate", {})

    def describe(self) -> str:
        """Human-readable lines saying what was verified (for a CLI to print)."""
        lines = [
            f"Signature: valid Ed25519 signature by key {self.keyid} over a "
            f"{self.statement.get('predicateType')} statement."
        ]
        for name, digest in self.subjects:
            lines.append(f"Signed file: {name} sha256:{digest} matches.")
        p = self.predicate
        if self.statement.get("predicateType") == COMPARISON_PREDICATE_TYPE:
            methods = p.get("methods")
            rows = methods if isinstance(methods, list) else []
            ran = ", ".join(
                f"{r.get('name')} (certified epsilon={r.get('certified_epsilon')}, verdict={r.get('verdict')})"
                for r in rows
                if isinstance(r, dict)
            )
            lines.append(
                f"Claims: comparison at epsilon={p.get('epsilon')} delta={p.get('delta')} of {ran}; "
                f"recommended={p.get('recommended')} report created_at={p.get('report_created_at')} "
                f"signed_at={p.get('signed_at')} (self-asserted)."
            )
            return "\n".join([*lines, *_request_line(p)])
        certified, realized = p.get("certified"), p.get("realized")
        cert = certified if isinstance(certified, dict) else {}
        real = realized if isinstance(realized, dict) else {}
        lines.append(
            f"Claims: method={p.get('method')} certified epsilon={cert.get('epsilon')} "
            f"delta={cert.get('delta')} realized epsilon={real.get('epsilon')} "
            f"verdict={p.get('verdict')} report created_at={p.get('report_created_at')} "
            f"signed_at={p.get('signed_at')} (self-asserted)."
        )
        return "\n".join([*lines, *_request_line(p)])


def _request_line(predicate: dict[str, Any]) -> list[str]:
    """The signed deletion request in one line (none for a statement signed before it was claimed)."""
    request = predicate.get("deletion_request")
    if not isinstance(request, dict):
        return []
    rid = request.get("request_id")
    return [
        f"Deletion request: id={rid if rid is not None else 'none given'} records={request.get('n_records')} "
        f"commitment={request.get('commitment')}."
    ]


# ----------------------------------------------------------------------------------------
# Signing


def headline_claims(report: dict[str, Any], *, signed_at: str | None = None) -> dict[str, Any]:
    """The predicate: the headline claims of ``report.json``, read defensively.

    Missing fields become ``null``; non-finite numbers keep the report's string encoding
    (``"inf"``, ``"nan"``); integers beyond ±(2**53 - 1) become strings.
    """

    def get(*keys: str) -> Any:
        cur: Any = report
        for k in keys:
            if not isinstance(cur, dict):
                return None
            cur = cur.get(k)
        return cur

    method = get("method", "name")
    if method is None:
        method = get("certificate", "method")
    claims = {
        "method": method,
        "certified": {
            "kind": get("certificate", "kind"),
            "epsilon": get("certificate", "epsilon"),
            "delta": get("certificate", "delta"),
            "mechanism": get("certificate", "mechanism"),
            "theorem": get("certificate", "theorem"),
            "valid": get("certificate", "valid"),
            "conditional": get("certificate", "conditional"),
        },
        "realized": {
            "epsilon": get("realized", "epsilon"),
            "exceeds_certified": get("realized", "exceeds_certified"),
            "bound_violated": get("realized", "bound_violated"),
        },
        "verdict": get("verdict"),
        "deletion_request": _request_claims(report.get("deletion_request")),
        "schema_version": get("schema_version"),
        "report_created_at": get("created_at"),
        "tool": {"name": get("tool", "name"), "version": get("tool", "version")},
        "signer_tool": {"name": TOOL, "version": tool_version()},
        "signed_at": signed_at or datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "signed_at_self_asserted": True,
    }
    return json_safe(claims)


def _request_claims(block: Any) -> dict[str, Any]:
    """What was deleted, as signed: the caller's request id, the commitment to the records' ids
    and their number (``null`` where the report has none)."""
    block = block if isinstance(block, dict) else {}
    return {k: block.get(k) for k in ("request_id", "commitment", "n_records", "identifier")}


def comparison_claims(document: dict[str, Any], *, signed_at: str | None = None) -> dict[str, Any]:
    """The predicate of a comparison: each method's certificate and verdict, and the recommendation."""
    rows = document.get("methods") or []
    claims = {
        "kind": "comparison",
        "epsilon": document.get("epsilon"),
        "delta": document.get("delta"),
        "methods": [
            {
                "name": r.get("name"),
                "certified_epsilon": r.get("certified_epsilon"),
                "certificate_kind": r.get("certificate_kind"),
                "verdict": r.get("verdict"),
                "report_sha256": r.get("report_sha256"),
            }
            for r in rows
        ],
        "not_applicable": [r.get("name") for r in document.get("not_applicable") or []],
        "recommended": (document.get("recommendation") or {}).get("method"),
        "deletion_request": _request_claims(document.get("deletion_request")),
        "schema_version": document.get("schema_version"),
        "report_created_at": document.get("created_at"),
        "tool": document.get("tool"),
        "signer_tool": {"name": TOOL, "version": tool_version()},
        "signed_at": signed_at or datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "signed_at_self_asserted": True,
    }
    return json_safe(claims)


def _check_subject_name(name: Any) -> str | None:
    """Return why ``name`` is not an acceptable subject name, or None if it is.

    Acceptable: a relative POSIX path of ordinary components inside the report directory
    (no ``..``, ``.``, empty components, backslashes, drive letters or control characters).
    """
    if not isinstance(name, str) or not name:
        return "it is not a non-empty string"
    if any(ord(c) < 0x20 or c in '\\:"' for c in name) or "\x7f" in name:
        return "it contains a control character, a backslash, a colon or a quote"
    if name.startswith("/"):
        return "it is an absolute path"
    parts = name.split("/")
    if any(part in ("", ".", "..") for part in parts):
        return "it is not a plain path inside the report directory"
    if name == ENVELOPE_NAME:
        return "the envelope cannot sign itself"
    return None


def _inside(report_dir: Path, name: str) -> Path | None:
    """``report_dir / name`` if it resolves inside ``report_dir`` (symlinks followed)."""
    path = report_dir / PurePosixPath(name)
    try:
        path.resolve().relative_to(report_dir.resolve())
    except (ValueError, OSError, RuntimeError):  # outside; or a symlink loop (RuntimeError before 3.13)
        return None
    return path


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def sign_report(
    report_dir: str | os.PathLike,
    private_key_path: str | os.PathLike,
    *,
    subjects: Sequence[str] = DEFAULT_SUBJECTS,
    predicate: dict[str, Any] | None = None,
    passphrase: bytes | None = None,
    key_field: str = "private_key_path",
    predicate_type: str = PREDICATE_TYPE,
) -> Path:
    """Sign the report in ``report_dir``; write and return ``report_dir/report.dsse.json``.

    Parameters
    ----------
    subjects:
        File names (relative to ``report_dir``) to sign. Only those that exist are included
        (``report.html`` may not be rendered yet); ``report.json`` must exist.
    predicate:
        The claims to sign; by default :func:`headline_claims` of ``report.json``.
    passphrase:
        The private key's passphrase, if it is encrypted.
    key_field:
        The name errors about the key give it (the CLI passes ``--key`` or ``--sign-key``).
    predicate_type:
        :data:`PREDICATE_TYPE` (one audit's claims) or :data:`COMPARISON_PREDICATE_TYPE`.

    The envelope (securesystemslib's DSSE ``Envelope``, signed by its ``CryptoSigner``) is
    written atomically; the private key never leaves this function. A private key file that
    group or others can access is refused (:class:`~certify.errors.InvalidInput`).
    """
    rdir = Path(report_dir)
    if not rdir.is_dir():
        raise InvalidInput("report_dir", "an existing report directory", str(rdir))
    names: list[str] = []
    for name in subjects:
        why = _check_subject_name(name)
        if why:
            raise InvalidInput(
                "subjects", "relative file names inside the report directory", name, f"Rejected because {why}."
            )
        if name not in names:
            names.append(name)
    if REQUIRED_SUBJECT not in names:
        raise InvalidInput("subjects", f"a list including {REQUIRED_SUBJECT!r}", list(subjects))

    digests: dict[str, str] = {}
    report_bytes = b""
    for name in names:
        path = _inside(rdir, name)
        if path is None:
            raise InvalidInput("subjects", "files inside the report directory", name)
        try:
            if name == REQUIRED_SUBJECT:
                report_bytes = path.read_bytes()
                digests[name] = hashlib.sha256(report_bytes).hexdigest()
            elif path.is_file():
                digests[name] = _sha256_file(path)
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            raise InvalidInput(
                "report_dir",
                f"a directory containing {REQUIRED_SUBJECT}",
                str(rdir),
                "Write the report before signing it.",
            ) from None
        except OSError as exc:
            raise InvalidInput(
                "report_dir",
                "a directory whose report files can be read",
                str(rdir),
                f"Reading {name} failed: {exc.strerror or exc}.",
            ) from None

    if predicate is None:
        try:
            report = json.loads(report_bytes.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise InvalidInput(
                "report.json", "a valid UTF-8 JSON document", str(rdir / REQUIRED_SUBJECT), f"Parsing failed: {exc}."
            ) from None
        except RecursionError:
            raise InvalidInput(
                "report.json",
                "a JSON document written by the toolkit",
                str(rdir / REQUIRED_SUBJECT),
                "It nests arrays or objects too deeply to be read.",
            ) from None
        if not isinstance(report, dict):
            raise InvalidInput("report.json", "a JSON object", type(report).__name__)
        predicate = headline_claims(report)
    elif not isinstance(predicate, dict):
        raise InvalidInput("predicate", "a dict or None", type(predicate).__name__)
    else:
        try:
            predicate = json_safe(predicate)
        except ValueError as exc:
            raise InvalidInput("predicate", "JSON data", str(exc)) from None

    statement = {
        "_type": STATEMENT_TYPE,
        "subject": [{"name": n, "digest": {"sha256": d}} for n, d in sorted(digests.items())],
        "predicateType": predicate_type,
        "predicate": predicate,
    }
    payload = canonical_json(statement)

    key = _load_private_key(private_key_path, passphrase, key_field)
    envelope = sign_envelope(payload, key, keyid=keyid(key.public_key()))  # checks its own signature
    del key
    return write_atomic(rdir / ENVELOPE_NAME, envelope_json(envelope))


# ----------------------------------------------------------------------------------------
# Verification


def _read_envelope(env_path: Path) -> bytes:
    """The envelope's bytes, at most :data:`MAX_ENVELOPE_BYTES` (+1 to detect more)."""
    try:
        with open(env_path, "rb") as fh:
            return fh.read(MAX_ENVELOPE_BYTES + 1)
    except OSError as exc:
        raise VerificationError(
            f"The signed envelope {ENVELOPE_NAME} cannot be read ({exc.strerror or type(exc).__name__})."
        ) from None


def verify_report(
    report_dir: str | os.PathLike, public_key_path: str | os.PathLike, *, key_field: str = "public_key_path"
) -> VerificationResult:
    """Verify ``report_dir/report.dsse.json`` with the given public key and every signed file.

    Checks, in order: the envelope parses strictly and has the DSSE fields (:func:`parse_envelope`);
    ``payloadType`` is in-toto; an Ed25519 signature over the PAE verifies with
    ``public_key_path`` (any of the envelope's signatures, whatever keyid it claims); the payload
    is an in-toto Statement v1 of our predicate type whose subjects are safe relative names
    including ``report.json``; each subject file resolves inside ``report_dir`` (a symlink
    leading out is refused), exists and has the signed SHA-256; and the directory holds nothing
    else but the envelope and a top-level :data:`UNSIGNED_FILES` file (:func:`_uncovered`).

    Raises :class:`VerificationError` (one sentence saying what failed), or
    :class:`~certify.errors.InvalidInput` naming ``key_field`` if the public key file itself is
    unusable.
    """
    rdir = Path(report_dir)
    env_path = rdir / ENVELOPE_NAME
    public = _load_public_key(public_key_path, key_field)
    kid = keyid(public)

    # 1. The envelope.
    if not env_path.is_file():
        raise VerificationError(f"The signed envelope {ENVELOPE_NAME} is missing from {rdir}.")
    envelope = parse_envelope(_read_envelope(env_path), f"envelope {ENVELOPE_NAME}")
    if envelope.payload_type != PAYLOAD_TYPE:
        raise VerificationError(f"The envelope's payloadType is {short(envelope.payload_type)}, not {PAYLOAD_TYPE!r}.")

    # 2. The signature (before anything in the payload is trusted).
    if verify_envelope(envelope, public, keyid=kid) is None:
        others = [k for k in envelope.signatures if k]
        if others and kid not in others:
            raise VerificationError(
                f"The report was signed by a different key ({short(others[0])}), not by {public_key_path} ({kid})."
            )
        raise VerificationError(
            f"The signature does not verify with {public_key_path}: the signed "
            f"statement or the signature was changed after signing, or the key is wrong."
        )
    payload = envelope.payload

    # 3. The statement.
    statement = _strict_loads(payload, "signed statement")
    if not isinstance(statement, dict) or statement.get("_type") != STATEMENT_TYPE:
        raise VerificationError(f"The signed payload is not an in-toto Statement v1 ({STATEMENT_TYPE}).")
    if statement.get("predicateType") not in (PREDICATE_TYPE, COMPARISON_PREDICATE_TYPE):
        raise VerificationError(
            f"The signed statement's predicateType is "
            f"{statement.get('predicateType')!r}, not {PREDICATE_TYPE!r} or "
            f"{COMPARISON_PREDICATE_TYPE!r}."
        )
    subjects = statement.get("subject")
    if not isinstance(subjects, list) or not subjects:
        raise VerificationError("The signed statement lists no subjects.")
    wanted: list[tuple[str, str]] = []
    for sub in subjects:
        name = sub.get("name") if isinstance(sub, dict) else None
        why = _check_subject_name(name)
        if why:
            raise VerificationError(f"The signed statement names an unexpected subject {name!r}: {why}.")
        assert isinstance(name, str)  # _check_subject_name refuses anything but a non-empty string
        if any(name == n for n, _ in wanted):
            raise VerificationError(f"The signed statement lists the subject {name!r} twice.")
        digest = sub.get("digest")
        sha = digest.get("sha256") if isinstance(digest, dict) else None
        if not isinstance(sha, str) or not _SHA256_HEX.fullmatch(sha):
            raise VerificationError(f"The signed statement has no valid lowercase hex SHA-256 digest for {name!r}.")
        wanted.append((name, sha))
    if REQUIRED_SUBJECT not in {n for n, _ in wanted}:
        raise VerificationError(f"The signed statement does not cover {REQUIRED_SUBJECT}.")

    # 4. The files.
    for name, sha in wanted:
        path = _inside(rdir, name)
        if path is None:
            raise VerificationError(
                f"The signed subject {name!r} leads outside {rdir} through a symlink (or into a symlink loop)."
            )
        if not path.is_file():
            raise VerificationError(f"The signed file {name} is missing from {rdir}.")
        try:
            got = _sha256_file(path)
        except OSError as exc:
            raise VerificationError(
                f"The signed file {name} cannot be read ({exc.strerror or type(exc).__name__})."
            ) from None
        if got != sha:
            raise VerificationError(
                f"The file {name} was modified after signing: its SHA-256 is {got}, but the signature covers {sha}."
            )

    # 5. Nothing else: a file in a signed set reads as signed.
    _refuse_uncovered(rdir, {n for n, _ in wanted})
    try:
        canonical = canonical_json(statement) == payload
    except InvalidInput:
        canonical = False
    return VerificationResult(
        report_dir=rdir, keyid=kid, statement=statement, subjects=tuple(wanted), payload_canonical=canonical
    )


def _refuse_uncovered(rdir: Path, covered: set[str]) -> None:
    """Raise :class:`VerificationError` naming what in ``rdir`` the signature does not cover."""
    uncovered = _uncovered(rdir, covered)
    if uncovered:
        named = ", ".join(uncovered[:_MAX_NAMED])
        more = f" and {len(uncovered) - _MAX_NAMED} more" if len(uncovered) > _MAX_NAMED else ""
        raise VerificationError(
            f"The signature does not cover {named}{more} in {rdir}: remove "
            f"{'them' if len(uncovered) > 1 else 'it'} or sign the directory again "
            f"(only {', '.join(sorted(UNSIGNED_FILES))} may sit unsigned beside a report)."
        )


def _uncovered(rdir: Path, covered: set[str]) -> list[str]:
    """Every entry of ``rdir`` the signature does not cover, as a relative path (a directory with a
    trailing ``/``, its contents unlisted): not a subject, the envelope, a top-level
    :data:`UNSIGNED_FILES` file, a file a signed symlink leads to or a directory on the way to a
    subject. Hidden files and empty directories count. Only the directories leading to subjects
    are entered, so a symlink loop cannot make the walk endless."""
    allowed = covered | {ENVELOPE_NAME, *UNSIGNED_FILES}
    leading = {"/".join(n.split("/")[:i]) for n in covered for i in range(1, n.count("/") + 1)}
    signed_bytes = {(rdir / n).resolve() for n in covered}  # a file a signed symlink leads to is signed
    found: list[str] = []

    def walk(directory: Path, prefix: str) -> None:
        try:
            entries = sorted(os.listdir(directory))
        except OSError as exc:
            raise VerificationError(
                f"The directory {directory} cannot be listed "
                f"({exc.strerror or type(exc).__name__}), so what the signature "
                f"does not cover cannot be checked."
            ) from None
        for entry in entries:
            name = prefix + entry
            path = directory / entry
            if name in leading:
                walk(path, name + "/")
            elif path.is_dir():  # even one named like the salt: only files are signed or left unsigned
                found.append(name + "/")
            elif name not in allowed and path.resolve() not in signed_bytes:
                found.append(name)

    walk(rdir, "")
    return found


# ----------------------------------------------------------------------------------------
# Verifying with nothing but bash, printf, base64, sha256sum and OpenSSL >= 3.0.

#: The script, shipped as a file beside this module (``audit verify --print-script`` prints it).
VERIFY_SCRIPT_FILE = Path(__file__).resolve().parent / "verify-report.sh"
OPENSSL_VERIFY_SCRIPT = VERIFY_SCRIPT_FILE.read_text(encoding="utf-8")
