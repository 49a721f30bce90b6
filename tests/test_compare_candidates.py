"""``audit compare`` with the caller's own unlearning functions as candidates (issue 25, item 6)."""

from __future__ import annotations

import copy
import hashlib
import json

import pytest
import torch
from torch.utils.data import TensorDataset
from typer.testing import CliRunner

from audit.cli import app
from audit.comparing import CANDIDATE_REFERENCE, FastestWithin, compare, measured_ranking
from audit.config import AuditConfig
from audit.report.comparison import ComparisonModel, Leakage, validate_comparison
from certify.errors import InvalidInput
from test_caller import TinyNet, _config, adam, blobs, from_scratch, keep
from unlearners.caller import retrain_with, seeded

SALT = bytes(range(32))
MINE = f"{adam.__module__}.adam"


@pytest.fixture(scope="module")
def candidates():
    """Two candidates alone (no registered method, so no reference): two caller audits, ~1 s."""
    return compare(
        _config(timing_repeats=1),
        [],
        candidates={"keep": keep, "scratch": from_scratch},
        train=adam,
        model=TinyNet(),
        data=blobs(),
        salt=SALT,
    )


def test_each_candidate_is_a_row_of_its_own_code_with_its_own_report(candidates, tmp_path):
    doc = candidates.document
    assert [r.name for r in doc.methods] == doc.candidates == ["keep", "scratch"] and doc.methods_requested == []
    for row, fn in zip(doc.methods, (keep, from_scratch)):
        report, qualified = candidates.reports[row.name], f"{fn.__module__}.{fn.__name__}"
        assert report.method.name == "caller" and report.method.hyperparameters["unlearn"] == qualified
        assert row.trained_by == MINE and row.title == f"your code: {qualified}"
        assert row.certificate_kind == "none" and row.certified_epsilon is None
    # the same data, forget set, seeds and salt: one commitment
    assert len({r.deletion_request.commitment for r in candidates.reports.values()}) == 1
    candidates.write(tmp_path / "out")
    for row in doc.methods:
        text = (tmp_path / "out" / row.report).read_text()
        assert row.report == f"methods/{row.name}/report.json"
        assert hashlib.sha256(text.encode()).hexdigest() == row.report_sha256
    page = (tmp_path / "out" / "report.html").read_text()
    assert 'id="trained-by-note"' in page and 'id="measured-ranking"' in page and "measured, not certified" in page
    validate_comparison(json.loads((tmp_path / "out" / "report.json").read_text()))


def test_doing_nothing_leaks_more_than_retraining_and_no_candidate_is_recommended(candidates):
    doc = candidates.document
    rows = {r.name: r for r in doc.methods}
    assert rows["keep"].leakage.best_empirical_epsilon > rows["scratch"].leakage.best_empirical_epsilon == 0
    assert rows["keep"].leakage.auroc["mia"] > rows["scratch"].leakage.auroc["mia"]
    assert doc.measured_ranking.order == ["scratch", "keep"] and doc.measured_ranking.not_ranked == {}
    assert doc.recommendation.method is None and doc.recommendation.eligible == []
    assert all("your own code" in doc.recommendation.excluded[n] for n in ("keep", "scratch"))


@pytest.mark.parametrize(
    ("kwargs", "field", "words"),
    [
        ({"candidates": {"r2d": keep}, "train": adam}, "candidates", "not a registered method's"),
        ({"candidates": {CANDIDATE_REFERENCE: keep}, "train": adam}, "candidates", "names of your own"),
        ({"candidates": {"My FT": keep}, "train": adam}, "candidates", "lowercase letters and digits"),
        ({"candidates": {"mine": 3}, "train": adam}, "candidates", "a function"),
        ({"candidates": {"mine": keep}}, "train", "with candidates"),
        ({"train": adam}, "train", "given with candidates"),
        ({"candidates": [keep], "train": adam}, "candidates", "a mapping"),
    ],
)
def test_a_bad_candidate_is_refused_before_any_work_naming_it(kwargs, field, words):
    with pytest.raises(InvalidInput) as info:
        compare(_config(), ["retrain"], model=TinyNet(), data=blobs(), **kwargs)
    assert info.value.field == field and words in str(info.value)


def test_a_configuration_naming_your_code_is_refused_train_and_candidates_carry_it():
    with pytest.raises(InvalidInput, match="^train must be unset in a comparison's configuration .*--candidate"):
        compare(AuditConfig(train="module:p.py:t", unlearn="module:p.py:u"), ["retrain"])


def _row(name: str, **kw):
    base = dict(
        name=name,
        title=name,
        paper="p",
        report=f"methods/{name}/report.json",
        report_sha256="0" * 64,
        verdict="not-certified",
        certificate_kind="none",
        certified_epsilon=None,
        conditional=False,
        cumulative_epsilon=None,
        sigma=0.0,
        sensitivity=None,
        test_accuracy_noiseless=0.8,
        test_accuracy_released_mean=0.8,
        test_accuracy_released_std=0.0,
        test_accuracy_retrained=0.8,
        noise_cost_points=0.0,
        loss_vs_retrained_points=0.0,
        learn_s=1.0,
        unlearn_s=0.001,
        retrain_s=2.0,
        speedup_vs_retrain=2000.0,
        leakage=None,
        frontier=None,
        knob=None,
        findings=[],
        trained_by=MINE,
    )
    return ComparisonModel.model_fields["methods"].annotation.__args__[0](**{**base, **kw})


def _leak(epsilon: float, auroc: float, power: bool = True) -> Leakage:
    return Leakage(
        trial_mode="retrain",
        n_trials=10,
        best_empirical_epsilon=epsilon,
        best_attack="mia",
        auroc={"mia": auroc},
        positive_control_has_power=power,
    )


def test_the_measured_ranking_orders_by_leakage_and_leaves_out_what_it_cannot_rank():
    rows = [
        _row("leaky", leakage=_leak(0.6, 1.0)),
        _row("close", leakage=_leak(0.0, 0.62)),
        _row("blind", leakage=_leak(0.0, 0.5, power=False)),
        _row("unmeasured"),
        _row("best", leakage=_leak(0.0, 0.45)),
        _row("retrain", trained_by=None, leakage=_leak(0.0, 0.5)),
    ]
    ranking = measured_ranking(rows)
    assert ranking.order == ["best", "close", "leaky"]  # |0.45 - 0.5| < |0.62 - 0.5|; registered rows excluded
    assert set(ranking.not_ranked) == {"blind", "unmeasured"} and "no power" in ranking.not_ranked["blind"]
    assert "measured, not certified" in ranking.rule
    # the fastest row of all, with no leak measured: still never recommended (no certificate)
    rec = FastestWithin(100.0).apply(rows[:-1], 1.0, 1e-5)
    assert rec.method is None and all("your own code" in why for why in rec.excluded.values())


def test_retrain_with_forgets_the_model_it_is_given():
    """The reference's unlearning depends on the retain set and the seed only: from a trained model
    (weights and BatchNorm statistics moved) it gives what it gives from a fresh one."""
    data = blobs()["train"]
    retain, forget = TensorDataset(data[0][2:], data[1][2:]), TensorDataset(data[0][:2], data[1][:2])
    fresh = TinyNet()
    trained = adam(copy.deepcopy(fresh).train(), TensorDataset(*data), torch.Generator().manual_seed(0))
    unlearn = retrain_with(adam)
    results = []
    for model in (trained, fresh):
        with seeded(11) as generator:
            results.append(unlearn(copy.deepcopy(model), forget, retain, generator).state_dict())
    assert all(torch.equal(results[0][k], results[1][k]) for k in results[0])
    assert unlearn.__qualname__ == f"retrain_with({MINE})"


@pytest.mark.slow  # four audits: retrain (the toolkit's), two candidates, and the candidates' reference
def test_retrain_and_two_candidates_with_the_reference_of_your_training(tmp_path):
    from audit.report.keys import generate_keypair

    result = compare(
        _config(steps=20, timing_repeats=1),
        ["retrain"],
        candidates={"keep": keep, "scratch": from_scratch},
        train=adam,
        model=TinyNet(),
        data=blobs(),
        salt=SALT,
    )
    doc = result.document
    assert [r.name for r in doc.methods] == ["retrain", "keep", "scratch", CANDIDATE_REFERENCE]
    assert doc.reference == "retrain" and doc.candidate_reference == CANDIDATE_REFERENCE
    rows = {r.name: r for r in doc.methods}
    assert rows["retrain"].trained_by is None and rows[CANDIDATE_REFERENCE].trained_by == MINE
    assert rows[CANDIDATE_REFERENCE].leakage.best_empirical_epsilon == 0 < rows["keep"].leakage.best_empirical_epsilon
    assert doc.recommendation.method == "retrain"  # the certified rule: never a candidate
    assert doc.measured_ranking.order[-1] == "keep"
    (tmp_path / "keys").mkdir()
    private, public = generate_keypair(tmp_path / "keys")
    result.write(tmp_path / "out", sign_key=private)
    assert CliRunner().invoke(app, ["verify", str(tmp_path / "out"), "--key", str(public)]).exit_code == 0
    assert (tmp_path / "out" / "methods" / CANDIDATE_REFERENCE / "report.json").is_file()


PIPELINE = """
import math
import torch
from torch import nn
from torch.utils.data import DataLoader

def net(input_shape, n_classes):
    return nn.Sequential(nn.Flatten(), nn.Linear(math.prod(input_shape), 16), nn.BatchNorm1d(16), nn.ReLU(),
                         nn.Linear(16, n_classes))

def train(model, dataset, generator):
    opt = torch.optim.Adam(model.parameters(), lr=0.03)
    for _ in range(8):
        for x, y in DataLoader(dataset, batch_size=16, shuffle=True, generator=generator, drop_last=True):
            opt.zero_grad(); nn.functional.cross_entropy(model(x), y).backward(); opt.step()
    return model

def keep(model, forget, retain, generator):
    return model
"""


@pytest.mark.slow  # one caller audit through the CLI
def test_cli_compare_takes_candidates_from_modules(tmp_path):
    (tmp_path / "pipe.py").write_text(PIPELINE)
    code = f"module:{tmp_path / 'pipe.py'}"
    result = CliRunner().invoke(
        app,
        [
            "compare",
            "--dataset",
            "digits",
            "--max-train",
            "48",
            "--model",
            f"{code}:net",
            "--methods",
            "",
            "--candidate",
            f"keep={code}:keep",
            "--train",
            f"{code}:train",
            "--attacks",
            "mia",
            "--trials",
            "10",
            "--curve-points",
            "2",
            "--noise-draws",
            "2",
            "--forget-count",
            "2",
            "--forget-strategy",
            "mislabelled",
            "--out",
            str(tmp_path / "out"),
        ],
    )
    assert result.exit_code == 0, result.stderr
    assert "your candidates by measured leakage (measured, not certified), least first: keep" in result.stderr
    doc = json.loads((tmp_path / "out" / "report.json").read_text())
    assert doc["candidates"] == ["keep"] and doc["config"]["train"] == f"{code}:train"
    report = json.loads((tmp_path / "out" / "methods" / "keep" / "report.json").read_text())
    assert report["config"]["unlearn"] == f"{code}:keep" and report["method"]["name"] == "caller"
