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

(lengths are ASCII decimal byte counts), so the payload type is signed too.

Which files are signed
----------------------
Only the subject files that exist when :func:`sign_report` runs are signed; ``report.json``
must exist. If ``report.html`` is rendered *after* signing it is not covered: sign again
after rendering. :func:`verify_report` lists such unsigned files in
:attr:`VerificationResult.not_covered` so that a caller can warn about them.

Keys
----
:func:`generate_keypair` writes ``private.pem`` (PKCS#8, created with mode 0600, optionally
encrypted with a passphrase) and ``public.pem`` (SubjectPublicKeyInfo). Private key material
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
line per signed file, or exits non-zero. The key steps, by hand::

    printf '%s' "$PAYLOAD_B64" | base64 -d > statement.json      # "payload" field
    printf '%s' "$SIG_B64"     | base64 -d > sig.bin             # "sig" field
    LC_ALL=C; s=$(< statement.json)
    printf 'DSSEv1 28 application/vnd.in-toto+json %d %s' "${#s}" "$s" > pae.bin
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
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath
from typing import Any, Sequence

from audit.report import TOOL, tool_version, write_atomic
from audit.report.canonical import canonical_json
from audit.report.dsse import (
    PAYLOAD_TYPE,
    PREDICATE_TYPE,
    STATEMENT_TYPE,
    VerificationError,
    _b64,
    _strict_loads,
    _unb64,
    pae,
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
    "VerificationError",
    "VerificationResult",
    "canonical_json",
    "generate_keypair",
    "headline_claims",
    "keyid",
    "pae",
    "sign_report",
    "verify_report",
]

ENVELOPE_NAME = "report.dsse.json"
DEFAULT_SUBJECTS: tuple[str, ...] = ("report.json", "report.html")
REQUIRED_SUBJECT = "report.json"

_MAX_ENVELOPE_BYTES = 16 * 1024 * 1024
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
        ``(name, sha256)`` of every signed file, each recomputed and matched.
    not_covered:
        Files among :data:`DEFAULT_SUBJECTS` present in the directory but not signed
        (e.g. ``report.html`` rendered after signing); a caller should warn about them.
    payload_canonical:
        Whether the payload bytes are RFC 8785 canonical (always true for envelopes written
        by :func:`sign_report`; the openssl recipe relies on it to find the digests).
    """

    report_dir: Path
    keyid: str
    statement: dict[str, Any]
    subjects: tuple[tuple[str, str], ...]
    not_covered: tuple[str, ...] = ()
    payload_canonical: bool = True

    @property
    def predicate(self) -> dict[str, Any]:
        return self.statement.get("predicate", {})

    def describe(self) -> str:
        """Human-readable lines saying what was verified (for a CLI to print)."""
        lines = [f"Signature: valid Ed25519 signature by key {self.keyid} over a "
                 f"{self.statement.get('predicateType')} statement."]
        for name, digest in self.subjects:
            lines.append(f"Signed file: {name} sha256:{digest} matches.")
        for name in self.not_covered:
            lines.append(f"Warning: {name} is present but NOT covered by the signature.")
        p = self.predicate
        cert = p.get("certified") if isinstance(p.get("certified"), dict) else {}
        real = p.get("realized") if isinstance(p.get("realized"), dict) else {}
        lines.append(f"Claims: method={p.get('method')} certified epsilon={cert.get('epsilon')} "
                     f"delta={cert.get('delta')} realized epsilon={real.get('epsilon')} "
                     f"verdict={p.get('verdict')} report created_at={p.get('report_created_at')} "
                     f"signed_at={p.get('signed_at')} (self-asserted).")
        return "\n".join(lines)


# ----------------------------------------------------------------------------------------
# DSSE and canonical JSON


# ----------------------------------------------------------------------------------------
# Keys


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
        "schema_version": get("schema_version"),
        "report_created_at": get("created_at"),
        "tool": {"name": get("tool", "name"), "version": get("tool", "version")},
        "signer_tool": {"name": TOOL, "version": tool_version()},
        "signed_at": signed_at or datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
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
    except ValueError:
        return None
    return path


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def sign_report(report_dir: str | os.PathLike, private_key_path: str | os.PathLike, *,
                subjects: Sequence[str] = DEFAULT_SUBJECTS, predicate: dict[str, Any] | None = None,
                passphrase: bytes | None = None) -> Path:
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

    The envelope is written atomically; the private key never leaves this function.
    """
    rdir = Path(report_dir)
    if not rdir.is_dir():
        raise InvalidInput("report_dir", "an existing report directory", str(rdir))
    names: list[str] = []
    for name in subjects:
        why = _check_subject_name(name)
        if why:
            raise InvalidInput("subjects", "relative file names inside the report directory", name,
                               f"Rejected because {why}.")
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
        if name == REQUIRED_SUBJECT:
            try:
                report_bytes = path.read_bytes()
            except FileNotFoundError:
                raise InvalidInput("report_dir", f"a directory containing {REQUIRED_SUBJECT}", str(rdir),
                                   "Write the report before signing it.") from None
            except IsADirectoryError:
                raise InvalidInput("report_dir", f"a directory containing {REQUIRED_SUBJECT}", str(rdir)) from None
            digests[name] = hashlib.sha256(report_bytes).hexdigest()
        elif path.is_file():
            digests[name] = _sha256_file(path)

    if predicate is None:
        try:
            report = json.loads(report_bytes.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise InvalidInput("report.json", "a valid UTF-8 JSON document", str(rdir / REQUIRED_SUBJECT),
                               f"Parsing failed: {exc}.") from None
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
        "predicateType": PREDICATE_TYPE,
        "predicate": predicate,
    }
    payload = canonical_json(statement)

    key = _load_private_key(private_key_path, passphrase)
    public = key.public_key()
    sig = key.sign(pae(PAYLOAD_TYPE, payload))
    del key
    public.verify(sig, pae(PAYLOAD_TYPE, payload))  # self-check before writing anything

    envelope = {"payload": _b64(payload), "payloadType": PAYLOAD_TYPE,
                "signatures": [{"keyid": keyid(public), "sig": _b64(sig)}]}
    # indent=2 puts each field on its own line, which the openssl recipe relies on.
    text = json.dumps(envelope, indent=2, sort_keys=True) + "\n"
    return write_atomic(rdir / ENVELOPE_NAME, text)


# ----------------------------------------------------------------------------------------
# Verification


def verify_report(report_dir: str | os.PathLike, public_key_path: str | os.PathLike) -> VerificationResult:
    """Verify ``report_dir/report.dsse.json`` with the given public key and every signed file.

    Checks, in order: the envelope parses and has the DSSE fields; ``payloadType`` is in-toto;
    an Ed25519 signature over the PAE verifies with ``public_key_path``; the payload is an
    in-toto Statement v1 of our predicate type whose subjects are safe relative names
    including ``report.json``; each subject file exists and has the signed SHA-256.

    Raises :class:`VerificationError` (one sentence saying what failed), or
    :class:`~certify.errors.InvalidInput` if the public key file itself is unusable.
    """
    rdir = Path(report_dir)
    env_path = rdir / ENVELOPE_NAME
    public = _load_public_key(public_key_path)
    kid = keyid(public)

    # 1. The envelope.
    if not env_path.is_file():
        raise VerificationError(f"The signed envelope {ENVELOPE_NAME} is missing from {rdir}.")
    if env_path.stat().st_size > _MAX_ENVELOPE_BYTES:
        raise VerificationError(f"The envelope {ENVELOPE_NAME} is larger than "
                                f"{_MAX_ENVELOPE_BYTES // (1024 * 1024)} MiB, far beyond any report's.")
    env = _strict_loads(env_path.read_bytes(), f"envelope {ENVELOPE_NAME}")
    if not isinstance(env, dict):
        raise VerificationError(f"The envelope {ENVELOPE_NAME} is not a JSON object.")
    for fname in ("payload", "payloadType"):
        if not isinstance(env.get(fname), str):
            raise VerificationError(f"The envelope has no string field {fname!r}.")
    sigs = env.get("signatures")
    if not isinstance(sigs, list) or not sigs:
        raise VerificationError("The envelope has no signatures.")
    for s in sigs:
        if not isinstance(s, dict) or not isinstance(s.get("sig"), str) or \
                not isinstance(s.get("keyid", ""), str):
            raise VerificationError("The envelope has a signature entry without a string 'sig' field.")
    if env["payloadType"] != PAYLOAD_TYPE:
        raise VerificationError(f"The envelope's payloadType is {env['payloadType']!r}, "
                                f"not {PAYLOAD_TYPE!r}.")

    # 2. The signature (before anything in the payload is trusted).
    payload = _unb64(env["payload"], "payload")
    message = pae(PAYLOAD_TYPE, payload)
    from cryptography.exceptions import InvalidSignature

    verified = False
    for s in sigs:
        sig = _unb64(s["sig"], "signature")
        if len(sig) != 64:
            continue
        try:
            public.verify(sig, message)
        except InvalidSignature:
            continue
        verified = True
        break
    if not verified:
        others = [s.get("keyid") for s in sigs if s.get("keyid")]
        if others and kid not in others:
            raise VerificationError(f"The report was signed by a different key ({others[0]}), "
                                    f"not by {public_key_path} ({kid}).")
        raise VerificationError(f"The signature does not verify with {public_key_path}: the signed "
                                f"statement or the signature was changed after signing, or the key is wrong.")

    # 3. The statement.
    statement = _strict_loads(payload, "signed statement")
    if not isinstance(statement, dict) or statement.get("_type") != STATEMENT_TYPE:
        raise VerificationError(f"The signed payload is not an in-toto Statement v1 ({STATEMENT_TYPE}).")
    if statement.get("predicateType") != PREDICATE_TYPE:
        raise VerificationError(f"The signed statement's predicateType is "
                                f"{statement.get('predicateType')!r}, not {PREDICATE_TYPE!r}.")
    subjects = statement.get("subject")
    if not isinstance(subjects, list) or not subjects:
        raise VerificationError("The signed statement lists no subjects.")
    wanted: list[tuple[str, str]] = []
    for sub in subjects:
        name = sub.get("name") if isinstance(sub, dict) else None
        why = _check_subject_name(name)
        if why:
            raise VerificationError(f"The signed statement names an unexpected subject {name!r}: {why}.")
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
            raise VerificationError(f"The signed subject {name!r} resolves outside {rdir} (through a symlink).")
        if not path.is_file():
            raise VerificationError(f"The signed file {name} is missing from {rdir}.")
        got = _sha256_file(path)
        if got != sha:
            raise VerificationError(f"The file {name} was modified after signing: its SHA-256 is {got}, "
                                    f"but the signature covers {sha}.")

    covered = {n for n, _ in wanted}
    not_covered = tuple(n for n in DEFAULT_SUBJECTS if n not in covered and (rdir / n).is_file())
    try:
        canonical = canonical_json(statement) == payload
    except InvalidInput:
        canonical = False
    return VerificationResult(report_dir=rdir, keyid=kid, statement=statement, subjects=tuple(wanted),
                              not_covered=not_covered, payload_canonical=canonical)


# ----------------------------------------------------------------------------------------
# Verifying with nothing but bash, printf, base64, sha256sum and OpenSSL >= 3.0.

OPENSSL_VERIFY_SCRIPT = r"""#!/usr/bin/env bash
# Verify an unlearn-audit signed report with bash, printf, base64, sha256sum and openssl (>= 3.0).
# Usage, from an empty scratch directory:  DIR=path/to/report PUB=path/to/public.pem bash verify-report.sh
# PUB must be the signer's public key obtained out of band (never a key shipped with the report).
set -eu
export LC_ALL=C
DIR=${DIR:?set DIR to the report directory}
PUB=${PUB:?set PUB to the signer public key PEM}
TYPE='application/vnd.in-toto+json'

# 1. Read payload, payloadType and signature from the envelope (the toolkit writes one field per line).
payload='' ptype='' sig=''
while IFS= read -r line; do
  case $line in
    *'"payload": "'*)     payload=${line#*'"payload": "'};   payload=${payload%%'"'*} ;;
    *'"payloadType": "'*) ptype=${line#*'"payloadType": "'}; ptype=${ptype%%'"'*} ;;
    *'"sig": "'*)         sig=${line#*'"sig": "'};           sig=${sig%%'"'*} ;;
  esac
done < "$DIR/report.dsse.json"
[ "$ptype" = "$TYPE" ] || { echo "FAIL: payloadType is '$ptype', not $TYPE" >&2; exit 1; }

# 2. Decode the signed statement and the signature.
printf '%s' "$payload" | base64 -d > statement.json
printf '%s' "$sig" | base64 -d > sig.bin

# 3. Rebuild the DSSE pre-authentication encoding and check the Ed25519 signature.
stmt=$(< statement.json)
printf 'DSSEv1 %d %s %d %s' "${#TYPE}" "$TYPE" "${#stmt}" "$stmt" > pae.bin
openssl pkeyutl -verify -pubin -inkey "$PUB" -rawin -in pae.bin -sigfile sig.bin

# 4. Recompute the SHA-256 of every signed file and compare it with the signed digest.
rest=${stmt##*'"subject":['}
n=0
while [ "${rest#*'{"digest":{"sha256":"'}" != "$rest" ]; do
  rest=${rest#*'{"digest":{"sha256":"'}; want=${rest%%'"'*}
  rest=${rest#*'"name":"'};              name=${rest%%'"'*}
  case $name in /*|*..*|'') echo "FAIL: unexpected subject name '$name'" >&2; exit 1 ;; esac
  [ -f "$DIR/$name" ] || { echo "FAIL: $name is missing" >&2; exit 1; }
  got=$(sha256sum < "$DIR/$name"); got=${got%% *}
  [ "$got" = "$want" ] || { echo "FAIL: $name was modified (sha256 $got, signed $want)" >&2; exit 1; }
  echo "OK $name $got"
  n=$((n + 1))
done
[ "$n" -gt 0 ] || { echo "FAIL: the statement lists no subjects" >&2; exit 1; }
echo "Verified: signature and $n file digest(s)."
"""
