"""``audit compare`` (audit.comparing): every method on the same data, one signed page."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from html import unescape

import numpy as np
import pytest
from typer.testing import CliRunner

from audit.cli import app
from audit.comparing import FastestWithin, compare
from audit.config import AuditConfig
from audit.pipeline import run
from audit.report.comparison import ComparisonModel, schema_path, schema_text, validate_comparison
from audit.report.html import fmt, pct
from certify.errors import InvalidInput

#: Small and quick, with every column filled: noise-mode attacks incl. U-LiRA and RMIA, a frontier.
SETTINGS = dict(
    max_train=400,
    trials=20,
    shadow_models=4,
    noise_draws=4,
    curve_points=3,
    attacks=("mia", "ulira", "rmia"),
    frontier=(0.5, 1.0, 4.0),
    seed=3,
)
METHODS = ("r2d", "newton", "ngd", "finetune", "retrain")
SALT = bytes(range(32))
#: Wall-clock measurements: the only fields that differ between two runs of the same audit.
TIMED = {"created_at", "started_at", "timings"}


@pytest.fixture(scope="module")
def comparison():
    return compare(AuditConfig(**SETTINGS), METHODS, salt=SALT)


@pytest.fixture(scope="module")
def written(comparison, tmp_path_factory):
    from audit.report.keys import generate_keypair

    keys = tmp_path_factory.mktemp("keys")
    private, public = generate_keypair(keys)
    out = tmp_path_factory.mktemp("cmp") / "out"
    comparison.write(out, sign_key=private)
    return out, public


def _without_time(report: dict) -> dict:
    return {k: v for k, v in report.items() if k not in TIMED}


# -- the same numbers as each method's own audit ---------------------------------------------
@pytest.mark.slow  # five more audits (the CLI test below does one in the fast lane)
def test_each_methods_report_is_its_own_audit_with_the_same_seed(comparison):
    """Run alone with the same settings and salt, each method gives the same report (but the clock)."""
    for name in METHODS:
        alone = run(AuditConfig(method=name, **SETTINGS), salt=SALT).to_dict()
        assert _without_time(comparison.reports[name].to_dict()) == _without_time(alone), name


@pytest.mark.slow  # the module's comparison of five methods
def test_every_row_number_is_the_one_in_that_methods_report(comparison, written):
    out, _ = written
    for row in comparison.document.methods:
        text = (out / row.report).read_text()
        assert hashlib.sha256(text.encode()).hexdigest() == row.report_sha256
        r = json.loads(text)
        u = r["utility"]["unlearned"]["test"]
        assert row.certified_epsilon == (r["certificate"]["epsilon"] if r["certificate"]["valid"] else None)
        assert (row.sigma, row.verdict, row.certificate_kind) == (
            r["certificate"]["sigma"],
            r["verdict"],
            r["certificate"]["kind"],
        )
        assert (row.test_accuracy_noiseless, row.test_accuracy_released_mean, row.test_accuracy_released_std) == (
            u["accuracy"],
            u["noisy_accuracy_mean"],
            u["noisy_accuracy_std"],
        )
        assert row.test_accuracy_retrained == r["utility"]["retrained"]["test"]["accuracy"]
        assert row.loss_vs_retrained_points == 100 * (
            r["utility"]["retrained"]["test"]["accuracy"] - u["noisy_accuracy_mean"]
        )
        assert (row.learn_s, row.unlearn_s, row.retrain_s, row.speedup_vs_retrain) == tuple(
            r["timings"][k] for k in ("learn_s", "unlearn_s", "retrain_s", "speedup_vs_retrain")
        )
        assert (row.unlearn_repeats_s, row.retrain_repeats_s) == (
            r["timings"]["unlearn_repeats_s"],
            r["timings"]["retrain_repeats_s"],
        )
        assert row.unlearn_s == sorted(row.unlearn_repeats_s)[1] and len(row.retrain_repeats_s) == 3  # the median
        assert row.leakage.best_empirical_epsilon == r["attacks"]["comparison"]["best_empirical_epsilon"]
        assert row.leakage.auroc == {a: v["bound"]["roc"]["auroc"] for a, v in r["attacks"]["attacks"].items()}
        assert row.model_dump(mode="json")["frontier"] == r["frontier"]
        assert row.model_dump(mode="json")["no_op_epsilon"] == r["realized"]["no_op_epsilon"]
        knob = row.model_dump(mode="json")["knob"] or None
        if knob is not None:  # an optional key the report leaves out is null in the row's model
            knob = {k: v for k, v in knob.items() if v is not None or k in r["tradeoff"]}
        assert knob == r["tradeoff"]


@pytest.mark.slow  # the module's comparison of five methods
def test_every_number_on_the_page_is_the_one_in_that_methods_report(written):
    out, _ = written
    page = (out / "report.html").read_text()
    for name in METHODS:
        r = json.loads((out / "methods" / name / "report.json").read_text())
        row = re.search(rf'<tr id="row-{name}".*?</tr>', page, re.S).group(0)
        cells = {
            m[0]: unescape(re.sub(r"<[^>]+>", "", m[1])).strip()
            for m in re.findall(r'data-field="([^"]+)">(.*?)</td>', row, re.S)
        }
        cert, u = r["certificate"], r["utility"]["unlearned"]["test"]
        assert cells["sigma"] == fmt(cert["sigma"])
        assert cells["no_op_epsilon"].startswith(fmt(r["realized"]["no_op_epsilon"]))
        exact = " (exact)" if cert["kind"] == "exact" else ""
        assert cells["certified_epsilon"].rstrip("*") == (fmt(cert["epsilon"]) + exact if cert["valid"] else "none")
        assert cells["test_accuracy_released"] == f"{pct(u['noisy_accuracy_mean'])} ± {pct(u['noisy_accuracy_std'])}"
        runs = r["timings"]["unlearn_repeats_s"]
        median = fmt(r["timings"]["unlearn_s"], 3)
        assert cells["unlearn_s"] == f"{median}{fmt(min(runs), 3)}–{fmt(max(runs), 3)}, 3 runs"
        assert cells["learn_s"] == fmt(r["timings"]["learn_s"], 3)
        assert cells["speedup_vs_retrain"] == fmt(r["timings"]["speedup_vs_retrain"], 3) + "×"
        best = r["attacks"]["comparison"]
        assert cells["best_empirical_epsilon"].startswith(fmt(best["best_empirical_epsilon"]))
        for attack in ("ulira", "rmia"):
            assert cells[f"auroc-{attack}"] == fmt(r["attacks"]["attacks"][attack]["bound"]["roc"]["auroc"])
        frontier = re.search(
            rf"<tr><th>{name}</th>(.*?)</tr>", page.split('id="frontier-table"')[1].split("</table>")[0], re.S
        )
        if r["frontier"]["applicable"]:
            shown = re.findall(r'data-epsilon="([^"]+)">([^<]+)<', frontier.group(1))
            assert shown == [(str(p["epsilon"]), pct(p["test_accuracy_mean"])) for p in r["frontier"]["points"]]
        else:
            assert frontier is None and r["frontier"]["reason"] in unescape(page)


# -- what a comparison holds ----------------------------------------------------------------------
@pytest.mark.slow  # the module's comparison of five methods
def test_one_commitment_one_split_and_the_recommendation_follows_its_rule(comparison):
    doc = comparison.document
    assert {r.deletion_request.commitment for r in comparison.reports.values()} == {doc.deletion_request.commitment}
    assert len({r.dataset.content_hash for r in comparison.reports.values()}) == 1
    assert [m.name for m in doc.methods] == list(METHODS) and doc.reference == "retrain"
    rec = doc.recommendation
    assert rec == FastestWithin(1.0).apply(doc.methods, doc.epsilon, doc.delta)
    assert "retrain" in rec.eligible  # exact: nothing released differs from retraining
    assert "finetune" in rec.excluded and "no theorem" in rec.excluded["finetune"]
    fastest = min((m for m in doc.methods if m.name in rec.eligible), key=lambda m: m.unlearn_s)
    assert rec.method == fastest.name and "1 points below retraining" in rec.rule


@pytest.mark.slow  # the module's comparison of five methods
def test_frontier_and_knob_reach_the_comparison(comparison):
    rows = {m.name: m for m in comparison.document.methods}
    assert [p.epsilon for p in rows["r2d"].frontier.points] == [0.5, 1.0, 4.0]
    assert rows["finetune"].frontier.applicable is False
    assert rows["r2d"].knob.knob.option == "rewind" and rows["ngd"].knob.knob.option == "l2"


def _row(name: str, **kw):
    base = dict(
        name=name,
        title=name,
        paper="p",
        report=f"methods/{name}/report.json",
        report_sha256="0" * 64,
        verdict="consistent",
        certificate_kind="output-noise",
        certified_epsilon=1.0,
        conditional=False,
        cumulative_epsilon=None,
        sigma=0.1,
        sensitivity=0.1,
        test_accuracy_noiseless=0.8,
        test_accuracy_released_mean=0.79,
        test_accuracy_released_std=0.01,
        test_accuracy_retrained=0.8,
        noise_cost_points=1.0,
        loss_vs_retrained_points=1.0,
        learn_s=1.0,
        unlearn_s=1.0,
        retrain_s=2.0,
        speedup_vs_retrain=2.0,
        leakage=None,
        frontier=None,
        knob=None,
        findings=[],
    )
    return ComparisonModel.model_fields["methods"].annotation.__args__[0](**{**base, **kw})


def test_the_rule_picks_the_fastest_eligible_and_names_what_each_other_misses():
    rows = [
        _row("slow", unlearn_s=5.0, retrain_s=20.0, loss_vs_retrained_points=0.1),
        _row("fast", unlearn_s=0.1, loss_vs_retrained_points=3.0),
        _row("none", certified_epsilon=None, certificate_kind="none", verdict="not-certified"),
        _row("bad", verdict="violated", unlearn_s=0.01),
    ]
    rec = FastestWithin(1.0).apply(rows, 1.0, 1e-5)
    assert rec.method == "slow" and rec.eligible == ["slow"]
    assert "3.00 points below retraining" in rec.excluded["fast"] and "violated" in rec.excluded["bad"]
    assert FastestWithin(5.0).apply(rows, 1.0, 1e-5).eligible == ["fast", "slow"]  # a looser bound: a superset
    nothing = FastestWithin(0.0).apply(rows, 1.0, 1e-5)
    assert nothing.method is None and "add retrain" in nothing.why
    with pytest.raises(InvalidInput, match="max_accuracy_loss"):
        FastestWithin(-1.0)


def _retrain_row(unlearn_s: float, runs: list[float] | None = None):
    return _row(
        "retrain",
        certificate_kind="exact",
        certified_epsilon=0.0,
        sigma=0.0,
        sensitivity=0.0,
        loss_vs_retrained_points=0.0,
        noise_cost_points=0.0,
        unlearn_s=unlearn_s,
        retrain_s=unlearn_s,
        speedup_vs_retrain=1.0,
        unlearn_repeats_s=runs,
        retrain_repeats_s=runs,
    )


def test_a_method_slower_than_retraining_is_never_recommended_over_it():
    slower = _row("newton", unlearn_s=0.03, unlearn_repeats_s=[0.028, 0.03, 0.033], retrain_s=0.05)
    rec = FastestWithin(1.0).apply([slower, _retrain_row(0.01, [0.009, 0.01, 0.012])], 1.0, 1e-5)
    assert rec.method == "retrain" and rec.eligible == ["retrain"]
    assert "slower than retrain's 0.01 s (0.009-0.012)" in rec.excluded["newton"]
    assert "exact (epsilon = 0" in rec.why and "unlearns faster than retraining" in rec.rule
    # faster than the retrain row but slower than its own A(D \\ Z) (a speed-up below 1x): not recommended either
    own = _row("newton", unlearn_s=0.003, unlearn_repeats_s=[0.003] * 3, retrain_s=0.001, speedup_vs_retrain=0.33)
    rec = FastestWithin(1.0).apply([own, _retrain_row(0.01, [0.009, 0.01, 0.012])], 1.0, 1e-5)
    assert rec.method == "retrain" and "slower than its own retraining's 0.001 s" in rec.excluded["newton"]
    # the property, over many random timings: the pick is retrain or beats retraining's fastest run
    rng = np.random.default_rng(0)
    for _ in range(200):
        runs = {name: sorted(rng.uniform(0.001, 0.05, 3).tolist()) for name in ("r2d", "newton", "retrain")}
        rows = [_row(n, unlearn_s=runs[n][1], unlearn_repeats_s=runs[n]) for n in ("r2d", "newton")]
        rec = FastestWithin(1.0).apply([*rows, _retrain_row(runs["retrain"][1], runs["retrain"])], 1.0, 1e-5)
        assert rec.method == "retrain" or max(runs[rec.method]) < min(runs["retrain"])


def test_a_difference_inside_the_timing_spread_is_a_tie_that_goes_to_retrain():
    # newton's median is below retraining's, but its slowest run is not faster than retraining's fastest
    tied = _row("newton", unlearn_s=0.009, unlearn_repeats_s=[0.008, 0.009, 0.0105], retrain_s=0.05)
    rec = FastestWithin(1.0).apply([tied, _retrain_row(0.01, [0.0095, 0.01, 0.011])], 1.0, 1e-5)
    assert rec.method == "retrain"
    assert "a tie, which goes to retrain" in rec.excluded["newton"]
    assert "newton tied with it within the spread" in rec.why
    # beyond the spread, the faster method wins and the why says by how much
    fast = _row("newton", unlearn_s=0.002, unlearn_repeats_s=[0.0019, 0.002, 0.0021], retrain_s=0.05)
    rec = FastestWithin(1.0).apply([fast, _retrain_row(0.01, [0.0095, 0.01, 0.011])], 1.0, 1e-5)
    assert rec.method == "newton" and rec.eligible == ["newton", "retrain"]
    assert "faster than retrain's 0.01 s (0.0095-0.011) beyond the timing spread (speed-up 5x)" in rec.why


def test_without_retrain_each_method_must_beat_its_own_retraining():
    own = dict(retrain_s=2.0, retrain_repeats_s=[1.9, 2.0, 2.1])
    rows = [
        _row("a", unlearn_s=3.0, unlearn_repeats_s=[2.9, 3.0, 3.1], **own),
        _row("b", unlearn_s=0.5, unlearn_repeats_s=[0.4, 0.5, 0.6], **own),
    ]
    rec = FastestWithin(1.0).apply(rows, 1.0, 1e-5)
    assert rec.method == "b" and "its own retraining's 2 s (1.9-2.1)" in rec.why
    assert "slower than its own retraining's" in rec.excluded["a"] and "add it to the comparison" in rec.excluded["a"]


def test_a_method_whose_theorem_excludes_a_multiclass_cnn_is_listed_with_its_reason():
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(90, 1, 16, 16)).astype("float32"), rng.integers(0, 3, 90)
    result = compare(
        AuditConfig(model="cnn", dataset="caller", attacks=(), steps=3, noise_draws=2, frontier=(1.0,)),
        ("newton", "ngd", "retrain"),
        data=(X, y),
    )
    doc = result.document
    assert [m.name for m in doc.methods] == ["retrain"]
    reasons = {m.name: m.reason for m in doc.not_applicable}
    assert "binary logistic regression" in reasons["newton"] and "3 output(s)" in reasons["newton"]
    assert "binary task" in reasons["ngd"]


def test_a_layer_the_theorem_excludes_is_named_and_the_method_not_run():
    import torch

    net = torch.nn.Sequential(torch.nn.Linear(2, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    result = compare(
        AuditConfig(model="caller", max_train=200, attacks=(), steps=3, noise_draws=2, frontier=(1.0,)),
        ("r2d", "finetune"),
        model=net,
    )
    assert [m.name for m in result.document.methods] == ["finetune"]
    (skipped,) = result.document.not_applicable
    assert skipped.name == "r2d" and "layer 1 (ReLU)" in skipped.reason and "smooth" in skipped.reason


# -- the directory, the signature, the schema ---------------------------------------------------
@pytest.mark.slow  # the module's comparison of five methods
def test_the_comparison_and_each_method_verify_and_tampering_is_caught(written):
    out, public = written
    runner = CliRunner()
    result = runner.invoke(app, ["verify", str(out), "--key", str(public)])
    assert result.exit_code == 0, result.stderr
    assert "comparison at epsilon=1 delta=1e-05" in result.stdout and "methods/r2d/report.json" in result.stdout
    for name in METHODS:
        assert runner.invoke(app, ["verify", str(out / "methods" / name), "--key", str(public)]).exit_code == 0
    (out / "deletion-commitment.salt").stat()
    assert oct((out / "deletion-commitment.salt").stat().st_mode & 0o777) == "0o600"
    page = out / "methods" / "ngd" / "report.json"
    original = page.read_bytes()
    try:
        page.write_bytes(original.replace(b'"verdict": "consistent"', b'"verdict": "violated"'))
        result = runner.invoke(app, ["verify", str(out), "--key", str(public)])
        assert result.exit_code == 3 and "methods/ngd/report.json was modified" in result.stderr
    finally:
        page.write_bytes(original)


@pytest.mark.slow  # the module's comparison of five methods
def test_the_document_validates_against_its_schema_file(written):
    import jsonschema

    out, _ = written
    doc = json.loads((out / "report.json").read_text())
    validate_comparison(doc)
    jsonschema.validate(doc, json.loads(schema_path().read_text()))
    with pytest.raises(InvalidInput, match="recommendation.method"):
        validate_comparison({**doc, "recommendation": {**doc["recommendation"], "method": "dpsgd"}})


@pytest.mark.slow  # the module's comparison of five methods
def test_a_newer_minor_comparison_is_read_without_the_keys_it_adds(written):
    """The versioning rule (audit.report.schema, "Versions") for the comparison's reader."""
    from audit.report.comparison import COMPARISON_SCHEMA_VERSION

    out, _ = written
    doc = json.loads((out / "report.json").read_text())
    major, minor = COMPARISON_SCHEMA_VERSION.split(".")
    newer = {
        **doc,
        "schema_version": f"{major}.{int(minor) + 1}",
        "added_later": 1,
        "recommendation": {**doc["recommendation"], "added_later": 2},
    }
    read = validate_comparison(newer)
    assert read.schema_version == newer["schema_version"]
    assert read.recommendation.method == doc["recommendation"]["method"]
    with pytest.raises(InvalidInput, match="added_later"):  # the same keys in this version: an error
        validate_comparison({**newer, "schema_version": doc["schema_version"]})
    with pytest.raises(InvalidInput, match="schema_version"):
        validate_comparison({**doc, "schema_version": f"{int(major) + 1}.0"})


def test_the_schema_file_is_current():
    assert schema_path().read_text(encoding="utf-8") == schema_text(), "run python -m audit.report.comparison"


# -- the command line ---------------------------------------------------------------------------
FLAGS = [
    "--max-train",
    "400",
    "--trials",
    "20",
    "--shadow-models",
    "4",
    "--noise-draws",
    "4",
    "--curve-points",
    "3",
    "--attacks",
    "mia,ulira,rmia",
    "--frontier",
    "0.5,1,4",
    "--seed",
    "3",
]


def test_cli_compare_writes_a_signed_set_and_its_method_reports_equal_audit_run(tmp_path):
    from audit.report.keys import generate_keypair

    private, _ = generate_keypair(tmp_path / "keys")
    out = tmp_path / "cmp"
    runner = CliRunner()
    result = runner.invoke(
        app, ["compare", "--methods", "r2d,retrain", *FLAGS, "--out", str(out), "--sign-key", str(private)]
    )
    assert result.exit_code == 0, result.stderr
    assert "recommendation:" in result.stderr and "rule: the fastest method" in result.stderr
    assert "no-op eps" in result.stderr  # the no-op reference is a column of the table
    assert sorted(p.name for p in out.iterdir()) == [
        "deletion-commitment.salt",
        "methods",
        "report.dsse.json",
        "report.html",
        "report.json",
    ]
    alone = runner.invoke(
        app,
        ["run", "--method", "r2d", *FLAGS, "--commitment-salt", str(out / "deletion-commitment.salt"), "--json", "-q"],
    )
    embedded = json.loads((out / "methods" / "r2d" / "report.json").read_text())
    assert _without_time(json.loads(alone.stdout)) == _without_time(embedded)


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["--methods", "r2d,nosuch"], "--methods"),
        (["--methods", "r2d,r2d"], "each method once"),
        (["--max-accuracy-loss", "-1"], "--max-accuracy-loss"),
        (["--methods", "r2d", "-o", "nonsense=1"], "declared by at least one compared method"),
        (["--sigma-budget", "1"], "No such option"),
    ],
)
def test_cli_compare_bad_input_is_one_sentence_and_writes_nothing(tmp_path, argv, words):
    result = CliRunner().invoke(app, ["compare", *argv, "--out", str(tmp_path / "out")])
    assert result.exit_code == 2, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and words in lines[0], lines
    assert not (tmp_path / "out").exists()


def test_cli_compare_refuses_a_config_file_that_picks_one_method(tmp_path):
    (tmp_path / "c.toml").write_text('method = "r2d"\n')
    result = CliRunner().invoke(app, ["compare", "--config", str(tmp_path / "c.toml")])
    assert result.exit_code == 2 and "use --methods" in result.stderr


def test_the_library_call_and_audit_report_rerender_a_comparison(tmp_path):
    import audit

    result = audit.compare(
        audit.AuditConfig(max_train=200, attacks=(), noise_draws=2, curve_points=2, frontier=(1.0,)),
        ["newton", "retrain"],
    )
    out = tmp_path / "cmp"
    result.write(out)
    page = tmp_path / "again.html"
    assert CliRunner().invoke(app, ["report", str(out / "report.json"), "--html", str(page)]).exit_code == 0
    assert page.read_text() == (out / "report.html").read_text()  # same document, same bytes


def test_a_method_that_refuses_while_running_is_listed_and_the_others_stand(monkeypatch, tmp_path):
    import audit.pipeline

    real = audit.pipeline.run

    def refusing(config, *args, **kwargs):
        if config.method == "newton":
            raise InvalidInput("memory_cap", "at least 5 GiB for this model", "1 GiB")
        return real(config, *args, **kwargs)

    monkeypatch.setattr(audit.pipeline, "run", refusing)
    config = AuditConfig(
        max_train=200, attacks=(), noise_draws=2, curve_points=2, frontier=(1.0,), resume=str(tmp_path / "shards")
    )
    doc = compare(config, ["newton", "retrain"]).document
    assert [m.name for m in doc.methods] == ["retrain"]
    (refused,) = doc.not_applicable
    assert refused.name == "newton" and refused.reason.startswith("refused while running: memory_cap must be")
    assert doc.recommendation.method == "retrain"


def test_a_comparison_resumes_each_methods_shards_from_a_directory_of_its_own(tmp_path):
    config = AuditConfig(
        max_train=200,
        trials=10,
        shadow_models=2,
        attacks=("mia",),
        noise_draws=2,
        curve_points=2,
        frontier=(1.0,),
        resume=str(tmp_path / "shards"),
    )
    first = compare(config, ["r2d", "retrain"], salt=SALT)
    again = compare(config, ["r2d", "retrain"], salt=SALT)
    assert sorted(p.name for p in (tmp_path / "shards").iterdir()) == ["r2d", "retrain"]
    for name in ("r2d", "retrain"):
        assert again.reports[name].attacks.execution.resumed == ["trials[0:10)"]
        assert again.reports[name].attacks.comparison == first.reports[name].attacks.comparison


def test_the_openssl_recipe_verifies_a_comparison_and_catches_a_changed_or_added_method_report(tmp_path):
    import shutil
    import subprocess

    from audit.report.keys import generate_keypair
    from audit.report.signing import OPENSSL_VERIFY_SCRIPT

    if not all(shutil.which(t) for t in ("bash", "base64", "sha256sum", "openssl")):
        pytest.skip("needs bash, base64, sha256sum and openssl")
    private, public = generate_keypair(tmp_path / "keys")
    out = tmp_path / "cmp"
    compare(
        AuditConfig(max_train=200, attacks=(), noise_draws=2, curve_points=2, frontier=(1.0,)), ["newton", "retrain"]
    ).write(out, sign_key=private)
    (tmp_path / "verify.sh").write_text(OPENSSL_VERIFY_SCRIPT)

    def script():
        env = {"PATH": "/usr/bin:/bin", "DIR": str(out), "PUB": str(public)}
        return subprocess.run(
            ["bash", str(tmp_path / "verify.sh")],
            cwd=tmp_path / "keys",
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )

    shutil.copytree(out / "methods" / "newton", tmp_path / "kept-newton")
    ok = script()
    if "pkeyutl" in ok.stderr and "rawin" in ok.stderr:
        pytest.skip("OpenSSL without pkeyutl -rawin (needs >= 3.0)")
    assert ok.returncode == 0 and "OK methods/newton/report.json" in ok.stdout, ok.stderr
    with open(out / "methods" / "newton" / "report.html", "a") as fh:
        fh.write("<!-- changed -->")
    bad = script()
    assert bad.returncode != 0 and "methods/newton/report.html was modified" in bad.stdout + bad.stderr
    # a method's report directory added after signing (itself signed by the same key) is refused by both
    shutil.rmtree(out / "methods" / "newton")
    shutil.copytree(tmp_path / "kept-newton", out / "methods" / "newton")
    shutil.copytree(out / "methods" / "newton", out / "methods" / "noop")
    noop = script()
    assert noop.returncode != 0 and "FAIL: the signature does not cover 'methods/noop/'" in noop.stderr
    verified = CliRunner().invoke(app, ["verify", str(out), "--key", str(public)])
    assert verified.exit_code == 3 and verified.stderr.startswith(
        "error: verification failed: The signature does not cover methods/noop/ in "
    )


def test_a_sequence_of_requests_shows_each_methods_cumulative_epsilon():
    config = AuditConfig(max_train=300, requests=3, forget_count=2, attacks=(), noise_draws=2, curve_points=2)
    result = compare(config, ["r2d", "retrain"])
    for row in result.document.methods:
        ledger = result.reports[row.name].ledger
        assert row.cumulative_epsilon == ledger.cumulative_epsilon and len(ledger.releases) == 3
        assert row.frontier.applicable is False
    r2d = next(r for r in result.document.methods if r.name == "r2d")
    assert r2d.cumulative_epsilon > r2d.certified_epsilon  # three releases compose to more than one


@pytest.mark.slow  # the module's comparison of five methods (tests/test_html.py renders the same line cheaply)
def test_a_methods_page_opens_the_commitment_with_the_comparisons_one_salt(written):
    """The salt is written once, at the comparison's top: a method's page names it from its own directory."""
    out, _ = written
    page = (out / "methods" / "r2d" / "report.html").read_text()
    assert "--salt ../../deletion-commitment.salt" in page and (out / "deletion-commitment.salt").is_file()
    assert not (out / "methods" / "r2d" / "deletion-commitment.salt").exists()


@pytest.mark.parametrize(
    ("args", "kwargs", "field", "allowed"),
    [
        ((None,), {}, "config", "AuditConfig"),
        (({"epsilon": 1.0},), {}, "config", "AuditConfig.from_dict"),
        ((AuditConfig(),), {"rule": "fastest"}, "rule", "FastestWithin(max_accuracy_loss="),
    ],
)
def test_library_compare_refuses_a_wrong_argument_naming_it(args, kwargs, field, allowed):
    import audit

    with pytest.raises(InvalidInput) as info:
        audit.compare(*args, **kwargs)
    assert info.value.field == field and allowed in str(info.value)


def test_a_stale_method_run_directory_is_the_callers_error_not_a_methods_refusal(tmp_path):
    from audit.runstore import FORMAT, MANIFEST

    (tmp_path / "shards" / "retrain").mkdir(parents=True)
    (tmp_path / "shards" / "retrain" / MANIFEST).write_text(json.dumps({"format": FORMAT, "key": "0" * 64}))
    config = AuditConfig(
        max_train=200,
        trials=10,
        attacks=("mia",),
        noise_draws=2,
        curve_points=2,
        frontier=(),
        resume=str(tmp_path / "shards"),
    )
    with pytest.raises(InvalidInput, match="another configuration") as info:
        compare(config, ["retrain"])
    assert info.value.field == "resume" and info.value.got == str(tmp_path / "shards" / "retrain")
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / MANIFEST).write_text("{}")  # one audit's run directory: refused before any training
    with pytest.raises(InvalidInput, match="one subdirectory per method"):
        compare(dataclasses.replace(config, resume=str(tmp_path / "run")), ["retrain"])


def test_when_retraining_is_fastest_retrain_is_recommended_and_shown_and_signed_exact(monkeypatch, tmp_path):
    """r2d and newton made 50 ms slower than they are: retraining (a few ms at 300 records) is fastest."""
    import time

    from audit.report.keys import generate_keypair
    from audit.report.signing import verify_report
    from unlearners.newton import NewtonRemoval
    from unlearners.r2d import RewindToDelete

    for cls in (RewindToDelete, NewtonRemoval):

        def slowed(self, *args, _real=cls._unlearn, **kwargs):
            time.sleep(0.05)
            return _real(self, *args, **kwargs)

        monkeypatch.setattr(cls, "_unlearn", slowed)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 4))
    y = (X[:, 0] + 0.3 * rng.normal(size=300) > 0).astype(int)
    result = compare(
        AuditConfig(dataset="caller", attacks=(), noise_draws=2, curve_points=2, frontier=()),
        ["r2d", "newton", "retrain"],
        rule=FastestWithin(100.0),
        data=(X, y),
    )  # timing alone decides
    doc = result.document
    rows = {r.name: r for r in doc.methods}
    assert doc.recommendation.method == "retrain" and doc.recommendation.eligible == ["retrain"]
    assert rows["retrain"].certificate_kind == "exact" and rows["retrain"].certified_epsilon == 0.0
    assert len(rows["r2d"].unlearn_repeats_s) == 3 and min(rows["r2d"].unlearn_repeats_s) >= 0.05
    for name in ("r2d", "newton"):
        assert "slower than retrain's" in doc.recommendation.excluded[name], doc.recommendation.excluded[name]
    assert "exact (epsilon = 0" in doc.recommendation.why
    private, public = generate_keypair(tmp_path / "keys")
    result.write(tmp_path / "cmp", sign_key=private)
    page = (tmp_path / "cmp" / "report.html").read_text()
    row = re.search(r'<tr id="row-retrain".*?</tr>', page, re.S).group(0)
    assert re.search(r'data-field="certified_epsilon">0 \(exact\)<', row) and 'class="chosen"' in row
    assert '<div class="verdict-word">retrain</div>' in page
    claims = verify_report(tmp_path / "cmp", public).predicate
    assert claims["recommended"] == "retrain"
    assert {m["name"]: (m["certificate_kind"], m["certified_epsilon"]) for m in claims["methods"]}["retrain"] == (
        "exact",
        0.0,
    )
    single = verify_report(tmp_path / "cmp" / "methods" / "retrain", public).predicate
    assert single["certified"]["kind"] == "exact" and single["certified"]["epsilon"] == 0.0
