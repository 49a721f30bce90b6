"""Signed reports: keygen, DSSE/in-toto signing, verification, tampering, and openssl-only checks."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

pytest.importorskip("cryptography")

from cryptography.hazmat.primitives import serialization  # noqa: E402

from audit.report.signing import (  # noqa: E402
    ENVELOPE_NAME,
    OPENSSL_VERIFY_SCRIPT,
    PAYLOAD_TYPE,
    PREDICATE_TYPE,
    STATEMENT_TYPE,
    VerificationError,
    canonical_json,
    generate_keypair,
    keyid,
    pae,
    sign_report,
    verify_report,
)
from certify.errors import InvalidInput  # noqa: E402

REPORT = {
    "schema_version": "1.0",
    "created_at": "2026-01-02T03:04:05+00:00",
    "tool": {"name": "unlearn-audit", "version": "0.1.0"},
    "method": {"name": "r2d", "title": "Rewind-to-Delete (ε-certified)"},
    "certificate": {"method": "r2d", "epsilon": 1.0, "delta": 1e-05, "mechanism": "analytic",
                    "theorem": "Thm 3.1", "valid": True, "conditional": False, "sigma": 0.13},
    "realized": {"epsilon": 0.0123, "exceeds_certified": False, "bound_violated": False,
                 "bound_slack": "inf"},
    "verdict": "consistent",
    "seeds": {"root": 2**63 - 1},
}
HTML = "<!doctype html><html><body><h1>Audit — ε = 1</h1></body></html>\n"


# ----------------------------------------------------------------------------------------
# fixtures


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    return generate_keypair(tmp_path_factory.mktemp("keys"))


@pytest.fixture(scope="module")
def other_keys(tmp_path_factory):
    return generate_keypair(tmp_path_factory.mktemp("other-keys"))


def make_report(directory: Path, html: bool = True) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "report.json").write_text(json.dumps(REPORT, indent=2, sort_keys=True) + "\n",
                                           encoding="utf-8")
    if html:
        (directory / "report.html").write_text(HTML, encoding="utf-8")
    return directory


@pytest.fixture
def signed(tmp_path, keys):
    rdir = make_report(tmp_path / "run")
    sign_report(rdir, keys[0])
    return rdir


def read_envelope(rdir: Path) -> dict:
    return json.loads((rdir / ENVELOPE_NAME).read_text())


def write_envelope(rdir: Path, env: dict) -> None:
    (rdir / ENVELOPE_NAME).write_text(json.dumps(env, indent=2, sort_keys=True) + "\n")


def resign(rdir: Path, private_path: Path, statement: dict) -> None:
    """Sign an arbitrary statement with the given key (to test checks after the signature)."""
    key = serialization.load_pem_private_key(private_path.read_bytes(), password=None)
    payload = canonical_json(statement)
    sig = key.sign(pae(PAYLOAD_TYPE, payload))
    write_envelope(rdir, {"payload": base64.b64encode(payload).decode(), "payloadType": PAYLOAD_TYPE,
                          "signatures": [{"keyid": keyid(key.public_key()),
                                          "sig": base64.b64encode(sig).decode()}]})


def flip_byte(path: Path, index: int) -> None:
    data = bytearray(path.read_bytes())
    data[index] ^= 0x01
    path.write_bytes(bytes(data))


def test_encrypted_key_signs_with_passphrase(tmp_path):
    priv, pub = generate_keypair(tmp_path / "k", passphrase=b"correct horse")
    assert priv.read_bytes().startswith(b"-----BEGIN ENCRYPTED PRIVATE KEY-----")
    rdir = make_report(tmp_path / "run")
    with pytest.raises(InvalidInput, match="passphrase"):
        sign_report(rdir, priv)
    with pytest.raises(InvalidInput):
        sign_report(rdir, priv, passphrase=b"wrong")
    sign_report(rdir, priv, passphrase=b"correct horse")
    assert verify_report(rdir, pub).keyid == keyid(pub)


# ----------------------------------------------------------------------------------------
# round trip


def test_sign_verify_round_trip(signed, keys):
    env = read_envelope(signed)
    assert set(env) == {"payload", "payloadType", "signatures"}
    assert env["payloadType"] == PAYLOAD_TYPE
    result = verify_report(signed, keys[1])
    assert result.keyid == env["signatures"][0]["keyid"] == keyid(keys[1])
    der = serialization.load_pem_public_key(keys[1].read_bytes()).public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    assert result.keyid == "sha256:" + hashlib.sha256(der).hexdigest()
    assert dict(result.subjects) == {
        "report.json": hashlib.sha256((signed / "report.json").read_bytes()).hexdigest(),
        "report.html": hashlib.sha256((signed / "report.html").read_bytes()).hexdigest(),
    }
    assert result.not_covered == () and result.payload_canonical
    st = result.statement
    assert st["_type"] == STATEMENT_TYPE and st["predicateType"] == PREDICATE_TYPE
    assert [s["name"] for s in st["subject"]] == ["report.html", "report.json"]
    p = result.predicate
    assert p["method"] == "r2d" and p["verdict"] == "consistent"
    assert p["certified"]["epsilon"] == 1.0 and p["certified"]["delta"] == 1e-05
    assert p["realized"]["epsilon"] == 0.0123
    assert p["report_created_at"] == REPORT["created_at"]
    assert p["tool"] == {"name": "unlearn-audit", "version": "0.1.0"}
    assert p["signed_at"].endswith("Z") and p["signed_at_self_asserted"] is True
    text = result.describe()
    assert "report.json" in text and "report.html" in text and result.keyid in text
    # The payload is exactly the RFC 8785 form of the statement.
    assert base64.b64decode(env["payload"]) == canonical_json(st)


def test_defensive_predicate_for_sparse_report(tmp_path, keys):
    rdir = tmp_path / "run"
    rdir.mkdir()
    (rdir / "report.json").write_text(json.dumps({"certificate": {"epsilon": "inf", "method": "retrain"},
                                                  "realized": "n/a", "big": 2**70}))
    sign_report(rdir, keys[0])
    p = verify_report(rdir, keys[1]).predicate
    assert p["method"] == "retrain" and p["certified"]["epsilon"] == "inf"
    assert p["realized"]["epsilon"] is None and p["verdict"] is None


def test_only_existing_subjects_are_signed(tmp_path, keys):
    rdir = make_report(tmp_path / "run", html=False)
    sign_report(rdir, keys[0])
    result = verify_report(rdir, keys[1])
    assert [n for n, _ in result.subjects] == ["report.json"]
    # report.html rendered after signing: still verifies, but is reported as not covered.
    (rdir / "report.html").write_text(HTML)
    result = verify_report(rdir, keys[1])
    assert result.not_covered == ("report.html",)
    assert "NOT covered" in result.describe()


def test_custom_predicate(tmp_path, keys):
    rdir = make_report(tmp_path / "run")
    sign_report(rdir, keys[0], predicate={"claim": float("inf"), "n": 3})
    assert verify_report(rdir, keys[1]).predicate == {"claim": "inf", "n": 3}


def test_sign_requires_report_json(tmp_path, keys):
    rdir = tmp_path / "run"
    rdir.mkdir()
    (rdir / "report.html").write_text(HTML)
    with pytest.raises(InvalidInput, match="report.json"):
        sign_report(rdir, keys[0])
    assert not (rdir / ENVELOPE_NAME).exists()
    with pytest.raises(InvalidInput):
        sign_report(tmp_path / "nowhere", keys[0])


@pytest.mark.parametrize("bad", ["../x", "/etc/passwd", "a/../b", "report.dsse.json", "", "a\\b"])
def test_sign_rejects_unsafe_subject_names(tmp_path, keys, bad):
    rdir = make_report(tmp_path / "run")
    with pytest.raises(InvalidInput):
        sign_report(rdir, keys[0], subjects=("report.json", bad))


def test_sign_rejects_bad_private_key(tmp_path, keys):
    rdir = make_report(tmp_path / "run")
    with pytest.raises(InvalidInput, match="private_key_path"):
        sign_report(rdir, keys[1])  # a public key
    with pytest.raises(InvalidInput, match="private_key_path"):
        sign_report(rdir, tmp_path / "missing.pem")


# ----------------------------------------------------------------------------------------
# tampering


@pytest.mark.parametrize("name", ["report.json", "report.html"])
@pytest.mark.parametrize("where", [0, -2])
def test_one_changed_byte_in_a_signed_file_is_rejected(signed, keys, name, where):
    path = signed / name
    flip_byte(path, where if where >= 0 else path.stat().st_size + where)
    with pytest.raises(VerificationError, match=rf"The file {name} was modified after signing"):
        verify_report(signed, keys[1])


def test_appended_byte_is_rejected(signed, keys):
    with open(signed / "report.html", "ab") as fh:
        fh.write(b" ")
    with pytest.raises(VerificationError, match="report.html was modified"):
        verify_report(signed, keys[1])


def test_modified_payload_is_rejected(signed, keys):
    env = read_envelope(signed)
    statement = json.loads(base64.b64decode(env["payload"]))
    statement["predicate"]["verdict"] = "violated"
    env["payload"] = base64.b64encode(canonical_json(statement)).decode()
    write_envelope(signed, env)
    with pytest.raises(VerificationError, match="signature does not verify"):
        verify_report(signed, keys[1])


def test_one_changed_byte_in_payload_or_signature_is_rejected(signed, keys):
    env = read_envelope(signed)
    for field in ("payload", "sig"):
        e = json.loads(json.dumps(env))
        holder = e if field == "payload" else e["signatures"][0]
        raw = bytearray(base64.b64decode(holder[field]))
        raw[len(raw) // 2] ^= 0x01
        holder[field] = base64.b64encode(bytes(raw)).decode()
        write_envelope(signed, e)
        with pytest.raises(VerificationError, match="signature does not verify"):
            verify_report(signed, keys[1])


def test_wrong_key_is_rejected(signed, keys, other_keys):
    with pytest.raises(VerificationError, match="signed by a different key"):
        verify_report(signed, other_keys[1])
    # Re-signed by another key: the original public key rejects it.
    sign_report(signed, other_keys[0])
    with pytest.raises(VerificationError, match="signed by a different key"):
        verify_report(signed, keys[1])
    assert verify_report(signed, other_keys[1]).keyid == keyid(other_keys[1])


def test_forged_keyid_still_rejected(signed, keys, other_keys):
    sign_report(signed, other_keys[0])
    env = read_envelope(signed)
    env["signatures"][0]["keyid"] = keyid(keys[1])
    write_envelope(signed, env)
    with pytest.raises(VerificationError, match="signature does not verify"):
        verify_report(signed, keys[1])


@pytest.mark.parametrize("fraction", [0.0, 0.1, 0.5, 0.9])
def test_truncated_envelope_is_rejected(signed, keys, fraction):
    path = signed / ENVELOPE_NAME
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * fraction)])
    with pytest.raises(VerificationError, match="not valid JSON"):
        verify_report(signed, keys[1])


def test_truncated_payload_inside_envelope_is_rejected(signed, keys):
    env = read_envelope(signed)
    env["payload"] = env["payload"][: len(env["payload"]) // 8 * 4]
    write_envelope(signed, env)
    with pytest.raises(VerificationError, match="signature does not verify"):
        verify_report(signed, keys[1])


@pytest.mark.parametrize("mutate, message", [
    (lambda e: e.update(payloadType="application/json"), "payloadType"),
    (lambda e: e.pop("payload"), "'payload'"),
    (lambda e: e.update(signatures=[]), "no signatures"),
    (lambda e: e.update(signatures=[{"keyid": "x"}]), "'sig'"),
    (lambda e: e.update(payload="not*base64"), "base64"),
    (lambda e: e["signatures"][0].update(sig="@@@@"), "base64"),
])
def test_malformed_envelope_fields_are_rejected(signed, keys, mutate, message):
    env = read_envelope(signed)
    mutate(env)
    write_envelope(signed, env)
    with pytest.raises(VerificationError, match=message):
        verify_report(signed, keys[1])


def test_non_object_and_duplicate_keys_are_rejected(signed, keys):
    path = signed / ENVELOPE_NAME
    text = path.read_text()
    path.write_text("[]")
    with pytest.raises(VerificationError, match="not a JSON object"):
        verify_report(signed, keys[1])
    path.write_text(text.replace('"payloadType"', '"payload": "", "payloadType"', 1))
    with pytest.raises(VerificationError, match="repeats the key 'payload'"):
        verify_report(signed, keys[1])


def test_missing_files_are_rejected(signed, keys):
    (signed / "report.html").unlink()
    with pytest.raises(VerificationError, match="report.html is missing"):
        verify_report(signed, keys[1])
    (signed / ENVELOPE_NAME).unlink()
    with pytest.raises(VerificationError, match="envelope report.dsse.json is missing"):
        verify_report(signed, keys[1])


def test_missing_report_json_is_rejected(signed, keys):
    (signed / "report.json").unlink()
    with pytest.raises(VerificationError, match="report.json is missing"):
        verify_report(signed, keys[1])


@pytest.mark.parametrize("name", ["../x", "/etc/passwd", "a/../../x", "./report.json", ".."])
def test_path_traversal_subject_is_rejected(signed, keys, name, tmp_path):
    (tmp_path / "x").write_text("outside")
    statement = json.loads(base64.b64decode(read_envelope(signed)["payload"]))
    statement["subject"].append({"name": name, "digest": {"sha256": "0" * 64}})
    resign(signed, keys[0], statement)
    with pytest.raises(VerificationError, match="unexpected subject"):
        verify_report(signed, keys[1])


def test_symlink_escaping_the_directory_is_rejected(signed, keys, tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("x")
    (signed / "extra.txt").symlink_to(outside)
    statement = json.loads(base64.b64decode(read_envelope(signed)["payload"]))
    statement["subject"].append({"name": "extra.txt",
                                 "digest": {"sha256": hashlib.sha256(b"x").hexdigest()}})
    resign(signed, keys[0], statement)
    with pytest.raises(VerificationError, match="outside"):
        verify_report(signed, keys[1])


@pytest.mark.parametrize("mutate, message", [
    (lambda s: s.update(_type="https://in-toto.io/Statement/v0.1"), "Statement v1"),
    (lambda s: s.update(predicateType="https://example.com/other"), "predicateType"),
    (lambda s: s.update(subject=[]), "no subjects"),
    (lambda s: s["subject"].pop(), "does not cover report.json"),
    (lambda s: s["subject"].append(dict(s["subject"][0])), "twice"),
    (lambda s: s["subject"][0]["digest"].update(sha256="ABC"), "SHA-256"),
])
def test_signed_but_invalid_statements_are_rejected(signed, keys, mutate, message):
    statement = json.loads(base64.b64decode(read_envelope(signed)["payload"]))
    mutate(statement)
    resign(signed, keys[0], statement)
    with pytest.raises(VerificationError, match=message):
        verify_report(signed, keys[1])


def test_error_messages_are_one_sentence(signed, keys, other_keys):
    flip_byte(signed / "report.json", 5)
    for pub in (keys[1], other_keys[1]):
        with pytest.raises(VerificationError) as info:
            verify_report(signed, pub)
        msg = str(info.value)
        assert msg.endswith(".") and "\n" not in msg
        assert msg.count(". ") == 0


def test_public_key_argument_errors(signed, keys, tmp_path):
    with pytest.raises(InvalidInput, match="private key"):
        verify_report(signed, keys[0])
    with pytest.raises(InvalidInput, match="public_key_path"):
        verify_report(signed, tmp_path / "none.pem")
    garbage = tmp_path / "garbage.pem"
    garbage.write_text("hello")
    with pytest.raises(InvalidInput, match="public_key_path"):
        verify_report(signed, garbage)


# ----------------------------------------------------------------------------------------
# secrets


def test_private_key_never_written_into_report(signed, keys):
    sk = serialization.load_pem_private_key(keys[0].read_bytes(), password=None)
    seed = sk.private_bytes(serialization.Encoding.Raw, serialization.PrivateFormat.Raw,
                            serialization.NoEncryption())
    pem = keys[0].read_bytes()
    pem_body = b"".join(pem.splitlines()[1:-1])
    der = sk.private_bytes(serialization.Encoding.DER, serialization.PrivateFormat.PKCS8,
                           serialization.NoEncryption())
    needles = [seed, seed.hex().encode(), base64.b64encode(seed), base64.b64encode(seed)[:40],
               pem_body, der, base64.b64encode(der)]
    for f in signed.iterdir():
        blob = f.read_bytes()
        decoded = [blob]
        if f.name == ENVELOPE_NAME:
            env = json.loads(blob)
            decoded += [base64.b64decode(env["payload"]),
                        base64.b64decode(env["signatures"][0]["sig"])]
        for b in decoded:
            for needle in needles:
                assert needle not in b, f"private key material in {f.name}"


def test_key_errors_do_not_quote_the_key(tmp_path, keys):
    priv = keys[0].read_bytes()
    rdir = make_report(tmp_path / "run")
    broken = tmp_path / "broken.pem"
    broken.write_bytes(priv[:-40])
    with pytest.raises(InvalidInput) as info:
        sign_report(rdir, broken)
    body = b"".join(priv.splitlines()[1:-1]).decode()
    assert body[:16] not in str(info.value) and info.value.__cause__ is None
    with pytest.raises(InvalidInput) as info:
        verify_report(rdir, keys[0])
    assert body[:16] not in str(info.value)


# ----------------------------------------------------------------------------------------
# canonical JSON


# ----------------------------------------------------------------------------------------
# verification with plain openssl (no Python, no toolkit)


def _openssl_ok() -> bool:
    if shutil.which("openssl") is None or shutil.which("bash") is None or shutil.which("sha256sum") is None:
        return False
    out = subprocess.run(["openssl", "version"], capture_output=True, text=True)
    parts = out.stdout.split()
    return out.returncode == 0 and len(parts) > 1 and parts[0] == "OpenSSL" and int(parts[1].split(".")[0]) >= 3


needs_openssl = pytest.mark.skipif(not _openssl_ok(), reason="needs bash, sha256sum and OpenSSL >= 3")


def run_recipe(tmp_path: Path, rdir: Path, pub: Path) -> subprocess.CompletedProcess:
    scratch = tmp_path / f"scratch-{os.urandom(4).hex()}"
    scratch.mkdir()
    script = scratch / "verify-report.sh"
    script.write_text(OPENSSL_VERIFY_SCRIPT)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "DIR": str(rdir), "PUB": str(pub)}
    return subprocess.run(["bash", str(script)], cwd=scratch, env=env, capture_output=True, text=True,
                          timeout=60)


@needs_openssl
def test_openssl_recipe_verifies_intact_report(signed, keys, tmp_path):
    r = run_recipe(tmp_path, signed, keys[1])
    assert r.returncode == 0, r.stderr
    assert "Signature Verified Successfully" in r.stdout + r.stderr
    for name, digest in verify_report(signed, keys[1]).subjects:
        assert f"OK {name} {digest}" in r.stdout
    assert "Verified: signature and 2 file digest(s)." in r.stdout


@needs_openssl
def test_openssl_keyid_recipe(keys):
    out = subprocess.run(f"openssl pkey -pubin -in '{keys[1]}' -outform DER | sha256sum",
                         shell=True, capture_output=True, text=True, check=True)
    assert keyid(keys[1]) == "sha256:" + out.stdout.split()[0]


@needs_openssl
@pytest.mark.parametrize("tamper", ["report.json", "report.html", "payload", "sig", "wrong-key",
                                    "payloadType", "missing-html", "truncated"])
def test_openssl_recipe_rejects_tampering(signed, keys, other_keys, tmp_path, tamper):
    pub = keys[1]
    env = read_envelope(signed)
    if tamper in ("report.json", "report.html"):
        flip_byte(signed / tamper, 10)
    elif tamper == "payload":
        st = json.loads(base64.b64decode(env["payload"]))
        st["predicate"]["verdict"] = "violated"
        env["payload"] = base64.b64encode(canonical_json(st)).decode()
        write_envelope(signed, env)
    elif tamper == "sig":
        raw = bytearray(base64.b64decode(env["signatures"][0]["sig"]))
        raw[0] ^= 1
        env["signatures"][0]["sig"] = base64.b64encode(bytes(raw)).decode()
        write_envelope(signed, env)
    elif tamper == "wrong-key":
        pub = other_keys[1]
    elif tamper == "payloadType":
        env["payloadType"] = "application/json"
        write_envelope(signed, env)
    elif tamper == "missing-html":
        (signed / "report.html").unlink()
    elif tamper == "truncated":
        path = signed / ENVELOPE_NAME
        path.write_bytes(path.read_bytes()[:200])
    r = run_recipe(tmp_path, signed, pub)
    assert r.returncode != 0, r.stdout
    with pytest.raises((VerificationError, InvalidInput)):
        verify_report(signed, pub)


@needs_openssl
def test_openssl_recipe_handles_non_ascii_and_report_json_only(tmp_path, keys):
    rdir = make_report(tmp_path / "run", html=False)
    sign_report(rdir, keys[0], predicate={"note": "ε ≤ 1 — “certified” 😀", "x": 0.1})
    r = run_recipe(tmp_path, rdir, keys[1])
    assert r.returncode == 0, r.stderr
    assert "Verified: signature and 1 file digest(s)." in r.stdout
