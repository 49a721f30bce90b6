"""The report model (audit.report.schema): sample reports, encodings, errors, shipped JSON Schema."""

from __future__ import annotations

import copy
import json
import math
import subprocess
import sys
from pathlib import Path
from typing import get_args

import pytest

from audit.findings import CODES
from audit.report import schema as S
from audit.report.schema import ReportModel, json_schema, schema_path, schema_text, validate_report
from certify.errors import InvalidInput

DATA = Path(__file__).parent / "data"
SAMPLES = ("sample-report.json", "sample-report-violated.json")

# Every place a seed lives in a report with all four attacks (the producer must write these as
# decimal strings); dataset.preprocessing.split.seed is in an open section, normalised likewise.
# The sample files carry them as JSON integers, as reports written before the switch did. (The
# population MIA's protocol seeds sit in the attack's open ``details``: they are below 2**32 and
# stay JSON integers.)
_POP = "attacks.attacks.mia.details.population_auroc"
SEED_PATHS = (
    *(f"seeds.{k}" for k in ("root", "data", "forget", "init", "estimators", "noise", "attacks")),
    "config.seed",
    "attacks.trials.seed",
    "attacks.trials.root_seed",
    *(f"attacks.attacks.{a}.bound.seed" for a in ("mia", "ulira", "relearn", "whitebox")),
    "dataset.preprocessing.split.seed",
)


def _load(name: str) -> dict:
    return json.loads((DATA / name).read_text(encoding="utf-8"))


def _get(d, path: str):
    for key in path.split("."):
        d = d[key]
    return d


def _set(d, path: str, value) -> None:
    *head, last = path.split(".")
    for key in head:
        d = d[key]
    d[last] = value


def _stringify_seeds(d: dict) -> dict:
    """The producer change: every seed written as a decimal string."""
    d = copy.deepcopy(d)
    for path in SEED_PATHS:
        _set(d, path, str(_get(d, path)))
    return d


def _leaves(obj, prefix=""):
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _leaves(v, f"{prefix}.{k}" if prefix else k)
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _leaves(v, f"{prefix}[{i}]")
    else:
        yield prefix, obj


@pytest.fixture(scope="module")
def validator():
    """A JSON Schema validator for the shipped file (``jsonschema``: the ``test`` extra)."""
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads(schema_path().read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


@pytest.fixture(params=SAMPLES)
def sample(request) -> dict:
    return _load(request.param)


# ------------------------------------------------------------------------------------------------
# The sample reports


def test_samples_validate():
    consistent, violated = (validate_report(_load(n)) for n in SAMPLES)
    assert consistent.verdict == "consistent" and consistent.findings == []
    assert violated.verdict == "violated"
    assert {f.code for f in violated.findings if f.severity == "error"} == {
        "certificate-violated",
        "bound-violated",
        "realized-exceeds-certified",
    }
    assert violated.certificate.conditional and violated.attacks.comparison.certificate_violated
    assert math.isnan(violated.attacks.attacks["mia"].bound.gdp_estimate.mu)
    assert consistent.seeds.noise == 8366031049750315900  # parsed back to int, exactly
    assert consistent.checkpoint_recovery.applicable is True


def test_round_trip_is_exact_once_seeds_are_strings(sample):
    fixed = _stringify_seeds(sample)
    assert ReportModel.from_report_dict(fixed).to_json_dict() == fixed
    text = ReportModel.from_report_dict(fixed).to_json_text()
    assert json.loads(text) == fixed and text.endswith("}\n")


def test_legacy_integer_seeds_are_the_only_difference(sample):
    # Reports written before the producer switched carry JSON integers: accepted, rewritten.
    out = ReportModel.from_report_dict(sample).to_json_dict()
    before, after = dict(_leaves(sample)), dict(_leaves(out))
    assert before.keys() == after.keys()
    changed = {k for k in before if before[k] != after[k]}
    assert changed == set(SEED_PATHS)
    assert all(after[k] == str(before[k]) for k in changed)


def test_samples_validate_against_the_shipped_json_schema(sample, validator):
    normalised = validate_report(sample).to_json_dict()
    assert list(validator.iter_errors(normalised)) == []
    # The raw samples still carry integer seeds, which the schema rejects (producer change).
    bad = {tuple(e.absolute_path) for e in validator.iter_errors(sample)}
    assert ("attacks",) in bad and ("config", "seed") in bad and ("seeds", "root") in bad
    assert list(validator.iter_errors(_stringify_seeds(sample))) == []


# ------------------------------------------------------------------------------------------------
# Explicit encodings


def test_nonfinite_floats_round_trip(validator):
    d = _stringify_seeds(_load("sample-report.json"))
    d["certificate"]["sigma"] = "inf"
    d["certificate"]["sensitivity"] = "inf"
    d["realized"]["bound_slack"] = "inf"
    d["attacks"]["attacks"]["whitebox"]["bound"]["gdp_estimate"]["mu"] = "nan"
    d["attacks"]["attacks"]["whitebox"]["bound"]["gdp_estimate"]["epsilon_estimate"] = "inf"
    d["attacks"]["attacks"]["mia"]["bound"]["threshold"] = "-inf"
    d["tradeoff"]["rows"][0] = {
        k: v for k, v in d["tradeoff"]["rows"][0].items() if k not in ("test_accuracy_released", "realized_epsilon")
    }
    d["tradeoff"]["rows"][0]["sigma"] = "inf"
    m = ReportModel.from_report_dict(d)
    assert m.certificate.sigma == math.inf and isinstance(m.certificate.sigma, float)
    assert math.isnan(m.attacks.attacks["whitebox"].bound.gdp_estimate.mu)
    assert m.attacks.attacks["mia"].bound.threshold == -math.inf
    assert m.to_json_dict() == d
    assert list(validator.iter_errors(d)) == []
    # Python floats are accepted on input and written as the strings.
    d2 = copy.deepcopy(d)
    d2["certificate"]["sigma"] = math.inf
    d2["realized"]["epsilon"] = math.inf
    out = ReportModel.from_report_dict(d2).to_json_dict()
    assert out["certificate"]["sigma"] == "inf" and out["realized"]["epsilon"] == "inf"
    json.dumps(out, allow_nan=False)  # standard JSON


@pytest.mark.parametrize(
    "path, value",
    [
        ("certificate.sigma", "nan"),  # sigma may be unbounded, never undefined
        ("certificate.sigma", "-inf"),
        ("certificate.sigma", -0.5),
        ("certificate.epsilon", 0.0),
        ("certificate.delta", "nan"),  # finite-only fields take no special strings
        ("utility.original.test.accuracy", 1.5),
        ("utility.original.test.loss", "Infinity"),
    ],
)
def test_nonfinite_strings_only_where_allowed(path, value, validator):
    d = _stringify_seeds(_load("sample-report.json"))
    _set(d, path, value)
    with pytest.raises(InvalidInput) as exc:
        validate_report(d)
    assert exc.value.field == path
    assert list(validator.iter_errors(d)), "the JSON Schema must reject it too"


def test_seeds_round_trip_beyond_2_53(validator):
    d = _stringify_seeds(_load("sample-report.json"))
    big = 2**64 - 1
    d["seeds"]["noise"] = str(big)
    d["attacks"]["attacks"]["mia"]["bound"]["seed"] = None  # Bonferroni: no split seed
    m = ReportModel.from_report_dict(d)
    assert m.seeds.noise == big and m.attacks.attacks["mia"].bound.seed is None
    assert m.to_json_dict() == d
    assert float(big) != big  # a JSON number would have lost it
    assert list(validator.iter_errors(d)) == []


@pytest.mark.parametrize("value", ["18446744073709551616", "007", "-1", "0x10", "1e3", "", 1.0, True, -1])
def test_bad_seeds_are_rejected(value):
    d = _stringify_seeds(_load("sample-report.json"))
    d["seeds"]["noise"] = value
    with pytest.raises(InvalidInput) as exc:
        validate_report(d)
    assert exc.value.field == "seeds.noise"
    assert "decimal string" in exc.value.allowed


def test_open_sections_are_normalised_to_json_data():
    d = _stringify_seeds(_load("sample-report.json"))
    d["method"]["hyperparameters"]["big"] = 2**60
    d["method"]["hyperparameters"]["unbounded"] = math.inf
    d["method"]["hyperparameters"]["pair"] = (1, 2)
    out = ReportModel.from_report_dict(d).to_json_dict()["method"]["hyperparameters"]
    assert out["big"] == str(2**60) and out["unbounded"] == "inf" and out["pair"] == [1, 2]


def test_counts_must_be_safe_json_integers():
    d = _stringify_seeds(_load("sample-report.json"))
    d["dataset"]["n_train"] = 2**53
    with pytest.raises(InvalidInput) as exc:
        validate_report(d)
    assert exc.value.field == "dataset.n_train"


# ------------------------------------------------------------------------------------------------
# Corrupt reports: one InvalidInput naming the field


def _drop(path):
    def f(d):
        *head, last = path.split(".")
        del (_get(d, ".".join(head)) if head else d)[last]

    return f


CORRUPTIONS = [
    ("missing certificate.epsilon", _drop("certificate.epsilon"), "certificate.epsilon"),
    ("epsilon not a number", lambda d: _set(d, "certificate.epsilon", "abc"), "certificate.epsilon"),
    ("epsilon as a numeric string", lambda d: _set(d, "certificate.epsilon", "1.0"), "certificate.epsilon"),
    ("unknown top-level field", lambda d: d.update(injected={"x": 1}), "injected"),
    ("negative sigma", lambda d: _set(d, "certificate.sigma", -0.1), "certificate.sigma"),
    ("wrong schema_version", lambda d: _set(d, "schema_version", "1.0"), "schema_version"),
    ("typo in a nested field", lambda d: d["realized"].update(epsilom=1.0), "realized.epsilom"),
    ("raw identifiers", lambda d: d["deletion_request"].update(identifiers=[3, 7]), "deletion_request.identifiers"),
    ("the salt itself", lambda d: _set(d, "deletion_request.salt", "00" * 32), "deletion_request.salt"),
    ("commitment not a digest", lambda d: _set(d, "deletion_request.commitment", "abc"), "deletion_request.commitment"),
    ("verdict contradicts findings", lambda d: _set(d, "verdict", "violated"), "verdict"),
    (
        "bad provenance",
        lambda d: d["certificate"]["constants"][2].update(provenance="guessed"),
        "certificate.constants[2].provenance",
    ),
    (
        "conditional contradicts constants",
        lambda d: _set(d, "certificate.conditional", True),
        "certificate.conditional",
    ),
    (
        "unknown severity",
        lambda d: d["findings"].append({"severity": "info", "code": "x", "message": "m"}),
        "findings[0].severity",
    ),
    (
        "count not an integer",
        lambda d: _set(d, "attacks.attacks.mia.bound.counts.tp", 1.5),
        "attacks.attacks.mia.bound.counts.tp",
    ),
    ("incomplete attack entry", lambda d: d["attacks"]["attacks"].update(lira={}), "attacks.attacks.lira.title"),
    (
        "attack name not a name",
        lambda d: d["attacks"]["attacks"].update({"Bad Name!": d["attacks"]["attacks"]["mia"]}),
        "attacks.attacks.Bad Name!",
    ),
    (
        "unknown finding code",
        lambda d: d["findings"].append({"severity": "warning", "code": "made-up", "message": "m"}),
        "findings[0].code",
    ),
    (
        "severity contradicts the code",
        lambda d: d["findings"].append({"severity": "error", "code": "utility-loss", "message": "m"}),
        "findings[0].severity",
    ),
    (
        "uncertified method with an epsilon",
        lambda d: d["certificate"].update(kind="none", valid=False),
        "certificate.epsilon",
    ),
    (
        "histogram with a missing bin",
        lambda d: d["utility"]["loss_histograms"]["counts"]["original"]["forget"].pop(),
        "utility.loss_histograms.counts.original.forget",
    ),
    (
        "half of the noisy utility",
        _drop("utility.original.test.noisy_loss_std"),
        "utility.original.test.noisy_loss_std",
    ),
    ("checkpoint tag", lambda d: _set(d, "checkpoint_recovery.applicable", "yes"), "checkpoint_recovery.applicable"),
    ("timestamp not RFC 3339", lambda d: _set(d, "created_at", "yesterday"), "created_at"),
    ("started after created", lambda d: _set(d, "started_at", "2099-01-01T00:00:00+00:00"), "started_at"),
    ("n_records vs forget_size", lambda d: _set(d, "deletion_request.n_records", 2), "deletion_request.n_records"),
    ("environment without torch", lambda d: d["environment"]["packages"].pop("torch"), "environment.packages"),
    ("parameter hash missing", _drop("parameters.sha256_unlearned"), "parameters.sha256_unlearned"),
]


@pytest.mark.parametrize("mutate, field", [c[1:] for c in CORRUPTIONS], ids=[c[0] for c in CORRUPTIONS])
def test_corrupt_reports_name_the_field(mutate, field):
    d = _stringify_seeds(_load("sample-report.json"))
    mutate(d)
    with pytest.raises(InvalidInput) as exc:
        validate_report(d)
    err = exc.value
    assert err.field == field
    message = str(err)
    assert message.startswith(f"{field} must be ") and "; got " in message
    assert len(message) < 400 and "\n" not in message
    assert "Traceback" not in message and "pydantic" not in message.lower()


def test_error_details():
    d = _stringify_seeds(_load("sample-report.json"))
    del d["certificate"]["epsilon"]
    with pytest.raises(InvalidInput, match=r"^certificate\.epsilon must be present"):
        validate_report(d)
    d = _stringify_seeds(_load("sample-report.json"))
    d["certificate"]["epsilon"] = "abc"
    with pytest.raises(InvalidInput) as exc:
        validate_report(d)
    assert exc.value.got == "abc" and '"inf"' in exc.value.allowed
    d["dataset"]["name"] = {"long": "x" * 500}
    d["bogus"] = 1
    with pytest.raises(InvalidInput) as exc:
        validate_report(d)
    assert exc.value.hint and "further problem" in exc.value.hint
    assert len(repr(exc.value.got)) < 120
    with pytest.raises(InvalidInput, match="JSON object"):
        validate_report([1, 2])


def test_corrupt_reports_also_fail_the_json_schema(validator):
    for mutate, field in [(CORRUPTIONS[i][1], CORRUPTIONS[i][2]) for i in (0, 1, 3, 4, 5, 6, 7, 8)]:
        d = _stringify_seeds(_load("sample-report.json"))
        mutate(d)
        assert list(validator.iter_errors(d)), field


def test_optional_sections():
    d = _stringify_seeds(_load("sample-report.json"))
    d["attacks"] = None
    del d["timings"]["attacks_s"]
    d["tradeoff"] = None
    d["checkpoint_recovery"] = {"applicable": False, "reason": "eta >= 1/L: Algorithm 3 does not apply"}
    assert ReportModel.from_report_dict(d).to_json_dict() == d
    d["checkpoint_recovery"] = None
    d["timings"]["tradeoff_s"] = 0.25  # further timings are accepted
    assert ReportModel.from_report_dict(d).to_json_dict() == d


def test_load_report_rejects_bare_nan(tmp_path):
    d = _stringify_seeds(_load("sample-report.json"))
    path = tmp_path / "report.json"
    path.write_text(json.dumps(d), encoding="utf-8")
    assert S.load_report(path).verdict == "consistent"
    path.write_text(json.dumps(d).replace('"epsilon": 1.0', '"epsilon": NaN', 1), encoding="utf-8")
    with pytest.raises(InvalidInput, match="NaN"):
        S.load_report(path)


# ------------------------------------------------------------------------------------------------
# The shipped JSON Schema and agreement with the producer


def test_schema_file_is_in_sync():
    assert schema_path().read_text(encoding="utf-8") == schema_text(), (
        "src/audit/report/schemas is stale: run `python -m audit.report.schema`"
    )
    assert S.main(["--check"]) == 0


def test_schema_header():
    schema = json_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$id"] == "https://unlearn-audit.dev/schemas/report-2.5.schema.json"
    assert schema["version"] == "2.5" and schema["title"]
    assert schema_path().name == "report-2.5.schema.json"
    assert schema["additionalProperties"] is False
    assert set(schema["required"]) >= {
        "schema_version",
        "tool",
        "created_at",
        "started_at",
        "method",
        "deletion_request",
        "dataset",
        "parameters",
        "seeds",
        "environment",
        "certificate",
        "verdict",
    }


def test_versions_and_vocabularies_match_the_producer():
    import audit.report as report
    from audit.config import FIELDS
    from audit.findings import CODES
    from certify.certificate import KINDS, PROVENANCES
    from certify.mechanisms import MECHANISMS

    assert S.SCHEMA_VERSION == report.SCHEMA_VERSION
    assert ReportModel.model_json_schema()["properties"]["schema_version"]["const"] == report.SCHEMA_VERSION
    assert get_args(S.Tool.model_fields["name"].annotation) == (report.TOOL,)
    assert set(get_args(S.Constant.model_fields["provenance"].annotation)) == set(PROVENANCES)
    assert set(get_args(S.Certificate.model_fields["mechanism"].annotation)) == set(MECHANISMS)
    assert set(get_args(S.CertificateKind)) == set(KINDS)
    assert set(get_args(S.FindingCode)) == set(CODES)
    # the report's config block is derived from the one declaration of the configuration
    assert list(S.Config.model_fields) == [f.name for f in FIELDS]


@pytest.mark.parametrize(
    "codes, verdict",
    [
        ([], "consistent"),
        ([("warning", "conditional-constants")], "consistent"),
        ([("error", "certificate-not-issued")], "not-certified"),
        ([("warning", "no-theorem")], "not-certified"),
        ([("error", "certificate-not-issued"), ("error", "bound-violated")], "violated"),
        ([("warning", "utility-loss"), ("warning", "not-comparable")], "consistent"),
    ],
)
def test_verdict_rule_is_the_findings_table(codes, verdict):
    from audit.findings import verdict_of

    findings = [{"severity": s, "code": c, "message": "m"} for s, c in codes]
    assert verdict_of(findings) == S.verdict_of(findings) == verdict
    d = _stringify_seeds(_load("sample-report.json"))
    d["findings"] = [dict(f, severity=CODES[f["code"]].severity) for f in findings]
    d["verdict"] = verdict
    assert ReportModel.from_report_dict(d).verdict == verdict


def test_schema_module_imports_first_without_a_cycle():
    code = "import audit.report.schema as s; print(s.SCHEMA_VERSION)"
    src = str(Path(__file__).resolve().parents[1] / "src")
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env={"PYTHONPATH": src, "PATH": ""}, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "2.5"


def test_a_fresh_audit_report_validates(validator):
    from audit.config import AuditConfig
    from audit.pipeline import run

    report = run(
        AuditConfig(max_train=300, steps=20, trials=20, attacks=("whitebox", "mia"), noise_draws=2, curve_points=3),
        salt=b"s" * 16,
    )
    d = json.loads(report.to_json())
    model = validate_report(d)
    out = model.to_json_dict()
    assert list(validator.iter_errors(out)) == []
    assert ReportModel.from_report_dict(out).to_json_dict() == out


# ----------------------------------------------------------------------------------------------
# The versioning rule (module docstring, "Versions"): a new optional key is a minor version, a
# reader accepts unknown keys of a newer minor version of its major, a breaking change is a major.


def _minor_after(version: str) -> str:
    major, minor = version.split(".")
    return f"{major}.{int(minor) + 1}"


def _newer_writer():
    """The next minor version as its writer would declare it: this version's models plus one
    optional key at the top and one in a section (the recipe for adding a report key)."""
    from pydantic import create_model

    newer = _minor_after(S.SCHEMA_VERSION)
    realized = create_model("NewerRealized", __base__=S.Realized, spread=(float | None, S.Absent()))
    return newer, create_model(
        "NewerReport",
        __base__=ReportModel,
        schema_version=(S.schema_version_field(newer), ...),
        realized=(realized, ...),
        provenance_note=(str | None, S.Absent()),
    )


def test_a_new_optional_key_is_a_minor_version_that_older_readers_accept():
    newer, Newer = _newer_writer()
    ours = _stringify_seeds(_load("sample-report.json"))
    # the newer version reads this version's reports: the key is optional
    assert Newer.model_validate(ours, context={}).schema_version == S.SCHEMA_VERSION
    # the newer writer writes the keys; this version's reader reads the report without them
    written = Newer.model_validate(
        {**ours, "schema_version": newer, "provenance_note": "by hand", "realized": {**ours["realized"], "spread": 0.5}}
    ).to_json_dict()
    assert written["provenance_note"] == "by hand" and written["realized"]["spread"] == 0.5
    read = validate_report(copy.deepcopy(written))
    assert read.schema_version == newer
    assert read.to_json_dict() == {**ours, "schema_version": newer}  # everything it knows, as written
    # the same unknown keys in a document of this version (or an older one) are errors: a typo
    for version in (S.SCHEMA_VERSION, f"{S.SCHEMA_VERSION.split('.')[0]}.0"):
        with pytest.raises(InvalidInput) as exc:
            validate_report({**written, "schema_version": version})
        assert exc.value.field in ("provenance_note", "realized.spread")


def test_another_major_version_is_refused_and_a_writer_writes_its_own_version():
    d = _stringify_seeds(_load("sample-report.json"))
    major = int(S.SCHEMA_VERSION.split(".")[0])
    for version in (f"{major + 1}.0", f"{major - 1}.9", "2", "two"):
        with pytest.raises(InvalidInput) as exc:
            validate_report({**d, "schema_version": version})
        assert exc.value.field == "schema_version", version
    with pytest.raises(ValueError, match="schema_version"):
        ReportModel(
            **{**ReportModel.model_validate(d, context={}).__dict__, "schema_version": _minor_after(S.SCHEMA_VERSION)}
        )


def test_the_comparison_reads_by_the_same_rule_and_declares_its_version():
    from audit.report.comparison import COMPARISON_SCHEMA_VERSION, ComparisonModel
    from audit.report.schema import read_context

    newer = _minor_after(COMPARISON_SCHEMA_VERSION)
    assert read_context({"schema_version": newer}, COMPARISON_SCHEMA_VERSION) == {S.NEWER_MINOR: True}
    assert read_context({"schema_version": COMPARISON_SCHEMA_VERSION}, COMPARISON_SCHEMA_VERSION) == {
        S.NEWER_MINOR: False
    }
    field = ComparisonModel.model_fields["schema_version"]
    assert ComparisonModel.model_json_schema()["properties"]["schema_version"]["const"] == COMPARISON_SCHEMA_VERSION
    assert field.is_required()
