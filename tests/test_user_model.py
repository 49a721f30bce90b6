"""The caller's own model: checked against each theorem's assumptions before any work,
initialised from the seed whatever its layers, probed, and described truthfully in the report."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
import torch
from torch import nn
from torch.utils.data import TensorDataset

from audit.audited_model import architecture_text, load_factory, prepare, resolve
from audit.config import AuditConfig
from certify.certificate import Condition, issue
from certify.errors import InvalidInput
from unlearners.caller import retrain_with
from unlearners.modelcheck import SMOOTH, STATELESS, check_model, offending_layers
from unlearners.models import build_model
from unlearners.objective import Objective, init_parameters


def small_cnn(act=nn.Tanh, extra=()):
    return nn.Sequential(nn.Conv2d(1, 3, 3), *extra, act(), nn.AvgPool2d(2), nn.Flatten(), nn.Linear(3 * 2 * 2, 4))


# -- the assumptions a module shows ---------------------------------------------------------------
def test_kinks_and_state_are_named_by_layer():
    model = nn.Sequential(
        nn.Conv2d(1, 2, 3),
        nn.BatchNorm2d(2),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Dropout(0.1),
        nn.Flatten(),
        nn.Linear(2, 2),
    )
    assert offending_layers(model, SMOOTH) == ["2 (ReLU)", "3 (MaxPool2d)"]
    assert offending_layers(model, STATELESS) == ["1 (BatchNorm2d)", "4 (Dropout)"]
    smooth, stateless = check_model(model, {SMOOTH, STATELESS}, "r2d")
    assert not smooth.met and "2 (ReLU), 3 (MaxPool2d)" in smooth.detail and "r2d" in smooth.detail
    assert not stateless.met and "1 (BatchNorm2d)" in stateless.detail


def test_smooth_layers_pass_and_elu_only_with_alpha_one():
    assert all(c.met for c in check_model(small_cnn(), {SMOOTH, STATELESS}, "cns"))
    assert all(c.met for c in check_model(build_model("cnn", (1, 28, 28), 10), {SMOOTH, STATELESS}, "cns"))
    assert offending_layers(nn.Sequential(nn.ELU(alpha=1.0)), SMOOTH) == []
    assert offending_layers(nn.Sequential(nn.ELU(alpha=0.5)), SMOOTH) == ["0 (ELU)"]
    assert offending_layers(nn.Sequential(nn.InstanceNorm2d(2)), STATELESS) == []  # no running statistics
    assert check_model(small_cnn(nn.ReLU), frozenset(), "finetune") == ()  # no theorem, no requirement


def test_a_failed_model_condition_withdraws_the_certificate():
    cert = issue("m", "exact", epsilon=1.0, delta=1e-5, theorem="retraining")
    kept = cert.under([Condition("model is smooth", True, "ok")])
    assert kept.valid and kept.conditions[0].name == "model is smooth"
    withdrawn = cert.under([Condition("model is smooth", False, "layer 2 (ReLU) breaks it")])
    assert not withdrawn.valid and withdrawn.warnings[0] == "layer 2 (ReLU) breaks it"
    none = issue("m", "none", epsilon=1.0, delta=1e-5, theorem="none")
    assert none.under([Condition("x", False, "y")]) is none


# -- initialisation ---------------------------------------------------------------------------------
def test_initialisation_is_a_pure_function_of_the_seed_for_every_layer_type():
    model = nn.Sequential(nn.Conv2d(1, 2, 3), nn.GroupNorm(1, 2), nn.Tanh(), nn.Flatten(), nn.Linear(2 * 4 * 4, 3))
    obj = Objective(model)
    torch.manual_seed(123)
    before = torch.random.get_rng_state()
    a = init_parameters(obj, torch.Generator().manual_seed(5))
    assert torch.equal(torch.random.get_rng_state(), before)  # the caller's random state is untouched
    b = init_parameters(obj, torch.Generator().manual_seed(5))
    c = init_parameters(obj, torch.Generator().manual_seed(6))
    assert torch.equal(a, b) and not torch.equal(a, c) and a.shape == (obj.dim,) and a.dtype == torch.float64
    # each layer initialises as PyTorch defines it: GroupNorm's weight is 1, its bias 0
    params = obj.unflatten(a)
    assert torch.equal(params["1.weight"], torch.ones(2, dtype=torch.float64))
    bound = 1 / (9**0.5)  # Conv2d: kaiming-uniform(a=sqrt 5) gives U(-1/sqrt(fan_in), 1/sqrt(fan_in))
    assert float(params["0.weight"].abs().max()) <= bound


def test_a_layer_that_cannot_reinitialise_is_refused():
    class Scale(nn.Module):
        def __init__(self):
            super().__init__()
            self.s = nn.Parameter(torch.ones(1))

        def forward(self, x):
            return x * self.s

    model = nn.Sequential(nn.Linear(2, 2), Scale())
    obj = Objective(model, n_outputs=2)
    with pytest.raises(InvalidInput, match=r"1 \(Scale\) has parameters but no reset_parameters"):
        init_parameters(obj, torch.Generator().manual_seed(0))
    # the caller's own retraining re-draws the model the same way, and refuses it the same way
    data = TensorDataset(torch.zeros(4, 2), torch.zeros(4, dtype=torch.long))
    unlearn = retrain_with(lambda m, d, g: m)
    with pytest.raises(InvalidInput, match=r"1 \(Scale\) has parameters but no reset_parameters"):
        unlearn(model, data, data, torch.Generator().manual_seed(0))


# -- where the model comes from, and the probe -------------------------------------------------------
def test_a_factory_in_a_file_and_a_module_instance(tmp_path: Path):
    source = tmp_path / "mymodel.py"
    source.write_text(
        "from torch import nn\n"
        "def build(input_shape, n_classes):\n"
        "    return nn.Sequential(nn.Flatten(), nn.Linear(input_shape[-1] * input_shape[-2], n_classes))\n"
    )
    config = AuditConfig(model=f"module:{source}:build")
    model, where = resolve(None, config, (1, 4, 4), 3)
    assert isinstance(model[1], nn.Linear) and model[1].in_features == 16
    assert where["source"].startswith("factory module:") and where["origin"] == "module"
    mine = small_cnn()
    copy, where = resolve(mine, AuditConfig(), (1, 6, 6), 4)
    assert copy is not mine and "caller's module" in where["source"] and where["origin"] == "caller"
    assert resolve(None, AuditConfig(), (4,), 2)[1] == {"source": "built-in model 'logreg'", "origin": "built-in"}
    with pytest.raises(InvalidInput, match="no such attribute"):
        load_factory(f"module:{source}:nope")
    with pytest.raises(InvalidInput, match="existing file"):
        load_factory(f"module:{tmp_path / 'nope.py'}:build")
    with pytest.raises(InvalidInput) as info:
        AuditConfig(model="module:nocolon")
    assert info.value.field == "model"


def test_the_probe_refuses_a_model_that_does_not_fit_the_data():
    X, y = torch.zeros(4, 1, 6, 6, dtype=torch.float64), torch.tensor([0, 1, 2, 3])
    obj = prepare(small_cnn(), X, y, 4, torch.float64, torch.device("cpu"))
    assert obj.n_outputs == 4 and not obj.model.training
    with pytest.raises(InvalidInput, match="4 outputs for the data's 4 classes"):
        prepare(nn.Sequential(nn.Flatten(), nn.Linear(36, 3)), X, y, 4, torch.float64, torch.device("cpu"))
    with pytest.raises(InvalidInput, match=r"records of shape \(1, 6, 6\)"):
        prepare(nn.Linear(5, 4), X, y, 4, torch.float64, torch.device("cpu"))
    with pytest.raises(InvalidInput, match="trainable parameters"):
        prepare(nn.Flatten(), X, y, 4, torch.float64, torch.device("cpu"))


def test_architecture_hash_covers_layers_and_shapes():
    a = Objective(small_cnn(), n_outputs=4)
    b = Objective(small_cnn(nn.Softplus), n_outputs=4)
    assert architecture_text(a) != architecture_text(b)
    assert (
        hashlib.sha256(architecture_text(a).encode()).hexdigest()
        == hashlib.sha256(architecture_text(Objective(small_cnn(), n_outputs=4)).encode()).hexdigest()
    )


def test_the_builtin_cnn_refuses_tabular_records():
    with pytest.raises(InvalidInput, match="image records"):
        build_model("cnn", 14, 2)
    with pytest.raises(InvalidInput, match="at least 16 x 16"):
        build_model("cnn", (1, 8, 8), 10)


# -- every method on a CNN, or one sentence why not ------------------------------------------------
SMALL = {"steps": 6, "epochs": 2, "depth": 20, "rewind": 3, "relearn_steps": 3, "inner_steps": 3}


@pytest.mark.parametrize("name", sorted(__import__("unlearners.registry", fromlist=["BUILTIN"]).BUILTIN))
def test_every_method_runs_on_a_cnn_or_says_why_not(name):
    from unlearners.registry import get_method

    cls = get_method(name)
    gen = torch.Generator().manual_seed(0)
    X = torch.randn(40, 1, 6, 6, generator=gen, dtype=torch.float64)
    y = torch.arange(40) % 4
    obj = Objective(small_cnn().double(), n_outputs=4)
    declared = {p.name for p in cls.hyperparameters}
    options = {k: v for k, v in SMALL.items() if k in declared}
    try:
        method = cls(obj, **options)
    except InvalidInput as exc:  # refused before any work, naming the model and the reason
        assert exc.field == "model" and "logistic regression" in str(exc)
        assert name in ("newton", "ngd")
        return
    if type(method).capabilities.deletable_before_training:
        method.declare_deletable(torch.tensor([1, 2]))
    method.fit(X, y, init_parameters(obj, torch.Generator().manual_seed(1)))
    forget = torch.tensor([1, 2])
    assert torch.isfinite(method.unlearn(forget)).all() and torch.isfinite(method.retrain(forget)).all()
    cert = method.certify(forget, 1.0, 1e-5)
    if cls.model_requirements:
        assert {c.name for c in cert.conditions} >= {f"model is {r}" for r in cls.model_requirements}


def test_the_builtin_cnn_keeps_the_images_scale_unless_told_otherwise():
    from audit.config import AuditConfig
    from audit.inputs import dataset_options

    assert dataset_options(AuditConfig(model="cnn"))["feature_map"] == {"row_norm": "none"}
    told = dataset_options(AuditConfig(model="cnn", feature_map={"row_norm": "clip", "normalize": [0.5, 0.5]}))
    assert told["feature_map"] == {"row_norm": "clip", "normalize": [0.5, 0.5]}
    assert "feature_map" not in dataset_options(AuditConfig(model="logreg"))


def test_a_model_file_is_loaded_without_writing_beside_it(tmp_path, monkeypatch):
    """The audit writes only to --out and --resume: importing the caller's file leaves no __pycache__ in
    their project, even where Python writes bytecode (CI may or may not set PYTHONDONTWRITEBYTECODE)."""
    import sys

    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    (tmp_path / "netfile.py").write_text(
        "import torch\ndef build(shape, n):\n    return torch.nn.Linear(shape[0], 1)\n"
    )
    factory = load_factory(f"module:{tmp_path / 'netfile.py'}:build")
    assert callable(factory) and sorted(p.name for p in tmp_path.iterdir()) == ["netfile.py"]
    assert sys.dont_write_bytecode is False  # restored
