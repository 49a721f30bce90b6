"""Canonical JSON (audit.report.canonical, the rfc8785 package) and the DSSE pre-authentication
encoding (audit.report.dsse, securesystemslib's): known vectors and refusals."""

from __future__ import annotations

import math

import pytest

from audit.report.canonical import canonical_json
from audit.report.dsse import PAYLOAD_TYPE, pae
from certify.errors import InvalidInput


def test_pae_matches_dsse_spec():
    # The example from the DSSE protocol document.
    assert (
        pae("http://example.com/HelloWorld", b"hello world")
        == b"DSSEv1 29 http://example.com/HelloWorld 11 hello world"
    )
    # Lengths are byte counts, not character counts.
    assert pae(PAYLOAD_TYPE, "é".encode()) == b"DSSEv1 28 application/vnd.in-toto+json 2 \xc3\xa9"


def test_canonical_json_known_vectors():
    assert canonical_json({"b": 1, "a": [True, None, "x"]}) == b'{"a":[true,null,"x"],"b":1}'
    assert (
        canonical_json({"d": 1e-05, "e": 1e21, "f": 1e20, "g": -0.0, "h": 0.1, "i": 1.5e-7})
        == b'{"d":0.00001,"e":1e+21,"f":100000000000000000000,"g":0,"h":0.1,"i":1.5e-7}'
    )
    # Keys sort by UTF-16 code units (RFC 8785 §3.2.3): 😀 (U+1F600, units D83D DE00) sorts before
    # U+FB33 although its code point is larger; strings stay literal UTF-8, "\r" is escaped.
    assert (
        canonical_json({"\ufb33": 1, "😀": 2, "\r": 3, "é": "ε ≤ 1", "€": 4})
        == '{"\\r":3,"é":"ε ≤ 1","€":4,"😀":2,"\ufb33":1}'.encode()
    )


@pytest.mark.parametrize(
    "bad", [{"x": math.inf}, {"x": math.nan}, {"x": 2**60}, {"x": object()}, {1: 2}, {"x": "\udc00"}]
)
def test_canonical_json_refuses_what_jcs_cannot_represent(bad):
    with pytest.raises(InvalidInput) as info:
        canonical_json(bad)
    assert info.value.field == "predicate" and info.value.__cause__ is None


def test_canonical_json_refuses_nesting_beyond_the_recursion_limit():
    deep: list = []
    for _ in range(100_000):
        deep = [deep]
    with pytest.raises(InvalidInput, match="nested"):
        canonical_json({"x": deep})
