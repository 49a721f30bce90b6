"""Signing keys (audit.report.keys): Ed25519 key pairs created with mode 0600, never overwritten,
never half-written."""

from __future__ import annotations

import os
import stat

import pytest

pytest.importorskip("cryptography")

from cryptography.hazmat.primitives import serialization  # noqa: E402
from cryptography.hazmat.primitives.asymmetric.ed25519 import (  # noqa: E402
    Ed25519PrivateKey,
    Ed25519PublicKey,
)

from audit.report import keys  # noqa: E402
from audit.report.keys import generate_keypair  # noqa: E402
from certify.errors import InvalidInput  # noqa: E402


def test_keygen_modes_and_contents(tmp_path):
    old = os.umask(0)  # a permissive umask must not loosen the private key
    try:
        priv, pub = generate_keypair(tmp_path / "k")
    finally:
        os.umask(old)
    assert stat.S_IMODE(priv.stat().st_mode) == 0o600
    assert stat.S_IMODE(pub.stat().st_mode) == 0o644
    assert stat.S_IMODE((tmp_path / "k").stat().st_mode) == 0o700
    assert priv.read_bytes().startswith(b"-----BEGIN PRIVATE KEY-----\n")
    assert pub.read_bytes().startswith(b"-----BEGIN PUBLIC KEY-----\n")
    sk = serialization.load_pem_private_key(priv.read_bytes(), password=None)
    pk = serialization.load_pem_public_key(pub.read_bytes())
    assert isinstance(sk, Ed25519PrivateKey) and isinstance(pk, Ed25519PublicKey)
    raw = serialization.Encoding.Raw, serialization.PublicFormat.Raw
    assert sk.public_key().public_bytes(*raw) == pk.public_bytes(*raw)
    assert sorted(p.name for p in (tmp_path / "k").iterdir()) == ["private.pem", "public.pem"]


def test_keygen_refuses_to_overwrite(tmp_path):
    priv, pub = generate_keypair(tmp_path)
    before = priv.read_bytes(), pub.read_bytes()
    with pytest.raises(InvalidInput, match="refusing to overwrite"):
        generate_keypair(tmp_path)
    assert (priv.read_bytes(), pub.read_bytes()) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["private.pem", "public.pem"]


def test_keygen_with_lone_public_key_writes_nothing(tmp_path):
    (tmp_path / "public.pem").write_text("someone else's key\n")
    with pytest.raises(InvalidInput):
        generate_keypair(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["public.pem"]
    assert (tmp_path / "public.pem").read_text() == "someone else's key\n"


def test_keygen_failure_leaves_nothing(tmp_path, monkeypatch):
    def boom(tmp, final):
        if final.name == "public.pem":
            raise OSError(28, "No space left on device")
        os.link(tmp, final)

    monkeypatch.setattr(keys, "_link_no_clobber", boom)
    with pytest.raises(InvalidInput, match="No space left on device") as info:
        generate_keypair(tmp_path)
    assert info.value.field == "out"
    assert list(tmp_path.iterdir()) == []


# ----------------------------------------------------------------------------------------
# modes: the private key is 0600 however it comes about


@pytest.mark.parametrize("umask", [0o000, 0o022, 0o077])
def test_keygen_sets_exact_modes_whatever_the_umask(tmp_path, umask):
    old = os.umask(umask)
    try:
        priv, pub = generate_keypair(tmp_path / "k")
    finally:
        os.umask(old)
    assert stat.S_IMODE(priv.stat().st_mode) == 0o600
    assert stat.S_IMODE(pub.stat().st_mode) == 0o644


def test_keygen_never_reuses_a_file_left_under_its_temporary_name(tmp_path, monkeypatch):
    """A stale world-readable file (or a planted one) at the temporary name is not written into."""
    out = tmp_path / "k"
    out.mkdir(mode=0o700)
    stale = out / ".keygen-0000000000000000.tmp"
    stale.write_text("stale\n")
    os.chmod(stale, 0o644)
    names = iter(["0000000000000000", "1111111111111111", "2222222222222222"])
    monkeypatch.setattr(keys.secrets, "token_hex", lambda n: next(names))
    priv, pub = generate_keypair(out)
    assert stat.S_IMODE(priv.stat().st_mode) == 0o600
    assert priv.read_bytes().startswith(b"-----BEGIN PRIVATE KEY-----")
    assert stale.read_text() == "stale\n" and stat.S_IMODE(stale.stat().st_mode) == 0o644
    assert not os.path.samefile(stale, priv)


def test_keygen_refuses_a_directory_in_place_of_the_private_key(tmp_path):
    (tmp_path / "private.pem").mkdir()
    with pytest.raises(InvalidInput, match=r"private\.pem already exists \(as a directory\)") as info:
        generate_keypair(tmp_path)
    assert info.value.field == "out"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["private.pem"]


# ----------------------------------------------------------------------------------------
# unwritable targets: one sentence naming out, never an OSError


def test_keygen_under_a_regular_file_is_invalid_input(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(InvalidInput) as info:
        generate_keypair(tmp_path / "file" / "keys")
    assert info.value.field == "out" and "Writing there failed: Not a directory" in str(info.value)
    with pytest.raises(InvalidInput) as info:
        generate_keypair(tmp_path / "file")
    assert info.value.field == "out" and "not a directory" in str(info.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]


def test_keygen_in_a_read_only_directory_is_invalid_input(tmp_path, monkeypatch):
    # chmod 555 does not stop root, so the refusal the kernel would give is simulated.
    def denied(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(keys.os, "open", denied)
    with pytest.raises(InvalidInput, match="Writing there failed: Permission denied") as info:
        generate_keypair(tmp_path)
    assert info.value.field == "out" and str(info.value).startswith("out must be ")
    assert list(tmp_path.iterdir()) == []


def test_keygen_in_a_directory_that_cannot_be_created_is_invalid_input(tmp_path, monkeypatch):
    def denied(self, *args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(keys.Path, "mkdir", denied)
    with pytest.raises(InvalidInput, match="Permission denied") as info:
        generate_keypair(tmp_path / "new", field="--out")
    assert str(info.value).startswith("--out must be ")


# ----------------------------------------------------------------------------------------
# loading: a private key that group or others can access is refused, as OpenSSH does


@pytest.fixture
def pair(tmp_path):
    return generate_keypair(tmp_path / "k")


@pytest.mark.skipif(os.name == "nt", reason="POSIX mode bits")
@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o660, 0o610, 0o601, 0o777])
def test_private_key_open_to_group_or_others_is_refused(pair, mode):
    priv, _ = pair
    os.chmod(priv, mode)
    with pytest.raises(InvalidInput) as info:
        keys.load_private_key(priv, field="--sign-key")
    msg = str(info.value)
    assert msg.startswith("--sign-key must be a private key file that only its owner can access")
    assert f"(mode {mode:04o})" in msg and f"chmod 600 {priv}" in msg
    assert "\n" not in msg and "BEGIN" not in msg
    assert info.value.field == "--sign-key"
    # The default name, for library callers.
    with pytest.raises(InvalidInput, match="^private_key_path must be"):
        keys.load_private_key(priv)


@pytest.mark.skipif(os.name == "nt", reason="POSIX mode bits")
@pytest.mark.parametrize("mode", [0o600, 0o400, 0o700])
def test_private_key_for_its_owner_only_loads(pair, mode):
    priv, _ = pair
    os.chmod(priv, mode)
    assert isinstance(keys.load_private_key(priv), Ed25519PrivateKey)


@pytest.mark.skipif(os.name == "nt", reason="POSIX mode bits")
def test_mode_hint_quotes_a_path_with_spaces(tmp_path):
    priv, _ = generate_keypair(tmp_path / "my keys")
    os.chmod(priv, 0o644)
    with pytest.raises(InvalidInput, match=r"chmod 600 '.*/my keys/private\.pem'"):
        keys.load_private_key(priv)


@pytest.mark.parametrize("where", ["directory", "fifo", "device"])
def test_private_key_that_is_not_a_regular_file_is_refused(tmp_path, where):
    path = {"directory": tmp_path, "fifo": tmp_path / "fifo", "device": "/dev/zero"}[where]
    if where == "device" and not os.path.exists(path):
        pytest.skip("no /dev/zero here")
    if where == "fifo":
        if not hasattr(os, "mkfifo"):
            pytest.skip("no FIFOs here")
        os.mkfifo(path)  # opening it would block: it must be refused before that
    with pytest.raises(InvalidInput, match="not a regular file") as info:
        keys.load_private_key(path, field="--key")
    assert info.value.field == "--key"
    with pytest.raises(InvalidInput, match="cannot be read"):
        keys.load_private_key(tmp_path / "missing.pem")
