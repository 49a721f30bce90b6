"""The headline follows the findings (issue 24): one function names every finding in a few words,
errors first; a consistent verdict with a warning is never shown as a clean pass; ``--strict``
turns a vacuous pass into its own exit code. The page's banner is checked in test_html.py, the
CLI's first line in test_cli_shell.py."""

from __future__ import annotations

from types import SimpleNamespace as NS

from audit.cli.exits import ExitCode, exit_code
from audit.findings import CODES, finding, headline


def _findings(*codes: str) -> list[dict[str, str]]:
    return [finding(code, f"the long message of {code}") for code in codes]


def test_no_finding_is_a_plain_verdict():
    h = headline("consistent", [])
    assert h.text() == "CONSISTENT" and h.tally == "" and not h.caution and h.vacuous == ()


def test_warnings_are_counted_and_named_and_make_the_pass_a_caution():
    h = headline("consistent", _findings("released-at-chance", "no-power"))
    assert h.caution and h.tally == "2 warnings"
    assert h.text() == (
        "CONSISTENT — 2 warnings: the released model is at chance; "
        "the attacks had no power: they cannot see a deletion that did nothing"
    )
    assert h.vacuous == ("released-at-chance", "no-power")


def test_errors_come_first_and_each_code_is_named_once():
    found = _findings("conditional-constants", "bound-violated", "bound-violated", "certificate-violated")
    h = headline(None, found)  # the verdict derived from the findings
    assert h.verdict == "violated" and not h.caution
    assert [n.code for n in h.named] == ["bound-violated", "certificate-violated", "conditional-constants"]
    assert h.tally == "2 errors, 1 warning"
    assert h.text().startswith("VIOLATED — 2 errors, 1 warning: the measured distance exceeds")
    assert h.text("NO CERTIFICATE").startswith("NO CERTIFICATE — ")


def test_findings_as_report_objects_and_unknown_codes():
    found = [NS(code="no-power", severity="warning"), NS(code="from-a-newer-version", severity="warning")]
    h = headline("consistent", found)
    assert [n.short for n in h.named] == [CODES["no-power"].short, "from-a-newer-version"]
    assert h.vacuous == ("no-power",)  # an unknown code is named, never taken as vacuous


def test_a_qualifying_warning_is_a_caution_but_not_vacuous():
    h = headline("consistent", _findings("conditional-constants"))
    assert h.caution and h.vacuous == ()


def test_the_vacuous_codes_are_declared_on_the_table():
    vacuous = {c for c, code in CODES.items() if code.vacuous}
    assert {"no-power", "released-at-chance", "attacks-skipped"} <= vacuous
    for later in ("underpowered", "no-op-passes"):  # issue 24's other findings, once they exist
        assert later not in CODES or later in vacuous
    # vacuity empties a consistent verdict only: a code that changes the verdict would never bite
    assert all(CODES[c].verdict == "consistent" for c in vacuous)


def test_strict_refuses_a_vacuous_pass_only():
    power = _findings("no-power")
    assert exit_code("consistent", power) == ExitCode.CONSISTENT  # without --strict nothing breaks
    assert exit_code("consistent", power, strict=True) == ExitCode.VACUOUS == 7
    assert exit_code("consistent", _findings("conditional-constants"), strict=True) == ExitCode.CONSISTENT
    assert exit_code("consistent", [], strict=True) == ExitCode.CONSISTENT
    violated = _findings("certificate-violated", "no-power")
    assert exit_code("violated", violated, strict=True) == ExitCode.VIOLATED  # the worse news wins
    assert len({int(c) for c in ExitCode}) == len(ExitCode)
