"""DSSE v1 envelopes (https://github.com/secure-systems-lab/dsse) on ``securesystemslib``.

``securesystemslib.dsse.Envelope`` holds an envelope and computes its pre-authentication
encoding (:func:`pae`); ``securesystemslib.signer.CryptoSigner`` signs it and ``SSlibKey``
(scheme ``ed25519``) verifies it. The Ed25519 signature covers::

    b"DSSEv1 <len(payloadType)> <payloadType> <len(payload)> <payload>"

where the payload is the RFC 8785 canonical statement (:mod:`audit.report.canonical`).

What this module adds is the reading a verifier needs, because the library's own is made for
trusted input: ``Envelope.from_dict`` raises ``KeyError``/``TypeError``/``AttributeError`` on
wrong shapes and falls back to URL-safe base64, and ``Envelope.verify`` skips every signature
whose keyid differs from the key's, although DSSE makes the keyid an unauthenticated hint
(securesystemslib issue #416). :func:`parse_envelope` turns every malformed envelope into a
:class:`VerificationError` of one sentence, and :func:`verify_envelope` tries every signature.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from typing import Any

from securesystemslib.dsse import Envelope
from securesystemslib.signer import Signature

__all__ = [
    "MAX_ENVELOPE_BYTES",
    "PAYLOAD_TYPE",
    "PREDICATE_TYPE",
    "COMPARISON_PREDICATE_TYPE",
    "STATEMENT_TYPE",
    "Envelope",
    "VerificationError",
    "envelope_json",
    "pae",
    "parse_envelope",
    "sign_envelope",
    "verify_envelope",
]

PAYLOAD_TYPE = "application/vnd.in-toto+json"
STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE = "https://unlearn-audit.dev/audit-claims/v1"
#: The claims of a comparison (``audit compare``): every method's certificate and the recommendation.
COMPARISON_PREDICATE_TYPE = "https://unlearn-audit.dev/comparison-claims/v1"
ED25519_SCHEME = "ed25519"

# A report's envelope is a few kilobytes; the bound keeps a hostile file from exhausting memory.
MAX_ENVELOPE_BYTES = 16 * 1024 * 1024

_B64 = re.compile(r"[A-Za-z0-9+/]*={0,2}")


class VerificationError(Exception):
    """A signed report failed verification; the message is one sentence saying what failed."""


def pae(payload_type: str, payload: bytes) -> bytes:
    """DSSE v1 pre-authentication encoding: the exact bytes that are signed."""
    return Envelope(payload, payload_type, {}).pae()


def sign_envelope(payload: bytes, private_key, *, keyid: str, payload_type: str = PAYLOAD_TYPE) -> Envelope:
    """A DSSE envelope of ``payload`` with one Ed25519 signature by ``private_key``.

    ``keyid`` is recorded as the signature's hint (the project's ``sha256:<hex of SPKI DER>``,
    :func:`audit.report.keys.keyid`). The signature is checked against the public key before
    the envelope is returned, so a broken signer can never write an unverifiable report.
    """
    from securesystemslib.signer import CryptoSigner, SSlibKey

    public = SSlibKey.from_crypto(private_key.public_key(), keyid=keyid, scheme=ED25519_SCHEME)
    envelope = Envelope(payload, payload_type, {})
    signature = envelope.sign(CryptoSigner(private_key, public))
    public.verify_signature(signature, envelope.pae())
    return envelope


def envelope_json(envelope: Envelope) -> str:
    """The envelope as written to ``report.dsse.json``: indented, sorted keys, final newline.

    Readers need not rely on the layout (the openssl script reads minified envelopes too); it
    is fixed so that signing the same statement twice gives the same file.
    """
    return json.dumps(envelope.to_dict(), indent=2, sort_keys=True) + "\n"


def verify_envelope(envelope: Envelope, public_key, *, keyid: str) -> Signature | None:
    """The first signature in ``envelope`` that ``public_key`` (Ed25519) verifies, else None.

    Every signature is tried whatever its keyid says: the keyid is not signed, so it may be
    missing, another tool's (securesystemslib's default keyid, say), or forged; only the
    signature decides.
    """
    from securesystemslib.exceptions import UnverifiedSignatureError
    from securesystemslib.signer import SSlibKey

    key = SSlibKey.from_crypto(public_key, keyid=keyid, scheme=ED25519_SCHEME)
    message = envelope.pae()
    for sig in envelope.signatures.values():
        try:
            # Relabel with our keyid: SSlibKey refuses a signature whose hint differs from its own.
            key.verify_signature(Signature(key.keyid, sig.signature), message)
        except UnverifiedSignatureError:  # also covers the library's VerificationError
            continue
        return sig
    return None


def parse_envelope(data: bytes, what: str = "envelope") -> Envelope:
    """Read a DSSE envelope strictly; any malformed input raises :class:`VerificationError`.

    Refused: more than :data:`MAX_ENVELOPE_BYTES`; not UTF-8 JSON (duplicate keys, ``NaN``,
    excessive nesting included); not an object; ``payload`` or ``payloadType`` not a string;
    ``signatures`` not a non-empty list of objects with a string ``sig`` and, if present, a
    string ``keyid``; base64 that is not standard padded base64; two signatures with the same
    keyid (a missing keyid counts as ``""``), which ``securesystemslib`` cannot hold apart.
    Unknown fields are kept (signature fields as ``unrecognized_fields``) or ignored.
    """
    if len(data) > MAX_ENVELOPE_BYTES:
        raise VerificationError(
            f"The {what} is larger than {MAX_ENVELOPE_BYTES // (1024 * 1024)} MiB, far beyond any report's."
        )
    env = _strict_loads(data, what)
    if not isinstance(env, dict):
        raise VerificationError(f"The {what} is not a JSON object.")
    for field in ("payload", "payloadType"):
        if not isinstance(env.get(field), str):
            raise VerificationError(f"The envelope has no string field {field!r}.")
    entries = env.get("signatures")
    if not isinstance(entries, list) or not entries:
        raise VerificationError("The envelope has no signatures.")
    signatures: dict[str, Signature] = {}
    for entry in entries:
        if not isinstance(entry, dict) or not isinstance(entry.get("sig"), str):
            raise VerificationError("The envelope has a signature entry without a string 'sig' field.")
        kid = entry.get("keyid", "")
        if not isinstance(kid, str):
            raise VerificationError("The envelope has a signature entry whose 'keyid' is not a string.")
        if kid in signatures:
            raise VerificationError(
                f"The envelope has two signatures with the keyid {short(kid)}, "
                f"which DSSE readers such as securesystemslib cannot tell apart."
            )
        raw = _unb64(entry["sig"], "signature")
        extra = {k: v for k, v in entry.items() if k not in ("keyid", "sig")}
        signatures[kid] = Signature(kid, raw.hex(), extra)
    return Envelope(_unb64(env["payload"], "payload"), env["payloadType"], signatures)


def short(text: str, limit: int = 80) -> str:
    """``repr`` of untrusted text for an error message, cut so that a hostile file cannot flood it."""
    return repr(text if len(text) <= limit else text[:limit] + "…")


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _unb64(text: str, what: str) -> bytes:
    # DSSE uses standard base64; the library's reader also takes URL-safe, which we refuse so
    # that one envelope has exactly one reading (the openssl script's base64 -d has only one).
    if not isinstance(text, str) or len(text) % 4 or not _B64.fullmatch(text):
        raise VerificationError(f"The envelope's {what} is not valid standard base64.")
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise VerificationError(f"The envelope's {what} is not valid standard base64.") from None


class _DuplicateKey(ValueError):
    pass


class _NonStandardToken(ValueError):
    pass


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for k, v in pairs:
        if k in seen:
            raise _DuplicateKey(k)
        seen[k] = v
    return seen


def _reject_constant(token: str) -> Any:
    raise _NonStandardToken(token)


def _strict_loads(data: bytes, what: str) -> Any:
    """Parse JSON as a verifier must: duplicate keys and NaN/Infinity are ambiguous, so refused."""
    if data.startswith(b"\xef\xbb\xbf"):
        raise VerificationError(f"The {what} starts with a byte-order mark, which JSON does not allow.")
    try:
        return json.loads(data.decode("utf-8"), object_pairs_hook=_no_duplicates, parse_constant=_reject_constant)
    except UnicodeDecodeError:
        raise VerificationError(f"The {what} is not UTF-8 text.") from None
    except RecursionError:  # e.g. '[' * 100000: the decoder recurses once per level
        raise VerificationError(f"The {what} nests arrays or objects too deeply to be read.") from None
    except _DuplicateKey as exc:
        raise VerificationError(f"The {what} repeats the key {short(exc.args[0])}, which makes it ambiguous.") from None
    except _NonStandardToken as exc:
        raise VerificationError(
            f"The {what} is not valid JSON (it holds the non-standard token {exc.args[0]})."
        ) from None
    except json.JSONDecodeError as exc:
        raise VerificationError(
            f"The {what} is not valid JSON ({exc.msg} at line {exc.lineno} "
            f"column {exc.colno}), so it was truncated or corrupted."
        ) from None
    except ValueError:  # e.g. an integer longer than Python's int-conversion limit
        raise VerificationError(f"The {what} is not valid JSON (it holds a number too long to read).") from None
