"""One library call audits the caller's own CNN on image tensors with the ids of the records a
person asked to delete (issue: "Your model, your data")."""

from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd
import pytest
import torch
from sklearn.datasets import load_digits
from torch import nn

import audit
from audit.audited_model import architecture_text
from audit.commitment import opens
from audit.config import AuditConfig
from audit.datasets.user import from_user_data
from unlearners.objective import Objective


class DigitsCNN(nn.Module):
    """The caller's model, written here and not in the package."""

    def __init__(self, act=nn.Tanh, norm=False):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 4, 3), *([nn.BatchNorm2d(4)] if norm else []), act(), nn.AvgPool2d(2)
        )
        self.head = nn.Linear(4 * 3 * 3, 10)

    def forward(self, x):
        return self.head(self.features(x).flatten(1))


@pytest.fixture(scope="module")
def digits():
    d = load_digits()
    images = torch.as_tensor(d.images[:, None] / 16.0, dtype=torch.float32)  # N x 1 x 8 x 8
    ids = [f"patient-{i:04d}" for i in range(len(d.target))]
    return images, torch.as_tensor(d.target), ids


def _config(method, **kw):
    return AuditConfig(
        **{"method": method, "max_train": 200, "steps": 30, "attacks": (), "curve_points": 2, "noise_draws": 2, **kw}
    )


def _forget_ids(config, data):
    """Five ids of training records (the seeded split decides which records are trained on)."""
    return list(from_user_data(data, seed=config.seeds()["data"], max_train=config.max_train).train_ids()[:5])


@pytest.mark.slow
@pytest.mark.parametrize(
    "method, options",
    [("cns", {}), ("hf", {"deletable": "forget", "epochs": 10}), ("r2d", {}), ("finetune", {}), ("retrain", {})],
)
def test_a_user_cnn_on_images_with_forget_ids(digits, method, options):
    config = _config(method, method_options=options)
    data = digits
    forget = _forget_ids(config, data)
    salt = bytes(range(32))
    report = audit.run(config, model=DigitsCNN(), data=data, forget_ids=forget, salt=salt)
    d = report.to_json_dict()
    # the report names what was audited: the caller's CNN, its layers, parameter count and hashes
    m = d["model"]
    assert m["module_class"].endswith("DigitsCNN") and "caller's module" in m["source"]
    assert m["layer_types"] == {"AvgPool2d": 1, "Conv2d": 1, "Linear": 1, "Tanh": 1}
    assert m["parameters"] == sum(p.numel() for p in DigitsCNN().parameters()) == 410
    assert m["input_shape"] == [1, 8, 8] and m["outputs"] == 10
    expected = hashlib.sha256(architecture_text(Objective(DigitsCNN(), n_outputs=10)).encode()).hexdigest()
    assert m["architecture_sha256"] == expected
    assert d["config"]["model"] == d["config"]["dataset"] == d["config"]["forget_ids"] == "caller"
    assert d["dataset"]["input_shape"] == [1, 8, 8] and d["dataset"]["forget_size"] == 5
    # the commitment opens with the ids and the salt, and with nothing else
    assert d["deletion_request"]["identifier_type"] == "text"
    assert opens(d, salt, forget) and not opens(d, salt, forget[:4])
    assert all(i not in report.to_json_text() for i in forget)
    # certified methods check the smooth, stateless CNN and say so; the others carry no checks
    checks = {c["name"]: c["met"] for c in m["checks"]}
    if report.certificate.kind in ("output-noise", "exact") and method != "retrain":
        assert checks == {"model is smooth": True, "model is stateless": True}
    versus = d["utility"]["unlearned_vs_retrained"]
    assert versus["n"] == d["dataset"]["n_test"]
    if method == "retrain":  # exact: the same model, record for record
        assert versus["unlearned_wrong_retrained_right"] == versus["retrained_wrong_unlearned_right"] == 0
        assert versus["p_value"] == 1.0
    balance = d["dataset"]["class_balance"]["test"]
    assert d["utility"]["test_chance_accuracy"] == pytest.approx(max(balance))


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["relu", "batchnorm"])
def test_a_relu_or_batchnorm_model_gets_no_r2d_certificate_but_is_measured(digits, kind):
    model = DigitsCNN(act=nn.ReLU) if kind == "relu" else DigitsCNN(norm=True)
    layer = "features.1 (ReLU)" if kind == "relu" else "features.1 (BatchNorm2d)"
    r2d = audit.run(_config("r2d"), model=model, data=digits).to_json_dict()
    assert r2d["verdict"] == "not-certified" and not r2d["certificate"]["valid"]
    finding = next(f for f in r2d["findings"] if f["code"] == "certificate-not-issued")
    assert layer in finding["message"] and ("smooth" if kind == "relu" else "stateless") in finding["message"]
    failed = [c for c in r2d["model"]["checks"] if not c["met"]]
    assert len(failed) == 1 and layer in failed[0]["detail"]
    # the same model under finetune is audited empirically: measured, attacked, no certificate claimed
    fine = audit.run(_config("finetune", attacks=("mia",), trials=20), model=model, data=digits).to_json_dict()
    assert [f["code"] for f in fine["findings"]][0] == "no-theorem"
    assert fine["attacks"] is not None and "mia" in fine["attacks"]["attacks"]
    assert fine["model"]["checks"] == []


def test_a_dataframe_with_a_categorical_column_and_ids_through_the_library_call():
    rng = np.random.default_rng(1)
    n = 300
    age = rng.integers(18, 80, n)
    frame = pd.DataFrame(
        {
            "customer": np.arange(10_000, 10_000 + n),
            "age": age,
            "region": pd.Categorical(rng.choice(["north", "south", "east"], n)),
            "label": (age + 10 * (rng.random(n) > 0.5) > 50).astype(int),
        }
    )
    config = AuditConfig(
        method="r2d", label_column="label", id_column="customer", attacks=(), curve_points=2, noise_draws=2
    )
    data = from_user_data(frame, seed=config.seeds()["data"], label_column="label", id_column="customer")
    forget = [int(i) for i in data.train_ids()[:2]]
    report = audit.run(config, data=frame, forget_ids=forget, salt=b"k" * 16)
    d = report.to_json_dict()
    assert d["dataset"]["d"] == 4 and d["dataset"]["forget_size"] == 2
    assert d["dataset"]["preprocessing"]["parse"]["columns"]["region"] == {"one_hot": ["east", "north", "south"]}
    assert d["deletion_request"]["identifier"] == "the record's id in column 'customer'"
    assert opens(report, b"k" * 16, forget) and d["certificate"]["valid"]


def test_library_inputs_cannot_be_mixed_with_another_selection(digits):
    from certify.errors import InvalidInput

    with pytest.raises(InvalidInput) as info:
        audit.run(_config("retrain", forget_fraction=0.1), data=digits, forget_ids=[1])
    assert info.value.field == "forget_ids"
    with pytest.raises(InvalidInput) as info:
        audit.run(_config("retrain", model="caller"))
    assert info.value.field == "model"
    with pytest.raises(InvalidInput) as info:
        audit.run(_config("retrain"), model=nn.Linear(3, 2), data=digits)
    assert info.value.field == "model" and "records of shape (1, 8, 8)" in str(info.value)
