"""Canonical JSON (audit.report.canonical) and the DSSE pre-authentication encoding
(audit.report.dsse): known vectors, and the fallback canonicaliser against the rfc8785 package."""

from __future__ import annotations

import math
import random

import pytest

from audit.report.canonical import _jcs_fallback, canonical_json
from audit.report.dsse import PAYLOAD_TYPE, pae
from certify.errors import InvalidInput


def test_pae_matches_dsse_spec():
    assert pae("http://example.com/HelloWorld", b"hello world") == \
        b"DSSEv1 29 http://example.com/HelloWorld 11 hello world"
    assert pae(PAYLOAD_TYPE, "é".encode()) == b"DSSEv1 28 application/vnd.in-toto+json 2 \xc3\xa9"


@pytest.mark.parametrize("dumps", [canonical_json, _jcs_fallback], ids=["default", "fallback"])
def test_canonical_json_known_vectors(dumps):
    assert dumps({"b": 1, "a": [True, None, "x"]}) == b'{"a":[true,null,"x"],"b":1}'
    assert dumps({"d": 1e-05, "e": 1e21, "f": 1e20, "g": -0.0, "h": 0.1, "i": 1.5e-7}) == \
        b'{"d":0.00001,"e":1e+21,"f":100000000000000000000,"g":0,"h":0.1,"i":1.5e-7}'
    for bad in ({"x": math.inf}, {"x": math.nan}, {"x": 2**60}, {"x": object()}):
        with pytest.raises(InvalidInput):
            dumps(bad)


def test_fallback_canonicaliser_matches_rfc8785():
    rfc8785 = pytest.importorskip("rfc8785")
    rng = random.Random(0)
    floats = [0.0, -0.0, 1.0, -1.5, 1e-7, 1e-6, 1.5e-6, 1e21, 1e22, 9.999e20, 123456789012345680.0,
              5e-324, 1.7976931348623157e308, 0.1 + 0.2, 1 / 3, 2.0**53, 1e16, 100.0]
    floats += [rng.uniform(-1, 1) * 10 ** rng.randint(-30, 30) for _ in range(2000)]
    floats += [rng.choice([-1, 1]) * rng.random() for _ in range(200)]
    doc = {
        "floats": floats,
        "ints": [0, -1, 2**53 - 1, -(2**53 - 1), 42],
        "strings": ["", "a\"b\\c", "\x00\x01\x1f\x7f", "\b\f\n\r\t", "é€😀", "\u2028\u2029", "</script>"],
        "€": 1, "\U0001f600": 2, "\ufb33": 3, "a": {"z": None, "A": [True, False]}, "1": [], "10": {},
    }
    assert _jcs_fallback(doc) == rfc8785.dumps(doc)
    for x in floats:
        assert _jcs_fallback(x) == rfc8785.dumps(x), x
