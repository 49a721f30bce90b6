"""Ed25519 keys for signing reports: generation (private key created with mode 0600, never
overwritten), loading (PEM, optionally passphrase-protected; a private key file that group or
others can access is refused, as OpenSSH refuses it) and the keyid.

Private key material is never written into a report, an envelope, an error message or a log.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import shlex
import stat
from pathlib import Path

from certify.errors import InvalidInput

__all__ = ["PRIVATE_KEY_NAME", "PUBLIC_KEY_NAME", "generate_keypair", "keyid", "load_private_key"]

PRIVATE_KEY_NAME = "private.pem"
PUBLIC_KEY_NAME = "public.pem"


def generate_keypair(
    out_dir: str | os.PathLike, *, passphrase: bytes | None = None, field: str = "out"
) -> tuple[Path, Path]:
    """Create an Ed25519 key pair in ``out_dir``: ``private.pem`` and ``public.pem``.

    The private key is PKCS#8 PEM (encrypted with the best available scheme when
    ``passphrase`` is given) in a file created new (``O_CREAT | O_EXCL``) with mode 0600 and
    set to exactly 0600, so it is never readable by others, not even for an instant, whatever
    the umask or any file left behind. The public key is SubjectPublicKeyInfo PEM, mode 0644.
    ``out_dir`` is created with mode 0700 if missing. Existing keys are never overwritten. Both
    files are written to temporary names and then linked into place, so a failure leaves
    neither a partial nor a lone key behind.

    Raises :class:`~certify.errors.InvalidInput` naming ``field`` (the CLI's ``--out``) when a
    key exists already or the directory cannot be created or written (read-only, a path under
    a regular file, a directory in the place of a key file).

    Returns ``(private_path, public_path)``.
    """
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    if passphrase is not None and (not isinstance(passphrase, bytes) or not passphrase):
        raise InvalidInput("passphrase", "non-empty bytes or None", "<redacted>")
    out = Path(out_dir)
    try:
        if out.exists() and not out.is_dir():
            raise InvalidInput(field, "a directory for the key files", str(out), "It exists and is not a directory.")
        out.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:  # read-only parent, a regular file somewhere along the path, ...
        raise _unwritable(field, out, exc) from None
    priv_path, pub_path = out / PRIVATE_KEY_NAME, out / PUBLIC_KEY_NAME
    for p in (priv_path, pub_path):
        if os.path.lexists(p):
            kind = " (as a directory)" if p.is_dir() else ""
            raise InvalidInput(
                field,
                "a directory without an existing key pair",
                str(out),
                f"{p.name} already exists{kind}; refusing to overwrite a key.",
            )

    key = Ed25519PrivateKey.generate()
    encryption = serialization.BestAvailableEncryption(passphrase) if passphrase else serialization.NoEncryption()
    priv_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption)
    pub_pem = key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
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
        raise InvalidInput(
            field,
            "a directory without an existing key pair",
            str(out),
            "A key file appeared while writing; refusing to overwrite it.",
        ) from None
    except OSError as exc:
        for p in created:
            p.unlink(missing_ok=True)
        raise _unwritable(field, out, exc) from None
    except BaseException:
        for p in created:
            p.unlink(missing_ok=True)
        raise
    finally:
        for t in tmps:
            t.unlink(missing_ok=True)
    return priv_path, pub_path


def _unwritable(field: str, out: Path, exc: OSError) -> InvalidInput:
    return InvalidInput(
        field,
        "a directory where the key files can be created",
        str(out),
        f"Writing there failed: {exc.strerror or exc}.",
    )


def _write_new(directory: Path, data: bytes, mode: int) -> Path:
    """Write ``data`` to a fresh hidden file in ``directory`` with exactly ``mode``; fsync it.

    ``O_EXCL`` guarantees the file is new, so a file left behind under the same name (with a
    looser mode, or a symlink planted there) is never reused; a few fresh names are tried.
    """
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    for attempt in range(8):
        path = directory / f".keygen-{secrets.token_hex(8)}.tmp"
        try:
            fd = os.open(path, flags, mode)
        except FileExistsError:
            if attempt == 7:
                raise
            continue
        break
    try:
        with os.fdopen(fd, "wb") as fh:
            # The umask can only have removed bits; set the mode exactly (0644 stays readable).
            if hasattr(os, "fchmod"):
                os.fchmod(fh.fileno(), mode)
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


_PRIVATE_ALLOWED = "an Ed25519 private key in PKCS#8 PEM (as written by generate_keypair)"


def _check_private_mode(path: Path, mode: int, field: str) -> None:
    """Refuse a private key file that group or others may access, as OpenSSH does.

    A key others can read may already be copied; refusing (rather than warning) makes the
    owner notice and fix it. Windows has no such mode bits, so the check is POSIX only.
    """
    if os.name == "nt" or not mode & 0o077:
        return
    raise InvalidInput(
        field,
        "a private key file that only its owner can access (mode 0600 or 0400)",
        f"{path} (mode {stat.S_IMODE(mode):04o})",
        f"Like OpenSSH, the toolkit refuses a private key that group or others can access; "
        f"fix it with `chmod 600 {shlex.quote(str(path))}`.",
    )


def _load_private_key(path: str | os.PathLike, passphrase: bytes | None, field: str = "private_key_path"):
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    p = Path(path)
    try:
        # Checked before opening: opening a FIFO would block, a device could be endless.
        if not stat.S_ISREG(os.stat(p).st_mode):
            raise InvalidInput(field, _PRIVATE_ALLOWED, str(p), "It is not a regular file.")
        with open(p, "rb") as fh:
            # The mode is read from the open file, so it is the mode of the bytes we read.
            st = os.fstat(fh.fileno())
            _check_private_mode(p, st.st_mode, field)
            data = fh.read()
    except OSError as exc:
        raise InvalidInput(field, _PRIVATE_ALLOWED, str(p), f"The file cannot be read ({exc.strerror}).") from None
    try:
        key = serialization.load_pem_private_key(data, password=passphrase)
    except TypeError:
        hint = (
            "The key is encrypted: give its passphrase."
            if passphrase is None
            else "The key is not encrypted: give no passphrase."
        )
        raise InvalidInput(field, _PRIVATE_ALLOWED, str(p), hint) from None
    except Exception:  # never chain the cause into the message or traceback
        raise InvalidInput(
            field, _PRIVATE_ALLOWED, str(p), "The file is not such a key, or the passphrase is wrong."
        ) from None
    if not isinstance(key, Ed25519PrivateKey):
        raise InvalidInput(field, _PRIVATE_ALLOWED, str(p), "The key is not an Ed25519 key.")
    return key


def load_private_key(path: str | os.PathLike, passphrase: bytes | None = None, *, field: str = "private_key_path"):
    """Load an Ed25519 private key (raises InvalidInput with one sentence when unusable).

    ``field`` is the name the error gives the key (the CLI passes the flag the user typed,
    ``--sign-key`` or ``--key``). A key file that group or others can access is refused.
    """
    return _load_private_key(path, passphrase, field)


def _load_public_key(path: str | os.PathLike, field: str = "public_key_path"):
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    p = Path(path)
    allowed = "an Ed25519 public key in SubjectPublicKeyInfo PEM (public.pem from keygen)"
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise InvalidInput(field, allowed, str(p), f"The file cannot be read ({exc.strerror}).") from None
    if b"PRIVATE KEY-----" in data:
        raise InvalidInput(
            field,
            allowed,
            str(p),
            "This is a private key: verify with the public key, and keep the private one secret.",
        )
    try:
        key = serialization.load_pem_public_key(data)
    except Exception:
        raise InvalidInput(field, allowed, str(p), "The file is not a PEM public key.") from None
    if not isinstance(key, Ed25519PublicKey):
        raise InvalidInput(field, allowed, str(p), "The key is not an Ed25519 key.")
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
