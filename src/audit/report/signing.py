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

import base64
import binascii
import hashlib
import json
import math
import os
import re
import secrets
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath
from typing import Any, Sequence

from certify.errors import InvalidInput

from . import TOOL, tool_version, write_atomic

__all__ = [
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
PAYLOAD_TYPE = "application/vnd.in-toto+json"
STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE = "https://unlearn-audit.dev/audit-claims/v1"
PRIVATE_KEY_NAME = "private.pem"
PUBLIC_KEY_NAME = "public.pem"

_MAX_ENVELOPE_BYTES = 16 * 1024 * 1024
_SHA256_HEX = re.compile(r"[0-9a-f]{64}")
_B64 = re.compile(r"[A-Za-z0-9+/]*={0,2}")
_MAX_SAFE_INT = 2**53 - 1


class VerificationError(Exception):
    """A signed report failed verification; the message is one sentence saying what failed."""


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


def pae(payload_type: str, payload: bytes) -> bytes:
    """DSSE v1 pre-authentication encoding: the exact bytes that are signed."""
    t = payload_type.encode("utf-8")
    return b"DSSEv1 %d %s %d %s" % (len(t), t, len(payload), payload)


def canonical_json(obj: Any) -> bytes:
    """RFC 8785 (JCS) canonical UTF-8 bytes of ``obj``.

    Uses the ``rfc8785`` package when it is installed, otherwise :func:`_jcs_fallback`.
    Non-finite floats and integers beyond ±(2**53 - 1) are not representable and raise
    :class:`~certify.errors.InvalidInput`.
    """
    try:
        import rfc8785
    except ImportError:  # pragma: no cover - exercised through _jcs_fallback directly
        return _jcs_fallback(obj)
    try:
        return rfc8785.dumps(obj)
    except rfc8785.CanonicalizationError as exc:
        raise InvalidInput("predicate", "JSON with finite numbers and integers within ±(2**53 - 1)",
                           type(exc).__name__) from None


def _jcs_fallback(obj: Any) -> bytes:
    """Minimal RFC 8785 canonicaliser, adequate for statements (dicts, lists, str, bool, None,
    integers within ±(2**53 - 1), finite floats).

    Keys are sorted by UTF-16 code units; strings are escaped as ``json.dumps(...,
    ensure_ascii=False)`` does, which matches JCS (short escapes for ``\\b\\t\\n\\f\\r``,
    lowercase ``\\u00xx`` for other control characters, everything else literal); numbers
    use the ECMAScript ``Number.prototype.toString`` form built from Python's shortest
    round-trip ``repr``.
    """
    out: list[str] = []

    def emit(v: Any) -> None:
        if v is None:
            out.append("null")
        elif v is True:
            out.append("true")
        elif v is False:
            out.append("false")
        elif isinstance(v, int):
            if abs(v) > _MAX_SAFE_INT:
                raise InvalidInput("predicate", "integers within ±(2**53 - 1)", v,
                                   "Encode large integers (seeds, counters) as strings.")
            out.append(str(v))
        elif isinstance(v, float):
            out.append(_es_number(v))
        elif isinstance(v, str):
            out.append(json.dumps(v, ensure_ascii=False))
        elif isinstance(v, dict):
            for k in v:
                if not isinstance(k, str):
                    raise InvalidInput("predicate", "an object with string keys", k)
            out.append("{")
            for i, k in enumerate(sorted(v, key=lambda s: s.encode("utf-16-be", "surrogatepass"))):
                if i:
                    out.append(",")
                out.append(json.dumps(k, ensure_ascii=False))
                out.append(":")
                emit(v[k])
            out.append("}")
        elif isinstance(v, (list, tuple)):
            out.append("[")
            for i, item in enumerate(v):
                if i:
                    out.append(",")
                emit(item)
            out.append("]")
        else:
            raise InvalidInput("predicate", "JSON-serialisable values", type(v).__name__)

    emit(obj)
    try:
        return "".join(out).encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput("predicate", "strings without lone surrogates", "a lone surrogate") from None


def _es_number(x: float) -> str:
    """ECMAScript Number::toString of a finite double (RFC 8785 §3.2.2.3)."""
    if not math.isfinite(x):
        raise InvalidInput("predicate", "finite numbers", x, 'Encode ∞ and NaN as strings ("inf", "nan").')
    if x == 0:
        return "0"
    if x < 0:
        return "-" + _es_number(-x)
    mant, _, exp = repr(x).partition("e")
    ip, _, fp = mant.partition(".")
    digits = (ip + fp).lstrip("0")
    e10 = (int(exp) if exp else 0) - len(fp)
    stripped = digits.rstrip("0")
    e10 += len(digits) - len(stripped)
    s, k = stripped, len(stripped)
    n = e10 + k  # x = 0.s × 10**n
    if k <= n <= 21:
        return s + "0" * (n - k)
    if 0 < n <= 21:
        return s[:n] + "." + s[n:]
    if -6 < n <= 0:
        return "0." + "0" * (-n) + s
    e = n - 1
    sign = "+" if e >= 0 else "-"
    return (s if k == 1 else s[0] + "." + s[1:]) + "e" + sign + str(abs(e))


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _unb64(text: str, what: str) -> bytes:
    if not isinstance(text, str) or len(text) % 4 or not _B64.fullmatch(text):
        raise VerificationError(f"The envelope's {what} is not valid standard base64.")
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise VerificationError(f"The envelope's {what} is not valid standard base64.") from None


# ----------------------------------------------------------------------------------------
# Keys


def generate_keypair(out_dir: str | os.PathLike, *, passphrase: bytes | None = None) -> tuple[Path, Path]:
    """Create an Ed25519 key pair in ``out_dir``: ``private.pem`` and ``public.pem``.

    The private key is PKCS#8 PEM (encrypted with the best available scheme when
    ``passphrase`` is given), created with ``os.open(..., 0o600)`` so it is never readable by
    others, not even for an instant. The public key is SubjectPublicKeyInfo PEM. ``out_dir`` is
    created with mode 0700 if missing. Existing keys are never overwritten
    (:class:`~certify.errors.InvalidInput`). Both files are written to temporary names and then
    linked into place, so a failure leaves neither a partial nor a lone key behind.

    Returns ``(private_path, public_path)``.
    """
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    if passphrase is not None and (not isinstance(passphrase, bytes) or not passphrase):
        raise InvalidInput("passphrase", "non-empty bytes or None", "<redacted>")
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise InvalidInput("out_dir", "a directory", str(out))
    out.mkdir(mode=0o700, parents=True, exist_ok=True)
    priv_path, pub_path = out / PRIVATE_KEY_NAME, out / PUBLIC_KEY_NAME
    for p in (priv_path, pub_path):
        if os.path.lexists(p):
            raise InvalidInput("out_dir", "a directory without an existing key pair", str(out),
                               f"{p.name} already exists; refusing to overwrite a key.")

    key = Ed25519PrivateKey.generate()
    encryption = (serialization.BestAvailableEncryption(passphrase) if passphrase
                  else serialization.NoEncryption())
    priv_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption)
    pub_pem = key.public_key().public_bytes(serialization.Encoding.PEM,
                                            serialization.PublicFormat.SubjectPublicKeyInfo)
    del key

    created: list[Path] = []
    tmps: list[Path] = []
    try:
        tmp_priv = _write_new(out, priv_pem, 0o600)
        tmps.append(tmp_priv)
        tmp_pub = _write_new(out, pub_pem, 0o644)
        tmps.append(tmp_pub)
        for tmp, final in ((tmp_priv, priv_path), (tmp_pub, pub_path)):
            _link_no_clobber(tmp, final)
            created.append(final)
    except FileExistsError:
        for p in created:
            p.unlink(missing_ok=True)
        raise InvalidInput("out_dir", "a directory without an existing key pair", str(out),
                           "A key file appeared while writing; refusing to overwrite it.") from None
    except BaseException:
        for p in created:
            p.unlink(missing_ok=True)
        raise
    finally:
        for t in tmps:
            t.unlink(missing_ok=True)
    return priv_path, pub_path


def _write_new(directory: Path, data: bytes, mode: int) -> Path:
    """Write ``data`` to a fresh hidden file in ``directory`` created with ``mode``; fsync it."""
    path = directory / f".keygen-{secrets.token_hex(8)}.tmp"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), mode)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    return path


def _link_no_clobber(tmp: Path, final: Path) -> None:
    """Give ``tmp`` the name ``final`` atomically, failing with FileExistsError if it exists."""
    try:
        os.link(tmp, final)
    except FileExistsError:
        raise
    except OSError:  # filesystem without hard links: check-then-rename (not race-free)
        if os.path.lexists(final):
            raise FileExistsError(str(final)) from None
        os.rename(tmp, final)


def _load_private_key(path: str | os.PathLike, passphrase: bytes | None):
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    p = Path(path)
    allowed = "an Ed25519 private key in PKCS#8 PEM (as written by generate_keypair)"
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise InvalidInput("private_key_path", allowed, str(p),
                           f"The file cannot be read ({exc.strerror}).") from None
    try:
        key = serialization.load_pem_private_key(data, password=passphrase)
    except TypeError:
        hint = ("The key is encrypted: give its passphrase." if passphrase is None
                else "The key is not encrypted: give no passphrase.")
        raise InvalidInput("private_key_path", allowed, str(p), hint) from None
    except Exception:  # never chain the cause into the message or traceback
        raise InvalidInput("private_key_path", allowed, str(p),
                           "The file is not such a key, or the passphrase is wrong.") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise InvalidInput("private_key_path", allowed, str(p), "The key is not an Ed25519 key.")
    return key


def load_private_key(path: str | os.PathLike, passphrase: bytes | None = None):
    """Load an Ed25519 private key (raises InvalidInput with one sentence when unusable)."""
    return _load_private_key(path, passphrase)


def _load_public_key(path: str | os.PathLike):
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    p = Path(path)
    allowed = "an Ed25519 public key in SubjectPublicKeyInfo PEM (public.pem from keygen)"
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise InvalidInput("public_key_path", allowed, str(p),
                           f"The file cannot be read ({exc.strerror}).") from None
    if b"PRIVATE KEY-----" in data:
        raise InvalidInput("public_key_path", allowed, str(p),
                           "This is a private key: verify with the public key, and keep the private one secret.")
    try:
        key = serialization.load_pem_public_key(data)
    except Exception:
        raise InvalidInput("public_key_path", allowed, str(p), "The file is not a PEM public key.") from None
    if not isinstance(key, Ed25519PublicKey):
        raise InvalidInput("public_key_path", allowed, str(p), "The key is not an Ed25519 key.")
    return key


def keyid(public_key) -> str:
    """``sha256:`` + hex SHA-256 of the public key's SubjectPublicKeyInfo DER.

    Same as ``openssl pkey -pubin -in public.pem -outform DER | sha256sum``.
    Accepts a key object or a path to a public PEM.
    """
    from cryptography.hazmat.primitives import serialization

    if isinstance(public_key, (str, os.PathLike)):
        public_key = _load_public_key(public_key)
    der = public_key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return "sha256:" + hashlib.sha256(der).hexdigest()


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
    return _jsonable(claims)


def _jsonable(obj: Any) -> Any:
    """Make ``obj`` representable in RFC 8785 JSON (see :func:`headline_claims`)."""
    if isinstance(obj, bool) or obj is None or isinstance(obj, str):
        return obj
    if isinstance(obj, int):
        return obj if abs(obj) <= _MAX_SAFE_INT else str(obj)
    if isinstance(obj, float):
        if math.isfinite(obj):
            return obj
        return "nan" if math.isnan(obj) else ("inf" if obj > 0 else "-inf")
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    return str(obj)


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
        predicate = _jsonable(predicate)

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


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for k, v in pairs:
        if k in seen:
            raise _DuplicateKey(k)
        seen[k] = v
    return seen


class _DuplicateKey(ValueError):
    pass


def _reject_constant(token: str) -> Any:
    raise ValueError(f"non-standard JSON token {token}")


def _strict_loads(data: bytes, what: str) -> Any:
    try:
        return json.loads(data.decode("utf-8"), object_pairs_hook=_no_duplicates,
                          parse_constant=_reject_constant)
    except UnicodeDecodeError:
        raise VerificationError(f"The {what} is not UTF-8 text.") from None
    except _DuplicateKey as exc:
        raise VerificationError(f"The {what} repeats the key {exc.args[0]!r}, which makes it ambiguous.") from None
    except json.JSONDecodeError as exc:
        raise VerificationError(f"The {what} is not valid JSON ({exc.msg} at line {exc.lineno} "
                                f"column {exc.colno}), so it was truncated or corrupted.") from None
    except ValueError as exc:
        raise VerificationError(f"The {what} is not valid JSON ({exc}).") from None


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
