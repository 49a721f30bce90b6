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
            raise OSError("disk full")
        os.link(tmp, final)

    monkeypatch.setattr(keys, "_link_no_clobber", boom)
    with pytest.raises(OSError, match="disk full"):
        generate_keypair(tmp_path)
    assert list(tmp_path.iterdir()) == []
