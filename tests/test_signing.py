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
from securesystemslib.dsse import Envelope  # noqa: E402
from securesystemslib.exceptions import VerificationError as SslibVerificationError  # noqa: E402
from securesystemslib.signer import CryptoSigner, SSlibKey  # noqa: E402

from audit.report import signing  # noqa: E402
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
    "certificate": {
        "method": "r2d",
        "epsilon": 1.0,
        "delta": 1e-05,
        "mechanism": "analytic",
        "theorem": "Thm 3.1",
        "valid": True,
        "conditional": False,
        "sigma": 0.13,
    },
    "realized": {"epsilon": 0.0123, "exceeds_certified": False, "bound_violated": False, "bound_slack": "inf"},
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
    (directory / "report.json").write_text(json.dumps(REPORT, indent=2, sort_keys=True) + "\n", encoding="utf-8")
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
    write_envelope(
        rdir,
        {
            "payload": base64.b64encode(payload).decode(),
            "payloadType": PAYLOAD_TYPE,
            "signatures": [{"keyid": keyid(key.public_key()), "sig": base64.b64encode(sig).decode()}],
        },
    )


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
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    assert result.keyid == "sha256:" + hashlib.sha256(der).hexdigest()
    assert dict(result.subjects) == {
        "report.json": hashlib.sha256((signed / "report.json").read_bytes()).hexdigest(),
        "report.html": hashlib.sha256((signed / "report.html").read_bytes()).hexdigest(),
    }
    assert result.payload_canonical
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
    (rdir / "report.json").write_text(
        json.dumps({"certificate": {"epsilon": "inf", "method": "retrain"}, "realized": "n/a", "big": 2**70})
    )
    sign_report(rdir, keys[0])
    p = verify_report(rdir, keys[1]).predicate
    assert p["method"] == "retrain" and p["certified"]["epsilon"] == "inf"
    assert p["realized"]["epsilon"] is None and p["verdict"] is None
    assert p["deletion_request"] == {"request_id": None, "commitment": None, "n_records": None, "identifier": None}


def test_the_deletion_request_is_signed_and_described(tmp_path, keys):
    """The request id, the commitment and the record count are signed claims, of a report and of a
    comparison, and `audit verify` prints them (none given: said so)."""
    request = {
        "request_id": "REQ-42",
        "commitment": "ab" * 32,
        "n_records": 3,
        "identifier": "row position",
        "scheme": "sha256(...)",
        "identifier_type": "integer",
    }
    rdir = make_report(tmp_path / "run")
    report = {**json.loads((rdir / "report.json").read_text()), "deletion_request": request}
    (rdir / "report.json").write_text(json.dumps(report))
    sign_report(rdir, keys[0])
    result = verify_report(rdir, keys[1])
    assert result.predicate["deletion_request"] == {
        "request_id": "REQ-42",
        "commitment": "ab" * 32,
        "n_records": 3,
        "identifier": "row position",
    }
    assert f"Deletion request: id=REQ-42 records=3 commitment={'ab' * 32}." in result.describe()
    unnamed = signing.comparison_claims({"deletion_request": {**request, "request_id": None}})
    assert unnamed["deletion_request"]["request_id"] is None and unnamed["deletion_request"]["n_records"] == 3


def test_only_existing_subjects_are_signed(tmp_path, keys):
    rdir = make_report(tmp_path / "run", html=False)
    sign_report(rdir, keys[0])
    result = verify_report(rdir, keys[1])
    assert [n for n, _ in result.subjects] == ["report.json"]
    # report.html rendered after signing is not covered: refused, as any unsigned file is.
    (rdir / "report.html").write_text(HTML)
    with pytest.raises(VerificationError, match=r"does not cover report\.html in .*: remove it or sign") as info:
        verify_report(rdir, keys[1])
    assert one_sentence(str(info.value))
    # Signing again covers it.
    sign_report(rdir, keys[0])
    assert [n for n, _ in verify_report(rdir, keys[1]).subjects] == ["report.html", "report.json"]


UNCOVERED = {  # what is added to a signed report directory: the paths the refusal must name
    "extra-file": ({"notes.txt": "x"}, ["notes.txt"]),
    "hidden-file": ({".DS_Store": "x"}, [".DS_Store"]),
    "empty-directory": ({"extra/": None}, ["extra/"]),
    "foreign-report-directory": ({"methods/noop/report.json": "{}", "methods/noop/report.html": HTML}, ["methods/"]),
    "salt-not-at-the-top": ({"sub/deletion-commitment.salt": "11"}, ["sub/"]),
    "directory-named-like-the-salt": ({"deletion-commitment.salt/report.json": "{}"}, ["deletion-commitment.salt/"]),
    "several": ({"a": "", "b": "", "c": "", "d": "", "e": "", "f": "", "g": ""}, ["a", "b", "c", "d", "e"]),
}


def _add(rdir: Path, files: dict) -> None:
    for name, text in files.items():
        path = rdir / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if text is None:
            path.mkdir()
        else:
            path.write_text(text)


@pytest.mark.parametrize("case", sorted(UNCOVERED))
def test_anything_the_signature_does_not_cover_is_refused(signed, keys, case):
    files, named = UNCOVERED[case]
    if not any(n.startswith("deletion-commitment.salt") for n in files):  # the one documented unsigned file
        (signed / "deletion-commitment.salt").write_text("11" * 32 + "\n")
    assert verify_report(signed, keys[1]).subjects
    _add(signed, files)
    with pytest.raises(VerificationError) as info:
        verify_report(signed, keys[1])
    message = str(info.value)
    assert message.startswith("The signature does not cover " + ", ".join(named)) and one_sentence(message)
    assert ("and 2 more" in message) is (case == "several") and "deletion-commitment.salt may" in message


def test_a_file_inside_a_signed_subdirectory_is_refused_and_the_leading_directories_are_not(tmp_path, keys):
    rdir = make_report(tmp_path / "cmp")
    make_report(rdir / "methods" / "r2d")
    sign_report(rdir, keys[0], subjects=["report.json", "methods/r2d/report.json", "methods/r2d/report.html"])
    (rdir / "report.html").unlink()
    assert len(verify_report(rdir, keys[1]).subjects) == 3
    (rdir / "methods" / "r2d" / "deletion-commitment.salt").write_text("11")  # unsigned below the top
    (rdir / "report.html").write_text(HTML)
    with pytest.raises(
        VerificationError, match=r"does not cover methods/r2d/deletion-commitment\.salt, report\.html in"
    ):
        verify_report(rdir, keys[1])


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


@pytest.mark.skipif(os.name == "nt", reason="POSIX mode bits")
def test_sign_refuses_a_private_key_others_can_read(tmp_path):
    priv, pub = generate_keypair(tmp_path / "k")
    os.chmod(priv, 0o644)
    rdir = make_report(tmp_path / "run")
    with pytest.raises(InvalidInput) as info:
        sign_report(rdir, priv, key_field="--key")
    assert str(info.value).startswith("--key must be a private key file that only its owner can access")
    assert "(mode 0644)" in str(info.value) and f"chmod 600 {priv}" in str(info.value)
    assert not (rdir / ENVELOPE_NAME).exists()
    os.chmod(priv, 0o600)
    sign_report(rdir, priv, key_field="--key")
    assert verify_report(rdir, pub).keyid == keyid(pub)


def test_public_key_errors_name_the_given_field(signed, tmp_path):
    with pytest.raises(InvalidInput, match="^--key must be") as info:
        verify_report(signed, tmp_path / "none.pem", key_field="--key")
    assert info.value.field == "--key"


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


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda e: e.update(payloadType="application/json"), "payloadType"),
        (lambda e: e.pop("payload"), "'payload'"),
        (lambda e: e.update(signatures=[]), "no signatures"),
        (lambda e: e.update(signatures=[{"keyid": "x"}]), "'sig'"),
        (lambda e: e.update(payload="not*base64"), "base64"),
        (lambda e: e["signatures"][0].update(sig="@@@@"), "base64"),
    ],
)
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
    statement["subject"].append({"name": "extra.txt", "digest": {"sha256": hashlib.sha256(b"x").hexdigest()}})
    resign(signed, keys[0], statement)
    with pytest.raises(VerificationError, match="outside"):
        verify_report(signed, keys[1])


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda s: s.update(_type="https://in-toto.io/Statement/v0.1"), "Statement v1"),
        (lambda s: s.update(predicateType="https://example.com/other"), "predicateType"),
        (lambda s: s.update(subject=[]), "no subjects"),
        (lambda s: s["subject"].pop(), "does not cover report.json"),
        (lambda s: s["subject"].append(dict(s["subject"][0])), "twice"),
        (lambda s: s["subject"][0]["digest"].update(sha256="ABC"), "SHA-256"),
    ],
)
def test_signed_but_invalid_statements_are_rejected(signed, keys, mutate, message):
    statement = json.loads(base64.b64decode(read_envelope(signed)["payload"]))
    mutate(statement)
    resign(signed, keys[0], statement)
    with pytest.raises(VerificationError, match=message):
        verify_report(signed, keys[1])


def one_sentence(msg: str) -> bool:
    return msg.endswith(".") and "\n" not in msg and msg.count(". ") == 0 and len(msg) < 400


def test_unreadable_files_are_a_verification_error(signed, keys, monkeypatch):
    # Root reads anything, so the refusals the kernel would give are simulated.
    def denied(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(signing, "_sha256_file", denied)
    with pytest.raises(VerificationError, match=r"cannot be read \(Permission denied\)") as info:
        verify_report(signed, keys[1])
    assert one_sentence(str(info.value))
    monkeypatch.setattr(signing, "open", denied, raising=False)
    with pytest.raises(VerificationError, match=r"report.dsse.json cannot be read \(Permission denied\)"):
        verify_report(signed, keys[1])


def test_symlinks_inside_the_directory_are_followed_and_loops_refused(signed, keys):
    os.replace(signed / "report.html", signed / "page.html")
    (signed / "report.html").symlink_to("page.html")
    assert verify_report(signed, keys[1]).subjects  # page.html holds the signed bytes: covered
    (signed / "report.html").unlink()
    (signed / "report.html").symlink_to("report.html")
    with pytest.raises(VerificationError, match="symlink loop"):
        verify_report(signed, keys[1])


def test_report_json_symlinked_outside_is_rejected(signed, keys, tmp_path):
    outside = tmp_path / "elsewhere.json"
    os.replace(signed / "report.json", outside)
    (signed / "report.json").symlink_to(outside)  # same bytes, so only the symlink check can catch it
    with pytest.raises(VerificationError, match="'report.json' leads outside"):
        verify_report(signed, keys[1])


def test_deeply_nested_signed_statement_is_a_verification_error(signed, keys):
    key = serialization.load_pem_private_key(keys[0].read_bytes(), password=None)
    payload = b"[" * 100_000
    write_envelope(
        signed,
        {
            "payload": base64.b64encode(payload).decode(),
            "payloadType": PAYLOAD_TYPE,
            "signatures": [
                {"keyid": keyid(keys[1]), "sig": base64.b64encode(key.sign(pae(PAYLOAD_TYPE, payload))).decode()}
            ],
        },
    )
    with pytest.raises(VerificationError, match="signed statement nests arrays or objects too deeply"):
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
# interoperability with securesystemslib, both ways


def crypto_public(path: Path):
    return serialization.load_pem_public_key(path.read_bytes())


def sslib_key(pub_path: Path, kid: str) -> SSlibKey:
    return SSlibKey.from_crypto(crypto_public(pub_path), keyid=kid, scheme="ed25519")


def test_securesystemslib_reads_our_envelopes(signed, keys, other_keys):
    data = read_envelope(signed)
    env = Envelope.from_dict(json.loads(json.dumps(data)))  # from_dict consumes its argument
    ours = sslib_key(keys[1], keyid(keys[1]))
    assert set(env.verify([ours], 1)) == {keyid(keys[1])}
    assert env.payload_type == PAYLOAD_TYPE
    assert json.loads(env.payload) == verify_report(signed, keys[1]).statement
    assert env.to_dict() == data
    # Not vacuous: securesystemslib refuses a changed statement, and another key under our keyid.
    changed = dict(data, payload=base64.b64encode(env.payload.replace(b"consistent", b"violated")).decode())
    with pytest.raises(SslibVerificationError):
        Envelope.from_dict(json.loads(json.dumps(changed))).verify([ours], 1)
    with pytest.raises(SslibVerificationError):
        env.verify([sslib_key(other_keys[1], keyid(keys[1]))], 1)


def sslib_signed_report(rdir: Path, private_path: Path) -> CryptoSigner:
    """Sign ``rdir`` the way another tool built on securesystemslib would (its own keyid, its layout)."""
    statement = {
        "_type": STATEMENT_TYPE,
        "predicateType": PREDICATE_TYPE,
        "predicate": {"method": "r2d"},
        "subject": [
            {"name": n, "digest": {"sha256": hashlib.sha256((rdir / n).read_bytes()).hexdigest()}}
            for n in ("report.html", "report.json")
        ],
    }
    signer = CryptoSigner(serialization.load_pem_private_key(private_path.read_bytes(), password=None))
    env = Envelope(canonical_json(statement), PAYLOAD_TYPE, {})
    env.sign(signer)
    (rdir / ENVELOPE_NAME).write_text(json.dumps(env.to_dict()))
    return signer


def test_we_read_securesystemslib_envelopes(tmp_path, keys, other_keys):
    rdir = make_report(tmp_path / "run")
    signer = sslib_signed_report(rdir, keys[0])
    assert signer.public_key.keyid != keyid(keys[1])  # securesystemslib's default keyid, not ours
    result = verify_report(rdir, keys[1])
    assert result.keyid == keyid(keys[1]) and result.predicate == {"method": "r2d"}
    assert dict(result.subjects) == {
        n: hashlib.sha256((rdir / n).read_bytes()).hexdigest() for n in ("report.html", "report.json")
    }
    with pytest.raises(VerificationError, match="signed by a different key"):
        verify_report(rdir, other_keys[1])
    flip_byte(rdir / "report.html", 3)
    with pytest.raises(VerificationError, match="report.html was modified"):
        verify_report(rdir, keys[1])


# ----------------------------------------------------------------------------------------
# several signatures


def countersign(rdir: Path, private_path: Path, *, first: bool = True, hint: str | None = None) -> None:
    """Add a signature by ``private_path`` over the same statement (an auditor's countersignature)."""
    env = read_envelope(rdir)
    key = serialization.load_pem_private_key(private_path.read_bytes(), password=None)
    sig = key.sign(pae(PAYLOAD_TYPE, base64.b64decode(env["payload"])))
    entry = {"keyid": keyid(key.public_key()) if hint is None else hint, "sig": base64.b64encode(sig).decode()}
    env["signatures"].insert(0 if first else len(env["signatures"]), entry)
    write_envelope(rdir, env)


@pytest.mark.parametrize("first", [True, False], ids=["countersignature-first", "countersignature-last"])
def test_countersigned_envelope_verifies_with_either_key(signed, keys, other_keys, first):
    countersign(signed, other_keys[0], first=first)
    assert len(read_envelope(signed)["signatures"]) == 2
    assert verify_report(signed, keys[1]).keyid == keyid(keys[1])
    assert verify_report(signed, other_keys[1]).keyid == keyid(other_keys[1])
    env = Envelope.from_dict(read_envelope(signed))  # securesystemslib agrees, both keys, threshold 2
    assert set(env.verify([sslib_key(keys[1], keyid(keys[1])), sslib_key(other_keys[1], keyid(other_keys[1]))], 2)) == {
        keyid(keys[1]),
        keyid(other_keys[1]),
    }


def test_envelope_signed_only_by_other_keys_is_rejected(signed, keys, other_keys, tmp_path):
    third = generate_keypair(tmp_path / "third")
    sign_report(signed, other_keys[0])
    countersign(signed, third[0])
    with pytest.raises(VerificationError, match="signed by a different key"):
        verify_report(signed, keys[1])


@pytest.mark.parametrize("hint", ["", "some-other-tool-keyid"])
def test_the_keyid_is_only_a_hint(signed, keys, other_keys, hint):
    env = read_envelope(signed)
    env["signatures"][0]["keyid"] = hint
    write_envelope(signed, env)
    assert verify_report(signed, keys[1]).keyid == keyid(keys[1])
    del env["signatures"][0]["keyid"]  # DSSE makes the keyid optional
    write_envelope(signed, env)
    assert verify_report(signed, keys[1]).keyid == keyid(keys[1])
    with pytest.raises(VerificationError, match="signature does not verify"):
        verify_report(signed, other_keys[1])


def test_two_signatures_with_one_keyid_are_rejected(signed, keys, other_keys):
    countersign(signed, other_keys[0], hint=keyid(keys[1]))
    with pytest.raises(VerificationError, match="two signatures with the keyid") as info:
        verify_report(signed, keys[1])
    assert one_sentence(str(info.value))


# ----------------------------------------------------------------------------------------
# malformed envelopes: one sentence each, never a traceback


def _splice(text: str, extra: str) -> str:
    """The envelope's JSON text with ``extra`` (a member, ``"key": value``) added to the object."""
    return text.rstrip().removesuffix("}") + ", " + extra + "}"


MALFORMED = {
    "empty": lambda t: "",
    "not-json": lambda t: "hello",
    "deep-arrays": lambda t: "[" * 100_000,
    "deep-objects": lambda t: '{"a": ' * 100_000,
    "deep-field": lambda t: _splice(t, '"x": ' + "[" * 100_000 + "]" * 100_000),
    "array": lambda t: "[]",
    "string": lambda t: '"payload"',
    "nan": lambda t: _splice(t, '"x": NaN'),
    "long-integer": lambda t: _splice(t, '"x": 1' + "0" * 5000),
    "bom": lambda t: "\ufeff" + t,
    "trailing-text": lambda t: t + "x",
    "second-object": lambda t: t + "{}",
    "duplicate-payload": lambda t: _splice(t, '"payload": "AAAA"'),
    "duplicate-in-signature": lambda t: t.replace('"sig":', '"sig": "AAAA", "sig":', 1),
    "payload-missing": lambda t: json.dumps({k: v for k, v in json.loads(t).items() if k != "payload"}),
    "payloadType-missing": lambda t: json.dumps({k: v for k, v in json.loads(t).items() if k != "payloadType"}),
    "signatures-missing": lambda t: json.dumps({k: v for k, v in json.loads(t).items() if k != "signatures"}),
    "payload-number": lambda t: json.dumps(dict(json.loads(t), payload=5)),
    "payloadType-null": lambda t: json.dumps(dict(json.loads(t), payloadType=None)),
    "signatures-object": lambda t: json.dumps(dict(json.loads(t), signatures={"sig": "AAAA"})),
    "signatures-empty": lambda t: json.dumps(dict(json.loads(t), signatures=[])),
    "signature-number": lambda t: json.dumps(dict(json.loads(t), signatures=[1])),
    "sig-number": lambda t: json.dumps(dict(json.loads(t), signatures=[{"keyid": "k", "sig": 5}])),
    "keyid-number": lambda t: json.dumps(
        dict(json.loads(t), signatures=[dict(json.loads(t)["signatures"][0], keyid=5)])
    ),
    "payload-garbage": lambda t: json.dumps(dict(json.loads(t), payload="%%%%")),
    "payload-cut": lambda t: json.dumps(dict(json.loads(t), payload=json.loads(t)["payload"].rstrip("=")[:-1])),
    "payload-padding-inside": lambda t: json.dumps(dict(json.loads(t), payload="ab=c" + json.loads(t)["payload"])),
    # URL-safe base64 ("-", "_") is what securesystemslib's reader falls back to; DSSE says standard.
    "sig-urlsafe": lambda t: json.dumps(
        dict(
            json.loads(t),
            signatures=[dict(json.loads(t)["signatures"][0], sig="-_" + json.loads(t)["signatures"][0]["sig"][2:])],
        )
    ),
}


def malformed_envelope(rdir: Path, case: str) -> None:
    path = rdir / ENVELOPE_NAME
    text = MALFORMED[case](path.read_text())
    path.write_bytes(text.encode("utf-8"))


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_envelopes_are_one_sentence_verification_errors(signed, keys, case):
    malformed_envelope(signed, case)
    with pytest.raises(VerificationError) as info:
        verify_report(signed, keys[1])
    assert one_sentence(str(info.value)), str(info.value)
    assert info.value.__cause__ is None


def test_non_utf8_and_oversized_envelopes_are_rejected(signed, keys):
    path = signed / ENVELOPE_NAME
    path.write_bytes(b'{"payload": "\xff\xfe"}')
    with pytest.raises(VerificationError, match="not UTF-8"):
        verify_report(signed, keys[1])
    path.write_bytes(b'{"x": "' + b"A" * signing.MAX_ENVELOPE_BYTES + b'"}')  # just past the bound
    with pytest.raises(VerificationError, match="larger than 16 MiB"):
        verify_report(signed, keys[1])


# ----------------------------------------------------------------------------------------
# secrets


def test_private_key_never_written_into_report(signed, keys):
    sk = serialization.load_pem_private_key(keys[0].read_bytes(), password=None)
    seed = sk.private_bytes(serialization.Encoding.Raw, serialization.PrivateFormat.Raw, serialization.NoEncryption())
    pem = keys[0].read_bytes()
    pem_body = b"".join(pem.splitlines()[1:-1])
    der = sk.private_bytes(serialization.Encoding.DER, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    needles = [
        seed,
        seed.hex().encode(),
        base64.b64encode(seed),
        base64.b64encode(seed)[:40],
        pem_body,
        der,
        base64.b64encode(der),
    ]
    for f in signed.iterdir():
        blob = f.read_bytes()
        decoded = [blob]
        if f.name == ENVELOPE_NAME:
            env = json.loads(blob)
            decoded += [base64.b64decode(env["payload"]), base64.b64decode(env["signatures"][0]["sig"])]
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
    return subprocess.run(["bash", str(script)], cwd=scratch, env=env, capture_output=True, text=True, timeout=60)


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
    out = subprocess.run(
        f"openssl pkey -pubin -in '{keys[1]}' -outform DER | sha256sum",
        shell=True,
        capture_output=True,
        text=True,
        check=True,
    )
    assert keyid(keys[1]) == "sha256:" + out.stdout.split()[0]


@needs_openssl
@pytest.mark.parametrize(
    "tamper", ["report.json", "report.html", "payload", "sig", "wrong-key", "payloadType", "missing-html", "truncated"]
)
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


@needs_openssl
@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_openssl_recipe_rejects_malformed_envelopes(signed, keys, tmp_path, case):
    malformed_envelope(signed, case)
    r = run_recipe(tmp_path, signed, keys[1])
    assert r.returncode != 0 and "FAIL: " in r.stderr, r.stdout
    with pytest.raises(VerificationError):
        verify_report(signed, keys[1])


@needs_openssl
@pytest.mark.parametrize("first", [True, False], ids=["countersignature-first", "countersignature-last"])
def test_openssl_recipe_reads_several_signatures(signed, keys, other_keys, tmp_path, first):
    countersign(signed, other_keys[0], first=first)
    for pub in (keys[1], other_keys[1]):
        r = run_recipe(tmp_path, signed, pub)
        assert r.returncode == 0, r.stderr
        assert "Signature Verified Successfully" in r.stdout
    third = generate_keypair(tmp_path / "third")
    assert run_recipe(tmp_path, signed, third[1]).returncode != 0


@needs_openssl
def test_openssl_recipe_reads_securesystemslib_envelopes(tmp_path, keys):
    rdir = make_report(tmp_path / "run")
    sslib_signed_report(rdir, keys[0])
    assert "\n" not in (rdir / ENVELOPE_NAME).read_text()  # its own layout: one line
    r = run_recipe(tmp_path, rdir, keys[1])
    assert r.returncode == 0, r.stderr
    assert verify_report(rdir, keys[1]).keyid == keyid(keys[1])


@needs_openssl
@pytest.mark.parametrize("case", sorted(UNCOVERED))
def test_openssl_recipe_refuses_what_the_signature_does_not_cover(signed, keys, tmp_path, case):
    files, named = UNCOVERED[case]
    if not any(n.startswith("deletion-commitment.salt") for n in files):
        (signed / "deletion-commitment.salt").write_text("11" * 32 + "\n")
    assert run_recipe(tmp_path, signed, keys[1]).returncode == 0
    _add(signed, files)
    r = run_recipe(tmp_path, signed, keys[1])
    assert r.returncode != 0 and "Verified: " not in r.stdout, r.stdout
    assert "FAIL: the signature does not cover " + " ".join(f"'{n}'" for n in named) in r.stderr
    with pytest.raises(VerificationError):
        verify_report(signed, keys[1])


@needs_openssl
@pytest.mark.parametrize("link", ["inside", "loop", "directory-outside"])
def test_openssl_recipe_follows_symlinks_as_verify_report_does(signed, keys, tmp_path, link):
    if link == "inside":
        os.replace(signed / "report.html", signed / "page.html")
        (signed / "report.html").symlink_to("page.html")
    elif link == "loop":
        (signed / "report.html").unlink()
        (signed / "report.html").symlink_to("report.html")
    else:  # report.html reached through a subdirectory that is a symlink leading out
        outside = tmp_path / "outside"
        outside.mkdir()
        os.replace(signed / "report.html", outside / "report.html")
        (signed / "sub").symlink_to(outside)
        statement = json.loads(base64.b64decode(read_envelope(signed)["payload"]))
        for sub in statement["subject"]:
            if sub["name"] == "report.html":
                sub["name"] = "sub/report.html"
        resign(signed, keys[0], statement)
    r = run_recipe(tmp_path, signed, keys[1])
    try:
        verify_report(signed, keys[1])
        python_ok = True
    except VerificationError:
        python_ok = False
    assert (r.returncode == 0) is python_ok is (link == "inside"), r.stderr


@needs_openssl
def test_openssl_recipe_time_is_linear_in_the_envelope(tmp_path, keys):
    """A megabyte-sized statement verifies in seconds (bash pattern operations can be quadratic)."""
    rdir = make_report(tmp_path / "run")
    sign_report(rdir, keys[0], predicate={"blob": "x" * 1_000_000})
    r = run_recipe(tmp_path, rdir, keys[1])  # run_recipe's 60 s timeout fails a quadratic script
    assert r.returncode == 0, r.stderr
